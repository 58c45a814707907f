"""Speed of the samplers that keep the images, on the digits: uncollapsed and slice.

Run from the repository root::

    python benchmarks/uncollapsed.py [--sweeps 40] [--repeats 5] [--before 3adfd15]

Times :func:`ibp_lab.inference.uncollapsed.run_uncollapsed` (``births="prior"``, the
Metropolis-Hastings births from the conditional prior, and ``births="data"``) and
:func:`ibp_lab.inference.slice_sampler.run_slice` on the 300 digits at ``alpha = 1``,
``sigma_x = 0.25``, ``sigma_a = 0.3``, from the state of a 30-sweep collapsed chain (as
``benchmarks/threads.py``), wall milliseconds per sweep, trace included. "Before" is the
uncollapsed module at git revision ``--before`` (default 3adfd15, before issue 54), run
from a temporary module; its runner, and its trace under the slice sampler's sweep. Runs
are interleaved (before, after, before, ...) and the medians printed, with the load
average beside each case, since the machine may be shared.

Then where a sweep's time goes now: the sweep alone (no trace), the births step alone on
the chain's last state, and the trace. Issue 54 had the births at 70% of a sweep; they
are compiled since issue 48, and the 60% that remained was the trace's class prior
(``models.prior.log_prior``, ``np.unique`` over columns), now the kernel's compiled one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ibp_lab import _kernel, datasets
from ibp_lab._hyper import check_hyperparameters, new_dish_rate
from ibp_lab._threads import single_blas_thread
from ibp_lab.inference import chains, slice_sampler, uncollapsed

DIGITS = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
ROOT = Path(__file__).resolve().parent.parent


def load_before(revision: str, directory: str):
    """The uncollapsed module as it was at ``revision``, imported from a temporary file."""
    source = subprocess.run(["git", "show", f"{revision}:ibp_lab/inference/uncollapsed.py"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    path = Path(directory) / "uncollapsed_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("uncollapsed_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def runners(module, X, Z0, n_sweeps):
    """``name -> call(rng)`` for one version of the uncollapsed module: its runner with each
    birth rule, and the slice sampler's sweep under its ``run_kernel`` (the trace)."""
    def slice_run(rng):
        checked = module.check_run(X, n_sweeps, rng, *DIGITS.values(), 1.0, Z0, 0, 1)
        with single_blas_thread():
            return module.run_kernel(slice_sampler._sweep, *checked, "features_instantiated",
                                     "slice")
    return {
        "uncollapsed, prior births": lambda rng: module.run_uncollapsed(
            X, n_sweeps, rng, **DIGITS, Z0=Z0, births="prior"),
        "uncollapsed, data births": lambda rng: module.run_uncollapsed(
            X, n_sweeps, rng, **DIGITS, Z0=Z0, births="data"),
        "slice": slice_run,
    }


def _seconds(call, rng) -> float:
    start = time.perf_counter()
    call(rng)
    return time.perf_counter() - start


def compare(before, after, n_sweeps, repeats):
    """Median ms per sweep of each case, before and after, interleaved."""
    table = {}
    for name in after:
        load = os.getloadavg()[0]
        times = {"before": [], "after": []}
        for r in range(repeats):
            times["before"].append(_seconds(before[name], np.random.default_rng(r)))
            times["after"].append(_seconds(after[name], np.random.default_rng(r)))
        table[name] = {k: 1e3 * np.median(v) / n_sweeps for k, v in times.items()}
        table[name]["load"] = (load, os.getloadavg()[0])
    return table


@single_blas_thread
def breakdown(X, Z0, n_sweeps, repeats):
    """Median ms of the sweep without its trace and of the births step alone, now."""
    hyper = check_hyperparameters(X, *DIGITS.values(), 1.0)
    rate = new_dish_rate(hyper.alpha, hyper.beta, X.shape[0] - 1)
    sweeps, births = [], []
    for r in range(repeats):
        rng, Z = np.random.default_rng(r), Z0
        A = _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng)
        start = time.perf_counter()
        for _ in range(n_sweeps):
            Z, A, _ = uncollapsed._sweep(X, Z, A, hyper, rng)
        sweeps.append((time.perf_counter() - start) / n_sweeps)
        Z = np.ascontiguousarray(Z, np.int8)
        start = time.perf_counter()
        for _ in range(n_sweeps):  # the same state each time: resid is a fresh copy
            uncollapsed._gaussian_births_kernel(Z, A, X - Z @ A, rate, hyper.sigma_a,
                                                2.0 * hyper.sigma_x**2, rng)
        births.append((time.perf_counter() - start) / n_sweeps)
    return 1e3 * np.median(sweeps), 1e3 * np.median(births)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40, help="sweeps per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats")
    parser.add_argument("--before", default="3adfd15", help="git revision of 'before'")
    args = parser.parse_args(argv)
    X = datasets.load_digit_sets().train
    Z0 = chains.run_chain(X, 30, np.random.default_rng(5), **DIGITS).Z
    with tempfile.TemporaryDirectory() as directory:
        before = runners(load_before(args.before, directory), X, Z0, args.sweeps)
        after = runners(uncollapsed, X, Z0, args.sweeps)
        for call in (*before.values(), *after.values()):  # compile, or load numba's cache
            call(np.random.default_rng(0))
        table = compare(before, after, args.sweeps, args.repeats)
    print(f"{X.shape[0]} digits x {X.shape[1]} pixels, alpha 1, sigma_x 0.25, sigma_a 0.3, "
          f"start K+ = {Z0.shape[1]}; {args.sweeps} sweeps, median of {args.repeats} "
          f"interleaved runs; wall ms per sweep, trace included; {os.cpu_count()} cores")
    print(f"before = {args.before}, after = the working tree")
    print(f"{'case':28s} {'before':>8s} {'after':>8s} {'speed-up':>9s}  load (start, end)")
    for name, row in table.items():
        print(f"{name:28s} {row['before']:8.2f} {row['after']:8.2f} "
              f"{row['before'] / row['after']:8.2f}x  {row['load'][0]:.2f}, {row['load'][1]:.2f}")
    for when in ("before", "after"):
        ratios = ", ".join(f"{name.split(', ')[1]} {table[name][when] / table['slice'][when]:.2f}"
                           for name in table if name != "slice")
        print(f"uncollapsed / slice, {when}: {ratios}")
    sweep_ms, births_ms = breakdown(X, Z0, args.sweeps, args.repeats)
    total = table["uncollapsed, prior births"]["after"]
    print(f"now, prior births: sweep without trace {sweep_ms:.2f} ms, of which births "
          f"{births_ms:.3f} ms ({100 * births_ms / total:.0f}% of the {total:.2f} ms sweep); "
          f"trace {total - sweep_ms:.2f} ms; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
