"""The target of the split-merge moves: the log joint of a class ``[Z]``.

``pi([Z])`` is proportional to ``P([Z] | alpha, beta) p(X | Z, sigma_x, sigma_a)``
(see :mod:`ibp_lab.split_merge`). :class:`LogJoint` evaluates its two terms for
one data set and fixed hyperparameters; :class:`Proposal` is what a move
proposes; :func:`n_equal` counts columns by value, which is how the moves'
proposal probabilities are written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ibp_lab._hyper import harmonic


class LogJoint:
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
            alpha * harmonic(self.n_rows, beta), beta,
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


def n_equal(Z: np.ndarray, column: np.ndarray) -> int:
    """How many columns of ``Z`` equal ``column``."""
    return int(np.count_nonzero((Z == column[:, None]).all(axis=0)))


@dataclass
class Proposal:
    """A formed proposal: the new state and the pieces of its log MH ratio."""

    kind: str
    Z: np.ndarray
    log_proposal_ratio: float  # log q(reverse path) - log q(path)
