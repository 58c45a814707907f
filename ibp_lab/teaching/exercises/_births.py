"""Self-check of a Metropolis-Hastings birth-and-death step written by a student (the
non-conjugate chapter)."""

from __future__ import annotations

import numpy as np
from scipy.stats import poisson

from ibp_lab import _kernel
from ibp_lab.inference import exact
from ibp_lab._checks import check_count, check_rng
from ibp_lab._hyper import new_dish_rate
from ibp_lab._threads import single_blas_thread
from ibp_lab.teaching.exercises._common import call, check_function, check_time_limit, within_time_limit
from ibp_lab.teaching.exercises._result import ExerciseResult, fail
from ibp_lab.teaching.exercises._stats import MIN_ESS, compare_frequencies

__all__ = ["check_birth_step"]

EXERCISE = "Metropolis-Hastings births and deaths"
SIGNATURE = "fn(residual, own, rate, sigma_x, sigma_a, rng) -> images of the row's singletons"
#: Seed of the generator used when the caller gives none: the same verdict every run.
DEFAULT_SEED = 20_261_205
#: The book's three-row example and its hyperparameters (beta = 1): the uncollapsed
#: sampler's exactness test (tests/inference/test_uncollapsed.py) runs on the same posterior.
X_TINY = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
ALPHA, SIGMA_X, SIGMA_A = 1.3, 0.6, 1.2
#: One row: every feature is a singleton, so K+ after each sweep is the birth step's alone.
X_ONE_ROW = X_TINY[:1]
_K_MAX = 30
#: Sweeps dropped before tallying (the chains forget their start within a few dozen).
_BURN = 100
#: Sweeps of the three-row chain run twice from one seed, every call's images compared. A
#: single call cannot show a step that draws its images from another generator when its
#: Poisson draw is 0 or it rejects; about 10% of the calls on three rows return fresh
#: images (measured with a correct step, 2,000 seeds), so in 300 calls such a step
#: repeats itself by chance with probability about 0.9^300 = 2e-14. A step that takes
#: every number from ``rng`` repeats exactly: this check never fails a correct step.
_REPLAY_SWEEPS = 100


def _as_images(out, n_dims: int) -> tuple[np.ndarray | None, str | None]:
    """The step's return value as a ``(k, D)`` float array, or what is wrong with it."""
    try:
        images = np.asarray(out, dtype=float)
    except Exception:  # noqa: BLE001 - ragged lists, None and the like
        return None, f"it returned {type(out).__name__}, not an array of images"
    if images.ndim != 2 or images.shape[1] != n_dims:
        return None, (f"it returned an array of shape {images.shape}; return the images of "
                      f"the row's singletons after the step, shape (k, D) = (k, {n_dims}), "
                      "with k = 0 allowed (np.zeros((0, D)))")
    if not np.isfinite(images).all():
        return None, "it returned images that are not finite"
    return images, None


def _step_once(step, residual, own, rate, rng):
    out, problem = call(step, residual, own, rate, SIGMA_X, SIGMA_A, rng)
    return (None, problem) if problem else _as_images(out, residual.shape[0])


def _basics(step, rng) -> str | None:
    """What is wrong with single calls (shape, inputs untouched, randomness), or None."""
    residual, own = np.array([0.4, -0.2]), np.array([[0.8, 0.1]])
    residual_copy, own_copy = residual.copy(), own.copy()
    seed = int(rng.integers(2**32))
    generator = np.random.default_rng(seed)
    state_before = generator.bit_generator.state
    first, problem = _step_once(step, residual, own, 1.0, generator)
    if problem:
        return problem
    if not (np.array_equal(residual, residual_copy) and np.array_equal(own, own_copy)):
        return "it changed the arrays it was given; work on copies"
    if generator.bit_generator.state == state_before:
        return ("it drew nothing from the rng it was given: draw the number of new features "
                "and their images from rng (rng.poisson, rng.normal, rng.random)")
    again, problem = _step_once(step, residual, own, 1.0, np.random.default_rng(seed))
    if problem or not np.array_equal(first, again):
        return _NOT_REPEATED
    return _replay_problem(step, seed)


