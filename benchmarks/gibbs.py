"""Speed of one collapsed Gibbs sweep on the book's digits, against the plain NumPy sweep.

Run from the repository root::

    python benchmarks/gibbs.py [--sweeps 200] [--sigma-a 0.3]

Both samplers start from the same state, reached by a warm-up with the package
sampler so that ``K+`` is at its working size (about 16-17 features at
``sigma_x = 0.25``, ``sigma_a = 0.3``). The reference is the package's own
readable sweep, :func:`ibp_lab.inference.gibbs.gibbs_sweep_numpy`: the same algorithm
(random order, the exact law of the number of new dishes) written plainly in
NumPy, recomputing the feature posterior for every row; from the same seed it
gives the same chain, which is checked here too. Prints milliseconds per sweep,
the ratio, and the per-sweep time of the compiled chain on a 3 x 2 problem.

Then the chain runner against its sweeps (issue 54: ``run_chain`` should cost what its
moves cost): CPU milliseconds per iteration of :func:`ibp_lab.inference.chains.run_chain`
with plain Gibbs sweeps, at fixed hyperparameters and with the default alpha and sigma_a
updates, each as a ratio to the plain sweep from the same state; runs interleaved, median
of ``--repeats``, the machine's load average beside them (the machine may be shared).
"""

from __future__ import annotations

import os

# one core, as the book build has: BLAS threads would flatter the NumPy reference
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ibp_lab.inference import chains, gibbs  # noqa: E402


def load_digits() -> np.ndarray:
    """The 300 centred training digits (48 pixels each)."""
    from ibp_lab.datasets import load_digit_sets

    return load_digit_sets().train


def per_sweep_seconds(step, Z, n_sweeps):
    start = time.perf_counter()
    for _ in range(n_sweeps):
        Z = step(Z)
    return (time.perf_counter() - start) / n_sweeps, Z


def cpu_ms_per_iteration(run, n_iterations) -> float:
    """CPU milliseconds per iteration of ``run(n_iterations)`` (process time: a shared
    machine slows the wall clock of a single-threaded computation, hardly its CPU time)."""
    start = time.process_time()
    run(n_iterations)
    return 1e3 * (time.process_time() - start) / n_iterations


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def chain_against_sweeps(X, Z_start, alpha, sigma_x, sigma_a, n_sweeps, repeats) -> None:
    """Per-iteration CPU time of run_chain with plain sweeps against the plain sweep."""
    def plain(n):
        rng, Z = np.random.default_rng(7), Z_start
        for _ in range(n):
            Z = gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng)

    def chain(n, **updates):
        chains.run_chain(X, n, np.random.default_rng(7), Z0=Z_start, alpha=alpha,
                         sigma_x=sigma_x, sigma_a=sigma_a, **updates)

    runs = {"plain sweep (gibbs_sweep)": plain,
            "run_chain, fixed hyperparameters": lambda n: chain(
                n, moves=[chains.GibbsSweep()]),
            "run_chain, alpha and sigma_a updated": chain}
    times = {name: [] for name in runs}
    for _ in range(repeats):  # interleaved: a change of load hits every run alike
        for name, run in runs.items():
            times[name].append(cpu_ms_per_iteration(run, n_sweeps))
    print(f"\nrun_chain against its sweeps (CPU time, median of {repeats} interleaved runs "
          f"of {n_sweeps} iterations; {load_average()}):")
    reference = float(np.median(times["plain sweep (gibbs_sweep)"]))
    for name, values in times.items():
        median = float(np.median(values))
        print(f"  {name:38s} {median:7.3f} ms per iteration  x{median / reference:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=200, help="timed package sweeps")
    parser.add_argument("--reference-sweeps", type=int, default=10, help="timed reference sweeps")
    parser.add_argument("--sigma-x", type=float, default=0.25)
    parser.add_argument("--sigma-a", type=float, default=0.3)
    parser.add_argument("--alpha", type=float, default=2.5)
    parser.add_argument("--chain-sweeps", type=int, default=200,
                        help="iterations per timed run of run_chain and of the plain sweep")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs of each")
    args = parser.parse_args()

    X = load_digits()
    rng = np.random.default_rng(4)
    hyper = (args.alpha, args.sigma_x, args.sigma_a)

    start = time.perf_counter()
    Z = gibbs.gibbs_sweep(X, np.ones((X.shape[0], 1)), *hyper, rng)
    first_call = time.perf_counter() - start  # compile, or load from numba's cache
    for _ in range(150):  # warm-up to the working number of features
        Z = gibbs.gibbs_sweep(X, Z, *hyper, rng)
    Z_start = Z

    t_package, Z_end = per_sweep_seconds(
        lambda Z: gibbs.gibbs_sweep(X, Z, *hyper, rng), Z_start, args.sweeps)
    t_reference, Z_ref = per_sweep_seconds(
        lambda Z: gibbs.gibbs_sweep_numpy(X, Z, *hyper, rng), Z_start, args.reference_sweeps)
    # the same seed gives the same chain: one sweep of each from Z_start
    same = np.array_equal(gibbs.gibbs_sweep(X, Z_start, *hyper, np.random.default_rng(1)),
                          gibbs.gibbs_sweep_numpy(X, Z_start, *hyper, np.random.default_rng(1)))

    print(f"data: {X.shape[0]} digits x {X.shape[1]} pixels; alpha = {args.alpha}, "
          f"sigma_x = {args.sigma_x}, sigma_a = {args.sigma_a}")
    print(f"K+ at the start of timing: {Z_start.shape[1]}; after: package {Z_end.shape[1]}, "
          f"reference {Z_ref.shape[1]}")
    print(f"first call (numba compile or cache load): {first_call:.2f} s")
    print(f"package sweep (numba):          {1e3 * t_package:8.2f} ms per sweep "
          f"({args.sweeps} sweeps)")
    print(f"gibbs_sweep_numpy (plain):      {1e3 * t_reference:8.2f} ms per sweep "
          f"({args.reference_sweeps} sweeps); same chain from the same seed: {same}")
    print(f"speed-up: {t_reference / t_package:.1f}x  ({load_average()})")

    # tiny data: the regime of the tests against exact enumeration
    X_tiny = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
    n_tiny = 200_000
    start = time.perf_counter()
    gibbs.k_plus_trace(X_tiny, n_tiny, rng, alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    t_tiny = (time.perf_counter() - start) / n_tiny
    print(f"3 x 2 data, k_plus_trace:       {1e6 * t_tiny:8.2f} us per sweep ({n_tiny} sweeps)")

    chain_against_sweeps(X, Z_start, *hyper, args.chain_sweeps, args.repeats)


if __name__ == "__main__":
    main()
