"""The digits' Gibbs modes weighed by the evidence: the runs the tempering chapter reads.

Usage::

    .venv/bin/python experiments/modes_digits.py           # the full runs (about 6 min of CPU)
    .venv/bin/python experiments/modes_digits.py --quick   # the reduced runs only (seconds)

Plain Gibbs chains on the 300 training digits settle in different regions (the chains
chapter) and the log joint of a state ranks points, not regions. This script weighs the
regions by their evidence ``p(X, region)`` (:meth:`ibp_lab.inference.smc.SMCResult.region_log_evidence`),
at the chapter's fixed hyperparameters (alpha = 1, sigma_X = 0.25, sigma_A = 0.3):

- ``chains``: four plain Gibbs chains from the chains chapter's four starts (the starts of
  ``experiments/tempering_digits.py``); for each, the second half's mean K+ and mean log
  joint, and its final state's co-ownership ``Z Z^T`` (not stored: it labels particles);
- ``smc``: independent SMC runs from the prior (32 particles, the longest ladder of
  ``experiments/smc_digits.py``); for each particle at b = 1 its K+, normalised log weight,
  log joint and the chain whose final state is nearest in co-ownership (Frobenius
  distance, label-free) with that distance (and the chains' distances to each other, for
  scale). The regions "K+ = k" and "nearest to chain
  c" partition the states, so each has an evidence, estimated from the run.

Writes ``ibp_lab/data/experiments/modes_digits.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py``
reruns. Finished SMC runs are kept in ``_build/experiment-cache/modes_digits/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import smc
from ibp_lab.evaluation.summaries import co_ownership  # noqa: E402
from ibp_lab.inference.chains import GibbsSweep, run_chains  # noqa: E402
from ibp_lab.models.linear_gaussian import collapsed_loglik  # noqa: E402
from ibp_lab.models.prior import log_prior  # noqa: E402
from _record import cached_row, write_record  # noqa: E402
from tempering_digits import _starts  # noqa: E402

SEED = 2030
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "modes_digits.json"
CACHE = ROOT / "_build" / "experiment-cache" / "modes_digits"
FIXED = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
FULL = dict(chain_sweeps=3000, particles=32, steps=4000, runs=4)
QUICK = dict(chain_sweeps=20, particles=6, steps=15, runs=2)


def _log_joint(X, Z) -> float:
    return float(collapsed_loglik(X, Z, FIXED["sigma_x"], FIXED["sigma_a"])
                 + log_prior(Z, FIXED["alpha"]))


def chains(plan: dict, tag: int, X) -> tuple[list, list]:
    """The chains' rows, and their final states' co-ownership matrices."""
    _, results = run_chains(X, 4, plan["chain_sweeps"], np.random.default_rng((SEED, tag, 0)),
                            Z0=_starts(X.shape[0]), **FIXED, moves=[GibbsSweep()])
    half = plan["chain_sweeps"] // 2
    rows = [dict(start=c, mean_k_plus=float(r.trace["k_plus"].values[half:].mean()),
                 mean_log_joint=float(r.trace["log_joint"].values[half:].mean()),
                 sd_log_joint=float(r.trace["log_joint"].values[half:].std()),
                 final_k_plus=int(r.Z.shape[1]), final_log_joint=_log_joint(X, r.Z),
                 cpu_seconds=float(r.seconds[-1]))
            for c, r in enumerate(results)]
    return rows, [co_ownership(r.Z) for r in results]


def smc_run(plan: dict, tag: int, r: int, X, modes: list) -> dict:
    """One SMC run's row, its particles labelled by K+ and by the nearest chain mode."""
    rng = np.random.default_rng((SEED, tag, 1, r))
    run = smc.run_smc(X, plan["particles"], rng, **FIXED, n_temperatures=plan["steps"])
    distance = np.array([[np.linalg.norm(co_ownership(Z) - M) for M in modes]
                         for Z in run.states])
    nearest = distance.argmin(axis=1)
    row = dict(seed=[SEED, tag, 1, r], n_particles=plan["particles"], n_steps=plan["steps"],
               log_evidence=run.log_evidence, cpu_seconds=run.cpu_seconds,
               k_plus=run.k_plus.tolist(), log_weights=run.log_weights.tolist(),
               log_joint=[_log_joint(X, Z) for Z in run.states],
               nearest_chain=nearest.tolist(),
               nearest_distance=distance[np.arange(nearest.size), nearest].tolist(),
               log_evidence_by_k={str(k): v for k, v in
                                  run.region_log_evidence(run.k_plus).items()},
               log_evidence_by_chain={str(c): v for c, v in
                                      run.region_log_evidence(nearest).items()})
    print(f"  SMC run {r}: log Z_hat {row['log_evidence']:9.2f}, "
          f"{row['cpu_seconds']:6.1f} s", flush=True)
    return row


def _cached_smc_run(plan, tag, r, X, modes, *, cache: bool) -> dict:
    if not cache:
        return smc_run(plan, tag, r, X, modes)
    path = CACHE / f"{tag}-{r}-{plan['particles']}-{plan['steps']}-{plan['chain_sweeps']}.json"
    return cached_row(path, lambda: smc_run(plan, tag, r, X, modes))


def runs(plan: dict, tag: int, *, cache: bool = True, only_runs=None) -> dict:
    """The chains, then the SMC runs (``only_runs``: these SMC run indices, into the cache)."""
    X = datasets.load_digit_sets().train
    chain_rows, modes = chains(plan, tag, X)
    smc_rows = [_cached_smc_run(plan, tag, r, X, modes, cache=cache)
                for r in (only_runs if only_runs is not None else range(plan["runs"]))]
    # the modes' distances to each other, the scale for the particles' nearest distances
    between = [[float(np.linalg.norm(a - b)) for b in modes] for a in modes]
    return dict(chains=chain_rows, chain_distances=between, smc=smc_rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--run", type=int, action="append",
                        help="only these SMC runs, into the cache (processes share the work); "
                             "the record is written when no --run is given")
    args = parser.parse_args(argv)
    if args.run:
        runs(FULL, tag=0, only_runs=args.run)
        return 0
    quick = runs(QUICK, tag=1, cache=False)
    if args.quick:
        json.dump(quick, sys.stdout, indent=1)
        return 0
    full = runs(FULL, tag=0)
    total_cpu = (sum(row["cpu_seconds"] for row in full["chains"])
                 + sum(row["cpu_seconds"] for row in full["smc"]))
    write_record(args.out, "modes_digits", seed=SEED, cpu_seconds=total_cpu, plan=FULL,
                 quick_plan=QUICK, runs=full, quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
