"""Streaming R-IBP inference (ibp_lab.inference.streaming): derivations, limits, recovery, resumption.

What is checked, and against what:

- the law of the number of features (Poisson-binomial) against enumeration of all 2^K
  outcomes, against Monte Carlo, and at extreme probabilities (0, 1, 1e-300);
- the filtering prior against direct sums of SciPy Poisson probabilities times that law,
  and that its raw values lie in [0, 1] with nothing clipped, where the paper's literal
  form exceeds 1;
- every coordinate update against the dense-matrix formulas of the supplement, and that
  (without the "ossify" average) coordinate ascent never lowers the local objective;
- the zero-noise limit against an independent BP-means pass (Proposition 4.1): identical
  assignments, features equal to within the first-order correction;
- recovery of known features and of the number of features on data drawn from the model;
- the predictive density as a log-mean-exp, against a direct computation and against exact
  enumeration (tolerance from the Monte Carlo standard error);
- argument checks (messages), determinism, and save/restore of an interrupted stream.

Recovery tests run several independent data sets and require a number of successes set
from a binomial law: one pass cannot undo an early decision, and a stream whose first
observations show several unseen features at once merges them into one (the chapter shows
this), so a correct implementation fails on some data sets. Each success rate was measured
on 300 fresh data sets (per-data-set rates beside each test); the test uses the 99%
Clopper-Pearson lower bound of that rate and requires the number of successes below which
a correct implementation falls with probability <= 1e-3 (:func:`required_successes`). Their
data come from ``tests/seeds.py`` (``stat_rng``), so ``IBP_SEED_OFFSET`` reruns them on
fresh data.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scipy import special, stats

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.streaming import (
    RecursiveIBP,
    bp_means_one_pass,
    filtering_prior,
    log_fit,
    paper_prior,
    stream_cost,
)
from ibp_lab.models.linear_gaussian import simulate, simulate_factor_analysis
from ibp_lab.evaluation.summaries import match_features
from ibp_lab.inference.streaming import _factor_analysis as fa
from ibp_lab.inference.streaming import _linear_gaussian as lg
from ibp_lab.inference.streaming.filtering import (
    log_feature_count_pmf,
    log_filtering_prior,
    log_new_feature_fraction,
)
from tests.seeds import stat_rng

# Largest probability that a statistical test below fails a correct implementation.
FALSE_ALARM = 1e-3


def required_successes(n_sets: int, rate: float) -> int:
    """Fewest successes out of ``n_sets`` that a correct implementation, succeeding on each
    independent data set with probability ``rate``, misses with probability <= FALSE_ALARM."""
    return int(stats.binom.ppf(FALSE_ALARM, n_sets, rate))


# --- the filtering prior ------------------------------------------------------------------

def enumerated_count_pmf(p):
    """P(sum_k B_k = j), B_k ~ Bernoulli(p_k) independent, by summing over all 2^K outcomes."""
    p = np.asarray(p, dtype=float)
    pmf = np.zeros(p.size + 1)
    for outcome in itertools.product((0, 1), repeat=p.size):
        on = np.array(outcome, dtype=bool)
        pmf[on.sum()] += np.prod(np.where(on, p, 1 - p))
    return pmf


def direct_fraction(d, bound, pmf, rate_new):
    """c_d = P(Lambda + lambda >= d | Lambda <= bound), Lambda with pmf ``pmf``, from sums."""
    j = np.arange(min(bound, pmf.size - 1) + 1)
    num = np.sum(pmf[j] * stats.poisson.sf(d - j - 1, rate_new))
    return num / np.sum(pmf[j])


@pytest.mark.parametrize("k", [1, 2, 5, 9, 12])
def test_count_law_is_the_enumerated_poisson_binomial(k):
    rng = stat_rng(11 + k)
    p = rng.random(k) ** rng.uniform(0.1, 10, size=k)  # from ~0 to ~1
    p[: k // 3] = 1.0 - 1e-9 * rng.random(k // 3)  # established features
    got = np.exp(log_feature_count_pmf(np.log1p(-p)))
    # a sum of at most 2^12 products of 12 factors: rounding stays far below 1e-12
    assert np.allclose(got, enumerated_count_pmf(p), rtol=0, atol=1e-12)


def test_count_law_matches_monte_carlo_for_many_features():
    rng = stat_rng(21)
    p = np.r_[np.full(40, 0.999), rng.random(60)]
    draws = (rng.random((200_000, p.size)) < p).sum(axis=1)
    freq = np.bincount(draws, minlength=p.size + 1) / draws.size
    pmf = np.exp(log_feature_count_pmf(np.log1p(-p)))
    # each frequency is binomial: 5.5 standard errors leave a false alarm below 1e-3 over
    # the 101 cells (4e-8 each), plus 1e-12 for rounding
    se = np.sqrt(pmf * (1 - pmf) / draws.size)
    assert np.all(np.abs(freq - pmf) <= 5.5 * se + 1e-12)
    assert pmf @ np.arange(p.size + 1) == pytest.approx(p.sum(), rel=1e-12)


def test_count_law_is_exact_at_extreme_probabilities():
    """Pi = 0 (exists), Pi = 1 (cannot), Pi = 1e-300 and existence 1e-300: no 0 * inf, no
    cancellation. The count is 1 + Bernoulli(1 - 1e-300) + Bernoulli(1e-300)."""
    log_unowned = np.array([-np.inf, 0.0, np.log(1e-300), np.log1p(-1e-300)])
    log_pmf = log_feature_count_pmf(log_unowned)
    assert log_pmf[0] == -np.inf
    assert log_pmf[1] == pytest.approx(np.log(1e-300), rel=1e-12)
    assert log_pmf[2] == pytest.approx(0.0, abs=1e-15)
    assert log_pmf[3] == pytest.approx(np.log(1e-300), rel=1e-12)
    # a hundred established features (Pi = 1e-300 each): 100 for sure, to 1e-298
    hundred = log_feature_count_pmf(np.full(100, np.log(1e-300)))
    assert hundred[100] == pytest.approx(0.0, abs=1e-15) and hundred[99] < -680


def test_count_law_adds_a_base_law_and_checks_its_arguments():
    base = np.log([0.25, 0.75])
    got = np.exp(log_feature_count_pmf(np.log([0.5]), base_log_pmf=base))
    assert np.allclose(got, [0.125, 0.5, 0.375], rtol=1e-14)
    with pytest.raises(ValueError, match="log_unowned entries must be <= 0"):
        log_feature_count_pmf([0.5])
    with pytest.raises(ValueError, match="base_log_pmf must be a log pmf"):
        log_feature_count_pmf([0.0], base_log_pmf=[-1.0])
    with pytest.raises(ValueError, match="retired_log_pmf entries must be <= 0"):
        filtering_prior([0.0], [0.0], [1], 1, 1.0, 1.0, retired_log_pmf=[np.nan])


@pytest.mark.parametrize("law", ["poisson-binomial", "established", "poisson"])
@pytest.mark.parametrize("rate_new", [2.0, 0.4, 0.05, 6.0])
def test_new_feature_fraction_matches_direct_sums(law, rate_new):
    """The windowed log-space sums against direct sums, for count laws of three shapes
    (any log-concave pmf is allowed; the Poisson keeps the old test's coverage)."""
    rng = stat_rng(5)
    if law == "poisson":
        pmf = stats.poisson.pmf(np.arange(80), 40.0)
    else:
        p = rng.random(50) if law == "poisson-binomial" else np.full(50, 1 - 1e-6)
        pmf = np.exp(log_feature_count_pmf(np.log1p(-p)))
    dish = np.array([1, 2, 3, 5, 8, 20, 39, 40, 41, 45, 51, 60])
    bound = np.minimum(dish - 1, 42)
    with np.errstate(divide="ignore"):
        log_c, log_1mc = log_new_feature_fraction(dish, np.log(pmf), np.log(rate_new), bound)
    expected = np.array([direct_fraction(d, e, pmf, rate_new) for d, e in zip(dish, bound)])
    ok = np.isfinite(expected)  # P(Lambda <= e) underflows to 0 in the direct sum
    # relative accuracy: both are sums of the same positive terms (1e-9 allows for the
    # terms below e^-50 of the largest that the windowed sum leaves out, and SciPy's own
    # rounding); c + (1 - c) = 1 to rounding
    assert np.allclose(np.exp(log_c)[ok], expected[ok], rtol=1e-9, atol=0)
    assert np.allclose(np.exp(log_c) + np.exp(log_1mc), 1.0, rtol=0, atol=1e-12)


def test_first_fresh_slot_after_established_features_needs_one_new_feature():
    """K features that exist for sure: dish K + 1 is created exactly when a new feature is,
    c = P(lambda >= 1). The paper's Poisson(K) law gives a far smaller value."""
    rate_new = 0.3
    for k in (4, 20, 100):
        log_c, _ = log_new_feature_fraction([k + 1], log_feature_count_pmf(np.full(k, -np.inf)),
                                            np.log(rate_new))
        assert np.exp(log_c[0]) == pytest.approx(-np.expm1(-rate_new), rel=1e-12)
        poisson = direct_fraction(k + 1, k, stats.poisson.pmf(np.arange(k + 1), k), rate_new)
        assert np.exp(log_c[0]) > 2.5 * poisson


def test_fraction_where_the_condition_is_impossible():
    """Two features exist for sure, so P(Lambda <= 0) = 0 for dish 1: Lambda = e = 0 is
    used, c_1 = P(lambda >= 1), a probability."""
    log_count = log_feature_count_pmf(np.array([np.log(0.5), -np.inf, -np.inf]))
    log_c, log_1mc = log_new_feature_fraction([1], log_count, np.log(0.7))
    assert np.exp(log_c[0]) == pytest.approx(-np.expm1(-0.7), rel=1e-12)
    assert np.exp(log_1mc[0]) == pytest.approx(np.exp(-0.7), rel=1e-12)


def test_prior_and_fraction_refuse_bad_input_at_their_doors():
    """The public log-space functions check what the estimator's unchecked core trusts."""
    with pytest.raises(ValueError, match="bound entries must be in"):
        log_new_feature_fraction([3], [0.0], 0.0, [3])  # e = d would read outside the tails
    with pytest.raises(ValueError, match="dish must hold integer dish numbers"):
        log_new_feature_fraction([0], [0.0], 0.0)
    with pytest.raises(TypeError, match="dish must hold integer"):
        log_new_feature_fraction([1.5], [0.0], 0.0)
    with pytest.raises(ValueError, match="log_count_pmf entries must be <= 0"):
        log_new_feature_fraction([2], [np.nan, 0.0], 0.0)
    with pytest.raises(ValueError, match="log_rate_new must be a finite real or -inf"):
        log_new_feature_fraction([2], [0.0], np.nan)
    # M = 1 with Pi = 1 (nobody owned the slot): 1 - q would be negative, NaN before
    for call in (lambda: filtering_prior([1.0], [0.0], [1], 2, 1.0, 1.0),
                 lambda: log_filtering_prior([1.0], [0.0], [1], 2, [0.0], 0.0, 1.0)):
        with pytest.raises(ValueError, match=r"usage entries must be at most \(n - 1\)"):
            call()
    with pytest.raises(ValueError, match="log_alpha must be a finite real or -inf"):
        log_filtering_prior([0.0], [0.0], [1], 1, [0.0], np.inf, 1.0)
    with pytest.raises(ValueError, match="beta"):
        log_filtering_prior([0.0], [0.0], [1], 1, [0.0], 0.0, -1.0)


def test_first_observation_prior_is_the_poisson_tail():
    """Before any data, slot k is used when Poisson(alpha) >= k (row 1 of the R-IBP)."""
    q = filtering_prior(np.zeros(6), np.zeros(6), np.arange(1, 7), 1, 2.5, 1.7)
    assert np.allclose(q, stats.poisson.sf(np.arange(6), 2.5), rtol=1e-12)


def test_filtering_prior_formula():
    """q = M / (beta + n - 1) + Pi * c, term by term, with c from the enumerated count law."""
    usage = np.array([3.0, 0.5, 0.0])
    log_unowned = np.log([0.01, 0.6, 1.0])
    dish, n, alpha, beta = np.array([1, 2, 3]), 6, 1.5, 0.8
    q = filtering_prior(usage, log_unowned, dish, n, alpha, beta)
    rate_new = alpha * beta / (beta + n - 1)
    pmf = enumerated_count_pmf(-np.expm1(log_unowned))
    c = np.array([direct_fraction(d, d - 1, pmf, rate_new) for d in dish])
    assert np.allclose(q, usage / (beta + n - 1) + np.exp(log_unowned) * c, rtol=1e-12)
    retired = np.log([0.5, 0.5])  # one retired slot that exists with probability 1/2
    q = filtering_prior(usage, log_unowned, dish + 1, n, alpha, beta, retired_log_pmf=retired)
    pmf = enumerated_count_pmf(np.r_[-np.expm1(log_unowned), 0.5])
    c = np.array([direct_fraction(d, d - 1, pmf, rate_new) for d in dish + 1])
    assert np.allclose(q, usage / (beta + n - 1) + np.exp(log_unowned) * c, rtol=1e-12)


def test_prior_stays_in_unit_interval_where_the_paper_form_exceeds_one():
    # Observation 1 owned feature 1 for sure; beta small: the paper's prior for
    # observation 2 is 1/(1 + beta) plus a Poisson term that ignores that slot 1 is taken.
    assert paper_prior([1.0], [1], 2, 1.0, 5.0, 0.1)[0] > 1.0
    assert 0.0 <= filtering_prior([1.0], [-np.inf], [1], 2, 5.0, 0.1)[0] <= 1.0


def random_states(rng, n_states):
    """Running sums and products that some sequence of posteriors could have produced."""
    for _ in range(n_states):
        n = int(rng.integers(2, 400))
        k = int(rng.integers(1, 12))
        b = rng.random((n - 1, k)) ** rng.uniform(0.05, 20, size=k)  # from ~0 to ~1
        b[:, rng.random(k) < 0.3] = 0.0
        b[rng.random(b.shape) < 0.05] = 1.0
        with np.errstate(divide="ignore"):
            log_unowned = np.log1p(-b).sum(axis=0)
        yield n, b.sum(axis=0), log_unowned, log_feature_count_pmf(log_unowned)


def test_raw_prior_values_are_probabilities_without_clipping():
    """The computed log q and log(1 - q) are <= 0 for extreme states, with no clipping."""
    rng = stat_rng(7)
    for n, usage, log_unowned, log_count in random_states(rng, 300):
        k = usage.size
        dish = np.arange(1, k + 4)
        usage_all = np.r_[usage, np.zeros(3)]
        unowned_all = np.r_[log_unowned, np.zeros(3)]
        log_alpha = rng.choice([-5e5, -30.0, np.log(0.2), np.log(3.0), np.log(60.0)])
        beta = rng.choice([1e-3, 0.1, 1.0, 50.0])
        log_q, log_1mq = log_filtering_prior(usage_all, unowned_all, dish, n, log_count,
                                             log_alpha, beta, last_used=k)
        assert np.all(log_q <= 0) and np.all(log_1mq <= 0)
        assert not np.any(np.isnan(log_q)) and not np.any(np.isnan(log_1mq))
        # q and 1 - q are complementary to rounding (they are computed separately)
        assert np.allclose(np.exp(log_q) + np.exp(log_1mq), 1.0, atol=1e-12)


@pytest.mark.parametrize("beta", [0.1, 1e-3, 1e-6])
def test_prior_near_one_keeps_its_complement_exactly(beta):
    """Where the paper's form exceeds 1, q and 1 - q are the exact values, not clipped ones.

    Observation 1 owned feature 1 for sure (M = 1, Pi = 0), so for observation 2 the prior
    is exactly 1 / (1 + beta) and its complement beta / (1 + beta). Clipping q (or 1 - q)
    into [0, 1], or forming 1 - q by subtraction, would give log(1 - q) = -inf or lose all
    digits of beta / (1 + beta) as beta -> 0. The complement's first bracket,
    (1 - Pi) - M / (beta + n - 1), is a difference of numbers near 1, so it is exact to about
    1e-16 absolutely: log(1 - q) to about 1e-16 / beta, the tolerance below (times 10).
    """
    assert paper_prior([1.0], [1], 2, 1.0, 5.0, beta)[0] > 1.0
    log_q, log_1mq = log_filtering_prior(np.array([1.0]), np.array([-np.inf]), np.array([1]),
                                         2, np.array([-np.inf, 0.0]), np.log(5.0), beta)
    assert log_q[0] == pytest.approx(-np.log1p(beta), rel=1e-12)
    assert log_1mq[0] == pytest.approx(np.log(beta) - np.log1p(beta), abs=1e-15 / beta)


def test_expected_number_of_features_sums_existence_probabilities():
    """The mean of the count: sum_k (1 - prod_n (1 - b_nk)) over all dishes ever created."""
    X, _, _ = simulate_four_feature_data(np.random.default_rng(3), n=150, sigma_x=0.3)
    model = RecursiveIBP(alpha=2.0, beta=1.0, sigma_x=0.3, sigma_a=0.5, record_posteriors=True,
                         rng=np.random.default_rng(0), births="single").fit(X)
    b = model.posterior_history_  # entries <= tol (1e-6) are not recorded
    existence = 1 - np.prod(1 - b, axis=0)
    assert model.n_features_expected_ == pytest.approx(existence.sum(), abs=150 * 1e-6)
    assert np.allclose(model.feature_existence_, existence[model.dish_numbers_ - 1], atol=150e-6)


# --- the coordinate updates -----------------------------------------------------------------

def test_linear_gaussian_update_matches_dense_formulas():
    """Supplement B.2 with full D x D covariances equals the scalar-variance update."""
    rng = np.random.default_rng(0)
    D, sigma2 = 5, 0.3
    o, mu0, mu_other = rng.normal(size=(3, D))
    s0, b_l, b_other = 0.7, 0.6, 0.8
    Sigma0 = s0 * np.eye(D)
    Sigma = np.linalg.inv(np.linalg.inv(Sigma0) + b_l / sigma2 * np.eye(D))
    mean = Sigma @ (np.linalg.inv(Sigma0) @ mu0 + b_l / sigma2 * (o - b_other * mu_other))
    mu = np.vstack([mu0, mu_other])
    s = np.array([s0, 0.2])
    b = np.array([b_l, b_other])
    R = o - b @ mu
    lg._update_feature(0, mu, s, b, mu.copy(), s.copy(), np.zeros(2), R, sigma2, False)
    assert np.allclose(mu[0], mean) and np.allclose(s[0] * np.eye(D), Sigma)
    assert np.allclose(R, o - b @ mu)  # the running residual stays exact


def test_factor_analysis_weight_update_matches_dense_formula():
    rng = np.random.default_rng(1)
    K, D, sigma2, sigma_w2 = 3, 6, 0.2, 1.5
    o, mu, s, b = rng.normal(size=D), rng.normal(size=(K, D)), rng.uniform(0.1, 1, K), rng.random(K)
    # E[diag(z) A A^T diag(z)]: b_i b_j mu_i.mu_j off the diagonal, b_i (|mu_i|^2 + D s_i) on it
    M = np.outer(b, b) * (mu @ mu.T)
    M[np.diag_indices(K)] = b * (np.sum(mu**2, axis=1) + D * s)
    Phi = np.linalg.inv(np.eye(K) / sigma_w2 + M / sigma2)
    phi = Phi @ np.diag(b) @ mu @ o / sigma2
    got_phi, got_Phi = fa.update_weights(o, mu, s, b, sigma2, sigma_w2)
    assert np.allclose(got_phi, phi) and np.allclose(got_Phi, Phi)


@pytest.mark.parametrize("model", ["linear_gaussian", "factor_analysis"])
def test_coordinate_ascent_never_lowers_the_objective(model):
    """Each update maximises the local objective in its coordinate, so steps cannot lower it."""
    rng = np.random.default_rng(2)
    K, D, sigma2, sigma_w2 = 4, 8, 0.25, 1.0
    o = rng.normal(size=D)
    mu0 = rng.normal(size=(K, D))
    s0 = rng.uniform(0.05, 1.0, K)
    usage = rng.uniform(0, 5, K)
    log_q = np.log(rng.uniform(0.05, 0.9, K))
    log_1mq = np.log1p(-np.exp(log_q))
    mu, s, b = mu0.copy(), s0.copy(), np.exp(log_q)
    values = []
    phi, Phi = np.zeros(K), np.eye(K) * sigma_w2
    for _ in range(8):
        if model == "linear_gaussian":
            R = lg.local_fit(o, mu, s, b, log_q - log_1mq, mu0, s0, usage, sigma2, 1, False)
            values.append(lg.objective(o, R, mu, s, b, log_q, log_1mq, mu0, s0, sigma2))
        else:
            phi, Phi = fa.local_fit(o, mu, s, b, log_q - log_1mq, mu0, s0, usage, sigma2,
                                    sigma_w2, 1, False)
            values.append(fa.objective(o, mu, s, b, phi, Phi, log_q, log_1mq, mu0, s0, sigma2,
                                       sigma_w2))
    # non-decreasing up to rounding (the factor-analysis weights ignore slots with b < 1e-12)
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[:-1]))
    assert values[-1] > values[0]


