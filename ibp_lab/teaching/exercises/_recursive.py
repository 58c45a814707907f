"""Self-check of one step of the Recursive IBP marginals (chapter 4)."""

from __future__ import annotations

import numpy as np

from ibp_lab.models import prior, recursive
from ibp_lab._checks import check_real_array
from ibp_lab.teaching.exercises._common import (call, check_function, check_time_limit, verdict_for,
                                       within_time_limit)
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail

__all__ = ["check_recursive_step"]

EXERCISE = "one step of the Recursive IBP"
SIGNATURE = "step(running_sum, n, alpha, beta) -> row"
#: (alpha, beta) of the cases: the one-parameter IBP, a small and a large beta.
SETTINGS = ((2.0, 1.0), (4.0, 0.5), (1.5, 3.0))
#: Customers 1..N_CUSTOMERS are checked, each on K_MAX dishes.
N_CUSTOMERS = 6
K_MAX = 12
#: Largest accepted |student - exact| for one marginal (Poisson CDFs lose ~1e-16 each).
TOLERANCE = 1e-9


def _exact_row(running_sum, n, alpha, beta, *, denominator_shift=0, dish_shift=0):
    """Eq. 4 of Schaeffer et al. (2022), optionally with an off-by-one planted in it."""
    rate_before = prior.expected_num_features(alpha, n - 1, beta=beta)
    rate_new = prior.new_dish_rate(alpha, n - 1, beta=beta)  # n - 1 customers seated
    gap = recursive.new_dish_probabilities(rate_before, rate_new, K_MAX + 1)
    gap = gap[dish_shift:dish_shift + K_MAX]
    return running_sum / (beta + n - 1 + denominator_shift) + gap


def _mistakes(running_sum, n, alpha, beta) -> dict:
    """The exact row and what the usual mistakes give for it."""
    return {
        "exact": _exact_row(running_sum, n, alpha, beta),
        "denominator": _exact_row(running_sum, n, alpha, beta, denominator_shift=1),
        "no new dishes": running_sum / (beta + n - 1),
        "dish off by one": _exact_row(running_sum, n, alpha, beta, dish_shift=1),
        "beta ignored": _exact_row(running_sum, n, alpha, 1.0),
    }


_HINTS = {
    "denominator": ("the running sum is divided by beta + n; customer n has n - 1 customers "
                    "before them, so it is beta + n - 1"),
    "no new dishes": ("the second term is missing: a dish can also be new to customer n, "
                      "with probability P(K_{<n} <= k - 1 < K_{<=n})"),
    "dish off by one": ("the new-dish term is shifted by one dish: dish k is new to "
                        "customer n when K_{<n} <= k - 1 < K_{<=n} (dishes count from 1)"),
    "beta ignored": ("right at beta = 1 but not otherwise: use beta in the denominator "
                     "beta + n - 1 and in the rates alpha beta / (beta + i - 1)"),
}


def _as_row(out) -> tuple[np.ndarray | None, str | None]:
    try:
        row = check_real_array("row", out)
    except Exception:  # noqa: BLE001 - whatever the student returned (huge ints overflow)
        return None, f"it returned {type(out).__name__}, not an array of probabilities"
    if row.shape != (K_MAX,):
        return None, (f"it returned shape {row.shape}; the row must have one entry per dish, "
                      f"like running_sum: ({K_MAX},)")
    if not np.all(np.isfinite(row)):
        return None, "it returned NaN or infinite values"
    return row, None


