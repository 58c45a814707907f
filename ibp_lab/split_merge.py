"""Split-merge Metropolis-Hastings moves on the columns of ``Z``.

The collapsed Gibbs sampler (:mod:`ibp_lab.gibbs`) changes one entry of ``Z``
at a time. To turn one feature into two, or two into one, it has to walk
through intermediate states in which many digits are explained badly, and on
real data it practically never does. A split-merge move proposes the whole
change at once and accepts it with a Metropolis-Hastings probability.

Public functions:

- :func:`random_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals,
  *, beta=1.0) -> (Z, stats)``: merge two random features into their union, or
  split a random feature by sending each owner to the first half, the second
  half or both, uniformly at random.
- :func:`sequential_split_merge` (same signature): pick two data points; split a
  feature they share, or merge a feature of one with a feature of the other;
  the other owners are allocated to the halves one at a time, each in
  proportion to how well it fits (sequential allocation, Jain & Neal 2004;
  for latent features, Meeds et al. 2007).
- :func:`singleton_update` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0)
  -> Z``: for each row, redraw its number of singleton features (features no
  other row owns) from the exact conditional. With a split-merge move it makes
  a complete sampler without any Gibbs flips, which is how the tests check the
  moves on their own.
- :func:`run_chains_with_moves`: independent chains of Gibbs sweeps, each
  followed by ``n_proposals`` moves (or none), at fixed hyperparameters, with
  traces of ``K+`` and the log joint for ArviZ and the CPU time of each chain.
- :func:`seconds_per_step`: measured CPU time of one Gibbs sweep and of one
  proposal of each move, to compare samplers at equal compute.
- :func:`log_ratio_parts` and :func:`summarize_run`: tables for the book (the
  median of each term of the acceptance ratio; R-hat, ESS, time and
  acceptances of a run of chains).

Every move, chain and timing takes the model's hyperparameters through the same
door as :func:`ibp_lab.gibbs.gibbs_sweep` (:func:`ibp_lab._hyper.check_hyperparameters`),
so the moves accept and refuse exactly the settings the sweep does; in particular
``sigma_x / sigma_a >= 1e-3``, where their rank-one downdates keep their digits.

Times are the process's CPU time (:func:`time.process_time`), not wall time:
on a shared machine, other programs slow the wall clock but hardly the CPU
time of a single-threaded computation, which is what "equal compute" means.

``stats`` (what both moves return) holds the counts ``proposed_splits``,
``accepted_splits``, ``proposed_merges``, ``accepted_merges`` and ``void``
(proposals that could not be formed: a random split with an empty half, no
feature to merge with, fewer than two rows owning features), and one entry per
formed proposal in the arrays ``kind`` (``"split"`` or ``"merge"``),
``delta_log_likelihood``, ``delta_log_prior``, ``log_proposal_ratio``,
``log_ratio`` (the sum of the three: the log Metropolis-Hastings ratio) and
``accepted``.

What the moves leave invariant
------------------------------
The target is the posterior over equivalence classes, ``pi([Z])`` proportional
to ``P([Z] | alpha, beta) p(X | Z, sigma_x, sigma_a)``, with the class
probability of :func:`ibp_lab.prior.log_prior` (including its ``1 / prod_h K_h!``
for identical columns). A class is a multiset of columns, so every
proposal probability below is written in terms of column *values*: "pick a
feature uniformly at random" picks the value ``u`` with probability
``n(u) / K``, where ``n(u)`` counts the columns equal to ``u``.

Each move is a collection of *paths*: a path from ``[Z]`` to ``[Z']`` is the
list of value-level choices that produced ``[Z']`` (which values were picked,
which owner went where). Every path has exactly one reverse path, from ``[Z']``
back to ``[Z]``, and the pairing is one-to-one: a split of value ``u`` into the
halves ``c1, c2`` is reversed by the merge of the pair ``{c1, c2}``, and
conversely. A path ``w`` is accepted with probability
``min(1, pi(Z') q(w') / (pi(Z) q(w)))``, ``w'`` its reverse, so that
``pi(Z) q(w) a(w) = min(pi(Z) q(w), pi(Z') q(w'))`` is the same for ``w`` and
``w'``. Summing over the paths between two classes gives detailed balance
for the classes themselves. (Several paths can connect the same two classes:
for example, a random merge of ``a`` with a column ``b`` that contains it
deletes ``a``, as would the merge of two copies of ``a``. Each path is balanced
with its own reverse, so nothing needs to be summed.) The tests compute the
whole transition matrix of each move on small state spaces and check detailed
balance to 1e-10.

The moves never change which rows own at least one feature, and a split or a
merge changes ``K+`` by exactly one, so on their own they are not irreducible:
combine them with :func:`ibp_lab.gibbs.gibbs_sweep` or :func:`singleton_update`.

Sequential allocation
---------------------
Pick an ordered pair of distinct rows ``(i, j)`` uniformly among the rows that
own at least one feature (the moves do not change that set, so this
probability cancels), then a feature ``a`` of row ``i`` uniformly.

- If row ``j`` owns ``a``: *split* ``a``. Row ``i`` goes to the first half only,
  row ``j`` to the second half only; the other owners of ``a``, in a uniformly
  random order, are allocated one at a time.
- Otherwise: pick a feature ``b`` uniformly among those that ``j`` owns and
  ``i`` does not (no move if there is none) and propose to *merge* ``a`` and
  ``b`` into their union. Its reverse is the split of the union in which ``i``
  and ``j`` anchor the halves and the other owners are allocated in a random
  order so as to recreate ``a`` and ``b``; the merge needs the probability
  that the allocation would have done so.

Allocation of row ``r``: the halves so far hold the anchors and the rows
already allocated; the rows still waiting keep the old feature, as a third
column that shrinks as they leave it, so that they stay explained while the
halves are built. Row ``r`` leaves that column and is scored on three
options (first only, second only, both): the prior conditional of each half
(``m / (beta + N - 1)`` for an entry switched on, ``m`` the other rows in
that half, as in the Gibbs sampler) times the predictive density of ``x_r``
given all other rows. The product of the chosen options' probabilities is
the proposal probability of the split. (Any weights would give a valid move,
as long as their probability is computed exactly; these follow the data.)

Cost of one sequential proposal with ``K`` features, ``N`` rows, ``D``
dimensions and ``m`` owners to allocate: ``O(N K D + K^3)`` to set up (``Z^T X``
and ``M^-1``, ``M = Z^T Z + (sigma_x / sigma_a)^2 I``), then ``O(K^2 + K D)`` per
allocated row, because taking a row out and putting it back are rank-one
(Sherman-Morrison) updates of ``M^-1`` and of the posterior mean of the
features, as in the Gibbs sweep; ``O(N K D + K^3)`` again for the log joint of
the proposed state. On the book's 300 digits this is well under a millisecond.
The allocation runs in compiled code (numba).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import xarray as xr
from numba import njit

from ibp_lab._checks import (
    check_count,
    check_data_matrix,
    check_positive,
    check_real_array,
    check_rng,
)
from ibp_lab._hyper import check_feature_matrix, check_hyperparameters
from ibp_lab.gibbs import MAX_SWEEPS, _sample_new_dishes, gibbs_sweep

__all__ = [
    "random_split_merge",
    "sequential_split_merge",
    "singleton_update",
    "MoveChains",
    "run_chains_with_moves",
    "seconds_per_step",
    "log_ratio_parts",
    "summarize_run",
]

_LOG3 = math.log(3.0)
# Allocation options: 0 = first half only, 1 = second half only, 2 = both halves.
_IN_FIRST = np.array([1, 0, 1], np.int8)
_IN_SECOND = np.array([0, 1, 1], np.int8)
_MOVES = ("random", "sequential")
#: Most proposals one call makes (each keeps six numbers in ``stats``).
MAX_PROPOSALS = 10**7
# seconds_per_step measures costs, it does not sample: a few thousand steps are plenty.
_MAX_TIMING_ROUNDS = 1000
_MAX_TIMED_STEPS = 100_000


# --------------------------------------------------------------------------------------
# the target
# --------------------------------------------------------------------------------------


class _LogJoint:
    """``(log p(X | Z), log P([Z]))`` for one data set and fixed hyperparameters.

    Calls :func:`_log_joint_kernel`: the formulas of
    :func:`ibp_lab.linear_gaussian.collapsed_loglik` and
    :func:`ibp_lab.prior.log_prior`, compiled, without argument checks, and
    with ``Z^T Z`` and ``Z^T X`` accumulated over the ones of ``Z`` only (the
    tests check both against the public functions).
    """

    def __init__(self, X, alpha, sigma_x, sigma_a, beta):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.alpha, self.sigma_x, self.sigma_a, self.beta = alpha, sigma_x, sigma_a, beta
        self.n_rows, self.n_dims = X.shape
        self._constants = (
            float(np.sum(X * X)), sigma_x, sigma_a, math.log(alpha) + math.log(beta),
            alpha * float(np.sum(beta / (beta + np.arange(self.n_rows)))), beta,
        )

    def __call__(self, Z: np.ndarray) -> tuple[float, float]:
        return _log_joint_kernel(self.X, np.ascontiguousarray(Z, dtype=np.int8), *self._constants)


@njit(cache=True)
def _log_joint_kernel(X, Z, sum_sq, sigma_x, sigma_a, log_alpha_beta, prior_rate, beta):
    """``(log p(X | Z), log P([Z]))`` for ``Z`` without empty columns."""
    N, D = X.shape
    K = Z.shape[1]
    # prior: K+ log(alpha beta) - alpha H - sum_h log K_h! + sum_k log B(m_k, N - m_k + beta)
    log_prior = K * log_alpha_beta - prior_rate
    group_size = np.zeros(K, np.int64)
    for k in range(K):
        m = 0
        for n in range(N):
            m += Z[n, k]
        log_prior += math.lgamma(m) + math.lgamma(N - m + beta) - math.lgamma(N + beta)
        owner = k  # the first column equal to column k
        for first in range(k):
            if group_size[first] > 0:
                same = True
                for n in range(N):
                    if Z[n, k] != Z[n, first]:
                        same = False
                        break
                if same:
                    owner = first
                    break
        group_size[owner] += 1
    for k in range(K):
        log_prior -= math.lgamma(group_size[k] + 1.0)
    # likelihood, as in linear_gaussian._loglik_from_stats
    ratio = (sigma_x / sigma_a) ** 2
    M = np.zeros((K, K))
    ZtX = np.zeros((K, D))
    owned = np.zeros(K, np.int64)
    for n in range(N):
        n_owned = 0
        for k in range(K):
            if Z[n, k] != 0:
                owned[n_owned] = k
                n_owned += 1
        for p in range(n_owned):
            a = owned[p]
            for q in range(n_owned):
                M[a, owned[q]] += 1.0
            for d in range(D):
                ZtX[a, d] += X[n, d]
    for a in range(K):
        M[a, a] += ratio
    # Cholesky M = L L^T in place (lower triangle), then W = L^-1 Z^T X
    log_det = 0.0
    for a in range(K):
        for b in range(a + 1):
            acc = M[a, b]
            for p in range(b):
                acc -= M[a, p] * M[b, p]
            if a == b:
                M[a, a] = math.sqrt(acc)
                log_det += 2.0 * math.log(M[a, a])
            else:
                M[a, b] = acc / M[b, b]
    explained = 0.0
    for d in range(D):
        for a in range(K):
            acc = ZtX[a, d]
            for p in range(a):
                acc -= M[a, p] * ZtX[p, d]
            ZtX[a, d] = acc / M[a, a]
            explained += ZtX[a, d] * ZtX[a, d]
    log_lik = (-0.5 * N * D * math.log(2.0 * math.pi) - (N - K) * D * math.log(sigma_x)
               - K * D * math.log(sigma_a) - 0.5 * D * log_det
               - (sum_sq - explained) / (2.0 * sigma_x * sigma_x))
    return log_lik, log_prior


def _n_equal(Z: np.ndarray, column: np.ndarray) -> int:
    """How many columns of ``Z`` equal ``column``."""
    return int(np.count_nonzero((Z == column[:, None]).all(axis=0)))


@dataclass
class _Proposal:
    """A formed proposal: the new state and the pieces of its log MH ratio."""

    kind: str
    Z: np.ndarray
    log_proposal_ratio: float  # log q(reverse path) - log q(path)


# --------------------------------------------------------------------------------------
# random split-merge
# --------------------------------------------------------------------------------------


def _log_p_split(K: int) -> float:
    """Log probability that the random move tries a split when there are ``K`` features."""
    return 0.0 if K == 1 else -math.log(2.0)


def _log_pair(Z: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> float:
    """Log probability that a uniform unordered pair of columns of ``Z`` has values ``{c1, c2}``."""
    K = Z.shape[1]
    n1 = _n_equal(Z, c1)
    n_pairs = n1 * (n1 - 1) / 2 if np.array_equal(c1, c2) else n1 * _n_equal(Z, c2)
    return math.log(n_pairs) - math.log(K * (K - 1) / 2)


def _log_random_split(Z: np.ndarray, u: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> float:
    """Log probability that the random move splits a column of value ``u`` into ``{c1, c2}``."""
    K = Z.shape[1]
    # both orders of the halves give the same pair, unless the halves are equal
    n_orders = 1.0 if np.array_equal(c1, c2) else 2.0
    return (_log_p_split(K) + math.log(_n_equal(Z, u) / K) + math.log(n_orders)
            - int(u.sum()) * _LOG3)


def _random_merge(Z: np.ndarray, a: int, b: int) -> _Proposal:
    """Merge columns ``a`` and ``b`` (``a != b``) into their union."""
    ca, cb = Z[:, a], Z[:, b]
    u = ca | cb
    Z_new = np.column_stack([np.delete(Z, [a, b], axis=1), u])
    log_forward = -math.log(2.0) + _log_pair(Z, ca, cb)  # K >= 2: merge with probability 1/2
    log_reverse = _log_random_split(Z_new, u, ca, cb)
    return _Proposal("merge", Z_new, log_reverse - log_forward)


def _random_split(Z: np.ndarray, k: int, labels: np.ndarray) -> _Proposal | None:
    """Split column ``k``; ``labels`` sends its owners (in row order) to 0 first, 1 second, 2 both.

    Returns None when a half would be empty (the move then stays put).
    """
    u = Z[:, k]
    owners = np.flatnonzero(u)
    c1 = np.zeros_like(u)
    c2 = np.zeros_like(u)
    c1[owners] = _IN_FIRST[labels]
    c2[owners] = _IN_SECOND[labels]
    if not c1.any() or not c2.any():
        return None
    Z_new = np.column_stack([np.delete(Z, k, axis=1), c1, c2])
    log_forward = _log_random_split(Z, u, c1, c2)
    log_reverse = -math.log(2.0) + _log_pair(Z_new, c1, c2)  # K + 1 >= 2 features
    return _Proposal("split", Z_new, log_reverse - log_forward)


def _random_proposal(Z: np.ndarray, rng: np.random.Generator) -> _Proposal | None:
    K = Z.shape[1]
    if K == 0:
        return None
    if K >= 2 and rng.random() < 0.5:
        a, b = rng.choice(K, size=2, replace=False)
        return _random_merge(Z, int(a), int(b))
    k = int(rng.integers(K))
    labels = rng.integers(3, size=int(Z[:, k].sum()))
    return _random_split(Z, k, labels)


# --------------------------------------------------------------------------------------
# sequential allocation
# --------------------------------------------------------------------------------------


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


def _run_allocation(target: _LogJoint, Z_rest, i, j, order, *, forced=None, uniforms=None):
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
    return math.log(_n_equal(Z, ca) / n_i) + math.log(_n_equal(Z, cb) / n_j_not_i)


def _log_pick_split(Z: np.ndarray, i: int, u: np.ndarray) -> float:
    """Log probability of picking value ``u`` among row i's features."""
    return math.log(_n_equal(Z, u) / int(Z[i].sum()))


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
    return _Proposal("split", Z_new, log_reverse - log_forward), log_q


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
    return _Proposal("merge", Z_new, log_reverse - log_forward)