def test_birth_gain_is_the_change_of_the_objective():
    rng = np.random.default_rng(4)
    K, D, sigma2 = 3, 7, 0.1
    o = rng.normal(size=D)
    mu0 = np.vstack([rng.normal(size=(K - 1, D)), np.zeros(D)])
    s0 = np.r_[rng.uniform(0.01, 0.1, K - 1), 1.0]
    log_q = np.log([0.4, 0.3, 1e-3])
    log_1mq = np.log1p(-np.exp(log_q))
    mu, s, b = mu0.copy(), s0.copy(), np.exp(log_q)
    R = lg.local_fit(o, mu, s, b, log_q - log_1mq, mu0, s0, np.array([3.0, 2.0, 0.0]), sigma2, 3,
                     False)
    before = lg.objective(o, R, mu, s, b, log_q, log_1mq, mu0, s0, sigma2)
    terms = lg.slot_terms(2, mu, s, b, mu0, s0, log_q, log_1mq)
    R1 = lg.propose_birth(2, o, mu, s, b, log_q - log_1mq, mu0, s0, np.array([3.0, 2.0, 0.0]),
                          R.copy(), sigma2, 3, False)
    after = lg.objective(o, R1, mu, s, b, log_q, log_1mq, mu0, s0, sigma2)
    gain = lg.birth_gain(2, R, terms, R1, mu, s, b, mu0, s0, log_q, log_1mq, sigma2)
    assert gain == pytest.approx(after - before, rel=1e-9)


