"""Self-check of a collapsed Gibbs sweep written by a student (chapter 5)."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp
from scipy.stats import poisson

from ibp_lab.inference import exact
from ibp_lab._checks import check_count, check_rng
from ibp_lab.teaching.exercises._common import check_time_limit, within_time_limit
from ibp_lab.teaching.exercises._result import ExerciseResult, describe_exception, fail
from ibp_lab.teaching.exercises._stats import MIN_ESS, compare_frequencies

__all__ = ["check_gibbs_sweep"]

EXERCISE = "collapsed Gibbs sweep"
#: Seed of the generator used when the caller gives none: the same verdict every run.
DEFAULT_SEED = 20_250_114
# Two rows where the usual mistakes show quickly (measured over 60 random tiny data sets
# with ibp_lab.inference.gibbs.k_plus_trace; see tests/teaching/test_exercises.py): the fixed scan order
# misses the exact K+ posterior by a total variation of 0.048 here (0.011 on the book's
# three-row example), about 10 standard errors in 30,000 sweeps; the data lie far out at
# these scales, so the posterior wants 2 to 6 features and the number of new dishes of a
# row is often 2 or more.
X_CHAIN = np.array([[-2.9, 2.6, 2.2], [-1.8, 2.3, 0.3]])
ALPHA, SIGMA_X, SIGMA_A = 0.8, 0.5, 0.7
#: The first row alone: every feature is a singleton, so each sweep draws K+ afresh from
#: the new-dish law and the chain is a sample of independent draws of that law.
X_ONE_ROW = X_CHAIN[:1]
_K_MAX = 30
# Sweeps discarded before tallying the two-row chain (it forgets its start in a few).
_BURN = 200
# Calls with different seeds in the "does it use rng" test; a correct sweep returns the
# same matrix from all of them with probability far below 1e-6 on X_CHAIN.
_N_SEEDS = 20


def _as_state(out, n_rows: int) -> tuple[np.ndarray | None, str | None]:
    """The sweep's return value as an int8 matrix, or what is wrong with it."""
    try:
        Z = np.asarray(out)
    except Exception:  # noqa: BLE001 - ragged lists and the like
        return None, f"it returned {type(out).__name__}, not an array"
    if Z.ndim != 2 or Z.shape[0] != n_rows:
        return None, (f"it returned an array of shape {Z.shape}; it must return Z of shape "
                      f"(N, K) = ({n_rows}, K), one row per data point")
    if Z.dtype.kind not in "biu":
        return None, (f"it returned dtype {Z.dtype}; return integers or booleans "
                      "(Z.astype(np.int8)), not floats")
    if Z.size and not np.isin(Z, (0, 1)).all():
        return None, "it returned entries other than 0 and 1"
    empty = int(np.count_nonzero(~Z.any(axis=0))) if Z.size else 0
    if empty:
        return None, (f"it returned {empty} empty column(s): drop the features nobody owns "
                      "(Z[:, Z.sum(axis=0) > 0]) before returning")
    return Z.astype(np.int8), None


def _sweep_once(sweep, X, Z, rng) -> tuple[np.ndarray | None, str | None]:
    """One call of the student's sweep, any exception but an interrupt reported in words."""
    try:
        out = sweep(X, Z, ALPHA, SIGMA_X, SIGMA_A, rng)
    except Exception as exc:  # noqa: BLE001 - the student's error is the verdict
        return None, describe_exception(exc)
    return _as_state(out, X.shape[0])


