"""Sequentially allocated split-merge (Jain & Neal 2004; Meeds et al. 2007).

:func:`sequential_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, *,
beta=1.0) -> (Z, stats)``; :func:`sequential_proposal` is one proposal, for the
chain runner's move objects (:class:`ibp_lab.inference.chains.SequentialSplitMerge`). The
allocation, its proposal probability and its cost are described in
:mod:`ibp_lab.inference.split_merge`; :func:`_scan` runs it in compiled code.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ibp_lab._kernel import refresh, row_in, row_out
from ibp_lab._checks import validated
from ibp_lab.inference.split_merge._metropolis import (
    MOVE_CONSTRAINTS,
    SplitMergeMove,
    empty_stats,
    finish_stats,
    metropolis_hastings,
)
from ibp_lab.inference.split_merge._target import LogJoint, Proposal, n_equal

__all__ = ["sequential_split_merge", "sequential_proposal", "SequentialSplitMerge"]

# Allocation options: 0 = first half only, 1 = second half only, 2 = both halves.
_IN_FIRST = np.array([1, 0, 1], np.int8)
_IN_SECOND = np.array([0, 1, 1], np.int8)


@njit(cache=True, inline="always")
def _other_features(row, X, K0, Minv, Abar, zf, pz0, resid0):
    """``z0 P z0`` for the row's other features ``z0`` (``zf[:K0]``), with ``P z0`` and ``x - z0 Abar``.

    Called while the row is out: ``Minv`` holds ``P`` and ``Abar`` the posterior
    mean given the other rows; the halves and the waiting column count as off.
    """
    K, D = Abar.shape
    for a in range(K):
        acc = 0.0
        for b in range(K0):
            if zf[b] != 0.0:
                acc += Minv[a, b]
        pz0[a] = acc
    q0 = 0.0
    for b in range(K0):
        if zf[b] != 0.0:
            q0 += pz0[b]
    for d in range(D):
        acc = X[row, d]
        for b in range(K0):
            if zf[b] != 0.0:
                acc -= Abar[b, d]
        resid0[d] = acc
    return q0


@njit(cache=True, inline="always")
def _option_log_weight(s1, s2, f1, f2, q0, pz0, resid0, Minv, Abar, m, n_rows, sx2, beta, b):
    """Log weight of one allocation: prior conditional of each half times the predictive
    density raised to ``b``, the inverse temperature (the tempered target's conditional).

    Returns ``(log_w, q)`` with ``q = z P z`` of the row's vector under this option.
    """
    D = resid0.shape[0]
    ee = 0.0
    for d in range(D):
        e = resid0[d] - s1 * Abar[f1, d] - s2 * Abar[f2, d]
        ee += e * e
    q = (q0 + 2.0 * s1 * pz0[f1] + 2.0 * s2 * pz0[f2] + s1 * Minv[f1, f1]
         + s2 * Minv[f2, f2] + 2.0 * s1 * s2 * Minv[f1, f2])
    var = sx2 * (1.0 + q)
    # m / (beta + N - 1) on, (N - 1 - m + beta) / (beta + N - 1) off; the common
    # denominator cancels. Summed as (N - 1 - m) + beta: exact for tiny beta
    m1, m2 = m[f1], m[f2]
    log_prior = ((math.log(m1) if s1 else math.log((n_rows - 1.0 - m1) + beta))
                 + (math.log(m2) if s2 else math.log((n_rows - 1.0 - m2) + beta)))
    # b times each likelihood term: at b = 1 every product is exact, the same bits as before
    return log_prior - b * (0.5 * D) * math.log(var) - b * ee / (2.0 * var), q


@njit(cache=True)
def _scan(X, Zw, K0, order, forced, uniforms, sx2, sa2, beta, inverse_temperature):
    """Reallocate the rows ``order`` of the ``int8`` working matrix ``Zw`` (changed in place).

    ``Zw`` is ``[Z_rest (K0 columns), first, second]``, possibly followed by
    columns that every allocated row leaves (the *waiting* column of owners not
    yet allocated). Each row of ``order`` in turn is taken out with the
    kernel's :func:`~ibp_lab._kernel.row_out`, its three options are scored with
    the waiting column off (:func:`_option_log_weight`), one is chosen
    (``forced[t]`` if ``forced`` is not empty, else by inverting
    ``uniforms[t]``), and the row is put back with :func:`~ibp_lab._kernel.row_in`.

    Returns ``(choices, log_q)``: option of each row (0 first, 1 second, 2 both)
    and the log probability of the whole sequence of choices. The options' predictive
    densities are raised to ``inverse_temperature``.
    """
    N, D = X.shape
    K = Zw.shape[1]
    f1, f2 = K0, K0 + 1
    r = sx2 / sa2
    Minv, Abar, m = np.zeros((K, K)), np.zeros((K, D)), np.zeros(K)
    refresh(X, Zw, K, r, Minv, Abar, m)
    zf, w, Pz, pz0 = np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)
    resid, resid0, y = np.zeros(D), np.zeros(D), np.zeros(D)
    log_w, q_option = np.zeros(3), np.zeros(3)
    choices = np.zeros(order.shape[0], np.int64)
    log_q = 0.0
    for t in range(order.shape[0]):
        row = order[t]
        row_out(row, X, Zw, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y)
        q0 = _other_features(row, X, K0, Minv, Abar, zf, pz0, resid0)
        for s in range(3):
            log_w[s], q_option[s] = _option_log_weight(
                float(_IN_FIRST[s]), float(_IN_SECOND[s]), f1, f2, q0, pz0, resid0, Minv, Abar,
                m, N, sx2, beta, inverse_temperature)
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
        # the row's new vector: its other features, the chosen halves, the waiting column left
        s1, s2 = float(_IN_FIRST[choice]), float(_IN_SECOND[choice])
        for a in range(K0 + 2, K):
            zf[a] = 0.0
        zf[f1], zf[f2] = s1, s2
        for a in range(K):
            Pz[a] = pz0[a] + s1 * Minv[a, f1] + s2 * Minv[a, f2]
        for d in range(D):
            resid[d] = resid0[d] - s1 * Abar[f1, d] - s2 * Abar[f2, d]
        row_in(row, Zw, K, D, Minv, Abar, m, zf, Pz, resid)
    return choices, log_q


_NO_CHOICES = np.zeros(0, np.int64)
_NO_UNIFORMS = np.zeros(0)


def _run_allocation(target: LogJoint, Z_rest, i, j, order, *, forced=None, uniforms=None):
    """Sequential allocation of ``order`` to halves anchored by rows ``i`` and ``j``.

    The working matrix is ``[Z_rest, first half, second half, waiting]``; the
    rows of ``order`` start in the waiting column (the old feature).
    """
    N, K0 = Z_rest.shape
    Zw = np.zeros((N, K0 + 3), np.int8)
    Zw[:, :K0] = Z_rest
    Zw[i, K0] = 1
    Zw[j, K0 + 1] = 1
    Zw[order, K0 + 2] = 1
    return _scan(
        target.X, Zw, K0, np.ascontiguousarray(order, dtype=np.int64),
        _NO_CHOICES if forced is None else np.ascontiguousarray(forced, dtype=np.int64),
        _NO_UNIFORMS if uniforms is None else np.ascontiguousarray(uniforms, dtype=np.float64),
        target.sigma_x**2, target.sigma_a**2, target.beta, target.inverse_temperature,
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


@validated(**MOVE_CONSTRAINTS)
def sequential_split_merge(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                           rng: np.random.Generator, n_proposals: int, *,
                           beta: float = 1.0, discount: float = 0.0,
                           inverse_temperature: float = 1.0) -> tuple[np.ndarray, dict]:
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
    discount : float, optional
        ``d`` in ``[0, 1)``: the target's prior is the three-parameter IBP's class law
        (the proposals are unchanged; only the acceptance ratio sees ``d``); default 0.

    inverse_temperature : float, optional
        ``b`` in ``[0, 1]``: the moves target the tempered posterior ``p(X | Z)^b P([Z])``
        (the likelihood's change in the acceptance ratio and the allocation's predictive densities scaled by ``b``, as in
        :func:`ibp_lab.inference.gibbs.gibbs_sweep`); 1 (the default) is the posterior,
        bit for bit the untempered moves.

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
    target = LogJoint(X, alpha, sigma_x, sigma_a, beta, discount=discount,
                      inverse_temperature=inverse_temperature)
    return sequential_moves(target, Z, rng, n_proposals)


def sequential_moves(target, Z, rng, n_proposals) -> tuple[np.ndarray, dict]:
    """:func:`sequential_split_merge` on checked inputs: ``target`` is the ``LogJoint`` that
    :func:`~ibp_lab.inference.split_merge._metropolis.check_move_inputs` builds, ``Z`` an ``int8``
    matrix without empty columns (a caller that makes many rounds of moves on one data set
    checks once)."""
    stats = empty_stats()
    Z, _ = metropolis_hastings(target, Z, rng, n_proposals,
                                lambda Z, rng: sequential_proposal(target, Z, rng), stats)
    return np.ascontiguousarray(Z), finish_stats(stats)


class SequentialSplitMerge(SplitMergeMove):
    """Sequentially allocated splits and merges as a move: ``n_proposals`` (default 10)
    proposals of :func:`sequential_split_merge` per call, at the caller's inverse
    temperature."""

    name = "sequential_split_merge"

    def _proposer(self, target):
        return lambda Z, rng: sequential_proposal(target, Z, rng)