# --- the zero-noise limit is BP-means (Proposition 4.1) ------------------------------------

@pytest.mark.parametrize("ossify", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_zero_noise_limit_is_one_pass_of_bp_means(seed, ossify):
    X, _, _ = simulate_four_feature_data(np.random.default_rng(seed), n=200, sigma_x=0.05,
                                         p_on=0.4)
    gamma = 1.5
    Z, A = bp_means_one_pass(X, gamma, n_steps=3, ossify=ossify)
    model = RecursiveIBP.bp_means_limit(gamma, 1e-3, n_steps=3, ossify=ossify).fit(X)
    assert np.array_equal(model.posterior_history_, Z)  # every b_nk is exactly 0 or 1
    # Features differ only by the first-order terms of the limit, of relative size
    # sigma_x^2 / sigma_a^2 = 1e-6 per update; a few hundred updates stay far below 1e-4.
    assert model.features_.shape == A.shape
    assert np.max(np.abs(model.features_ - A)) < 1e-4
    assert model.n_features_expected_ == A.shape[0]


def test_bp_means_objective_penalises_each_feature():
    """The reference adds a feature exactly when the residual's squared norm exceeds gamma^2."""
    X = np.array([[2.0, 0.0], [0.0, 0.9], [2.0, 0.0]])
    Z, A = bp_means_one_pass(X, 1.0)
    assert Z.tolist() == [[1], [0], [1]] and np.allclose(A, [[2.0, 0.0]])
    Z, A = bp_means_one_pass(X, 0.8)
    assert Z.tolist() == [[1, 0], [0, 1], [1, 0]]


# --- recovery on data drawn from the model --------------------------------------------------

def fit_four_features(seed):
    X, _, A = simulate_four_feature_data(stat_rng(seed), n=400, sigma_x=0.1, p_on=0.3)
    return RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5,
                        rng=np.random.default_rng(0), births="single").fit(X), A