_NOT_REPEATED = ("the same seed gave different results: take every random number from the "
                 "rng argument, never from np.random or the random module")


def _replay_problem(step, seed: int) -> str | None:
    """What is wrong when the three-row chain is run twice from one seed (a failing call,
    or a call whose images differ between the runs; see :data:`_REPLAY_SWEEPS`), or None."""
    outputs = []
    for _ in range(2):
        outputs.append([])
        _, problem = _run(step, X_TINY, _REPLAY_SWEEPS, np.random.default_rng(seed),
                          record=outputs[-1])
        if problem:
            return f"it failed {problem}"
    if len(outputs[0]) != len(outputs[1]) or not all(
            np.array_equal(a, b) for a, b in zip(*outputs)):
        return _NOT_REPEATED
    return None


def _sweep(step, X, Z, A, rng, record=None) -> tuple[np.ndarray, np.ndarray, str | None]:
    """One uncollapsed sweep with the student's births: the package's shared flips, the
    student's step on each row's singletons, then ``A`` from its conditional. Each call's
    images are appended to ``record`` if given."""
    from ibp_lab.inference.uncollapsed import flip_shared_features

    N = X.shape[0]
    resid = X - Z @ A
    m = Z.sum(axis=0).astype(np.int64)
    flip_shared_features(Z, A, resid, m, _kernel.prior_log_odds_table(N, 1.0),
                         2.0 * SIGMA_X**2, rng)
    rate = new_dish_rate(ALPHA, 1.0, N - 1)
    m = Z.sum(axis=0)
    keep, born_rows, born = np.ones(Z.shape[1], bool), [], []
    for n in range(N):
        own = np.flatnonzero((Z[n] == 1) & (m == 1))
        images, problem = _step_once(step, resid[n].copy(), A[own].copy(), rate, rng)
        if problem:
            return Z, A, problem
        if record is not None:
            record.append(images.copy())
        keep[own] = False
        born_rows += [n] * images.shape[0]
        born.append(images)
    Z = Z[:, keep]
    new = np.zeros((N, len(born_rows)), np.int8)
    new[born_rows, np.arange(len(born_rows))] = 1
    Z = np.hstack([Z, new])
    Z = Z[:, Z.any(axis=0)]
    return Z, _kernel.draw_posterior_features(X, Z, SIGMA_X, SIGMA_A, rng), None


def _run(step, X, n_sweeps: int, rng, record=None) -> tuple[list, str | None]:
    """The states of ``Z`` after each sweep, from one feature owned by every row (each
    call's images appended to ``record`` if given)."""

    Z = np.ones((X.shape[0], 1), np.int8)
    A = _kernel.draw_posterior_features(X, Z, SIGMA_X, SIGMA_A, rng)
    states = []
    for t in range(n_sweeps):
        Z, A, problem = _sweep(step, X, Z, A, rng, record)
        if problem:
            return states, f"after {t} sweeps on {X.shape[0]} row(s), {problem}"
        states.append(Z.copy())
    return states, None


def _k_name(rows: str):
    def name(label, main) -> str:
        if label is None:
            return f"K+ not in {{{', '.join(str(k) for k in main)}}} ({rows})"
        return f"K+ = {label} ({rows})"
    return name


def _worst(misses) -> str:
    ratio, worst = max(misses, key=lambda item: abs(item[1].observed - item[1].expected)
                       / item[1].tolerance)
    how = (f"is visited {ratio:.2g}x too often" if ratio > 1 else
           f"is visited {1 / ratio:.2g}x too rarely" if ratio > 0 else "is never visited")
    return (f"{worst.quantity} {how} (observed {worst.observed:.3f}, exact "
            f"{worst.expected:.3f} +- {worst.tolerance:.3f})")


