"""Do the replicas of a tempered run use both cores?  Wall time of one run, as ratios.

Three ways to run the sweeps of a 16-rung ladder on the book's digits (sigma_x = 0.25):

- ``serial``: ``run_tempered(..., workers=1)``, the reference;
- ``threads``: ``workers=2`` (the compiled sweep releases the GIL);
- ``processes (bound)``: two processes, each running an 8-rung ladder with no
  communication at all: the best that any process-based split of one ladder could
  reach (a real one would also ship log-likelihoods and swap decisions every round).

Prints wall seconds and the ratio to the serial run, repeated, since the machine is
shared and each number is noisy. Usage: ``.venv/bin/python benchmarks/tempering.py``.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from ibp_lab import datasets
from ibp_lab.inference.tempering import run_tempered

HYPER = dict(alpha=1.0, sigma_x=0.25, sigma_a=0.3)
ROUNDS = 40


def _run(n_temperatures: int, workers: int = 1) -> float:
    X = datasets.load_digit_sets().train
    t0 = time.perf_counter()
    run_tempered(X, ROUNDS, np.random.default_rng(0), **HYPER, n_temperatures=n_temperatures,
                 min_inverse_temperature=0.3, workers=workers)
    return time.perf_counter() - t0


def main(repeats: int = 3) -> None:
    _run(2)  # load the compiled code once
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_run, [2, 2]))  # warm the workers
        for r in range(repeats):
            serial = _run(16)
            threads = _run(16, workers=2)
            t0 = time.perf_counter()
            list(pool.map(_run, [8, 8]))
            processes = time.perf_counter() - t0
            print(f"repeat {r}: serial {serial:.2f} s | threads {threads:.2f} s "
                  f"(x{serial / threads:.2f}) | processes (bound) {processes:.2f} s "
                  f"(x{serial / processes:.2f})")


if __name__ == "__main__":
    main()
