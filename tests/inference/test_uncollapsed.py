"""Tests of the samplers that keep the feature images: ibp_lab.inference.uncollapsed, ibp_lab.inference.slice_sampler.

Both samplers are kernels on ``(Z, A)``. Each sweep ends by drawing ``A`` afresh from
``p(A | X, Z)``, so the chain on ``Z`` alone is Markov, with the collapsed class posterior as
its target. On three and four rows that posterior is enumerated (:mod:`ibp_lab.inference.exact`), and
the shared check of ``tests/exactness.py`` compares each sampler's class frequencies with it:
every class above 0.3% plus one bin for the rest, exact binomial tails at the chain's ESS,
Bonferroni over the bins, so a correct sampler fails with probability at most 1e-3 per case.

The check must also be able to fail. Each sampler gets one-line bugs planted by
``monkeypatch`` (a weight law without ``beta``, a thinning exponent off by one, the slice's
``1 / mu*`` density forgotten, a birth rate with ``N`` rows in place of ``N - 1``, a birth
ratio over ``2 sigma_x`` in place of ``2 sigma_x^2``) and each must be caught. The last is
invisible near ``sigma_x = 1``, and at the main case's 0.6 it passed: the uncollapsed
sampler is also checked at ``sigma_x = 2``, where it doubles the log ratio. These "planted" tests fail to catch a bug with a probability far below 1e-3:
each bug moves the class probabilities by many Monte Carlo standard errors (measured:
p-values 1e-5 to 1e-80 at the seeds used).

The pieces are checked on their own against direct computations: the draw of ``A`` against
:func:`ibp_lab.models.linear_gaussian.feature_posterior` (chi-square of whitened draws), the count
of sticks above a slice against quadrature of the Poisson intensity.
"""

import math
import time
import types

import numpy as np
import pytest
from numba import njit
from scipy import integrate, stats
from threadpoolctl import threadpool_info

from ibp_lab.inference import slice_sampler, uncollapsed
from ibp_lab._hyper import check_hyperparameters, new_dish_rate
from ibp_lab._threads import single_blas_thread
from ibp_lab import _kernel
from ibp_lab.models.linear_gaussian import collapsed_loglik, feature_posterior, sample_features
from ibp_lab.inference.uncollapsed import draw_entry, likelihood_log_odds
from tests.exactness import assert_leaves_posterior_invariant
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, normal_two_sided_z

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
X4 = np.array([[1.1, -0.2], [0.9, 0.3], [-0.5, 0.9], [0.2, 1.1]])
ALPHA, SIGMA_X, SIGMA_A = 1.3, 0.6, 1.2
SAMPLERS = {"uncollapsed": uncollapsed, "slice": slice_sampler}


def z_kernel(module, X, beta, rng, alpha=ALPHA, sigma_x=SIGMA_X, births=None):
    """The sampler's sweep as a kernel on ``Z``: ``A`` drawn from ``p(A | X, Z)`` first
    (the sweep's own last step, so the composition is the chain the runner runs), with
    one BLAS thread as in the runners. ``births``: the uncollapsed sweep's birth rule
    (``None``: the sweep's default)."""
    hyper = check_hyperparameters(X, alpha, sigma_x, SIGMA_A, beta)
    extra = () if births is None else (births,)

    @single_blas_thread
    def step(Z):
        A = _kernel.draw_posterior_features(X, Z, sigma_x, SIGMA_A, rng)
        return module._sweep(X, Z, A, hyper, rng, *extra)[0]
    return step


# --------------------------------------------------------------------------------------
# the pieces
# --------------------------------------------------------------------------------------


