"""The exact stationary laws of the fixed-scan and random-scan Gibbs sweeps, on two rows.

With two rows there are three column types: owned by both rows (``11``), by the
first only (``10``) and by the second only (``01``), in the order of
:func:`ibp_lab.inference.exact.column_types`. A left-ordered class is then three counts
``(a, b, c)``, and both sweeps of :mod:`ibp_lab.inference.gibbs` are Markov chains on these
classes, so their transition matrices can be written down and solved.

Why the classes suffice. Take the update of row 0 (row 1 is the same with the roles
swapped). Its shared features are the ``a + c`` features row 1 owns; its singletons
are the ``b`` columns of type ``10``. The collapsed likelihood depends on ``Z``
only through ``Z Z^T``, that is through how many features row 0 owns, row 1 owns,
and both own; every shared feature has ``m_-0,k = 1`` and so the prior odds
``1 / beta``. Hence each flip depends on one number, ``t``, the shared features
row 0 owns at that moment, and the row's update leaves the class
``(t, s, a + c - t)`` with ``s`` new singletons.

- ``"random"`` (``gibbs_sweep``): the shared features in a uniformly random
  order; at each step the next feature is one of row 0's (type ``11``) with
  probability ``u_11 / (u_11 + u_01)`` among the unvisited ones.
- ``"fixed"`` (``k_plus_trace(..., scan_order="fixed")``): column order, with the
  row's new singletons appended at the right. On two rows this is, from the
  second sweep on, "every shared feature the row owns, then every one it does
  not": the features of type ``01`` that row 0 meets are all row 1's singletons,
  appended at the end by row 1's update, and row 0's own singletons are not
  flipped. The order depends on the values of the row being updated.

The number of new singletons has its exact law, Poisson(``alpha beta / (beta +
1)``) times the likelihood, computed up to ``s_max`` terms with a bound on the
rest (``dish_tail``). The classes are truncated at ``k_max`` features: a
new-dish count that would leave them is not drawn (its law is renormalised over
the counts that stay). A flip never changes the number of features, so the
truncated chain is the same sweep run on the posterior restricted to at most
``k_max`` features, and it is compared with the enumeration restricted in the
same way: the truncation adds no error to the comparison. ``escape`` reports how
often per sweep the untruncated chain, started from the stationary law, would
have left. Everything is computed from
``p(X | Z)`` in its ``2 x 2`` form, independently of the samplers' rank-one
algebra.

- :func:`scan_order_laws`: both transition matrices, both stationary laws, the
  exact posterior on the same classes and the total-variation distances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln, logsumexp
from scipy.stats import poisson

from ibp_lab.inference import exact
from ibp_lab._checks import (HYPERPARAMETERS, Count, DataMatrix, Joint, RealArray,
                             validated)
from ibp_lab._hyper import check_hyperparameters, new_dish_rate

__all__ = ["ScanOrderLaws", "scan_order_laws"]

#: Largest ``k_max``: ``C(k_max + 3, 3)`` classes, a dense matrix of 70 MB at 24.
MAX_K = 24
#: Terms of each new-dish law beyond the truncation of the classes (bound reported).
_EXTRA_TERMS = 40
ORDERS = ("fixed", "random")


@dataclass(frozen=True)
class ScanOrderLaws:
    """Exact transition matrices and stationary laws of both scan orders, on two rows.

    Attributes
    ----------
    states : numpy.ndarray
        ``(n, 3)`` class counts over :func:`ibp_lab.inference.exact.column_types` ``(2)``
        (types ``11``, ``10``, ``01``), every class with at most ``k_max`` features.
    transition : dict
        ``{"fixed": P, "random": P}``, each ``(n, n)`` row-stochastic: one sweep
        (row 0, then row 1) from class ``states[j]`` to class ``states[l]``.
    stationary : dict
        ``{"fixed": pi, "random": pi}``: the solution of ``pi P = pi``, ``sum pi = 1``.
    posterior : numpy.ndarray
        ``(n,)`` exact posterior of each class (:func:`ibp_lab.inference.exact.class_posterior`).
    tv : dict
        Total-variation distance of each stationary law from ``posterior``.
    escape : dict
        Probability per sweep, from the stationary law, that the untruncated chain
        would leave the classes with at most ``k_max`` features.
    dish_tail : float
        Bound on the share of any new-dish law beyond the terms computed, at most 1 (a
        value near 1 says the data want far more features than ``k_max``: the laws are
        then not worth reading).
    posterior_tail : float
        ``tail_bound`` of the enumeration: posterior mass beyond ``k_max``.
    """

    states: np.ndarray
    transition: dict
    stationary: dict
    posterior: np.ndarray
    tv: dict
    escape: dict
    dish_tail: float
    posterior_tail: float

    def index(self, Z) -> int:
        """Row of ``states`` holding the class of ``Z`` (a ``(2, K)`` binary matrix)."""
        key = exact.class_counts(Z)
        if key.shape[0] != 3:
            raise ValueError(f"Z must have 2 rows, got {np.asarray(Z).shape[0]}")
        match = np.flatnonzero(np.all(self.states == key, axis=1))
        if not match.size:
            raise ValueError(f"Z has {int(key.sum())} features, more than k_max")
        return int(match[0])

    @validated(law=RealArray())
    def k_plus(self, law) -> np.ndarray:
        """A law over ``states`` summed by number of features, ``(k_max + 1,)``.

        ``law`` holds one finite, non-negative weight per row of ``states`` (for
        example ``self.posterior`` or ``self.stationary["fixed"]``).
        """
        if law.shape != (self.states.shape[0],):
            raise ValueError(f"law must hold one weight per state, shape "
                             f"({self.states.shape[0]},), got {law.shape}")
        if not np.all(np.isfinite(law) & (law >= 0)):
            raise ValueError("law must hold finite, non-negative weights")
        k = self.states.sum(axis=1)
        return np.bincount(k, weights=law, minlength=k.max() + 1)


def _check_two_rows(X: np.ndarray) -> None:
    if X.shape[0] != 2:
        raise ValueError(f"X must have exactly 2 rows, got {X.shape[0]}")


def _log_lik_table(X, sigma_x, sigma_a, n_max):
    """``log p(X | Z)`` for ``Z Z^T = [[n0, n01], [n01, n1]]``, indexed ``[n0, n1, n01]``."""
    D = X.shape[1]
    s00, s11, s01 = X[0] @ X[0], X[1] @ X[1], X[0] @ X[1]
    n = np.arange(n_max + 1, dtype=float)
    n0, n1, n01 = np.meshgrid(n, n, n, indexing="ij")
    c00 = sigma_a**2 * n0 + sigma_x**2
    c11 = sigma_a**2 * n1 + sigma_x**2
    c01 = sigma_a**2 * n01
    possible = (n01 <= n0) & (n01 <= n1)  # other entries name no matrix
    det = np.where(possible, c00 * c11 - c01**2, 1.0)
    quad = (c11 * s00 - 2.0 * c01 * s01 + c00 * s11) / det
    table = -D * np.log(2 * np.pi) - 0.5 * D * np.log(det) - 0.5 * quad
    table[~possible] = -np.inf
    return table


def _flip_outcomes(p_on, n_own, n_other, order):
    """Law of ``t`` after one Gibbs update of each shared feature, ``(n_own + n_other + 1,)``.

    ``p_on[t]`` is the probability that the visited feature ends up owned, given that
    ``t`` other shared features are owned. Unvisited features keep their values:
    ``n_own`` start owned, ``n_other`` not.
    """
    n1 = n_own + n_other
    p_on = np.append(p_on, 0.0)  # p_on[n1] is never used with weight

    def own_step(d):  # visit a feature the row owns: t - 1 others owned
        new = np.zeros_like(d)
        new[:-1] += d[1:] * (1.0 - p_on[:n1])
        new[1:] += d[1:] * p_on[:n1]
        return new

    def other_step(d):  # visit a feature the row does not own: t others owned
        new = d * (1.0 - p_on)
        new[1:] += d[:-1] * p_on[:n1]
        return new

    start = np.zeros(n1 + 1)
    start[n_own] = 1.0
    if order == "fixed":
        d = start
        for _ in range(n_own):
            d = own_step(d)
        for _ in range(n_other):
            d = other_step(d)
        return d
    # random order: laws indexed by (unvisited owned, unvisited other), done by total
    laws = {(n_own, n_other): start}
    for left in range(n1, 0, -1):
        for u_own in range(max(0, left - n_other), min(n_own, left) + 1):
            u_other = left - u_own
            d = laws.pop((u_own, u_other))
            if u_own:
                nxt = (u_own - 1, u_other)
                laws[nxt] = laws.get(nxt, 0.0) + u_own / left * own_step(d)
            if u_other:
                nxt = (u_own, u_other - 1)
                laws[nxt] = laws.get(nxt, 0.0) + u_other / left * other_step(d)
    return laws[(0, 0)]


def _row_kernel(table, states, index, rate, beta, k_max, s_max, order, swap):
    """One row's update as a matrix over ``states``; also each state's escape mass.

    ``swap=False`` updates row 0 (own singletons type ``10``), ``swap=True`` row 1
    (``table`` then indexed ``[n_self, n_other, n01]`` after the swap).
    """
    n_states = len(states)
    R = np.zeros((n_states, n_states))
    escape = np.zeros(n_states)
    s = np.arange(s_max + 1)
    log_pois = s * np.log(rate) - rate - gammaln(s + 1.0)
    for j, (a, b, c) in enumerate(states):
        own_single, other_only = (c, b) if swap else (b, c)
        n1 = a + other_only  # features the other row owns: the shared ones
        t = np.arange(n1)
        # flip of one shared feature with t others owned: on (t + 1 shared) or off (t)
        on = table[t + 1 + own_single, n1, t + 1]
        off = table[t + own_single, n1, t]
        p_on = expit(on - off - np.log(beta))  # 1 / (1 + beta e^(off - on)), no overflow
        law_t = _flip_outcomes(p_on, a, other_only, order)
        for t_end in np.flatnonzero(law_t > 0):
            lw = log_pois + table[t_end + s, n1, t_end]
            keep = k_max - n1  # most new singletons that stay within k_max features
            # in logs: with data far from the prior every kept weight can underflow
            log_kept = logsumexp(lw[:keep + 1])
            if keep + 1 < lw.size:
                escape[j] += law_t[t_end] * np.exp(logsumexp(lw[keep + 1:]) - logsumexp(lw))
            w = np.exp(lw[:keep + 1] - log_kept)
            for n_new in range(keep + 1):
                target = (t_end, other_only + a - t_end, n_new) if swap else \
                         (t_end, n_new, other_only + a - t_end)
                R[j, index[target]] += law_t[t_end] * w[n_new]
    return R, escape


@validated(X=DataMatrix(), two_rows=Joint(_check_two_rows, "X"),
           hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS,
                                 sets=HYPERPARAMETERS),
           k_max=Count(minimum=1, maximum=MAX_K))
def scan_order_laws(X, *, alpha: float, sigma_x: float, sigma_a: float, beta: float = 1.0,
                    k_max: int = 16) -> ScanOrderLaws:
    """Exact one-sweep transition matrices and stationary laws of both scan orders.

    For two rows of data, the collapsed Gibbs sweep of :mod:`ibp_lab.inference.gibbs` with
    the shared features in a fresh random order (``"random"``) and in column order
    (``"fixed"``) are Markov chains on left-ordered classes (see the module
    docstring). Both matrices are built over every class with at most ``k_max``
    features, their stationary laws solved for, and compared with the exact
    posterior by total variation.

    Parameters
    ----------
    X : array_like
        ``(2, D)`` data.
    alpha, beta : float
        IBP mass and concentration, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    k_max : int, optional
        Largest number of features, 1 to :data:`MAX_K`; check ``escape`` and
        ``posterior_tail`` of the result.

    Returns
    -------
    ScanOrderLaws

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1]]
    >>> laws = scan_order_laws(X, alpha=1.3, sigma_x=0.6, sigma_a=1.2, k_max=10)
    >>> bool(np.allclose(laws.transition["fixed"].sum(axis=1), 1.0))
    True
    >>> bool(laws.tv["random"] < 1e-10), bool(laws.tv["fixed"] > 1e-3)
    (True, True)
    """
    s_max = k_max + _EXTRA_TERMS
    table = _log_lik_table(X, sigma_x, sigma_a, k_max + s_max + 1)
    table_swapped = _log_lik_table(X[::-1], sigma_x, sigma_a, k_max + s_max + 1)
    rate = float(new_dish_rate(alpha, beta, 1))

    post = exact.class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max)
    states = post.counts
    index = {tuple(int(v) for v in row): j for j, row in enumerate(states)}
    transition, stationary, tv, escape = {}, {}, {}, {}
    for order in ORDERS:
        R0, e0 = _row_kernel(table, states, index, rate, beta, k_max, s_max, order, False)
        R1, e1 = _row_kernel(table_swapped, states, index, rate, beta, k_max, s_max, order,
                             True)
        P = R0 @ R1
        n = len(P)
        system = np.eye(n) - P.T
        system[-1] = 1.0  # replace one (redundant) balance equation by sum(pi) = 1
        rhs = np.zeros(n)
        rhs[-1] = 1.0
        pi = np.clip(np.linalg.solve(system, rhs), 0.0, None)
        pi /= pi.sum()
        for array in (P, pi):
            array.setflags(write=False)
        transition[order], stationary[order] = P, pi
        tv[order] = 0.5 * float(np.abs(pi - post.probabilities).sum())
        escape[order] = float(pi @ e0 + (pi @ R0) @ e1)
    dish_tail = max(_dish_tail(rows, tab, rate, sigma_x, sigma_a, k_max, s_max)
                    for rows, tab in ((X, table), (X[::-1], table_swapped)))
    return ScanOrderLaws(states, transition, stationary, post.probabilities, tv, escape,
                         dish_tail, post.tail_bound)


def _dish_tail(X, table, rate, sigma_x, sigma_a, k_max, s_max) -> float:
    """Bound on the share of any new-dish law (row 0's, of ``table``) beyond ``s_max``.

    For the law with ``n1`` shared features of which ``t`` are owned, ``s`` singletons
    give ``n0 = t + s``. In ``log p(X | Z)`` only ``c00 = sigma_a^2 n0 + sigma_x^2`` moves
    with ``s``: the determinant ``c00 c11 - c01^2`` grows with it, and the quadratic form
    ``(c11 x0.x0 - 2 c01 x0.x1 + c00 x1.x1) / det`` is a ratio of two linear functions of
    ``c00``, hence monotone, between its value at ``s_max + 1`` and its limit
    ``x1.x1 / c11``. So every term beyond ``s_max`` has a likelihood at most ``L_bar``
    (the determinant at ``s_max + 1``, the smaller of the two quadratic forms), and the
    tail weighs at most ``r = P(Poisson > s_max) e^L_bar`` against the law's kept weight
    ``W``: a share of at most ``r / (W + r)``, never above 1 however far the data are.
    """
    n_dims = X.shape[1]
    s00, s11, s01 = X[0] @ X[0], X[1] @ X[1], X[0] @ X[1]
    s = np.arange(s_max + 1)
    log_pois = s * np.log(rate) - rate - gammaln(s + 1.0)
    log_sf = poisson(rate).logsf(s_max)
    worst = -np.inf
    for n1 in range(k_max + 1):
        t = np.arange(n1 + 1)
        c00 = sigma_a**2 * (t + s_max + 1) + sigma_x**2
        c11 = sigma_a**2 * n1 + sigma_x**2
        c01 = sigma_a**2 * t
        det = c00 * c11 - c01**2
        quad = np.minimum((c11 * s00 - 2.0 * c01 * s01 + c00 * s11) / det, s11 / c11)
        log_lik_bar = -n_dims * np.log(2 * np.pi) - 0.5 * n_dims * np.log(det) - 0.5 * quad
        log_kept = logsumexp(log_pois[None, :] + table[t[:, None] + s[None, :], n1, t[:, None]],
                             axis=1)
        log_ratio = log_sf + log_lik_bar - log_kept  # log r / W
        worst = max(worst, float(np.max(log_ratio)))
    return float(expit(worst))  # r / (W + r)