@pytest.fixture(scope="module")
def four_feature_fits():
    """Twenty independent four-feature data sets (400 images each), each streamed once."""
    return [fit_four_features(1000 + i) for i in range(20)]


@pytest.mark.statistical(rate=6.3e-4)
def test_four_features_recovered(four_feature_fits):
    # Success: every feature matched at correlation > 0.95 and the expected number of
    # features within one of 4. Measured on 300 fresh data sets: 246 (0.82); the failures
    # are the one-pass merges described in the module docstring (their streams end with 5
    # to 9 features), not a threshold effect. At the 99% lower bound 0.76 of that rate, 20
    # sets need >= 9 successes (false alarm 6e-4; 3e-5 at the measured rate). A model that
    # finds no feature, or merges them all, succeeds on none.
    successes = 0
    for model, A in four_feature_fits:
        corr = match_features(A, model.features_).ref_correlation()
        successes += abs(model.n_features_expected_ - 4) <= 1 and corr.min() > 0.95
    assert successes >= required_successes(len(four_feature_fits), 0.76)


@pytest.mark.statistical(rate=5.3e-4)
def test_number_of_features_and_features_recovered_from_ibp_data():
    # Z ~ IBP(0.5, 1), 36-dimensional Gaussian features, noise 0.1; the model uses
    # sigma_x = 0.2 (the smallest residual it turns into a feature grows with sigma_x).
    # Success: within one feature of the truth, every feature that 5 or more observations
    # own matched at correlation > 0.9. Measured on 300 fresh data sets: 260 (0.87); 99%
    # lower bound 0.81: 15 sets need >= 7 successes (false alarm 4e-4).
    successes = 0
    n_sets = 15
    for i in range(n_sets):
        stream = simulate(800, stat_rng(2000 + i), alpha=0.5, sigma_x=0.1, sigma_a=1.0, d=36)
        model = RecursiveIBP(alpha=0.5, beta=1.0, sigma_x=0.2, sigma_a=1.0,
                             rng=np.random.default_rng(1), births="single").fit(stream.X)
        corr = match_features(stream.A, model.features_).ref_correlation()
        used = stream.Z.sum(axis=0) >= 5
        successes += (abs(model.n_features_expected_ - stream.A.shape[0]) <= 1
                      and np.all(corr[used] > 0.9))
    assert successes >= required_successes(n_sets, 0.81)


@pytest.mark.statistical(rate=1.1e-3)  # 1e-3 for the count, < 1e-4 for "four >= 5"
def test_expected_number_of_features_settles_at_the_truth(four_feature_fits):
    # Features are never forgotten, so the Poisson rate never decreases: on every data set
    # (a property of the update, not of chance; rounding only). Where the stream ends with
    # exactly four features (207 of the 300 measured data sets), the rate reached 4 within
    # 50 images and stayed there in all 207: 99% lower bound 0.978, from which the
    # required count among this run's four-feature streams follows (false alarm <= 1e-3).
    # (Over all data sets, settling by image 50 holds only 69% of the time: a single-seed
    # check of it fails on about a third of fresh seeds.)
    settled = four = 0
    for model, _ in four_feature_fits:
        history = model.expected_features_history_
        assert np.all(np.diff(history) >= -1e-12)
        if model.features_.shape[0] == 4:
            four += 1
            settled += bool(np.allclose(history[50:], 4.0, atol=0.05))
    assert four >= 5  # 0.69 of 20 expected; fewer than 5 has probability < 1e-4
    assert settled >= required_successes(four, 0.978)


@pytest.mark.statistical(rate=1.3e-3)  # the two claims' rates added
@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_factor_analysis_counts_features_of_factor_analysis_data():
    # Measured on 300 fresh data sets: the factor-analysis rate is within one feature of
    # the number the 300 training rows use in 298 (99% lower bound 0.97: 12 sets need >= 9,
    # false alarm 2e-4), and the factor-analysis model predicts the 60 held-out rows better
    # than the linear-Gaussian one in 213 (0.71; lower bound 0.645: >= 3 of 12, false alarm
    # 1e-3). The second claim holds on average, not on every data set: it loses on data
    # with no features (a tie) and on a quarter of the others; a factor-analysis model
    # that is never better (ties included) fails it for sure.
    counted = better = 0
    n_sets = 12
    for i in range(n_sets):
        stream = simulate_factor_analysis(360, stat_rng(3000 + i), alpha=0.5, sigma_x=0.1,
                                          sigma_a=1.0, sigma_w=1.0, d=36)
        train, test = stream.X[:300], stream.X[300:]
        fa_model = RecursiveIBP(alpha=0.5, beta=1.0, sigma_x=0.2, sigma_a=1.0,
                                model="factor_analysis",
                                rng=np.random.default_rng(0), births="single").fit(train)
        lg_model = RecursiveIBP(alpha=0.5, beta=1.0, sigma_x=0.2, sigma_a=1.0,
                                rng=np.random.default_rng(0), births="single").fit(train)
        true_k = int(np.sum(stream.Z[:300].sum(axis=0) > 0))
        counted += abs(fa_model.n_features_expected_ - true_k) <= 1
        better += (fa_model.predictive_logpdf(test, n_draws=300).mean()
                   > lg_model.predictive_logpdf(test, n_draws=300).mean())
    assert counted >= required_successes(n_sets, 0.97)
    assert better >= required_successes(n_sets, 0.645)


# --- the predictive density -------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_model():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(5), n=60, sigma_x=0.1, p_on=0.3)
    return RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5,
                        rng=np.random.default_rng(0), births="single").fit(X), X


