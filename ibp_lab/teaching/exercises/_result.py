"""The result of a self-check: a verdict in words and the numbers behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["ExerciseResult", "Measurement"]


@dataclass(frozen=True)
class Measurement:
    """One number a check measured, what it should be, and how far it may be off.

    Attributes
    ----------
    quantity : str
        What was measured, in words ("P(K+ = 3)").
    observed, expected : float
        The student's value and the exact one.
    tolerance : float
        Largest accepted ``|observed - expected|`` (NaN where no tolerance applies).
    """

    quantity: str
    observed: float
    expected: float
    tolerance: float = math.nan

    @property
    def ok(self) -> bool:
        """Whether ``observed`` is within ``tolerance`` of ``expected`` (True without one)."""
        if math.isnan(self.tolerance):
            return True
        return abs(self.observed - self.expected) <= self.tolerance


def _number(value: float) -> str:
    return "-" if isinstance(value, float) and math.isnan(value) else f"{value:.4g}"


@dataclass(frozen=True)
class ExerciseResult:
    """What a self-check found: ``passed``, a verdict in a student's words, the numbers.

    Shown as a short report in a notebook (``_repr_markdown_``) and as plain text by
    ``print`` (``__str__``). ``bool(result)`` is ``result.passed``, so a teacher can
    grade with ``assert check_gibbs_sweep(student_sweep)``.

    Attributes
    ----------
    exercise : str
        Which check ran ("collapsed Gibbs sweep").
    passed : bool
        True if every test of the check passed.
    verdict : str
        What is right or wrong, and a hint where to look.
    measurements : tuple of Measurement
        The numbers behind the verdict: observed against exact, with tolerances.

    Examples
    --------
    >>> result = ExerciseResult("demo", True, "All good.", (Measurement("x", 1.0, 1.0, 0.1),))
    >>> bool(result), result.measurements[0].ok
    (True, True)
    >>> print(result)
    demo: PASSED
    All good.
      x: observed 1, expected 1, tolerance 0.1
    """

    exercise: str
    passed: bool
    verdict: str
    measurements: tuple[Measurement, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {'PASSED' if self.passed else 'NOT YET'}", self.verdict]
        for m in self.measurements:
            tolerance = "" if math.isnan(m.tolerance) else f", tolerance {_number(m.tolerance)}"
            lines.append(f"  {m.quantity}: observed {_number(m.observed)}, "
                         f"expected {_number(m.expected)}{tolerance}")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        mark = "passed" if self.passed else "not yet"
        text = [f"**{self.exercise}: {mark}.** {self.verdict}"]
        if self.measurements:
            text += ["", "| quantity | observed | expected | tolerance |", "|---|---|---|---|"]
            text += [f"| {m.quantity} | {_number(m.observed)} | {_number(m.expected)} | "
                     f"{_number(m.tolerance)}{'' if m.ok else ' (missed)'} |"
                     for m in self.measurements]
        return "\n".join(text)


def fail(exercise: str, verdict: str, measurements=()) -> ExerciseResult:
    """A failed check's result (a shorthand for the checks)."""
    return ExerciseResult(exercise, False, verdict, tuple(measurements))


def describe_exception(exc: BaseException) -> str:
    """An exception in a student's words: 'not written yet' or its type and message."""
    if isinstance(exc, NotImplementedError):
        return ("not written yet (it raises NotImplementedError): fill in the function and "
                "run again.")
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a student's exception whose __str__ itself fails
        message = "(its message could not be turned into text)"
    return f"it raised {type(exc).__name__}: {message}"
