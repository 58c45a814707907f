"""Sequentially allocated split-merge (Jain & Neal 2004; Meeds et al. 2007).

:func:`sequential_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, *,
beta=1.0) -> (Z, stats)``; :func:`sequential_proposal` is one proposal, for the
chain runner's move objects (:class:`ibp_lab.chains.SequentialSplitMerge`). The
allocation, its proposal probability and its cost are described in
:mod:`ibp_lab.split_merge`; :func:`_scan` runs it in compiled code.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ibp_lab.split_merge._metropolis import (
    check_move_inputs,
    empty_stats,
    finish_stats,
    metropolis_hastings,
)
from ibp_lab.split_merge._target import LogJoint, Proposal, n_equal

__all__ = ["sequential_split_merge", "sequential_proposal"]

# Allocation options: 0 = first half only, 1 = second half only, 2 = both halves.
_IN_FIRST = np.array([1, 0, 1], np.int8)
_IN_SECOND = np.array([0, 1, 1], np.int8)


@njit(cache=True)
def _scan(X, Zw, K0, order, forced, uniforms, sx2, sa2, beta):
    """Reallocate the rows ``order`` of the working matrix ``Zw`` (changed in place).

    ``Zw`` is ``[Z_rest (K0 columns), first, second]``, possibly followed by
    columns that every allocated row leaves (the *waiting* column of owners not
    yet allocated). Each row of ``order`` in turn is taken out (a
    Sherman-Morrison downdate of ``M^-1`` and of the posterior mean ``Abar`` of
    the features), its three options are scored with the waiting column off,
    one is chosen (``forced[t]`` if ``forced`` is not empty, else by inverting
    ``uniforms[t]``), and the row is put back with a rank-one update.

    Returns ``(choices, log_q)``: option of each row (0 first, 1 second, 2 both)
    and the log probability of the whole sequence of choices.
    """
    N, D = X.shape
    K = Zw.shape[1]
    f1 = K0
    f2 = K0 + 1
    M = np.zeros((K, K))
    ZtX = np.zeros((K, D))
    m1 = 0.0
    m2 = 0.0
    for n in range(N):
        m1 += Zw[n, f1]
        m2 += Zw[n, f2]
        for a in range(K):
            if Zw[n, a] != 0.0:
                for b in range(K):
                    M[a, b] += Zw[n, b]
                for d in range(D):
                    ZtX[a, d] += X[n, d]
    for a in range(K):
        M[a, a] += sx2 / sa2
    Minv = np.linalg.inv(M)
    Abar = Minv @ ZtX
    half_D = 0.5 * D
    n_rows = order.shape[0]
    choices = np.zeros(n_rows, np.int64)
    v = np.zeros(K)
    pz = np.zeros(K)
    w = np.zeros(K)
    resid = np.zeros(D)
    err = np.zeros(D)
    log_w = np.zeros(3)
    q_option = np.zeros(3)
    log_q = 0.0
    owned = np.zeros(K, np.int64)
    for t in range(n_rows):
        r = order[t]
        n_owned = 0  # row r's features, new ones included
        for a in range(K):
            if Zw[r, a] != 0.0:
                owned[n_owned] = a
                n_owned += 1
        # take row r out: v = M^-1 z, c = 1 - z.v, P = M^-1 + v v^T / c, and the
        # posterior mean without row r is Abar - v (x_r - z Abar)^T / c
        for a in range(K):
            acc = 0.0
            for p in range(n_owned):
                acc += Minv[a, owned[p]]
            v[a] = acc
        zv = 0.0
        for p in range(n_owned):
            zv += v[owned[p]]
        c = 1.0 - zv
        for d in range(D):
            resid[d] = X[r, d]
        for p in range(n_owned):
            for d in range(D):
                resid[d] -= Abar[owned[p], d]
        for d in range(D):
            resid[d] /= c
        for a in range(K):
            va = v[a] / c
            for b in range(K):
                Minv[a, b] += va * v[b]  # now P
            for d in range(D):
                Abar[a, d] -= v[a] * resid[d]  # now the mean without row r
        m1 -= Zw[r, f1]
        m2 -= Zw[r, f2]
        # the row's other features z0 (new and waiting columns off): P z0, z0 P z0 and
        # the residual x_r - z0 Abar
        n_base = 0
        for p in range(n_owned):
            if owned[p] < K0:
                n_base += 1  # owned is sorted: the first n_base are the other features
        for a in range(K):
            acc = 0.0
            for p in range(n_base):
                acc += Minv[a, owned[p]]
            pz[a] = acc
        q0 = 0.0
        for p in range(n_base):
            q0 += pz[owned[p]]
        for d in range(D):
            resid[d] = X[r, d]
        for p in range(n_base):
            for d in range(D):
                resid[d] -= Abar[owned[p], d]
        # score the options: predictive variance sx2 (1 + z P z), mean z Abar
        for s in range(3):
            s1 = 1.0 if s != 1 else 0.0
            s2 = 1.0 if s != 0 else 0.0
            ee = 0.0
            for d in range(D):
                e = resid[d] - s1 * Abar[f1, d] - s2 * Abar[f2, d]
                ee += e * e
            q = (q0 + 2.0 * s1 * pz[f1] + 2.0 * s2 * pz[f2] + s1 * Minv[f1, f1]
                 + s2 * Minv[f2, f2] + 2.0 * s1 * s2 * Minv[f1, f2])
            q_option[s] = q
            var = sx2 * (1.0 + q)
            # m / (beta + N - 1) on, (N - 1 - m + beta) / (beta + N - 1) off; the
            # common denominator cancels. Summed as (N - 1 - m) + beta: exact for tiny beta
            log_prior = ((math.log(m1) if s1 else math.log((N - 1.0 - m1) + beta))
                         + (math.log(m2) if s2 else math.log((N - 1.0 - m2) + beta)))
            log_w[s] = log_prior - half_D * math.log(var) - ee / (2.0 * var)
        top = max(log_w[0], max(log_w[1], log_w[2]))
        total = 0.0
        for s in range(3):
            total += math.exp(log_w[s] - top)
        if forced.shape[0] > 0:
            choice = forced[t]
        else:
            target = uniforms[t] * total
            choice = 2
            cumulative = 0.0
            for s in range(3):
                cumulative += math.exp(log_w[s] - top)
                if target < cumulative:
                    choice = s
                    break
        choices[t] = choice
        log_q += log_w[choice] - top - math.log(total)
        # put row r back with its new entries: w = P z, M^-1 = P - w w^T / (1 + z.w),
        # and the mean moves by w (x_r - z Abar_-r)^T / (1 + z.w)
        s1 = 1.0 if choice != 1 else 0.0
        s2 = 1.0 if choice != 0 else 0.0
        for a in range(K):
            w[a] = pz[a] + s1 * Minv[a, f1] + s2 * Minv[a, f2]
        zw = q_option[choice]
        for d in range(D):
            err[d] = resid[d] - s1 * Abar[f1, d] - s2 * Abar[f2, d]
        scale = 1.0 + zw
        for a in range(K):
            for b in range(K):
                Minv[a, b] -= w[a] * w[b] / scale
            for d in range(D):
                Abar[a, d] += w[a] * err[d] / scale
        for a in range(K0 + 2, K):
            Zw[r, a] = 0.0
        Zw[r, f1] = s1
        Zw[r, f2] = s2
        m1 += s1
        m2 += s2
    return choices, log_q


_NO_CHOICES = np.zeros(0, np.int64)
_NO_UNIFORMS = np.zeros(0)


def _run_allocation(target: LogJoint, Z_rest, i, j, order, *, forced=None, uniforms=None):
    """Sequential allocation of ``order`` to halves anchored by rows ``i`` and ``j``.

    The working matrix is ``[Z_rest, first half, second half, waiting]``; the
    rows of ``order`` start in the waiting column (the old feature).
    """
    N, K0 = Z_rest.shape
    Zw = np.zeros((N, K0 + 3))
    Zw[:, :K0] = Z_rest
    Zw[i, K0] = 1.0
    Zw[j, K0 + 1] = 1.0
    Zw[order, K0 + 2] = 1.0
    return _scan(
        target.X, Zw, K0, np.ascontiguousarray(order, dtype=np.int64),
        _NO_CHOICES if forced is None else np.ascontiguousarray(forced, dtype=np.int64),
        _NO_UNIFORMS if uniforms is None else np.ascontiguousarray(uniforms, dtype=np.float64),
        target.sigma_x**2, target.sigma_a**2, target.beta,
    )


def _log_pick_merge_pair(Z: np.ndarray, i: int, j: int, ca: np.ndarray, cb: np.ndarray) -> float:
    """Log probability of picking value ``ca`` among row i's features, then ``cb``.

    ``cb`` is picked among the features that row j owns and row i does not.
    """
    n_i = int(Z[i].sum())
    n_j_not_i = int(np.count_nonzero(Z[j] & (1 - Z[i])))
    return math.log(n_equal(Z, ca) / n_i) + math.log(n_equal(Z, cb) / n_j_not_i)


def _log_pick_split(Z: np.ndarray, i: int, u: np.ndarray) -> float:
    """Log probability of picking value ``u`` among row i's features."""
    return math.log(n_equal(Z, u) / int(Z[i].sum()))