def test_predictive_is_a_log_mean_exp_of_direct_densities(small_model):
    model, X = small_model
    x = X[:3] + 0.05
    logp, draws = model.predictive_logpdf(x, n_draws=50, rng=np.random.default_rng(9),
                                          return_draws=True)
    # redo the draws by hand with a dense covariance and SciPy's multivariate normal
    dish, prob = model.next_prior()
    k = model.features_.shape[0]
    mu = np.vstack([model.features_, np.zeros((prob.size - k, X.shape[1]))])
    s = np.r_[model.feature_variances_, np.full(prob.size - k, model.sigma_a**2)]
    z = (np.random.default_rng(9).random((50, prob.size)) < prob).astype(float)
    direct = np.array([
        [stats.multivariate_normal(zi @ mu, (model.sigma_x**2 + zi @ s) * np.eye(X.shape[1]))
         .logpdf(row) for zi in z]
        for row in x
    ])
    assert np.allclose(draws, direct)
    assert np.allclose(logp, special.logsumexp(direct, axis=1) - np.log(50))
    # averaging densities, not log-densities: Jensen makes the latter strictly smaller here
    assert np.all(logp > direct.mean(axis=1))


@pytest.mark.statistical(rate=6e-7)
def test_predictive_agrees_with_exact_enumeration(small_model):
    model, X = small_model
    x = X[7]
    dish, prob = model.next_prior()
    k = model.features_.shape[0]
    mu = np.vstack([model.features_, np.zeros((prob.size - k, X.shape[1]))])
    s = np.r_[model.feature_variances_, np.full(prob.size - k, model.sigma_a**2)]
    assert prob.size <= 12  # 2^12 patterns at most
    terms = []
    for z in itertools.product([0.0, 1.0], repeat=prob.size):
        z = np.array(z)
        log_weight = np.sum(np.where(z == 1, np.log(prob), np.log1p(-prob)))
        var = model.sigma_x**2 + z @ s
        resid = x - z @ mu
        log_density = -0.5 * x.size * np.log(2 * np.pi * var) - resid @ resid / (2 * var)
        terms.append(log_weight + log_density)
    exact = special.logsumexp(terms)
    n_draws = 20000
    logp, draws = model.predictive_logpdf(x, n_draws=n_draws, rng=stat_rng(3),
                                          return_draws=True)
    # standard error of log(mean density): sd(density) / (sqrt(N) * mean(density)), by the
    # delta method; 5 standard errors: two-sided normal tail 6e-7 per run
    w = np.exp(draws[0] - draws[0].max())
    se = w.std() / (np.sqrt(n_draws) * w.mean())
    assert abs(logp[0] - exact) < 5 * se + 1e-12


# --- arguments ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(alpha=-1.0), ValueError, "alpha must be > 0, got -1.0"),
        (dict(beta=0.0), ValueError, "beta must be > 0"),
        (dict(sigma_x="0.5"), TypeError, "sigma_x must be a real number"),
        (dict(sigma_a=np.inf), ValueError, "sigma_a must be finite"),
        (dict(model="pca"), ValueError, "model must be 'linear_gaussian' or 'factor_analysis'"),
        (dict(n_steps=0), ValueError, "n_steps must be an integer >= 1"),
        (dict(n_steps=2.5), TypeError, "n_steps must be an integer"),
        (dict(tol=0.5), ValueError, "tol must be <= 0.01"),
        (dict(rng="42"), TypeError, "rng must be None, a non-negative int seed or a numpy"),
        (dict(rng=-1), ValueError, "rng must be None, a non-negative int seed or a numpy"),
        (dict(alpha="1"), TypeError, "alpha must be a real number"),
        (dict(log_alpha=-3.0), ValueError, "give alpha or log_alpha, not both"),
        (dict(ossify="yes"), TypeError, "ossify must be True or False"),
        (dict(sigma_w=-2.0), ValueError, "sigma_w must be > 0"),
    ],
)
def test_bad_parameters_are_named_at_fit(kwargs, error, message):
    args = dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0)
    args.update(kwargs)
    model = RecursiveIBP(**args)  # scikit-learn: __init__ only stores them
    for door in (model.fit, model.partial_fit):
        with pytest.raises((error, TypeError), match=message):
            door(np.ones((2, 2)))
    assert not hasattr(model, "features_")


def test_bad_data_are_rejected_with_messages():
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single")
    with pytest.raises(ValueError, match="X must be finite"):
        model.partial_fit([[0.0, np.nan]])
    with pytest.raises(ValueError, match="X must be 2-D"):
        model.fit(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="X must hold real numbers, got dtype <U1"):
        model.fit([["a", "b"]])
    with pytest.raises(AttributeError, match="call fit"):
        model.features_
    with pytest.raises(AttributeError, match="call fit"):
        model.predictive_logpdf(np.zeros((1, 2)))
    model.partial_fit(np.zeros(2))
    with pytest.raises(ValueError, match="X has 3 features, but RecursiveIBP is expecting 2"):
        model.partial_fit(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="X_new has 3 features, but RecursiveIBP is expecting 2"):
        model.predictive_logpdf(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="n_draws must be an integer >= 1"):
        model.predictive_logpdf(np.zeros((1, 2)), n_draws=0)
    with pytest.raises(TypeError, match="state must be a dict"):
        model.set_state([1, 2])
    with pytest.raises(ValueError, match="state is not a valid RecursiveIBP state: missing"):
        model.set_state({"features": []})
    with pytest.raises(ValueError, match="gamma must be > 0"):
        bp_means_one_pass(np.zeros((2, 2)), -1.0)
    with pytest.raises(ValueError, match="usage entries must be in"):
        filtering_prior([3.0], [0.0], [1], 2, 1.0, 1.0)
    with pytest.raises(ValueError, match="checkpoints must be strictly increasing"):
        stream_cost(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single"),
                    np.zeros((5, 2)), [3, 2])


# --- determinism, resumption ------------------------------------------------------------------

@pytest.mark.parametrize("model_name", ["linear_gaussian", "factor_analysis"])
def test_same_seed_same_result(model_name):
    X, _, _ = simulate_four_feature_data(np.random.default_rng(8), n=80, sigma_x=0.2)
    fits = [
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5, model=model_name,
                     rng=np.random.default_rng(4), births="single").fit(X)
        for _ in range(2)
    ]
    assert np.array_equal(fits[0].features_, fits[1].features_)
    assert np.array_equal(fits[0].predictive_logpdf(X[:5]), fits[1].predictive_logpdf(X[:5]))


def fitted_arrays(model):
    return [model.features_, model.feature_variances_, model.feature_usage_,
            model.feature_existence_, model.dish_numbers_, model.poisson_rate_history_,
            model.n_slots_history_, model.posterior_history_]


@pytest.mark.parametrize("model_name", ["linear_gaussian", "factor_analysis"])
@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_interrupted_stream_resumes_identically(model_name, tmp_path):
    X, _, _ = simulate_four_feature_data(np.random.default_rng(6), n=120, sigma_x=0.2)
    settings = dict(model=model_name, record_posteriors=True)
    whole = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5,
                         rng=np.random.default_rng(11), **settings).fit(X)
    first = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5,
                         rng=np.random.default_rng(11), **settings)
    first.partial_fit(X[:57])
    first.save(tmp_path / "stream.npz")
    resumed = RecursiveIBP.load(tmp_path / "stream.npz").partial_fit(X[57:])
    in_memory = RecursiveIBP(alpha=2.0, beta=2.0, sigma_x=1.0, sigma_a=1.0,
                             births="single").set_state(first.get_state())
    in_memory.partial_fit(X[57:])
    for other in (resumed, in_memory):
        for a, b in zip(fitted_arrays(whole), fitted_arrays(other)):
            assert np.array_equal(a, b)
        assert other.n_features_expected_ == whole.n_features_expected_
    # the generator's state travels with the stream: the same predictive draws follow
    expected = whole.predictive_logpdf(X[:4], n_draws=30)
    assert np.array_equal(resumed.predictive_logpdf(X[:4], n_draws=30), expected)
    assert np.array_equal(in_memory.predictive_logpdf(X[:4], n_draws=30), expected)


