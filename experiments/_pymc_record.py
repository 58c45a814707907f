"""What the PyMC experiment scripts share: the versions that made a fit, a fit's summary
numbers for the record, and the fit itself saved as netCDF beside the record.

The summary (each chain's mean log density and posterior mean of every ``pi_k``, its mean
gradient steps per draw and its divergences) is what ``tests/test_experiment_pymc_records.py``
compares between a reduced rerun and the record, and between the record and its netCDF file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def pymc_versions() -> dict:
    """PyMC, PyTensor and ArviZ versions (``_record.stack`` gives the rest)."""
    import arviz
    import pymc
    import pytensor

    return dict(pymc=pymc.__version__, pytensor=pytensor.__version__, arviz=arviz.__version__)


def fit_summary(idata) -> dict:
    """Per chain, after warm-up: mean log density, posterior mean of each ``pi_k``, mean
    gradient steps per draw, divergences."""
    stats = idata.sample_stats
    return dict(
        lp=stats["lp"].mean("draw").to_numpy().tolist(),
        pi=idata.posterior["pi"].mean("draw").to_numpy().tolist(),
        n_steps=stats["n_steps"].mean("draw").to_numpy().tolist(),
        divergences=stats["diverging"].sum("draw").to_numpy().astype(int).tolist(),
    )


def sha256(path: Path) -> str:
    """The file's SHA-256, hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_idata(idata, path: Path) -> dict:
    """Write ``idata`` as netCDF at ``path`` without its warm-up draws of the parameters
    (kept: the warm-up statistics, the log density among them); its name and SHA-256."""
    groups = [g for g in idata.groups() if g != "warmup_posterior"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    idata.to_netcdf(str(tmp), groups=groups)
    os.replace(tmp, path)  # atomically: a stopped script leaves the old file whole
    return dict(file=path.name, sha256=sha256(path))