def check_recursive_step(step, *, time_limit: float = 60) -> ExerciseResult:
    """Check one step of the Recursive IBP marginals against :func:`ibp_lab.models.recursive.marginals`.

    ``step(running_sum, n, alpha, beta)`` must return customer ``n``'s row of marginals
    ``p(z_nk = 1)``, ``k = 1..len(running_sum)``, from the running sum of the rows of
    customers ``1..n-1`` (Schaeffer et al. 2022, eq. 4; :func:`ibp_lab.models.recursive.next_row_prior`
    is the package's version). It is given the exact running sum for customers 1 to 6 on
    12 dishes at three ``(alpha, beta)``, including ``beta != 1``; a marginal further than
    1e-9 from :func:`ibp_lab.models.recursive.marginals` fails, and the verdict names the usual
    mistakes (denominator ``beta + n``, new-dish term missing or shifted, ``beta``
    ignored). It must not change ``running_sum``.

    Parameters
    ----------
    step : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60); a step still running then
        gets a verdict saying so. Enforced with ``SIGALRM`` in the main thread (POSIX).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``step`` is not callable.

    Examples
    --------
    >>> def step(running_sum, n, alpha, beta):
    ...     rate_before = prior.expected_num_features(alpha, n - 1, beta=beta)
    ...     rate_new = prior.new_dish_rate(alpha, n - 1, beta=beta)
    ...     new = recursive.new_dish_probabilities(rate_before, rate_new, len(running_sum))
    ...     return running_sum / (beta + n - 1) + new
    >>> check_recursive_step(step).passed
    True
    """
    check_function("step", step, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "step", _judge, step)


def _judge(step) -> ExerciseResult:
    """The check itself, run under the time limit."""
    rows, cases = [], []
    for alpha, beta in SETTINGS:
        table = recursive.marginals(alpha, beta, N_CUSTOMERS, K_MAX)
        for n in range(1, N_CUSTOMERS + 1):
            running_sum = table[: n - 1].sum(axis=0)
            given = running_sum.copy()
            out, problem = call(step, given, n, alpha, beta)
            row, bad = (None, problem) if problem else _as_row(out)
            where = f"for customer n = {n} at alpha = {alpha}, beta = {beta}"
            if bad:
                return fail(EXERCISE, verdict_for(bad, where))
            if not np.array_equal(given, running_sum):
                return fail(EXERCISE, f"Your function changed running_sum {where}: compute "
                            "a new row instead of adding to it in place.")
            rows.append(row)
            cases.append((running_sum, n, alpha, beta, table[n - 1]))
    rows = np.array(rows)
    exact_rows = np.array([case[-1] for case in cases])
    errors = np.abs(rows - exact_rows).max(axis=1)
    worst = int(np.argmax(errors))
    _, n, alpha, beta, _ = cases[worst]
    k = int(np.argmax(np.abs(rows[worst] - exact_rows[worst])))
    measurements = (Measurement(f"p(z_nk = 1) at n = {n}, k = {k + 1}, alpha = {alpha}, "
                                f"beta = {beta}", float(rows[worst, k]),
                                float(exact_rows[worst, k]), TOLERANCE),)
    if errors.max() <= TOLERANCE:
        return ExerciseResult(EXERCISE, True, (
            f"Your step reproduces recursive.marginals for customers 1 to {N_CUSTOMERS} on "
            f"{K_MAX} dishes at {len(SETTINGS)} settings of (alpha, beta)."), measurements)
    for name, hint in _HINTS.items():
        expected = np.array([_mistakes(*case[:4])[name] for case in cases])
        if np.allclose(rows, expected, rtol=0, atol=1e-7):
            return fail(EXERCISE, f"Your step: {hint}.", measurements)
    first_bad = int(np.argmax(errors > TOLERANCE))
    _, n, alpha, beta, _ = cases[first_bad]
    return fail(EXERCISE, f"Your step first goes wrong for customer n = {n} at alpha = "
                f"{alpha}, beta = {beta} (off by up to {errors[first_bad]:.3g}): check both "
                "terms, running_sum / (beta + n - 1) and P(K_{<n} <= k - 1 < K_{<=n}) "
                "with K_{<=n} ~ Poisson(kappa_n), kappa_n = sum_{i <= n} alpha beta / "
                "(beta + i - 1).",
                measurements)
