"""PyMC's NUTS on the truncated IBP of the 300 digits, from the data, two chains in turn:
the fit whose held-out score the chapter on held-out writers reads.

Usage::

    .venv/bin/python experiments/heldout_pymc.py           # the full fit (about 1 min of CPU)
    .venv/bin/python experiments/heldout_pymc.py --quick   # the reduced fit only (seconds)

The call is the chapter's: :func:`ibp_lab.inference.pymc_models.sample_posterior` on
:func:`~ibp_lab.inference.pymc_models.build_model` (K = 6, sigma_X = 0.25) with
``np.random.default_rng(7)``, ``start="data"``, 2 chains of 200 warm-up and 100 kept draws,
one core. Its CPU seconds include building and compiling the model, as the chapter's did.

Writes, under ``ibp_lab/data/experiments/``, ``heldout_pymc.json`` (the record: command,
stack with the PyMC version, seed, date, plan, the load average when the script started,
the fit's CPU seconds, each chain's mean log density and posterior mean of every ``pi_k``,
the netCDF file and its SHA-256, and the reduced fit that
``tests/test_experiment_pymc_records.py`` reruns) and ``heldout_pymc.nc``, the
``InferenceData`` (:func:`arviz.to_netcdf`). ``--out`` moves the record, not the netCDF file.
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

SEED = 7
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "heldout_pymc.json"
FULL = dict(rows=300, n_features=6, sigma_x=0.25, chains=2, tune=200, draws=100, cores=1)
QUICK = dict(rows=40, n_features=3, sigma_x=0.25, chains=2, tune=10, draws=5, cores=1)


def runs(plan: dict, tag: int, *, save: bool = False) -> dict:
    """The chapter's fit; with ``save``, its netCDF file beside ``OUT``."""
    X = load_digit_sets().train[: plan["rows"]]
    t0 = time.process_time()
    idata = pymc_models.sample_posterior(
        pymc_models.build_model(X, plan["n_features"], sigma_x=plan["sigma_x"]),
        X, np.random.default_rng(SEED), start="data", chains=plan["chains"],
        tune=plan["tune"], draws=plan["draws"], cores=plan["cores"], quiet=True,
    )
    result = dict(fit_summary(idata), cpu_seconds=time.process_time() - t0)
    if save:
        result.update(save_idata(idata, OUT.with_name("heldout_pymc.nc")))
    print(f"  {result['cpu_seconds']:.0f} s CPU", flush=True)
    return result


def main(argv=None) -> int:
    # PyTensor finds no BLAS to link its C code against and says so; it then calls NumPy's
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    return quick_then_full(argv, doc=__doc__, name="heldout_pymc",
                           run=lambda plan, tag: runs(plan, tag, save=tag == 0),
                           full=FULL, quick=QUICK, seed=SEED, out=OUT,
                           pymc_stack=pymc_versions(),
                           # its seconds are wall or CPU time: say how busy the machine was
                           load_average_at_start=os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
