"""Sequential Monte Carlo on the digits and on the all-on trap: the runs the tempering chapter reads.

Usage::

    .venv/bin/python experiments/smc_digits.py            # the full runs (about 20 CPU minutes)
    .venv/bin/python experiments/smc_digits.py --quick    # the reduced runs only (seconds)

Writes ``book/data/smc_digits.json`` (``--out`` to write elsewhere): for each run its
settings, seed, log evidence, weighted mean K+ and log-likelihood, smallest ESS,
resampling count, CPU seconds and the particles' communication barrier
(its local values along the ladder and its integral from 0 and from 0.3); and the command, the stack (Python, NumPy, SciPy,
numba versions), the machine and the date. The file holds the reduced runs too, and
``tests/test_experiments.py`` reruns them and checks that they agree with the file,
so that a change to the sampler that would change the chapter's numbers is noticed
without the full runs. The full runs are too long for a chapter that every build
executes three times; the chapter says so where it reads them.

The runs (hyperparameters as in the chapter: alpha = 1, sigma_A = 0.3 on the digits):

- ``budget``: the 300 training digits at sigma_X = 0.25, 32 particles, ladders of
  T = 250, 1000 and 4000 steps, three independent runs each;
- ``sigma_x``: the same digits at sigma_X = 0.2, 0.25, 0.3 and 0.35, T = 2000, three
  runs each: the evidence's verdict on sigma_X;
- ``rows``: the first 38, 75 and 150 of the 300 digits (in a fixed shuffled order) at
  sigma_X = 0.25, T = 1000, three runs each: how the barrier grows with N (with the
  300 of ``budget``);
- ``trap``: the four-feature images at sigma_X = 0.1 (sigma_A = 1), T = 1000, three
  runs: the log joint of the particles against the true Z's.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ibp_lab import datasets, smc  # noqa: E402
from ibp_lab.linear_gaussian import collapsed_loglik  # noqa: E402
from ibp_lab.prior import log_prior  # noqa: E402

SEED = 2028
OUT = ROOT / "book" / "data" / "smc_digits.json"
DIGITS = dict(alpha=1.0, sigma_a=0.3)
TRAP = dict(alpha=1.0, sigma_x=0.1, sigma_a=1.0)
FULL = dict(particles=32, runs=3, budget_steps=(250, 1000, 4000), sigma_steps=2000,
            sigmas=(0.2, 0.25, 0.3, 0.35), trap_steps=1000, row_counts=(38, 75, 150),
            rows_steps=1000)
QUICK = dict(particles=8, runs=2, budget_steps=(20, 40), sigma_steps=30,
             sigmas=(0.25, 0.35), trap_steps=30, row_counts=(38,), rows_steps=20)


def _run(X, n_particles, n_steps, seed, hyper, Z_true=None) -> dict:
    rng = np.random.default_rng(seed)
    run = smc.run_smc(X, n_particles, rng, **hyper, n_temperatures=n_steps)
    row = dict(seed=list(seed), n_particles=n_particles, n_steps=n_steps, **hyper,
               log_evidence=run.log_evidence, mean_k_plus=run.mean(run.k_plus),
               mean_log_likelihood=run.mean(run.log_likelihood), min_ess=float(run.ess.min()),
               n_resampled=int(run.resampled.sum()), cpu_seconds=run.cpu_seconds,
               n_rows=int(X.shape[0]), barrier=run.communication_barrier(),
               barrier_from_0_3=run.communication_barrier(0.3),
               inverse_temperatures=run.inverse_temperatures.tolist(),
               local_barrier=run.local_barrier.tolist())
    if Z_true is not None:
        log_joint = np.array([collapsed_loglik(X, Z, hyper["sigma_x"], hyper["sigma_a"])
                              + log_prior(Z, hyper["alpha"]) for Z in run.states])
        true = collapsed_loglik(X, Z_true, hyper["sigma_x"], hyper["sigma_a"]) + log_prior(
            Z_true, hyper["alpha"])
        row |= dict(true_log_joint=float(true), best_log_joint=float(log_joint.max()),
                    mean_log_joint=run.mean(log_joint))
    print(f"  {row['n_steps']:5d} steps, seed {seed}: log Z_hat {row['log_evidence']:9.2f}, "
          f"E[K+] {row['mean_k_plus']:5.1f}, {row['cpu_seconds']:6.1f} s", flush=True)
    return row


def runs(plan: dict, tag: int) -> dict:
    """Every run of ``plan``; seeds ``(SEED, tag, part, setting, run)``."""
    X = datasets.load_digit_sets().train
    out = {"budget": [], "sigma_x": [], "trap": [], "rows": []}
    for s, steps in enumerate(plan["budget_steps"]):
        for r in range(plan["runs"]):
            out["budget"].append(_run(X, plan["particles"], steps, (SEED, tag, 0, s, r),
                                      dict(DIGITS, sigma_x=0.25)))
    for s, sigma in enumerate(plan["sigmas"]):
        for r in range(plan["runs"]):
            out["sigma_x"].append(_run(X, plan["particles"], plan["sigma_steps"],
                                       (SEED, tag, 1, s, r), dict(DIGITS, sigma_x=sigma)))
    for s, n_rows in enumerate(plan["row_counts"]):  # the first n_rows of the 300 (shuffled)
        rows = np.random.default_rng((SEED, 3)).permutation(X.shape[0])[:n_rows]
        for r in range(plan["runs"]):
            out["rows"].append(_run(X[rows], plan["particles"], plan["rows_steps"],
                                    (SEED, tag, 3, s, r), dict(DIGITS, sigma_x=0.25)))
    Xg, Z_true, _ = datasets.simulate_four_feature_data(np.random.default_rng(1), sigma_x=0.1)
    for r in range(plan["runs"]):
        out["trap"].append(_run(Xg, plan["particles"], plan["trap_steps"], (SEED, tag, 2, 0, r),
                                TRAP, Z_true=Z_true))
    return out


def stack() -> dict:
    import numba
    import scipy

    return dict(python=platform.python_version(), numpy=np.__version__, scipy=scipy.__version__,
                numba=numba.__version__, machine=platform.machine(), system=platform.system(),
                cores=os.cpu_count())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    print("reduced runs", flush=True)
    quick = runs(QUICK, tag=1)
    if args.quick:
        json.dump(quick, sys.stdout, indent=1)
        return 0
    print("full runs", flush=True)
    start = time.process_time()
    full = runs(FULL, tag=0)
    record = dict(command="python experiments/smc_digits.py", seed=SEED, stack=stack(),
                  date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  cpu_seconds=time.process_time() - start, plan=FULL, quick_plan=QUICK,
                  runs=full, quick=quick)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, args.out)  # atomically: a stopped run leaves the old file whole
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
