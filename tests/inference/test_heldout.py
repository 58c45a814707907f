"""Held-out prediction: every conditional density checked against a direct computation."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from ibp_lab.inference.heldout import (
    PPCA,
    chain_draws,
    pool_heldout,
    FullGaussian,
    HeldoutResult,
    compare_heldout,
    finite_feature_heldout,
    gaussian_conditional,
    ibp_gibbs_heldout,
    split_top_bottom,
)
from ibp_lab.models.linear_gaussian import feature_posterior
from tests.seeds import stat_rng


@pytest.fixture(scope="module")
def correlated_data():
    rng = np.random.default_rng(3)
    mixing = rng.normal(size=(6, 6))
    return rng.normal(size=(400, 6)) @ mixing + rng.normal(size=6)


def direct_conditional_logpdf(mean, cov, X, observed, hidden):
    """log p(x_h | x_o) = log p(x_o, x_h) - log p(x_o), with scipy's densities."""
    both = np.concatenate([observed, hidden])
    joint = stats.multivariate_normal(mean[both], cov[np.ix_(both, both)]).logpdf(X[:, both])
    marginal = stats.multivariate_normal(mean[observed], cov[np.ix_(observed, observed)]).logpdf(X[:, observed])
    return joint - marginal


@pytest.mark.parametrize("model", [FullGaussian(), PPCA(2), PPCA(4)], ids=["full", "ppca2", "ppca4"])
def test_gaussian_conditionals_match_scipy(correlated_data, model):
    X = correlated_data
    observed, hidden = np.array([0, 2, 4]), np.array([1, 3, 5])
    model.fit(X[:300])
    result = model.heldout(X[300:], observed, hidden)
    expected = direct_conditional_logpdf(model.mean_, model.covariance_, X[300:], observed, hidden)
    np.testing.assert_allclose(result.log_density, expected, rtol=1e-10, atol=1e-10)
    # the conditional mean is the regression of hidden on observed
    cond_mean, _ = gaussian_conditional(model.mean_, model.covariance_, X[300:], observed, hidden)
    np.testing.assert_allclose(result.mean, cond_mean)


def test_ppca_covariance_keeps_the_top_eigenvalues(correlated_data):
    X = correlated_data
    model = PPCA(2).fit(X)
    sample = np.linalg.eigvalsh(np.cov(X, rowvar=False, bias=True))[::-1]
    fitted = np.linalg.eigvalsh(model.covariance_)[::-1]
    np.testing.assert_allclose(fitted[:2], sample[:2], rtol=1e-10)
    np.testing.assert_allclose(fitted[2:], sample[2:].mean(), rtol=1e-10)


def test_split_top_bottom_of_a_digit():
    top, bottom = split_top_bottom((8, 6), n_top_rows=4)
    assert np.array_equal(np.concatenate([top, bottom]), np.arange(48))
    with pytest.raises(ValueError, match="n_top_rows"):
        split_top_bottom((8, 6), n_top_rows=8)


def brute_force_finite(x, observed, hidden, probs, A, sigma_x):
    """p(bottom | top) for one digit and one draw by listing patterns with scipy."""
    K = probs.size
    log_joint, log_top = [], []
    for pattern in itertools.product([0, 1], repeat=K):
        z = np.array(pattern, float)
        prior = np.sum(np.where(z == 1, np.log(probs), np.log1p(-probs)))
        mean = z @ A
        cov = sigma_x**2 * np.eye(x.size)
        log_top.append(prior + stats.multivariate_normal(mean[observed], cov[np.ix_(observed, observed)]).logpdf(x[observed]))
        log_joint.append(prior + stats.multivariate_normal(mean, cov).logpdf(x))
    return logsumexp(log_joint) - logsumexp(log_top)


def test_finite_feature_sum_matches_brute_force():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(2, 3, 4))  # two draws, three features, four pixels
    probs = np.array([[0.2, 0.5, 0.7], [0.6, 0.1, 0.4]])
    sx = np.array([0.5, 0.8])
    X = rng.normal(size=(5, 4))
    observed, hidden = np.array([0, 1]), np.array([2, 3])
    result = finite_feature_heldout(X, observed, hidden, probs, A, sigma_x=sx)
    for i, x in enumerate(X):
        per_draw = [brute_force_finite(x, observed, hidden, probs[s], A[s], sx[s]) for s in range(2)]
        # the mixture over draws averages densities
        assert result.log_density[i] == pytest.approx(logsumexp(per_draw) - np.log(2), abs=1e-10)


