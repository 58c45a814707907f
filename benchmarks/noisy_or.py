"""Speed of the noisy-OR sampler's sweep on the thresholded digits, births compiled or not.

Run from the repository root::

    python benchmarks/noisy_or.py [--sweeps 40] [--repeats 5] [--grow 200] [--before 471ed94]

Times sweeps of :mod:`ibp_lab.inference.noisy_or` (``_sweep``, as ``noisy_or_sweep`` runs
it without its checks) on the 300 training digits thresholded at one half (as
``experiments/noisy_or_digits.py``: ``alpha = 1``, ``weight_prob = 0.2``, ``strength =
0.9``, ``leak = 0.03``, fixed), with each birth rule, from two states: the experiment's
start (one cause shared by every image, where the births are nearly the whole sweep) and
the state after ``--grow`` sweeps with births from the data (dozens of causes, where the
compiled Gibbs steps weigh more). Three versions of the sweep: "before", the module at
git revision ``--before`` (default 471ed94, before issue 54: step 2 in Python, the Gibbs
steps computing each term's logarithms), run from a temporary file; "python births", the
module now with step 2 through its Python references (``_prior_births_reference``,
``_data_births_reference``); "after", the module now. All three make the same draws,
checked here on the final states. CPU milliseconds per sweep (:func:`time.process_time`),
the median of interleaved runs (before, python births, after, before, ...), the load
average beside each case, since the machine may be shared.

Then where an "after" sweep's time goes: step 1 (causes), step 2 (births), step 3 (links)
and the bookkeeping between them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ibp_lab import _kernel, datasets
from ibp_lab.inference import noisy_or

FIXED = dict(alpha=1.0, weight_prob=0.2, strength=0.9, leak=0.03)
RULES = ("prior", "data")
VERSIONS = ("before", "python births", "after")
ROOT = Path(__file__).resolve().parent.parent


def load_before(revision: str, directory: str):
    """The noisy-OR module as it was at ``revision``, imported from a temporary file."""
    source = subprocess.run(["git", "show", f"{revision}:ibp_lab/inference/noisy_or.py"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    path = Path(directory) / "noisy_or_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("noisy_or_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def python_births():
    """Step 2 of every sweep through the Python references while inside."""
    compiled = noisy_or._prior_births, noisy_or._data_births
    noisy_or._prior_births = noisy_or._prior_births_reference
    noisy_or._data_births = noisy_or._data_births_reference
    try:
        yield
    finally:
        noisy_or._prior_births, noisy_or._data_births = compiled


def run_sweeps(X, Z, W, params, births, n_sweeps, seed, module=noisy_or):
    """``n_sweeps`` sweeps of ``module``'s ``_sweep`` from ``(Z, W)``: the final state and
    the CPU seconds."""
    rng = np.random.default_rng(seed)
    Z, W = Z.copy(), W.copy()  # a sweep flips the causes of the Z it is given in place
    start = time.process_time()
    for _ in range(n_sweeps):
        Z, W, _ = module._sweep(X, Z, W, params, rng, births)
    return Z, W, time.process_time() - start


def compare(before, X, Z, W, params, births, n_sweeps, repeats):
    """Median CPU ms per sweep of each version, interleaved; the final states must agree."""
    times = {version: [] for version in VERSIONS}
    load = os.getloadavg()[0]
    for r in range(repeats):
        finals = []
        for version in VERSIONS:
            module = before if version == "before" else noisy_or
            with python_births() if version == "python births" else contextlib.nullcontext():
                *final, seconds = run_sweeps(X, Z, W, params, births, n_sweeps, r, module)
            times[version].append(seconds)
            finals.append(final)
        if not all(np.array_equal(a, b) for final in finals[1:] for a, b in zip(finals[0], final)):
            raise AssertionError(f"births={births!r}: the versions made different draws")
    row = {k: 1e3 * float(np.median(v)) / n_sweeps for k, v in times.items()}
    return row | {"load": (load, os.getloadavg()[0])}


def breakdown(X, Z, W, params, births, n_sweeps, seed=0):
    """CPU ms per sweep of each step of ``noisy_or._sweep`` (its body, timed step by step)."""
    rng = np.random.default_rng(seed)
    Z, W = Z.copy(), W.copy()
    N = X.shape[0]
    log1m_leak, log1m_strength = math.log1p(-params.leak), math.log1p(-params.strength)
    logit = math.log(params.weight_prob) - math.log1p(-params.weight_prob)
    step2 = noisy_or._data_births if births == "data" else noisy_or._prior_births
    spent = dict.fromkeys(("causes", "births", "links", "between"), 0.0)
    for _ in range(n_sweeps):
        t0 = time.process_time()
        Z = np.ascontiguousarray(Z, np.int8)
        C = noisy_or._link_counts(Z, W)
        m = Z.sum(axis=0).astype(np.int64)
        table = _kernel.prior_log_odds_table(N, params.beta)
        t1 = time.process_time()
        noisy_or._flip_causes(X, Z, W, C, m, table, log1m_leak, log1m_strength, rng)
        t2 = time.process_time()
        Z, W, _ = step2(X, Z, W, C, params, rng)
        t3 = time.process_time()
        owned = Z.any(axis=0)
        Z, W = np.ascontiguousarray(Z[:, owned]), np.ascontiguousarray(W[owned])
        t4 = time.process_time()
        noisy_or._flip_links(X, Z, W, C, logit, log1m_leak, log1m_strength, rng)
        t5 = time.process_time()
        for name, seconds in (("between", t1 - t0 + t4 - t3), ("causes", t2 - t1),
                              ("births", t3 - t2), ("links", t5 - t4)):
            spent[name] += seconds
    return {name: 1e3 * seconds / n_sweeps for name, seconds in spent.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40, help="sweeps per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats")
    parser.add_argument("--grow", type=int, default=200,
                        help="sweeps (births from the data) to the grown state")
    parser.add_argument("--before", default="471ed94", help="git revision of 'before'")
    args = parser.parse_args(argv)
    X = (datasets.load_digit_sets().train_raw[:300] > 0.5).astype(np.int8)
    params = noisy_or.NoisyOrParameters.checked(*FIXED.values(), n_rows=X.shape[0])
    start = (np.ones((X.shape[0], 1), np.int8),
             (np.random.default_rng(1).random((1, X.shape[1])) < params.weight_prob)
             .astype(np.int64))
    grown = run_sweeps(X, *start, params, "data", args.grow, 2032)[:2]
    states = {"start": start, f"after {args.grow} sweeps": grown}
    print(f"{X.shape[0]} digits x {X.shape[1]} pixels thresholded at 0.5; alpha 1, "
          f"weight_prob 0.2, strength 0.9, leak 0.03; {args.sweeps} sweeps per run, median of "
          f"{args.repeats} interleaved runs; CPU ms per sweep; {os.cpu_count()} cores")
    print(f"before = {args.before}; python births = now, step 2 through the Python "
          f"references; after = now; the same draws")
    print(f"{'births, from':28s} {'K+':>4s} {'before':>8s} {'python':>8s} {'after':>8s} "
          f"{'before/after':>13s}  load (start, end)")
    with tempfile.TemporaryDirectory() as directory:
        before = load_before(args.before, directory)
        for births in RULES:  # compile, or load numba's cache
            for module in (before, noisy_or):
                run_sweeps(X, *start, params, births, 2, 0, module)
        for state_name, (Z, W) in states.items():
            for births in RULES:
                row = compare(before, X, Z, W, params, births, args.sweeps, args.repeats)
                print(f"{births + ', ' + state_name:28s} {Z.shape[1]:4d} {row['before']:8.2f} "
                      f"{row['python births']:8.2f} {row['after']:8.2f} "
                      f"{row['before'] / row['after']:12.1f}x  "
                      f"{row['load'][0]:.2f}, {row['load'][1]:.2f}")
    print("after, CPU ms per sweep by step (1 causes, 2 births, 3 links, and between):")
    for state_name, (Z, W) in states.items():
        for births in RULES:
            steps = breakdown(X, Z, W, params, births, args.sweeps)
            print(f"  {births + ', ' + state_name:32s} "
                  + ", ".join(f"{name} {ms:.2f}" for name, ms in steps.items())
                  + f"; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
