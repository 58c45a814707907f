"""The singleton update: redraw each row's number of features no other row owns.

With a split-merge move it makes a complete sampler without Gibbs flips (the
moves never change which rows own features; this update does), which is how
the tests check the moves on their own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibp_lab._kernel import refresh, row_out, sample_new_dishes
from ibp_lab.inference._moves import Move
from ibp_lab._checks import validated
from ibp_lab.inference.split_merge._metropolis import SWEEP_CONSTRAINTS
from ibp_lab.inference.split_merge._target import LogJoint

__all__ = ["singleton_update", "singleton_sweep", "SingletonUpdate"]


@njit(cache=True)
def _singleton_count(X, Z, i, uniform, sx2, sa2, rate, buf, inverse_temperature):
    """Draw row ``i``'s number of singletons given the other rows and its shared features.

    The kernel's steps: the feature posterior of ``Z`` (:func:`~ibp_lab._kernel.refresh`),
    row ``i`` taken out (:func:`~ibp_lab._kernel.row_out`, which leaves its
    singletons out of the predictive variance), and the new-dish law
    (:func:`~ibp_lab._kernel.sample_new_dishes`, its likelihood raised to
    ``inverse_temperature``), as in the Gibbs sweep.
    """
    N, D = X.shape
    K = Z.shape[1]
    r = sx2 / sa2
    Minv, Abar, m = np.zeros((K, K)), np.zeros((K, D)), np.zeros(K)
    refresh(X, Z, K, r, Minv, Abar, m)
    zf, w, Pz, resid, y = np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(D), np.zeros(D)
    q, rr, _ = row_out(i, X, Z, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y)
    return sample_new_dishes(uniform, rate, sx2 * (1.0 + q), sa2, rr, D, buf, inverse_temperature)


def singleton_step(target: LogJoint, Z: np.ndarray, i: int, rng, buf):
    """Resample row ``i``'s singletons: keep the first ones in place, drop or append the rest."""
    N = Z.shape[0]
    n_new, buf = _singleton_count(target.X, Z, i, rng.random(), target.sigma_x**2,
                                  target.sigma_a**2, target.singleton_rate, buf,
                                  target.inverse_temperature)
    singles = np.flatnonzero(Z[i] & (Z.sum(axis=0) == 1))
    if n_new == singles.size:
        return Z, buf
    if n_new < singles.size:
        return np.ascontiguousarray(np.delete(Z, singles[n_new:], axis=1)), buf
    extra = np.zeros((N, n_new - singles.size), np.int8)
    extra[i] = 1
    return np.ascontiguousarray(np.hstack([Z, extra])), buf


@validated(**SWEEP_CONSTRAINTS)
def singleton_update(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                     rng: np.random.Generator, *, beta: float = 1.0,
                     discount: float = 0.0, inverse_temperature: float = 1.0) -> np.ndarray:
    """For each row in turn, redraw its number of singleton features exactly.

    A singleton of row ``i`` is a feature no other row owns. Given the other
    rows and row ``i``'s shared features, the number of singletons has prior
    Poisson(``alpha beta / (beta + N - 1)``) and each adds ``sigma_a^2`` to the
    predictive variance of ``x_i``; this is step 3 of the Gibbs sweep
    (:mod:`ibp_lab.inference.gibbs`, whose compiled draw of the count it reuses) without
    the flips of shared features, recomputing the features' posterior for each
    row (``O(K^3 + N K D)`` per row). Split-merge moves cannot change which rows own
    features, nor reach ``K+ = 0``; this update can, so the two together are a
    complete sampler.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix.
    alpha, sigma_x, sigma_a : float
        Hyperparameters, > 0.
    rng : numpy.random.Generator
    beta : float, optional
        IBP concentration, > 0.
    discount : float, optional
        ``d`` in ``[0, 1)``: the three-parameter IBP, whose singleton rate is the
        buffet's ``N``-th customer's (:func:`ibp_lab.inference.gibbs.gibbs_sweep`); default 0.

    inverse_temperature : float, optional
        ``b`` in ``[0, 1]``: the count's law under the tempered posterior ``p(X | Z)^b
        P([Z])`` (the predictive density raised to ``b``, as in
        :func:`ibp_lab.inference.gibbs.gibbs_sweep`); 1 (the default) is the posterior.

    Returns
    -------
    numpy.ndarray
        ``(N, K+)`` ``int8``; kept singletons stay in place, new ones are appended.

    Examples
    --------
    >>> Z = singleton_update([[5.0, 5.0], [0.0, 0.1]], [[0], [0]], 1.0, 0.3, 3.0,
    ...                      np.random.default_rng(0))
    >>> bool(Z[0].sum() >= 1), int(Z[1].sum())  # row 1 is fitted without any feature
    (True, 0)
    """
    target = LogJoint(X, alpha, sigma_x, sigma_a, beta, discount=discount,
                      inverse_temperature=inverse_temperature)
    return singleton_sweep(target, Z, rng)


def singleton_sweep(target: LogJoint, Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`singleton_update` without the door: rows in order, ``Z`` already checked."""
    buf = np.empty(64)
    for i in range(Z.shape[0]):
        Z, buf = singleton_step(target, Z, i, rng, buf)
    return Z


class SingletonUpdate(Move):
    """Each row's number of singleton features redrawn (:func:`singleton_update`) as a move,
    at the caller's inverse temperature."""

    name = "singleton_update"

    def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
        target = LogJoint(X, *hyper, discount=hyper.discount,
                          inverse_temperature=inverse_temperature)
        return singleton_sweep(target, Z, rng), {}