def test_one_row_at_a_time_equals_one_batch():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(9), n=60, sigma_x=0.2)
    batch = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5, births="single").fit(X)
    rows = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5, births="single")
    for x in X:
        rows.partial_fit(x)
    assert np.array_equal(batch.features_, rows.features_)


# --- slots and memory -------------------------------------------------------------------------

def test_state_is_a_few_numbers_per_slot_whatever_the_stream_length():
    stream = simulate(600, np.random.default_rng(2), alpha=1.0, sigma_x=0.1, sigma_a=1.0, d=10)
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=1.0, keep_history=False,
                         births="single")
    model.partial_fit(stream.X)
    k = model.features_.shape[0]
    # D means, one variance, usage, log-product, dish number per slot; four scalars; the
    # retired slots' count law, one entry more than the retired slots that may exist
    retired = model.get_state()["retired_log_pmf"].size
    assert retired <= model.get_state()["next_dish"] - k
    assert model.state_nbytes == k * (10 + 4) * 8 + 4 * 8 + retired * 8
    with pytest.raises(AttributeError, match="keep_history"):
        model.poisson_rate_history_


def test_unused_slots_retire_and_keep_counting():
    """A feature nobody uses any more is dropped once its prior falls below tol."""
    rng = np.random.default_rng(0)
    a, b = 3 * np.eye(6)[0], 3 * np.eye(6)[1]
    X = np.vstack([np.tile(b, (3, 1)), np.tile(a, (400, 1))]) + 0.05 * rng.normal(size=(403, 6))
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.1, sigma_a=1.0, tol=0.01,
                         births="single").fit(X)
    slots = model.n_slots_history_
    # feature b, owned by 3 observations, has prior 3 / n < tol = 0.01 from n = 301 on
    assert slots.max() == 2 and slots[-1] == 1 and np.argmax(slots[3:] == 1) + 4 in range(300, 303)
    # its existence stays in the Poisson rate: two features existed
    assert model.n_features_expected_ == pytest.approx(2.0, abs=1e-9)


# --- valid extremes and bounds on work --------------------------------------------------------

@pytest.mark.parametrize("model_name", ["linear_gaussian", "factor_analysis"])
def test_tiny_noise_gives_positive_variances(model_name):
    """sigma_x = 1e-9 against sigma_a = 1: the updated variance is sigma_x^2 / b, not 0.

    The update s0 + (s* - s0) cancels to exactly 0 here (1 - 1e-18 rounds to 1), and the
    next update then divided by zero; s* = s0 / (1 + b s0 / sigma^2) cannot vanish.
    """
    X = np.array([[1.0, -2.0], [1.0, -2.0], [0.5, 3.0]])
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1e-9, sigma_a=1.0, model=model_name,
                         births="single").fit(X)
    assert np.all(model.feature_variances_ > 0) and np.all(np.isfinite(model.features_))
    if model_name == "linear_gaussian":
        first = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1e-9, sigma_a=1.0,
                             births="single").fit([[1.0]])
        assert first.features_[0, 0] == pytest.approx(1.0, rel=1e-12)
        assert first.feature_variances_[0] == pytest.approx(1e-18, rel=1e-9)


@pytest.mark.parametrize("ossify", [False, True])
def test_zero_noise_limit_holds_at_tiny_noise(ossify):
    """Proposition 4.1 at sigma_x = 1e-9 (it used to end in ZeroDivisionError)."""
    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), n=60, sigma_x=0.05,
                                         p_on=0.4)
    Z, A = bp_means_one_pass(X, 1.5, ossify=ossify)
    model = RecursiveIBP.bp_means_limit(1.5, 1e-9, ossify=ossify).fit(X)
    assert np.array_equal(model.posterior_history_, Z)
    assert np.max(np.abs(model.features_ - A)) < 1e-9


def test_large_alpha_is_refused_before_any_work():
    model = RecursiveIBP(alpha=1e5, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single")
    with pytest.raises(ValueError, match=r"expect 1\.5e\+05 features after 2 observations.*"
                                         r"at most 10000"):
        model.fit(np.zeros((2, 3)))
    with pytest.raises(AttributeError, match="call fit"):  # nothing was processed
        model.features_
    # a refused refit leaves the previous fit in place
    small = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                         births="single").fit(np.ones((3, 2)))
    features = small.features_
    with pytest.raises(ValueError, match="X entries must be at most"):
        small.fit(np.full((2, 2), 1e200))
    assert small.n_seen_ == 3 and np.array_equal(small.features_, features)
    # the cap counts the whole stream: a long stream at a moderate alpha is refused too
    with pytest.raises(ValueError, match="model='factor_analysis' supports at most 400"):
        RecursiveIBP(alpha=150.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, model="factor_analysis",
                     births="single").fit(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="the features would need"):
        RecursiveIBP(alpha=1000.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                     births="single").fit(np.zeros((1, 100_000)))


def test_the_feature_cap_reads_the_prior_expected_number_of_features():
    """The cap is checked on E[K+], whose one public face is prior.expected_num_features."""
    from ibp_lab.models.prior import expected_num_features

    expected = expected_num_features(3000.0, 50, beta=3.0)  # about 2.7e4 > 10000
    direct = sum(3000.0 * 3.0 / (3.0 + i - 1) for i in range(1, 51))
    assert expected == pytest.approx(direct, rel=1e-12)
    model = RecursiveIBP(alpha=3000.0, beta=3.0, sigma_x=0.5, sigma_a=1.0, births="single")
    with pytest.raises(ValueError, match=re.escape(f"expect {expected:.4g} features after 50 ")):
        model.fit(np.zeros((50, 2)))


def test_bounded_allocations_are_refused_with_messages():
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                         births="single").fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="the predictive draws would need"):
        model.predictive_logpdf(np.zeros(2), n_draws=10**9)
    with pytest.raises(ValueError, match="n_steps must be an integer <= 10000"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, n_steps=10**9).fit(np.ones((3,
                                                                                                2)))
    with pytest.raises(ValueError, match="X entries must be at most 1e\\+100"):
        model.partial_fit([[1e200, 0.0]])
    assert model.n_seen_ == 3


@pytest.mark.parametrize(
    "X, error, message",
    [
        # complex data: a ValueError worded as scikit-learn's check_complex_data asks
        (np.array([[1 + 2j, 1.0]]), ValueError, "Complex data not supported: X must hold real"),
        (np.array([["1.5", "2"]]), TypeError, "X must hold real numbers, got dtype <U3"),
        (np.array([[1.0, None]], dtype=object), TypeError,
         "X must hold real numbers: .* got an entry of type NoneType"),
        ("1.5", TypeError, "X must be an array of real numbers, got str"),
        ([[1.0], [1.0, 2.0]], TypeError, "X must be an array of real numbers, got list"),
    ],
)
def test_non_real_data_are_refused(X, error, message):
    for call in (RecursiveIBP(births="single").fit, RecursiveIBP(births="single").partial_fit):
        with pytest.raises(error, match=message):
            call(X)
    fitted = RecursiveIBP(sigma_x=0.5, births="single").fit(np.ones((2, 2)))
    with pytest.raises(error, match=message.replace("X ", "X_new ")):
        fitted.predictive_logpdf(X)