def _other_owners(column: np.ndarray, i: int, j: int) -> np.ndarray:
    owners = np.flatnonzero(column)
    return owners[(owners != i) & (owners != j)]


def _sequential_proposal(target: _LogJoint, Z: np.ndarray, rng: np.random.Generator):
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


# --------------------------------------------------------------------------------------
# Metropolis-Hastings driver
# --------------------------------------------------------------------------------------


def _empty_stats() -> dict:
    return {
        "proposed_splits": 0, "accepted_splits": 0, "proposed_merges": 0,
        "accepted_merges": 0, "void": 0,
        "kind": [], "delta_log_likelihood": [], "delta_log_prior": [],
        "log_proposal_ratio": [], "log_ratio": [], "accepted": [],
    }


_ARRAY_FIELDS = ("kind", "delta_log_likelihood", "delta_log_prior", "log_proposal_ratio",
                 "log_ratio", "accepted")


def _finish_stats(stats: dict) -> dict:
    for name in _ARRAY_FIELDS:
        dtype = {"kind": "<U5", "accepted": bool}.get(name, np.float64)
        stats[name] = np.asarray(stats[name], dtype=dtype)
    return stats


def _combine_stats(all_stats) -> dict:
    """Add the counts and concatenate the per-proposal arrays of several ``stats``."""
    out = _empty_stats()
    for stats in all_stats:
        for name, value in stats.items():
            if name in _ARRAY_FIELDS:
                out[name].extend(value.tolist())
            else:
                out[name] += value
    return _finish_stats(out)


