"""Tests of ibp_lab.evaluation.summaries: label-free summaries and feature matching.

Each summary that claims to ignore feature labels is checked to be unchanged by
permuting the columns of every draw; matching is checked on problems whose answer
is known; the statistical helpers (total-variation noise, indicator ESS) against
closed forms with tolerances from their Monte Carlo error.
"""

import math
import warnings

import numpy as np
import pytest

from ibp_lab.inference import gibbs
from ibp_lab.evaluation import summaries
from ibp_lab.inference.chains import ScaleUpdate, run_chain, run_chains
from tests.seeds import stat_rng

warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")


def random_draws(n_rows=12, n_draws=6, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.random((n_rows, rng.integers(0, 7))) < 0.4).astype(np.int8) for _ in range(n_draws)
    ]


@pytest.fixture(scope="module")
def two_chains():
    X = np.random.default_rng(0).normal(size=(15, 3))
    idata, chains = run_chains(
        X, 2, 80, np.random.default_rng(1), sigma_x=0.8, sigma_a=1.0, burn=20, thin=5
    )
    return X, idata, chains


# --------------------------------------------------------------------------------------
# co-ownership
# --------------------------------------------------------------------------------------


def test_co_ownership_ignores_feature_labels():
    draws = random_draws()
    rng = np.random.default_rng(1)
    shuffled = [Z[:, rng.permutation(Z.shape[1])] for Z in draws]
    np.testing.assert_allclose(summaries.co_ownership(draws), summaries.co_ownership(shuffled))


def test_co_ownership_is_the_average_of_z_zt():
    draws = random_draws()
    expected = np.mean([Z.astype(float) @ Z.T for Z in draws], axis=0)
    result = summaries.co_ownership(draws)
    np.testing.assert_allclose(result, expected)
    np.testing.assert_allclose(result, result.T)
    # the diagonal is each row's expected number of features
    np.testing.assert_allclose(np.diag(result), np.mean([Z.sum(axis=1) for Z in draws], axis=0))


def test_co_ownership_accepts_one_matrix_and_empty_draws():
    Z = np.array([[1, 0], [1, 1]])
    np.testing.assert_allclose(summaries.co_ownership(Z), Z @ Z.T)
    np.testing.assert_allclose(summaries.co_ownership([np.zeros((3, 0))]), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "bad, message",
    [
        ([], "at least one draw"),
        ([np.ones((3, 1)), np.ones((4, 1))], "must have 3 rows"),
        ([np.full((2, 2), 2)], "only 0 and 1"),
        ("abc", "list of binary matrices"),
    ],
)
def test_co_ownership_rejects_bad_draws(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        summaries.co_ownership(bad)


# --------------------------------------------------------------------------------------
# matching
# --------------------------------------------------------------------------------------


def test_feature_correlations_match_numpy_and_handle_constant_images():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(3, 10)), rng.normal(size=(4, 10))
    expected = np.corrcoef(A, B)[:3, 3:]
    np.testing.assert_allclose(summaries.feature_correlations(A, B), expected, atol=1e-12)
    flat = summaries.feature_correlations(np.ones((1, 10)), B)
    assert np.all(flat == 0)


def test_match_features_recovers_a_permutation_despite_noise():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 40))
    perm = rng.permutation(6)
    noisy = A[perm] + 0.1 * rng.normal(size=(6, 40))
    match = summaries.match_features(A, noisy)
    np.testing.assert_array_equal(match.ref_index, np.arange(6))
    np.testing.assert_array_equal(perm[match.index], np.arange(6))
    assert match.correlation.min() > 0.95


