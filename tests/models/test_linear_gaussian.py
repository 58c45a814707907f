"""Tests of ibp_lab.models.linear_gaussian: the collapsed likelihood, the feature posterior, simulation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from ibp_lab.models.linear_gaussian import collapsed_loglik, feature_posterior, simulate
from tests.seeds import stat_rng


def direct_loglik(X, Z, sigma_x, sigma_a):
    """Sum over dimensions of the N x N Gaussian density: the definition of the model."""
    Z = np.asarray(Z, float)
    cov = sigma_a**2 * Z @ Z.T + sigma_x**2 * np.eye(X.shape[0])
    return sum(multivariate_normal(np.zeros(X.shape[0]), cov).logpdf(X[:, d])
               for d in range(X.shape[1]))


RNG = np.random.default_rng(11)
X6 = RNG.normal(0, 1.5, size=(6, 4))
CASES = {
    "no features": np.zeros((6, 0), np.int8),
    "one feature owned by all": np.ones((6, 1), np.int8),
    "random": (RNG.random((6, 3)) < 0.5).astype(np.int8),
    "duplicate columns": np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1],
                                   [0, 0, 0], [1, 1, 0], [0, 0, 1]]),
    "more features than rows": (RNG.random((6, 9)) < 0.4).astype(np.int8),
    "with an empty column": np.array([[1, 0], [1, 0], [0, 0], [1, 0], [0, 0], [1, 0]]),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("sigma_x, sigma_a", [(0.5, 1.0), (1.3, 0.2)])
def test_collapsed_loglik_matches_gaussian_density(name, sigma_x, sigma_a):
    Z = CASES[name]
    assert collapsed_loglik(X6, Z, sigma_x, sigma_a) == pytest.approx(
        direct_loglik(X6, Z, sigma_x, sigma_a), rel=1e-10, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 5), st.integers(0, 6), st.integers(1, 3))
def test_collapsed_loglik_ignores_column_order_and_empty_columns(seed, n, k, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    value = collapsed_loglik(X, Z, 0.7, 1.1)
    shuffled = Z[:, rng.permutation(k)]
    padded = np.hstack([shuffled, np.zeros((n, 2), np.int8)])
    assert collapsed_loglik(X, padded, 0.7, 1.1) == pytest.approx(value, rel=1e-10, abs=1e-9)
    assert value == pytest.approx(direct_loglik(X, Z, 0.7, 1.1), rel=1e-9, abs=1e-8)


@pytest.mark.parametrize("name", ["one feature owned by all", "random", "duplicate columns",
                                  "more features than rows"])
def test_feature_posterior_matches_gaussian_conditioning(name):
    """Condition the joint Gaussian of (a_d, x_d) directly: an independent derivation."""
    Z = CASES[name].astype(float)
    sigma_x, sigma_a = 0.6, 1.4
    cov_x = sigma_a**2 * Z @ Z.T + sigma_x**2 * np.eye(len(Z))
    gain = sigma_a**2 * Z.T @ np.linalg.inv(cov_x)  # Cov(a, x) Cov(x)^-1
    expected_mean = gain @ X6
    expected_cov = sigma_a**2 * np.eye(Z.shape[1]) - gain @ (sigma_a**2 * Z)
    mean, cov = feature_posterior(X6, Z, sigma_x, sigma_a)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(cov, expected_cov, rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(cov, cov.T)


def test_feature_posterior_without_features_is_empty():
    mean, cov = feature_posterior(X6, np.zeros((6, 0)), 0.5, 1.0)
    assert mean.shape == (0, 4) and cov.shape == (0, 0)


@pytest.mark.statistical(rate=1e-6)
def test_simulate_draws_the_model():
    """False alarm: two sample sds at 5 SE, 2 * 5.7e-7 ~ 1e-6 (normal approximation)."""
    X, Z, A = simulate(4000, stat_rng(5), alpha=3.0, sigma_x=0.5, sigma_a=2.0, d=3)
    assert X.shape == (4000, 3) and Z.dtype == np.int8 and A.shape == (Z.shape[1], 3)
    noise = X - Z @ A
    # 12,000 noise draws: the sample sd of a Normal(0, 0.5^2) has standard error
    # 0.5 / sqrt(2 * 12000) = 0.0032; 5 standard errors is 0.016.
    assert noise.std() == pytest.approx(0.5, abs=0.016)
    # the feature images are Normal(0, 2^2): with n = A.size entries the sample sd
    # has standard error 2 / sqrt(2 n)
    assert A.std() == pytest.approx(2.0, abs=5 * 2.0 / np.sqrt(2 * A.size))
    assert bool(Z.any(axis=0).all())


def test_simulate_same_seed_same_data():
    options = {"alpha": 2.0, "sigma_x": 0.3, "sigma_a": 1.0, "d": 5, "beta": 2.0}
    first = simulate(20, np.random.default_rng(3), **options)
    second = simulate(20, np.random.default_rng(3), **options)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("function", [collapsed_loglik, feature_posterior])
@pytest.mark.parametrize(
    "args, error, message",
    [
        ((X6, CASES["random"], -0.5, 1.0), ValueError, "sigma_x must be > 0"),
        ((X6, CASES["random"], 0.5, 0.0), ValueError, "sigma_a must be > 0"),
        ((X6, CASES["random"] * 2, 0.5, 1.0), ValueError, "Z must contain only 0 and 1"),
        ((X6, CASES["random"][:4], 0.5, 1.0), ValueError, "Z must have 6 rows"),
        ((np.where(X6 > 1, np.nan, X6), CASES["random"], 0.5, 1.0), ValueError, "X must be finite"),
        ((X6[0], CASES["random"], 0.5, 1.0), ValueError, "X must be 2-D"),
        ((X6, CASES["random"], "0.5", 1.0), TypeError, "sigma_x must be a real number"),
    ],
)
def test_bad_inputs_are_reported_by_name(function, args, error, message):
    with pytest.raises(error, match=message):
        function(*args)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"alpha": -1.0}, ValueError, "alpha must be > 0"),
        ({"sigma_x": 0.0}, ValueError, "sigma_x must be > 0"),
        ({"d": 0}, ValueError, "d must be an integer >= 1"),
        ({"rng": 42}, TypeError, "rng must be a numpy.random.Generator"),
    ],
)
def test_simulate_rejects_bad_inputs(kwargs, error, message):
    options = {"rng": np.random.default_rng(0), "alpha": 1.0, "sigma_x": 0.5, "sigma_a": 1.0,
               "d": 2}
    options.update(kwargs)
    rng = options.pop("rng")
    with pytest.raises(error, match=message):
        simulate(5, rng, **options)