_RATIO_HINT = ("accept the proposal with probability min(1, p(x_n | new) / p(x_n | old)): "
               "with e_old the residual you are given (the row's singletons included) and "
               "e_new = e_old + (sum of the old images) - (sum of the new ones), the log ratio "
               "is (||e_old||^2 - ||e_new||^2) / (2 sigma_x^2); the prior of the new features "
               "and the proposal cancel, so neither appears")


def _one_row_verdict(k_one: np.ndarray, exact_law: np.ndarray) -> str:
    """Does the one-row K+ sample look like the prior (every proposal accepted)?"""
    counts = np.bincount(np.minimum(k_one, _K_MAX), minlength=_K_MAX + 1)
    prior = poisson(ALPHA).pmf(np.arange(_K_MAX + 1))
    fit_prior = float(counts @ np.log(np.maximum(prior, 1e-300)))
    fit_exact = float(counts @ np.log(np.maximum(exact_law, 1e-300)))
    if fit_prior > fit_exact:
        return ("your row's number of features follows the prior Poisson(rate): the "
                "proposals seem to be accepted whatever the data say; " + _RATIO_HINT)
    return _RATIO_HINT


def check_birth_step(step, rng: np.random.Generator | None = None, *, n_sweeps: int = 10_000,
                     n_one_row: int = 3_000, time_limit: float = 600.0) -> ExerciseResult:
    """Check a birth-and-death step of the uncollapsed linear-Gaussian sampler by enumeration.

    ``step(residual, own, rate, sigma_x, sigma_a, rng) -> images`` is one Metropolis-Hastings
    update of a row's singletons (the features no other row owns): ``residual`` is
    ``x_n - z_n A`` with every feature of the row, the singletons included; ``own`` the
    ``(k, D)`` images of the singletons; ``rate`` the Poisson rate of new features
    ``alpha beta / (beta + N - 1)``. It proposes ``k' ~ Poisson(rate)`` new features with
    images ``Normal(0, sigma_a^2)`` in place of the old ones, accepts or rejects, and
    returns the ``(k'', D)`` images the row's singletons have afterwards.

    The step runs inside an uncollapsed sweep whose other parts are the package's
    (:mod:`ibp_lab.inference.uncollapsed`: the shared entries by Gibbs, then ``A`` from its
    conditional). Three tests, each stopping the check with a verdict in words:

    1. **Basics**: a call returns a ``(k, D)`` finite array, leaves its inputs unchanged,
       draws from the ``rng`` it is given and repeats itself from the same seed, and so
       does every call in 100 sweeps of the three-row chain run twice from one seed.
    2. **One row**, where every feature is a singleton: the law of ``K+`` against the exact
       posterior (:func:`ibp_lab.inference.exact.k_plus_posterior`).
    3. **Three rows**: the laws of ``K+`` and of the class of ``Z`` against
       :func:`ibp_lab.inference.exact.class_posterior`.

    Each frequency's tolerance is ``z sqrt(p (1 - p) / ESS)`` with the chain's own ESS of
    that value and ``z`` split over the bins, so a correct step fails each test with
    probability about 1e-3 or less.

    Parameters
    ----------
    step : callable
        The student's step.
    rng : numpy.random.Generator, optional
        Source of the seeds; default a fixed generator (the same verdict every run).
    n_sweeps, n_one_row : int, optional
        Sweeps on three rows (at least 2,000) and on one row (at least 500). At the
        defaults a step in plain NumPy takes about 8 s; a step with the sign of the change
        reversed misses the three-row law of K+ by about four tolerances.
    time_limit : float, optional
        Seconds the whole check may take (POSIX main thread; see
        :func:`ibp_lab.teaching.exercises.check_gibbs_sweep`).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``step`` is not callable.

    Examples
    --------
    >>> def my_step(residual, own, rate, sigma_x, sigma_a, rng):
    ...     new = rng.normal(0.0, sigma_a, size=(rng.poisson(rate), residual.size))
    ...     e_new = residual + own.sum(axis=0) - new.sum(axis=0)
    ...     log_r = (residual @ residual - e_new @ e_new) / (2 * sigma_x**2)
    ...     return new if np.log(rng.random()) < log_r else own
    >>> check_birth_step(my_step, n_sweeps=2000, n_one_row=500).passed
    True
    """
    check_function("step", step, SIGNATURE)
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else check_rng(rng)
    n_sweeps = check_count("n_sweeps", n_sweeps, minimum=2_000, maximum=10**7)
    n_one_row = check_count("n_one_row", n_one_row, minimum=500, maximum=10**7)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "step", _judge, step, rng, n_sweeps, n_one_row)


