"""The stick-breaking slice sampler (Teh, Gorur & Ghahramani 2007), feature images kept.

The beta process behind the IBP has infinitely many features, almost all of them with tiny
weights ``mu``. A slice variable ``s`` makes a sweep finite: only features with ``mu > s``
can change, and there are finitely many. One sweep of :func:`slice_sweep` (a kernel on
``(Z, A)`` leaving ``p(Z, A | X)`` invariant):

1. **Weights of the owned features.** Given ``Z``, the features that some row owns have
   independent weights ``mu_k ~ Beta(m_k, N - m_k + beta)`` (the beta process's Levy density
   ``alpha beta mu^-1 (1 - mu)^(beta - 1)`` times the likelihood ``mu^m (1 - mu)^(N - m)`` of
   the column).
2. **The slice.** ``s ~ Uniform(0, mu*)``, ``mu*`` the smallest owned weight (1 if there is
   none).
3. **Sticks above the slice.** The unowned features form, given ``Z``, a Poisson process of
   intensity ``alpha beta mu^-1 (1 - mu)^(N + beta - 1)``, independent of ``s``. Those above
   ``s`` are drawn in decreasing order by breaking sticks: ``mu_1 = V_1``, ``mu_(j+1) =
   mu_j V_(j+1)`` with ``V ~ Beta(alpha beta, 1)`` (the points of intensity ``alpha beta /
   mu``), until one falls below ``s``; each is kept with probability ``(1 - mu)^(N + beta -
   1)`` (thinning), with an image drawn from ``Normal(0, sigma_a^2)``. With ``beta = 1``
   these are Teh et al.'s sticks, ``V ~ Beta(alpha, 1)``.
4. **Entries** (compiled). Every ``z_nk`` of the finitely many features is drawn given
   everything else::

       log-odds(z_nk = 1) = log mu_k - log(1 - mu_k) + log mu*(z_nk = 0) - log mu*(z_nk = 1)
                            + (||e_0||^2 - ||e_1||^2) / (2 sigma_x^2)

   The slice's density ``1 / mu*`` enters only when row ``n`` is feature ``k``'s only
   possible owner (then ``mu*`` depends on ``z_nk``); every represented weight exceeds ``s``,
   so no value is forbidden.
5. Unowned features and ``s`` are forgotten, and ``A`` is drawn from its conditional given
   ``Z`` (:func:`ibp_lab.models.linear_gaussian.sample_features`).

Steps 1-3 draw auxiliary variables from their exact conditionals and step 5 forgets them,
so the composition leaves the posterior of ``(Z, A)`` invariant. The difference from Teh et
al.'s presentation: they keep the owned and unowned sticks in one ordered sequence, with
order constraints on each weight's update; in the Poisson-process form used here the owned
weights are independent Betas and the constraints disappear. The tests check the chain's
class frequencies against :func:`ibp_lab.inference.exact.class_posterior`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ibp_lab import _kernel
from ibp_lab._threads import single_blas_thread
from ibp_lab._checks import validated
from ibp_lab._hyper import Hyperparameters
from ibp_lab.inference.uncollapsed import (
    RUN_CONSTRAINTS,
    STATE_CONSTRAINTS,
    UncollapsedResult,
    draw_entry,
    likelihood_log_odds,
    run_kernel,
)

__all__ = ["slice_sweep", "run_slice", "MAX_NEW_STICKS"]

#: Most sticks one slice may break (far above any sensible slice: the expected number is
#: ``alpha beta log(1 / s)``); beyond it the sweep stops with an error, never hangs.
MAX_NEW_STICKS = 10**6


def owned_weights(Z: np.ndarray, beta: float, rng) -> np.ndarray:
    """Step 1: ``mu_k ~ Beta(m_k, N - m_k + beta)`` for each (owned) column of ``Z``."""
    m = Z.sum(axis=0)
    return rng.beta(m, Z.shape[0] - m + beta) if m.size else np.zeros(0)


def sticks_above(s: float, alpha: float, beta: float, n_rows: int, rng) -> np.ndarray:
    """Step 3: the weights of the unowned features above the slice ``s``, decreasing.

    Sticks ``mu_(j+1) = mu_j V`` with ``V ~ Beta(alpha beta, 1)`` until one falls below
    ``s``; each is kept with probability ``(1 - mu)^(n_rows + beta - 1)``. Worked in logs,
    so a tiny ``s`` does not underflow.

    Examples
    --------
    >>> mu = sticks_above(0.01, 2.0, 1.0, 5, np.random.default_rng(3))
    >>> bool(np.all((mu > 0.01) & (mu < 1))), bool(np.all(np.diff(mu) < 0))
    (True, True)
    """
    log_s, log_mu, kept = math.log(s), 0.0, []
    for _ in range(MAX_NEW_STICKS):
        log_mu += math.log(rng.random() or 1e-300) / (alpha * beta)  # log Beta(ab, 1) draw
        if log_mu <= log_s:
            return np.array(kept)
        mu = math.exp(log_mu)
        if rng.random() < math.exp((n_rows + beta - 1.0) * math.log1p(-mu)):
            kept.append(mu)
    raise ValueError(f"the slice s = {s:.3g} needs more than {MAX_NEW_STICKS} sticks: "
                     "alpha * beta is too large for this sampler")


@njit(cache=True)
def _flip_entries(Z, A, resid, m, log_mu, log1m_mu, two_sx2, rng):
    """Step 4 over all rows, features in column order, one uniform per entry."""
    N, K = Z.shape
    for n in range(N):
        for k in range(K):
            log_odds = log_mu[k] - log1m_mu[k]
            if m[k] - Z[n, k] == 0:  # only row n can own k: mu* depends on z_nk
                smallest_other = 0.0  # log mu* of the other owned features (log 1 if none)
                for j in range(K):
                    if j != k and m[j] > 0 and log_mu[j] < smallest_other:
                        smallest_other = log_mu[j]
                log_odds += smallest_other - min(smallest_other, log_mu[k])
            log_odds += likelihood_log_odds(resid, n, A, k, Z[n, k], two_sx2)
            draw_entry(Z, m, resid, A, n, k, log_odds, rng)


def _sweep(X, Z, A, hyper, rng):
    """One sweep without checks: ``(Z, A, features_instantiated)``."""
    N, D = X.shape
    mu = owned_weights(Z, hyper.beta, rng)
    s = (mu.min() if mu.size else 1.0) * (1.0 - rng.random())  # uniform on (0, mu*]
    new = sticks_above(s, hyper.alpha, hyper.beta, N, rng)
    mu = np.concatenate([mu, new])
    A = np.vstack([A, rng.normal(0.0, hyper.sigma_a, size=(new.size, D))])
    Z = np.ascontiguousarray(np.hstack([Z, np.zeros((N, new.size), np.int8)]), np.int8)
    resid = X - Z @ A
    m = Z.sum(axis=0).astype(np.int64)
    with np.errstate(divide="ignore"):  # a weight of exactly 1 has log(1 - mu) = -inf
        _flip_entries(Z, A, resid, m, np.log(mu), np.log1p(-mu), 2.0 * hyper.sigma_x**2, rng)
    Z = Z[:, m > 0]
    return Z, _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng), new.size


@single_blas_thread
@validated(**STATE_CONSTRAINTS)
def slice_sweep(X, Z, A, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                sigma_a: float, beta: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """One sweep of the slice sampler (see the module docstring for its five steps).

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix (all-zero columns are dropped with their images).
    A : array_like
        ``(K, D)`` images of ``Z``'s columns.
    rng : numpy.random.Generator
    alpha, sigma_x, sigma_a, beta : float
        The model's hyperparameters (as :func:`ibp_lab.inference.gibbs.gibbs_sweep`).

    Returns
    -------
    Z, A : numpy.ndarray
        The new state: ``(N, K')`` ``int8`` without empty columns, and a draw of ``A`` given it.

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> Z, A = slice_sweep(X, np.ones((3, 1)), [[0.5, 0.5]], np.random.default_rng(1),
    ...                    alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    >>> Z.shape[0], A.shape == (Z.shape[1], 2)
    (3, True)
    """
    Z, A, _ = _sweep(X, Z, A, Hyperparameters(alpha, sigma_x, sigma_a, beta), rng)
    return Z, A


@single_blas_thread
@validated(**RUN_CONSTRAINTS)
def run_slice(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
              sigma_a: float, beta: float = 1.0, Z0=None, burn: int = 0,
              thin: int = 1) -> UncollapsedResult:
    """Run the slice sampler for ``n_sweeps`` sweeps at fixed hyperparameters.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_sweeps : int
        Sweeps of :func:`slice_sweep`, >= 1.
    rng : numpy.random.Generator
    alpha, sigma_x, sigma_a, beta : float
        Fixed hyperparameters.
    Z0 : array_like, optional
        Starting ``Z`` (default one feature owned by every row); ``A`` starts from its
        conditional given ``Z0``.
    burn, thin : int, optional
        Warm-up sweeps not kept in ``samples`` (the trace keeps them) and the thinning.

    Returns
    -------
    UncollapsedResult
        ``trace["k_plus"]`` one per sweep, like :func:`ibp_lab.inference.chains.run_chain`'s;
        ``sample_stats["features_instantiated"]`` counts the unowned sticks above each slice.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 3))
    >>> run = run_slice(X, 20, np.random.default_rng(1), alpha=1.0, sigma_x=1.0, sigma_a=1.0)
    >>> run.trace["k_plus"].shape
    (20,)
    """
    hyper = Hyperparameters(alpha, sigma_x, sigma_a, beta)
    return run_kernel(_sweep, X, n_sweeps, rng, hyper, Z0, burn, thin, "features_instantiated",
                      "slice sampler (Teh, Gorur & Ghahramani 2007)")
