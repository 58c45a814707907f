"""Cost of one log-density-and-gradient evaluation of the PyMC IBP model against K.

Run from the repository root::

    python benchmarks/pymc_gradient.py [--k 2 4 6 8 10 12] [--repeats 20]
    python benchmarks/pymc_gradient.py --full-run      # also time a full-size NUTS run

The model is :func:`ibp_lab.inference.pymc_models.build_model` on the book's 300 centred
training digits (48 pixels) with ``sigma_x = 0.25``. Every row sums over ``2^K``
patterns, so the work per gradient should double with each added feature once
the ``N x 2^K`` arrays, not PyTensor's fixed per-call overhead, dominate. The
script prints milliseconds per evaluation (the fastest of ``--repeats``, the one
least disturbed by other processes), the ratio to the smallest ``K``, the ratio
to the previous row per added feature, and the size of one ``N x 2^K`` float64
intermediate.

``--full-run`` times what the book's chapter cuts down: ``K = 8``, the 300
digits, PyMC's default chain lengths (4 chains, 1000 warm-up and 1000 kept draws,
two at a time on 2 cores) from :func:`ibp_lab.inference.pymc_models.initial_point_from_data`.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ibp_lab.inference import pymc_models
from ibp_lab.datasets import load_digit_sets

SIGMA_X = 0.25


def gradient_table(X: np.ndarray, ks, repeats: int) -> None:
    print(f"data: {X.shape[0]} digits x {X.shape[1]} pixels, sigma_x = {SIGMA_X}")
    print(f"{'K':>3} {'patterns':>9} {'ms/grad':>9} {'x K_min':>8} {'x per feature':>14} "
          f"{'N x 2^K':>9}")
    first = previous = None
    for k in ks:
        seconds = pymc_models.time_gradient(X, k, sigma_x=SIGMA_X, repeats=repeats)
        per_feature = ""
        if previous is not None:
            per_feature = f"{(seconds / previous[1]) ** (1 / (k - previous[0])):14.2f}"
        first = first or seconds
        megabytes = X.shape[0] * 2**k * 8 / 2**20
        print(f"{k:3d} {2**k:9d} {1e3 * seconds:9.3f} {seconds / first:8.1f} {per_feature:>14} "
              f"{megabytes:7.2f} MB")
        previous = (k, seconds)


def full_run(X: np.ndarray, n_features: int = 8) -> None:
    model = pymc_models.build_model(X, n_features, sigma_x=SIGMA_X)
    start = time.perf_counter()
    idata = pymc_models.sample_posterior(
        model, X, np.random.default_rng(2007), draws=1000, tune=1000, chains=4, cores=2
    )
    wall = time.perf_counter() - start
    stats = idata.sample_stats
    print(f"\nfull-size run: K = {n_features}, {X.shape[0]} digits, 4 chains x (1000 + 1000), "
          f"2 cores: {wall:.0f} s ({wall / 60:.1f} min)")
    print("  mean log density per chain:", stats["lp"].mean("draw").to_numpy().round(1))
    print("  leapfrog steps per draw:  ", stats["n_steps"].mean("draw").to_numpy().round(1))
    print("  divergences per chain:    ", stats["diverging"].sum("draw").to_numpy())
    print("  posterior mean of pi_K per chain:",
          idata.posterior["pi"].isel(feature=-1).mean("draw").to_numpy().round(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 8, 10, 12])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--full-run", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    X = load_digit_sets().train
    gradient_table(X, args.k, args.repeats)
    if args.full_run:
        full_run(X)


if __name__ == "__main__":
    main()