def _metropolis_hastings(target, Z, rng, n_proposals, propose, stats, current=None):
    """Run ``n_proposals`` proposals from ``propose(Z, rng)``; returns ``(Z, current)``."""
    if current is None:
        current = target(Z)
    for _ in range(n_proposals):
        proposal = propose(Z, rng)
        if proposal is None:
            stats["void"] += 1
            continue
        new = target(proposal.Z)
        d_lik, d_prior = new[0] - current[0], new[1] - current[1]
        log_ratio = d_lik + d_prior + proposal.log_proposal_ratio
        accepted = math.log(rng.random()) < log_ratio
        stats[f"proposed_{proposal.kind}s"] += 1
        stats[f"accepted_{proposal.kind}s"] += int(accepted)
        for name, value in zip(_ARRAY_FIELDS, (proposal.kind, d_lik, d_prior,
                                               proposal.log_proposal_ratio, log_ratio,
                                               accepted)):
            stats[name].append(value)
        if accepted:
            Z, current = proposal.Z, new
    return Z, current


def _check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, beta):
    X = check_data_matrix("X", X)
    Z = check_feature_matrix("Z", Z, n_rows=X.shape[0])
    # the same door as gibbs_sweep: moves and sweeps accept exactly the same settings
    hyper = check_hyperparameters(X, alpha, sigma_x, sigma_a, beta)
    rng = check_rng(rng)
    n_proposals = check_count("n_proposals", n_proposals, maximum=MAX_PROPOSALS)
    return X, Z, _LogJoint(X, *hyper), rng, n_proposals


