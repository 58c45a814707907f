"""compare_methods: paired differences and the Monte Carlo share of their error."""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab.evaluation import comparisons
from ibp_lab.evaluation.comparisons import compare_methods


def test_rows_by_direct_computation():
    scores = {"ref": [(1.0, 1.2), (2.0, 2.0), (0.0, 0.4)],
              "m": [(1.5, 1.5), (1.0, 1.4), None]}
    seconds = {"ref": [1.0, 2.0, 3.0], "m": [0.5, 0.5, 0.7]}
    ref_row, row = compare_methods(scores, seconds, reference="ref")
    assert (row["runs"], row["scored"], ref_row["scored"]) == (3, 2, 3)
    diffs = np.array([1.5 - 1.1, 1.2 - 2.0])  # the run without a score is left out
    assert row["difference"] == pytest.approx(diffs.mean())
    assert row["difference_sd"] == pytest.approx(diffs.std(ddof=1))
    assert row["difference_se"] == pytest.approx(diffs.std(ddof=1) / np.sqrt(2))
    mc = np.array([0.0 + 0.01, 0.04 + 0.0])  # (a - b)^2 / 4 of the method plus the reference's
    assert row["mc_se"] == pytest.approx(np.sqrt(mc.mean() / 2))
    assert row["wins"] == 1 and row["cpu_median"] == 0.5 and row["cpu_range"] == (0.5, 0.7)
    assert ref_row["difference"] == 0.0 and ref_row["mean"] == pytest.approx(1.1)
    # its difference from itself is exactly 0, so no Monte Carlo error either
    assert ref_row["mc_se"] == 0.0 and ref_row["difference_se"] == 0.0


def test_wins_count_strictly_better_runs_and_a_tie_is_no_win():
    """A run where the method and the reference score the same is not a win for either;
    the reference against itself ties every run, so it wins none."""
    scores = {"ref": [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)],
              "m": [(1.0, 1.0), (2.5, 2.5), (2.0, 2.0), (4.0, 4.0)]}  # tie, win, loss, tie
    seconds = {m: [1.0] * 4 for m in scores}
    ref_row, row = compare_methods(scores, seconds, reference="ref")
    assert row["wins"] == 1
    assert ref_row["wins"] == 0


def test_spreads_are_sample_sds_with_ddof_1_by_hand():
    """sd, difference_sd and difference_se use the n - 1 denominator (the runs are a sample
    of the runs one could make). Scores 1, 2, 6: mean 3, squared deviations 4 + 1 + 9 = 14,
    sd sqrt(14 / 2) = sqrt(7) (ddof=0 would give sqrt(14 / 3)). Differences from the
    reference (all 0) are the same numbers, so their se is sqrt(7) / sqrt(3)."""
    scores = {"ref": [(0.0, 0.0)] * 3, "m": [(1.0, 1.0), (2.0, 2.0), (6.0, 6.0)]}
    seconds = {m: [1.0] * 3 for m in scores}
    _, row = compare_methods(scores, seconds, reference="ref")
    assert row["sd"] == pytest.approx(np.sqrt(7.0), rel=1e-12)
    assert row["difference_sd"] == pytest.approx(np.sqrt(7.0), rel=1e-12)
    assert row["difference_se"] == pytest.approx(np.sqrt(7.0 / 3.0), rel=1e-12)


def test_spreads_need_two_runs_and_one_run_gives_none():
    """An sd over one run is undefined: None, not NaN; two runs give a number."""
    one = compare_methods({"ref": [(0.0, 0.0)], "m": [(1.0, 1.0)]},
                          {"ref": [1.0], "m": [1.0]}, reference="ref")[1]
    assert one["sd"] is None and one["difference_sd"] is None and one["difference_se"] is None
    assert one["difference"] == 1.0 and one["mc_se"] == 0.0
    two = compare_methods({"ref": [(0.0, 0.0), None], "m": [(1.0, 1.0), (3.0, 3.0)]},
                          {"ref": [1.0, 1.0], "m": [1.0, 1.0]}, reference="ref")[1]
    assert two["sd"] == pytest.approx(np.sqrt(2.0)) and two["difference_sd"] is None


def test_the_edges_of_what_is_allowed_are_allowed():
    """Scores of size exactly 1e100 and zero seconds are inside the documented ranges."""
    rows = compare_methods({"a": [(1e100, -1e100)], "b": [(0.0, 0.0)]},
                           {"a": [0.0], "b": [0.0]}, reference="a")
    assert rows[0]["cpu_median"] == 0.0 and rows[0]["mean"] == 0.0
    with pytest.raises(ValueError, match="at most 1e"):
        compare_methods({"a": [(1.01e100, 0.0)]}, {"a": [0.0]}, reference="a")


