"""Self-check of the acceptance ratio of a random split (chapter 7)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln

from ibp_lab.inference import exact
from ibp_lab.models import linear_gaussian, prior
from ibp_lab.teaching.exercises._common import (as_number, call, check_function, check_time_limit,
                                       verdict_for, within_time_limit)
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail

__all__ = ["check_split_merge_ratio"]

EXERCISE = "acceptance ratio of a random split"
SIGNATURE = "fn(X, Z, k, c1, c2, alpha, sigma_x, sigma_a) -> log acceptance ratio"
#: The book's three-row example (chapter 5) and its hyperparameters, beta = 1.
X_TINY = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
ALPHA, SIGMA_X, SIGMA_A = 1.3, 0.6, 1.2
#: Every class with 1 to K_MAX features on three rows is split in every possible way.
K_MAX = 3
#: Largest accepted |student - exact| (log space; sums of a few log-gammas and a Cholesky).
TOLERANCE = 1e-8


def _n_equal(Z: np.ndarray, column: np.ndarray) -> int:
    return int(np.count_nonzero(np.all(Z == column[:, None], axis=0)))


def _log_multiplicities(Z: np.ndarray) -> float:
    _, counts = np.unique(Z, axis=1, return_counts=True)
    return float(gammaln(counts + 1.0).sum())


def _terms(Z, k, c1, c2) -> dict:
    """The pieces of the log ratio of splitting column k of Z into c1, c2 (chapter 7)."""
    K = Z.shape[1]
    u = Z[:, k]
    Z_new = np.column_stack([np.delete(Z, k, axis=1), c1, c2])
    same = bool(np.array_equal(c1, c2))
    pairs = (_n_equal(Z_new, c1) * (_n_equal(Z_new, c1) - 1) / 2 if same
             else _n_equal(Z_new, c1) * _n_equal(Z_new, c2))

    def log_target(M):
        return prior.log_prior(M, ALPHA) + linear_gaussian.collapsed_loglik(X_TINY, M, SIGMA_X,
                                                                            SIGMA_A)

    return {
        "target": log_target(Z_new) - log_target(Z),
        "multiplicities": _log_multiplicities(Z_new) - _log_multiplicities(Z),
        "p split": 0.0 if K == 1 else -math.log(2.0),
        "pick u": math.log(_n_equal(Z, u) / K),
        "orders": 0.0 if same else math.log(2.0),
        "allocation": -int(u.sum()) * math.log(3.0),
        "merge": -math.log(2.0) + math.log(pairs) - math.log(K * (K + 1) / 2),
        "K": K, "n(u)": _n_equal(Z, u), "pairs": pairs,
    }


def _ratio(t: dict, mistake: str | None = None) -> float:
    """The exact log ratio, or what one of the usual mistakes makes of it."""
    forward = t["p split"] + t["pick u"] + t["orders"] + t["allocation"]
    reverse = t["merge"]
    target = t["target"]
    if mistake == "matrix target":
        target += t["multiplicities"]
    elif mistake == "pick u":
        forward -= math.log(t["n(u)"])
    elif mistake == "orders":
        forward -= t["orders"]
    elif mistake == "pairs":
        reverse -= math.log(t["pairs"])
    elif mistake == "p split":
        forward += -math.log(2.0) - t["p split"]
    elif mistake == "reversed":
        forward, reverse = reverse, forward
    elif mistake == "no proposal":
        forward = reverse = 0.0
    return target + reverse - forward


_HINTS = {
    "matrix target": ("your target is the probability of the matrix, not of its class: "
                      "P([Z]) has the factor 1 / prod_h K_h! for identical columns "
                      "(prior.log_prior includes it)"),
    "pick u": ("picking a feature at random picks the value u with probability n(u) / K, "
               "n(u) the number of columns equal to u; yours uses 1 / K"),
    "orders": ("two different halves c1 != c2 come out in either order, so the split has "
               "the factor 2 (and only then)"),
    "pairs": ("the reverse merge picks the pair {c1, c2} with probability "
              "n(c1) n(c2) / C(K + 1, 2) (n(c1) (n(c1) - 1) / 2 pairs when c1 = c2): "
              "count the pairs of columns with those values"),
    "p split": ("with a single feature the move always splits: P(split) = 1 at K = 1 and "
                "1/2 otherwise"),
    "reversed": ("the proposal ratio is upside down: it is q(reverse merge) / q(split)"),
    "no proposal": ("only the target ratio: add log q(reverse merge) - log q(split)"),
}


def _cases():
    """(Z, k, c1, c2) for every split of every distinct column of every small class."""
    cases = []
    for Z in exact.enumerate_classes(X_TINY.shape[0], K_MAX):
        if Z.shape[1] == 0:
            continue
        for k in sorted({_first_of(Z, j) for j in range(Z.shape[1])}):
            owners = np.flatnonzero(Z[:, k])
            for labels in itertools.product((0, 1, 2), repeat=len(owners)):
                c1, c2 = np.zeros_like(Z[:, k]), np.zeros_like(Z[:, k])
                c1[owners] = [label != 1 for label in labels]  # 0: first half, 2: both
                c2[owners] = [label != 0 for label in labels]
                if c1.any() and c2.any():
                    cases.append((Z, k, c1, c2))
    return cases


def _first_of(Z: np.ndarray, j: int) -> int:
    """The first column of Z equal to column j (one split per distinct value)."""
    return int(np.flatnonzero(np.all(Z == Z[:, [j]], axis=0))[0])


def check_split_merge_ratio(fn, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's log acceptance ratio of a random split against the exact one.

    ``fn(X, Z, k, c1, c2, alpha, sigma_x, sigma_a)`` must return
    ``log [pi([Z']) q(merge) / (pi([Z]) q(split))]`` for the split of column ``k`` of
    ``Z`` into the halves ``c1`` and ``c2`` (``Z'`` is ``Z`` without column ``k``, with
    ``c1`` and ``c2`` appended) by the random proposal of
    :func:`ibp_lab.inference.split_merge.random_split_merge` at ``beta = 1``, ``pi([Z])`` the
    class posterior (:func:`ibp_lab.models.prior.log_prior` plus
    :func:`ibp_lab.models.linear_gaussian.collapsed_loglik`), as chapter 7 writes it. It is
    called on every split of every class with at most three features of the book's
    three-row data; a value further than 1e-8 from the exact one fails, and the verdict
    names the usual mistakes (the matrix probability instead of the class probability,
    ``n(u)``, the factor 2, the pair count of the merge, ``P(split)`` at one feature,
    the ratio upside down).

    Parameters
    ----------
    fn : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60); a function still running then
        gets a verdict saying so. Enforced with ``SIGALRM`` in the main thread (POSIX).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``fn`` is not callable.

    Examples
    --------
    >>> def no_proposal(X, Z, k, c1, c2, alpha, sigma_x, sigma_a):
    ...     Z_new = np.column_stack([np.delete(Z, k, axis=1), c1, c2])
    ...     return (prior.log_prior(Z_new, alpha) - prior.log_prior(Z, alpha)
    ...             + linear_gaussian.collapsed_loglik(X, Z_new, sigma_x, sigma_a)
    ...             - linear_gaussian.collapsed_loglik(X, Z, sigma_x, sigma_a))
    >>> result = check_split_merge_ratio(no_proposal)
    >>> result.passed, "add log q(reverse merge) - log q(split)" in result.verdict
    (False, True)
    """
    check_function("fn", fn, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", _judge, fn)


def _judge(fn) -> ExerciseResult:
    """The check itself, run under the time limit."""
    cases = _cases()
    values = []
    for Z, k, c1, c2 in cases:
        out, problem = call(fn, X_TINY.copy(), Z.copy(), k, c1.copy(), c2.copy(),
                            ALPHA, SIGMA_X, SIGMA_A)
        value, bad = (None, problem) if problem else as_number(out)
        if bad:
            return fail(EXERCISE, verdict_for(bad, f"on Z = {Z.tolist()}, k = {k}, "
                                                   f"c1 = {c1.tolist()}, c2 = {c2.tolist()}"))
        values.append(value)
    values = np.array(values)
    terms = [_terms(*case) for case in cases]
    exact_values = np.array([_ratio(t) for t in terms])
    errors = np.abs(values - exact_values)
    worst = int(np.argmax(errors))
    Z, k, c1, c2 = cases[worst]
    measurements = (Measurement(f"log ratio at Z = {Z.tolist()}, k = {k}, c1 = {c1.tolist()}, "
                                f"c2 = {c2.tolist()}", float(values[worst]),
                                float(exact_values[worst]), TOLERANCE),)
    if errors.max() <= TOLERANCE:
        return ExerciseResult(EXERCISE, True, (
            f"Your acceptance ratio is exact on all {len(cases)} splits of the classes with "
            "at most 3 features of the three-row data."), measurements)
    for name, hint in _HINTS.items():
        if np.allclose(values, [_ratio(t, name) for t in terms], rtol=0, atol=1e-6):
            return fail(EXERCISE, f"Your ratio: {hint}.", measurements)
    return fail(EXERCISE, f"Your ratio is off by {errors.max():.3g} at Z = {Z.tolist()}, "
                f"k = {k}, c1 = {c1.tolist()}, c2 = {c2.tolist()}: compare the target ratio "
                "and each factor of q(split) = P(split) n(u) / K [2 if c1 != c2] 3^-m(u) "
                "and q(merge) = 1/2 (pairs {c1, c2}) / C(K + 1, 2).", measurements)
