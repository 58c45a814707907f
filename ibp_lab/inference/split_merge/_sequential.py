"""Sequentially allocated split-merge (Jain & Neal 2004; Meeds et al. 2007).

:func:`sequential_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, *,
beta=1.0) -> (Z, stats)``; :func:`sequential_proposal` is one proposal, for the
chain runner's move objects (:class:`ibp_lab.inference.chains.SequentialSplitMerge`). The
allocation, its proposal probability and its cost are described in
:mod:`ibp_lab.inference.split_merge`; :func:`_scan` runs it in compiled code, and
:func:`_split_allocation` and :func:`_merge_allocation` form a whole proposal around it (the
new ``Z`` and the counts of its pick probabilities) in one compiled call. The proposal's
random numbers are all drawn in :func:`sequential_proposal`, by the generator, and passed in.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ibp_lab._kernel import refresh, row_in, row_out_listing
from ibp_lab._checks import validated
from ibp_lab.inference.split_merge._metropolis import (
    MOVE_CONSTRAINTS,
    SplitMergeMove,
    empty_stats,
    finish_stats,
    metropolis_hastings,
)
from ibp_lab.inference.split_merge._target import LogJoint, Proposal

__all__ = ["sequential_split_merge", "sequential_proposal", "SequentialSplitMerge"]

# Allocation options: 0 = first half only, 1 = second half only, 2 = both halves.
_IN_FIRST = np.array([1, 0, 1], np.int8)
_IN_SECOND = np.array([0, 1, 1], np.int8)


@njit(cache=True, inline="always")
def _other_features(row, X, K0, Minv, Abar, zf, pz0, resid0, on):
    """``z0 P z0`` for the row's other features ``z0`` (``zf[:K0]``), with ``P z0`` and ``x - z0 Abar``.

    Called while the row is out: ``Minv`` holds ``P`` and ``Abar`` the posterior
    mean given the other rows; the halves and the waiting column count as off.
    The row's features are listed in ``on`` first (increasing): each sum then adds the
    same terms in the same order as a loop over all ``K0`` features that skips the
    others (the same bits), and the loops over pixels run feature by feature.
    """
    K, D = Abar.shape
    n_on = 0
    for b in range(K0):
        if zf[b] != 0.0:
            on[n_on] = b
            n_on += 1
    for a in range(K):
        acc = 0.0
        for p in range(n_on):
            acc += Minv[a, on[p]]
        pz0[a] = acc
    q0 = 0.0
    for p in range(n_on):
        q0 += pz0[on[p]]
    for d in range(D):
        resid0[d] = X[row, d]
    for p in range(n_on):
        b = on[p]
        for d in range(D):
            resid0[d] -= Abar[b, d]
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
    kernel's :func:`~ibp_lab._kernel.row_out` (as ``row_out_listing``, with one scratch list
    for every row), its three options are scored with
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
    on = np.empty(K, np.int64)  # the row's other features, and the kernel's list of its own
    choices = np.zeros(order.shape[0], np.int64)
    log_q = 0.0
    for t in range(order.shape[0]):
        row = order[t]
        row_out_listing(row, X, Zw, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y, on)
        q0 = _other_features(row, X, K0, Minv, Abar, zf, pz0, resid0, on)
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


@njit(cache=True, inline="always")
def _working_matrix(Z, dropped_a, dropped_b, i, j, order):
    """``[Z without columns dropped_a and dropped_b, first half, second half, waiting]``,
    ``int8``: ``i`` anchors the first half, ``j`` the second, the rows of ``order`` wait."""
    N, K = Z.shape
    K0 = K - 1 if dropped_a == dropped_b else K - 2
    Zw = np.zeros((N, K0 + 3), np.int8)
    for n in range(N):
        c = 0
        for k in range(K):
            if k != dropped_a and k != dropped_b:
                Zw[n, c] = Z[n, k]
                c += 1
    Zw[i, K0] = 1
    Zw[j, K0 + 1] = 1
    for t in range(order.shape[0]):
        Zw[order[t], K0 + 2] = 1
    return Zw, K0


@njit(cache=True, inline="always")
def _n_equal(Z, column):
    """How many columns of ``Z`` equal ``column`` (:func:`n_equal`, without the copies)."""
    N, K = Z.shape
    count = 0
    for k in range(K):
        same = True
        for n in range(N):
            if Z[n, k] != column[n]:
                same = False
                break
        count += same
    return count


@njit(cache=True, inline="always")
def _row_counts(Z, i, j):
    """``(features of row i, features of row j that row i does not own)`` of binary ``Z``."""
    n_i, n_j_not_i = 0, 0
    for k in range(Z.shape[1]):
        n_i += Z[i, k] != 0
        n_j_not_i += Z[j, k] != 0 and Z[i, k] == 0
    return n_i, n_j_not_i


@njit(cache=True)
def _split_allocation(X, Z, i, j, a, order, forced, uniforms, sx2, sa2, beta,
                      inverse_temperature):
    """Split column ``a`` of binary ``Z``: the allocation of :func:`_scan` (``forced`` or
    drawn from ``uniforms``) and the counts of the pick probabilities, in one compiled call.

    Returns ``(Z_new, log_q, counts)``: ``Z_new`` is ``[Z without a, first, second]``
    (``int8``); ``counts`` holds the columns of ``Z`` equal to ``a``, row ``i``'s features
    in ``Z``, then in ``Z_new`` the columns equal to each half, row ``i``'s features and
    row ``j``'s that ``i`` does not own.
    """
    N = Z.shape[0]
    Zw, K0 = _working_matrix(Z, a, a, i, j, order)
    choices, log_q = _scan(X, Zw, K0, order, forced, uniforms, sx2, sa2, beta,
                           inverse_temperature)
    Z_new = np.zeros((N, K0 + 2), np.int8)
    Z_new[:, :K0] = Zw[:, :K0]
    Z_new[i, K0] = 1
    Z_new[j, K0 + 1] = 1
    for t in range(order.shape[0]):
        Z_new[order[t], K0] = _IN_FIRST[choices[t]]
        Z_new[order[t], K0 + 1] = _IN_SECOND[choices[t]]
    n_i = _row_counts(Z, i, j)[0]
    n_i_new, n_j_not_i_new = _row_counts(Z_new, i, j)
    counts = (_n_equal(Z, Z[:, a]), n_i, _n_equal(Z_new, Z_new[:, K0]),
              _n_equal(Z_new, Z_new[:, K0 + 1]), n_i_new, n_j_not_i_new)
    return Z_new, log_q, counts


@njit(cache=True)
def _merge_allocation(X, Z, i, j, a, b, order, sx2, sa2, beta, inverse_temperature):
    """Merge columns ``a`` and ``b`` of binary ``Z``: the log probability (:func:`_scan`)
    of the allocation that would recreate them and the counts of the pick probabilities.

    Returns ``(Z_new, log_q, counts)``: ``Z_new`` is ``[Z without a and b, a | b]``
    (``int8``); ``counts`` holds the columns of ``Z`` equal to ``a`` and to ``b``, row
    ``i``'s features and row ``j``'s that ``i`` does not own, then in ``Z_new`` the
    columns equal to the merged one and row ``i``'s features.
    """
    N = Z.shape[0]
    Zw, K0 = _working_matrix(Z, a, b, i, j, order)
    # the allocation that would recreate a and b: 0 in a only, 1 in b only, 2 in both
    forced = np.empty(order.shape[0], np.int64)
    for t in range(order.shape[0]):
        in_a, in_b = Z[order[t], a] != 0, Z[order[t], b] != 0
        forced[t] = 2 if in_a and in_b else (0 if in_a else 1)
    log_q = _scan(X, Zw, K0, order, forced, np.zeros(0), sx2, sa2, beta,
                  inverse_temperature)[1]
    Z_new = np.zeros((N, K0 + 1), np.int8)
    Z_new[:, :K0] = Zw[:, :K0]
    for n in range(N):
        Z_new[n, K0] = Z[n, a] | Z[n, b]
    n_i, n_j_not_i = _row_counts(Z, i, j)
    counts = (_n_equal(Z, Z[:, a]), _n_equal(Z, Z[:, b]), n_i, n_j_not_i,
              _n_equal(Z_new, Z_new[:, K0]), _row_counts(Z_new, i, j)[0])
    return Z_new, log_q, counts


_NO_CHOICES = np.zeros(0, np.int64)
_NO_UNIFORMS = np.zeros(0)


def _choice_arrays(forced, uniforms):
    """``(forced, uniforms)`` as :func:`_scan` takes them (an empty array for None)."""
    return (_NO_CHOICES if forced is None else np.ascontiguousarray(forced, dtype=np.int64),
            _NO_UNIFORMS if uniforms is None else np.ascontiguousarray(uniforms,
                                                                       dtype=np.float64))


def _run_allocation(target: LogJoint, Z_rest, i, j, order, *, forced=None, uniforms=None):
    """Sequential allocation of ``order`` to halves anchored by rows ``i`` and ``j``:
    :func:`_scan` on ``[Z_rest, first half, second half, waiting]`` (the rows of ``order``
    start in the waiting column). Returns ``(choices, log_q)``; the tests call it, the
    moves call :func:`_split_allocation` and :func:`_merge_allocation`."""
    N, K0 = Z_rest.shape
    Zw = np.zeros((N, K0 + 3), np.int8)
    Zw[:, :K0] = Z_rest
    Zw[i, K0] = 1
    Zw[j, K0 + 1] = 1
    Zw[order, K0 + 2] = 1
    return _scan(target.X, Zw, K0, np.ascontiguousarray(order, dtype=np.int64),
                 *_choice_arrays(forced, uniforms), target.sigma_x**2, target.sigma_a**2,
                 target.beta, target.inverse_temperature)


def _as_input_dtype(Z_new: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """The proposal in ``Z``'s dtype, as the Python version built it (``int8`` throughout
    the package)."""
    return Z_new if Z.dtype == np.int8 else Z_new.astype(Z.dtype)


def _sequential_split(target, Z, i, j, a, order, *, forced=None, uniforms=None):
    """Split column ``a`` (owned by rows ``i`` and ``j``), allocating the rows ``order``
    (``forced`` choices or drawn by inverting ``uniforms``, as :func:`_scan` takes them).

    Returns ``(proposal, log_q_allocation)``.
    """
    Z_new, log_q, (n_u, n_i, n_first, n_second, n_i_new, n_j_new) = _split_allocation(
        target.X, np.ascontiguousarray(Z), i, j, a,
        np.ascontiguousarray(order, dtype=np.int64), *_choice_arrays(forced, uniforms),
        target.sigma_x**2, target.sigma_a**2, target.beta, target.inverse_temperature)
    # picking a among row i's features, then the reverse: the merge's pair of halves
    log_forward = math.log(n_u / n_i) + log_q
    log_reverse = math.log(n_first / n_i_new) + math.log(n_second / n_j_new)
    return Proposal("split", _as_input_dtype(Z_new, Z), log_reverse - log_forward), log_q


def _sequential_merge(target, Z, i, j, a, b, order):
    """Merge column ``a`` (row ``i``'s, not ``j``'s) with ``b`` (``j``'s, not ``i``'s)."""
    Z_new, log_q, (n_a, n_b, n_i, n_j_not_i, n_u, n_i_new) = _merge_allocation(
        target.X, np.ascontiguousarray(Z), i, j, a, b,
        np.ascontiguousarray(order, dtype=np.int64),
        target.sigma_x**2, target.sigma_a**2, target.beta, target.inverse_temperature)
    # picking a among row i's features and b among j's that i lacks; the reverse: the split
    log_forward = math.log(n_a / n_i) + math.log(n_b / n_j_not_i)
    log_reverse = math.log(n_u / n_i_new) + log_q
    return Proposal("merge", _as_input_dtype(Z_new, Z), log_reverse - log_forward)


@njit(cache=True)
def _owning_rows(Z):
    """The rows of ``Z`` that own a feature, increasing (``np.flatnonzero(Z.any(axis=1))``)."""
    N, K = Z.shape
    rows = np.empty(N, np.int64)
    n_rows = 0
    for n in range(N):
        for k in range(K):
            if Z[n, k] != 0:
                rows[n_rows] = n
                n_rows += 1
                break
    return rows[:n_rows].copy()


def _other_owners(column: np.ndarray, i: int, j: int) -> np.ndarray:
    """The owners of ``column`` other than rows ``i`` and ``j`` (the tests enumerate the
    moves' paths with it; the moves call :func:`_owners_except`)."""
    owners = np.flatnonzero(column)
    return owners[(owners != i) & (owners != j)]


@njit(cache=True)
def _owners_except(Z, a, b, i, j):
    """The owners of column ``a`` or ``b`` of ``Z`` other than rows ``i`` and ``j``, increasing."""
    N = Z.shape[0]
    rows = np.empty(N, np.int64)
    n_rows = 0
    for n in range(N):
        if (Z[n, a] != 0 or Z[n, b] != 0) and n != i and n != j:
            rows[n_rows] = n
            n_rows += 1
    return rows[:n_rows].copy()


@njit(cache=True)
def _merge_candidates(Z, i, j):
    """The features of row ``j`` that row ``i`` does not own, increasing."""
    K = Z.shape[1]
    features = np.empty(K, np.int64)
    n_features = 0
    for k in range(K):
        if Z[j, k] != 0 and Z[i, k] == 0:
            features[n_features] = k
            n_features += 1
    return features[:n_features].copy()


def sequential_proposal(target: LogJoint, Z: np.ndarray, rng: np.random.Generator):
    """One sequentially allocated proposal from ``Z``, or None when none can be formed."""
    # The pair (i, j) is uniform over rows owning a feature; splits and merges keep
    # that set, so its probability cancels. So does 1 / (number of orders)!.
    Z = np.ascontiguousarray(Z)  # what the compiled helpers take (no copy in the package)
    owning = _owning_rows(Z)
    if owning.size < 2:
        return None
    i, j = (int(r) for r in rng.choice(owning, size=2, replace=False))
    features_i = np.flatnonzero(Z[i])
    a = int(features_i[rng.integers(features_i.size)])
    if Z[j, a]:
        order = rng.permutation(_owners_except(Z, a, a, i, j))
        proposal, _ = _sequential_split(target, Z, i, j, a, order,
                                        uniforms=rng.random(order.size))
        return proposal
    candidates = _merge_candidates(Z, i, j)
    if candidates.size == 0:
        return None
    b = int(candidates[rng.integers(candidates.size)])
    order = rng.permutation(_owners_except(Z, a, b, i, j))
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