def _sequential_split(target, Z, i, j, a, order, *, forced=None, uniforms=None):
    """Split column ``a`` (owned by rows ``i`` and ``j``), allocating the rows ``order``.

    Returns ``(proposal, log_q_allocation)``.
    """
    u = Z[:, a]
    Z_rest = np.delete(Z, a, axis=1)
    choices, log_q = _run_allocation(target, Z_rest, i, j, order, forced=forced,
                                     uniforms=uniforms)
    c1 = np.zeros_like(u)
    c2 = np.zeros_like(u)
    c1[i] = 1
    c2[j] = 1
    c1[order] = _IN_FIRST[choices]
    c2[order] = _IN_SECOND[choices]
    Z_new = np.column_stack([Z_rest, c1, c2])
    log_forward = _log_pick_split(Z, i, u) + log_q
    log_reverse = _log_pick_merge_pair(Z_new, i, j, c1, c2)
    return Proposal("split", Z_new, log_reverse - log_forward), log_q


def _sequential_merge(target, Z, i, j, a, b, order):
    """Merge column ``a`` (row ``i``'s, not ``j``'s) with ``b`` (``j``'s, not ``i``'s)."""
    ca, cb = Z[:, a], Z[:, b]
    u = ca | cb
    Z_rest = np.delete(Z, [a, b], axis=1)
    # the allocation that would recreate a and b: 0 in a only, 1 in b only, 2 in both
    forced = np.where(ca[order] & cb[order], 2, np.where(ca[order], 0, 1))
    _, log_q = _run_allocation(target, Z_rest, i, j, order, forced=forced)
    Z_new = np.column_stack([Z_rest, u])
    log_forward = _log_pick_merge_pair(Z, i, j, ca, cb)
    log_reverse = _log_pick_split(Z_new, i, u) + log_q
    return Proposal("merge", Z_new, log_reverse - log_forward)