def random_split_merge(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                       rng: np.random.Generator, n_proposals: int, *,
                       beta: float = 1.0) -> tuple[np.ndarray, dict]:
    """Metropolis-Hastings with random splits and merges of features.

    Each proposal: with ``K >= 2`` features, a merge or a split with
    probability 1/2 each (``K = 1``: always a split). A merge picks two
    features uniformly and replaces them by their union (a row owning either
    owns the merged feature). A split picks a feature uniformly and sends each
    owner to the first half, the second half or both, with probability 1/3
    each; a split with an empty half is not formed (counted as ``void``). The
    acceptance ratio uses the class probabilities and the value-level
    probabilities of the proposal and of its reverse (see the module
    docstring), e.g. a split of value ``u`` into distinct halves has
    probability ``P(split) * n(u) / K * 2 / 3^m(u)``.

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
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> Z, stats = random_split_merge(X, [[1], [1], [1]], 1.3, 0.6, 1.2,
    ...                               np.random.default_rng(0), 100)
    >>> stats["proposed_splits"] + stats["proposed_merges"] + stats["void"]
    100
    >>> bool(stats["accepted_splits"] > 0 and stats["accepted_merges"] > 0)
    True
    """
    X, Z, target, rng, n_proposals = _check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng,
                                                        n_proposals, beta)
    stats = _empty_stats()
    Z, _ = _metropolis_hastings(target, Z, rng, n_proposals, _random_proposal, stats)
    return np.ascontiguousarray(Z), _finish_stats(stats)


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
    X, Z, target, rng, n_proposals = _check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng,
                                                        n_proposals, beta)
    stats = _empty_stats()
    Z, _ = _metropolis_hastings(target, Z, rng, n_proposals,
                                lambda Z, rng: _sequential_proposal(target, Z, rng), stats)
    return np.ascontiguousarray(Z), _finish_stats(stats)


