"""What every experiment script shares: the stack it ran on and the record it writes.

A record (read by :func:`ibp_lab.datasets.load_experiment`) holds the runs' results, the
command, the stack, the seed, the date, the plan and the reduced runs that
``tests/test_experiments.py`` reruns. It is written atomically: a stopped script leaves the
old file whole.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np


def stack() -> dict:
    """Python, NumPy, SciPy and numba versions, and the machine."""
    import numba
    import scipy

    return dict(python=platform.python_version(), numpy=np.__version__, scipy=scipy.__version__,
                numba=numba.__version__, machine=platform.machine(), system=platform.system(),
                cores=os.cpu_count())


def cached_row(path: Path, make) -> dict:
    """``make()``'s row, kept as JSON at ``path`` (atomically) so a stopped script resumes."""
    if path.exists():
        return json.loads(path.read_text())
    row = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row))
    os.replace(tmp, path)
    return row


def write_record(out: Path, name: str, **fields) -> None:
    """Write ``fields`` with the command, stack and date as ``out``, atomically."""
    record = dict(command=f"python experiments/{name}.py", stack=stack(),
                  date=datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}")


def quick_then_full(argv, *, doc: str, name: str, run, full: dict, quick: dict, seed: int,
                    out: Path, **extra) -> int:
    """The command line of a script whose ``run(plan, tag)`` does everything: ``--quick``
    prints the reduced runs; otherwise the full runs are made and the record written."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args(argv)
    quick_runs = run(quick, tag=1)
    if args.quick:
        json.dump(quick_runs, sys.stdout, indent=1)
        return 0
    start = time.process_time()
    full_runs = run(full, tag=0)
    write_record(args.out, name, seed=seed, cpu_seconds=time.process_time() - start, plan=full,
                 quick_plan=quick, **extra, runs=full_runs, quick=quick_runs)
    return 0
