"""Time and memory per observation of streaming R-IBP inference (ibp_lab.streaming).

Run: ``python benchmarks/streaming.py`` (under half a minute on one core of the
book's build machine; ``--n 20000`` for a quick run). One stream of ``n`` observations of
dimension 55 is drawn from the linear-Gaussian model with an IBP(alpha = 1, beta = 5)
prior (so the true number of features keeps growing, like ``alpha beta log(1 + n/beta)``)
and fed once to ``RecursiveIBP``. At checkpoints ``n = 300, 1000, 3000, ...`` it prints

1. the time per observation (the fastest of ten blocks of 20 observations just before the
   checkpoint: the least disturbed by other programs), as a ratio to the first checkpoint,
   with the number of feature slots kept and the Poisson rate of the number of features;
2. the bytes of running state (the features and per-feature sums: what the stream needs to
   continue) and the peak memory allocated while processing one observation, as ratios;
3. least-squares fits of both against ``ln n`` and, to tell logarithmic from power-law
   growth, the log-log slope (a cost that grows like ``ln n`` has a log-log slope that
   shrinks towards 0; a cost linear in ``n`` has slope 1).

4. the cost of the exact (Poisson-binomial) law of the number of features in the prior:
   the time of one observation's prior with it and with the paper's Poisson law of the
   same mean (kept here only as the reference), for ``K`` established features, and their
   ratio. The exact law costs ``O(K^2)`` per observation against ``O(K)``.

The cost of an observation is ``O(S K D)`` with ``K`` the number of slots, and ``K`` grows
like ``log n``: time and memory per observation should grow like ``log n``, so the whole
stream costs ``O(n log n)`` time and ``O(log n)`` memory.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scipy import special

from ibp_lab.recursive import num_dishes_rate
from ibp_lab.linear_gaussian import simulate
from ibp_lab.streaming import RecursiveIBP, log_fit, stream_cost
from ibp_lab.streaming.filtering import _count_log_pmf, _log_filtering_prior


def _poisson_log_pmf(rate: float, size: int) -> np.ndarray:
    """The paper's law (Poisson, mean ``rate``): the reference the exact law is timed against."""
    j = np.arange(size)
    return special.xlogy(j, rate) - rate - special.gammaln(j + 1.0)


def prior_cost(repeats: int = 200) -> None:
    """Time one observation's filtering prior (the estimator's unchecked path), exact vs Poisson."""
    print("\nprior of one observation, K established features + 4 fresh slots:")
    print("     K  Poisson us  exact us  ratio")
    for k in (10, 30, 100, 300):
        usage = np.r_[np.full(k, 50.0), np.zeros(4)]
        log_unowned = np.r_[np.full(k, -60.0), np.zeros(4)]
        dish = np.arange(1, k + 5)
        times = []
        for exact in (False, True):
            start = time.perf_counter()
            for _ in range(repeats):
                law = (_count_log_pmf(log_unowned, np.zeros(1)) if exact
                       else _poisson_log_pmf(float(k), k + 4))
                _log_filtering_prior(usage, log_unowned, dish, 200, law, 0.0, 5.0,
                                    last_used=k)
            times.append((time.perf_counter() - start) / repeats * 1e6)
        print(f"{k:6d} {times[0]:11.1f} {times[1]:9.1f} {times[1] / times[0]:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="observations (default 1e5)")
    parser.add_argument("--dim", type=int, default=55)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    alpha, beta, noise, sigma_x, sigma_a = 1.0, 5.0, 0.1, 0.3, 1.0

    start = time.perf_counter()
    stream = simulate(args.n, np.random.default_rng(args.seed), alpha=alpha, beta=beta,
                      sigma_x=noise, sigma_a=sigma_a, d=args.dim)
    print(f"Streaming R-IBP, linear-Gaussian, D = {args.dim}, alpha = {alpha}, beta = {beta}, "
          f"data noise {noise}, model sigma_x = {sigma_x}; true features in the stream: "
          f"{stream.A.shape[0]} (simulated in {time.perf_counter() - start:.1f} s)\n")

    model = RecursiveIBP(alpha, beta, sigma_x, sigma_a, rng=np.random.default_rng(1),
                         keep_history=False)
    model.partial_fit(stream.X[:20])  # compile (or load) the numba kernels before timing
    last = args.n - 20
    checkpoints = [c for c in (300, 1000, 3000, 10_000, 30_000) if c < last - 300]
    checkpoints.append(last)
    start = time.perf_counter()
    cost = stream_cost(model, stream.X[20:], checkpoints)
    elapsed = time.perf_counter() - start
    n = cost.n + 20

    print("     n  us/obs  ratio  slots  rate  true E[K]  state B  ratio  peak B  ratio")
    for i in range(n.size):
        prior_mean = num_dishes_rate(alpha, beta, int(n[i]))
        print(f"{n[i]:6d} {cost.seconds_per_obs[i] * 1e6:7.1f} "
              f"{cost.seconds_per_obs[i] / cost.seconds_per_obs[0]:6.2f} {cost.n_slots[i]:6d} "
              f"{cost.rate[i]:5.1f} {prior_mean:10.1f} {cost.state_bytes[i]:8d} "
              f"{cost.state_bytes[i] / cost.state_bytes[0]:6.2f} {cost.peak_bytes[i]:7d} "
              f"{cost.peak_bytes[i] / cost.peak_bytes[0]:6.2f}")

    print()
    for label, values, unit in (("time per observation", cost.seconds_per_obs * 1e6, "us"),
                                ("state", cost.state_bytes, "bytes"),
                                ("slots", cost.n_slots, "slots")):
        intercept, slope = log_fit(n, values)
        loglog = np.polyfit(np.log(n), np.log(values), 1)[0]
        print(f"{label:22s}: {intercept:9.1f} + {slope:8.2f} ln n  ({unit}); log-log slope "
              f"{loglog:.3f}")
    grow_n = n[-1] / n[0]
    print(f"\nfrom n = {n[0]} to {n[-1]} (x{grow_n:.0f}): time per observation x"
          f"{cost.seconds_per_obs[-1] / cost.seconds_per_obs[0]:.2f}, state x"
          f"{cost.state_bytes[-1] / cost.state_bytes[0]:.2f}, "
          f"ln n x{np.log(n[-1]) / np.log(n[0]):.2f}"
          f"; a cost linear in n would grow x{grow_n:.0f}")
    print(f"streamed {n[-1]} observations in {elapsed:.1f} s")
    prior_cost()


if __name__ == "__main__":
    main()
