"""Speed of one collapsed Gibbs sweep on the book's digits, against a plain NumPy sweep.

Run from the repository root::

    python benchmarks/gibbs.py [--sweeps 200] [--sigma-a 0.3]

Both samplers start from the same state, reached by a warm-up with the package
sampler so that ``K+`` is at its working size (about 16-17 features at
``sigma_x = 0.25``, ``sigma_a = 0.3``). The reference below is what one would
write first in NumPy: Sherman-Morrison updates when a row leaves and re-enters,
the posterior mean and the Gram matrix of the feature means recomputed once per
row (matrix products, ``O(K^2 D)``), then a Python loop over the row's features
doing ``O(1)`` scalar work per flip and ``O(K)`` per accepted flip. Like the
package sampler it visits the features in a random order and draws the number
of singletons from its conditional (truncated at 10, which loses nothing
measurable here), so the two do the same work. Prints milliseconds per sweep,
the ratio, and the per-sweep time of the compiled chain on a 3 x 2 problem.
"""

from __future__ import annotations

import os

# one core, as the book build has: BLAS threads would flatter the NumPy reference
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import gammaln, logsumexp  # noqa: E402

from ibp_lab import gibbs  # noqa: E402


def load_digits() -> np.ndarray:
    """The 300 centred training digits (48 pixels each)."""
    from ibp_lab.datasets import load_digit_sets

    return load_digit_sets().train


def plain_numpy_sweep(X, Z, alpha, sigma_x, sigma_a, rng, beta=1.0, max_new=10):
    """A straightforward rank-one NumPy sweep with a Python loop over features."""
    N, D = X.shape
    Z = Z.astype(float)
    ratio = (sigma_x / sigma_a) ** 2
    M_inv = np.linalg.inv(Z.T @ Z + ratio * np.eye(Z.shape[1]))
    ZtX = Z.T @ X
    counts = Z.sum(axis=0)
    rate = alpha * beta / (beta + N - 1)
    for i in range(N):
        x, z = X[i], Z[i].copy()
        # row i out: Sherman-Morrison downdate
        v = M_inv @ z
        P = M_inv + np.outer(v, v) / (1.0 - z @ v)
        ZtX -= np.outer(z, x)
        counts -= z
        A_mean = P @ ZtX
        resid = x - z @ A_mean
        # Everything a flip needs as scalars: with c = A_mean resid, G = A_mean A_mean^T
        # and Pz = P z, flipping k changes ||resid||^2 by -2 s c_k + G_kk and z P z by
        # 2 s Pz_k + P_kk; an accepted flip updates c and Pz by a column of G and P.
        G = A_mean @ A_mean.T
        c, Pz = (A_mean @ resid).tolist(), (P @ z).tolist()  # Python floats: fast scalar access
        G_diag, P_diag = np.diag(G).tolist(), np.diag(P).tolist()
        prior_log_odds = np.log(counts / (beta + N - 1 - counts + 1e-300)).tolist()
        rr, q = float(resid @ resid), float(z @ P @ z)
        for k in rng.permutation(np.flatnonzero(counts > 0)).tolist():
            sign = 1.0 - 2.0 * z[k]
            rr_flip = rr - 2.0 * sign * c[k] + G_diag[k]
            q_flip = q + 2.0 * sign * Pz[k] + P_diag[k]
            var, var_flip = sigma_x**2 * (1 + q), sigma_x**2 * (1 + q_flip)
            log_odds = (-0.5 * D * math.log(var_flip / var) - rr_flip / (2 * var_flip)
                        + rr / (2 * var) + sign * prior_log_odds[k])
            if rng.random() < 1.0 / (1.0 + math.exp(-log_odds)):
                z[k] += sign
                c = [a - sign * g for a, g in zip(c, G[:, k].tolist())]
                Pz = [a + sign * p for a, p in zip(Pz, P[:, k].tolist())]
                rr, q = rr_flip, q_flip
        # singletons: Poisson prior times the predictive likelihood, resampled
        single = counts == 0
        n_single = int(single.sum())
        s = np.arange(max_new + 1)
        var_s = sigma_x**2 * (1 + q) - n_single * sigma_a**2 + s * sigma_a**2
        log_w = (s * math.log(rate) - gammaln(s + 1) - 0.5 * D * np.log(var_s)
                 - rr / (2 * var_s))
        n_new = int(rng.choice(s, p=np.exp(log_w - logsumexp(log_w))))
        keep = ~single
        Z, P, ZtX, counts, z = Z[:, keep], P[np.ix_(keep, keep)], ZtX[keep], counts[keep], z[keep]
        if n_new:
            K = len(counts)
            Z = np.hstack([Z, np.zeros((N, n_new))])
            P = np.block([[P, np.zeros((K, n_new))], [np.zeros((n_new, K)), np.eye(n_new) / ratio]])
            ZtX = np.vstack([ZtX, np.zeros((n_new, D))])
            counts = np.concatenate([counts, np.zeros(n_new)])
            z = np.concatenate([z, np.ones(n_new)])
        # row i back: Sherman-Morrison update
        w = P @ z
        M_inv = P - np.outer(w, w) / (1.0 + z @ w)
        ZtX += np.outer(z, x)
        counts += z
        Z[i] = z
    return Z.astype(np.int8)


def per_sweep_seconds(step, Z, n_sweeps):
    start = time.perf_counter()
    for _ in range(n_sweeps):
        Z = step(Z)
    return (time.perf_counter() - start) / n_sweeps, Z


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=200, help="timed package sweeps")
    parser.add_argument("--reference-sweeps", type=int, default=10, help="timed reference sweeps")
    parser.add_argument("--sigma-x", type=float, default=0.25)
    parser.add_argument("--sigma-a", type=float, default=0.3)
    parser.add_argument("--alpha", type=float, default=2.5)
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
        lambda Z: plain_numpy_sweep(X, Z, *hyper, rng), Z_start, args.reference_sweeps)

    print(f"data: {X.shape[0]} digits x {X.shape[1]} pixels; alpha = {args.alpha}, "
          f"sigma_x = {args.sigma_x}, sigma_a = {args.sigma_a}")
    print(f"K+ at the start of timing: {Z_start.shape[1]}; after: package {Z_end.shape[1]}, "
          f"reference {Z_ref.shape[1]}")
    print(f"first call (numba compile or cache load): {first_call:.2f} s")
    print(f"package sweep (numba):          {1e3 * t_package:8.2f} ms per sweep "
          f"({args.sweeps} sweeps)")
    print(f"plain NumPy rank-one reference: {1e3 * t_reference:8.2f} ms per sweep "
          f"({args.reference_sweeps} sweeps)")
    print(f"speed-up: {t_reference / t_package:.1f}x")

    # tiny data: the regime of the tests against exact enumeration
    X_tiny = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
    n_tiny = 200_000
    start = time.perf_counter()
    gibbs.k_plus_trace(X_tiny, n_tiny, rng, alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    t_tiny = (time.perf_counter() - start) / n_tiny
    print(f"3 x 2 data, k_plus_trace:       {1e6 * t_tiny:8.2f} us per sweep ({n_tiny} sweeps)")


if __name__ == "__main__":
    main()
