"""Sequential Monte Carlo on the digits and on the all-on trap: the runs the tempering chapter reads.

Usage::

    .venv/bin/python experiments/smc_digits.py            # the full runs (about an hour of CPU)
    .venv/bin/python experiments/smc_digits.py --quick    # the reduced runs only (seconds)
    .venv/bin/python experiments/smc_digits.py --part sigma_x &   # share the work between
    .venv/bin/python experiments/smc_digits.py --part budget      # processes, then the first
                                                                  # command assembles the record

Finished runs are kept in ``_build/experiment-cache/`` (a stopped run resumes there);
the record's ``cpu_seconds`` is the sum of the runs' own CPU times (each in its row).

Writes ``ibp_lab/data/experiments/smc_digits.json`` (read by
:func:`ibp_lab.datasets.load_experiment`) (``--out`` to write elsewhere): for each run its
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
- ``sigma_x``: the same digits at sigma_X = 0.1, 0.15, 0.2, 0.25 and 0.3, T = 2000,
  three runs each: the evidence's verdict on sigma_X;
- ``rows``: the first 38, 75 and 150 of the 300 digits (in a fixed shuffled order) at
  sigma_X = 0.25, T = 1000, three runs each: how the barrier grows with N (with the
  300 of ``budget``);
- ``trap``: the four-feature images at sigma_X = 0.1 (sigma_A = 1), T = 1000, three
  runs: the log joint of the particles against the true Z's.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import smc
from ibp_lab.models.linear_gaussian import collapsed_loglik  # noqa: E402
from ibp_lab.models.prior import log_prior  # noqa: E402

sys.path.insert(0, str(ROOT / "experiments"))
from _record import cached_row, write_record  # noqa: E402

SEED = 2028
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "smc_digits.json"
DIGITS = dict(alpha=1.0, sigma_a=0.3)
TRAP = dict(alpha=1.0, sigma_x=0.1, sigma_a=1.0)
FULL = dict(particles=32, runs=3, budget_steps=(250, 1000, 4000), sigma_steps=2000,
            sigmas=(0.1, 0.15, 0.2, 0.25, 0.3), trap_steps=1000, row_counts=(38, 75, 150),
            rows_steps=1000)
QUICK = dict(particles=8, runs=2, budget_steps=(20, 40), sigma_steps=30,
             sigmas=(0.25, 0.35), trap_steps=30, row_counts=(38,), rows_steps=20)


CACHE = ROOT / "_build" / "experiment-cache" / "smc_digits"


def _run(X, n_particles, n_steps, seed, hyper, Z_true=None, *, cache=True) -> dict:
    """One run's row; a finished row is kept in CACHE, so a stopped script resumes."""
    if not cache:
        return _fresh_run(X, n_particles, n_steps, seed, hyper, Z_true)
    key = "-".join(map(str, seed)) + f"-{n_particles}-{n_steps}-{X.shape[0]}"
    return cached_row(CACHE / f"{key}.json",
                      lambda: _fresh_run(X, n_particles, n_steps, seed, hyper, Z_true))


def _fresh_run(X, n_particles, n_steps, seed, hyper, Z_true=None) -> dict:
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


PARTS = ("budget", "sigma_x", "rows", "trap")


def runs(plan: dict, tag: int, parts=PARTS, *, cache: bool = True, reverse: bool = False,
         only_runs=None) -> dict:
    """Every run of ``plan`` in ``parts``; seeds ``(SEED, tag, part, setting, run)``, the
    setting a number of steps, a sigma_X in thousandths or a number of rows. ``cache=False``
    runs everything afresh (the test that reruns the reduced plan)."""
    run = functools.partial(_run, cache=cache)
    X = datasets.load_digit_sets().train
    out = {"budget": [], "sigma_x": [], "trap": [], "rows": []}
    # (reverse only changes the order of work; the record is assembled in plan order)
    for steps in plan["budget_steps"] if "budget" in parts else ():
        for r in range(plan["runs"]):
            out["budget"].append(run(X, plan["particles"], steps, (SEED, tag, 0, steps, r),
                                      dict(DIGITS, sigma_x=0.25)))
    sigmas = plan["sigmas"][::-1] if reverse else plan["sigmas"]
    for sigma in sigmas if "sigma_x" in parts else ():
        for r in only_runs or range(plan["runs"]):
            out["sigma_x"].append(run(X, plan["particles"], plan["sigma_steps"],
                                       (SEED, tag, 1, round(1000 * sigma), r),
                                       dict(DIGITS, sigma_x=sigma)))
    for n_rows in plan["row_counts"] if "rows" in parts else ():  # the first n_rows (shuffled)
        rows = np.random.default_rng((SEED, 3)).permutation(X.shape[0])[:n_rows]
        for r in range(plan["runs"]):
            out["rows"].append(run(X[rows], plan["particles"], plan["rows_steps"],
                                    (SEED, tag, 3, n_rows, r), dict(DIGITS, sigma_x=0.25)))
    Xg, Z_true, _ = datasets.simulate_four_feature_data(np.random.default_rng(1), sigma_x=0.1)
    for r in range(plan["runs"]) if "trap" in parts else ():
        out["trap"].append(run(Xg, plan["particles"], plan["trap_steps"], (SEED, tag, 2, 0, r),
                                TRAP, Z_true=Z_true))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--part", choices=PARTS, action="append",
                        help="run only these parts into the cache (two processes can share "
                             "the work); the record is written when no --part is given")
    parser.add_argument("--reverse", action="store_true",
                        help="with --part sigma_x: the sigmas from the largest (a second process)")
    parser.add_argument("--run", type=int, action="append",
                        help="with --part sigma_x: only these run indices (more processes)")
    args = parser.parse_args(argv)
    if args.part:
        runs(FULL, tag=0, parts=args.part, reverse=args.reverse, only_runs=args.run)
        return 0
    print("reduced runs", flush=True)
    quick = runs(QUICK, tag=1)
    if args.quick:
        json.dump(quick, sys.stdout, indent=1)
        return 0
    print("full runs", flush=True)
    full = runs(FULL, tag=0)
    total_cpu = sum(row["cpu_seconds"] for part in full.values() for row in part)
    write_record(args.out, "smc_digits", seed=SEED, cpu_seconds=total_cpu, plan=FULL,
                 quick_plan=QUICK, runs=full, quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
