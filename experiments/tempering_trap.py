"""The all-on trap with the ladder its rule sizes: the runs the tempering chapter reads.

Usage::

    .venv/bin/python experiments/tempering_trap.py           # the full runs (about 4 min of CPU)
    .venv/bin/python experiments/tempering_trap.py --quick   # the reduced runs only (seconds)

The chapter's trap: 100 of Griffiths and Ghahramani's four-feature images at sigma_X = 0.1
(sigma_A = 1, alpha = 1, fixed), every chain started from one feature owned by every image.
The ladder runs from the prior (b = 0) to b = 1 and is sized by the chapter's rule
R - 1 >= 2 Lambda, in two steps:

1. ``pilot``: one tempered run with R_0 = ceil(2 Lambda_SMC) + 1 rungs, where Lambda_SMC is
   the mean barrier that the SMC runs of ``experiments/smc_digits.py`` measured on these
   data; the pilot measures the barrier that replica exchange itself meets;
2. ``runs``: independent tempered runs with R = ceil(2 Lambda_pilot) + 1 rungs, each
   followed by a plain Gibbs chain from the same start for as many sweeps as the
   tempered run's realised CPU time buys (the plain sweep's cost measured on a pilot
   chain's second half).

For each run: the cold chain's final K+ and its log-joint gap to the true Z, the restarts
(a state carried from the prior's rung to the cold one), the measured barrier, the
adjacent pairs' swap acceptance, the CPU time, and the log joint thinned; the same for
the plain chain. Writes ``ibp_lab/data/experiments/tempering_trap.json`` with command,
stack, seed, date and the reduced runs that ``tests/test_experiments.py`` reruns.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import tempering
from ibp_lab.inference.chains import GibbsSweep, run_chains  # noqa: E402
from ibp_lab.models.linear_gaussian import collapsed_loglik  # noqa: E402
from ibp_lab.models.prior import log_prior  # noqa: E402
from _record import quick_then_full  # noqa: E402

SEED = 2031
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "tempering_trap.json"
TRAP = dict(alpha=1.0, sigma_x=0.1, sigma_a=1.0)
FULL = dict(pilot_rounds=500, pilot_burn=200, rounds=2000, burn=600, runs=3,
            gibbs_pilot_sweeps=200)
QUICK = dict(pilot_rounds=10, pilot_burn=4, rounds=12, burn=4, runs=2, gibbs_pilot_sweeps=10)
THIN = 10


def rungs_for(barrier: float) -> int:
    """The rule R - 1 >= 2 Lambda: the fewest rungs for a barrier ``Lambda``."""
    return int(math.ceil(2.0 * barrier)) + 1


def smc_barrier() -> float:
    """Lambda(0 -> 1) on the trap's data, the mean over the SMC record's trap runs."""
    record = datasets.load_experiment("smc_digits")
    return float(np.mean([row["barrier"] for row in record["runs"]["trap"]]))


def _tempered(X, plan, rounds, burn, rungs, seed):
    on = np.ones((X.shape[0], 1))
    return tempering.run_tempered(X, rounds, np.random.default_rng(seed), **TRAP, Z0=on,
                                  n_temperatures=rungs, burn=burn, min_inverse_temperature=0.0)


def _plain_seconds_per_sweep(X, plan, tag) -> float:
    """A plain sweep's CPU time from the all-on start, over a pilot chain's second half."""
    n = plan["gibbs_pilot_sweeps"]
    _, (pilot,) = run_chains(X, 1, n, np.random.default_rng((SEED, tag, 1)),
                             Z0=np.ones((X.shape[0], 1)), **TRAP, moves=[GibbsSweep()])
    return float((pilot.seconds[-1] - pilot.seconds[n // 2 - 1]) / (n - n // 2))


def run(plan: dict, tag: int, sweeps=None) -> dict:
    """The pilot, then the runs (``sweeps``: the plain chains' sweeps, to rerun a record)."""
    X, Z_true, _ = datasets.simulate_four_feature_data(np.random.default_rng(1), sigma_x=0.1)
    true_joint = float(collapsed_loglik(X, Z_true, 0.1, 1.0) + log_prior(Z_true, 1.0))
    lambda_smc = smc_barrier()
    pilot = _tempered(X, plan, plan["pilot_rounds"], plan["pilot_burn"], rungs_for(lambda_smc),
                      (SEED, tag, 0))
    rungs = rungs_for(pilot.communication_barrier)
    per_sweep = _plain_seconds_per_sweep(X, plan, tag)
    out = dict(true_log_joint=true_joint, smc_barrier=lambda_smc,
               pilot=dict(rungs=rungs_for(lambda_smc), barrier=pilot.communication_barrier,
                          restarts=int(pilot.restarts)),
               rungs=rungs, plain_seconds_per_sweep=per_sweep, tempered=[], gibbs=[])
    for r in range(plan["runs"]):
        t0 = time.process_time()
        hot = _tempered(X, plan, plan["rounds"], plan["burn"], rungs, (SEED, tag, 2, r))
        cpu = time.process_time() - t0
        joint = hot.trace["log_joint"].values
        out["tempered"].append(dict(
            cpu_seconds=cpu, gap=true_joint - float(joint[-1]),
            k_plus=int(hot.trace["k_plus"].values[-1]), restarts=int(hot.restarts),
            barrier=hot.communication_barrier, swap_acceptance=hot.swap_acceptance.tolist(),
            log_joint=joint[::THIN].tolist()))
        n_sweeps = sweeps[r] if sweeps else max(int(round(cpu / per_sweep)), 10)
        _, (plain,) = run_chains(X, 1, n_sweeps, np.random.default_rng((SEED, tag, 3, r)),
                                 Z0=np.ones((X.shape[0], 1)), **TRAP, moves=[GibbsSweep()])
        joint = plain.trace["log_joint"].values
        out["gibbs"].append(dict(
            cpu_seconds=float(plain.seconds[-1]), sweeps=n_sweeps,
            gap=true_joint - float(joint[-1]), k_plus=int(plain.trace["k_plus"].values[-1]),
            log_joint=joint[::THIN].tolist()))
        print(f"  run {r}: tempered ({rungs} rungs) gap {out['tempered'][-1]['gap']:.0f} nats "
              f"in {cpu:.0f} s; plain gap {out['gibbs'][-1]['gap']:.0f} in "
              f"{plain.seconds[-1]:.0f} s", flush=True)
    return out


def main(argv=None) -> int:
    return quick_then_full(argv, doc=__doc__, name="tempering_trap", run=run, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT, hyperparameters=TRAP)


if __name__ == "__main__":
    sys.exit(main())