# small linear algebra: two BLAS threads cost 5-15x on a busy machine (issue 48)
@single_blas_thread
def _judge(step, rng, n_sweeps: int, n_one_row: int) -> ExerciseResult:
    problem = _basics(step, rng)
    if problem:
        return fail(EXERCISE, f"Your step is {problem}" if problem.startswith("not written")
                    else f"Your step: {problem}.")
    states, problem = _run(step, X_ONE_ROW, n_one_row + _BURN, rng)
    if problem:
        return fail(EXERCISE, f"Your step failed {problem}.")
    k_one = np.array([Z.shape[1] for Z in states[_BURN:]])
    exact_one = exact.k_plus_posterior(X_ONE_ROW, ALPHA, SIGMA_X, SIGMA_A, k_max=_K_MAX)
    one_row, misses, _ = compare_frequencies(
        k_one, {k: float(p) for k, p in enumerate(exact_one)}, _k_name("one row"))
    if misses:
        return fail(EXERCISE, _worst(misses) + ": " + _one_row_verdict(k_one, exact_one) + ".",
                    one_row)
    states, problem = _run(step, X_TINY, n_sweeps + _BURN, rng)
    if problem:
        return fail(EXERCISE, f"Your step failed {problem}.")
    return _three_rows(states[_BURN:], one_row)


def _three_rows(states: list, one_row: list) -> ExerciseResult:
    post = exact.class_posterior(X_TINY, ALPHA, SIGMA_X, SIGMA_A, k_max=14)
    p_k = np.bincount(post.k_plus, weights=post.probabilities)
    index = {row.tobytes(): c for c, row in enumerate(post.counts)}
    classes = np.array([index.get(exact.class_counts(Z).astype(post.counts.dtype).tobytes(), -1)
                        for Z in states])
    k_plus = np.array([Z.shape[1] for Z in states])
    k_measured, k_misses, k_ess = compare_frequencies(
        k_plus, {k: float(p) for k, p in enumerate(p_k)}, _k_name("three rows"))
    names = {c: "/".join("".join(map(str, r)) for r in
                         np.repeat(exact.column_types(3), post.counts[c], axis=1))
             for c in range(len(post.counts))}
    c_measured, c_misses, c_ess = compare_frequencies(
        classes, dict(enumerate(post.probabilities.tolist())),
        lambda c, main: "other classes (three rows)" if c is None
        else f"class {names[c] or '(empty)'} (three rows)")
    measurements = tuple(one_row) + tuple(k_measured) + tuple(c_measured)
    if min(k_ess, c_ess) < MIN_ESS:
        return fail(EXERCISE, "The chain hardly moves on three rows (an effective sample "
                    f"size of {min(k_ess, c_ess):.0f}): does your step ever accept?",
                    measurements)
    misses = k_misses or c_misses
    if not misses:
        return ExerciseResult(EXERCISE, True, (
            "Your step agrees with exact enumeration: K+ on one row, and K+ and the class of "
            "Z on three rows, within their Monte Carlo error."), measurements)
    return fail(EXERCISE, _worst(misses) + ". One row passed, but a row's residual there is "
                "all its own; with several rows, check the change you make to it: the old "
                "singletons' images go back in (added), the new ones come out (subtracted), "
                "and only the row's own singletons are replaced; " + _RATIO_HINT + ".",
                measurements)
