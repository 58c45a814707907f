"""Self-check of the probability of a left-ordered class (chapter 1)."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ibp_lab.inference import exact
from ibp_lab.models import prior
from ibp_lab.teaching.exercises._common import (as_number, call, check_function, check_time_limit,
                                       verdict_for, within_time_limit)
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail

__all__ = ["check_class_probability"]

EXERCISE = "probability of a left-ordered class"
SIGNATURE = "fn(Z, alpha, beta=1.0) -> log P([Z])"
#: (alpha, beta) of the cases: the one-parameter IBP, then a beta far from 1.
SETTINGS = ((1.7, 1.0), (0.9, 2.5))
#: Every class with at most this many features, on 1, 2 and 3 rows (144 classes).
K_MAX = 3
#: Largest accepted |student - exact| in log space (rounding of a few log-gammas).
TOLERANCE = 1e-8
# Fixed column shuffles: a class probability must not depend on the order of columns.
_SHUFFLE_SEED = 7


def _cases():
    """(Z, alpha, beta) for every small class, columns shuffled, one with an empty column."""
    shuffle = np.random.default_rng(_SHUFFLE_SEED)
    cases = []
    for alpha, beta in SETTINGS:
        for n_rows in (1, 2, 3):
            for Z in exact.enumerate_classes(n_rows, K_MAX):
                cases.append((Z[:, shuffle.permutation(Z.shape[1])], alpha, beta))
    Z = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1]], dtype=np.int8)  # column 2 is empty
    cases.append((Z, 1.7, 1.0))
    return cases


def _log_multiplicities(Z: np.ndarray) -> float:
    """log prod_h K_h!: the identical non-empty columns of Z, counted."""
    Z = Z[:, Z.any(axis=0)]
    if Z.shape[1] == 0:
        return 0.0
    _, counts = np.unique(Z, axis=1, return_counts=True)
    return float(gammaln(counts + 1.0).sum())


def _log_new_dish_counts(Z: np.ndarray) -> float:
    """log prod_i K_1^(i)!: K_1^(i) the number of dishes customer i tried first."""
    Z = Z[:, Z.any(axis=0)]
    first_owner = np.argmax(Z, axis=0)
    counts = np.bincount(first_owner, minlength=Z.shape[0])
    return float(gammaln(counts + 1.0).sum())


def _mistakes(Z, alpha, beta) -> dict:
    """What the usual mistakes return for one class, next to the exact value."""
    right = prior.log_prior(Z, alpha, beta=beta)
    k_plus = int(np.count_nonzero(Z.any(axis=0)))
    return {
        "exact": right,
        "no K_h!": right + _log_multiplicities(Z),
        "history": right + _log_multiplicities(Z) - _log_new_dish_counts(Z),
        "beta ignored": prior.log_prior(Z, alpha, beta=1.0),
        "alpha only": right - k_plus * np.log(beta),
        "no exp": right + prior.expected_num_features(alpha, Z.shape[0], beta=beta),
        "not log": float(np.exp(right)),
    }


_EMPTY_COLUMN = ("An all-zero column is not a feature: drop the empty columns first "
                 "(Z[:, Z.any(axis=0)]).")

_HINTS = {
    "no K_h!": ("the factor 1 / prod_h K_h! is missing: identical columns can be ordered in "
                "K_h! ways that give the same left-ordered matrix, so count each group of "
                "identical non-empty columns and divide by the factorials of their sizes"),
    "history": ("you computed the probability of one buffet history (dishes in order of "
                "creation), not of the left-ordered class: multiply by prod_i K_1^(i)! / "
                "prod_h K_h! (K_1^(i): dishes first tried by customer i; K_h: columns equal "
                "to each other)"),
    "beta ignored": ("right at beta = 1 but not at beta = 2.5: the two-parameter class "
                     "probability has (alpha beta)^K+, exp(-alpha sum_i beta / (beta + i - 1)) "
                     "and B(m_k, N - m_k + beta); use beta in all three"),
    "alpha only": ("beta is missing from the power: the factor is (alpha beta)^K+, not alpha^K+"),
    "no exp": ("the factor exp(-alpha sum_{i=1}^N beta / (beta + i - 1)), the probability "
               "that no further dish appears, is missing"),
    "not log": "you returned the probability; return its logarithm (work in log space)",
}


def _depends_on_order(fn, cases, values) -> bool:
    """Whether ``fn`` changes its value when a case's columns are put in left order."""
    for (Z, alpha, beta), value in zip(cases, values):
        again = as_number(call(fn, prior.left_ordered(Z), alpha, beta=beta)[0])[0]
        if again is None or abs(again - value) > TOLERANCE:
            return True
    return False


