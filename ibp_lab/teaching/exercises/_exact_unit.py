"""Judging a student's deterministic function against an exact value on small cases."""

from __future__ import annotations

import numpy as np

from ibp_lab.teaching.exercises._common import as_number, call, verdict_for
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail

#: Largest accepted |student - exact|, relative to max(1, |exact|): rounding only.
TOLERANCE = 1e-10


def judge_exact(exercise, fn, cases, mistakes, hints, describe, success, quantity):
    """Run ``fn(**kwargs)`` on each case; compare with ``mistakes["exact"](**kwargs)``.

    ``mistakes`` maps a name to the value that mistake gives; ``hints`` maps a name to the
    words of its verdict; ``describe(kwargs)`` names a case in words.
    """
    values = []
    for kwargs in cases:
        out, problem = call(fn, **{k: np.copy(v) if isinstance(v, np.ndarray) else v
                                   for k, v in kwargs.items()})
        value, bad = (None, problem) if problem else as_number(out)
        if bad:
            return fail(exercise, verdict_for(bad, f"on {describe(kwargs)}"))
        values.append(value)
    values = np.array(values)
    laws = {name: np.array([law(**kwargs) for kwargs in cases]) for name, law in mistakes.items()}
    scale = np.maximum(1.0, np.abs(laws["exact"]))
    errors = np.abs(values - laws["exact"]) / scale
    worst = int(np.argmax(errors))
    measurements = (Measurement(f"{quantity} on {describe(cases[worst])}", float(values[worst]),
                                float(laws["exact"][worst]), TOLERANCE * scale[worst]),)
    if errors.max() <= TOLERANCE:
        return ExerciseResult(exercise, True, success.format(n=len(cases)), measurements)
    for name, hint in hints.items():
        if np.allclose(values, laws[name], rtol=1e-8, atol=1e-8):
            return fail(exercise, f"Your function: {hint}.", measurements)
    return fail(exercise, f"Your function is off by {np.abs(values - laws['exact'])[worst]:.3g} "
                f"on {describe(cases[worst])}: none of the usual mistakes explains it; "
                "compare each term with the chapter's formula.", measurements)
