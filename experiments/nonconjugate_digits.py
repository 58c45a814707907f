"""Five samplers on the 300 digits: effective samples per CPU second, the runs the
non-conjugate chapter reads.

Usage::

    .venv/bin/python experiments/nonconjugate_digits.py           # the full runs (about 2 min of CPU)
    .venv/bin/python experiments/nonconjugate_digits.py --quick   # the reduced runs only (seconds)
    .venv/bin/python experiments/nonconjugate_digits.py --only uncollapsed_data
        # the full runs of one sampler, merged into the record (the others' kept)

The same posterior (the 300 training digits, alpha = 1, sigma_X = 0.25, sigma_A = 0.3, all
fixed), five samplers:

- ``accelerated``: the book's compiled collapsed sweep (:func:`ibp_lab.inference.chains.run_chain`),
  which keeps the posterior of ``A`` given the other rows as a running information form
  and touches each row at ``O(K^2 + K D)`` (Doshi-Velez & Ghahramani 2009);
- ``collapsed``: the same sweep from scratch, each row's posterior of ``A`` recomputed
  (:func:`ibp_lab.inference.gibbs.gibbs_sweep_numpy`, ``O(K^3 + N K D)`` per row). It draws the same
  chain as ``accelerated`` from the same seed (a doctest and ``tests/inference/test_gibbs.py`` check
  it), so its effective samples per sweep are those of ``accelerated``; only its CPU
  seconds per sweep are measured, on ``numpy_sweeps`` sweeps;
- ``uncollapsed``: Gibbs with ``A`` kept and births by Metropolis-Hastings
  (:func:`ibp_lab.inference.uncollapsed.run_uncollapsed`), the new images from their prior;
- ``uncollapsed_data``: the same sampler with ``births="data"``: at each visit a row proposes
  one birth, its image drawn from its exact conditional given the row, or the death of one
  of its singletons (the move of the chapter's exercise ``ex-nc-data-births``);
- ``slice``: the stick-breaking slice sampler (:func:`ibp_lab.inference.slice_sampler.run_slice`).

Every sampler starts its ``c``-th chain from the same state: a collapsed chain of
``warm_sweeps`` sweeps from the default start, seeded by ``c`` (so the comparison is of
mixing within a region, not of the search for one). Each chain then runs the sweeps the
plan gives its sampler (see ``FULL``); the first tenth is dropped. Per chain: the bulk ESS
(ArviZ, rank-normalised) of the log joint and of K+, the CPU seconds of the sweeps (compiled code loaded before timing), the
mean log joint and K+; per sampler, the multi-chain bulk ESS and R-hat, which penalise
chains that disagree.

Writes ``ibp_lab/data/experiments/nonconjugate_digits.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py`` reruns.
Sampler ``s`` (its place in ``SAMPLERS``) seeds its ``c``-th chain with ``(SEED, tag, 1, s, c)``,
so a sampler appended later leaves the others' draws unchanged, and ``--only`` reruns one
sampler's full chains exactly as a whole run would (the record's ``merged`` says which
samplers were rerun so, when, and at what CPU cost, and its ``cpu_seconds`` adds that cost;
the reduced runs are always rerun whole). The current record is a whole run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import gibbs, slice_sampler, uncollapsed
from ibp_lab.inference.chains import GibbsSweep, run_chain  # noqa: E402
from _record import write_record  # noqa: E402

SEED = 2031
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "nonconjugate_digits.json"
FIXED = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
#: Sweeps per chain, set so that every sampler's chain costs about 25 CPU seconds on the
#: reference machine (1.7, 2.9 and 9.4 ms a sweep for the accelerated, slice and
#: uncollapsed samplers, measured with the machine otherwise idle; a run beside other work
#: measured up to twice that): a matched budget, not matched sweeps, is what a user meets.
#: Run it on an idle machine; the record keeps the realised seconds of every chain.
#: The uncollapsed and slice sweeps have since become several times cheaper (0.6 ms a
#: sweep in the 2026-12-06 rerun, on a loaded machine; accelerated 1.1 ms), so the budgets
#: are no longer matched. The sweeps were kept so that seeded results stay the same; the
#: data-driven births run the uncollapsed sampler's sweeps, at about its cost.
FULL = dict(chains=4, warm_sweeps=200, numpy_sweeps=10, rows=300,
            sweeps=dict(accelerated=14000, slice=8000, uncollapsed=2700, uncollapsed_data=2700))
QUICK = dict(chains=2, warm_sweeps=5, numpy_sweeps=1, rows=40,
             sweeps=dict(accelerated=30, slice=20, uncollapsed=10, uncollapsed_data=10))
#: The samplers run, in seed order: append, never insert (a place seeds the chains).
SAMPLERS = ("accelerated", "uncollapsed", "slice", "uncollapsed_data")
#: What ``--only`` may name: a sampler, or the from-scratch sweep's timing.
PARTS = SAMPLERS + ("collapsed",)


def _chain(sampler: str, X, Z0, sweeps: int, rng) -> dict:
    """One chain's traces and its CPU seconds."""
    if sampler == "accelerated":
        run = run_chain(X, sweeps, rng, Z0=Z0, **FIXED, moves=[GibbsSweep()])
        return dict(log_joint=run.trace["log_joint"].values, k_plus=run.trace["k_plus"].values,
                    seconds=float(run.seconds[-1]))
    if sampler == "slice":
        run = slice_sampler.run_slice(X, sweeps, rng, **FIXED, Z0=Z0)
    else:
        births = "data" if sampler == "uncollapsed_data" else "prior"
        run = uncollapsed.run_uncollapsed(X, sweeps, rng, **FIXED, Z0=Z0, births=births)
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
                      **FIXED, moves=[GibbsSweep()]).Z
            for c in range(plan["chains"])]


