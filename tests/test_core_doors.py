"""Regression tests for the argument doors of the core modules (issue 12, "Reliability").

Each test pins a refusal that used to be a crash, a silent NaN/inf, an accepted piece
of junk, or a message that did not say which argument to change.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from ibp_lab import datasets
from ibp_lab.models import prior, recursive
from ibp_lab._checks import NotFittedError, check_size
from ibp_lab.inference.streaming import RecursiveIBP
from ibp_lab.evaluation.summaries import match_features
from ibp_lab.teaching.widgets import live_explorer, static_explorer


def _names(name: str) -> str:
    """A regex matching ``name`` as a word (not inside ``sigma_n`` or ``n_draws``)."""
    return rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9])"


# ---------------------------------------------------------------------------------------
# size limits name the arguments that set the size
# ---------------------------------------------------------------------------------------

def test_check_size_names_one_or_several_arguments():
    with pytest.raises(ValueError, match=r"\(set by n\), more than"):
        check_size("X", 1e12, names="n")
    with pytest.raises(ValueError, match=r"\(set by n, k_max and n_samples\)"):
        check_size("work", 1e12, names=("n", "k_max", "n_samples"))
    check_size("X", 10.0, names="n")  # below the limit: nothing


@pytest.mark.parametrize("call, names", [
    (lambda: prior.sample_stick_breaking(1.0, 10**9, np.random.default_rng(0), truncation=10**4),
     ("n", "truncation")),
    (lambda: prior.sample_finite_beta_bernoulli(1.0, 10**9, 10**4, np.random.default_rng(0)),
     ("n", "n_features")),
    (lambda: prior.simulate_feature_counts(1.0, 100, 10**9, np.random.default_rng(0)),
     ("n", "n_draws")),
    (lambda: recursive.marginals(1.0, 1.0, 10**6, 10**6), ("n", "k_max")),
    (lambda: recursive.monte_carlo_marginals(1.0, 1.0, 10, 10, 10**12, np.random.default_rng(0)),
     ("n_samples",)),
    (lambda: recursive.monte_carlo_mse(1.0, 1.0, 10**6, 10**6, [10], np.random.default_rng(0)),
     ("n", "k_max")),
    (lambda: recursive.monte_carlo_mse(1.0, 1.0, 10, 10, [10, 10**12], np.random.default_rng(0)),
     ("sample_sizes",)),
    (lambda: datasets.simulate_four_feature_data(np.random.default_rng(0), n=10**12), ("n",)),
])
def test_size_refusals_name_the_arguments(call, names):
    with pytest.raises(ValueError) as info:
        call()
    for name in names:
        assert re.search(_names(name), str(info.value)), (name, str(info.value))


def test_monte_carlo_mse_does_not_name_an_argument_it_does_not_have():
    with pytest.raises(ValueError) as info:
        recursive.monte_carlo_mse(1.0, 1.0, 10, 10, [10**12], np.random.default_rng(0))
    assert "n_samples" not in str(info.value)


def test_valid_results_are_unchanged():
    np.testing.assert_allclose(recursive.marginals(2.0, 1.0, 3, 4)[0, 0], 1 - np.exp(-2.0))
    mse, variance = recursive.monte_carlo_mse(2.0, 1.0, 5, 6, [100, 1000], np.random.default_rng(1))
    assert mse.shape == (2,) and 0 < variance < 0.25


# ---------------------------------------------------------------------------------------
# recursive.monte_carlo_agreement
# ---------------------------------------------------------------------------------------

def test_agreement_takes_vectors_and_tables_of_one_shape():
    exact = recursive.marginals(2.0, 1.0, 4, 5)
    assert recursive.monte_carlo_agreement(exact, exact, 100).ok
    assert recursive.monte_carlo_agreement(exact.ravel(), exact.ravel(), 100).ok
    with pytest.raises(ValueError, match="exact must be 1-D or 2-D"):
        recursive.monte_carlo_agreement(exact[None], exact, 100)
    with pytest.raises(ValueError, match="estimate must be 1-D or 2-D"):
        recursive.monte_carlo_agreement(exact, exact[None], 100)
    with pytest.raises(ValueError, match="same shape"):
        recursive.monte_carlo_agreement(exact, exact.T.copy().reshape(5, 4), 100)


# ---------------------------------------------------------------------------------------
# prior.stick_truncation_level: tol is an expected count, not a probability
# ---------------------------------------------------------------------------------------

def test_truncation_tolerance_above_one_is_an_expected_count():
    assert prior.stick_truncation_level(2.0, 5, tol=1.5) > 0
    assert prior.stick_truncation_level(2.0, 5, tol=10.0) == 0  # n * alpha = 10 lost at K = 0
    with pytest.raises(ValueError, match="tol"):
        prior.stick_truncation_level(2.0, 5, tol=0.0)


# ---------------------------------------------------------------------------------------
# streaming
# ---------------------------------------------------------------------------------------

def test_unfitted_model_raises_not_fitted_error():
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0)
    for call in (model.next_prior, lambda: model.predictive_logpdf(np.zeros((1, 3)))):
        with pytest.raises(ValueError, match="call fit"):
            call()
        with pytest.raises(NotFittedError):
            call()
    assert not hasattr(model, "features_")  # still an AttributeError for fitted attributes


def test_predictive_logpdf_refuses_data_whose_density_overflows():
    X = np.random.default_rng(0).normal(size=(20, 3))
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                         rng=np.random.default_rng(1)).fit(X)
    with pytest.raises(ValueError, match="X_new"):
        model.predictive_logpdf(X[:2] * 1e200 + 1e200)
    assert np.all(np.isfinite(model.predictive_logpdf(X[:2] * 1e50, n_draws=5)))


@pytest.mark.parametrize("learned", [np.eye(3)[:0], np.eye(3)[:1], np.eye(3)[0]])
def test_unmatched_true_features_get_zero_not_nan(learned):
    # the one match_features (summaries): reference features first
    found = match_features(np.eye(3), np.atleast_2d(learned))
    correlation, match = found.ref_correlation(), found.matched_to()
    assert np.all(np.isfinite(correlation))
    assert np.all(correlation[match == -1] == 0.0)
    assert np.sum(match >= 0) == np.atleast_2d(learned).shape[0]


# ---------------------------------------------------------------------------------------
# widgets: a render that returns no figure is named
# ---------------------------------------------------------------------------------------

def test_explorers_name_render_when_it_returns_no_figure():
    with pytest.raises(TypeError, match=r"render must return a matplotlib Figure, got NoneType"):
        static_explorer(lambda a: None, {"a": [1, 2]})
    pytest.importorskip("ipywidgets")
    with pytest.raises(TypeError, match=r"render must return a matplotlib Figure"):
        live_explorer(lambda a: "figure", {"a": [1, 2]})