def exact_ibp_heldout(x, observed, hidden, X_train, Z, sigma_x, sigma_a, alpha, beta=1.0,
                      n_new_max=None):
    """Exact log p(bottom | top) and E[bottom | top] for one draw, enumerating the test
    digit's features and new dishes.

    The test digit is customer N + 1 of the two-parameter buffet: feature k with
    probability m_k / (beta + N), Poisson(alpha beta / (beta + N)) new dishes, summed
    to rate + 20 sqrt(rate) + 30 dishes, where the Poisson tail is below 1e-20 (no
    truncation that matters: the likelihood of k new dishes is at most that of the best
    k), or to ``n_new_max`` if given (the model whose new-dish law stops there).
    """
    A_bar, cov = feature_posterior(X_train, Z, sigma_x, sigma_a)
    P = cov / sigma_x**2
    N, K = Z.shape
    m = Z.sum(0)
    rate = alpha * beta / (beta + N)
    if n_new_max is None:
        n_new_max = int(rate + 20 * np.sqrt(rate) + 30)
    log_top, log_joint, means = [], [], []
    for pattern in itertools.product([0, 1], repeat=K):
        z = np.array(pattern, float)
        share = m / (beta + N)
        prior_z = np.sum(np.where(z == 1, np.log(share), np.log1p(-share)))
        for k in range(n_new_max + 1):
            prior = prior_z + stats.poisson(rate).logpmf(k)
            var = sigma_x**2 * (1 + z @ P @ z) + k * sigma_a**2
            mean = z @ A_bar
            log_top.append(prior + stats.norm(mean[observed], np.sqrt(var)).logpdf(x[observed]).sum())
            log_joint.append(prior + stats.norm(mean, np.sqrt(var)).logpdf(x).sum())
            means.append(mean[hidden])  # new dishes have mean-zero features
    weights = np.exp(np.array(log_top) - logsumexp(log_top))  # p(z, k | top)
    return logsumexp(log_joint) - logsumexp(log_top), weights @ np.array(means)


def _tiny_heldout_case():
    rng = np.random.default_rng(5)  # the data: fixed
    X_train = rng.normal(size=(6, 4))
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0], [1, 1]], np.int8)
    x = 3.0 * rng.normal(size=(1, 4))
    return X_train, Z, x, np.array([0, 1, 2]), np.array([3])


@pytest.mark.statistical(rate=6.8e-6)
@pytest.mark.parametrize("beta", [1.0, 2.5, 0.4])
def test_ibp_gibbs_heldout_matches_enumeration(beta):
    """The Gibbs estimate averages to the exact predictive density and mean, at any beta.

    The estimate is consistent, not unbiased (its sampler starts from no features);
    after 20 burn-in sweeps its bias must be below what 2000 replicates can detect.

    The test digit is scored 2000 times at once (rows of X_test are independent
    chains): each row's density estimate averages 300 states after 20 burn-in sweeps,
    and the rows' mean is compared with the exact density (enumerating z and the
    number of new dishes, with no truncation) within 4.5 standard errors of that mean,
    from the rows' spread; the same for the predicted mean of the hidden pixel.
    False alarm: P(|Z| > 4.5) = 6.8e-6 per comparison (a mean of 2000 independent
    replicates). The test digit lies far out (3 x the training scale), so that new
    dishes matter. The standard error is 0.015-0.026% of the density, so the prior
    of the (N + 1)-th customer is pinned down: with beta + N - 1 for beta + N in the
    share m_k / (beta + N) the exact density moves by 0.40-0.48%, in the rate
    alpha beta / (beta + N) by 0.8-1.9% (computed with a variant of
    exact_ibp_heldout), at least 15 standard errors; ignoring beta moves it 5-9%.
    """
    X_train, Z, x, observed, hidden = _tiny_heldout_case()
    draw = (Z, 0.5, 2.0, 3.0)
    exact, exact_mean = exact_ibp_heldout(x[0], observed, hidden, X_train, Z, 0.5, 2.0, 3.0,
                                          beta=beta)
    replicates = np.repeat(x, 2000, axis=0)
    result = ibp_gibbs_heldout(X_train, [draw], replicates, observed, hidden, stat_rng(100),
                               beta=beta, n_sweeps=320, burn=20)
    estimates = np.exp(result.log_density)
    se = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - np.exp(exact)) < 4.5 * se
    mean_se = result.mean.std(axis=0, ddof=1) / np.sqrt(estimates.size)
    assert np.all(np.abs(result.mean.mean(axis=0) - exact_mean) < 4.5 * mean_se)