def _basics(sweep, rng) -> str | None:
    """What is wrong with one call (shape, input untouched, randomness), or None."""
    X = X_CHAIN.copy()
    Z_in = np.array([[1, 0, 1], [1, 1, 0]], dtype=np.int8)
    Z_copy = Z_in.copy()
    seed = int(rng.integers(2**32))
    generator = np.random.default_rng(seed)
    state_before = generator.bit_generator.state
    Z_out, problem = _sweep_once(sweep, X, Z_in, generator)
    if problem:
        return problem
    if not np.array_equal(Z_in, Z_copy) or not np.array_equal(X, X_CHAIN):
        return ("it changed the arrays it was given; work on a copy (Z = np.array(Z, "
                "dtype=np.int8)) and return a new matrix")
    if generator.bit_generator.state == state_before:
        return ("it drew nothing from the rng it was given: take every random number "
                "from rng (rng.random(), rng.permutation(...)), not from np.random")
    same_seed = ("the same seed gave different results: take every random number from "
                 "the rng argument, never from np.random or the random module")
    again, problem = _sweep_once(sweep, X, Z_copy.copy(), np.random.default_rng(seed))
    if problem or not np.array_equal(Z_out, again):
        return same_seed
    outputs = set()
    for child_seed in rng.integers(2**32, size=_N_SEEDS):
        # each seed twice: a sweep that draws from elsewhere can repeat itself by chance on
        # two rows (often, for one pair of calls), but hardly 21 times in a row
        Z_new, problem = _sweep_once(sweep, X, Z_copy.copy(), np.random.default_rng(child_seed))
        if problem:
            return problem
        Z_again, problem = _sweep_once(sweep, X, Z_copy.copy(), np.random.default_rng(child_seed))
        if problem or not np.array_equal(Z_new, Z_again):
            return same_seed
        outputs.add((Z_new.shape, Z_new.tobytes()))
    if len(outputs) == 1:
        return (f"{_N_SEEDS} different seeds gave the same result: the sweep must draw "
                "its random numbers from rng (is a seed fixed inside it?)")
    return None


def _run(sweep, X, n_sweeps: int, rng) -> tuple[list, str | None]:
    """States after each sweep from one feature owned by every row."""
    Z = np.ones((X.shape[0], 1), dtype=np.int8)
    states = []
    for t in range(n_sweeps):
        Z, problem = _sweep_once(sweep, X, Z, rng)
        if problem:
            return states, f"after {t} sweeps on {X.shape[0]} row(s) from K+ = " \
                           f"{states[-1].shape[1] if states else 1}, {problem}"
        states.append(Z)
    return states, None


def _one_row_laws() -> dict:
    """The law of K+ on one row, exact and under each usual mistake of the new-dish law."""
    k = np.arange(_K_MAX + 1)
    var = SIGMA_X**2 + k * SIGMA_A**2
    n_dims = X_ONE_ROW.shape[1]
    log_lik = -0.5 * n_dims * np.log(var) - float(np.sum(X_ONE_ROW**2)) / (2 * var)
    log_prior = poisson(ALPHA).logpmf(k)
    truncated = np.where(k <= 1, log_prior + log_lik, -np.inf)
    laws = {
        "exact": exact.k_plus_posterior(X_ONE_ROW, ALPHA, SIGMA_X, SIGMA_A, k_max=_K_MAX),
        "prior only": np.exp(log_prior),
        "no factorial": log_prior + gammaln(k + 1) + log_lik,
        "at most one": truncated,
    }
    for name in ("no factorial", "at most one"):
        laws[name] = np.exp(laws[name] - logsumexp(laws[name]))
    return laws


_NEW_DISH_HINTS = {
    "prior only": ("your number of new dishes follows the prior Poisson(alpha / N) alone: "
                   "weight each count k by the likelihood of the row with k new features "
                   "too (each adds sigma_a^2 to the predictive variance of every dimension)"),
    "no factorial": ("your rows take too many new dishes, as if the law of their number "
                     "lacked the 1 / k! of the Poisson: weight k new dishes by "
                     "rate^k exp(-rate) / k! times the likelihood"),
    "at most one": ("a row never takes more than one new dish: their number is Poisson, "
                    "not Bernoulli; weigh k = 0, 1, 2, ... until the weights are negligible"),
}


def _diagnose_new_dishes(k_plus: np.ndarray, laws: dict) -> str:
    """Which mistake's law explains a one-row K+ sample best, in words."""
    counts = np.bincount(np.minimum(k_plus, _K_MAX), minlength=_K_MAX + 1)
    fit = {name: float(counts @ np.log(np.maximum(p, 1e-300))) for name, p in laws.items()}
    best = max(fit, key=fit.get)
    if best != "exact" and fit[best] > fit["exact"]:
        return _NEW_DISH_HINTS[best]
    return ("the number of new dishes does not follow its exact conditional: prior "
            "Poisson(alpha beta / (beta + N - 1)) times the likelihood of the row with "
            "k new features, normalised over k")


