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

The compiled kernel alone (issue 54: the sweep halved toward its floor): CPU
milliseconds per sweep of :func:`ibp_lab.inference.gibbs.k_plus_trace` from the same
state, many sweeps in one call, so that the public door's checks (paid once per call
of :func:`~ibp_lab.inference.gibbs.gibbs_sweep`) drop out; median of ``--repeats``
interleaved runs. With ``--baseline-kernel PATH`` (a copy of an older
``ibp_lab/_kernel.py``) the same runs alternate with that kernel's ``sweeps``, the
ratio new / old is printed and both chains are checked to be the same, draw for draw.

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
import importlib.util  # noqa: E402
import sys  # noqa: E402
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


def load_kernel_copy(path):
    """A copy of ``ibp_lab/_kernel.py`` (an older version, say) as a module of its own.

    Named after its file and registered in ``sys.modules``: numba's cache of the copy
    finds its module again by that name.
    """
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kernel_against_baseline(X, Z_start, alpha, sigma_x, sigma_a, n_sweeps, repeats,
                            baseline_path=None) -> None:
    """CPU time per sweep of the compiled kernel alone, and of an older copy if given."""
    def current(rng):
        return gibbs.k_plus_trace(X, n_sweeps, rng, alpha=alpha, sigma_x=sigma_x,
                                  sigma_a=sigma_a, Z0=Z_start)

    runs = {"compiled kernel (k_plus_trace)": current}
    if baseline_path is not None:
        baseline = load_kernel_copy(baseline_path)
        runs["baseline kernel (its sweeps)"] = lambda rng: baseline.sweeps(
            X, Z_start, alpha, sigma_x, sigma_a, 1.0, n_sweeps, rng)[1]
        same = np.array_equal(current(np.random.default_rng(5)),
                              runs["baseline kernel (its sweeps)"](np.random.default_rng(5)))
    times = {name: [] for name in runs}
    for _ in range(repeats):  # interleaved: a change of load hits every run alike
        for name, run in runs.items():
            start = time.process_time()
            run(np.random.default_rng(7))
            times[name].append(1e3 * (time.process_time() - start) / n_sweeps)
    medians = {name: float(np.median(values)) for name, values in times.items()}
    print(f"\nthe compiled kernel alone (CPU time, median of {repeats} interleaved runs of "
          f"{n_sweeps} sweeps in one call; {load_average()}):")
    for name, median in medians.items():
        print(f"  {name:38s} {median:7.3f} ms per sweep  (range {min(times[name]):.3f} - "
              f"{max(times[name]):.3f})")
    if baseline_path is not None:
        ratio = medians["compiled kernel (k_plus_trace)"] / medians["baseline kernel (its sweeps)"]
        print(f"  new / baseline: {ratio:.3f}; the same K+ trace from the same seed: {same}")


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
    parser.add_argument("--kernel-sweeps", type=int, default=300,
                        help="sweeps per timed call of the compiled kernel alone")
    parser.add_argument("--baseline-kernel", default=None,
                        help="path to a copy of an older ibp_lab/_kernel.py to time against")
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
    print(f"package sweep (gibbs_sweep):    {1e3 * t_package:8.2f} ms per sweep "
          f"({args.sweeps} calls of one sweep, the door's checks included)")
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

    kernel_against_baseline(X, Z_start, *hyper, args.kernel_sweeps, args.repeats,
                            args.baseline_kernel)
    chain_against_sweeps(X, Z_start, *hyper, args.chain_sweeps, args.repeats)


if __name__ == "__main__":
    main()