@pytest.mark.statistical(rate=2e-3)
def test_sample_features_draws_from_feature_posterior():
    """Whitened by the posterior's Cholesky factor, draws of ``A`` are standard normal.

    ``w = L^T (A - mean) / sigma_x`` has independent N(0, 1) entries when ``A`` has the
    posterior's mean and covariance ``sigma_x^2 M^-1`` column by column. Two chi-square tests
    at 1e-3 each: the mean of the ``w`` (location) and their sum of squares (scale).
    """
    X = np.random.default_rng(0).normal(size=(7, 3))
    Z = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 0, 1]])
    mean, cov = feature_posterior(X, Z, 0.7, 1.3)
    L = np.linalg.cholesky(cov / 0.7**2)  # cov = sigma_x^2 M^-1, the same for every column
    whiten = np.linalg.inv(L)
    rng, n = stat_rng(40), 4000
    w = np.stack([whiten @ (sample_features(X, Z, rng, sigma_x=0.7, sigma_a=1.3) - mean) / 0.7
                  for _ in range(n)])
    location = n * np.sum(w.mean(axis=0) ** 2)
    assert stats.chi2.sf(location, w[0].size) > TEST_LEVEL, location
    scale = np.sum(w**2)
    assert min(stats.chi2.sf(scale, w.size), stats.chi2.cdf(scale, w.size)) > TEST_LEVEL / 2


def test_sample_features_of_no_features_is_empty():
    A = sample_features(X3, np.zeros((3, 0)), np.random.default_rng(0), sigma_x=0.6,
                        sigma_a=1.2)
    assert A.shape == (0, 2)


def test_entry_log_odds_is_the_difference_of_gaussian_log_likelihoods():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 3))
    Z = (rng.random((4, 3)) < 0.5).astype(np.int8)
    A = rng.normal(size=(3, 3))
    resid = X - Z @ A
    for n in range(4):
        for k in range(3):
            on, off = Z[n].copy(), Z[n].copy()
            on[k], off[k] = 1, 0
            direct = (np.sum((X[n] - off @ A) ** 2) - np.sum((X[n] - on @ A) ** 2)) / (2 * 0.6**2)
            assert likelihood_log_odds(resid, n, A, k, Z[n, k], 2 * 0.6**2) == \
                pytest.approx(direct, rel=1e-12, abs=1e-12)


def test_draw_entry_keeps_counts_and_residuals_in_step():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(5, 2))
    Z = (rng.random((5, 3)) < 0.5).astype(np.int8)
    A = rng.normal(size=(3, 2))
    resid, m = X - Z @ A, Z.sum(axis=0).astype(np.int64)
    for log_odds in (50.0, -50.0, 50.0):
        draw_entry(Z, m, resid, A, 2, 1, log_odds, rng)
        np.testing.assert_allclose(resid, X - Z @ A, atol=1e-12)
        np.testing.assert_array_equal(m, Z.sum(axis=0))
    assert Z[2, 1] == 1


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("s, alpha, beta, n_rows", [(0.02, 2.0, 1.0, 5), (1e-4, 0.7, 3.0, 12)])
def test_sticks_above_the_slice_are_the_poisson_process_of_unowned_features(s, alpha, beta,
                                                                           n_rows):
    """The kept sticks form a Poisson process of intensity
    ``alpha beta mu^-1 (1 - mu)^(n_rows + beta - 1)`` on ``(s, 1)``: their count is Poisson
    with the integral as mean, and the fraction above the intensity's median is one half.
    Two two-sided normal tests on 20,000 draws, Bonferroni at 1e-3 in all."""
    intensity = lambda mu: alpha * beta / mu * (1 - mu) ** (n_rows + beta - 1)  # noqa: E731
    mean = integrate.quad(intensity, s, 1, points=[10 * s], limit=200)[0]
    rng, n = stat_rng(41), 20_000
    draws = [slice_sampler.sticks_above(s, alpha, beta, n_rows, rng) for _ in range(n)]
    counts = np.array([d.size for d in draws])
    z = normal_two_sided_z(TEST_LEVEL, 2)
    assert abs(counts.mean() - mean) < z * math.sqrt(mean / n), (counts.mean(), mean)
    median = _intensity_median(intensity, s, mean)
    weights = np.concatenate(draws)
    assert abs(np.mean(weights > median) - 0.5) < z * math.sqrt(0.25 / weights.size)
    assert np.all(np.diff(draws[0]) < 0) and np.all(weights > s)