# --------------------------------------------------------------------------------------
# singletons only
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _singleton_count(X, Z, i, uniform, sx2, sa2, rate, buf):
    """Draw row ``i``'s number of singletons given the other rows and its shared features."""
    N, D = X.shape
    K = Z.shape[1]
    shared = np.zeros(K, np.int64)
    n_shared = 0
    for k in range(K):
        for n in range(N):
            if n != i and Z[n, k] != 0:
                shared[n_shared] = k
                n_shared += 1
                break
    # posterior of the shared features given the other rows: mean Abar, covariance sx2 P
    M = np.zeros((n_shared, n_shared))
    ZtX = np.zeros((n_shared, D))
    for n in range(N):
        if n == i:
            continue
        for p in range(n_shared):
            if Z[n, shared[p]] != 0:
                for q in range(n_shared):
                    M[p, q] += Z[n, shared[q]]
                for d in range(D):
                    ZtX[p, d] += X[n, d]
    for p in range(n_shared):
        M[p, p] += sx2 / sa2
    P = np.linalg.inv(M)
    Abar = P @ ZtX
    q = 0.0
    rr = 0.0
    for p in range(n_shared):
        if Z[i, shared[p]] != 0:
            for t in range(n_shared):
                if Z[i, shared[t]] != 0:
                    q += P[p, t]
    for d in range(D):
        e = X[i, d]
        for p in range(n_shared):
            if Z[i, shared[p]] != 0:
                e -= Abar[p, d]
        rr += e * e
    n_new, buf = _sample_new_dishes(uniform, rate, sx2 * (1.0 + q), sa2, rr, D, buf)
    return n_new, buf


