"""Random split-merge: merge two random features, or split one at random.

:func:`random_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, *,
beta=1.0) -> (Z, stats)``; :func:`random_proposal` is one proposal, for the chain
runner's move objects (:class:`ibp_lab.inference.chains.RandomSplitMerge`). The value-level
proposal probabilities are derived in :mod:`ibp_lab.inference.split_merge`.
"""

from __future__ import annotations

import math

import numpy as np

from ibp_lab._checks import validated
from ibp_lab.inference.split_merge._metropolis import (
    MOVE_CONSTRAINTS,
    SplitMergeMove,
    empty_stats,
    finish_stats,
    metropolis_hastings,
)
from ibp_lab.inference.split_merge._target import LogJoint, Proposal, n_equal

__all__ = ["random_split_merge", "random_proposal", "RandomSplitMerge"]

_LOG3 = math.log(3.0)
# Allocation options: 0 = first half only, 1 = second half only, 2 = both halves.
_IN_FIRST = np.array([1, 0, 1], np.int8)
_IN_SECOND = np.array([0, 1, 1], np.int8)


def _log_p_split(K: int) -> float:
    """Log probability that the random move tries a split when there are ``K`` features."""
    return 0.0 if K == 1 else -math.log(2.0)


def _log_pair(Z: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> float:
    """Log probability that a uniform unordered pair of columns of ``Z`` has values ``{c1, c2}``."""
    K = Z.shape[1]
    n1 = n_equal(Z, c1)
    n_pairs = n1 * (n1 - 1) / 2 if np.array_equal(c1, c2) else n1 * n_equal(Z, c2)
    return math.log(n_pairs) - math.log(K * (K - 1) / 2)


def _log_random_split(Z: np.ndarray, u: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> float:
    """Log probability that the random move splits a column of value ``u`` into ``{c1, c2}``."""
    K = Z.shape[1]
    # both orders of the halves give the same pair, unless the halves are equal
    n_orders = 1.0 if np.array_equal(c1, c2) else 2.0
    return (_log_p_split(K) + math.log(n_equal(Z, u) / K) + math.log(n_orders)
            - int(u.sum()) * _LOG3)


def _random_merge(Z: np.ndarray, a: int, b: int) -> Proposal:
    """Merge columns ``a`` and ``b`` (``a != b``) into their union."""
    ca, cb = Z[:, a], Z[:, b]
    u = ca | cb
    Z_new = np.column_stack([np.delete(Z, [a, b], axis=1), u])
    log_forward = -math.log(2.0) + _log_pair(Z, ca, cb)  # K >= 2: merge with probability 1/2
    log_reverse = _log_random_split(Z_new, u, ca, cb)
    return Proposal("merge", Z_new, log_reverse - log_forward)


def _random_split(Z: np.ndarray, k: int, labels: np.ndarray) -> Proposal | None:
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
    return Proposal("split", Z_new, log_reverse - log_forward)


def random_proposal(Z: np.ndarray, rng: np.random.Generator) -> Proposal | None:
    """One random proposal from ``Z``, or None when none can be formed."""
    K = Z.shape[1]
    if K == 0:
        return None
    if K >= 2 and rng.random() < 0.5:
        a, b = rng.choice(K, size=2, replace=False)
        return _random_merge(Z, int(a), int(b))
    k = int(rng.integers(K))
    labels = rng.integers(3, size=int(Z[:, k].sum()))
    return _random_split(Z, k, labels)


@validated(**MOVE_CONSTRAINTS)
def random_split_merge(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                       rng: np.random.Generator, n_proposals: int, *,
                       beta: float = 1.0, discount: float = 0.0,
                       inverse_temperature: float = 1.0) -> tuple[np.ndarray, dict]:
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
    discount : float, optional
        ``d`` in ``[0, 1)``: the target's prior is the three-parameter IBP's class law
        (the proposals are unchanged; only the acceptance ratio sees ``d``); default 0.

    inverse_temperature : float, optional
        ``b`` in ``[0, 1]``: the moves target the tempered posterior ``p(X | Z)^b P([Z])``
        (the likelihood's change in the acceptance ratio scaled by ``b``, as in
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
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> Z, stats = random_split_merge(X, [[1], [1], [1]], 1.3, 0.6, 1.2,
    ...                               np.random.default_rng(0), 100)
    >>> stats["proposed_splits"] + stats["proposed_merges"] + stats["void"]
    100
    >>> bool(stats["accepted_splits"] > 0 and stats["accepted_merges"] > 0)
    True
    """
    target = LogJoint(X, alpha, sigma_x, sigma_a, beta, discount=discount,
                      inverse_temperature=inverse_temperature)
    stats = empty_stats()
    Z, _ = metropolis_hastings(target, Z, rng, n_proposals, random_proposal, stats)
    return np.ascontiguousarray(Z), finish_stats(stats)


class RandomSplitMerge(SplitMergeMove):
    """Random splits and merges as a move: ``n_proposals`` (default 10) proposals of
    :func:`random_split_merge` per call, at the caller's inverse temperature."""

    name = "random_split_merge"

    def _proposer(self, target):
        return random_proposal