def _intensity_median(intensity, s, total):
    from scipy.optimize import brentq
    return brentq(lambda t: integrate.quad(intensity, s, t, limit=200)[0] - total / 2, s, 1)


@pytest.mark.parametrize("rate", [0.3, 4.0, 40.0])  # 40: numbers of births past the buffer
def test_compiled_births_make_the_reference_loops_draws(rate):
    """The compiled births (:func:`uncollapsed._gaussian_births_kernel`) and the generic
    loop with the Gaussian likelihood make the same draws from the same generator: the same
    ``Z``, ``A``, residuals and acceptance count, and the generator left in the same state,
    on states with and without singletons."""
    rng = np.random.default_rng(11)
    for case in range(40):
        N, D, K = rng.integers(1, 7), rng.integers(1, 5), rng.integers(0, 6)
        X = rng.normal(size=(N, D))
        Z = (rng.random((N, K)) < 0.3).astype(np.int8)
        A = rng.normal(size=(K, D))
        sigma_x, sigma_a = rng.uniform(0.3, 2.0, size=2)
        resid_ref, resid = X - Z @ A, X - Z @ A
        ref_rng, rng_c = np.random.default_rng(case), np.random.default_rng(case)
        Z_ref, A_ref, accepted_ref = uncollapsed._gaussian_births(Z, A, resid_ref, sigma_x,
                                                                  sigma_a, rate, ref_rng)
        keep, rows, images, accepted = uncollapsed._gaussian_births_kernel(
            Z, A, resid, rate, sigma_a, 2 * sigma_x**2, rng_c)
        Z_new, A_new = uncollapsed._apply_births(Z, A, keep, rows, images)
        np.testing.assert_array_equal(Z_new, Z_ref)
        np.testing.assert_array_equal(A_new, A_ref)
        np.testing.assert_allclose(resid, resid_ref, rtol=0, atol=1e-12)  # dot-product rounding
        assert accepted == accepted_ref and rng_c.random() == ref_rng.random()


def _log_iso(v, var, mean=0.0):
    """``log N(v; mean, var I)``."""
    return float(stats.norm(mean, math.sqrt(var)).logpdf(v).sum())


def test_data_birth_ratio_is_the_full_ratio_with_the_proposal_density():
    """The closed form of :func:`uncollapsed.data_birth_log_ratio` equals the ratio written
    out term by term (likelihoods, the new image's prior density times the rate, the
    proposal density of the image, the reverse death's ``1 / (k + 1)``) for images drawn
    from the proposal and far from it: the image cancels."""
    rng = np.random.default_rng(12)
    for case in range(20):
        D, k = int(rng.integers(1, 6)), int(rng.integers(0, 4))
        sigma_x, sigma_a, rate = *rng.uniform(0.3, 2.0, size=2), rng.uniform(0.01, 3.0)
        sx2, sa2 = sigma_x**2, sigma_a**2
        e = rng.normal(0.0, 1.5, size=D)
        c, tau2 = sa2 / (sa2 + sx2), sa2 * sx2 / (sa2 + sx2)
        closed = uncollapsed.data_birth_log_ratio(float(e @ e), k, math.log(rate), sigma_x,
                                                  sigma_a, D)
        for image in (rng.normal(c * e, math.sqrt(tau2)), rng.normal(0.0, 3.0, size=D)):
            full = (_log_iso(e - image, sx2) - _log_iso(e, sx2) + math.log(rate)
                    + _log_iso(image, sa2) - _log_iso(image, tau2, c * e) - math.log(k + 1))
            assert closed == pytest.approx(full, rel=1e-9, abs=1e-9), (case, closed, full)


