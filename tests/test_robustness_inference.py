"""Bad and extreme input to the inference and evaluation modules: a clear error or a finite result.

Covers ibp_lab.inference.heldout, ibp_lab.evaluation.predictive_checks, ibp_lab.inference.split_merge,
ibp_lab.inference.streaming and ibp_lab.teaching.widgets, in the manner of test_robustness.py.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robust_inputs import anything, clear_error_or, not_a_count

from ibp_lab.inference import heldout, split_merge
from ibp_lab.evaluation import predictive_checks
from ibp_lab.teaching import widgets
from ibp_lab.inference.streaming import RecursiveIBP

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
scale = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e-12, 1e-300, 1e6, 1e7]),
    st.floats(min_value=1e-3, max_value=10.0),
)
entries = st.one_of(st.floats(-3, 3), st.sampled_from([np.nan, np.inf, 1e200]))


@st.composite
def matrices(draw, max_rows=6, max_cols=4):
    n = draw(st.integers(0, max_rows))
    d = draw(st.integers(0, max_cols))
    return np.array(draw(st.lists(st.lists(entries, min_size=d, max_size=d), min_size=n, max_size=n)),
                    dtype=float).reshape(n, d)


def finite(result):
    assert np.all(np.isfinite(np.asarray(result, dtype=float))), "a silent NaN or infinity"


@SETTINGS
@given(X=matrices(), q=st.one_of(st.integers(-1, 5), anything))
def test_gaussian_baselines_refuse_or_score_finitely(X, q):
    def run():
        top, bottom = np.array([0]), np.array([1])
        return heldout.PPCA(q).fit(X).heldout(X, top, bottom)

    clear_error_or(lambda r: finite(r.log_density), run, names=('X', 'n_components'))
    clear_error_or(lambda r: finite(r.log_density),
                   lambda: heldout.FullGaussian().fit(X).heldout(X, np.array([0]), np.array([1])),
                   names=('X', 'n_components'))


@SETTINGS
@given(X=matrices(max_cols=3), sigma_x=scale, p=st.floats(allow_nan=True, allow_infinity=True))
def test_finite_feature_heldout_refuses_or_is_finite(X, sigma_x, p):
    D = X.shape[1] if X.ndim == 2 else 1
    clear_error_or(
        lambda r: finite(r.log_density),
        lambda: heldout.finite_feature_heldout(X, [0], [D - 1], [[p]], np.ones((1, 1, D)), sigma_x=sigma_x),
        names=('X', 'sigma_x', 'probabilities', 'observed', 'hidden'))  # hidden = [D - 1]


@SETTINGS
@given(X=matrices(), sigma_x=scale, sigma_a=scale)
def test_replicate_digits_refuses_or_is_finite(X, sigma_x, sigma_a):
    Z = np.ones((X.shape[0], 1), np.int8)
    clear_error_or(finite, lambda: predictive_checks.replicate_digits(
        X, [(Z, sigma_x, sigma_a)], np.random.default_rng(0)), names=('X', 'sigma_x', 'sigma_a'))


@SETTINGS
@given(X=matrices(max_rows=4, max_cols=2), alpha=scale, sigma_x=scale, sigma_a=scale,
       n=st.one_of(st.integers(-1, 5), not_a_count))
def test_split_merge_moves_refuse_or_return_binary_matrices(X, alpha, sigma_x, sigma_a, n):
    Z = np.ones((X.shape[0], 1), np.int8)

    def check(out):
        Z_new, stats = out
        assert set(np.unique(Z_new)) <= {0, 1} and Z_new.shape[0] == X.shape[0]
        assert all(np.isfinite(stats[k]) for k in ("proposed_splits", "proposed_merges"))

    for move in (split_merge.random_split_merge, split_merge.sequential_split_merge):
        clear_error_or(check, lambda: move(X, Z, alpha, sigma_x, sigma_a, np.random.default_rng(1), n),
                       names=('X', 'alpha', 'sigma_x', 'sigma_a', 'n', 'n_proposals'))


@SETTINGS
@given(X=matrices(max_rows=5, max_cols=3), alpha=scale, sigma_x=scale, sigma_a=scale,
       model=st.sampled_from(["linear_gaussian", "factor_analysis", "pca", 3]))
def test_streaming_refuses_or_stays_finite(X, alpha, sigma_x, sigma_a, model):
    def run():
        return RecursiveIBP(alpha=alpha, beta=1.0, sigma_x=sigma_x, sigma_a=sigma_a, model=model,
                            rng=np.random.default_rng(0)).fit(X)

    def check(fitted):
        finite(fitted.features_)
        assert np.isfinite(fitted.n_features_expected_)

    clear_error_or(check, run, names=('X', 'alpha', 'sigma_x', 'sigma_a', 'model'))


@SETTINGS
@given(grid=st.one_of(anything, st.dictionaries(st.text(max_size=3), anything, max_size=2)))
def test_explorers_refuse_bad_grids(grid):
    import matplotlib.pyplot as plt

    def render(**params):
        return plt.figure(figsize=(1, 1))

    clear_error_or(lambda e: None, lambda: widgets.static_explorer(render, grid, dpi=10),
                   names=('grid',))
    plt.close("all")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=matrices(max_rows=5, max_cols=3), k=st.one_of(st.integers(-1, 14), anything), sigma_x=scale)
def test_pymc_model_building_refuses_or_succeeds(X, k, sigma_x):
    from ibp_lab.inference import pymc_models

    clear_error_or(lambda model: None, lambda: pymc_models.build_model(X, k, sigma_x=sigma_x),
                   names=('X', 'n_features', 'k_max', 'k_plus', 'k', 'sigma_x'))


@SETTINGS
@given(X=matrices(max_rows=5, max_cols=3), p=st.floats(allow_nan=True, allow_infinity=True), sigma_x=scale)
def test_pattern_posteriors_are_distributions_or_refuse(X, p, sigma_x):
    from ibp_lab.inference import pymc_models

    D = X.shape[1]

    def check(post):
        finite(post)
        np.testing.assert_allclose(post.sum(axis=1), 1.0, rtol=1e-9)

    clear_error_or(check, lambda: pymc_models.pattern_posterior(X, [p, 0.5], np.ones((2, D)), sigma_x),
                   names=('X', 'pi', 'p', 'probabilities', 'q', 'sigma_x'))
