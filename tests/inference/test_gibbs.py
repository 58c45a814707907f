"""Tests of ibp_lab.inference.gibbs: the collapsed Gibbs sampler against exact enumeration.

Statistical tests (marked ``statistical``; seeds from ``tests/seeds.py``, so that
``tools/fresh_seeds.py`` can rerun them on fresh seeds) state their false-alarm
rate, the probability that they fail a correct sampler, in a comment. Frequencies
of a chain are compared with exact probabilities by exact binomial tails with an
effective sample size (``tests/stats_checks.py``: the smallest ArviZ ESS of the
well-visited indicators, and for rare bins never more effective successes than
separate visits), Bonferroni over the bins, so each test fails a correct sampler
with probability <= 1e-3. The old 4.5-sigma normal checks failed whenever a bin
with ESS p << 1 was visited once (0.3-4% per case). Means use the CLT with the
trace's ESS at 4.5 standard errors (6.8e-6 per mean).
"""

import math

import arviz as az
import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from ibp_lab import _kernel
from ibp_lab.inference import exact, gibbs
from ibp_lab.inference.chains import (AlphaUpdate, GibbsSweep, ScaleUpdate, run_chain,
                                      run_chains)
from ibp_lab._hyper import MIN_NOISE_RATIO, stable_harmonic
from ibp_lab.models.linear_gaussian import collapsed_loglik
from ibp_lab.models.prior import expected_num_features, log_prior
from tests.exactness import assert_leaves_posterior_invariant
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, assert_chain_frequencies, chain_ess

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
# The DESIGN's 3 x 2 case: N(0, 2^2) data, alpha = 1.3, sigma_X = 0.6, sigma_A = 1.2.
X_DESIGN = np.random.default_rng(1).normal(0.0, 2.0, size=(3, 2))
N_SIGMA = 4.5
#: two-sided normal tail beyond N_SIGMA: the false-alarm rate of one CLT check of a mean
MEAN_LEVEL = math.erfc(N_SIGMA / math.sqrt(2))


def ess_mean(values: np.ndarray) -> float:
    """Effective sample size for the mean of a single chain (NaN if constant)."""
    values = np.asarray(values, dtype=float)
    if values.min() == values.max():
        return float("nan")
    return float(az.ess(values[None, :], method="mean"))


def tv_noise_threshold(p_exact, ess, rng, quantile=0.9999, n_draws=200_000):
    """A 99.99% quantile of the total-variation distance that Monte Carlo noise alone gives.

    The error of a histogram of ESS effective draws is approximately
    Normal(0, (diag(p) - p p^T) / ESS) (the multinomial covariance); we simulate it
    with the smallest per-bin ESS among the bins that carry mass (conservative)
    and take the quantile of 0.5 * sum |error|. ``rng`` only evaluates this
    integral; it is not the test's randomness.
    """
    ess_min = float(np.min(ess[p_exact > 0.01]))
    g = rng.standard_normal((n_draws, len(p_exact))) * np.sqrt(p_exact)
    errors = (g - np.outer(g.sum(axis=1), p_exact)) / math.sqrt(ess_min)
    return float(np.quantile(0.5 * np.abs(errors).sum(axis=1), quantile))


def indicator_ess(labels: np.ndarray, n_bins: int) -> np.ndarray:
    """ESS of each indicator 1{label = k}; a bin never (or always) visited gets the worst one."""
    ess = np.array([ess_mean(labels == k) for k in range(n_bins)])
    return np.where(np.isnan(ess), np.nanmin(ess), ess)