def _singleton_step(target: _LogJoint, Z: np.ndarray, i: int, rng, buf):
    """Resample row ``i``'s singletons: keep the first ones in place, drop or append the rest."""
    N = Z.shape[0]
    n_new, buf = _singleton_count(target.X, Z, i, rng.random(), target.sigma_x**2,
                                  target.sigma_a**2,
                                  target.alpha * target.beta / (target.beta + (N - 1)), buf)
    singles = np.flatnonzero(Z[i] & (Z.sum(axis=0) == 1))
    if n_new == singles.size:
        return Z, buf
    if n_new < singles.size:
        return np.ascontiguousarray(np.delete(Z, singles[n_new:], axis=1)), buf
    extra = np.zeros((N, n_new - singles.size), np.int8)
    extra[i] = 1
    return np.ascontiguousarray(np.hstack([Z, extra])), buf


def singleton_update(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                     rng: np.random.Generator, *, beta: float = 1.0) -> np.ndarray:
    """For each row in turn, redraw its number of singleton features exactly.

    A singleton of row ``i`` is a feature no other row owns. Given the other
    rows and row ``i``'s shared features, the number of singletons has prior
    Poisson(``alpha beta / (beta + N - 1)``) and each adds ``sigma_a^2`` to the
    predictive variance of ``x_i``; this is step 3 of the Gibbs sweep
    (:mod:`ibp_lab.gibbs`, whose compiled draw of the count it reuses) without
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
    X, Z, target, rng, _ = _check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng, 0, beta)
    buf = np.empty(64)
    for i in range(X.shape[0]):
        Z, buf = _singleton_step(target, Z, i, rng, buf)
    return Z


# --------------------------------------------------------------------------------------
# chains with moves
# --------------------------------------------------------------------------------------


@dataclass
class MoveChains:
    """What :func:`run_chains_with_moves` returns.

    Attributes
    ----------
    trace : xarray.Dataset
        ``k_plus``, ``log_joint`` (``log p(X | Z) + log P([Z])``) and
        ``accepted_moves`` (proposals accepted in the iteration) over
        ``(chain, draw)``, one draw per iteration; ready for ``az.rhat`` and
        ``az.ess``.
    stats : list of dict
        Per chain, the move's ``stats`` summed over the iterations (empty
        counts when no move was run).
    states : list of numpy.ndarray
        The final ``Z`` of each chain.
    seconds : numpy.ndarray
        CPU time of each chain (:func:`time.process_time`).
    """

    trace: xr.Dataset
    stats: list
    states: list
    seconds: np.ndarray


def _one_chain(X, Z, n_iterations, rng, hyper, beta, move, n_proposals):
    target = _LogJoint(X, *hyper, beta)
    Z = np.ascontiguousarray(Z)
    k_plus = np.zeros(n_iterations, np.int64)
    log_joint = np.zeros(n_iterations)
    accepted = np.zeros(n_iterations, np.int64)
    stats = _empty_stats()
    propose = None
    if move == "random":
        propose = _random_proposal
    elif move == "sequential":
        propose = lambda Z, rng: _sequential_proposal(target, Z, rng)  # noqa: E731
    start = time.process_time()
    for t in range(n_iterations):
        Z = gibbs_sweep(X, Z, *hyper, rng, beta=beta)
        current = target(Z)
        if propose is not None and n_proposals:
            before = stats["accepted_splits"] + stats["accepted_merges"]
            Z, current = _metropolis_hastings(target, Z, rng, n_proposals, propose, stats,
                                              current)
            accepted[t] = stats["accepted_splits"] + stats["accepted_merges"] - before
        k_plus[t] = Z.shape[1]
        log_joint[t] = current[0] + current[1]
    seconds = time.process_time() - start
    return Z, (k_plus, log_joint, accepted), _finish_stats(stats), seconds


def run_chains_with_moves(X, Z0, n_iterations: int, rng: np.random.Generator, *,
                          alpha: float, sigma_x: float, sigma_a: float, beta: float = 1.0,
                          move: str | None = "sequential", n_proposals: int = 10) -> MoveChains:
    """Independent chains of Gibbs sweeps, each sweep followed by split-merge proposals.

    Hyperparameters stay fixed, so that the comparison is about the sampler of
    ``Z`` alone.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z0 : list of array_like
        One starting matrix per chain.
    n_iterations : int
        Iterations per chain, >= 1; one iteration is one
        :func:`ibp_lab.gibbs.gibbs_sweep` followed by ``n_proposals`` proposals.
    rng : numpy.random.Generator
        Parent generator; chain ``c`` uses ``rng.spawn(len(Z0))[c]``.
    alpha, sigma_x, sigma_a, beta : float
        Hyperparameters, > 0.
    move : {"sequential", "random", None}, optional
        The move; ``None`` runs Gibbs sweeps only.
    n_proposals : int, optional
        Proposals per iteration, >= 0.

    Returns
    -------
    MoveChains

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(8, 3))
    >>> out = run_chains_with_moves(X, [np.ones((8, 1)), np.eye(8)], 5,
    ...                             np.random.default_rng(1), alpha=1.0, sigma_x=0.5,
    ...                             sigma_a=1.0, n_proposals=3)
    >>> dict(out.trace.sizes), sorted(out.trace.data_vars)
    ({'chain': 2, 'draw': 5}, ['accepted_moves', 'k_plus', 'log_joint'])
    """
    X = check_data_matrix("X", X)
    if not isinstance(Z0, (list, tuple)) or len(Z0) == 0:
        raise TypeError("Z0 must be a non-empty list of starting matrices, one per chain")
    starts = [check_feature_matrix(f"Z0[{c}]", Z, n_rows=X.shape[0]) for c, Z in enumerate(Z0)]
    n_iterations = check_count("n_iterations", n_iterations, minimum=1, maximum=MAX_SWEEPS)
    check_rng(rng)
    *hyper, beta = check_hyperparameters(X, alpha, sigma_x, sigma_a, beta)
    if move is not None and (not isinstance(move, str) or move not in _MOVES):
        raise ValueError(f"move must be 'sequential', 'random' or None, got {move!r}")
    n_proposals = check_count("n_proposals", n_proposals)
    if n_iterations * n_proposals > MAX_PROPOSALS:
        raise ValueError(
            f"n_iterations * n_proposals must be <= {MAX_PROPOSALS:g} proposals per chain, "
            f"got {n_iterations} * {n_proposals}"
        )
    results = [_one_chain(X, Z, n_iterations, child, hyper, beta, move, n_proposals)
               for child, Z in zip(rng.spawn(len(starts)), starts)]
    trace = xr.Dataset(
        {name: (("chain", "draw"), np.stack([r[1][v] for r in results]))
         for v, name in enumerate(["k_plus", "log_joint", "accepted_moves"])},
        coords={"chain": np.arange(len(starts)), "draw": np.arange(n_iterations)},
        attrs={"move": str(move), "n_proposals": n_proposals},
    )
    return MoveChains(trace, [r[2] for r in results], [r[0] for r in results],
                      np.array([r[3] for r in results]))


def seconds_per_step(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                     rng: np.random.Generator, *, beta: float = 1.0, n_rounds: int = 5,
                     n_sweeps: int = 10, n_proposals: int = 40) -> dict:
    """Measured CPU time of one Gibbs sweep and of one proposal of each move, from ``Z``.

    Every sweep starts from ``Z`` and each move runs its proposals from ``Z``
    (on real data a proposal is rarely accepted), so the three costs refer to
    the same state. The three are timed in turn, ``n_rounds`` times, and the
    median of the rounds is returned, so that a passing change in the
    machine's load affects all three alike.

    Returns
    -------
    dict
        ``{"gibbs_sweep": s, "random": s, "sequential": s}`` in CPU seconds.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> costs = seconds_per_step(X, np.ones((10, 2)), 1.0, 0.5, 1.0,
    ...                          np.random.default_rng(1), n_rounds=1, n_sweeps=2,
    ...                          n_proposals=2)
    >>> sorted(costs)
    ['gibbs_sweep', 'random', 'sequential']
    """
    X = check_data_matrix("X", X)
    Z = check_feature_matrix("Z", Z, n_rows=X.shape[0])
    alpha, sigma_x, sigma_a, beta = check_hyperparameters(X, alpha, sigma_x, sigma_a, beta)
    rng = check_rng(rng)
    n_rounds = check_count("n_rounds", n_rounds, minimum=1, maximum=_MAX_TIMING_ROUNDS)
    n_sweeps = check_count("n_sweeps", n_sweeps, minimum=1, maximum=_MAX_TIMED_STEPS)
    n_proposals = check_count("n_proposals", n_proposals, minimum=1, maximum=_MAX_TIMED_STEPS)
    moves = {"random": random_split_merge, "sequential": sequential_split_merge}
    for move in moves.values():  # compile outside the timing
        move(X, Z, alpha, sigma_x, sigma_a, rng, 1, beta=beta)
    rounds = {"gibbs_sweep": [], "random": [], "sequential": []}
    for _ in range(n_rounds):
        start = time.process_time()
        for _ in range(n_sweeps):
            gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng, beta=beta)
        rounds["gibbs_sweep"].append((time.process_time() - start) / n_sweeps)
        for name, move in moves.items():
            start = time.process_time()
            move(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, beta=beta)
            rounds[name].append((time.process_time() - start) / n_proposals)
    return {name: float(np.median(values)) for name, values in rounds.items()}


def log_ratio_parts(stats: dict):
    """Median of each term of the log acceptance ratio, for splits and for merges.

    Parameters
    ----------
    stats : dict
        What :func:`random_split_merge` or :func:`sequential_split_merge` returns.

    Returns
    -------
    pandas.DataFrame
        Rows: log-likelihood change, log prior change, log proposal ratio
        (``log q(reverse) - log q(forward)``) and the log acceptance ratio (their
        sum); columns ``split`` and ``merge`` (NaN if there was none).

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> _, stats = random_split_merge(X, np.ones((6, 2)), 1.0, 0.5, 1.0,
    ...                               np.random.default_rng(1), 40)
    >>> list(log_ratio_parts(stats).columns)
    ['split', 'merge']
    """
    import pandas as pd

    parts = ["delta_log_likelihood", "delta_log_prior", "log_proposal_ratio", "log_ratio"]
    if not isinstance(stats, dict) or any(name not in stats for name in ["kind", *parts]):
        raise TypeError("stats must be the dict returned by random_split_merge or "
                        "sequential_split_merge")
    kinds = np.asarray(stats["kind"])
    if kinds.ndim != 1 or kinds.dtype.kind not in "UO" or not np.isin(kinds, ["split", "merge"]).all():
        raise ValueError("stats['kind'] must be a 1-D array of 'split' and 'merge'")
    values = {}
    for p in parts:
        values[p] = check_real_array(f"stats[{p!r}]", stats[p])
        if values[p].shape != kinds.shape:
            raise ValueError(f"stats[{p!r}] must have one entry per proposal ({kinds.size}), "
                             f"got shape {values[p].shape}")
        if np.isnan(values[p]).any():
            raise ValueError(f"stats[{p!r}] must not contain NaN")
    table = {}
    for kind in ("split", "merge"):
        chosen = kinds == kind
        table[kind] = [float(np.median(values[p][chosen])) if chosen.any()
                       else float("nan") for p in parts]
    return pd.DataFrame(table, index=["log-likelihood change", "log prior change",
                                      "log q(reverse) - log q(forward)",
                                      "log acceptance ratio"])


def summarize_run(run: MoveChains, *, warmup_fraction: float = 0.5) -> dict:
    """Cost, acceptances and label-free diagnostics of a :class:`MoveChains` run.

    R-hat (rank-normalised, split) and bulk ESS of ``K+`` and of the log joint
    come from ArviZ over the draws after the first ``warmup_fraction`` of each
    chain.

    Returns
    -------
    dict
        ``CPU seconds`` (all chains), ``iterations`` (per chain), ``accepted moves``
        (all chains, warm-up included), ``accepted after warm-up``,
        ``R-hat K+``, ``R-hat log joint``, ``ESS K+``, ``ESS log joint`` and
        ``log joint per chain`` (the mean of each chain after warm-up, as text).
        R-hat and ESS of a trace that never changes are NaN (nothing to diagnose).

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> run = run_chains_with_moves(X, [np.ones((6, 1))] * 2, 20, np.random.default_rng(1),
    ...                             alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_proposals=2)
    >>> summary = summarize_run(run)
    >>> summary["iterations"], bool(summary["R-hat K+"] > 0)
    (20, True)
    """
    import warnings

    with warnings.catch_warnings():  # ArviZ 0.23 announces its 1.0 API at import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    if not isinstance(run, MoveChains):
        raise TypeError(f"run must be a MoveChains (from run_chains_with_moves), "
                        f"got {type(run).__name__}")
    warmup_fraction = check_positive("warmup_fraction", warmup_fraction, allow_zero=True)
    if not warmup_fraction < 1.0:
        raise ValueError(f"warmup_fraction must be in [0, 1), got {warmup_fraction}")
    n_draws = run.trace.sizes["draw"]
    kept = run.trace.isel(draw=slice(int(warmup_fraction * n_draws), None))
    if kept.sizes["draw"] < 4:
        # R-hat splits each chain in two halves; fewer draws give NaN, not a diagnosis
        raise ValueError(
            f"need at least 4 draws per chain after warm-up for R-hat and ESS, got "
            f"{kept.sizes['draw']} (of {n_draws}, warmup_fraction = {warmup_fraction})"
        )
    values = {name: kept[name].values.astype(np.float64) for name in ("k_plus", "log_joint")}
    return {
        "CPU seconds": float(run.seconds.sum()),
        "iterations": int(n_draws),
        "accepted moves": int(run.trace.accepted_moves.sum()),
        "accepted after warm-up": int(kept.accepted_moves.sum()),
        "R-hat K+": float(az.rhat(values["k_plus"])),
        "R-hat log joint": float(az.rhat(values["log_joint"])),
        "ESS K+": float(az.ess(values["k_plus"])),
        "ESS log joint": float(az.ess(values["log_joint"])),
        "log joint per chain": ", ".join(f"{v:.0f}" for v in values["log_joint"].mean(axis=1)),
    }