@pytest.mark.parametrize("name", ["ossify", "keep_history", "record_posteriors"])
@pytest.mark.parametrize("value", ["no", 1, None, np.array([True])])
def test_flags_must_be_bools(name, value):
    with pytest.raises(TypeError, match=f"{name} must be True or False"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                     **{name: value}).fit(np.ones((2, 2)))
    fitted = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                          births="single").fit(np.ones((2, 2)))
    with pytest.raises(TypeError, match="return_draws must be True or False"):
        fitted.predictive_logpdf(np.ones(2), return_draws=value)


def test_helpers_route_their_arguments_through_the_checks():
    with pytest.raises(TypeError, match="ossify must be True or False"):
        bp_means_one_pass(np.zeros((2, 2)), 1.0, ossify="no")
    with pytest.raises(TypeError, match="usage must hold real numbers, got dtype complex128"):
        filtering_prior([1 + 1j], [0.0], [1], 2, 1.0, 1.0)
    with pytest.raises(TypeError, match="dish must hold integer dish numbers, got dtype float64"):
        filtering_prior([0.0], [0.0], [1.5], 2, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"dish must hold integer dish numbers in \[1, 1000000\]"):
        filtering_prior([0.0], [0.0], [10**12], 2, 1.0, 1.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        paper_prior([1.0], [1], 2, 1.0, -5.0, 0.1)
    with pytest.raises(TypeError, match="usage must hold real numbers"):
        paper_prior(["1"], [1], 2, 1.0, 5.0, 0.1)
    with pytest.raises(TypeError, match="absolute must be True or False"):
        match_features(np.eye(2), np.eye(2), absolute="no")
    with pytest.raises(TypeError, match="A must hold real numbers, got dtype complex128"):
        match_features(np.eye(2), np.eye(2) * 1j)
    with pytest.raises(ValueError, match="sigma_w must be > 0"):
        simulate_factor_analysis(5, np.random.default_rng(0), alpha=1.0, sigma_x=0.1,
                                 sigma_a=1.0, sigma_w=-1.0, d=2)
    with pytest.raises(ValueError, match="n and values must be 1-D of the same length"):
        log_fit([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="n must be finite and > 0"):
        log_fit([0, 2], [1.0, 2.0])
    with pytest.raises(TypeError, match="model must be a RecursiveIBP"):
        stream_cost("model", np.zeros((5, 2)), [3])
    with pytest.raises(ValueError, match="n \\* d must be <= 1e\\+08 entries of X"):
        simulate_factor_analysis(10**6, np.random.default_rng(0), alpha=1.0, sigma_x=0.1,
                                 sigma_a=1.0, sigma_w=1.0, d=10**3)


# --- a scikit-learn estimator -------------------------------------------------------------------

SKLEARN_CHECKS = ("check_get_params_invariance", "check_set_params",
                  "check_no_attributes_set_in_init", "check_parameters_default_constructible")


@pytest.mark.parametrize("check_name", SKLEARN_CHECKS)
def test_scikit_learn_estimator_checks(check_name):
    from sklearn.utils import estimator_checks

    check = getattr(estimator_checks, check_name)
    for estimator in (RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, rng=3,
                                   births="single"),
                      RecursiveIBP(alpha=0.5, beta=2.0, sigma_x=0.2, sigma_a=1.0,
                                   model="factor_analysis",
                                   rng=np.random.default_rng(1), births="single"),
                      RecursiveIBP.bp_means_limit(1.0, 1e-3)):
        check("RecursiveIBP", estimator)


def test_init_stores_parameters_as_given_and_clone_round_trips():
    from sklearn.base import clone

    rng = np.random.default_rng(7)
    model = RecursiveIBP(alpha=-1.0, beta="b", sigma_x=0.5, sigma_a=1.0, model="pca", rng=rng,
                         births="single")  # refused only at fit
    assert model.get_params()["alpha"] == -1.0 and model.get_params()["rng"] is rng
    X, _, _ = simulate_four_feature_data(np.random.default_rng(3), n=60, sigma_x=0.1)
    fitted = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5, rng=rng,
                          births="single").fit(X)
    twin = clone(fitted)
    assert not hasattr(twin, "features_")  # a clone is unfitted, with equal parameters
    params, twin_params = fitted.get_params(), twin.get_params()
    assert set(params) == set(twin_params)
    assert all(twin_params[k] == v for k, v in params.items() if k != "rng")
    assert twin_params["rng"] is not rng  # a copy of the generator, in the same state
    twin.fit(X)
    assert np.array_equal(twin.features_, fitted.features_)
    # neither has drawn yet: their generators are copies of the same state
    assert np.array_equal(twin.predictive_logpdf(X[:3]), fitted.predictive_logpdf(X[:3]))
    # set_params then fit: the new parameter is used
    assert twin.set_params(sigma_x=0.4).fit(X).get_params()["sigma_x"] == 0.4


def test_fit_never_advances_the_rng_parameter():
    """scikit-learn's rule: the same parameters and seed give the same results, fit after fit."""
    X, _, _ = simulate_four_feature_data(np.random.default_rng(4), n=50, sigma_x=0.1)
    rng = np.random.default_rng(12)
    before = rng.bit_generator.state
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5, rng=rng, births="single")
    first = model.fit(X).predictive_logpdf(X[:4])
    second = model.fit(X).predictive_logpdf(X[:4])
    assert np.array_equal(first, second) and rng.bit_generator.state == before
    seeded = [RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5, rng=5,
                           births="single").fit(X).score(X[:4]) for _ in range(2)]
    assert seeded[0] == seeded[1]


def test_parameters_changed_mid_stream_are_refused():
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                         births="single").partial_fit(np.ones((3, 2)))
    model.set_params(sigma_x=0.1)
    with pytest.raises(ValueError, match="parameters changed since this stream started"):
        model.partial_fit(np.ones(2))
    assert model.n_seen_ == 3
    assert model.fit(np.ones((3, 2))).n_seen_ == 3  # fit starts again with the new value


@pytest.mark.parametrize("model_name", ["linear_gaussian", "factor_analysis"])
def test_transform_is_what_partial_fit_would_compute_and_changes_nothing(model_name):
    X, _, _ = simulate_four_feature_data(np.random.default_rng(2), n=80, sigma_x=0.1, p_on=0.3)
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5, model=model_name,
                         record_posteriors=True,
                         rng=0, births="single").fit(X[:60])
    before = model.get_state()
    probs = model.transform(X[60:65])
    assert probs.shape == (5, model.features_.shape[0])
    assert np.all((probs >= 0) & (probs <= 1))
    after = model.get_state()
    assert all(np.array_equal(np.asarray(before[k]), np.asarray(after[k])) for k in before
               if k != "rng_state") and before["rng_state"] == after["rng_state"]
    # the direct computation: feed each row as the next observation of a copy of the stream
    dishes = model.dish_numbers_
    for i, x in enumerate(X[60:65]):
        copy = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                            births="single").set_state(before).partial_fit(x)
        b_row = copy.posterior_history_[-1]
        expected = np.zeros(dishes.size)
        inside = dishes <= b_row.size
        expected[inside] = b_row[dishes[inside] - 1]
        # recorded posteriors omit values <= tol; transform returns every kept slot's b
        small = expected == 0
        assert np.allclose(probs[i][~small], expected[~small], rtol=1e-12, atol=0)
        assert np.all(probs[i][small] <= model.tol)


