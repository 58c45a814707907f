"""Posterior predictive replicates have the predictive mean and variance of the model."""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab.models.linear_gaussian import feature_posterior
from ibp_lab.evaluation.predictive_checks import ink_statistics, replicate_digits
from tests.seeds import stat_rng


@pytest.mark.statistical(rate=2.4e-4)
def test_replicates_have_the_posterior_predictive_moments():
    """Each replicated entry is Normal(z Abar, sigma_x^2 (1 + z P z^T)).

    With 4000 replicates, means are checked within 4.5 standard errors and
    variances within 4.5 standard errors of a sample variance, sqrt(2/n) var.
    False alarm: 18 means + 18 variances at 4.5 SE, 36 * 6.8e-6 = 2.4e-4 (the
    sample variance of 4000 normal draws is chi-square with skewness 0.045: the
    normal tail is accurate at 4.5 SE).
    """
    rng = np.random.default_rng(7)
    X = rng.normal(size=(6, 3))
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0], [1, 1]], np.int8)
    sx, sa, n_rep = 0.6, 1.2, 4000
    reps = replicate_digits(X, [(Z, sx, sa)] * n_rep, stat_rng(8))
    mean, cov = feature_posterior(X, Z, sx, sa)
    expected_mean = Z @ mean
    expected_var = sx**2 + np.einsum("nk,kl,nl->n", Z, cov, Z)[:, None] * np.ones(3)
    assert np.all(np.abs(reps.mean(0) - expected_mean) < 4.5 * np.sqrt(expected_var / n_rep))
    assert np.all(np.abs(reps.var(0) - expected_var) < 4.5 * expected_var * np.sqrt(2 / n_rep))


@pytest.mark.statistical(rate=1e-5)
def test_no_features_gives_pure_noise():
    """False alarm: one sample sd of 200 normal draws at 4.5 SE, about 1e-5."""
    X = np.zeros((50, 4))
    reps = replicate_digits(X, [(np.zeros((50, 0)), 0.3, 1.0)], stat_rng(0))
    assert reps.shape == (1, 50, 4)
    assert abs(reps.std() - 0.3) < 4.5 * 0.3 / np.sqrt(2 * 200)


def test_ink_statistics_counts_blank_and_negative_ink():
    ink = np.array([[[0.0, 0.01, 0.5, -0.1]], [[1.0, 1.0, 1.0, 1.0]]])
    stats = ink_statistics(ink)
    np.testing.assert_allclose(stats["share_blank"], [0.75, 0.0])
    np.testing.assert_allclose(stats["share_negative"], [0.25, 0.0])
    # per replicate and digit, on two digits that differ, so that each one's share is seen
    two = ink_statistics(np.array([[[0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]]))
    np.testing.assert_allclose(two["digit_share_blank"], [[0.5, 0.25]])
    np.testing.assert_allclose(stats["digit_share_blank"], [[0.75], [0.0]])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: replicate_digits(np.zeros((2, 2)), [], np.random.default_rng(0)), "samples must"),
        (lambda: replicate_digits(np.zeros((2, 2)), [(np.ones((3, 1)), 1.0, 1.0)], np.random.default_rng(0)), "Z must have 2 rows"),
        (lambda: replicate_digits(np.zeros((2, 2)), [(np.ones((2, 1)), -1.0, 1.0)], np.random.default_rng(0)), "sigma_x must be > 0"),
        (lambda: ink_statistics([1.0, 2.0]), "ink must be"),
        (lambda: ink_statistics([[np.nan]]), "ink must be"),
    ],
)
def test_bad_input_is_rejected(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