@pytest.mark.statistical(rate=6.8e-6)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_max_new_truncates_and_renormalises_the_new_dish_law():
    """With max_new = 1 the scorer targets the model whose new-dish law stops at one dish.

    As in test_ibp_gibbs_heldout_matches_enumeration: 2000 replicate chains, 4.5 standard errors of their mean
    (false alarm 6.8e-6). The truncated model's density is 20% above the exact one here,
    thousands of standard errors; a cap that renormalised over 0..max_new + 1 and then
    clamped would land between the two.
    """
    X_train, Z, x, observed, hidden = _tiny_heldout_case()
    truncated, _ = exact_ibp_heldout(x[0], observed, hidden, X_train, Z, 0.5, 2.0, 3.0,
                                     beta=2.5, n_new_max=1)
    with pytest.warns(RuntimeWarning, match="max_new = 1"):
        result = ibp_gibbs_heldout(X_train, [(Z, 0.5, 2.0, 3.0)], np.repeat(x, 2000, axis=0),
                                   observed, hidden, stat_rng(101), beta=2.5, n_sweeps=320,
                                   burn=20, max_new=1)
    estimates = np.exp(result.log_density)
    se = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - np.exp(truncated)) < 4.5 * se


def test_ibp_gibbs_heldout_keeps_the_sweeps_after_burn():
    X_train, Z, x, observed, hidden = _tiny_heldout_case()
    # burn = n_sweeps - 1 keeps exactly the last state: its density is a single term
    result = ibp_gibbs_heldout(X_train, [(Z, 0.5, 2.0, 3.0)], x, observed, hidden,
                               np.random.default_rng(0), n_sweeps=3, burn=2)
    assert np.isfinite(result.log_density).all() and result.mean.shape == (1, hidden.size)


@pytest.mark.parametrize("beta", [2.5, 0.4])
def test_next_customer_prior_is_that_of_customer_n_plus_one(beta):
    from ibp_lab.inference.heldout import _next_customer_prior

    m, N, alpha = np.array([1.0, 4.0, 6.0]), 6, 3.0
    prior = _next_customer_prior(m, N, alpha, beta)
    share = m / (beta + N)  # P(z_k = 1) for customer N + 1
    np.testing.assert_allclose(prior.log_odds_on, np.log(share) - np.log1p(-share), rtol=1e-13)
    assert prior.new_dish_rate == pytest.approx(alpha * beta / (beta + N), rel=1e-15)


def test_max_new_is_a_cap_that_warns_when_it_cuts_mass():
    X_train, Z, x, observed, hidden = _tiny_heldout_case()
    args = (X_train, [(Z, 0.5, 2.0, 3.0)], x, observed, hidden)
    # the far-out digit needs several new dishes: a cap of 1 cuts much of their law
    with pytest.warns(RuntimeWarning, match="max_new = 1 cut off") as record:
        ibp_gibbs_heldout(*args, np.random.default_rng(0), n_sweeps=30, burn=5, max_new=1)
    assert record[0].filename == __file__  # the warning points at the caller
    # a cap far in the tail changes nothing (the same uniforms give the same states) and
    # warns of nothing; neither does the exact law. Also for the digit moved 30 times
    # further out, which takes hundreds of new dishes.
    for scale in (1.0, 30.0):
        args = (X_train, [(Z, 0.5, 2.0, 3.0)], scale * x, observed, hidden)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            capped = ibp_gibbs_heldout(*args, np.random.default_rng(0), n_sweeps=30, burn=5,
                                       max_new=2500)
            free = ibp_gibbs_heldout(*args, np.random.default_rng(0), n_sweeps=30, burn=5)
        assert np.isfinite(free.log_density).all()
        np.testing.assert_allclose(capped.log_density, free.log_density, rtol=1e-12)