def _frequency_verdict(misses) -> str:
    """The worst miss (the one farthest outside its tolerance) in words."""
    ratio, worst = max(misses, key=lambda item: abs(item[1].observed - item[1].expected)
                       / item[1].tolerance)
    if worst.observed == 0:
        how = f"is never visited, although its exact probability is {worst.expected:.3f}"
    else:
        how = (f"is visited {ratio:.2g}x too often" if ratio > 1
               else f"is visited {1 / ratio:.2g}x too rarely")
        how += (f" (observed {worst.observed:.3f}, exact {worst.expected:.3f} "
                f"+- {worst.tolerance:.3f})")
    return f"{worst.quantity} {how}"


def _class_label(Z: np.ndarray) -> tuple:
    """The left-ordered class of a two-row matrix: counts of columns 11, 10 and 01."""
    values = 2 * Z[0].astype(int) + Z[1]
    return tuple(int(np.count_nonzero(values == v)) for v in (3, 2, 1))


def check_gibbs_sweep(sweep, rng: np.random.Generator | None = None, *,
                      n_sweeps: int = 10_000, n_one_row: int = 2_000,
                      time_limit: float = 600.0) -> ExerciseResult:
    """Check a collapsed Gibbs sweep of the linear-Gaussian IBP against exact enumeration.

    ``sweep(X, Z, alpha, sigma_x, sigma_a, rng) -> Z`` has the signature of
    :func:`ibp_lab.inference.gibbs.gibbs_sweep` (with ``beta = 1``). Three tests, in order, each
    stopping the check with a verdict in words if it fails:

    1. **Basics**: one call returns an ``(N, K)`` integer 0/1 matrix without empty
       columns, leaves its inputs unchanged, draws from the ``rng`` it is given, gives
       the same result from the same seed and different results from different seeds.
    2. **New dishes**, on one row (every feature a singleton, so each sweep draws ``K+``
       afresh): the frequencies of ``K+`` against the exact posterior of
       :func:`ibp_lab.inference.exact.k_plus_posterior`. A failure is matched to the usual
       mistakes (prior only, a forgotten factorial, at most one new dish).
    3. **The chain**, on two rows from one shared feature: the frequencies of ``K+`` and
       of the left-ordered class against :func:`ibp_lab.inference.exact.class_posterior`.

    Each frequency's tolerance is ``z sqrt(p (1 - p) / ESS)``, ESS the chain's own
    effective sample size for that value and ``z`` split over all bins so that a correct
    sweep fails a test with probability about 1e-3 or less.

    Parameters
    ----------
    sweep : callable
        The student's sweep.
    rng : numpy.random.Generator, optional
        Source of the seeds given to ``sweep``; default a fixed generator, so the
        verdict is the same in every run.
    n_sweeps : int, optional
        Sweeps of the two-row chain (at least 2,000). At the default a fixed scan order
        misses the exact class probabilities by about ten standard errors; a plain NumPy
        sweep takes 0.3 to 1 ms on two rows, so 3 to 10 s.
    n_one_row : int, optional
        Sweeps on one row (at least 500).
    time_limit : float, optional
        Seconds the whole check may take (default 600: a sweep in plain Python loops
        of 10 ms needs two minutes); a sweep still running then gets a verdict saying
        so. Enforced with ``SIGALRM`` in the main thread (POSIX).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``sweep`` is not callable.

    Examples
    --------
    >>> from ibp_lab.inference.gibbs import gibbs_sweep
    >>> result = check_gibbs_sweep(gibbs_sweep)
    >>> result.passed
    True
    >>> def my_sweep(X, Z, alpha, sigma_x, sigma_a, rng):
    ...     raise NotImplementedError
    >>> print(check_gibbs_sweep(my_sweep).verdict)  # doctest: +NORMALIZE_WHITESPACE
    Your sweep is not written yet (it raises NotImplementedError): fill in the function
    and run again.
    """
    if not callable(sweep):
        raise TypeError("sweep must be a function sweep(X, Z, alpha, sigma_x, sigma_a, rng) "
                        f"-> Z, got {type(sweep).__name__}")
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else check_rng(rng)
    n_sweeps = check_count("n_sweeps", n_sweeps, minimum=2_000, maximum=10**7)
    n_one_row = check_count("n_one_row", n_one_row, minimum=500, maximum=10**7)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "sweep", _judge, sweep, rng, n_sweeps, n_one_row)


