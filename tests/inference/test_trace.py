"""The inference wing's one recorder of traces and one collector of runs (issue 49)."""

import time

import numpy as np
import pytest

from ibp_lab.inference import chains, noisy_or, slice_sampler, tempering, uncollapsed
from ibp_lab.inference._trace import Recorder, collect_runs

X = np.random.default_rng(0).normal(size=(6, 3))
HYPER = dict(alpha=1.0, sigma_x=0.6, sigma_a=1.0)


def recorded(n_draws, burn, thin):
    """A recorder fed draws whose ``Z`` has ``t`` columns and ``k_plus = t``."""
    record = Recorder(n_draws, {"k_plus": np.int64, "level_value": (np.float64, ("level",))},
                      {"count": np.int64}, burn=burn, thin=thin, sizes={"level": 2})
    for t in range(n_draws):
        record.clock(t)
        Z = np.ones((3, t), np.int8)
        record.draw(t, Z, k_plus=t, level_value=[t, -t], count=2 * t)
        Z[:] = 0  # the recorder keeps its own copy
    return record


@pytest.mark.parametrize("burn, thin", [(0, 1), (2, 3), (5, 1), (6, 2)])
def test_draws_are_kept_at_burn_plus_multiples_of_thin(burn, thin):
    record = recorded(7, burn, thin)
    expected = list(range(burn, 7, thin))
    assert record.kept_draws().tolist() == expected
    assert record.kept_draws().dtype == np.int64
    assert [Z.shape[1] for Z in record.samples] == expected
    assert all((Z == 1).all() for Z in record.samples)
    assert [record.keeps(t) for t in range(7)] == [t in expected for t in range(7)]


def test_datasets_have_the_variables_in_order_with_their_dtypes_and_dims():
    trace, stats = recorded(4, 1, 1).datasets({"burn": 1}, {"moves": "m"})
    assert list(trace.data_vars) == ["k_plus", "level_value"]
    assert list(stats.data_vars) == ["seconds", "count"]
    assert trace["k_plus"].dtype == np.int64 and stats["count"].dtype == np.int64
    assert stats["seconds"].dtype == np.float64
    assert trace["level_value"].dims == ("draw", "level")
    assert trace["level_value"].values.tolist() == [[t, -t] for t in range(4)]
    assert list(trace.coords) == ["draw", "level"] and list(stats.coords) == ["draw"]
    assert trace["draw"].values.tolist() == [0, 1, 2, 3]
    assert trace.attrs == {"burn": 1} and stats.attrs == {"moves": "m"}
    assert np.all(np.diff(stats["seconds"].values) >= 0)


def test_untimed_work_is_left_out_of_later_seconds():
    record = Recorder(2, {})
    record.clock(0)
    with record.untimed():
        started = time.process_time()
        while time.process_time() - started < 0.2:  # burn CPU time
            pass
    record.clock(1)
    seconds = record.values["seconds"]
    assert record.excluded_seconds >= 0.2
    assert seconds[1] - seconds[0] < 0.1


def runs(n_runs=2, n_draws=5, burn=2, thin=2):
    """``(trace, sample_stats, kept draws)`` of ``n_runs`` recorders fed the same draws."""
    records = [recorded(n_draws, burn, thin) for _ in range(n_runs)]
    return [(*record.datasets({"burn": burn}), record.kept_draws()) for record in records]


def test_collected_runs_stack_the_kept_draws_renumbered_along_chain():
    idata = collect_runs(runs(), warmup=2)
    assert list(idata.groups()) == ["posterior", "sample_stats", "warmup_posterior",
                                    "warmup_sample_stats"]
    assert dict(idata.posterior.sizes) == {"chain": 2, "draw": 2, "level": 2}
    assert idata.posterior["chain"].values.tolist() == [0, 1]
    assert idata.posterior["draw"].values.tolist() == [0, 1]
    assert idata.posterior["k_plus"].values.tolist() == [[2, 4], [2, 4]]
    assert idata.sample_stats["count"].values.tolist() == [[4, 8], [4, 8]]
    assert idata.warmup_posterior["k_plus"].values.tolist() == [[0, 1], [0, 1]]
    assert idata.posterior.attrs == {"burn": 2}


def test_no_warmup_groups_without_warmup_and_further_groups_as_given():
    trace = runs(1)[0][0]
    idata = collect_runs(runs(), observed_data=trace.isel(draw=0, drop=True))
    assert list(idata.groups()) == ["posterior", "sample_stats", "observed_data"]


RUNNERS = {
    "chain": lambda rng: chains.run_chain(X, 6, rng, burn=2, thin=2, **HYPER),
    "tempered": lambda rng: tempering.run_tempered(X, 6, rng, n_temperatures=2, burn=2, **HYPER),
    "uncollapsed": lambda rng: uncollapsed.run_uncollapsed(X, 6, rng, burn=2, thin=2, **HYPER),
    "slice": lambda rng: slice_sampler.run_slice(X, 6, rng, burn=2, thin=2, **HYPER),
    "noisy_or": lambda rng: noisy_or.run_noisy_or((X > 0).astype(int), 6, rng, burn=2, thin=2),
}


@pytest.mark.parametrize("name", RUNNERS)
def test_every_runner_traces_draw_by_draw_in_one_layout(name):
    run = RUNNERS[name](np.random.default_rng(1))
    assert list(run.trace.data_vars)[0] == "k_plus" and run.trace["k_plus"].dtype == np.int64
    assert run.trace["draw"].values.tolist() == list(range(6))
    assert run.trace.attrs["burn"] == 2
    assert list(run.sample_stats.data_vars)[0] == "seconds"
    assert run.sample_stats["seconds"].dtype == np.float64
    assert np.all(np.diff(run.sample_stats["seconds"].values) >= 0)
    if hasattr(run, "samples"):
        assert run.sample_draws.tolist() == [2, 4]
        assert [Z.shape[1] for Z in run.samples] == run.trace["k_plus"].values[[2, 4]].tolist()


@pytest.mark.parametrize("collect, warmup", [
    (lambda rng: chains.run_chains(X, 2, 6, rng, burn=2, thin=2, **HYPER), True),
    (lambda rng: tempering.run_tempered_chains(X, 2, 6, rng, n_temperatures=2, burn=2,
                                               **HYPER), False)])
def test_the_collectors_stack_each_runs_kept_draws(collect, warmup):
    idata, results = collect(np.random.default_rng(2))
    for c, result in enumerate(results):
        kept = getattr(result, "sample_draws", np.arange(2, 6))
        np.testing.assert_array_equal(idata.posterior["k_plus"].values[c],
                                      result.trace["k_plus"].values[kept])
        np.testing.assert_array_equal(idata.sample_stats["seconds"].values[c],
                                      result.sample_stats["seconds"].values[kept])
    assert ("warmup_posterior" in idata.groups()) == warmup