def test_data_births_keep_residuals_and_change_one_singleton_per_row():
    """Per row the data-driven step adds one feature owned by that row alone, removes one
    of its singletons, or does nothing; the residuals follow; the same seed, the same
    draws."""
    rng = np.random.default_rng(13)
    for case in range(30):
        N, D, K = rng.integers(1, 7), rng.integers(1, 5), rng.integers(0, 6)
        X = rng.normal(size=(N, D))
        Z = (rng.random((N, K)) < 0.3).astype(np.int8)
        A = rng.normal(size=(K, D))
        rate = rng.uniform(0.05, 20.0)  # large rates: many births, small: many deaths
        outs = []
        for _ in range(2):
            resid = X - Z @ A
            keep, rows, images, accepted = uncollapsed._gaussian_data_births_kernel(
                Z, A, resid, rate, 0.7, 1.1, np.random.default_rng(case))
            outs.append((keep, rows, images, accepted, resid))
        for first, second in zip(outs[0], outs[1]):
            np.testing.assert_array_equal(first, second)
        keep, rows, images, accepted, resid = outs[0]
        Z_new, A_new = uncollapsed._apply_births(Z, A, keep, rows, images)
        np.testing.assert_allclose(resid, X - Z_new @ A_new, atol=1e-12)
        singletons = Z[:, Z.sum(axis=0) == 1].sum(axis=1)
        died = (Z[:, ~keep] == 1).sum(axis=1)
        born = np.bincount(rows, minlength=N)
        assert np.all(died + born <= 1) and np.all(died <= singletons)
        assert np.all(Z[:, ~keep].sum(axis=0) == 1)  # only singletons die
        assert accepted == died.sum() + born.sum()


def test_sticks_above_stops_with_an_error_instead_of_hanging(monkeypatch):
    monkeypatch.setattr(slice_sampler, "MAX_NEW_STICKS", 50)
    with pytest.raises(ValueError, match="more than 50 sticks"):
        slice_sampler.sticks_above(1e-300, 1e3, 1.0, 3, np.random.default_rng(0))


# --------------------------------------------------------------------------------------
# chains against exact enumeration
# --------------------------------------------------------------------------------------


