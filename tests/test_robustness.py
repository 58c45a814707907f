"""Students will feed anything to ibp_lab: bad and extreme input never crashes deep inside NumPy.

Property-based (hypothesis): for every public function, arbitrary numbers,
shapes and types give either a clear ``ValueError``/``TypeError`` naming the
argument, or a finite result of the promised shape. Never a NaN, an
``IndexError`` from deep inside, or a hang (each example is bounded in size; there is
no deadline, which would flake on a loaded machine).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibp_lab import datasets
from ibp_lab.models import prior, recursive
from robust_inputs import anything, clear_error_or

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scale = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=50.0),
    st.integers(-3, 20),
)


def finite_array(shape_ok=lambda s: True):
    def check(result):
        arr = np.asarray(result, dtype=float)
        assert np.all(np.isfinite(arr)), "a silent NaN or infinity"
        assert shape_ok(arr.shape)

    return check


@SETTINGS
@given(alpha=scale, n=st.one_of(st.integers(-5, 40), st.floats(), st.text(max_size=3), st.none()), beta=scale)
def test_sample_ibp_never_crashes(alpha, n, beta):
    def check(Z):
        assert Z.dtype == np.int8 and Z.ndim == 2 and Z.shape[0] == n
        assert set(np.unique(Z)) <= {0, 1}

    clear_error_or(check, lambda: prior.sample_ibp(alpha, n, np.random.default_rng(0), beta=beta),
                   names=('alpha', 'n', 'n_proposals', 'beta'))


@SETTINGS
@given(alpha=scale, beta=scale, rows=st.integers(0, 5), cols=st.integers(0, 6), data=st.data())
def test_log_prior_is_finite_or_refuses(alpha, beta, rows, cols, data):
    values = data.draw(st.sampled_from([np.array([0, 1]), np.array([0, 1, 2]), np.array([0.0, 0.5, 1.0, np.nan])]))
    Z = np.random.default_rng(rows * 7 + cols).choice(values, size=(rows, cols))
    clear_error_or(finite_array(lambda s: s == ()), lambda: prior.log_prior(Z, alpha, beta=beta),
                   names=('alpha', 'beta', 'Z'))


@SETTINGS
@given(Z=anything)
def test_left_ordered_rejects_non_matrices(Z):
    def left_ordered_binary(out):
        out = np.asarray(out)
        if out.ndim != 2 or not np.isin(out, (0, 1)).all():
            return f"not a binary matrix: {out!r:.80}"
        if not np.array_equal(prior.left_ordered(out), out):
            return "not in left-ordered form (ordering it again changes it)"
        return None

    # an accepted input must come back as a binary matrix already in left-ordered form
    clear_error_or(left_ordered_binary, lambda: prior.left_ordered(Z), names=('Z',))


@SETTINGS
@given(alpha=scale, n=st.integers(-2, 10**6), beta=scale)
def test_expected_num_features_is_finite(alpha, n, beta):
    clear_error_or(finite_array(), lambda: prior.expected_num_features(alpha, n, beta=beta),
                   names=('alpha', 'n', 'n_proposals', 'beta'))


@SETTINGS
@given(alpha=scale, n=st.integers(-2, 30), truncation=st.integers(-2, 200))
def test_stick_breaking_probabilities_stay_in_unit_interval(alpha, n, truncation):
    def check(out):
        Z, pi = out
        assert np.all((pi >= 0) & (pi <= 1)) and Z.shape == (n, truncation)

    clear_error_or(check, lambda: prior.sample_stick_breaking(alpha, n, np.random.default_rng(1), truncation=truncation),
                   names=('alpha', 'n', 'n_proposals', 'truncation', 'Z'))


@SETTINGS
@given(alpha=scale, n=st.integers(-2, 200), k=st.integers(-2, 300), beta=scale)
def test_finite_k_plus_pmf_is_a_distribution(alpha, n, k, beta):
    def check(p):
        assert np.all(np.isfinite(p)) and np.all(p >= 0) and math.isclose(p.sum(), 1.0, rel_tol=1e-9)

    clear_error_or(check, lambda: prior.finite_k_plus_pmf(alpha, n, k, beta=beta),
                   names=('alpha', 'n', 'n_proposals', 'n_features', 'k_max', 'k_plus', 'k', 'beta'))


@SETTINGS
@given(alpha=scale, n=st.integers(-2, 10**5), tol=scale)
def test_truncation_level_is_a_count(alpha, n, tol):
    clear_error_or(lambda k: isinstance(k, int) and k >= 0, lambda: prior.stick_truncation_level(alpha, n, tol=tol),
                   names=('alpha', 'n', 'n_proposals', 'tol'))


@SETTINGS
@given(alpha=scale, beta=scale, n=st.integers(-2, 60), k_max=st.integers(-2, 120))
def test_recursive_marginals_are_probabilities(alpha, beta, n, k_max):
    def check(table):
        assert table.shape == (n, k_max)
        assert np.all(np.isfinite(table)) and np.all((table >= 0) & (table <= 1))

    clear_error_or(check, lambda: recursive.marginals(alpha, beta, n, k_max),
                   names=('alpha', 'beta', 'n', 'n_proposals', 'k_max'))


@pytest.mark.parametrize("alpha", [1e-8, 1e3])
def test_extreme_alpha_gives_finite_results(alpha):
    table = recursive.marginals(alpha, 1.0, 5, 40)
    assert np.all(np.isfinite(table))
    assert np.isfinite(prior.log_prior(np.ones((3, 2), np.int8), alpha))


@SETTINGS
@given(split=anything)
def test_load_optdigits_rejects_unknown_splits(split):
    with pytest.raises((ValueError, TypeError), match="split"):
        datasets.load_optdigits(split)


@SETTINGS
@given(n=st.one_of(st.integers(-3, 300), anything), sigma_x=scale, p_on=scale)
def test_simulate_four_feature_data_is_finite_or_refuses(n, sigma_x, p_on):
    clear_error_or(
        lambda out: finite_array()(out[0]),
        lambda: datasets.simulate_four_feature_data(np.random.default_rng(0), n=n, sigma_x=sigma_x, p_on=p_on),
        names=('n', 'n_proposals', 'sigma_x', 'p_on'))


def test_corrupt_or_missing_data_file_is_reported(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(datasets, "_data_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match="optdigits.tes.gz is missing"):
        datasets.load_optdigits("test")
    (tmp_path / "optdigits.tes.gz").write_bytes(gzip.compress(b"1,2,3\n"))
    with pytest.raises(ValueError, match="optdigits.tes.gz is corrupt: SHA-256"):
        datasets.load_optdigits("test")
    (tmp_path / "optdigits.tes.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="not a valid gzip file"):
        datasets.load_optdigits("test")