def check_class_probability(fn, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's ``log P([Z] | alpha, beta)`` on every small left-ordered class.

    ``fn(Z, alpha, beta=1.0)`` must return the log probability of the left-ordered
    class of ``Z`` (as :func:`ibp_lab.models.prior.log_prior`). It is called on every class
    with at most three features on one, two and three rows (columns in a shuffled
    order), at ``beta = 1`` and at ``beta = 2.5``, and once with an empty column (which
    is not a feature). A value further than 1e-8 from the exact one fails, and the
    verdict says which usual mistake explains the values: the forgotten ``1 / prod K_h!``,
    a buffet history instead of a class, ``beta`` ignored, and others.

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
    >>> check_class_probability(prior.log_prior).passed
    True
    >>> def forgot_factorial(Z, alpha, beta=1.0):
    ...     return prior.log_prior(Z, alpha, beta=beta) + _log_multiplicities(np.asarray(Z))
    >>> "1 / prod_h K_h! is missing" in check_class_probability(forgot_factorial).verdict
    True
    """
    check_function("fn", fn, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", _judge, fn)


def _judge(fn) -> ExerciseResult:
    """The check itself, run under the time limit."""
    cases = _cases()
    values = []
    for index, (Z, alpha, beta) in enumerate(cases):
        out, problem = call(fn, Z.copy(), alpha, beta=beta)
        value, bad = (None, problem) if problem else as_number(out)
        if bad:
            verdict = verdict_for(bad, f"on Z = {Z.tolist()}, alpha = {alpha}, beta = {beta}")
            if index == len(cases) - 1:  # the case with an empty column
                verdict += " " + _EMPTY_COLUMN
            return fail(EXERCISE, verdict)
        values.append(value)
    values = np.array(values)
    laws = {name: np.array([_mistakes(Z, a, b)[name] for Z, a, b in cases])
            for name in _mistakes(*cases[0])}
    errors = np.abs(values - laws["exact"])
    worst = int(np.argmax(errors))
    Z, alpha, beta = cases[worst]
    measurements = (Measurement(f"log P([Z]) at Z = {Z.tolist()}, alpha = {alpha}, beta = {beta}",
                                float(values[worst]), float(laws["exact"][worst]), TOLERANCE),)
    if errors.max() <= TOLERANCE:
        return ExerciseResult(EXERCISE, True, (
            f"Your class probability agrees with the exact one on all {len(cases)} cases "
            "(every class with at most 3 features on 1 to 3 rows, at beta = 1 and 2.5, "
            "columns in any order, an empty column ignored)."), measurements)
    if errors[:-1].max() <= TOLERANCE:
        return fail(EXERCISE, "Your function counts an all-zero column as a feature. "
                    + _EMPTY_COLUMN, measurements)
    for name, hint in _HINTS.items():
        if np.allclose(values[:-1], laws[name][:-1], rtol=0, atol=1e-6):
            return fail(EXERCISE, f"Your function: {hint}.", measurements)
    if _depends_on_order(fn, cases, values):
        return fail(EXERCISE, "Your function gives different values for the same class with "
                    "its columns in another order: a class probability may depend only on "
                    "the multiset of columns.", measurements)
    return fail(EXERCISE, f"Your function is off by {errors.max():.3g} (in log space) at "
                f"Z = {Z.tolist()}, alpha = {alpha}, beta = {beta}: compare each factor of "
                "(alpha beta)^K+ / prod_h K_h! exp(-alpha sum_i beta / (beta + i - 1)) "
                "prod_k B(m_k, N - m_k + beta).", measurements)
