"""Replica exchange on the digits with the ladder its own rule asks for, against plain Gibbs at equal CPU.

Usage::

    .venv/bin/python experiments/tempering_digits.py            # the full runs (about 5 CPU minutes)
    .venv/bin/python experiments/tempering_digits.py --quick    # the reduced runs only

The tempering chapter's digit run used 16 rungs down to b = 0.3 and measured a barrier
Lambda of about 11.9 there; the rule of that chapter (R - 1 >= 2 Lambda rungs, so that
no adjacent pair rejects more than about half its swaps) asks for at least 25. A first
run with 26 rungs measured Lambda of about 14.4 (a finer ladder resolves more of it),
for which the rule asks for 30; ``FULL['rungs']`` is 30. Here:
four runs of ``R = FULL['rungs']`` rungs from the chapter's four starts, ``rounds`` rounds of
which the first ``burn`` tune the ladder; then four plain Gibbs chains from the same
starts, given the number of sweeps that a pilot says costs the tempered runs' realised
CPU time. Both sides' realised CPU times are recorded, with R-hat and ESS of the log
joint and of K+ (ArviZ, after warm-up: the first 40% for Gibbs, ``burn`` rounds for
tempering), the tempered runs' barrier, swap acceptance and restarts, and the traces
thinned to every tenth draw.

Writes ``ibp_lab/data/experiments/tempering_digits.json`` (atomically; read by
:func:`ibp_lab.datasets.load_experiment`) with the command, the stack,
the seed and the date; the reduced runs are kept beside the full ones, and
``tests/test_experiments.py`` reruns them and compares.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import arviz as az
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import tempering
from ibp_lab.inference.chains import GibbsSweep, run_chains  # noqa: E402

sys.path.insert(0, str(ROOT / "experiments"))
from _record import quick_then_full  # noqa: E402

SEED = 2029
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "tempering_digits.json"
FIXED = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
FULL = dict(rungs=30, rounds=1000, burn=200, pilot_sweeps=300)
QUICK = dict(rungs=4, rounds=12, burn=4, pilot_sweeps=8)
THIN = 10


def _starts(N: int) -> list:
    """The chains chapter's four starts: one feature for all (twice), two random matrices."""
    rng = np.random.default_rng(5)
    return [np.ones((N, 1)), np.ones((N, 1)), rng.random((N, 40)) < 0.2, rng.random((N, 80)) < 0.1]


def _diagnostics(idata) -> dict:
    out = {}
    for name in ("k_plus", "log_joint"):
        out[f"rhat_{name}"] = float(az.rhat(idata, var_names=[name])[name])
        out[f"ess_{name}"] = float(az.ess(idata, var_names=[name])[name])
    return out


def _traces(results, burn: int) -> list:
    return [dict(seconds=r.seconds[burn::THIN].tolist(),
                 log_joint=r.trace["log_joint"].values[burn::THIN].tolist()) for r in results]


def run(plan: dict, tag: int, sweeps: int | None = None) -> dict:
    """The tempered runs, then plain Gibbs at their CPU (or ``sweeps`` sweeps, to rerun)."""
    X = datasets.load_digit_sets().train
    starts = _starts(X.shape[0])
    t0 = time.process_time()
    idata_pt, runs = tempering.run_tempered_chains(
        X, 4, plan["rounds"], np.random.default_rng((SEED, tag, 0)), Z0=starts, **FIXED,
        n_temperatures=plan["rungs"], min_inverse_temperature=0.3, burn=plan["burn"])
    cpu_pt = time.process_time() - t0
    # pilot: the CPU of a plain sweep once the chains have left their starts (the second
    # half of a pilot run; the first sweeps from the 80-feature start cost several times more)
    _, pilot = run_chains(X, 4, plan["pilot_sweeps"], np.random.default_rng((SEED, tag, 1)),
                          Z0=starts, **FIXED, moves=[GibbsSweep()])
    half = plan["pilot_sweeps"] // 2
    per_sweep = float(np.mean([(c.seconds[-1] - c.seconds[half - 1]) / (len(c.seconds) - half)
                               for c in pilot]))
    if sweeps is None:
        sweeps = max(int(round(cpu_pt / (4 * per_sweep))), 10)
    burn_gibbs = int(0.4 * sweeps)
    t0 = time.process_time()
    idata_gibbs, plain = run_chains(
        X, 4, sweeps, np.random.default_rng((SEED, tag, 2)), Z0=starts, **FIXED,
        burn=burn_gibbs, moves=[GibbsSweep()])
    cpu_gibbs = time.process_time() - t0
    tempered = dict(_diagnostics(idata_pt), cpu_seconds=cpu_pt, rungs=plan["rungs"],
                    rounds=plan["rounds"], burn=plan["burn"],
                    barrier=[r.communication_barrier for r in runs],
                    restarts=[int(r.restarts) for r in runs],
                    swap_acceptance=[r.swap_acceptance.tolist() for r in runs],
                    ladders=[r.inverse_temperatures.tolist() for r in runs],
                    traces=_traces(runs, plan["burn"]))
    gibbs = dict(_diagnostics(idata_gibbs), cpu_seconds=cpu_gibbs, sweeps=sweeps,
                 burn=burn_gibbs, pilot_seconds_per_sweep=per_sweep,
                 traces=_traces(plain, burn_gibbs))
    print(f"tempered: {cpu_pt:.0f} s, R-hat log joint {tempered['rhat_log_joint']:.2f}, "
          f"restarts {tempered['restarts']}; Gibbs: {cpu_gibbs:.0f} s ({sweeps} sweeps), "
          f"R-hat {gibbs['rhat_log_joint']:.2f}", flush=True)
    return dict(tempered=tempered, gibbs=gibbs)


def main(argv=None) -> int:
    return quick_then_full(argv, doc=__doc__, name="tempering_digits", run=run, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT, hyperparameters=FIXED)


if __name__ == "__main__":
    sys.exit(main())
