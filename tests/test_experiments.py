"""The precomputed experiments the chapters read (experiments/, ibp_lab/data/experiments/): their records
are whole, and their reduced runs, rerun here, give the numbers stored beside the full ones.

A full run takes many CPU minutes, too long for a chapter that every build executes
three times; each script therefore stores, beside its full runs, a reduced version
(same code path, small budget) whose results are deterministic given the seed and the
stack. Rerunning the reduced version and finding the stored numbers (to a relative
1e-6, which allows for a change in the order of floating-point sums) shows that the sampler the chapter describes is
the one that produced its tables; CPU seconds are not compared.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
RECORDS = {name: ROOT / "ibp_lab" / "data" / "experiments" / f"{name}.json"
           for name in ("smc_digits", "tempering_digits", "modes_digits", "tempering_trap",
                         "nonconjugate_digits", "noisy_or_digits", "paper_fig5", "paper_fig8",
                         "digits_methods")}
#: Keys that depend on the machine's speed, not on the sampler.
TIMING = {"cpu_seconds", "seconds", "pilot_seconds_per_sweep", "plain_seconds_per_sweep",
          "seconds_per_sweep", "budget"}


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_same(stored, rerun, where="record"):
    if isinstance(stored, dict):
        assert set(stored) == set(rerun), where
        for key in stored:
            if key not in TIMING:
                _assert_same(stored[key], rerun[key], f"{where}.{key}")
    elif isinstance(stored, str) or stored is None:
        assert stored == rerun, f"{where}: stored {stored!r}, rerun {rerun!r}"
    elif isinstance(stored, list) and stored and not isinstance(stored[0], (int, float)):
        assert len(stored) == len(rerun), where
        for i, (a, b) in enumerate(zip(stored, rerun)):
            _assert_same(a, b, f"{where}[{i}]")
    else:
        stored, rerun = np.asarray(stored, float), np.asarray(rerun, float)
        # equal shapes first: allclose would broadcast a stored scalar against a rerun list
        assert stored.shape == rerun.shape, f"{where}: shapes {stored.shape}, {rerun.shape}"
        assert np.allclose(stored, rerun, rtol=1e-6, atol=1e-6, equal_nan=True), (
            f"{where}: stored {stored}, rerun {rerun}")


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_the_record_is_whole_and_says_how_it_was_made(name):
    record = json.loads(RECORDS[name].read_text())
    assert record["command"] == f"python experiments/{name}.py"
    assert {"python", "numpy", "scipy", "numba"} <= set(record["stack"])
    assert record["runs"] and record["quick"] and record["seed"]
    assert record["plan"] == json.loads(json.dumps(_script(name).FULL))


@pytest.mark.slow  # about 10 s
def test_the_smc_record_is_reproduced_by_its_reduced_runs():
    module = _script("smc_digits")
    record = json.loads(RECORDS["smc_digits"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1, cache=False))


@pytest.mark.slow  # about 10 s
def test_the_tempering_record_is_reproduced_by_its_reduced_runs():
    module = _script("tempering_digits")
    record = json.loads(RECORDS["tempering_digits"].read_text())
    stored = record["quick"]
    rerun = module.run(module.QUICK, tag=1, sweeps=stored["gibbs"]["sweeps"])
    _assert_same(stored, rerun)


@pytest.mark.slow  # about 5 s
def test_the_modes_record_is_reproduced_by_its_reduced_runs():
    module = _script("modes_digits")
    record = json.loads(RECORDS["modes_digits"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1, cache=False))


@pytest.mark.slow  # about 5 s
def test_the_trap_record_is_reproduced_by_its_reduced_runs():
    """The plain chains' sweeps come from a CPU measurement, so the rerun takes the stored ones."""
    module = _script("tempering_trap")
    stored = json.loads(RECORDS["tempering_trap"].read_text())["quick"]
    _assert_same(stored, module.run(module.QUICK, tag=1,
                                    sweeps=[g["sweeps"] for g in stored["gibbs"]]))


@pytest.mark.slow  # about 5 s
def test_the_nonconjugate_record_is_reproduced_by_its_reduced_runs():
    module = _script("nonconjugate_digits")
    record = json.loads(RECORDS["nonconjugate_digits"].read_text())
    # every sampler of the script, the data-driven births too, in the full runs and the reduced
    assert set(record["runs"]) == set(record["quick"]) == set(module.PARTS)
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1))
    # one sampler rerun alone (--only, merged into the record) draws what a whole run draws
    alone = module.runs(module.QUICK, tag=1, only=("uncollapsed_data",))
    assert list(alone) == ["uncollapsed_data"]
    _assert_same(record["quick"]["uncollapsed_data"], alone["uncollapsed_data"])


@pytest.mark.slow  # about 2 s
def test_the_noisy_or_record_is_reproduced_by_its_reduced_runs():
    module = _script("noisy_or_digits")
    record = json.loads(RECORDS["noisy_or_digits"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1))


def test_the_fig5_record_is_reproduced_by_its_reduced_runs():
    module = _script("paper_fig5")
    record = json.loads(RECORDS["paper_fig5"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1))


def test_the_fig8_record_is_reproduced_by_its_reduced_runs():
    module = _script("paper_fig8")
    record = json.loads(RECORDS["paper_fig8"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1))


@pytest.mark.slow  # about 10 s
def test_the_digits_methods_record_is_reproduced_by_its_reduced_runs():
    module = _script("digits_methods")
    record = json.loads(RECORDS["digits_methods"].read_text())
    _assert_same(record["quick"], module.runs(module.QUICK, tag=1))