# Four rows need a small alpha: the enumeration's tail beyond k_max = 7 features must stay
# below 1e-3 (tests/exactness.py), and at alpha 0.4 it is 2e-4. The second noise level,
# sigma_x = 2, is far from 1, where a birth ratio over 2 sigma_x in place of 2 sigma_x^2
# would go unseen.
EXACT_CASES = [
    pytest.param("uncollapsed", X3, ALPHA, 2.0, SIGMA_X, id="uncollapsed-3rows-beta2"),
    pytest.param("uncollapsed", X3, ALPHA, 1.0, 2.0, id="uncollapsed-3rows-sigma_x2"),
    pytest.param("uncollapsed", X4, 0.4, 1.0, SIGMA_X, id="uncollapsed-4rows"),
    pytest.param("slice", X3, ALPHA, 1.0, SIGMA_X, id="slice-3rows"),
    pytest.param("slice", X3, ALPHA, 0.4, SIGMA_X, id="slice-3rows-beta0.4"),
    pytest.param("slice", X4, 0.4, 1.0, SIGMA_X, id="slice-4rows"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("sampler, X, alpha, beta, sigma_x", EXACT_CASES)
@pytest.mark.slow  # 6-12 s each (make test only; see README)
def test_sampler_leaves_the_class_posterior_invariant(sampler, X, alpha, beta, sigma_x):
    """Class frequencies against enumeration: false alarm <= 1e-3 per case
    (tests/exactness.py)."""
    rng = stat_rng(42)
    assert_leaves_posterior_invariant(
        z_kernel(SAMPLERS[sampler], X, beta, rng, alpha, sigma_x), X, alpha, sigma_x, SIGMA_A,
        beta=beta, n_steps=40_000, what=sampler)


# The data-driven births on the cases of the prior's births (tail bound as above).
DATA_BIRTH_CASES = [
    pytest.param(X3, ALPHA, 2.0, SIGMA_X, id="3rows-beta2"),
    pytest.param(X3, ALPHA, 1.0, 2.0, id="3rows-sigma_x2"),
    pytest.param(X4, 0.4, 1.0, SIGMA_X, id="4rows"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("X, alpha, beta, sigma_x", DATA_BIRTH_CASES)
@pytest.mark.slow  # 6-12 s each (make test only; see README)
def test_data_births_leave_the_class_posterior_invariant(X, alpha, beta, sigma_x):
    """``births="data"``: class frequencies against enumeration, false alarm <= 1e-3 per
    case (tests/exactness.py)."""
    rng = stat_rng(44)
    assert_leaves_posterior_invariant(
        z_kernel(uncollapsed, X, beta, rng, alpha, sigma_x, births="data"), X, alpha, sigma_x,
        SIGMA_A, beta=beta, n_steps=40_000, what="uncollapsed, data births")


@njit(cache=False)
def _flip_entries_without_slice_density(Z, A, resid, m, log_mu, log1m_mu, two_sx2, rng):
    """The slice sampler's entry step with the planted bug: the ``1 / mu*`` term left out."""
    N, K = Z.shape
    for n in range(N):
        for k in range(K):
            log_odds = log_mu[k] - log1m_mu[k]
            log_odds += likelihood_log_odds(resid, n, A, k, Z[n, k], two_sx2)
            draw_entry(Z, m, resid, A, n, k, log_odds, rng)


def _plant(monkeypatch, bug):
    """One-line bugs, each in the sampler's own module namespace."""
    if bug == "weights without beta":
        monkeypatch.setattr(slice_sampler, "owned_weights", lambda Z, beta, rng: rng.beta(
            Z.sum(axis=0), Z.shape[0] - Z.sum(axis=0) + 1.0))
    elif bug == "thinning exponent N + beta":
        right = slice_sampler.sticks_above
        monkeypatch.setattr(slice_sampler, "sticks_above",
                            lambda s, alpha, beta, n, rng: right(s, alpha, beta, n + 1, rng))
    elif bug == "no slice density":
        monkeypatch.setattr(slice_sampler, "_flip_entries", _flip_entries_without_slice_density)
    elif bug == "birth rate with N rows":
        monkeypatch.setattr(uncollapsed, "new_dish_rate",
                            lambda alpha, beta, n: alpha * beta / (beta + n + 1))
    elif bug == "birth ratio over 2 sigma_x":
        right = uncollapsed._gaussian_births_kernel  # takes 2 sigma_x^2; given 2 sigma_x

        def births(Z, A, resid, rate, sigma_a, two_sx2, rng):
            return right(Z, A, resid, rate, sigma_a, 2 * math.sqrt(two_sx2 / 2), rng)
        monkeypatch.setattr(uncollapsed, "_gaussian_births_kernel", births)
    return uncollapsed if bug.startswith("birth") else slice_sampler


# The noise level of each planted bug's check: the ratio over 2 sigma_x differs from the
# right one by a factor sigma_x, so it is checked at 2 (measured: p-value 4e-8 at seed 43).
PLANTED_SIGMA_X = {"birth ratio over 2 sigma_x": 2.0}


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("bug", ["weights without beta", "thinning exponent N + beta",
                                 "no slice density", "birth rate with N rows",
                                 "birth ratio over 2 sigma_x"])
@pytest.mark.slow  # 6-8 s each (make test only; see README)
def test_exactness_check_catches_a_planted_bug(monkeypatch, bug):
    """Each bug moves some class probability by many Monte Carlo standard errors at
    ``beta = 0.4`` on three rows, so the check must raise."""
    module = _plant(monkeypatch, bug)
    sigma_x = PLANTED_SIGMA_X.get(bug, SIGMA_X)
    rng = stat_rng(43)
    with pytest.raises(AssertionError, match="does not leave the posterior invariant"):
        assert_leaves_posterior_invariant(z_kernel(module, X3, 0.4, rng, sigma_x=sigma_x), X3,
                                          ALPHA, sigma_x, SIGMA_A, beta=0.4, n_steps=40_000,
                                          what=bug)


def _data_births_with_ratio(log_ratio):
    """The compiled data-driven births with ``log_ratio`` in place of
    :func:`uncollapsed.data_birth_log_ratio`: the kernel's own code, recompiled with the
    planted ratio in its globals."""
    kernel = uncollapsed._gaussian_data_births_kernel.py_func
    planted = types.FunctionType(kernel.__code__, {**kernel.__globals__,
                                                   "data_birth_log_ratio": njit(log_ratio)})
    return njit(cache=False)(planted)


def _ratio_without_reverse_choice(resid_sq, n_singletons, log_rate, sigma_x, sigma_a, D):
    """The birth ratio with the reverse death's ``1 / (k + 1)`` forgotten."""
    return uncollapsed.data_birth_log_ratio(resid_sq, 0, log_rate, sigma_x, sigma_a, D)


def _ratio_counting_k_twice(resid_sq, n_singletons, log_rate, sigma_x, sigma_a, D):
    """The birth ratio with the Poisson pmf's ``1 / (k + 1)`` on top of the death's."""
    return (uncollapsed.data_birth_log_ratio(resid_sq, n_singletons, log_rate, sigma_x,
                                             sigma_a, D) - math.log(n_singletons + 1.0))


# Both bugs change the ratio of a birth to k + 1 >= 2 singletons (and its death) by a factor
# k + 1: seen only where a row holds two singletons or more, so they are checked at beta = 2,
# whose classes have more of them (measured at seed 45: p-values 1e-23 and 7e-11; at
# beta = 0.4 neither bug was caught).
DATA_BIRTH_BUGS = {"no reverse choice": _ratio_without_reverse_choice,
                   "k + 1 counted twice": _ratio_counting_k_twice}


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("bug", list(DATA_BIRTH_BUGS))
@pytest.mark.slow  # about 10 s each (make test only; see README)
def test_exactness_check_catches_a_planted_data_birth_bug(monkeypatch, bug):
    """A data-driven birth ratio with the reverse death's choice forgotten, or counted
    twice, fails the check against enumeration (three rows, ``beta = 2``)."""
    monkeypatch.setattr(uncollapsed, "_gaussian_data_births_kernel",
                        _data_births_with_ratio(DATA_BIRTH_BUGS[bug]))
    rng = stat_rng(45)
    with pytest.raises(AssertionError, match="does not leave the posterior invariant"):
        assert_leaves_posterior_invariant(
            z_kernel(uncollapsed, X3, 2.0, rng, births="data"), X3, ALPHA, SIGMA_X, SIGMA_A,
            beta=2.0, n_steps=40_000, what=bug)


# --------------------------------------------------------------------------------------
# the runners and the doors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("runner", [uncollapsed.run_uncollapsed, slice_sampler.run_slice])
def test_runner_traces_label_free_quantities_and_is_reproducible(runner):
    X = np.random.default_rng(3).normal(size=(10, 4))
    cpu_before = time.process_time()
    runs = [runner(X, 30, np.random.default_rng(7), alpha=1.5, sigma_x=0.7, sigma_a=1.1,
                   beta=0.8, burn=10, thin=4) for _ in range(2)]
    cpu_spent = time.process_time() - cpu_before
    np.testing.assert_array_equal(runs[0].trace["k_plus"], runs[1].trace["k_plus"])
    np.testing.assert_array_equal(runs[0].Z, runs[1].Z)
    run = runs[0]
    assert run.trace["k_plus"].shape == (30,) and list(run.sample_draws) == [10, 14, 18, 22, 26]
    assert run.trace["k_plus"].values[-1] == run.Z.shape[1] == run.A.shape[0]
    assert run.trace["log_likelihood"].values[-1] == pytest.approx(
        collapsed_loglik(X, run.Z, 0.7, 1.1), rel=1e-9)
    # CPU seconds from the run's own start: positive, and within the CPU time of the calls
    # (seconds from the process's start, or milliseconds, would exceed it)
    last = [r.sample_stats["seconds"].values[-1] for r in runs]
    assert min(last) > 0 and sum(last) <= cpu_spent, (last, cpu_spent)
    assert run.trace.attrs["beta"] == 0.8


def _blas_threads():
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


@pytest.mark.parametrize("runner, module", [(uncollapsed.run_uncollapsed, uncollapsed),
                                            (slice_sampler.run_slice, slice_sampler)])
def test_runner_sweeps_with_one_blas_thread(monkeypatch, runner, module):
    """Oversubscribed BLAS threads made these samplers 5-25 times slower on a busy machine
    (benchmarks/threads.py): every sweep runs with one thread, the counts come back after."""
    sweep, seen = module._sweep, []

    def watched(*args):
        seen.append(_blas_threads())
        return sweep(*args)
    monkeypatch.setattr(module, "_sweep", watched)
    before = _blas_threads()
    runner(X3, 3, np.random.default_rng(0), alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    assert seen and all(threads == [1] * len(before) for threads in seen), seen
    assert _blas_threads() == before


@pytest.mark.parametrize("sweep", [uncollapsed.uncollapsed_sweep, slice_sampler.slice_sweep])
def test_sweeps_drop_empty_columns_with_their_images(sweep):
    Z = np.array([[1, 0], [1, 0], [0, 0]])
    A = np.array([[0.5, 0.5], [1e3, 1e3]])  # the empty column's image is never used
    Z_new, A_new = sweep(X3, Z, A, np.random.default_rng(0), alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    assert Z_new.any(axis=0).all() and A_new.shape == (Z_new.shape[1], 2)
    assert np.abs(A_new).max() < 100


@pytest.mark.parametrize("sweep", [uncollapsed.uncollapsed_sweep, slice_sampler.slice_sweep])
@pytest.mark.parametrize("A, match", [(np.ones((2, 2)), "A must have shape"),
                                      (np.ones((1, 3)), "A must have shape"),
                                      (np.full((1, 2), np.nan), "A"),
                                      (np.full((1, 2), 1e200), "at most")])
def test_sweeps_refuse_images_that_do_not_fit(sweep, A, match):
    with pytest.raises(ValueError, match=match):
        sweep(X3, np.ones((3, 1)), A, np.random.default_rng(0), alpha=1.0, sigma_x=0.5,
              sigma_a=1.0)


@pytest.mark.parametrize("births", ["posterior", "Data", None, 1])
def test_uncollapsed_refuses_an_unknown_birth_rule(births):
    with pytest.raises(ValueError, match="births must be one of 'prior', 'data'"):
        uncollapsed.uncollapsed_sweep(X3, np.ones((3, 1)), [[0.5, 0.5]], np.random.default_rng(0),
                                      alpha=1.0, sigma_x=0.5, sigma_a=1.0, births=births)
    with pytest.raises(ValueError, match="births must be one of"):
        uncollapsed.run_uncollapsed(X3, 2, np.random.default_rng(0), alpha=1.0, sigma_x=0.5,
                                    sigma_a=1.0, births=births)


def test_data_births_runner_is_reproducible_and_labels_its_sampler():
    X = np.random.default_rng(3).normal(size=(10, 4))
    runs = [uncollapsed.run_uncollapsed(X, 30, np.random.default_rng(7), alpha=1.5,
                                        sigma_x=0.7, sigma_a=1.1, births="data")
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].trace["k_plus"], runs[1].trace["k_plus"])
    np.testing.assert_array_equal(runs[0].A, runs[1].A)
    assert "from the data" in runs[0].trace.attrs["sampler"]
    assert runs[0].sample_stats["births_accepted"].values.sum() > 0