def test_the_monte_carlo_share_matches_a_simulation():
    """Runs differ a lot (sd 1, shared by both methods: paired), each score is noisy
    (two replicates, sd 0.2 each). The Monte Carlo error of the mean difference is then
    0.2 / sqrt(R); its estimate scatters by about 1.6% at R = 2000 (a mean of 2R chi-square
    terms), so 8% is five standard deviations. The difference, 0.3, is checked at five
    standard errors."""
    rng = np.random.default_rng(11)
    R, sigma = 2000, 0.2
    truth = rng.normal(size=R)
    noisy = lambda shift: [(t + shift + rng.normal(0, sigma), t + shift + rng.normal(0, sigma))  # noqa: E731
                           for t in truth]
    scores = {"ref": noisy(0.0), "m": noisy(0.3)}
    seconds = {m: np.ones(R) for m in scores}
    row = compare_methods(scores, seconds, reference="ref")[1]
    assert row["mc_se"] == pytest.approx(sigma / np.sqrt(R), rel=0.08)
    assert abs(row["difference"] - 0.3) < 5 * row["difference_se"]
    # the spread of the paired difference is the Monte Carlo error alone here
    assert row["difference_se"] == pytest.approx(row["mc_se"], rel=0.1)


@pytest.mark.parametrize("scores, seconds, reference, match", [
    ({}, {}, "a", "non-empty dict"),
    ({"a": [(1.0, 1.0)], "b": [(1.0, 1.0), (2.0, 2.0)]}, {"a": [1], "b": [1, 1]}, "a",
     "same runs"),
    ({"a": [(1.0, 1.0)]}, {"a": [1.0]}, "b", "reference"),
    ({"a": [(1.0, np.inf)]}, {"a": [1.0]}, "a", "finite"),
    ({"a": [(1.0, None)]}, {"a": [1.0]}, "a", "finite"),
    ({"a": [(1.0, 2.0, 3.0)]}, {"a": [1.0]}, "a", "pair"),
    ({"a": [(1.0, 1.0)]}, {"a": [-1.0]}, "a", "seconds"),
    ({"a": [(1.0, 1.0)]}, {"a": [1.0, 2.0]}, "a", "one time per run"),
    ({"a": [(1.0, 1.0)]}, {"b": [1.0]}, "a", "same methods"),
])
def test_bad_input_is_refused_by_name(scores, seconds, reference, match):
    with pytest.raises((ValueError, TypeError), match=match):
        compare_methods(scores, seconds, reference=reference)


@pytest.mark.parametrize("d, se, verdict", [
    ([1.0, 1.0], [0.1, 0.1], "holds"),
    ([-1.0, -1.0], [0.1, 0.1], "fails"),
    ([1.0, -1.0], [0.1, 0.1], "reversed in some settings"),
    ([1.0, 0.1], [0.1, 0.1], "holds in some settings"),
    ([0.1, -0.1], [0.1, 0.1], "not resolved"),
    ([0.2], [0.1], "not resolved"),  # exactly two standard errors is not clear
    ([-0.2], [0.1], "not resolved"),  # nor exactly two below
    ([-2.0], [1.0], "not resolved"),
    ([0.0], [0.0], "not resolved"),  # an exact zero difference is neither way
    ([1.0], [0.0], "holds"),  # an exact score (se 0) is allowed
])
def test_claim_verdicts(d, se, verdict):
    from ibp_lab.evaluation.comparisons import claim_verdict

    assert claim_verdict(d, se) == verdict


@pytest.mark.parametrize("d, se, z", [([], [], 2.0), ([1.0], [1.0, 2.0], 2.0),
                                      ([np.nan], [1.0], 2.0), ([1.0], [-1.0], 2.0),
                                      ([1.0], [1.0], 0.0)])
def test_claim_verdict_refuses_bad_input(d, se, z):
    from ibp_lab.evaluation.comparisons import claim_verdict

    with pytest.raises(ValueError):
        claim_verdict(d, se, z=z)


def test_the_table_carries_every_row_and_names_the_reference():
    scores = {"A": [(1.0, 1.2), (2.0, 2.0), (0.5, 0.7)],
              "B": [(1.5, 1.3), (2.4, 2.6), None]}
    seconds = {"A": [0.1, 0.2, 0.3], "B": [1.0, 1.1, 4.0]}
    rows = comparisons.compare_methods(scores, seconds, reference="A")
    table = comparisons.comparison_table(rows, reference="A")
    assert list(table.index) == ["A", "B"]
    for row in rows:
        line = table.loc[row["method"]]
        assert line["runs scored"] == row["scored"] and line["wins"] == row["wins"]
        assert line["vs A"] == pytest.approx(row["difference"])
        assert line["se"] == pytest.approx(row["difference_se"])
        assert line["MC se"] == pytest.approx(row["mc_se"])
        assert line["CPU s"] == pytest.approx(row["cpu_median"])
    assert table.loc["B", "CPU s range"] == "1-4"
    with pytest.raises(ValueError, match="reference"):
        comparisons.comparison_table(rows, reference="C")
