"""Sequences of calls to the modules added in issues 29-31 (issue 48).

The hostile-input campaign (tests/robust_inputs.py) tries one call at a time; these tests
chain calls the way a reader does: continue a chain from a result's final state, stream
one batch then the rest, tabulate runs that tie or have one method only. Each is exact
(same generator, same numbers), so none is statistical.
"""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab.evaluation import comparisons
from ibp_lab.inference import slice_sampler, streaming_variational, uncollapsed

HYPER = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0)


def _data():
    return np.random.default_rng(3).normal(size=(5, 3))


@pytest.mark.parametrize("run, sweep", [
    (slice_sampler.run_slice, slice_sampler.slice_sweep),
    (uncollapsed.run_uncollapsed, uncollapsed.uncollapsed_sweep),
], ids=["slice", "uncollapsed"])
def test_a_run_continued_from_its_state_equals_one_longer_run(run, sweep):
    """run(3) then two sweeps from (Z, A) with the same generator == run(5): the result's
    final state is the whole chain state, and the runner adds no hidden draws per sweep."""
    X = _data()
    long = run(X, 5, np.random.default_rng(11), **HYPER)
    rng = np.random.default_rng(11)
    short = run(X, 3, rng, **HYPER)
    Z, A = short.Z, short.A
    for _ in range(2):
        Z, A = sweep(X, Z, A, rng, **HYPER)
    np.testing.assert_array_equal(Z, long.Z)
    np.testing.assert_allclose(A, long.A, rtol=1e-10, atol=1e-12)
    # the short run's trace is the first three sweeps of the long one's
    np.testing.assert_array_equal(short.trace["k_plus"].values, long.trace["k_plus"].values[:3])


@pytest.mark.parametrize("run", [slice_sampler.run_slice, uncollapsed.run_uncollapsed],
                         ids=["slice", "uncollapsed"])
def test_a_run_restarted_from_its_final_z_keeps_that_z_as_its_start(run):
    """Z0 = a previous result's Z: the restart is reproducible (same generator, same
    numbers) and leaves the caller's array as it was."""
    X = _data()
    first = run(X, 3, np.random.default_rng(2), **HYPER)
    Z0 = first.Z.copy()
    again = [run(X, 2, np.random.default_rng(4), **HYPER, Z0=first.Z) for _ in range(2)]
    np.testing.assert_array_equal(first.Z, Z0)
    np.testing.assert_array_equal(again[0].Z, again[1].Z)
    np.testing.assert_array_equal(again[0].A, again[1].A)


def _stream(X, batch_size, seed=7):
    return streaming_variational.stream_variational(
        X, np.random.default_rng(seed), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
        family="stick_breaking", n_features=3, batch_size=batch_size, max_iter=5, tol=1e-6)


def test_stream_one_batch_then_more_keeps_the_first_batch():
    """Streaming X in batches of 2: the first batch's rows are frozen when it is done, so
    they equal a stream of those two rows alone with the same generator."""
    X = _data()
    alone = _stream(X[:2], batch_size=2)
    whole = _stream(X, batch_size=2)
    assert len(whole.step_bounds) == 3 and len(alone.step_bounds) == 1
    k = alone.feature_probabilities.shape[1]
    np.testing.assert_allclose(whole.feature_probabilities[:2, :k], alone.feature_probabilities,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(whole.step_bounds[0], alone.step_bounds[0], rtol=1e-10)


def test_stream_is_the_same_for_the_same_generator_and_one_batch_is_one_step():
    X = _data()
    once, twice = _stream(X, batch_size=10**6), _stream(X, batch_size=10**6)
    assert len(once.step_bounds) == 1
    np.testing.assert_array_equal(once.feature_probabilities, twice.feature_probabilities)
    assert np.isfinite(once.elbo()) and np.isfinite(once.ibp_elbo())


def test_a_table_from_runs_with_ties_counts_no_wins_and_zero_differences():
    """Ties are not wins (issue 48's planted bug: ties counted as wins passed every test)."""
    runs = [{"methods": {"a": {"score_a": s, "score_b": s, "seconds": 1.0},
                         "b": {"score_a": s, "score_b": s, "seconds": 2.0}}}
            for s in (1.0, 2.0, 3.0)]
    scores, seconds = comparisons.scores_from_runs(runs, ["a", "b"])
    rows = comparisons.compare_methods(scores, seconds, reference="a")
    table = comparisons.comparison_table(rows, reference="a")
    assert [r["wins"] for r in rows] == [0, 0]
    assert rows[1]["difference"] == 0.0 and rows[1]["difference_sd"] == 0.0
    assert table.loc["b", "wins"] == 0 and table.loc["b", "vs a"] == 0.0
    # the score's sd over the runs 1, 2, 3 is 1 with ddof=1 (0.816 with ddof=0)
    assert rows[0]["sd"] == pytest.approx(1.0)


def test_a_table_from_one_method_only_has_one_row_against_itself():
    runs = [{"methods": {"a": {"score_a": s, "score_b": s + 0.1, "seconds": 1.0}}}
            for s in (1.0, 2.0)]
    scores, seconds = comparisons.scores_from_runs(runs, ["a"])
    rows = comparisons.compare_methods(scores, seconds, reference="a")
    table = comparisons.comparison_table(rows, reference="a")
    assert len(rows) == 1 and table.shape[0] == 1
    assert rows[0]["difference"] == 0.0 and rows[0]["wins"] == 0
    assert rows[0]["mean"] == pytest.approx(1.55)


def test_one_win_and_one_tie_count_one_win():
    rows = comparisons.compare_methods({"a": [(1.0, 1.0), (2.0, 2.0)], "b": [(1.5, 1.5), (2.0, 2.0)]},
                                       {"a": [1.0, 1.0], "b": [1.0, 1.0]}, reference="a")
    assert rows[1]["wins"] == 1
    assert rows[1]["difference"] == pytest.approx(0.25)