def _judge(sweep, rng: np.random.Generator, n_sweeps: int, n_one_row: int) -> ExerciseResult:
    """The check itself, run under the time limit."""
    problem = _basics(sweep, rng)
    if problem:
        return fail(EXERCISE, f"Your sweep is {problem}" if problem.startswith("not written")
                    else f"Your sweep: {problem}.")

    laws = _one_row_laws()
    states, problem = _run(sweep, X_ONE_ROW, n_one_row, rng)
    if problem:
        return fail(EXERCISE, f"Your sweep failed {problem}.")
    k_one = np.array([Z.shape[1] for Z in states])
    expected = {k: float(p) for k, p in enumerate(laws["exact"])}
    measured, misses, _ = compare_frequencies(
        k_one, expected, lambda label, main: _k_name(label, main) + " (one row)")
    if misses:
        return fail(EXERCISE, _frequency_verdict(misses) + ": "
                    + _diagnose_new_dishes(k_one, laws) + ".", measured)

    states, problem = _run(sweep, X_CHAIN, n_sweeps + _BURN, rng)
    if problem:
        return fail(EXERCISE, f"Your sweep failed {problem}.")
    return _chain_result(states[_BURN:], measured)


def _k_name(label, main) -> str:
    if label is None:
        return "K+ not in {" + ", ".join(str(k) for k in main) + "}"
    return f"K+ = {label}"


def _class_name(label, main=()) -> str:
    if label is None:
        return "other classes (two rows)"
    # the left-ordered columns, each written top row first: [11, 10, 10]
    columns = [bits for bits, count in zip(("11", "10", "01"), label) for _ in range(count)]
    return f"class [{', '.join(columns)}] (two rows)"


def _chain_result(states: list, one_row: list) -> ExerciseResult:
    post = exact.class_posterior(X_CHAIN, ALPHA, SIGMA_X, SIGMA_A, k_max=20)
    p_k = np.bincount(post.k_plus, weights=post.probabilities)
    k_plus = np.array([Z.shape[1] for Z in states])
    exact_classes = {tuple(int(c) for c in row): float(p)
                     for row, p in zip(post.counts, post.probabilities)}
    # classes as integer codes for the ESS: the exact ones first, then any the chain
    # visits that the enumeration lacks (a state with more than 20 features)
    codes = {label: index for index, label in enumerate(exact_classes)}
    class_codes = np.array([codes.setdefault(_class_label(Z), len(codes)) for Z in states])
    expected_codes = {codes[label]: p for label, p in exact_classes.items()}
    names = {code: label for label, code in codes.items()}

    k_measured, k_misses, k_ess = compare_frequencies(
        k_plus, {k: float(p) for k, p in enumerate(p_k)},
        lambda label, main: _k_name(label, main) + " (two rows)")
    c_measured, c_misses, c_ess = compare_frequencies(
        class_codes, expected_codes, lambda code, main: _class_name(names.get(code)))
    measurements = tuple(one_row) + tuple(k_measured) + tuple(c_measured)
    if min(k_ess, c_ess) < MIN_ESS:
        return fail(EXERCISE, "Your chain hardly moves on two rows (an effective sample "
                    f"size of {min(k_ess, c_ess):.0f}): are the flips of the shared "
                    "features accepted with their conditional probability?", measurements)
    misses = k_misses or c_misses  # K+ speaks to a student more directly than a class
    if not misses:
        return ExerciseResult(EXERCISE, True, (
            "Your sweep agrees with exact enumeration: the number of new dishes on one row, "
            "and K+ and the class of Z on two rows, within their Monte Carlo error."),
            measurements)
    if not k_misses:
        return fail(EXERCISE, _frequency_verdict(misses) + ". The number of features K+ "
                    "has the right law, but which row owns which feature does not: check "
                    "that the update of row i scores row i's own data x_i against the "
                    "other rows' features (an index off by one mirrors the rows).",
                    measurements)
    more = float(k_plus.mean()) > float(np.arange(len(p_k)) @ p_k)
    hint = ("The number of new dishes passed on one row, so look at the shared features. "
            "Visit them in a fresh random order for every row (rng.permutation) and keep the "
            "row's singletons in their columns: a fixed column order with singletons moved "
            "to the end is Griffiths & Ghahramani's heuristic, which is biased")
    hint += (" (it gives too many features, as yours does)." if more else
             "; check also the prior odds m_k / (N - 1 - m_k + beta) of a shared feature.")
    return fail(EXERCISE, _frequency_verdict(misses) + ". " + hint, measurements)
