"""Probabilities of whole matrices: finite-model classes and buffet histories.

The book's first chapter derives the IBP's class probability
(:func:`ibp_lab.models.prior.log_prior`) twice, and this module computes the two
quantities on the way:

- :func:`finite_log_class_probability`: the probability of a left-ordered
  class under the finite beta-Bernoulli model with ``K`` columns, whose limit
  ``K -> infinity`` is the IBP's class probability; :func:`log_class_probabilities`
  gives it for many classes at once, from their counts of each column type;
- :func:`log_history_probability`: the probability that the buffet produces one
  given matrix with its columns in order of creation (a *history*). A class
  holds ``prod_i K1_i! / prod_h K_h!`` histories, all equally probable, so the
  two differ by that factor.

Conventions: as in :mod:`ibp_lab.models.prior` (``alpha`` mass, ``beta``
concentration, matrices of 0 and 1); the hyperparameters are keyword-only.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.special import betaln, gammaln

from ibp_lab._checks import (MAX_COUNT, Checked, Count, Joint, Positive, as_array,
                             check_binary_matrix, validated)
from ibp_lab._hyper import new_dish_rate
from ibp_lab.models.prior import MAX_ROWS

__all__ = ["finite_log_class_probability", "log_class_probabilities", "log_history_probability"]


def _rows_checked(name: str, Z) -> np.ndarray:
    Z = check_binary_matrix(name, Z)
    if Z.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row, got 0")
    return Z


def _check_owners(owners: np.ndarray, counts: np.ndarray, n_rows: int) -> None:
    if owners.shape[0] != counts.shape[1]:
        raise ValueError(f"owners must have one entry per column of counts ({counts.shape[1]}), "
                         f"got {owners.shape[0]}")
    if owners.size and not (owners.min() >= 1 and owners.max() <= n_rows):
        raise ValueError(f"owners must lie between 1 and n_rows = {n_rows}, got "
                         f"{owners.min()} to {owners.max()}")


def _count_array(name: str, value, *, ndim: int) -> np.ndarray:
    """``value`` as an ``int64`` array of ``ndim`` dimensions of whole numbers from 0 to
    :data:`ibp_lab._checks.MAX_COUNT` (whole floats too, as a list of counts may hold)."""
    arr = as_array(name, value, f"a {ndim}-D array of counts", refuse_none=True)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {arr.ndim} dimension(s)")
    if arr.size and not (np.all(arr >= 0) and np.all(arr <= MAX_COUNT)
                         and np.all(arr == np.floor(arr))):
        raise ValueError(f"{name} must hold whole numbers from 0 to {MAX_COUNT}")
    return arr.astype(np.int64, copy=False)


@validated(Z=Checked(_rows_checked), alpha=Positive(), beta=Positive(),
           n_features=Count(minimum=1))
def finite_log_class_probability(
    Z, *, alpha: float, n_features: int, beta: float = 1.0
) -> float:
    """Log probability of the class of ``Z`` under the finite beta-Bernoulli model.

    The model has ``K = n_features`` columns, ``pi_k ~ Beta(alpha beta / K, beta)``
    and ``z_nk ~ Bernoulli(pi_k)``. Integrating out ``pi_k`` gives each column
    with ``m`` ones the probability ``B(m + a, N - m + beta) / B(a, beta)``,
    ``a = alpha beta / K``. The class of ``Z`` (its matrices up to a
    permutation of the columns, the ``K - K+`` empty columns included) holds
    ``K! / (K_0! prod_h K_h!)`` distinct matrices, ``K_0 = K - K+``::

        P_K([Z]) = K! / (K_0! prod_h K_h!)
                   * prod_{k <= K+} B(m_k + a, N - m_k + beta) / B(a, beta)
                   * (prod_{i=1}^N (beta + i - 1) / (a + beta + i - 1))^{K_0}

    As ``K -> infinity`` it tends to :func:`ibp_lab.models.prior.log_prior` (chapter 1
    derives the limit).

    Parameters
    ----------
    Z : array_like
        ``(N, K')`` binary matrix, ``N >= 1``; empty columns are ignored.
    alpha, beta : float
        Mass and concentration, both > 0.
    n_features : int
        Number of columns ``K`` of the finite model, at least the number of
        non-empty columns of ``Z``.

    Returns
    -------
    float

    Examples
    --------
    With many columns the finite model's value is close to the IBP's:

    >>> from ibp_lab.models.prior import log_prior
    >>> Z = [[1, 1], [1, 0]]
    >>> finite = finite_log_class_probability(Z, alpha=1.0, n_features=10**6)
    >>> bool(abs(finite - log_prior(Z, 1.0)) < 1e-5)
    True
    """
    Z = Z[:, Z.any(axis=0)]
    n_rows, k_plus = Z.shape
    if n_features < k_plus:
        raise ValueError(
            f"n_features must be >= the {k_plus} non-empty columns of Z, got {n_features}"
        )
    distinct, multiplicities = (np.unique(Z, axis=1, return_counts=True) if k_plus
                                else (np.zeros((n_rows, 0)), np.zeros(0, dtype=int)))
    return float(_log_class_probabilities(multiplicities[None, :], distinct.sum(axis=0), n_rows,
                                          alpha=alpha, beta=beta, n_features=n_features)[0])


# the formula sums a term per row: as many rows as the prior's samplers take
@validated(n_rows=Count(minimum=1, maximum=MAX_ROWS),
           counts=Checked(partial(_count_array, ndim=2)),
           owners=Checked(partial(_count_array, ndim=1)),
           owners_fit=Joint(_check_owners, "owners", "counts", "n_rows"),
           alpha=Positive(), beta=Positive(), n_features=Count(minimum=1))
def log_class_probabilities(counts, owners, n_rows: int, *, alpha: float, n_features: int,
                            beta: float = 1.0) -> np.ndarray:
    """:func:`finite_log_class_probability` of many classes at once, from their column counts.

    Class ``c`` has ``counts[c, t]`` columns of type ``t``, a column that ``owners[t]`` of
    the ``n_rows`` rows own. With the types of
    :func:`ibp_lab.inference.exact.column_types` and the classes' count vectors
    (:func:`ibp_lab.inference.exact.class_counts`), it scores a whole enumeration in one
    call: :func:`ibp_lab.inference.variational.finite_log_evidence` sums every class of
    up to ``K`` columns that way. The formula is :func:`finite_log_class_probability`'s.

    Parameters
    ----------
    counts : array_like
        ``(n_classes, n_types)`` non-negative integers: the columns of each type in each
        class. A class holds at most ``n_features`` columns.
    owners : array_like
        ``(n_types,)`` integers from 1 to ``n_rows``: how many rows own each type.
    n_rows : int
        Number of rows ``N``, 1 to :data:`ibp_lab.models.prior.MAX_ROWS`.
    alpha, beta : float
        Mass and concentration, both > 0.
    n_features : int
        Number of columns ``K`` of the finite model, >= 1.

    Returns
    -------
    numpy.ndarray
        ``(n_classes,)`` log probabilities.

    Examples
    --------
    Two rows: the types are ``11``, ``10`` and ``01``, owned by 2, 1 and 1 rows. The
    class of one shared column and the class of one column in each row:

    >>> counts = [[1, 0, 0], [0, 1, 1]]
    >>> log_p = log_class_probabilities(counts, [2, 1, 1], 2, alpha=1.5, n_features=4)
    >>> bool(np.isclose(log_p[1], finite_log_class_probability([[1, 0], [0, 1]], alpha=1.5,
    ...                                                         n_features=4)))
    True
    """
    # summed in floating point: counts up to MAX_COUNT would overflow int64
    widest = counts.sum(axis=1, dtype=float).max() if counts.size else 0
    if widest > n_features:
        raise ValueError(f"n_features must be >= the {widest:.0f} columns of the widest class in "
                         f"counts, got {n_features}")
    return _log_class_probabilities(counts, owners, n_rows, alpha=alpha, beta=beta,
                                    n_features=n_features)


def _log_class_probabilities(counts: np.ndarray, owners: np.ndarray, n_rows: int, *,
                             alpha: float, beta: float, n_features: int) -> np.ndarray:
    """The formula of :func:`log_class_probabilities` and :func:`finite_log_class_probability`
    (its one home), for arguments their doors have checked."""
    counts = np.asarray(counts, dtype=float)
    k_plus = counts.sum(axis=1)
    a = alpha * beta / n_features
    m = np.asarray(owners, dtype=float)
    log_count = (gammaln(n_features + 1.0) - gammaln(n_features - k_plus + 1.0)
                 - gammaln(counts + 1.0).sum(axis=1))
    log_used = counts @ (betaln(m + a, n_rows - m + beta) - betaln(a, beta))
    # log B(a, N + beta) - log B(a, beta), written as a sum of log1p: no cancellation
    log_empty = -np.sum(np.log1p(a / (beta + np.arange(n_rows))))
    return log_count + log_used + (n_features - k_plus) * log_empty


@validated(Z=Checked(_rows_checked), alpha=Positive(), beta=Positive())
def log_history_probability(Z, *, alpha: float, beta: float = 1.0) -> float:
    """Log probability that the buffet produces exactly ``Z``, columns in creation order.

    Computed step by step from the buffet's rules: customer ``i`` (1-based)
    takes an old dish held by ``m`` earlier customers with probability
    ``m / (beta + i - 1)`` and tries ``K1_i ~ Poisson(alpha beta / (beta + i - 1))``
    new dishes, which fill the next ``K1_i`` columns. The result equals
    ``log_prior(Z) + log(prod_h K_h!) - log(prod_i K1_i!)``: a class holds
    ``prod_i K1_i! / prod_h K_h!`` histories (chapter 1 derives it).

    Parameters
    ----------
    Z : array_like
        ``(N, K+)`` binary matrix, ``N >= 1``, in order of creation: no empty
        column, and the first row owning each column never decreases from
        left to right (as :func:`ibp_lab.models.prior.sample_ibp` returns it).
    alpha, beta : float
        Mass and concentration, both > 0.

    Returns
    -------
    float

    Examples
    --------
    Two customers: the first takes two dishes, the second only the first one.
    The class also holds the history with the second customer on the second
    dish, so the history is half as probable as its class:

    >>> from ibp_lab.models.prior import log_prior
    >>> Z = [[1, 1], [1, 0]]
    >>> ratio = np.exp(log_history_probability(Z, alpha=1.5) - log_prior(Z, 1.5))
    >>> round(float(ratio), 12)
    0.5
    """
    if not Z.any(axis=0).all():
        raise ValueError("Z must have no empty column: a history has none")
    first_owner = Z.argmax(axis=0)
    if np.any(np.diff(first_owner) < 0):
        raise ValueError(
            "Z must have its columns in order of creation: the first row owning "
            f"each column must not decrease from left to right, got {first_owner.tolist()}"
        )
    n_rows = Z.shape[0]
    rows = np.arange(n_rows)
    denominators = beta + rows  # beta + i - 1 for customers i = 1..N
    rates = new_dish_rate(alpha, beta, rows)  # customer i has i - 1 customers before it
    new_counts = np.bincount(first_owner, minlength=n_rows)
    log_p = float(np.sum(new_counts * np.log(rates) - rates - gammaln(new_counts + 1.0)))
    held_before = np.cumsum(Z, axis=0) - Z  # m for each customer and dish
    old = rows[:, None] > first_owner[None, :]  # decisions on dishes created earlier
    p_take = held_before / denominators[:, None]
    choice = np.where(Z == 1, p_take, 1.0 - p_take)
    return log_p + float(np.sum(np.log(choice[old])))
