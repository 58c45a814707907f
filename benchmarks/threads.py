"""Does one BLAS thread make the samplers faster?  Wall time per sweep, limited against not.

Every runner that does linear algebra runs under ``ibp_lab._threads.single_blas_thread``
(one OpenBLAS thread). This script times each runner both ways, interleaved, and prints
the median wall milliseconds per sweep (or per row, for the stream) and the ratio
``default threads / one thread`` (above 1: the limit helps), with the load average
before and after each case:

- the uncollapsed and slice samplers on the three-row example and on the 300 digits;
- ``run_chain`` (collapsed Gibbs with alpha and sigma_A updates) and ``run_tempered``
  (4 rungs) on the digits;
- ``run_noisy_or`` on the thresholded digits, ``run_smc`` (20 particles, 10
  temperatures) and ``RecursiveIBP.fit`` (default buffer births) on the digits.

"Without" means the limit switched off everywhere for the call (the helper replaced by a
no-op), so the runners use OpenBLAS's default of one thread per core.

Usage::

    .venv/bin/python benchmarks/threads.py            # the machine as it is
    .venv/bin/python benchmarks/threads.py --busy 2   # beside two CPU-bound processes

``--busy N`` starts ``N`` Python busy loops beside the timing and ends them (by their own
process ids) when it finishes. ``--repeats R`` sets the interleaved repeats (default 5).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time

import numpy as np

from ibp_lab import _threads, datasets
from ibp_lab.inference import chains, noisy_or, slice_sampler, smc, tempering
from ibp_lab.inference import uncollapsed
from ibp_lab.inference.streaming import RecursiveIBP

THREE_ROWS = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
TINY = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)
DIGITS = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
NOISY_OR = dict(alpha=1.0, weight_prob=0.2, strength=0.9, leak=0.03)


def _cases(X_digits, bits, start):
    """``name -> (call(rng), units per call, unit)``: what is timed."""
    return {
        "uncollapsed, 3 rows": (lambda rng: uncollapsed.run_uncollapsed(
            THREE_ROWS, 400, rng, **TINY), 400, "sweep"),
        "slice, 3 rows": (lambda rng: slice_sampler.run_slice(
            THREE_ROWS, 400, rng, **TINY), 400, "sweep"),
        "uncollapsed, digits": (lambda rng: uncollapsed.run_uncollapsed(
            X_digits, 40, rng, **DIGITS, Z0=start), 40, "sweep"),
        "slice, digits": (lambda rng: slice_sampler.run_slice(
            X_digits, 40, rng, **DIGITS, Z0=start), 40, "sweep"),
        "run_chain, digits": (lambda rng: chains.run_chain(
            X_digits, 40, rng, **DIGITS, Z0=start), 40, "sweep"),
        "run_tempered (4 rungs), digits": (lambda rng: tempering.run_tempered(
            X_digits, 10, rng, **DIGITS, n_temperatures=4, Z0=start), 10, "round"),
        "run_noisy_or, binary digits": (lambda rng: noisy_or.run_noisy_or(
            bits, 20, rng, **NOISY_OR, learn=()), 20, "sweep"),
        "run_smc (20 particles), digits": (lambda rng: smc.run_smc(
            X_digits, 20, rng, **DIGITS, n_temperatures=10), 1, "run"),
        "RecursiveIBP.fit, digits": (lambda rng: RecursiveIBP(
            sigma_x=0.25, sigma_a=0.3, rng=rng).fit(X_digits), X_digits.shape[0], "row"),
    }


@contextlib.contextmanager
def _blas_default():
    """The limit switched off: every ``single_blas_thread`` becomes a no-op."""
    limited = _threads._limited
    _threads._limited = lambda refresh: contextlib.nullcontext()
    try:
        yield
    finally:
        _threads._limited = limited


def _time(call, rng) -> float:
    t0 = time.perf_counter()
    call(rng)
    return time.perf_counter() - t0


def _busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound loops to run beside")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    X_digits = datasets.load_digit_sets().train
    bits = (X_digits > 0.5 * X_digits.max()).astype(np.int8)
    start = chains.run_chain(X_digits, 30, np.random.default_rng(5), **DIGITS).Z
    cases = _cases(X_digits, bits, start)
    for call, _, _ in cases.values():  # compile (or load) every kernel before timing
        call(np.random.default_rng(0))
    loops = _busy_loops(args.busy)
    try:
        time.sleep(2.0 if loops else 0.0)  # let the loops reach the load average
        print(f"{os.cpu_count()} cores, {args.busy} busy loops beside, {args.repeats} "
              "interleaved repeats; median wall ms per unit")
        print(f"{'case':32s} {'unit':>6s} {'default':>9s} {'1 thread':>9s} {'ratio':>7s}  load")
        for name, (call, units, unit) in cases.items():
            load = os.getloadavg()[0]
            default, single = [], []
            for r in range(args.repeats):
                with _blas_default():
                    default.append(_time(call, np.random.default_rng(r)))
                with _threads.single_blas_thread():  # also for runners not yet wrapped
                    single.append(_time(call, np.random.default_rng(r)))
            d_ms, s_ms = 1e3 * np.median(default) / units, 1e3 * np.median(single) / units
            print(f"{name:32s} {unit:>6s} {d_ms:9.3f} {s_ms:9.3f} {d_ms / s_ms:7.2f}  "
                  f"{load:.1f}-{os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


if __name__ == "__main__":
    main()
