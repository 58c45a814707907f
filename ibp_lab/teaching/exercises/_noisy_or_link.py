"""Self-check of the Gibbs conditional of one noisy-OR link (the non-conjugate chapter)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ibp_lab.inference import noisy_or
from ibp_lab.teaching.exercises._common import check_function, check_time_limit, within_time_limit
from ibp_lab.teaching.exercises._exact_unit import judge_exact
from ibp_lab.teaching.exercises._result import ExerciseResult

__all__ = ["check_noisy_or_link"]

EXERCISE = "noisy-OR link conditional"
SIGNATURE = "update(X, Z, W, k, d, strength, leak, weight_prob) -> P(w_kd = 1 | rest)"


def _cases():
    """Every link of two small noisy-OR models, at two settings of the probabilities."""
    X = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0]])
    Z = np.array([[1, 0], [1, 1], [0, 1]])
    W = np.array([[1, 0, 0], [0, 1, 1]])
    return [dict(X=X, Z=Z, W=W, k=k, d=d, strength=s, leak=e, weight_prob=p)
            for s, e, p in ((0.9, 0.05, 0.2), (0.6, 0.3, 0.7))
            for k in range(2) for d in range(3)]


def _log_odds(X, Z, W, k, d, strength, leak, weight_prob, prior=True):
    """log P(w_kd = 1 | rest) - log P(w_kd = 0 | rest), by enumerating the two values."""
    on, off = np.array(W), np.array(W)
    on[k, d], off[k, d] = 1, 0
    gain = (noisy_or.log_likelihood(X, Z, on, strength=strength, leak=leak)
            - noisy_or.log_likelihood(X, Z, off, strength=strength, leak=leak))
    return gain + (np.log(weight_prob / (1 - weight_prob)) if prior else 0.0)


_MISTAKES = {
    "exact": lambda **kw: float(expit(_log_odds(**kw))),
    "no prior": lambda **kw: float(expit(_log_odds(**kw, prior=False))),
    "log odds": lambda **kw: float(_log_odds(**kw)),
    "flipped": lambda **kw: float(expit(-_log_odds(**kw))),
}

_HINTS = {
    "no prior": ("the prior is missing: add log(weight_prob / (1 - weight_prob)) to the "
                 "likelihood's log-odds"),
    "log odds": "you returned the log-odds; return the probability expit(log-odds)",
    "flipped": ("you returned P(w_kd = 0 | rest): the likelihood's gain is log p(X | w_kd = 1)"
                " - log p(X | w_kd = 0), in that order"),
}


def _describe(case):
    return (f"k = {case['k']}, d = {case['d']}, strength = {case['strength']}, "
            f"leak = {case['leak']}, weight_prob = {case['weight_prob']}")


def check_noisy_or_link(update, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's ``P(w_kd = 1 | X, Z, the other links)`` in the noisy-OR model.

    ``update(X, Z, W, k, d, strength, leak, weight_prob)`` is called (with keywords) on
    every link of a three-row model at two settings; the exact value enumerates the two
    values of ``w_kd`` with :func:`ibp_lab.inference.noisy_or.log_likelihood` and the prior
    ``Bernoulli(weight_prob)``. A value further than 1e-10 from it fails, and the verdict
    names the usual mistake (prior missing, log-odds returned, the two values swapped).

    Parameters
    ----------
    update : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``update`` is not callable.

    Examples
    --------
    >>> check_noisy_or_link(_MISTAKES["exact"]).passed
    True
    >>> "prior is missing" in check_noisy_or_link(_MISTAKES["no prior"]).verdict
    True
    """
    check_function("update", update, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", judge_exact, EXERCISE, update,
                             _cases(), _MISTAKES, _HINTS, _describe,
                             "Your conditional agrees with enumeration of the two values on "
                             "all {n} links.", "P(w_kd = 1 | rest)")
