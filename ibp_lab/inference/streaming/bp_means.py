"""BP-means in one pass: the zero-noise limit of streaming R-IBP inference.

Broderick, Kulis & Jordan (2013) derive BP-means as the small-variance limit of MAP
inference in the beta-Bernoulli linear-Gaussian model with ``alpha = exp(-gamma^2 /
(2 sigma^2))``: minimise ``|X - Z A|_F^2 + gamma^2 K`` by (i) switching features on or off
for a data point whenever that lowers its squared error, (ii) adding the point's residual
as a new feature when its squared norm exceeds ``gamma^2``, and (iii) moving features to
fit the points that own them. Schaeffer et al. (2022, Proposition 4.1) show that one pass
of the Recursive IBP becomes BP-means in that limit.

:func:`bp_means_one_pass` makes those moves one point at a time, in the same order and
with the same bookkeeping as :class:`ibp_lab.inference.streaming.RecursiveIBP`, but with no
probabilities at all. Taking ``sigma_x -> 0`` in the R-IBP updates (derived in chapter 12):

- the filtering prior of a feature owned by ``m_k`` of the first ``n - 1`` points becomes
  ``m_k / n`` (``beta = 1``); the point's ownership starts there;
- ``logit b_l`` is ``(|r_l|^2 - |r_l - A_l|^2) / (2 sigma^2)`` plus terms of order one, so
  ``b_l`` becomes 1 exactly when the feature lowers the squared error: move (i);
- a feature owned by the point moves from its previous value ``A0_l`` towards the residual:
  ``A_l = A0_l + eta (r_l - A0_l)`` with ``eta = v / (1 + v)`` times the ossify weight
  ``1 / (m_l + 1)``, where ``v`` is the feature's posterior variance in units of
  ``sigma^2``. ``v`` is 1 after the first owner and then ``v <- v / (1 + v)`` (a running
  mean: ``eta = 1 / (m_l + 1)``) without ossify, or ``v <- v - v^2 / ((m_l + 1)(1 + v))``
  with it: move (iii);
- the birth proposal's objective gain is ``(|r|^2 - gamma^2) / (2 sigma^2)`` plus lower
  order terms: move (ii), with the new feature equal to the residual.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibp_lab._checks import check_count, check_data_matrix, check_flag, check_positive

__all__ = ["bp_means_one_pass"]


def bp_means_one_pass(
    X, gamma: float, *, n_steps: int = 3, ossify: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """One pass of BP-means over the rows of ``X``, in order.

    For each point: start its ownership of every feature at the feature's usage frequency
    ``m_k / n``; then ``n_steps`` times, switch each feature on or off (in order of
    creation) to lower the point's squared error, and move each owned feature towards
    the residual it is asked to explain (weights in the module docstring); finally add the
    residual as a new feature if its squared norm exceeds ``gamma^2``.

    Parameters
    ----------
    X : array_like
        ``(n, D)`` data.
    gamma : float
        Penalty per feature is ``gamma^2``, > 0.
    n_steps : int, optional
        Assignment/update rounds per point, >= 1.
    ossify : bool, optional
        Use the R-IBP's ossified averaging weights (see the module docstring); ``False``
        keeps each feature the running mean of the residuals it explained.

    Returns
    -------
    Z : numpy.ndarray
        ``(n, K)`` ``int8`` assignments at the end of each point's turn.
    A : numpy.ndarray
        ``(K, D)`` features after the pass, in order of creation.

    Examples
    --------
    Two orthogonal features and their sum, each once:

    >>> X = np.array([[3.0, 0.0], [0.0, 3.0], [3.0, 3.0]])
    >>> Z, A = bp_means_one_pass(X, 1.0)
    >>> Z.tolist(), A.tolist()
    ([[1, 0], [0, 1], [1, 1]], [[3.0, 0.0], [0.0, 3.0]])
    """
    X = check_data_matrix("X", X)
    gamma = check_positive("gamma", gamma)
    n_steps = check_count("n_steps", n_steps, minimum=1, maximum=10_000)
    ossify = check_flag("ossify", ossify)
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not X.flags.writeable:
        # numba types a read-only array apart and would compile the pass again (seconds)
        X = X.copy()
    return _one_pass(X, gamma**2, n_steps, ossify)


@njit(cache=True)
def _grow(array, rows):
    """``array`` with room for ``rows`` rows (the first ones copied)."""
    out = np.zeros((rows,) + array.shape[1:], array.dtype)
    out[: array.shape[0]] = array
    return out


@njit(cache=True)
def _one_pass(X, gamma2, n_steps, ossify):
    """The pass of :func:`bp_means_one_pass`, compiled (checked inputs)."""
    n, D = X.shape
    capacity = 8
    features = np.zeros((capacity, D))  # A after each point's turn, in order of creation
    variance = np.zeros(capacity)  # posterior variance of each feature, units of sigma^2
    owners = np.zeros(capacity)
    Z = np.zeros((n, capacity), np.int8)
    K = 0
    for i in range(n):
        A = features[:K].copy()
        z = owners[:K] / (i + 1)
        residual = X[i] - z @ A
        r = np.empty(D)  # the residual left for feature l
        # element by element, the arithmetic of the array expressions (numba sums an array
        # in order from 0), without a temporary array per feature and step
        for _ in range(n_steps):
            for l in range(K):  # (i) ownership lowers the squared error
                with_it, without = 0.0, 0.0  # sum((r - A_l)^2) and sum(r^2)
                for d in range(D):
                    r[d] = residual[d] + z[l] * A[l, d]
                    with_it += (r[d] - A[l, d]) ** 2
                    without += r[d] ** 2
                z[l] = 1.0 if with_it < without else 0.0
                for d in range(D):
                    residual[d] = r[d] - z[l] * A[l, d]
            for l in range(K):  # (iii) owned features move towards their residual
                for d in range(D):
                    r[d] = residual[d] + z[l] * A[l, d]
                if z[l] == 1.0:
                    eta = variance[l] / (1.0 + variance[l])
                    if ossify:
                        eta /= owners[l] + 1.0
                    for d in range(D):
                        A[l, d] = features[l, d] + eta * (r[d] - features[l, d])
                else:
                    A[l] = features[l]
                for d in range(D):
                    residual[d] = r[d] - z[l] * A[l, d]
        for l in range(K):
            if z[l] == 1.0:
                v = variance[l]
                variance[l] = v - v**2 / ((owners[l] + 1.0) * (1.0 + v)) if ossify \
                    else v / (1.0 + v)
            features[l] = A[l]
            owners[l] += z[l]
            Z[i, l] = np.int8(z[l])
        if residual @ residual > gamma2:  # (ii) a new feature: the residual
            if K == capacity:
                capacity *= 2
                features, variance = _grow(features, capacity), _grow(variance, capacity)
                owners = _grow(owners, capacity)
                wider = np.zeros((n, capacity), np.int8)
                wider[:, :K] = Z
                Z = wider
            features[K] = residual
            variance[K] = 1.0
            owners[K] = 1.0
            Z[i, K] = 1
            K += 1
    return np.ascontiguousarray(Z[:, :K]), features[:K].copy()
