"""Speed and memory of the Recursive IBP marginals (ibp_lab.models.recursive).

Run: ``python benchmarks/recursive.py``. Prints ratios, not only seconds, so that the
numbers mean something on any machine:

1. time of ``marginals`` as ``n`` doubles (linear cost: ratio about 2 per doubling);
2. time of ``marginals`` as ``k_max`` doubles (linear cost once ``k_max`` exceeds the
   support of the new-dish survival function: ratio about 2 per doubling);
3. the same table computed with the cancelling CDF difference (SciPy's Poisson CDF) as a
   reference: what the careful sum of products costs in comparison;
4. the state kept by the streaming recursion (bytes) as ``n`` grows by factors of 10,
   against the bytes of one simulated history ``z_{<n}``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from ibp_lab.models.prior import expected_num_features, sample_ibp
from ibp_lab.models.recursive import RecursiveMarginals, marginals

ALPHA, BETA = 15.37, 12.9


def best_of(fn, repeats: int = 3) -> float:
    """Smallest wall time of ``repeats`` calls (the least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cdf_difference_table(alpha: float, beta: float, n: int, k_max: int) -> np.ndarray:
    """The reference: the same recursion with the new-dish term as a CDF difference."""
    k = np.arange(k_max)
    out = np.empty((n, k_max))
    running_sum = np.zeros(k_max)
    for i in range(1, n + 1):
        before = expected_num_features(alpha, i - 1, beta=beta)
        after = expected_num_features(alpha, i, beta=beta)
        gap = stats.poisson.cdf(k, before) - stats.poisson.cdf(k, after)
        out[i - 1] = running_sum / (beta + i - 1) + gap
        running_sum += out[i - 1]
    return out


def main() -> None:
    print(f"Recursive IBP benchmarks, alpha = {ALPHA}, beta = {BETA}\n")

    print("1. marginals(n, k_max=400) as n doubles")
    previous = None
    for n in (250, 500, 1000, 2000):
        t = best_of(lambda: marginals(ALPHA, BETA, n, 400))
        ratio = "" if previous is None else f"  ratio {t / previous:.2f}"
        print(f"   n = {n:5d}: {t * 1e3:8.1f} ms{ratio}")
        previous = t

    print("\n2. marginals(n=500, k_max) as k_max doubles")
    previous = None
    for k_max in (200, 400, 800, 1600, 3200):
        t = best_of(lambda: marginals(ALPHA, BETA, 500, k_max))
        ratio = "" if previous is None else f"  ratio {t / previous:.2f}"
        print(f"   k_max = {k_max:5d}: {t * 1e3:8.1f} ms{ratio}")
        previous = t

    print("\n3. against the CDF-difference reference (n = 500, k_max = 1600)")
    careful = best_of(lambda: marginals(ALPHA, BETA, 500, 1600))
    reference = best_of(lambda: cdf_difference_table(ALPHA, BETA, 500, 1600))
    table = marginals(ALPHA, BETA, 500, 1600)
    naive = cdf_difference_table(ALPHA, BETA, 500, 1600)
    print(f"   sum of products {careful * 1e3:.1f} ms, CDF difference {reference * 1e3:.1f} ms,"
          f" ratio {careful / reference:.2f}")
    print(f"   entries where the CDF difference is <= 0 but the sum is > 0: "
          f"{int(np.sum((naive <= 0) & (table > 0)))} of {table.size}")

    print("\n4. state of the streaming recursion (alpha = 2, beta = 1, columns grow)")
    stream = RecursiveMarginals(2.0, 1.0)
    checkpoints = {10, 100, 1_000, 10_000, 100_000}
    previous = None
    start = time.perf_counter()
    for n in range(1, max(checkpoints) + 1):
        stream.step()
        if n in checkpoints:
            history = (
                sample_ibp(2.0, n, np.random.default_rng(n)).nbytes if n <= 10_000 else None
            )
            growth = "" if previous is None else f"  ratio {stream.state_nbytes / previous:.2f}"
            shown = "-" if history is None else f"{history}"
            print(f"   n = {n:6d}: state {stream.state_nbytes:5d} bytes "
                  f"({stream.running_sum.size} columns){growth}; history {shown} bytes")
            previous = stream.state_nbytes
    elapsed = time.perf_counter() - start
    print(f"   {max(checkpoints)} steps in {elapsed:.1f} s "
          f"({elapsed / max(checkpoints) * 1e6:.0f} us per customer)")


if __name__ == "__main__":
    main()