@pytest.mark.statistical(rate=6e-7)
def test_score_is_the_mean_exact_predictive_log_density():
    """score against exact enumeration of the predictive mixture over every slot pattern."""
    X, _, _ = simulate_four_feature_data(np.random.default_rng(5), n=60, sigma_x=0.1, p_on=0.3)
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=0.5, rng=stat_rng(11),
                         births="single").fit(X[:50])
    rows = X[50:53]
    _, prob = model.next_prior()
    k = model.features_.shape[0]
    assert prob.size <= 12  # 2^12 patterns at most
    mu = np.vstack([model.features_, np.zeros((prob.size - k, X.shape[1]))])
    s = np.r_[model.feature_variances_, np.full(prob.size - k, model.sigma_a**2)]
    patterns = np.array(list(itertools.product([0.0, 1.0], repeat=prob.size)))
    log_w = patterns @ np.log(prob) + (1 - patterns) @ np.log1p(-prob)
    var = model.sigma_x**2 + patterns @ s
    exact, spread = [], []
    for x in rows:
        resid = x[None, :] - patterns @ mu
        log_density = -0.5 * x.size * np.log(2 * np.pi * var) - np.sum(resid**2, 1) / (2 * var)
        exact.append(special.logsumexp(log_w + log_density))
        # relative standard deviation of one draw's density: sqrt(E[p^2] / E[p]^2 - 1)
        second = special.logsumexp(log_w + 2 * log_density)
        spread.append(np.sqrt(np.expm1(second - 2 * exact[-1])))
    n_draws = 20_000
    score = model.score(rows, n_draws=n_draws)
    # each row's log-mean estimate has standard error spread / sqrt(n_draws) (delta
    # method); the same draws serve all rows, so the mean's error is at most the mean of
    # theirs; 5 of those: two-sided normal tail 6e-7
    se = np.mean(spread) / np.sqrt(n_draws)
    assert abs(score - np.mean(exact)) < 5 * se + 1e-12


def test_both_local_models_follow_the_one_protocol():
    from ibp_lab.inference.streaming._stream import local_model
    from ibp_lab.inference.streaming.model import LocalModel

    for name in ("linear_gaussian", "factor_analysis"):
        model = RecursiveIBP(model=name, sigma_x=0.5, births="single").fit(np.ones((2, 2)))
        assert isinstance(model._stream.local, LocalModel)
        assert type(model._stream.local) is type(local_model(model._checked_settings()))
    assert isinstance(lg.LinearGaussianLocal(0.5, 3, False), LocalModel)
    assert isinstance(fa.FactorAnalysisLocal(0.5, 1.0, 3, False), LocalModel)


# --- the birth's acceptance rule ----------------------------------------------------------

def _birth_case(seed: int, new_scale: float, q_fresh: float):
    """Three established slots and one fresh one; an observation that is partly a new direction."""
    rng = np.random.default_rng(seed)
    K_old, D = 3, 8
    mu0 = np.vstack([rng.normal(size=(K_old, D)), np.zeros((1, D))])
    s0 = np.r_[rng.uniform(0.01, 0.05, K_old), 1.0]
    log_q = np.log(np.r_[rng.uniform(0.2, 0.6, K_old), q_fresh])
    usage = np.r_[rng.uniform(2.0, 9.0, K_old), 0.0]
    o = mu0[0] * (rng.random() < 0.5) + new_scale * rng.normal(size=D) + 0.1 * rng.normal(size=D)
    return o, K_old, mu0, s0, log_q, np.log1p(-np.exp(log_q)), usage


# (seed, new direction's scale, fresh slot's prior q), found by a search over seeds: births
# kept and undone, clearly and within half a nat of the threshold. A proposal that ends with
# the slot mostly off (b_f < 0.5) had a gain above 1e-3 in none of 7,500 searched cases (only
# rounding-level gains): the rule's second condition is a guard that these cases cannot tell
# apart from its absence.
_BIRTH_CASES = [(1, 1.0, 1e-3), (2, 1.0, 1e-3),    # kept, gain of several nats
                (29, 1.0, 1e-3), (32, 0.7, 1e-8),  # kept, gain 0.41 and 0.23 nats
                (7, 1.0, 1e-3), (17, 1.0, 1e-30),  # undone, gain -0.36 and -0.21 nats
                (0, 1.0, 1e-3), (0, 0.0, 1e-3)]    # undone, clearly


def test_a_birth_is_kept_exactly_when_it_raises_the_objective_and_the_slot_is_mostly_on():
    """A planted bug in this rule (either condition dropped or inverted) survived the suite.

    For each case the expected outcome is computed from the definitions (coordinate ascent
    without the birth, the birth proposal, the objective of both) and compared with what the
    local model returns; the cases include gains within half a nat of zero on both sides.
    """
    sigma_x, n_steps = math.sqrt(0.05), 3
    model = lg.LinearGaussianLocal(sigma_x, n_steps, False)
    seen, gains = set(), []
    for seed, new_scale, q_fresh in _BIRTH_CASES:
        o, n_old, mu0, s0, log_q, log_1mq, usage = _birth_case(seed, new_scale, q_fresh)
        logit_q = log_q - log_1mq
        mu, s, b = mu0.copy(), s0.copy(), np.exp(log_q)
        R = lg.local_fit(o, mu, s, b, logit_q, mu0, s0, usage, sigma_x**2, n_steps, False)
        without = (mu.copy(), s.copy(), b.copy())
        before = lg.objective(o, R, mu, s, b, log_q, log_1mq, mu0, s0, sigma_x**2)
        R1 = lg.propose_birth(n_old, o, mu, s, b, logit_q, mu0, s0, usage, R.copy(), sigma_x**2,
                              n_steps, False)
        after = lg.objective(o, R1, mu, s, b, log_q, log_1mq, mu0, s0, sigma_x**2)
        outcome = (bool(after > before), bool(b[n_old] >= 0.5))
        seen.add(outcome)
        gains.append(after - before)
        expected = (mu, s, b) if all(outcome) else without
        got = model.fit_observation(o, n_old, mu0.copy(), s0.copy(), np.exp(log_q), log_q,
                                    log_1mq, mu0, s0, usage)
        for name, g, e in zip(("mu", "s", "b"), got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name}, case {seed, new_scale, q_fresh}, "
                                               f"(gain > 0, b_f >= 0.5) = {outcome}")
    assert {(True, True), (False, True), (False, False)} <= seen
    assert any(0 < g < 0.5 for g in gains) and any(-0.5 < g < 0 for g in gains)


@pytest.mark.parametrize("strength, logit, sigma_x", [(1.0, -2.0, 2.0), (0.5, -4.0, 1.0),
                                                      (2.0, -3.0, 2.0)])
def test_a_proposal_that_ends_with_the_slot_mostly_off_is_no_birth(strength, logit, sigma_x):
    """Here the proposed birth falls back to the same optimum, b about 0.01 to 0.1, with a
    'gain' of rounding size (1e-17) above zero: the observation's posteriors must be
    exactly those of the fit without the proposal. Keeping it anyway (the third audit's
    planted bug, on the Python path) leaves them off in the last digits."""
    from scipy.special import expit

    from ibp_lab.inference.streaming import _linear_gaussian as lg

    o, mu0, s0 = np.full(2, strength), np.zeros((1, 2)), np.ones(1)
    q = expit(logit)
    log_q, log_1mq, usage = np.log([q]), np.log1p([-q]), np.zeros(1)
    mu, s, b = mu0.copy(), s0.copy(), np.full(1, q)
    lg.local_fit(o, mu, s, b, log_q - log_1mq, mu0, s0, usage, sigma_x**2, 5, False)
    assert b[0] < 0.5
    proposed = mu0.copy(), s0.copy(), np.full(1, q)
    lg.LinearGaussianLocal(sigma_x, 5, False).fit_observation(o, 0, *proposed, log_q, log_1mq,
                                                              mu0, s0, usage)
    for without, with_proposal in zip((mu, s, b), proposed):
        np.testing.assert_array_equal(with_proposal, without)
