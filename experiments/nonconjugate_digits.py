"""Four samplers on the 300 digits: effective samples per CPU second, the runs the
non-conjugate chapter reads.

Usage::

    .venv/bin/python experiments/nonconjugate_digits.py           # the full runs (about 6 min of CPU)
    .venv/bin/python experiments/nonconjugate_digits.py --quick   # the reduced runs only (seconds)

The same posterior (the 300 training digits, alpha = 1, sigma_X = 0.25, sigma_A = 0.3, all
fixed), four samplers:

- ``accelerated``: the book's compiled collapsed sweep (:func:`ibp_lab.inference.chains.run_chain`),
  which keeps the posterior of ``A`` given the other rows as a running information form
  and touches each row at ``O(K^2 + K D)`` (Doshi-Velez & Ghahramani 2009);
- ``collapsed``: the same sweep from scratch, each row's posterior of ``A`` recomputed
  (:func:`ibp_lab.inference.gibbs.gibbs_sweep_numpy`, ``O(K^3 + N K D)`` per row). It draws the same
  chain as ``accelerated`` from the same seed (a doctest and ``tests/inference/test_gibbs.py`` check
  it), so its effective samples per sweep are those of ``accelerated``; only its CPU
  seconds per sweep are measured, on ``numpy_sweeps`` sweeps;
- ``uncollapsed``: Gibbs with ``A`` kept and births by Metropolis-Hastings
  (:func:`ibp_lab.inference.uncollapsed.run_uncollapsed`);
- ``slice``: the stick-breaking slice sampler (:func:`ibp_lab.inference.slice_sampler.run_slice`).

Every sampler starts its ``c``-th chain from the same state: a collapsed chain of
``warm_sweeps`` sweeps from the default start, seeded by ``c`` (so the comparison is of
mixing within a region, not of the search for one). Each chain then runs the sweeps the
plan gives its sampler (about the same CPU time for each); the first tenth is dropped. Per chain: the bulk ESS (ArviZ, rank-normalised) of the
log joint and of K+, the CPU seconds of the sweeps (compiled code loaded before timing), the
mean log joint and K+; per sampler, the multi-chain bulk ESS and R-hat, which penalise
chains that disagree.

Writes ``ibp_lab/data/experiments/nonconjugate_digits.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py`` reruns.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import gibbs, slice_sampler, uncollapsed
from ibp_lab.inference.chains import run_chain  # noqa: E402
from _record import quick_then_full  # noqa: E402

SEED = 2031
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "nonconjugate_digits.json"
FIXED = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
#: Sweeps per chain, set so that every sampler's chain costs about 25 CPU seconds on the
#: reference machine (1.7, 2.9 and 9.4 ms a sweep for the accelerated, slice and
#: uncollapsed samplers, measured with the machine otherwise idle; a run beside other work
#: measured up to twice that): a matched budget, not matched sweeps, is what a user meets.
#: Run it on an idle machine; the record keeps the realised seconds of every chain.
FULL = dict(chains=4, warm_sweeps=200, numpy_sweeps=10, rows=300,
            sweeps=dict(accelerated=14000, slice=8000, uncollapsed=2700))
QUICK = dict(chains=2, warm_sweeps=5, numpy_sweeps=1, rows=40,
             sweeps=dict(accelerated=30, slice=20, uncollapsed=10))
SAMPLERS = ("accelerated", "uncollapsed", "slice")


def _chain(sampler: str, X, Z0, sweeps: int, rng) -> dict:
    """One chain's traces and its CPU seconds."""
    if sampler == "accelerated":
        run = run_chain(X, sweeps, rng, Z0=Z0, **FIXED, update_alpha=False,
                        update_sigma_a=False)
        return dict(log_joint=run.trace["log_joint"].values, k_plus=run.trace["k_plus"].values,
                    seconds=float(run.seconds[-1]))
    runner = uncollapsed.run_uncollapsed if sampler == "uncollapsed" else slice_sampler.run_slice
    run = runner(X, sweeps, rng, **FIXED, Z0=Z0)
    return dict(log_joint=run.trace["log_joint"].values, k_plus=run.trace["k_plus"].values,
                seconds=float(run.sample_stats["seconds"].values[-1]))