def _other_owners(column: np.ndarray, i: int, j: int) -> np.ndarray:
    owners = np.flatnonzero(column)
    return owners[(owners != i) & (owners != j)]


def sequential_proposal(target: LogJoint, Z: np.ndarray, rng: np.random.Generator):
    """One sequentially allocated proposal from ``Z``, or None when none can be formed."""
    # The pair (i, j) is uniform over rows owning a feature; splits and merges keep
    # that set, so its probability cancels. So does 1 / (number of orders)!.
    owning = np.flatnonzero(Z.any(axis=1))
    if owning.size < 2:
        return None
    i, j = (int(r) for r in rng.choice(owning, size=2, replace=False))
    features_i = np.flatnonzero(Z[i])
    a = int(features_i[rng.integers(features_i.size)])
    if Z[j, a]:
        order = rng.permutation(_other_owners(Z[:, a], i, j))
        proposal, _ = _sequential_split(target, Z, i, j, a, order,
                                        uniforms=rng.random(order.size))
        return proposal
    candidates = np.flatnonzero(Z[j] & (1 - Z[i]))
    if candidates.size == 0:
        return None
    b = int(candidates[rng.integers(candidates.size)])
    order = rng.permutation(_other_owners(Z[:, a] | Z[:, b], i, j))
    return _sequential_merge(target, Z, i, j, a, b, order)


def sequential_split_merge(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                           rng: np.random.Generator, n_proposals: int, *,
                           beta: float = 1.0) -> tuple[np.ndarray, dict]:
    """Metropolis-Hastings with sequentially allocated splits and merges.

    Each proposal picks two rows ``i != j`` among those owning a feature and a
    feature ``a`` of row ``i``. If ``j`` owns ``a`` too, ``a`` is split: ``i``
    anchors the first half, ``j`` the second, and the other owners, in random
    order, join the first half, the second or both with probabilities
    proportional to the prior conditional times the predictive density of their
    data given everything allocated so far. Otherwise ``a`` is merged with a
    feature ``b`` that ``j`` owns and ``i`` does not (picked uniformly). The
    acceptance ratio includes the exact probability of the allocation (for a
    merge, of the allocation that would undo it). See the module docstring for
    the details and the cost.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix; empty columns are dropped.
    alpha, sigma_x, sigma_a : float
        IBP mass, noise and feature standard deviations, > 0.
    rng : numpy.random.Generator
    n_proposals : int
        Number of proposals, >= 0.
    beta : float, optional
        IBP concentration, > 0.

    Returns
    -------
    Z : numpy.ndarray
        ``(N, K+)`` ``int8``, no empty columns.
    stats : dict
        Counts and per-proposal log ratios (module docstring).

    Examples
    --------
    Two well separated groups of rows that the start lumps into one feature:

    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal([3, 0], 0.2, (5, 2)), rng.normal([0, 3], 0.2, (5, 2))])
    >>> Z, stats = sequential_split_merge(X, np.ones((10, 1)), 1.0, 0.2, 2.0, rng, 20)
    >>> stats["accepted_splits"] >= 1, Z.shape[1] >= 2
    (True, True)
    """
    X, Z, target, rng, n_proposals = check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng,
                                                        n_proposals, beta)
    stats = empty_stats()
    Z, _ = metropolis_hastings(target, Z, rng, n_proposals,
                                lambda Z, rng: sequential_proposal(target, Z, rng), stats)
    return np.ascontiguousarray(Z), finish_stats(stats)
