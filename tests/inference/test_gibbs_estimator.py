"""Tests of ibp_lab.inference.gibbs_estimator.GibbsIBP, the collapsed Gibbs sampler as an estimator.

scikit-learn's own checks are in tests/inference/test_estimator_checks.py; here: the fit is the
chain runner's (same draws as run_chains with the same generator), features_ keeps the
features with support by its stated rule and finds planted ones, transform is the exact
conditional ownership (against enumeration of the 2^K patterns), score is
heldout.ibp_gibbs_heldout's, and the defaults behave on bundled data at both scales.
"""

import itertools
import warnings

import numpy as np
import pytest

from ibp_lab.inference import chains, heldout
from ibp_lab.inference.gibbs_estimator import GibbsIBP, _conditional_ownership
from ibp_lab.models.linear_gaussian import simulate

SMALL = dict(n_sweeps=60, burn=30, thin=3)


def planted(n=60, seed=0):
    return simulate(n, np.random.default_rng(seed), alpha=2.0, sigma_x=0.3, sigma_a=1.0, d=8)


def test_fit_runs_the_chain_runner_and_keeps_its_draws():
    X, _, _ = planted()
    model = GibbsIBP(sigma_x=0.3, learn=("alpha",), rng=3, **SMALL).fit(X)
    parent = np.random.default_rng(np.random.default_rng(3).integers(2**63, size=4))
    _, runs = chains.run_chains(X, 2, 60, parent, sigma_x=0.3, sigma_a=1.0, burn=30, thin=3,
                                moves=[chains.GibbsSweep(), chains.AlphaUpdate()])
    for mine, theirs in zip(model.chains_, runs):
        assert mine.trace.identical(theirs.trace)
    assert dict(model.inference_data_.log_likelihood.sizes) == {"chain": 2, "draw": 10, "row": 60}
    assert model.sigma_x_ == pytest.approx(0.3) and model.sigma_a_ == pytest.approx(1.0)


def test_features_are_the_planted_ones_with_support_and_ownership():
    X, Z, A = planted(n=80)
    model = GibbsIBP(sigma_x=0.3, learn=("alpha",), rng=1, n_sweeps=200, burn=100).fit(X)
    assert model.features_.shape == (model.n_features_, 8)
    assert np.all(model.feature_support_ >= 0.5)
    assert model.ownership_.shape == (80, model.n_features_)
    # every planted feature with at least 8 owners is found: a kept image correlates
    # with it above 0.9 (features of one or two rows cannot be told from noise)
    correlation = np.corrcoef(np.vstack([A, model.features_]))[:A.shape[0], A.shape[0]:]
    assert np.all(correlation.max(axis=1)[Z.sum(axis=0) >= 8] > 0.9)
    # where the draws agree on a feature (present in 90% of them), its owners are
    # (mostly) the planted owners; a feature present in half the draws (one chain of two
    # found it) has ownership_ about half, as a posterior probability should
    for j in np.flatnonzero(Z.sum(axis=0) >= 8):
        k = correlation[j].argmax()
        if model.feature_support_[k] >= 0.9:
            assert (model.ownership_[:, k].round() == Z[:, j]).mean() > 0.85


def test_transform_is_the_exact_conditional_ownership_given_the_features():
    """Against the sum over all 2^K patterns. The Gibbs average of 180 conditional
    probabilities per row: each lies in [0, 1], so its error is at most 0.5 / sqrt(ESS);
    with ESS >= 30 (the sampler mixes in a few sweeps at these settings) the error is
    below 0.1, and 0.1 is not wide: a wrong sign of the residual term moves it by ~1."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 5))
    share = np.array([0.2, 0.5, 0.7, 0.4])
    X = rng.integers(0, 2, size=(6, 4)) @ A + 0.8 * rng.normal(size=(6, 5))
    got = _conditional_ownership(X, A, share, 0.8, np.random.default_rng(0))
    patterns = np.array(list(itertools.product([0, 1], repeat=4)), dtype=float)
    log_prior = patterns @ np.log(share) + (1 - patterns) @ np.log1p(-share)
    residual = ((X[:, None, :] - (patterns @ A)[None]) ** 2).sum(axis=2)
    log_post = log_prior - residual / (2 * 0.8**2)
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    expected = (post / post.sum(axis=1, keepdims=True)) @ patterns
    np.testing.assert_allclose(got, expected, atol=0.1)
    # a row's result does not depend on the rows given with it
    np.testing.assert_array_equal(_conditional_ownership(X[2:4], A, share, 0.8,
                                                         np.random.default_rng(0)), got[2:4])


def test_score_is_the_held_out_scorer_on_the_second_half_of_each_row():
    X, _, _ = planted(n=50)
    model = GibbsIBP(sigma_x=0.3, learn=(), n_score_draws=4, rng=5, **SMALL).fit(X[:40])
    draws = [d for c in model.chains_ for d in heldout.chain_draws(c)]
    picks = np.unique(np.linspace(0, len(draws) - 1, 4).round().astype(int))
    expected = heldout.ibp_gibbs_heldout(X[:40], [draws[i] for i in picks], X[40:],
                                         np.arange(4), np.arange(4, 8), np.random.default_rng(5))
    assert model.score(X[40:]) == pytest.approx(float(expected.log_density.mean()), rel=1e-12)
    with pytest.raises(ValueError, match="at least 2 columns"):
        GibbsIBP(learn=(), **SMALL).fit(X[:, :1]).score(X[:, :1])


@pytest.mark.parametrize("learn, message", [
    (("alpha", "noise"), "learn must be a tuple of names among"),
    (3, "learn must be a tuple"),
])
def test_bad_learn_is_named_before_any_sweep(learn, message):
    with pytest.raises(ValueError, match=message):
        GibbsIBP(learn=learn).fit(np.eye(3))


def test_burn_must_leave_draws():
    with pytest.raises(ValueError, match="burn"):
        GibbsIBP(n_sweeps=10, burn=10).fit(np.eye(3))


@pytest.mark.slow  # about 10 s: two data sets, two scales
@pytest.mark.parametrize("loader", ["load_wine", "load_breast_cancer"])
def test_defaults_on_bundled_data_sets(loader):
    import sklearn.datasets

    raw = getattr(sklearn.datasets, loader)().data
    standardised = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", chains.ScaleWarning)
        model = GibbsIBP(n_sweeps=60, burn=30).fit(standardised)
    assert 1 <= model.n_features_ <= raw.shape[1]
    with pytest.warns(chains.ScaleWarning, match="standardise X"):
        with pytest.raises(ValueError, match="ran away"):
            GibbsIBP().fit(raw)