def _ess(values: np.ndarray) -> float | None:
    """Bulk ESS of one chain or of a (chain, draw) array; None (JSON null, not NaN, which
    JSON lacks) when the values never move."""
    import arviz as az

    values = np.atleast_2d(values)
    return None if np.ptp(values) == 0 else float(az.ess(values, method="bulk"))


def _rhat(values: np.ndarray) -> float | None:
    """Rank R-hat; None when it is not a number (the values never move, or a chain that
    never moves makes ArviZ divide by zero)."""
    import arviz as az

    if np.ptp(values) == 0:
        return None
    with warnings.catch_warnings():  # a constant chain: ArviZ divides by zero, and says so
        warnings.simplefilter("ignore", RuntimeWarning)
        rhat = float(az.rhat(values, method="rank"))
    return rhat if np.isfinite(rhat) else None


def _row(trace: dict, sweeps: int) -> dict:
    kept = slice(sweeps // 10, None)
    return dict(ess_log_joint=_ess(trace["log_joint"][kept]), ess_k_plus=_ess(trace["k_plus"][kept]),
                seconds=trace["seconds"], mean_log_joint=float(trace["log_joint"][kept].mean()),
                mean_k_plus=float(trace["k_plus"][kept].mean()))


def _warm_starts(X, plan: dict, tag: int) -> list:
    return [run_chain(X, plan["warm_sweeps"], np.random.default_rng((SEED, tag, 0, c)),
                      **FIXED, update_alpha=False, update_sigma_a=False).Z
            for c in range(plan["chains"])]


def _numpy_seconds_per_sweep(X, Z0, plan: dict, tag: int) -> float:
    rng = np.random.default_rng((SEED, tag, 9))
    start, Z = time.process_time(), Z0
    for _ in range(plan["numpy_sweeps"]):
        Z = gibbs.gibbs_sweep_numpy(X, Z, **FIXED, rng=rng)
    return (time.process_time() - start) / plan["numpy_sweeps"]


def runs(plan: dict, tag: int) -> dict:
    """Every sampler's chains from the shared warm starts."""
    X = datasets.load_digit_sets().train[: plan["rows"]]
    for sampler in SAMPLERS:  # load the compiled kernels before any timing
        _chain(sampler, X[:8], None, 2, np.random.default_rng(0))
    starts = _warm_starts(X, plan, tag)
    out = {}
    for s, sampler in enumerate(SAMPLERS):
        sweeps = plan["sweeps"][sampler]
        traces = [_chain(sampler, X, Z0, sweeps, np.random.default_rng((SEED, tag, 1, s, c)))
                  for c, Z0 in enumerate(starts)]
        kept = slice(sweeps // 10, None)
        joint = np.array([t["log_joint"][kept] for t in traces])
        counts = np.array([t["k_plus"][kept] for t in traces], float)
        out[sampler] = dict(chains=[_row(t, sweeps) for t in traces],
                            pooled_ess_log_joint=_ess(joint), pooled_ess_k_plus=_ess(counts),
                            rhat_log_joint=_rhat(joint), rhat_k_plus=_rhat(counts))
        print(f"  {sampler:12s} " + ", ".join(f"{r['ess_log_joint']}/{r['seconds']:.1f}s"
                                              for r in out[sampler]["chains"]), flush=True)
    out["collapsed"] = dict(seconds_per_sweep=_numpy_seconds_per_sweep(X, starts[0], plan, tag))
    return out


def main(argv=None) -> int:
    return quick_then_full(argv, doc=__doc__, name="nonconjugate_digits", run=runs, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT, fixed=FIXED)


if __name__ == "__main__":
    sys.exit(main())