# --------------------------------------------------------------------------------------
# the compiled kernel is the readable algorithm
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("random_scan", [True, False])
@pytest.mark.parametrize("beta", [1.0, 2.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_sweep_matches_the_reference_sweep(random_scan, beta, seed):
    """Same random numbers, same chain: the rank-one algebra reproduces a from-scratch solve."""
    rng_data = np.random.default_rng(seed)
    X = rng_data.normal(size=(12, 4))
    Z_fast = Z_slow = (rng_data.random((12, 5)) < 0.4).astype(np.int8)
    rng_fast, rng_slow = np.random.default_rng(100 + seed), np.random.default_rng(100 + seed)
    for _ in range(25):
        Z_fast, _, _ = _kernel.sweeps(X, Z_fast, 2.0, 0.4, 1.0, beta, 1, rng_fast,
                                     random_scan=random_scan)
        Z_slow = gibbs._sweep_numpy(X, Z_slow, 2.0, 0.4, 1.0, rng_slow, beta=beta,
                                              random_scan=random_scan)
        np.testing.assert_array_equal(Z_fast, Z_slow)


def test_compiled_sweep_matches_the_reference_on_digits():
    """The same check at a realistic size: 60 centred digits, 48 pixels, several features."""
    from ibp_lab.datasets import load_digit_sets

    X = load_digit_sets().train[:60]
    rng = np.random.default_rng(0)
    Z = np.ones((60, 1))
    for _ in range(30):  # warm up to the working number of features
        Z = gibbs.gibbs_sweep(X, Z, 2.0, 0.25, 0.3, rng)
    assert Z.shape[1] >= 4
    rng_fast, rng_slow = np.random.default_rng(7), np.random.default_rng(7)
    Z_fast = Z_slow = Z
    for _ in range(3):
        Z_fast = gibbs.gibbs_sweep(X, Z_fast, 2.0, 0.25, 0.3, rng_fast)
        Z_slow = gibbs._sweep_numpy(X, Z_slow, 2.0, 0.25, 0.3, rng_slow)
        np.testing.assert_array_equal(Z_fast, Z_slow)


def nearly_dependent_start(rng, n_rows, n_extra):
    """A Z whose row 0 alone tells features 0 and 1 apart, plus random other features.

    Rows 1.. own both features or neither, so taking row 0 out leaves two identical
    columns: M_-0 = Z_-0^T Z_-0 + r I has an eigenvalue r along (1, -1), and the rank-one
    downdate's denominator 1 - z M^-1 z is about 2 r. (Row 0 owns no singleton: with n
    of them the kernel divides by 1 - rho z B z, rho = r / (n + r), which stays near 1.)
    """
    pair = (rng.random(n_rows) < 0.6).astype(np.int8)
    pair[0], pair[1] = 1, 1  # at least one other owner, so both stay shared features
    extra = (rng.random((n_rows, n_extra)) < 0.4).astype(np.int8)
    # no singletons in row 0: each would multiply the denominator's deficit by rho ~ r
    extra[0] &= extra[1:].any(axis=0)
    Z = np.column_stack([pair, pair, extra])
    Z[0, 1] = 0
    return Z[:, Z.any(axis=0)]


def downdate_denominator(Z, r):
    """1 - rho z B z for row 0, B the shared block of M^-1 (the kernel's test quantity)."""
    Z = np.asarray(Z, float)
    Minv = np.linalg.inv(Z.T @ Z + r * np.eye(Z.shape[1]))
    shared = Z[1:].sum(axis=0) > 0
    z = Z[0] * shared
    rho = r / ((Z[0] * ~shared).sum() + r)
    return 1.0 - rho * z @ Minv @ z


@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_row_update_from_scratch_keeps_m_inverse_and_means_exact():
    """The from-scratch branch of _update_row (denominator < 1e-3) leaves exact M^-1 and Abar.

    Called directly on row 0 of a start where the rank-one downdate would divide by
    about 2 r = 2e-4: afterwards M^-1 and Abar = M^-1 Z^T X must be those of the new Z,
    computed here by NumPy from scratch. A wrong P z or residual in that branch spoils
    the put-back (step 5) and so M^-1.
    """
    sigma_x, sigma_a = 0.01, 1.0
    r = (sigma_x / sigma_a) ** 2
    rng = np.random.default_rng(40)
    for _ in range(20):
        Z0 = nearly_dependent_start(rng, 5, 2)
        assert downdate_denominator(Z0, r) < _kernel.MIN_DOWNDATE_DENOMINATOR
        N, K = Z0.shape
        X = Z0 @ rng.normal(size=(K, 2)) + rng.normal(0, sigma_x, size=(N, 2))
        Zb, K = _kernel.to_buffer(Z0)
        cap = Zb.shape[1]
        Minv, Abar, m = np.zeros((cap, cap)), np.zeros((cap, 2)), np.zeros(cap)
        _kernel.refresh(X, Zb, K, r, Minv, Abar, m)
        log_odds_prior = np.array([0.0] + [math.log(c / (N - c)) for c in range(1, N)])
        Zb, K, Minv, Abar, m, *_ = _kernel.update_row(
            0, X, Zb, K, Minv, Abar, m, np.zeros(cap), np.zeros(cap), np.zeros(cap),
            np.zeros(cap, np.int64), np.zeros(2), np.zeros(2), rng, sigma_x**2, sigma_a**2, r,
            log_odds_prior, 1.0 / N, True, np.empty(64))
        Z = Zb[:, :K].astype(float)
        expected = np.linalg.inv(Z.T @ Z + r * np.eye(K))
        np.testing.assert_allclose(Minv[:K, :K], expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(Abar[:K], expected @ Z.T @ X, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(m[:K], Z.sum(axis=0))


def test_compiled_sweep_matches_the_reference_when_the_downdate_is_recomputed():
    """Same random numbers, same chain, from 300 starts that take the from-scratch branch.

    One data dimension and data of the noise's size keep the flip probabilities away
    from 0 and 1 (the nearly dependent pair inflates z P z^T by about 1 / (2 r), a
    factor of only e^3.5 in the likelihood when D = 1), so a wrong quadratic form q or
    residual in the branch changes the draws.
    """
    sigma_x, sigma_a = 0.02, 1.0
    r = (sigma_x / sigma_a) ** 2
    rng = np.random.default_rng(41)
    n_taken = n_changed = 0
    for start in range(300):
        Z0 = nearly_dependent_start(rng, 4, 1)
        n_taken += downdate_denominator(Z0, r) < _kernel.MIN_DOWNDATE_DENOMINATOR
        X = rng.normal(0, 2 * sigma_x, size=(4, 1))
        rng_fast, rng_slow = np.random.default_rng(start), np.random.default_rng(start)
        Z_fast, _, _ = _kernel.sweeps(X, Z0, 1.5, sigma_x, sigma_a, 1.0, 1, rng_fast)
        Z_slow = gibbs._sweep_numpy(X, Z0, 1.5, sigma_x, sigma_a, rng_slow)
        np.testing.assert_array_equal(Z_fast, Z_slow, err_msg=f"start {start}")
        n_changed += not np.array_equal(Z_fast[0, :2], Z0[0, :2])
    # the branch is taken at every start, and row 0's pair is redrawn to a new value often
    assert n_taken == 300 and n_changed > 30


# --------------------------------------------------------------------------------------
# basic behaviour
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Z0", [np.ones((3, 1)), np.zeros((3, 0)), np.zeros((3, 4)),
                                np.eye(3), np.ones((3, 12))])
def test_sweep_returns_int8_without_empty_columns(Z0):
    Z_in = np.array(Z0)
    Z = gibbs.gibbs_sweep(X3, Z_in, 1.3, 0.6, 1.2, np.random.default_rng(0), beta=1.5)
    assert Z.dtype == np.int8 and Z.shape[0] == 3
    assert Z.shape[1] == 0 or Z.any(axis=0).all()
    np.testing.assert_array_equal(Z_in, Z0)  # the input is not modified


def test_sweep_on_a_single_row_only_has_singletons():
    Z = gibbs.gibbs_sweep([[0.3, 2.0]], np.ones((1, 2)), 1.0, 0.5, 1.0, np.random.default_rng(1))
    assert Z.shape[0] == 1 and (Z == 1).all()


@pytest.mark.statistical(rate=1.4e-5)
def test_many_new_dishes_at_once():
    """One row and a large alpha: about 100 singletons per draw, each drawn exactly.

    With N = 1 every sweep draws K+ afresh from its conditional, so the draws are
    independent and the standard error of the mean is sd / sqrt(n). False alarm:
    two CLT checks at 4.5 SE, 2 * 6.8e-6 = 1.4e-5 (n = 5000 draws of a near-Poisson(100)
    count: the normal approximation is accurate far into the tail).
    """
    X = np.array([[0.5, -0.2]])
    p = exact.k_plus_posterior(X, 100.0, 1.0, 0.1, k_max=300)
    # 5,000 sweeps: each recomputes M^-1 for ~100 features from scratch, O(K^3)
    k = gibbs.k_plus_trace(X, 5_000, stat_rng(6), alpha=100.0, sigma_x=1.0,
                           sigma_a=0.1)
    support = np.arange(301)
    mean = p @ support
    var = p @ (support - mean) ** 2
    fourth = p @ (support - mean) ** 4
    assert abs(k.mean() - mean) < N_SIGMA * math.sqrt(var / len(k))
    # the sample variance has variance (mu_4 - sigma^4) / n (delta method, large n)
    assert abs(k.var() - var) < N_SIGMA * math.sqrt((fourth - var**2) / len(k))
    assert k.max() > 64  # the sampler's buffer for the singleton weights had to grow


def test_same_seed_same_chain():
    def sweeps(seed):
        rng, Z, out = np.random.default_rng(seed), np.ones((3, 1)), []
        for _ in range(50):
            Z = gibbs.gibbs_sweep(X3, Z, 1.3, 0.6, 1.2, rng)
            out.append(Z)
        return out

    first, second = sweeps(4), sweeps(4)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not all(np.array_equal(a, b) for a, b in zip(first, sweeps(5)))
    k1 = gibbs.k_plus_trace(X3, 1000, np.random.default_rng(3), alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    k2 = gibbs.k_plus_trace(X3, 1000, np.random.default_rng(3), alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    np.testing.assert_array_equal(k1, k2)
    c1 = run_chain(X3, 30, np.random.default_rng(2), burn=5)
    c2 = run_chain(X3, 30, np.random.default_rng(2), burn=5)
    assert c1.trace.identical(c2.trace)
    assert all(np.array_equal(a, b) for a, b in zip(c1.samples, c2.samples))


# --------------------------------------------------------------------------------------
# against exact enumeration, hyperparameters fixed
# --------------------------------------------------------------------------------------

FIXED_CASES = [
    # X, alpha, sigma_x, sigma_a, beta, k_max
    pytest.param(X3, 1.3, 0.6, 1.2, 1.0, 12, id="one-parameter"),
    pytest.param(X3, 0.7, 0.4, 2.0, 3.0, 12, id="beta=3"),
    pytest.param(np.random.default_rng(5).normal(size=(3, 2)), 2.0, 1.0, 0.5, 0.5, 14,
                 id="beta=0.5 many weak features"),
    pytest.param(np.array([[0.9, -1.4, 0.3], [1.1, 0.2, -0.5]]), 1.5, 0.5, 1.0, 1.5, 20,
                 id="two rows"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("X, alpha, sigma_x, sigma_a, beta, k_max", FIXED_CASES)
def test_k_plus_distribution_matches_enumeration(X, alpha, sigma_x, sigma_a, beta, k_max):
    """Histogram of K+ against enumeration; false alarm <= 1e-3 per case.

    k_max + 2 bins (the last collects K+ > k_max), each two-sided at 1e-3 / (k_max + 2)
    by an exact binomial tail with the chain's ESS (Bonferroni). The exact
    probabilities are known up to the truncated tail: bin k lies in
    [p_k (1 - tail), p_k] and the last bin in [0, tail].
    """
    p_exact, tail = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max,
                                           return_tail=True)
    assert tail < 1e-3
    k = gibbs.k_plus_trace(X, 150_000, stat_rng(11), alpha=alpha, sigma_x=sigma_x,
                           sigma_a=sigma_a, beta=beta, Z0=np.ones((len(X), 6)))
    labels = np.minimum(k[100:], k_max + 1)  # 100 sweeps forget the start (6 features)
    assert_chain_frequencies(labels, np.append(p_exact * (1 - tail), 0.0),
                             np.append(p_exact, tail), what="K+ bins")


def class_labels(types, post, classes):
    """Each state's position in ``classes`` (class indices of ``post``), len(classes) if other."""
    index = {tuple(row): c for c, row in enumerate(post.counts)}
    visited, labels = np.unique(types, axis=0, return_inverse=True)
    position = np.full(len(post.probabilities) + 1, len(classes))
    position[classes] = np.arange(len(classes))
    exact_index = np.array([index.get(tuple(row), -1) for row in visited])
    return position[exact_index][labels.ravel()]


@pytest.mark.statistical(rate=1e-3)
def test_class_distribution_matches_enumeration():
    """Not only K+: the probability of each class (multiset of columns) is right too.

    Every class above 0.3% (about 40) and one bin for all other classes, each
    two-sided at 1e-3 / (number of bins) (exact binomial tail, chain ESS,
    Bonferroni): false alarm <= 1e-3.
    """
    alpha, sigma_x, sigma_a, beta = 1.1, 0.5, 1.3, 2.0
    post = exact.class_posterior(X3, alpha, sigma_x, sigma_a, beta=beta, k_max=12)
    tail = post.tail_bound
    assert tail < 1e-4
    _, types = gibbs.k_plus_trace(X3, 200_000, stat_rng(21), alpha=alpha,
                                  sigma_x=sigma_x, sigma_a=sigma_a, beta=beta, return_types=True)
    top = np.flatnonzero(post.probabilities > 0.003)
    assert len(top) > 20
    labels = class_labels(types, post, top)
    p = np.append(post.probabilities[top], 1 - post.probabilities[top].sum())
    assert_chain_frequencies(labels, p * (1 - tail), p + np.append(np.zeros(len(top)), tail),
                             what="classes")


# The shared exactness check (tests/exactness.py), on both sweeps and three settings.
INVARIANCE_CASES = [
    # X, alpha, sigma_x, sigma_a, beta
    pytest.param(X3, 1.3, 0.6, 1.2, 1.0, id="one-parameter"),
    pytest.param(X3, 1.1, 0.5, 1.3, 2.0, id="beta=2"),
    pytest.param(np.array([[0.9, -1.4], [1.1, 0.2], [0.1, 0.4], [-0.3, 1.0]]), 0.8, 0.7, 1.0,
                 0.4, id="four rows beta=0.4"),
]
SWEEPS = {"gibbs_sweep": gibbs.gibbs_sweep, "gibbs_sweep_numpy": gibbs.gibbs_sweep_numpy}


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("sweep", SWEEPS)
@pytest.mark.parametrize("X, alpha, sigma_x, sigma_a, beta", INVARIANCE_CASES)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_sweep_leaves_the_class_posterior_invariant(sweep, X, alpha, sigma_x, sigma_a, beta):
    """Both public sweeps against exact enumeration; false alarm <= 1e-3 per case.

    Every class above 0.3% and one bin for the rest, exact binomial tails with the
    chain's ESS, Bonferroni over the bins (see tests/exactness.py).
    """
    rng = stat_rng(31)
    n_steps = 40_000 if sweep == "gibbs_sweep" else 8_000  # the plain sweep is slower
    assert_leaves_posterior_invariant(
        lambda Z: SWEEPS[sweep](X, Z, alpha, sigma_x, sigma_a, rng, beta=beta),
        X, alpha, sigma_x, sigma_a, beta=beta, n_steps=n_steps, what=sweep)


# The three-parameter IBP (issue 31): the discounted sweep against the enumerated
# three-parameter class law, with beta != 1, on three and four rows.
DISCOUNT_CASES = [
    # X, alpha, sigma_x, sigma_a, beta, discount
    pytest.param(X3, 1.1, 0.5, 1.3, 1.7, 0.35, id="beta=1.7 d=0.35"),
    pytest.param(np.array([[0.9, -1.4], [1.1, 0.2], [0.1, 0.4], [-0.3, 1.0]]), 0.5, 0.7, 1.0,
                 0.4, 0.6, id="four rows beta=0.4 d=0.6"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("X, alpha, sigma_x, sigma_a, beta, discount", DISCOUNT_CASES)
@pytest.mark.slow  # measured 11 s in all (make test only; see README)
def test_discounted_sweep_leaves_the_three_parameter_posterior_invariant(
        X, alpha, sigma_x, sigma_a, beta, discount):
    """The sweep with ``discount`` against enumeration of the three-parameter class law.

    Every class above 0.3% and one bin for the rest, exact binomial tails with the
    chain's ESS, Bonferroni over the bins: false alarm <= 1e-3 per case
    (tests/exactness.py).
    """
    rng = stat_rng(33)
    assert_leaves_posterior_invariant(
        lambda Z: gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng, beta=beta,
                                    discount=discount),
        X, alpha, sigma_x, sigma_a, beta=beta, discount=discount, n_steps=40_000,
        what="discounted gibbs_sweep")


@pytest.mark.statistical(rate=1e-3)
def test_exactness_check_fails_a_sweep_that_ignores_the_discount():
    """The check has the power to see the discount: the two-parameter sweep (d = 0) run
    against the d = 0.35 posterior must fail (d moves the classes' probabilities by
    20-50% of themselves, many Monte Carlo standard errors at an ESS near 15,000)."""
    alpha, sigma_x, sigma_a, beta, discount = 1.1, 0.5, 1.3, 1.7, 0.35
    rng = stat_rng(34)
    with pytest.raises(AssertionError, match="does not leave the posterior invariant"):
        assert_leaves_posterior_invariant(
            lambda Z: gibbs.gibbs_sweep(X3, Z, alpha, sigma_x, sigma_a, rng, beta=beta),
            X3, alpha, sigma_x, sigma_a, beta=beta, discount=discount, n_steps=40_000,
            what="two-parameter sweep")


def test_zero_discount_is_the_two_parameter_sweep_draw_for_draw():
    """``discount=0`` runs the sweep the book's chains have always run (same draws)."""
    X = np.random.default_rng(4).normal(size=(12, 3))
    states = []
    for options in ({}, {"discount": 0.0}):
        rng, Z = np.random.default_rng(9), np.ones((12, 1))
        for _ in range(30):
            Z = gibbs.gibbs_sweep(X, Z, 1.4, 0.6, 1.0, rng, beta=0.7, **options)
        states.append(Z)
    assert np.array_equal(*states)


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("wrong", ["beta", "alpha", "sigma_a"])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_exactness_check_fails_a_sweep_with_a_wrong_parameter(wrong):
    """The shared check can fail: a sweep targeting a slightly different posterior.

    beta 2 -> 1.4, alpha 1.1 -> 1.4 or sigma_a 1.3 -> 1.0 moves class probabilities by
    15-40% of themselves; with 40,000 sweeps (ESS about 15,000) that is many Monte
    Carlo standard errors, so the check must raise.
    """
    alpha, sigma_x, sigma_a, beta = 1.1, 0.5, 1.3, 2.0
    used = {"alpha": alpha, "sigma_a": sigma_a, "beta": beta}
    used[wrong] = {"beta": 1.4, "alpha": 1.4, "sigma_a": 1.0}[wrong]
    rng = stat_rng(32)
    with pytest.raises(AssertionError, match="does not leave the posterior invariant"):
        assert_leaves_posterior_invariant(
            lambda Z: gibbs.gibbs_sweep(X3, Z, used["alpha"], sigma_x, used["sigma_a"], rng,
                                        beta=used["beta"]),
            X3, alpha, sigma_x, sigma_a, beta=beta, n_steps=40_000, what="wrong sweep")


def test_plain_sweep_checks_its_arguments_like_the_compiled_one():
    for bad, match in [(dict(alpha=-1.0), "alpha"), (dict(beta=0.0), "beta"),
                       (dict(sigma_x=np.nan), "sigma_x")]:
        args = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0) | bad
        for sweep in SWEEPS.values():
            with pytest.raises(ValueError, match=match):
                sweep(X3, np.ones((3, 1)), args["alpha"], args["sigma_x"], args["sigma_a"],
                      np.random.default_rng(0), beta=args["beta"])
    with pytest.raises(TypeError, match="rng"):
        gibbs.gibbs_sweep_numpy(X3, np.ones((3, 1)), 1.0, 0.5, 1.0, 0)


def k_plus_tv_test(X, n_sweeps, scan_order, alpha=1.3, sigma_x=0.6, sigma_a=1.2, k_max=14):
    p_exact, tail = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, k_max=k_max,
                                           return_tail=True)
    k = gibbs.k_plus_trace(X, n_sweeps, stat_rng(2024), alpha=alpha,
                           sigma_x=sigma_x, sigma_a=sigma_a, scan_order=scan_order)
    labels = np.minimum(k, k_max)
    freq = np.bincount(labels, minlength=k_max + 1) / len(labels)
    ess = indicator_ess(labels, k_max + 1)
    tv = 0.5 * np.abs(freq - p_exact).sum() + tail
    threshold = tv_noise_threshold(p_exact, ess, np.random.default_rng(0))
    return tv, threshold, tail


@pytest.mark.statistical(rate=1e-4)
@pytest.mark.slow
def test_long_chain_resolves_a_bias_of_0005():
    """DESIGN: 600,000 sweeps on the 3 x 2 case, total variation against the exact K+ posterior.

    The threshold is the 99.99% quantile of the distance that Monte Carlo noise
    alone produces (tv_noise_threshold); it must itself be below 0.005, so that a
    bias of that size would be detected. The seed notebook's fixed scan order,
    run the same way, must fail the same test: the test has the power it claims.

    False alarm: 1e-4 for the correct sampler (the quantile, under the normal
    approximation of the multinomial error at the smallest ESS of the bins with
    mass; the bins it approximates badly hold < 1% of the mass). Measured on
    10 fresh seeds: TV 0.0012 (sd 0.0006) against a threshold of 0.0034. The power
    check misses only if the fixed order's TV, 0.0114 (sd 0.0005 over the same 10
    seeds), falls to its threshold, 0.0034: 16 standard deviations away.
    """
    tv, threshold, tail = k_plus_tv_test(X_DESIGN, 600_000, "random")
    assert tail < 1e-4
    assert threshold < 0.005, f"not enough sweeps to resolve 0.005: threshold {threshold:.4f}"
    assert tv < threshold, f"TV {tv:.4f} exceeds the Monte Carlo threshold {threshold:.4f}"
    tv_fixed, threshold_fixed, _ = k_plus_tv_test(X_DESIGN, 600_000, "fixed")
    assert tv_fixed > threshold_fixed, (
        f"the biased fixed scan order went undetected: TV {tv_fixed:.4f}, threshold "
        f"{threshold_fixed:.4f}")


# --------------------------------------------------------------------------------------
# hyperparameter updates against exact marginals
# --------------------------------------------------------------------------------------


def exact_marginals(X, *, scale, alpha=None, alpha_prior=None, sigma_x=None, sigma_a=None,
                    beta=1.0, k_max=10, n_grid=200):
    """Exact posterior of K+, and E[alpha], E[scale], with alpha and one scale integrated out.

    alpha ~ Gamma(a, b) integrates analytically against P([Z] | alpha), which is
    alpha^K+ exp(-alpha H) times alpha-free terms:
    int alpha^K e^(-alpha H) Gamma(alpha; a, b) d alpha
        = b^a Gamma(a + K) / (Gamma(a) (b + H)^(a + K)).
    The scale (HalfNormal(1) prior) is integrated on a grid in log(scale),
    trapezoid rule, from 1e-3 to 6 (the prior mass outside is below 1e-3 and the
    likelihood is bounded), cut where sigma_x / sigma_a would fall below the samplers'
    MIN_NOISE_RATIO.
    """
    harmonic = expected_num_features(1.0, len(X), beta=beta)  # E[K+] per unit of alpha
    # The samplers (and exact enumeration) refuse sigma_x / sigma_a < MIN_NOISE_RATIO, so the
    # chain's target is the posterior on that domain: integrate over the same one.
    low, high = 1e-3, 6.0
    if scale == "sigma_x":
        low = max(low, MIN_NOISE_RATIO * sigma_a * (1 + 1e-9))  # clear of rounding at the edge
    else:
        high = min(high, sigma_x / MIN_NOISE_RATIO * (1 - 1e-9))
    log_grid = np.linspace(np.log(low), np.log(high), n_grid)
    trapezoid = np.full(n_grid, 1.0)
    trapezoid[[0, -1]] = 0.5
    log_mass = np.empty((n_grid, k_max + 1))
    for g, log_s in enumerate(log_grid):
        s = math.exp(log_s)
        sx, sa = (s, sigma_a) if scale == "sigma_x" else (sigma_x, s)
        post = exact.class_posterior(X, 1.0 if alpha_prior else alpha, sx, sa, beta=beta,
                                     k_max=k_max)
        lw = post.log_weights
        if alpha_prior:
            a, b = alpha_prior
            K = post.k_plus
            lw = (lw + harmonic + a * np.log(b) + gammaln(a + K) - gammaln(a)
                  - (a + K) * np.log(b + harmonic))
        for k in range(k_max + 1):
            log_mass[g, k] = logsumexp(lw[post.k_plus == k])
        # HalfNormal(1) density times the Jacobian d scale = scale d log(scale)
        log_mass[g] += 0.5 * np.log(2 / np.pi) - 0.5 * s**2 + log_s + np.log(trapezoid[g])
    total = logsumexp(log_mass)
    p_k = np.exp(logsumexp(log_mass, axis=0) - total)
    mean_scale = float(np.sum(np.exp(logsumexp(log_mass, axis=1) - total) * np.exp(log_grid)))
    mean_alpha = None
    if alpha_prior:
        a, b = alpha_prior
        mean_alpha = float(np.sum(p_k * (a + np.arange(k_max + 1)) / (b + harmonic)))
    return p_k, mean_alpha, mean_scale


def assert_mean_matches(trace, expected):
    """CLT with the trace's ESS, 4.5 standard errors: false alarm MEAN_LEVEL = 6.8e-6."""
    values = np.asarray(trace)
    se = values.std() / math.sqrt(ess_mean(values))
    assert abs(values.mean() - expected) < N_SIGMA * se, (
        f"chain mean {values.mean():.4f} vs exact {expected:.4f} (standard error {se:.4f})")


def assert_k_plus_matches(k_plus, p_k, n_means):
    """K+ in 0..10 and a bin for K+ > 10 whose posterior probability is below 1e-3 here.

    Bonferroni: the bins share TEST_LEVEL - n_means * MEAN_LEVEL, so that the test with
    its mean checks fails a correct chain with probability <= 1e-3.
    """
    labels = np.minimum(np.asarray(k_plus), 11)
    assert_chain_frequencies(labels, np.append(p_k * (1 - 1e-3), 0.0), np.append(p_k, 1e-3),
                             level=TEST_LEVEL - n_means * MEAN_LEVEL, what="K+ bins")


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_alpha_and_sigma_a_updates_match_exact_marginals():
    """Conjugate alpha update (beta = 2, so H is not the harmonic number) and the sigma_a walk:
    the moves AlphaUpdate and ScaleUpdate("sigma_a") after a Gibbs sweep.

    False alarm <= 1e-3: 12 K+ bins (exact binomial tails, chain ESS) and two means
    (CLT, 6.8e-6 each), Bonferroni.
    """
    options = dict(sigma_x=0.6, beta=2.0)
    p_k, mean_alpha, mean_sigma_a = exact_marginals(X3, scale="sigma_a", alpha_prior=(2.0, 4.0),
                                                    **options)
    chain = run_chain(X3, 60_000, stat_rng(8), sigma_a=1.0, burn=2_000, **options, moves=[
        GibbsSweep(), AlphaUpdate(prior=(2.0, 4.0)), ScaleUpdate("sigma_a")])
    post = chain.posterior_trace
    assert_k_plus_matches(post.k_plus.values, p_k, n_means=2)
    assert_mean_matches(post.alpha, mean_alpha)
    assert_mean_matches(post.sigma_a, mean_sigma_a)
    assert 0.2 < chain.acceptance["sigma_a"] < 0.7
    assert (post.sigma_x == 0.6).all()


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured about 10 s (make test only; see README)
def test_alpha_update_under_a_discount_matches_the_exact_marginal():
    """Issue 31: the chain runner's conjugate alpha update with d = 0.4 fixed, where
    H is the three-parameter sum H_N(beta, d). alpha integrates out analytically as in
    exact_marginals, with that H. False alarm <= 1e-3: 12 K+ bins and one mean."""
    a, b, beta, d, sigma_x, sigma_a = 2.0, 4.0, 1.5, 0.4, 0.6, 1.2
    post = exact.class_posterior(X3, 1.0, sigma_x, sigma_a, beta=beta, k_max=10, discount=d)
    H = stable_harmonic(3, beta, d)
    K = post.k_plus
    lw = post.log_weights + H + gammaln(a + K) - (a + K) * np.log(b + H)
    w = np.exp(lw - logsumexp(lw))
    p_k = np.bincount(K, weights=w, minlength=11)
    chain = run_chain(X3, 40_000, stat_rng(9), alpha=1.0, sigma_x=sigma_x, sigma_a=sigma_a,
                      beta=beta, discount=d, burn=1_000,
                      moves=[GibbsSweep(), AlphaUpdate(prior=(a, b))])
    trace = chain.posterior_trace
    assert (trace.discount == d).all()
    assert_k_plus_matches(trace.k_plus.values, p_k, n_means=1)
    assert_mean_matches(trace.alpha, float(np.sum(w * (a + K) / (b + H))))


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_sigma_x_update_matches_exact_marginal():
    """False alarm <= 1e-3: 12 K+ bins and one mean, Bonferroni (as above)."""
    options = dict(alpha=1.3, sigma_a=1.2, beta=1.0)
    p_k, _, mean_sigma_x = exact_marginals(X3, scale="sigma_x", **options)
    chain = run_chain(X3, 50_000, stat_rng(9), sigma_x=0.5, burn=2_000,
                      moves=[GibbsSweep(), ScaleUpdate("sigma_x")], **options)
    post = chain.posterior_trace
    assert_k_plus_matches(post.k_plus.values, p_k, n_means=1)
    assert_mean_matches(post.sigma_x, mean_sigma_x)
    assert (post.alpha == 1.3).all() and (post.sigma_a == 1.2).all()


# --------------------------------------------------------------------------------------
# chain bookkeeping
# --------------------------------------------------------------------------------------


def test_run_chain_records_consistent_traces():
    X = np.random.default_rng(0).normal(size=(15, 4))
    chain = run_chain(X, 40, np.random.default_rng(1), sigma_x=0.5, sigma_a=1.0, beta=1.5,
                      moves=[GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a", "sigma_x")],
                      burn=10, thin=3)
    trace = chain.trace
    assert trace.sizes["draw"] == 40 and trace.attrs["burn"] == 10
    np.testing.assert_array_equal(chain.sample_draws, np.arange(10, 40, 3))
    assert len(chain.samples) == len(chain.sample_draws)
    for draw, Z in zip(chain.sample_draws, chain.samples):
        row = trace.sel(draw=draw)
        assert Z.dtype == np.int8 and int(row.k_plus) == Z.shape[1]
        ll = collapsed_loglik(X, Z, float(row.sigma_x), float(row.sigma_a))
        assert float(row.log_likelihood) == pytest.approx(ll, rel=1e-9)
        assert float(row.log_joint) == pytest.approx(
            ll + log_prior(Z, float(row.alpha), beta=1.5), rel=1e-9)
    assert chain.Z.shape[1] == int(trace.k_plus[-1])
    assert float(trace.sigma_x[-1]) == chain.sigma_x and float(trace.alpha[-1]) == chain.alpha
    assert set(chain.acceptance) == {"sigma_a", "sigma_a_step", "sigma_x", "sigma_x_step"}


def test_run_chain_with_everything_fixed_keeps_the_hyperparameters():
    chain = run_chain(X3, 20, np.random.default_rng(1), alpha=0.8, sigma_x=0.6, sigma_a=1.2,
                      moves=[GibbsSweep()])
    assert (chain.trace.alpha == 0.8).all() and (chain.trace.sigma_a == 1.2).all()
    assert chain.acceptance == {}


def test_run_chains_gives_inference_data_for_arviz():
    X = np.random.default_rng(0).normal(size=(15, 4))
    starts = [np.ones((15, 1)), (np.random.default_rng(3).random((15, 8)) < 0.3)]
    idata, chains = run_chains(X, 2, 30, np.random.default_rng(5), Z0=starts,
                                     sigma_x=0.5, sigma_a=1.0, burn=10, thin=2)
    assert dict(idata.posterior.sizes) == {"chain": 2, "draw": 10}
    assert dict(idata.warmup_posterior.sizes) == {"chain": 2, "draw": 10}
    rhat = az.rhat(idata, var_names=["k_plus", "log_joint"])
    ess = az.ess(idata, var_names=["k_plus", "log_joint"])
    assert np.isfinite(float(rhat.log_joint)) and float(ess.log_joint) > 0
    np.testing.assert_array_equal(idata.posterior.k_plus.values[1],
                                  chains[1].posterior_trace.k_plus.values)
    nested, _ = run_chains(X, 2, 12, np.random.default_rng(5), Z0=np.ones((15, 2)).tolist(),
                                 sigma_x=0.5, sigma_a=1.0)
    assert dict(nested.posterior.sizes) == {"chain": 2, "draw": 12}
    again, _ = run_chains(X, 2, 30, np.random.default_rng(5), Z0=starts,
                                sigma_x=0.5, sigma_a=1.0, burn=10, thin=2)
    assert idata.posterior.identical(again.posterior)
    assert not np.array_equal(idata.posterior.log_joint[0], idata.posterior.log_joint[1])


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
Z3 = np.ones((3, 1))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: gibbs.gibbs_sweep(X3, Z3, -1.0, 0.6, 1.2, RNG), ValueError, "alpha must be > 0"),
        (lambda: gibbs.gibbs_sweep(X3, Z3, 1.0, -0.6, 1.2, RNG), ValueError, "sigma_x must be > 0"),
        (lambda: gibbs.gibbs_sweep(X3, Z3, 1.0, 0.6, 0.0, RNG), ValueError, "sigma_a must be > 0"),
        (lambda: gibbs.gibbs_sweep(X3, Z3, 1.0, 0.6, 1.2, RNG, beta=-2), ValueError,
         "beta must be > 0"),
        (lambda: gibbs.gibbs_sweep(X3, 2 * Z3, 1.0, 0.6, 1.2, RNG), ValueError,
         "Z must contain only 0 and 1"),
        (lambda: gibbs.gibbs_sweep(X3, np.ones((4, 1)), 1.0, 0.6, 1.2, RNG), ValueError,
         "Z must have 3 rows"),
        (lambda: gibbs.gibbs_sweep(np.where(X3 > 1, np.nan, X3), Z3, 1.0, 0.6, 1.2, RNG),
         ValueError, "X must be finite"),
        (lambda: gibbs.gibbs_sweep(X3, Z3, 1.0, 0.6, 1.2, 42), TypeError,
         "rng must be a numpy.random.Generator"),
        (lambda: gibbs.gibbs_sweep(X3, Z3, 1.0, 0.6, 1.2, np.random.RandomState(0)), TypeError,
         "rng must be a numpy.random.Generator"),
        (lambda: run_chain(X3, 0, RNG), ValueError, "n_sweeps must be an integer >= 1"),
        (lambda: run_chain(X3, 10, RNG, thin=0), ValueError, "thin must be an integer >= 1"),
        (lambda: run_chain(X3, 10, RNG, burn=10), ValueError, "burn must be an integer <= 9"),
        (lambda: run_chain(X3, 10, RNG, moves=[GibbsSweep(), AlphaUpdate(prior=(1.0,))]),
         ValueError, "prior must be a"),
        (lambda: run_chain(X3, 10, RNG, moves=[GibbsSweep(), AlphaUpdate(prior=(1.0, -1.0))]),
         ValueError, r"prior\[1\] \(rate\) must be > 0"),
        (lambda: run_chain(X3, 10, RNG, Z0=np.ones((2, 1))), ValueError,
         "Z0 must have 3 rows"),
        (lambda: run_chain(X3, 10, RNG, sigma_a=-1.0), ValueError, "sigma_a must be > 0"),
        (lambda: run_chains(X3, 0, 10, RNG), ValueError, "n_chains must be an integer >= 1"),
        (lambda: run_chains(X3, 2, 10, RNG, Z0=[Z3]), ValueError,
         "Z0 must be one matrix or a list of n_chains = 2"),
        (lambda: run_chains(X3, 2, 10, "seed"), TypeError,
         "rng must be a numpy.random.Generator"),
        (lambda: gibbs.k_plus_trace(X3, 10, RNG, alpha=1.0, sigma_x=1.0, sigma_a=1.0,
                                    scan_order="sideways"), ValueError, "scan_order must be"),
        (lambda: gibbs.k_plus_trace(np.ones((7, 1)), 10, RNG, alpha=1.0, sigma_x=1.0,
                                    sigma_a=1.0, return_types=True), ValueError,
         "return_types needs X with at most 6 rows"),
    ],
)
def test_bad_inputs_are_reported_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
