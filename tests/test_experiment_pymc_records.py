"""The bundled PyMC fits the chapters read (experiments/pymc_digits.py for the PyMC chapter,
experiments/heldout_pymc.py for the held-out chapter): each record is whole, its netCDF files
are the fits it describes, the chapter's shown calls are the script's, and a reduced rerun of
each script gives the reduced fits stored beside the full ones.

A full fit takes minutes, too long for a chapter cell; the reduced fits (same calls, 40 digits,
a few draws) are deterministic given the seed and the stack, so rerunning them and finding the
stored numbers (to a relative 1e-6) shows that the script the chapter names is the one that
made its fits. Wall and CPU seconds are not compared.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "ibp_lab" / "data" / "experiments"
#: record name -> the chapter that reads it
CHAPTERS = {"pymc_digits": "10_pymc", "heldout_pymc": "13_heldout"}
RECORD_KEYS = {"command", "seed", "stack", "date", "cpu_seconds", "plan", "quick_plan", "runs",
               "quick", "pymc_stack"}
#: keys that depend on the machine's speed or on the file written, not on the sampler
NOT_COMPARED = {"seconds", "cpu_seconds", "file", "sha256"}
MAX_BYTES = 2 * 2**20  # a bundled file stays small


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(name):
    return json.loads((BUNDLED / f"{name}.json").read_text())


def _fits(name, runs):
    """The record's fits: {label: summary with its file}."""
    return {"fit": runs} if "file" in runs or "lp" in runs else dict(runs)


def _assert_same(stored, rerun, where="record"):
    """Equal keys, strings and integers; floats to a relative 1e-6; timings skipped."""
    if isinstance(stored, dict):
        assert set(stored) == set(rerun), where
        for key in set(stored) - NOT_COMPARED:
            _assert_same(stored[key], rerun[key], f"{where}.{key}")
    elif isinstance(stored, (str, bool)) or stored is None:
        assert stored == rerun, f"{where}: stored {stored!r}, rerun {rerun!r}"
    elif isinstance(stored, int):  # a generator's state: exact, beyond float precision
        assert stored == rerun, f"{where}: stored {stored}, rerun {rerun}"
    else:
        stored, rerun = np.asarray(stored, float), np.asarray(rerun, float)
        assert stored.shape == rerun.shape, f"{where}: shapes {stored.shape}, {rerun.shape}"
        assert np.allclose(stored, rerun, rtol=1e-6, atol=1e-9), (
            f"{where}: stored {stored}, rerun {rerun}")


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_the_record_is_whole_and_says_how_it_was_made(name):
    record, script = _record(name), _script(name)
    assert RECORD_KEYS <= set(record)
    assert record["command"] == f"python experiments/{name}.py"
    assert record["seed"] == script.SEED
    assert record["plan"] == json.loads(json.dumps(script.FULL))
    assert record["quick_plan"] == json.loads(json.dumps(script.QUICK))
    assert {"python", "numpy", "scipy"} <= set(record["stack"])
    assert {"pymc", "pytensor", "arviz"} <= set(record["pymc_stack"])


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_the_bundled_netcdf_files_are_the_fits_the_record_describes(name):
    """Each file is whole (its SHA-256), small, and gives the record's summary numbers."""
    az = pytest.importorskip("arviz")
    summary = _script("_pymc_record")
    for label, fit in _fits(name, _record(name)["runs"]).items():
        path = BUNDLED / fit["file"]
        assert path.stat().st_size < MAX_BYTES, (label, path.stat().st_size)
        assert summary.sha256(path) == fit["sha256"], f"{path.name} is not the recorded file"
        _assert_same({k: fit[k] for k in ("lp", "pi", "n_steps", "divergences")},
                     summary.fit_summary(az.from_netcdf(path)), f"{name}.{label}")


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_the_chapter_shows_the_scripts_calls_and_names_the_script(name):
    text = (ROOT / "book" / f"{CHAPTERS[name]}.md").read_text()
    assert f"experiments/{name}.py" in text
    assert f"python experiments/{name}.py" in text  # how to rerun it
    plan = _record(name)["plan"]
    for fit in (plan["default"], plan["data"]) if "default" in plan else (plan,):
        call = f"chains={fit['chains']}"
        assert call in text and f"tune={fit['tune']}" in text and f"draws={fit['draws']}" in text


def test_the_pymc_chapters_generator_reaches_the_fits_as_the_script_says():
    """The chapter draws one start before its fits; the record's generator states chain."""
    from ibp_lab.datasets import load_digit_sets
    from ibp_lab.inference import pymc_models

    record, script = _record("pymc_digits"), _script("pymc_digits")
    plan = record["plan"]
    rng = np.random.default_rng(script.SEED)
    pymc_models.initial_point_from_data(load_digit_sets().train[: plan["rows"]],
                                        plan["n_features"], rng, sigma_x=plan["sigma_x"])
    runs = record["runs"]
    assert runs["default"]["rng_state_before"] == rng.bit_generator.state
    assert runs["data"]["rng_state_before"] == runs["default"]["rng_state_after"]
    assert runs["data"]["rng_state_after"] != runs["data"]["rng_state_before"]


@pytest.mark.slow  # about 8 s with PyTensor's compiled code cached: two reduced fits
def test_the_pymc_chapter_record_is_reproduced_by_its_reduced_runs():
    pytest.importorskip("pymc")
    module = _script("pymc_digits")
    _assert_same(_record("pymc_digits")["quick"], module.runs(module.QUICK, tag=1))


@pytest.mark.slow  # about 3 s with PyTensor's compiled code cached: one reduced fit
def test_the_heldout_record_is_reproduced_by_its_reduced_run():
    pytest.importorskip("pymc")
    module = _script("heldout_pymc")
    _assert_same(_record("heldout_pymc")["quick"], module.runs(module.QUICK, tag=1))