def _numpy_seconds_per_sweep(X, Z0, plan: dict, tag: int) -> float:
    rng = np.random.default_rng((SEED, tag, 9))
    start, Z = time.process_time(), Z0
    for _ in range(plan["numpy_sweeps"]):
        Z = gibbs.gibbs_sweep_numpy(X, Z, **FIXED, rng=rng)
    return (time.process_time() - start) / plan["numpy_sweeps"]


def runs(plan: dict, tag: int, only=PARTS) -> dict:
    """The chains of every sampler in ``only`` (default all, and the from-scratch sweep's
    timing), from the shared warm starts."""
    X = datasets.load_digit_sets().train[: plan["rows"]]
    for sampler in SAMPLERS:  # load the compiled kernels before any timing
        _chain(sampler, X[:8], None, 2, np.random.default_rng(0))
    starts = _warm_starts(X, plan, tag)
    out = {}
    for s, sampler in enumerate(SAMPLERS):
        if sampler not in only:
            continue
        sweeps = plan["sweeps"][sampler]
        traces = [_chain(sampler, X, Z0, sweeps, np.random.default_rng((SEED, tag, 1, s, c)))
                  for c, Z0 in enumerate(starts)]
        kept = slice(sweeps // 10, None)
        joint = np.array([t["log_joint"][kept] for t in traces])
        counts = np.array([t["k_plus"][kept] for t in traces], float)
        out[sampler] = dict(chains=[_row(t, sweeps) for t in traces],
                            pooled_ess_log_joint=_ess(joint), pooled_ess_k_plus=_ess(counts),
                            rhat_log_joint=_rhat(joint), rhat_k_plus=_rhat(counts))
        print(f"  {sampler:16s} " + ", ".join(f"{r['ess_log_joint']}/{r['seconds']:.1f}s"
                                              for r in out[sampler]["chains"]), flush=True)
    if "collapsed" in only:
        out["collapsed"] = dict(seconds_per_sweep=_numpy_seconds_per_sweep(X, starts[0], plan,
                                                                           tag))
    return out


def merged(record: dict, fresh: dict) -> dict:
    """The record's full runs with ``fresh``'s samplers put in (in ``PARTS`` order)."""
    old = record["runs"]
    return {name: fresh[name] if name in fresh else old[name] for name in PARTS
            if name in fresh or name in old}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", action="append", choices=PARTS, metavar="NAME",
                        help="rerun only this sampler's full runs (repeatable; one of "
                             f"{', '.join(PARTS)}) and merge them into the record at --out")
    args = parser.parse_args(argv)
    quick_runs = runs(QUICK, tag=1)
    if args.quick:
        json.dump(quick_runs, sys.stdout, indent=1)
        return 0
    start = time.process_time()
    full_runs = runs(FULL, tag=0, only=tuple(args.only or PARTS))
    cpu_seconds = time.process_time() - start
    fields = dict(seed=SEED, cpu_seconds=cpu_seconds)
    if args.only:  # the other samplers' runs, CPU seconds and earlier merges kept
        record = json.loads(args.out.read_text())
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        fields = dict(seed=SEED, cpu_seconds=record["cpu_seconds"] + cpu_seconds,
                      merged=record.get("merged", []) + [
                          dict(only=args.only, date=stamp, cpu_seconds=cpu_seconds)])
        full_runs = merged(record, full_runs)
    write_record(args.out, "nonconjugate_digits", **fields, plan=FULL, quick_plan=QUICK,
                 fixed=FIXED, runs=full_runs, quick=quick_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
