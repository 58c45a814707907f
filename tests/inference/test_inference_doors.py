"""The doors of the inference modules name the argument at fault (issue 12, "Reliability").

Each test pins one refusal that used to name another argument (``B`` for ``A``, ``X``
for ``X_test``), crash, hang or return nonsense, and checks that a valid call nearby
still gives the same answer as before.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from ibp_lab.inference import exact, gibbs, heldout, pymc_models
from ibp_lab.evaluation import summaries
from ibp_lab.inference.chains import ScaleUpdate

X4 = np.random.default_rng(1).normal(size=(20, 4))
Z4 = (np.random.default_rng(2).random((20, 2)) < 0.5).astype(np.int8)


# --------------------------------------------------------------------------------------
# summaries
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.full((2, 3), np.nan), "abc", np.ones(3), np.eye(2, 4)])
def test_match_features_names_its_second_argument_A(bad):
    with pytest.raises((ValueError, TypeError), match=r"^A "):
        summaries.match_features(np.eye(2, 3), bad)


def test_match_features_names_A_ref():
    with pytest.raises(TypeError, match=r"^A_ref "):
        summaries.match_features(np.eye(2, 3) + 0j, np.eye(2, 3))


def test_match_features_unchanged_at_valid_input():
    m = summaries.match_features(np.eye(3), np.array([[0.0, 0.1, 0.9], [1.0, 0.0, 0.1]]))
    assert m.ref_index.tolist() == [0, 2] and m.index.tolist() == [1, 0]


@pytest.mark.parametrize("bad", [None, "chain", {}, 3])
def test_chain_feature_means_names_chain(bad):
    with pytest.raises(TypeError, match=r"^chain must be"):
        summaries.chain_feature_means(X4, bad)


def test_k_plus_frequencies_refuses_counts_beyond_an_exact_integer():
    with pytest.raises(ValueError, match="k_plus"):
        summaries.k_plus_frequencies([1e300, 1.0], 3)


def test_indicator_ess_refuses_nan_categories():
    trace = np.random.default_rng(0).integers(0, 3, 200)
    with pytest.raises(ValueError, match="categories"):
        summaries.indicator_ess(trace, [np.nan, 1, 2])


# --------------------------------------------------------------------------------------
# heldout
# --------------------------------------------------------------------------------------


def _gibbs_heldout(**change):
    args = dict(X_train=X4, samples=[(Z4, 0.5, 1.0, 1.0)], X_test=X4[:2], observed=[0, 1],
                hidden=[2, 3], rng=np.random.default_rng(0), n_sweeps=3, burn=1, max_new=2)
    return heldout.ibp_gibbs_heldout(**{**args, **change})


@pytest.mark.parametrize("bad", [X4[:2] * np.nan, "abc", X4[0], X4[:2] * 1e200 + 1e200])
def test_ibp_gibbs_heldout_names_X_test(bad):
    with pytest.raises((ValueError, TypeError), match=r"^X_test "):
        _gibbs_heldout(X_test=bad)


def test_ibp_gibbs_heldout_names_X_train_when_too_large_for_the_draws():
    with pytest.raises(ValueError, match=r"^X_train is too large for sigma_x = 0.5"):
        _gibbs_heldout(X_train=X4 * 1e200 + 1e200)


def test_ibp_gibbs_heldout_names_n_sweeps_when_too_many_to_keep():
    with pytest.raises(ValueError, match="n_sweeps"):
        _gibbs_heldout(n_sweeps=10**12)


def test_gaussian_conditional_refuses_an_asymmetric_cov():
    with pytest.raises(ValueError, match="cov must be symmetric"):
        heldout.gaussian_conditional(np.zeros(4), np.triu(np.ones((4, 4))) * 2, X4[:3],
                                     [0, 1], [2, 3])


def test_gaussian_conditional_accepts_rounding_level_asymmetry():
    W = np.random.default_rng(3).normal(size=(4, 2))
    cov = W @ W.T + np.eye(4)
    cov[0, 1] += 1e-15
    mean, c = heldout.gaussian_conditional(np.zeros(4), cov, X4[:3], [0, 1], [2, 3])
    assert mean.shape == (3, 2) and np.allclose(c, c.T)


def test_finite_feature_heldout_refuses_2d_features_and_no_draws():
    with pytest.raises(ValueError, match="features must be a 3-D"):
        heldout.finite_feature_heldout(X4[:3], [0, 1], [2, 3], [[0.5, 0.3]], np.ones((2, 4)), sigma_x=0.5)
    with pytest.raises(ValueError, match="^probabilities"):
        heldout.finite_feature_heldout(X4[:3], [0, 1], [2, 3], np.zeros((0, 2)),
                                       np.ones((1, 2, 4)), sigma_x=0.5)


def test_compare_heldout_refuses_no_results():
    with pytest.raises(ValueError, match="^results must hold at least one model"):
        heldout.compare_heldout({}, np.zeros((3, 2)), reference="b")


@pytest.mark.parametrize("bad", [None, 8])
def test_split_top_bottom_refuses_a_shape_without_length(bad):
    with pytest.raises(TypeError, match="^shape must be a pair"):
        heldout.split_top_bottom(bad)


# --------------------------------------------------------------------------------------
# pymc_models
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda: pymc_models.pattern_matrix(10**12),
    lambda: pymc_models.build_model(X4, 10**12, sigma_x=0.5),
    lambda: pymc_models.initial_point_from_data(X4, 10**12, np.random.default_rng(0)),
    lambda: pymc_models.time_gradient(X4, 10**12),
])
def test_a_huge_truncation_is_refused_at_once(call):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="n_features must be <= 12"):
        call()
    assert time.perf_counter() - t0 < 1.0


def test_initial_point_refuses_data_whose_start_scales_overflow():
    with pytest.raises(ValueError, match=r"^X is too large to start from"):
        pymc_models.initial_point_from_data(X4 * 1e200 + 1e200, 2, np.random.default_rng(0))


def test_initial_point_unchanged_at_valid_input():
    X = np.arange(12.0).reshape(4, 3)
    start = pymc_models.initial_point_from_data(X, 2, np.random.default_rng(0), sigma_x=None)
    assert start["sigma_A"] == pytest.approx(float(start["A"].std()), rel=1e-12)
    assert start["sigma_X"] == pytest.approx(0.5 * float(X.std()), rel=1e-12)


def test_pattern_posterior_sums_to_one_at_a_tiny_noise_level():
    p = pymc_models.pattern_posterior(X4[:3, :3], [0.5, 0.3], np.ones((2, 3)), 1e-100)
    assert np.allclose(p.sum(axis=1), 1.0)


def test_pattern_log_posteriors_unchanged_at_valid_input():
    from scipy.special import logsumexp

    X, pi, A = X4[:5, :3], np.array([0.6, 0.3]), np.eye(2, 3)
    lp = pymc_models.pattern_log_posteriors(X, pi, A, 0.7)
    joint = pymc_models._pattern_log_joint(X, *pymc_models._logs_of_pi(pi), A, 0.7)
    assert np.allclose(joint - logsumexp(joint, axis=1, keepdims=True), lp, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# exact, gibbs
# --------------------------------------------------------------------------------------


def test_enumerate_classes_names_n_rows():
    with pytest.raises(ValueError, match="^n_rows must be at most"):
        next(exact.enumerate_classes(10**12, 2))


def test_scale_update_refuses_zero_steps():
    """Zero steps would report a NaN (0/0) acceptance for a scale that never moved; a scale
    held fixed has no ScaleUpdate."""
    with pytest.raises(ValueError, match="^n_steps must be an integer >= 1"):
        ScaleUpdate("sigma_a", n_steps=0)