def test_match_features_is_one_to_one_where_greedy_would_not_be():
    # Both reference features correlate best with found feature 0; the assignment must
    # still give each its own partner, maximising the total correlation.
    A_ref = np.array([[1.0, 0.0, 0.0, 0.0], [0.9, 0.3, 0.0, 0.0]])
    found = np.array([[1.0, 0.1, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    match = summaries.match_features(A_ref, found)
    assert sorted(match.index.tolist()) == [0, 1]
    corr = summaries.feature_correlations(A_ref, found)
    best_total = max(corr[0, 0] + corr[1, 1], corr[0, 1] + corr[1, 0])
    assert math.isclose(match.correlation.sum(), best_total)


def test_match_features_with_fewer_found_features_leaves_some_unmatched():
    A = np.eye(4, 6)
    match = summaries.match_features(A, A[[2]])
    assert match.ref_index.tolist() == [2] and match.index.tolist() == [0]
    assert match.matched_to(4).tolist() == [-1, -1, 0, -1]
    empty = summaries.match_features(A, np.zeros((0, 6)))
    assert empty.ref_index.size == 0 and empty.matched_to(4).tolist() == [-1] * 4


def test_reappearance_counts_draws_with_a_good_match():
    ref = np.eye(3, 8)
    draws = [np.eye(3, 8), np.eye(3, 8)[[1, 2]], np.zeros((0, 8)), -np.eye(3, 8)]
    rates = summaries.reappearance(ref, draws, threshold=0.9)
    np.testing.assert_allclose(rates, [1 / 4, 2 / 4, 2 / 4])


def test_reappearance_rejects_bad_thresholds_and_shapes():
    with pytest.raises(ValueError, match="threshold"):
        summaries.reappearance(np.eye(2, 3), [np.eye(2, 3)], threshold=1.5)
    with pytest.raises(ValueError, match="3 pixels"):
        summaries.reappearance(np.eye(2, 3), [np.eye(2, 4)])
    with pytest.raises(ValueError, match="non-empty"):
        summaries.reappearance(np.eye(2, 3), [])


def test_draw_feature_means_use_each_draws_scales():
    from ibp_lab.models.linear_gaussian import feature_posterior

    rng = np.random.default_rng(4)
    X = rng.normal(size=(10, 3))
    draws = random_draws(n_rows=10, n_draws=3, seed=4)
    sx, sa = [0.5, 0.7, 0.9], [1.0, 2.0, 3.0]
    means = summaries.draw_feature_means(X, draws, sigma_x=sx, sigma_a=sa)
    for Z, m, a, b in zip(draws, means, sx, sa):
        np.testing.assert_allclose(m, feature_posterior(X, Z, a, b)[0])
    with pytest.raises(ValueError, match="one per draw"):
        summaries.draw_feature_means(X, draws, sigma_x=[0.5, 0.7], sigma_a=1.0)
    with pytest.raises(ValueError, match="sigma_a"):
        summaries.draw_feature_means(X, draws, sigma_x=0.5, sigma_a=-1.0)


def test_chain_feature_means_follow_the_kept_draws(two_chains):
    """Each kept draw's posterior mean images, at that draw's own sigma_x and sigma_a."""
    from ibp_lab.models.linear_gaussian import feature_posterior

    X, _, chains = two_chains
    chain = chains[0]
    means = summaries.chain_feature_means(X, chain)
    assert len(means) == len(chain.samples)
    for draw, Z, m in zip(chain.sample_draws, chain.samples, means):
        row = chain.trace.sel(draw=draw)
        expected = feature_posterior(X, Z, float(row.sigma_x), float(row.sigma_a))[0]
        np.testing.assert_allclose(m, expected, rtol=1e-10, atol=1e-12)
    # the scales do move in this chain, so a mean at one fixed scale would not pass
    assert np.ptp(chain.posterior_trace.sigma_a.values) > 0


def test_chain_feature_means_use_each_draws_sigma_x():
    """A chain that samples sigma_x: every kept draw's means at that draw's own sigma_x.

    The test above runs with sigma_x fixed, so a chain_feature_means that read one draw's
    sigma_x for every draw passed it; here sigma_x moves, and the means at the first
    draw's scales are checked to differ from the right ones (so the test can fail).
    """
    from ibp_lab.inference.chains import AlphaUpdate, GibbsSweep
    from ibp_lab.models.linear_gaussian import feature_posterior

    X = np.random.default_rng(3).normal(size=(12, 3))
    chain = run_chain(X, 60, np.random.default_rng(5), sigma_x=0.8, sigma_a=1.0,
                      moves=[GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a", "sigma_x")],
                      burn=10, thin=10)
    kept = chain.posterior_trace
    assert np.ptp(kept.sigma_x.values) > 0.01  # the scales moved between kept draws
    means = summaries.chain_feature_means(X, chain)
    first_sx, first_sa = float(kept.sigma_x[0]), float(kept.sigma_a[0])
    differs = False
    for Z, m, sx, sa in zip(chain.samples, means, kept.sigma_x.values, kept.sigma_a.values):
        np.testing.assert_allclose(m, feature_posterior(X, Z, float(sx), float(sa))[0],
                                   rtol=1e-10, atol=1e-12)
        if Z.shape[1]:
            wrong = feature_posterior(X, Z, first_sx, first_sa)[0]
            differs |= not np.allclose(m, wrong, rtol=1e-6, atol=1e-9)
    assert differs  # one draw's scales for all would give other means


def test_draw_feature_means_one_scale_per_draw_each_used():
    """Changing one draw's sigma_x changes that draw's means and no other's."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(8, 2))
    draws = [(rng.random((8, 2)) < 0.5).astype(np.int8) for _ in range(3)]
    base = summaries.draw_feature_means(X, draws, sigma_x=[0.5, 0.5, 0.5], sigma_a=[1.0, 1.0, 1.0])
    moved = summaries.draw_feature_means(X, draws, sigma_x=[0.5, 0.5, 2.0], sigma_a=[1.0, 1.0, 1.0])
    assert np.array_equal(base[0], moved[0]) and np.array_equal(base[1], moved[1])
    assert not np.allclose(base[2], moved[2])
    moved_a = summaries.draw_feature_means(X, draws, sigma_x=[0.5] * 3, sigma_a=[1.0, 0.2, 1.0])
    assert np.array_equal(base[0], moved_a[0]) and not np.allclose(base[1], moved_a[1])


def test_match_features_absolute_pairs_a_feature_with_its_negative():
    A = np.random.default_rng(2).normal(size=(3, 8))
    found = np.vstack([-A[2], A[0] + 0.01, -A[1]])
    signed = summaries.match_features(A, found)
    m = summaries.match_features(A, found, absolute=True)
    assert signed.correlation.sum() < 2.5 < m.correlation.sum()  # two of three are negated
    assert m.matched_to().tolist() == [1, 2, 0] and m.n_ref == 3
    np.testing.assert_allclose(m.ref_correlation(), [1.0, 1.0, 1.0], atol=1e-4)


def test_ref_correlation_is_zero_for_unmatched_reference_features():
    A = np.eye(4, 6)
    m = summaries.match_features(A, A[[2]] + 0.01)
    corr = m.ref_correlation()
    assert corr.shape == (4,) and corr[2] > 0.99 and np.all(corr[[0, 1, 3]] == 0)
    assert m.matched_to().tolist() == [-1, -1, 0, -1]
    by_hand = summaries.FeatureMatch(m.ref_index, m.index, m.correlation)
    assert np.array_equal(by_hand.ref_correlation(4), corr)
    with pytest.raises(TypeError, match="n_ref"):
        by_hand.ref_correlation()


def test_class_ownership():
    Z = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    np.testing.assert_allclose(
        summaries.class_ownership(Z, ["a", "a", "b", "b"]), [[1.0, 0.0], [0.5, 0.5]]
    )
    with pytest.raises(ValueError, match="one class per row"):
        summaries.class_ownership(Z, [0, 1])


# --------------------------------------------------------------------------------------
# chains and diagnostics
# --------------------------------------------------------------------------------------


def test_chain_summaries_one_row_per_chain(two_chains):
    _, _, chains = two_chains
    table = summaries.chain_summaries(chains, labels=["a", "b"])
    assert list(table.index) == ["a", "b"]
    post = chains[1].trace.isel(draw=slice(20, None))
    assert table.loc["b", "K+ mean"] == pytest.approx(float(post.k_plus.mean()))
    assert table.loc["b", "log joint sd"] == pytest.approx(float(post.log_joint.std()))
    with pytest.raises(ValueError, match="name each"):
        summaries.chain_summaries(chains, labels=["only one"])
    with pytest.raises(TypeError, match="ChainResult"):
        summaries.chain_summaries([1, 2])


def test_label_free_diagnostics_agree_with_arviz(two_chains):
    import arviz as az

    _, idata, chains = two_chains
    table = summaries.label_free_diagnostics(chains)
    assert list(table.columns) == ["r_hat", "ess_bulk", "ess_tail"]
    # from the ChainResults: every post-warm-up sweep, unthinned
    values = np.stack([c.trace.log_joint.values[20:] for c in chains])
    assert table.loc["log_joint", "r_hat"] == pytest.approx(float(az.rhat(values)))
    assert table.loc["log_joint", "ess_bulk"] == pytest.approx(float(az.ess(values, method="bulk")))
    # from the InferenceData: the kept (thinned) draws
    thinned = summaries.label_free_diagnostics(idata, var_names=["k_plus"])
    assert thinned.loc["k_plus", "r_hat"] == pytest.approx(
        float(az.rhat(idata.posterior.k_plus.values.astype(float)))
    )


def test_label_free_diagnostics_of_a_fixed_quantity_is_nan():
    X = np.random.default_rng(0).normal(size=(8, 2))
    _, chains = run_chains(
        X, 2, 30, np.random.default_rng(1), sigma_x=1.0, sigma_a=1.0, burn=5,
        moves=["gibbs_sweep", ScaleUpdate("sigma_a")]  # alpha held fixed
    )
    table = summaries.label_free_diagnostics(chains)
    assert np.isnan(table.loc["alpha", "r_hat"]) and np.isfinite(table.loc["log_joint", "r_hat"])


@pytest.mark.statistical(rate=None)
def test_label_free_diagnostics_detects_chains_that_disagree():
    """Thresholds far from the spread of R-hat: on 30 fresh seeds the agreeing chains'
    R-hat stayed at or below 1.007 (limit 1.02), the disagreeing ones above 2.6 (limit 1.5)."""
    import xarray as xr

    rng = stat_rng(5)
    apart = xr.Dataset(
        {"k_plus": (("chain", "draw"), rng.normal(size=(4, 500)) + np.arange(4)[:, None] * 3)}
    )
    together = xr.Dataset({"k_plus": (("chain", "draw"), rng.normal(size=(4, 500)))})
    assert (
        summaries.label_free_diagnostics(apart, var_names=["k_plus"]).loc["k_plus", "r_hat"] > 1.5
    )
    assert (
        summaries.label_free_diagnostics(together, var_names=["k_plus"]).loc["k_plus", "r_hat"]
        < 1.02
    )


def test_label_free_diagnostics_rejects_unknown_variables(two_chains):
    _, _, chains = two_chains
    with pytest.raises(ValueError, match="not traced"):
        summaries.label_free_diagnostics(chains, var_names=["feature_3"])


# --------------------------------------------------------------------------------------
# histograms against an exact posterior
# --------------------------------------------------------------------------------------


def test_k_plus_frequencies_pool_the_tail():
    np.testing.assert_allclose(
        summaries.k_plus_frequencies([0, 2, 2, 9, 12], 3), [0.2, 0, 0.4, 0.4]
    )
    with pytest.raises(ValueError, match="whole numbers"):
        summaries.k_plus_frequencies([0.5, 1.0], 3)
    with pytest.raises(ValueError, match=">= 0"):
        summaries.k_plus_frequencies([-1, 1], 3)


def test_total_variation_properties():
    p = [0.2, 0.3, 0.5]
    assert summaries.total_variation(p, p) == 0.0
    assert summaries.total_variation([1.0], [0.0, 1.0]) == 1.0
    assert summaries.total_variation(p, [0.5, 0.5]) == summaries.total_variation([0.5, 0.5], p)
    with pytest.raises(ValueError, match="sum to 1"):
        summaries.total_variation([0.5, 0.6], p)


@pytest.mark.statistical(rate=6.3e-5)
def test_total_variation_noise_matches_the_binomial_formula():
    """Two outcomes: TV = |p_hat - p|, whose mean is E|Bin(n, p) - n p| / n.

    The exact expectation is computed from the binomial pmf; 20,000 replicates of
    TV (standard deviation about 0.6 of its mean) put the simulated mean within
    4 standard errors, about 2%, of it. False alarm 6.3e-5 (CLT over 20,000 replicates).
    """
    from scipy import stats

    n, p = 400, 0.3
    tv = summaries.total_variation_noise([p, 1 - p], n, stat_rng(6), n_rep=20_000)
    k = np.arange(n + 1)
    exact = float(np.sum(stats.binom(n, p).pmf(k) * np.abs(k - n * p)) / n)
    assert abs(tv.mean() - exact) < 4 * tv.std() / math.sqrt(tv.size)


@pytest.mark.statistical(rate=None)
def test_indicator_ess_of_independent_and_sticky_traces():
    """Limits far outside the estimates' spread: on 30 fresh seeds the independent trace's
    ESS stayed above 4300 (limit 3500) and the sticky one's below 290 (limit 600)."""
    rng = stat_rng(7)
    independent = rng.integers(0, 2, 5000)
    sticky = np.repeat(rng.integers(0, 2, 250), 20)  # each value held for 20 draws
    ess_independent = summaries.indicator_ess(independent, [0, 1])
    ess_sticky = summaries.indicator_ess(sticky, [0, 1])
    assert np.all(ess_independent > 3500)
    assert np.all(ess_sticky < 600)  # about 250 blocks of 20 draws
    assert np.isnan(summaries.indicator_ess(independent, [5])[0])


def test_count_law_moments_come_from_the_whole_law():
    # Direct computation against a law with a tail: a Poisson(2.5) truncated far out.
    from scipy import stats

    from ibp_lab.evaluation.summaries import count_law_moments

    pmf = stats.poisson.pmf(np.arange(60), 2.5)
    mean, sd = count_law_moments(pmf / pmf.sum())
    assert mean == pytest.approx(2.5, rel=1e-12) and sd == pytest.approx(np.sqrt(2.5), rel=1e-12)
    # a slice (the first six terms, as a plot shows) is refused, not summarised
    with pytest.raises(ValueError, match="pmf must sum to 1"):
        count_law_moments(pmf[:6])
    with pytest.raises(ValueError, match="non-negative probabilities"):
        count_law_moments([1.5, -0.5])
