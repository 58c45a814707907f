"""Tests of ibp_lab.models.recursive: the Recursive IBP marginals and their Monte Carlo check."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from ibp_lab.models.recursive import (
    RecursiveMarginals,
    columns_needed,
    iter_marginals,
    marginals,
    monte_carlo_agreement,
    monte_carlo_marginals,
    monte_carlo_mse,
    new_dish_probabilities,
    next_row_prior,
)
from ibp_lab.models.prior import expected_num_features, new_dish_rate
from tests.seeds import stat_rng

# The paper's grid (Schaeffer et al. 2022, section 5.1) and two one-off points: beta = 1
# (the one-parameter IBP) and beta < 1.
MC_CASES = [(1.1, 2.3, 25), (10.78, 5.6, 40), (15.37, 12.9, 40), (2.0, 1.0, 30), (3.0, 0.4, 30)]
FAMILY_LEVEL = 1e-3  # allowed probability that a correct implementation fails one MC test


# --------------------------------------------------------------------------------------
# Exact cases by hand
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.3, 2.0, 15.37])
def test_first_customer_takes_dish_k_when_poisson_alpha_reaches_k(alpha):
    k = np.arange(1, 81)
    expected = stats.poisson.sf(k - 1, alpha)  # P(Poisson(alpha) >= k)
    np.testing.assert_allclose(marginals(alpha, 3.0, 1, 80)[0], expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("alpha, beta", [(2.0, 1.0), (1.1, 2.3), (15.37, 12.9)])
def test_second_customer_first_dish_by_hand(alpha, beta):
    # Dish 1 exists after customer 1 with probability 1 - exp(-alpha) and is then taken
    # with probability 1 / (beta + 1); otherwise customer 2 creates it if they create any.
    exists = -np.expm1(-alpha)
    by_hand = exists / (beta + 1) + np.exp(-alpha) * -np.expm1(-alpha * beta / (beta + 1))
    assert marginals(alpha, beta, 2, 3)[1, 0] == pytest.approx(by_hand, rel=1e-13)


def test_first_row_decreases_in_k():
    row = marginals(4.0, 2.0, 1, 60)[0]
    assert np.all(np.diff(row) < 0)


def test_poisson_rates():
    alpha, beta, n = 2.5, 0.7, 40
    by_sum = sum(alpha * beta / (beta + i - 1) for i in range(1, n + 1))
    assert expected_num_features(alpha, n, beta=beta) == pytest.approx(by_sum, rel=1e-13)
    assert new_dish_rate(alpha, n - 1, beta=beta) == pytest.approx(alpha * beta / (beta + n - 1))
    k = columns_needed(alpha, beta, n, tail=1e-9)
    assert stats.poisson.sf(k, by_sum) <= 1e-9 < stats.poisson.sf(k - 1, by_sum)


# --------------------------------------------------------------------------------------
# Structural properties
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha, beta, n", [(2.0, 1.0, 100), (10.78, 5.6, 50), (0.5, 0.3, 200)])
def test_row_sums_equal_alpha_dishes_per_customer(alpha, beta, n):
    # Every customer eats Poisson(alpha) dishes; k_max leaves a tail below 1e-14.
    k_max = columns_needed(alpha, beta, n, tail=1e-14) + 5
    np.testing.assert_allclose(marginals(alpha, beta, n, k_max).sum(axis=1), alpha, rtol=1e-11)


def test_truncating_columns_leaves_kept_columns_unchanged():
    # Same terms, summed in a different order by np.convolve: equal up to rounding.
    np.testing.assert_allclose(
        marginals(3.0, 2.0, 30, 10), marginals(3.0, 2.0, 30, 80)[:, :10], rtol=1e-13
    )


@pytest.mark.parametrize("k_max", [400, 1500])
def test_extreme_parameters_stay_probabilities_and_new_dish_terms_nonnegative(k_max):
    alpha, beta, n = 15.37, 12.9, 500
    p = marginals(alpha, beta, n, k_max)
    assert np.all(np.isfinite(p)) and p.min() >= 0.0 and p.max() <= 1.0
    rate = 0.0
    for i in range(1, n + 1):
        fresh = new_dish_probabilities(rate, new_dish_rate(alpha, i - 1, beta=beta), k_max)
        assert fresh.min() >= 0.0, f"negative new-dish probability at customer {i}"
        rate += new_dish_rate(alpha, i - 1, beta=beta)
    if k_max == 1500:  # the far right tail is reached and is positive, not rounded to 0
        assert 0 < p[-1, 1400] < 1e-100


def _new_dish_reference(rate_before: float, rate_new: float, k: int) -> float:
    """P(A <= k-1 < A + B) with 60 significant digits (A, B independent Poisson)."""
    decimal.getcontext().prec = 60
    mu, lam = Decimal(repr(rate_before)), Decimal(repr(rate_new))
    top = k + 400  # lam <= 20 here, so P(B = l) for l > k + 400 is negligible

    def pmf(rate, j):
        return (-rate).exp() * rate**j / Decimal(math.factorial(j)) if j else (-rate).exp()

    sf_new = [Decimal(0)] * (top + 2)  # sf_new[m] = P(B >= m)
    for m in range(top, -1, -1):
        sf_new[m] = sf_new[m + 1] + pmf(lam, m)
    return float(sum(pmf(mu, j) * sf_new[k - j] for j in range(k)))


@pytest.mark.parametrize(
    "rate_before, rate_new, k",
    [
        (0.0, 15.37, 120),  # customer 1, far tail of Poisson(alpha)
        (736.9, 0.387, 1400),  # late customer, far right tail: CDFs are both 1.0
        (736.9, 0.387, 600),  # left of the mean
        (736.9, 0.387, 737),  # at the mean
        (5.0, 1.0, 40),
        (60.0, 20.0, 5),  # far left tail
    ],
)
def test_new_dish_probability_matches_high_precision_reference(rate_before, rate_new, k):
    got = new_dish_probabilities(rate_before, rate_new, k)[k - 1]
    assert got == pytest.approx(_new_dish_reference(rate_before, rate_new, k), rel=1e-10)


# --------------------------------------------------------------------------------------
# The recursion as a stream, and with posterior running sums
# --------------------------------------------------------------------------------------


def test_stream_and_generator_reproduce_marginals():
    alpha, beta, n, k_max = 3.0, 0.8, 40, 30
    table = marginals(alpha, beta, n, k_max)
    stream = RecursiveMarginals(alpha, beta, k_max)
    np.testing.assert_allclose(np.vstack([stream.step() for _ in range(n)]), table, rtol=1e-13)
    rows = iter_marginals(alpha, beta, k_max)
    np.testing.assert_allclose(np.vstack([next(rows) for _ in range(n)]), table, rtol=1e-13)
    assert stream.rate == pytest.approx(expected_num_features(alpha, n, beta=beta), rel=1e-13)
    assert stream.state_nbytes == k_max * 8 + 16


def test_growing_stream_keeps_memory_logarithmic_and_matches_fixed_width():
    alpha, beta, n, tail = 2.0, 1.0, 2000, 1e-12
    stream = RecursiveMarginals(alpha, beta, tail=tail)
    rows = [stream.step() for _ in range(n)]
    width = columns_needed(alpha, beta, n, tail=tail)
    assert rows[-1].size == width < 60  # about 2 * log(2000) = 15 dishes expected
    fixed = marginals(alpha, beta, n, width)
    # Columns appended late miss at most n * tail of running sum each.
    np.testing.assert_allclose(rows[-1], fixed[-1], rtol=0, atol=n * tail)


def test_next_row_prior_accepts_posterior_running_sums():
    alpha, beta, n, rate_before = 2.0, 1.5, 4, 3.2
    posterior_sum = np.array([2.9, 0.4, 1.0, 0.0])  # not prior marginals
    row, rate = next_row_prior(posterior_sum, n, rate_before, alpha, beta, k_max=6)
    lam = alpha * beta / (beta + n - 1)
    k = np.arange(1, 7)
    cdf_gap = stats.poisson.cdf(k - 1, rate_before) - stats.poisson.cdf(k - 1, rate_before + lam)
    expected = np.concatenate([posterior_sum, [0, 0]]) / (beta + n - 1) + cdf_gap
    np.testing.assert_allclose(row, expected, rtol=1e-12)
    assert rate == pytest.approx(rate_before + lam)

    stream = RecursiveMarginals(alpha, beta)
    stream.update([0.9, 0.2], rate=1.7)  # a posterior row and a posterior rate
    assert stream.n_seen == 1 and stream.rate == 1.7
    np.testing.assert_allclose(stream.prior_next()[:2], [0.9, 0.2] / np.float64(beta + 1) + (
        new_dish_probabilities(1.7, new_dish_rate(alpha, 1, beta=beta), 2)))


# --------------------------------------------------------------------------------------
# Analytic marginals against simulation of the buffet itself
# --------------------------------------------------------------------------------------


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("alpha, beta, k_max", MC_CASES)
def test_analytic_marginals_match_monte_carlo_entry_by_entry(alpha, beta, k_max):
    """False alarm <= FAMILY_LEVEL = 1e-3 per case (Bonferroni over the entries, below)."""
    n, n_samples = 50, 20_000
    exact = marginals(alpha, beta, n, k_max)
    count = np.rint(monte_carlo_marginals(alpha, beta, n, k_max, n_samples, stat_rng(
        20220706)) * n_samples)
    # Bonferroni over all n * k_max entries (dependent or not): each entry may fail with
    # probability FAMILY_LEVEL / m, so the whole test fails with probability <= 1e-3 when the
    # code is right. For m = 1250-2000 that is a z threshold of about 4.9-5.0 standard errors
    # SE = sqrt(p (1 - p) / n_samples) (4.5 SE would allow a false alarm in ~1 run out of
    # 70); it is computed below, not chosen to pass.
    m = exact.size
    z_max = stats.norm.isf(FAMILY_LEVEL / (2 * m))
    variance = exact * (1 - exact)
    # Where n_samples p (1 - p) >= 50 the normal approximation to the binomial holds at this
    # depth; elsewhere (rare dishes) the exact binomial tail is used at the same level.
    normal = n_samples * variance >= 50
    z = (count / n_samples - exact) / np.sqrt(np.where(normal, variance, 1.0) / n_samples)
    worst = np.max(np.abs(z[normal]))
    assert worst < z_max, f"worst entry {worst:.2f} SE > {z_max:.2f} SE"
    x, p = count[~normal], exact[~normal]
    p_value = 2 * np.minimum(stats.binom.cdf(x, n_samples, p), stats.binom.sf(x - 1, n_samples, p))
    assert p_value.size == 0 or p_value.min() > FAMILY_LEVEL / m


@pytest.mark.statistical(rate=1e-3)
def test_mean_squared_error_matches_its_binomial_expectation():
    # E[MSE] = mean over entries of p (1 - p) / n_samples exactly, whatever the correlation
    # between entries; its spread is not known in closed form (entries of one dish are
    # correlated across customers), so it is estimated from G independent replicates and the
    # mean ratio MSE / E[MSE] is tested with a t statistic at the two-sided 1e-3 level
    # (false alarm 1e-3: each ratio averages 40 x 50 entries, close to normal).
    alpha, beta, n, k_max, n_samples, groups = 10.78, 5.6, 50, 40, 1500, 20
    exact = marginals(alpha, beta, n, k_max)
    expected_mse = np.mean(exact * (1 - exact)) / n_samples
    rng = stat_rng(4)
    ratios = np.array([
        np.mean((monte_carlo_marginals(alpha, beta, n, k_max, n_samples, rng) - exact) ** 2)
        / expected_mse
        for _ in range(groups)
    ])
    t = (ratios.mean() - 1) / (ratios.std(ddof=1) / np.sqrt(groups))
    assert abs(t) < stats.t.isf(FAMILY_LEVEL / 2, groups - 1), (ratios.mean(), t)


@pytest.mark.statistical(rate=1e-3)
def test_agreement_check_passes_the_truth_and_flags_a_wrong_beta():
    """False alarm: monte_carlo_agreement's own family level, 1e-3 (its default).

    Its power at a 20% wrong beta is far beyond any seed: the worst z is many times
    the limit.
    """
    n, k_max, n_samples = 30, 30, 20_000
    simulated = monte_carlo_marginals(2.0, 1.0, n, k_max, n_samples, stat_rng(9))
    assert monte_carlo_agreement(marginals(2.0, 1.0, n, k_max), simulated, n_samples).ok
    wrong = monte_carlo_agreement(marginals(2.0, 1.2, n, k_max), simulated, n_samples)
    assert not wrong.ok and wrong.worst_z > wrong.z_limit


def test_monte_carlo_mse_returns_one_error_per_size_and_the_mean_variance():
    """Not only the shape: each entry is the MSE of one fresh estimate of that size."""
    mse, variance = monte_carlo_mse(2.0, 1.0, 5, 8, [50, 500], np.random.default_rng(2))
    exact = marginals(2.0, 1.0, 5, 8)
    assert mse.shape == (2,) and variance == pytest.approx(np.mean(exact * (1 - exact)))
    rng = np.random.default_rng(2)  # the same stream, drawn in the documented order
    expected = [np.mean((monte_carlo_marginals(2.0, 1.0, 5, 8, size, rng) - exact) ** 2)
                for size in (50, 500)]
    np.testing.assert_allclose(mse, expected, rtol=1e-12)


def test_same_seed_gives_same_monte_carlo_draw():
    a = monte_carlo_marginals(2.0, 1.5, 10, 12, 500, np.random.default_rng(7))
    b = monte_carlo_marginals(2.0, 1.5, 10, 12, 500, np.random.default_rng(7))
    c = monte_carlo_marginals(2.0, 1.5, 10, 12, 500, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_monte_carlo_blocks_cover_every_sample():
    # More samples than one block holds: counts must still be integers out of n_samples.
    est = monte_carlo_marginals(1.0, 1.0, 2, 2**20, 3, np.random.default_rng(0))
    assert est.shape == (2, 2**20)
    np.testing.assert_array_equal(est * 3, np.rint(est * 3))


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(alpha=0.0), ValueError, "alpha must be > 0, got 0.0"),
        (dict(alpha=-1.0), ValueError, "alpha must be > 0, got -1.0"),
        (dict(beta=0.0), ValueError, "beta must be > 0, got 0.0"),
        (dict(beta=float("nan")), ValueError, "beta must be finite"),
        (dict(n=0), ValueError, "n must be an integer >= 1, got 0"),
        (dict(k_max=0), ValueError, "k_max must be an integer >= 1, got 0"),
        (dict(n=2.5), TypeError, "n must be an integer, got float"),
    ],
)
def test_bad_parameters_are_rejected_with_a_message(kwargs, error, message):
    args = dict(alpha=2.0, beta=1.0, n=5, k_max=4) | kwargs
    with pytest.raises(error, match=message):
        marginals(**args)
    with pytest.raises(error, match=message):
        monte_carlo_marginals(**args, n_samples=10, rng=np.random.default_rng(0))


@pytest.mark.parametrize("rng", [0, np.random.RandomState(0), None])
def test_monte_carlo_rejects_non_generator_rng(rng):
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        monte_carlo_marginals(2.0, 1.0, 5, 4, 10, rng)


def test_monte_carlo_rejects_zero_samples():
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1, got 0"):
        monte_carlo_marginals(2.0, 1.0, 5, 4, 0, np.random.default_rng(0))


def test_stream_inputs_are_checked():
    with pytest.raises(ValueError, match=r"running_sum entries must be in \[0, n - 1\]"):
        next_row_prior([0.5], 1, 0.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="rate_before must be >= 0, got -1.0"):
        next_row_prior([0.5], 2, -1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="k_max must be an integer >= 2, got 1"):
        next_row_prior([0.5, 0.1], 2, 1.0, 2.0, 1.0, k_max=1)
    with pytest.raises(ValueError, match=r"probabilities must be in \[0, 1\]"):
        RecursiveMarginals(2.0, 1.0).update([1.5])
    with pytest.raises(ValueError, match="probabilities must have k_max = 3 entries, got 2"):
        RecursiveMarginals(2.0, 1.0, 3).update([0.5, 0.5])
