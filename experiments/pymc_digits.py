"""PyMC's NUTS on the truncated IBP of the 300 digits, from its default start and from the
data: the two fits the PyMC chapter reads.

Usage::

    .venv/bin/python experiments/pymc_digits.py           # the full fits (about 2 min on 2 cores)
    .venv/bin/python experiments/pymc_digits.py --quick   # the reduced fits only (seconds)

The calls are the chapter's, in the chapter's order, from its generator
``np.random.default_rng(2007)``: the model of :func:`ibp_lab.inference.pymc_models.build_model`
(K = 6, sigma_X = 0.25); the chapter's check start drawn by
:func:`~ibp_lab.inference.pymc_models.initial_point_from_data` (drawn here too, so that the
generator reaches the fits in the same state); then
:func:`~ibp_lab.inference.pymc_models.sample_posterior` from PyMC's default start (4 chains,
120 warm-up and 80 kept draws, 2 at a time), then from the data (4 chains, 200 and 150).
A chapter cell of either fit would take about a minute on an idle two-core machine.

Writes, under ``ibp_lab/data/experiments/``:

- ``pymc_digits.json``: the record (command, stack with the PyMC version, seed, date, plan,
  the machine's load average when the script started: the fits' seconds are wall time,
  and the record's ``cpu_seconds`` counts this process only, not the chains' two),
  per fit its wall seconds, each chain's mean log density and posterior mean of every
  ``pi_k``, the netCDF file and its SHA-256, the generator's state before the fit (the
  chapter checks that it reached the same) and after it (the chapter continues from it); and
  the reduced fits that ``tests/test_experiment_pymc_records.py`` reruns;
- ``pymc_digits_default.nc`` and ``pymc_digits_data.nc``: the two ``InferenceData``
  (:func:`arviz.to_netcdf`), warm-up statistics kept, warm-up draws of the parameters dropped
  (the chapter plots the warm-up log density only; the draws would double the files).
  ``--out`` moves the record, not the netCDF files.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab.datasets import load_digit_sets  # noqa: E402
from ibp_lab.inference import pymc_models  # noqa: E402
from _pymc_record import fit_summary, pymc_versions, save_idata  # noqa: E402
from _record import quick_then_full  # noqa: E402

SEED = 2007
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "pymc_digits.json"
FULL = dict(rows=300, n_features=6, sigma_x=0.25,
            default=dict(chains=4, tune=120, draws=80, cores=2),
            data=dict(chains=4, tune=200, draws=150, cores=2))
# one process: the test that reruns them does not fork (PyMC seeds each chain from the
# same seed whether the chains run together or in turn)
QUICK = dict(rows=40, n_features=3, sigma_x=0.25,
             default=dict(chains=2, tune=10, draws=5, cores=1),
             data=dict(chains=2, tune=10, draws=5, cores=1))


def runs(plan: dict, tag: int, *, save: bool = False) -> dict:
    """Both fits as the chapter makes them; with ``save``, their netCDF files beside ``OUT``."""
    X = load_digit_sets().train[: plan["rows"]]
    n_features, sigma_x = plan["n_features"], plan["sigma_x"]
    model = pymc_models.build_model(X, n_features, sigma_x=sigma_x)
    rng = np.random.default_rng(SEED)
    # the chapter's check of the log density draws one start before sampling
    pymc_models.initial_point_from_data(X, n_features, rng, sigma_x=sigma_x)
    result = {}
    for start in ("default", "data"):
        before = rng.bit_generator.state
        t0 = time.perf_counter()
        idata = pymc_models.sample_posterior(model, X, rng, start=start, keep_warmup=True,
                                             quiet=True, **plan[start])
        seconds = time.perf_counter() - t0
        result[start] = dict(fit_summary(idata), seconds=seconds, rng_state_before=before,
                             rng_state_after=rng.bit_generator.state)
        if save:
            result[start].update(save_idata(idata, OUT.with_name(f"pymc_digits_{start}.nc")))
        print(f"  {start} start: {seconds:.0f} s", flush=True)
    return result


def main(argv=None) -> int:
    # PyTensor finds no BLAS to link its C code against and says so; it then calls NumPy's
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    return quick_then_full(argv, doc=__doc__, name="pymc_digits",
                           run=lambda plan, tag: runs(plan, tag, save=tag == 0),
                           full=FULL, quick=QUICK, seed=SEED, out=OUT,
                           pymc_stack=pymc_versions(),
                           # its seconds are wall or CPU time: say how busy the machine was
                           load_average_at_start=os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
