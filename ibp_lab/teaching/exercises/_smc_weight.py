"""Self-check of the incremental log weight of one tempering step of SMC (chapter 8)."""

from __future__ import annotations

import numpy as np

from ibp_lab.models.linear_gaussian import collapsed_loglik
from ibp_lab.teaching.exercises._common import check_function, check_time_limit, within_time_limit
from ibp_lab.teaching.exercises._exact_unit import judge_exact
from ibp_lab.teaching.exercises._result import ExerciseResult

__all__ = ["check_smc_weight"]

EXERCISE = "incremental SMC weight"
SIGNATURE = "weight(X, Z, b_old, b_new, sigma_x, sigma_a) -> log incremental weight"


def _cases():
    """Small data sets, feature matrices and steps of the inverse temperature."""
    rng = np.random.default_rng(11)  # fixed: the same cases on every run
    X = rng.normal(size=(3, 2))
    Zs = [np.array([[1, 0], [1, 1], [0, 1]]), np.array([[1], [0], [1]]),
          np.zeros((3, 0), int)]
    steps = [(0.0, 0.1), (0.3, 0.7), (0.9, 1.0)]
    return [dict(X=X, Z=Z, b_old=b0, b_new=b1, sigma_x=sx, sigma_a=sa)
            for Z in Zs for b0, b1 in steps for sx, sa in ((0.5, 1.0), (1.3, 0.7))]


def _exact(X, Z, b_old, b_new, sigma_x, sigma_a):
    return (b_new - b_old) * collapsed_loglik(X, Z, sigma_x, sigma_a)


_MISTAKES = {
    "exact": _exact,
    "b_new only": lambda X, Z, b_old, b_new, sigma_x, sigma_a:
        b_new * collapsed_loglik(X, Z, sigma_x, sigma_a),
    "sign": lambda **kw: -_exact(**kw),
    "not log": lambda **kw: float(np.exp(_exact(**kw))),
}

_HINTS = {
    "b_new only": ("you multiplied the log-likelihood by the new inverse temperature b_new; "
                   "the weight is the ratio of two tempered targets, so use the step "
                   "b_new - b_old"),
    "sign": ("your weight has the wrong sign: the new target over the old one is "
             "p(X | Z)^(b_new - b_old), so the log weight is (b_new - b_old) log p(X | Z)"),
    "not log": "you returned the weight itself; return its logarithm (work in log space)",
}


def _describe(case):
    return (f"Z = {np.asarray(case['Z']).tolist()}, b_old = {case['b_old']}, "
            f"b_new = {case['b_new']}, sigma_x = {case['sigma_x']}, sigma_a = {case['sigma_a']}")


def check_smc_weight(weight, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's incremental log weight of one tempering step of SMC.

    ``weight(X, Z, b_old, b_new, sigma_x, sigma_a)`` must return
    ``(b_new - b_old) log p(X | Z)``, the log-likelihood of the linear-Gaussian model with
    the features integrated out (:func:`ibp_lab.models.linear_gaussian.collapsed_loglik`). It is
    called (with keywords) on 18 small cases; a value further than 1e-10 (relative) from
    the exact one fails, and the verdict names the usual mistake.

    Parameters
    ----------
    weight : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``weight`` is not callable.

    Examples
    --------
    >>> check_smc_weight(_exact).passed
    True
    >>> def sign_error(X, Z, b_old, b_new, sigma_x, sigma_a):
    ...     return (b_old - b_new) * collapsed_loglik(X, Z, sigma_x, sigma_a)
    >>> "wrong sign" in check_smc_weight(sign_error).verdict
    True
    """
    check_function("weight", weight, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", judge_exact, EXERCISE, weight,
                             _cases(), _MISTAKES, _HINTS, _describe,
                             "Your weight agrees with (b_new - b_old) log p(X | Z) on all {n} "
                             "cases.", "log weight")