def test_a_model_that_knows_the_truth_scores_better():
    rng = np.random.default_rng(6)
    K, D, N = 3, 8, 600
    A = rng.normal(0, 1.0, size=(K, D))
    pi = np.array([0.5, 0.3, 0.6])
    Z = (rng.random((N, K)) < pi).astype(float)
    X = Z @ A + rng.normal(0, 0.3, size=(N, D))
    observed, hidden = np.arange(4), np.arange(4, 8)
    truth = finite_feature_heldout(X[400:], observed, hidden, pi[None], A[None], sigma_x=0.3)
    wrong = finite_feature_heldout(X[400:], observed, hidden, pi[None], rng.normal(size=(1, K, D)), sigma_x=0.3)
    ppca = PPCA(1).fit(X[:400]).heldout(X[400:], observed, hidden)
    rows = {r["model"]: r for r in compare_heldout({"truth": truth, "wrong": wrong, "ppca": ppca},
                                                      X[400:, hidden], reference="ppca")}
    # the advantage of the truth is many standard errors of the paired difference
    assert rows["truth"]["difference"] > 5 * rows["truth"]["difference_se"]
    assert rows["wrong"]["difference"] < 0
    assert rows["truth"]["rmse"] < rows["ppca"]["rmse"] < rows["wrong"]["rmse"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: gaussian_conditional([0.0], [[1.0]], [[1.0, 2.0]], [0], [1]), "mean must have shape"),
        (lambda: gaussian_conditional([0, 0], [[1, 0], [0, 1]], [[1.0, np.nan]], [0], [1]), "X must be finite"),
        (lambda: gaussian_conditional([0, 0], [[1, 0], [0, 1]], [[1.0, 2.0]], [0], [0]), "must not overlap"),
        (lambda: gaussian_conditional([0, 0], [[-1, 0], [0, 1]], [[1.0, 2.0]], [0], [1]), "positive definite"),
        (lambda: PPCA(0), "n_components must be"),
        (lambda: PPCA(5).fit(np.ones((10, 3))), "n_components must be <"),
        (lambda: FullGaussian().heldout([[1.0, 2.0]], [0], [1]), "not fitted"),
        (lambda: finite_feature_heldout([[1.0, 2.0]], [0], [1], [[1.5]], [[[1.0, 1.0]]], sigma_x=1.0), "probabilities"),
        (lambda: finite_feature_heldout([[1.0, 2.0]], [0], [1], [[0.5]], [[[1.0, 1.0]]], sigma_x=-1.0), "sigma_x"),
        (lambda: finite_feature_heldout([[1.0, 2.0]], [0], [1], [[0.5]], [[[1.0]]], sigma_x=1.0), "features must have shape"),
        (lambda: ibp_gibbs_heldout([[1.0, 2.0]], [], [[1.0, 2.0]], [0], [1], np.random.default_rng(0)), "samples must"),
        (lambda: ibp_gibbs_heldout([[1.0, 2.0]], [([[1]], 1.0, 1.0, 1.0)], [[1.0, 2.0]], [0], [1], 3), "rng must"),
        (lambda: compare_heldout({}, np.zeros((1, 1)), reference="x"), "reference must be"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_rmse_checks_shapes():
    result = HeldoutResult(np.zeros(2), np.zeros((2, 3)))
    assert result.rmse(np.ones((2, 3))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="X_hidden must have shape"):
        result.rmse(np.ones((3, 3)))


def test_pooling_runs_equals_scoring_their_draws_together():
    """pool_heldout of one-draw scores is exactly the score of all draws at once."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(7, 4))
    probs, A = rng.random((3, 2)), rng.normal(size=(3, 2, 4))
    sx = np.array([0.5, 0.7, 0.9])
    together = finite_feature_heldout(X, [0, 1], [2, 3], probs, A, sigma_x=sx)
    apart = [finite_feature_heldout(X, [0, 1], [2, 3], probs[s:s + 1], A[s:s + 1],
                                    sigma_x=sx[s]) for s in range(3)]
    pooled = pool_heldout(apart)
    np.testing.assert_allclose(pooled.log_density, together.log_density, rtol=1e-12)
    np.testing.assert_allclose(pooled.mean, together.mean, rtol=1e-12)
    # not the mean of the log densities (the wrong pooling): that is lower
    assert np.all(np.mean([r.log_density for r in apart], axis=0) < pooled.log_density)


def test_pool_heldout_rejects_bad_input():
    one = HeldoutResult(np.zeros(2), np.zeros((2, 1)))
    other = HeldoutResult(np.zeros(3), np.zeros((3, 1)))
    with pytest.raises(TypeError, match="results must be a list"):
        pool_heldout(one)
    with pytest.raises(ValueError, match="at least one"):
        pool_heldout([])
    with pytest.raises(TypeError, match=r"results\[1\]"):
        pool_heldout([one, "two"])
    with pytest.raises(ValueError, match=r"results\[1\] scores other digits"):
        pool_heldout([one, other])


def test_chain_draws_are_the_kept_samples_with_their_hyperparameters():
    from ibp_lab.inference.chains import run_chain

    X = np.random.default_rng(0).normal(size=(12, 3))
    chain = run_chain(X, 9, np.random.default_rng(1), burn=3, thin=3)
    draws = chain_draws(chain)
    kept = chain.posterior_trace
    assert len(draws) == len(chain.samples) == 2
    for (Z, sx, sa, a), Z_kept, t in zip(draws, chain.samples, chain.sample_draws):
        assert Z is Z_kept
        step = chain.trace.sel(draw=t)
        assert (sx, sa, a) == (float(step.sigma_x), float(step.sigma_a), float(step.alpha))
    assert [d[2] for d in draws] == kept.sigma_a.values.tolist()
    with pytest.raises(TypeError, match="chain must be a ChainResult"):
        chain_draws(draws)
