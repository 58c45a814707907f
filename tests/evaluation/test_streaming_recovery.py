"""The recovery study (ibp_lab.evaluation.recovery): its flag, its table, its doors.

The flag is checked on hand-made cases at both edges of each condition; the table on tiny
streams (20 and 30 images, a handful of Gibbs sweeps: the runs are real but short), its
flags against its own numbers and one row against a rerun by hand; bad arguments are
refused with messages naming them.
"""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.evaluation.recovery import METHODS, is_recovered, recovery_study
from ibp_lab.evaluation.summaries import match_features

GOOD = [0.99, 0.95, 0.97, 0.93]


@pytest.mark.parametrize("correlations, n_features, expected", [
    (GOOD, 4.0, True),
    (GOOD, 3.0, True),   # within one of 4, from below
    (GOOD, 5.0, True),   # and from above
    (GOOD, 2.99, False),
    (GOOD, 5.01, False),
    ([0.99, 0.95, 0.97, 0.9], 4.0, False),   # 0.9 itself is not above 0.9
    ([0.99, 0.95, 0.97, 0.0], 4.0, False),   # a feature without a partner
    ([0.99, 0.95, 0.97, 0.901], 4.0, True),
])
def test_recovered_needs_every_feature_and_about_four(correlations, n_features, expected):
    assert is_recovered(correlations, n_features) is expected


@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_table_has_one_row_per_run_and_its_flag_agrees_with_its_numbers():
    table = recovery_study([20, 30], [0, 3], n_sweeps=3)
    assert len(table) == 2 * 2 * len(METHODS)
    assert sorted(set(table["method"])) == sorted(METHODS)
    assert set(table["n"]) == {20, 30} and set(table["seed"]) == {0, 3}
    r = table[["r_plus", "r_square", "r_triangle", "r_t"]].to_numpy()
    assert np.all((r >= -1) & (r <= 1)) and np.all(table["seconds"] > 0)
    flags = [is_recovered(row, k) for row, k in zip(r, table["n_features"])]
    assert table["recovered"].tolist() == flags


def test_correlations_are_those_of_a_rerun():
    """A row can be rerun alone: data set s is default_rng(s), the stream's rng is 0."""
    from ibp_lab.inference.streaming import RecursiveIBP

    row = recovery_study([30], [5], methods=["single"]).iloc[0]
    X, _, A = simulate_four_feature_data(np.random.default_rng(5), n=30)
    fit = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single", rng=0).fit(X)
    expected = match_features(A, fit.features_).ref_correlation()
    got = row[["r_plus", "r_square", "r_triangle", "r_t"]].to_numpy(dtype=float)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert row["n_features"] == pytest.approx(fit.n_features_expected_)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_values": []}, ValueError, "n_values must not be empty"),
    ({"n_values": [0]}, ValueError, "n_values must be an integer >= 1"),
    ({"n_values": [20, 20]}, ValueError, "n_values must not repeat"),
    ({"n_values": 20}, TypeError, "n_values must be a sequence"),
    ({"seeds": [-1]}, ValueError, "seeds must be an integer >= 0"),
    ({"seeds": "01"}, TypeError, "seeds must be a sequence"),
    ({"methods": ["gibs"]}, ValueError, "methods must be among"),
    ({"methods": []}, ValueError, "methods must not be empty"),
    ({"n_sweeps": 0}, ValueError, "n_sweeps must be an integer >= 1"),
    ({"buffer_size": 1}, ValueError, "buffer_size must be an integer >= 2"),
    ({"sigma_x": -0.5}, ValueError, "sigma_x must be > 0"),
    ({"p_on": 1.5}, ValueError, "p_on must be <= 1"),
    ({"alpha": "1"}, TypeError, "alpha must be a real number"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, message):
    arguments = {"n_values": [20], "seeds": [0], **kwargs}
    with pytest.raises(error, match=message):
        recovery_study(arguments.pop("n_values"), arguments.pop("seeds"), **arguments)
