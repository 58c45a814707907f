"""Exact posteriors for tiny data sets, by enumerating every equivalence class.

A sampler written by hand needs an answer it can be checked against. With
``N`` rows there are only ``T = 2^N - 1`` possible non-zero columns ("column
types"), and a left-ordered equivalence class ``[Z]`` is nothing but a multiset
of column types: how many columns of each type it has. Enumerating every
multiset with at most ``k_max`` columns and weighting it by::

    P([Z] | alpha, beta) * p(X | Z, sigma_x, sigma_a)

(the class probability of :func:`ibp_lab.models.prior.log_prior`, evaluated for all
classes at once, times the linear-Gaussian likelihood) gives the
posterior over classes, hence over ``K+`` or anything else that does not depend
on how the features are labelled.

- :func:`column_types`, :func:`count_classes`, :func:`enumerate_classes`,
  :func:`class_counts`: the classes themselves.
- :func:`class_posterior`: every class's posterior probability (a
  :class:`ClassPosterior`), with a bound on the mass left beyond ``k_max``.
- :func:`k_plus_posterior`: the posterior of the number of features.
- :func:`log_evidence`: ``log p(X | alpha, beta, sigma_x, sigma_a)``, summed over the
  classes with ``K+ <= k_max``.

The likelihood here is computed in its ``N x N`` form (each column of ``X`` is
``Normal(0, sigma_a^2 Z Z^T + sigma_x^2 I)``), independently of
:func:`ibp_lab.models.linear_gaussian.collapsed_loglik` and of the samplers' rank-one
algebra, so that a comparison with a sampler checks both.

The number of classes grows like ``C(T + k_max, k_max)``: about 6,400 for
``N = 3, k_max = 8`` and 490,000 for ``N = 4, k_max = 8``. Hence the guards:
at most :data:`MAX_ROWS` rows and :data:`MAX_CLASSES` classes, checked by one rule that every
enumeration door shares (``check_enumeration`` of the private module
``ibp_lab.inference._enumeration``, which also holds the table of classes and the
likelihood that :mod:`ibp_lab.inference.noisy_or` and
:func:`ibp_lab.inference.variational.finite_log_evidence` use too; a door whose classes
cost more extends the rule with its own units).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.special import logsumexp
from scipy.stats import poisson

from ibp_lab._checks import (HYPERPARAMETERS, BinaryMatrix, Count, DataMatrix, Flag, Joint, Rows,
                             validated)
from ibp_lab._hyper import check_discount, check_hyperparameters, stable_harmonic
from ibp_lab.inference import _enumeration

__all__ = [
    "MAX_ROWS",
    "MAX_CLASSES",
    "ClassPosterior",
    "column_types",
    "count_classes",
    "enumerate_classes",
    "class_counts",
    "class_posterior",
    "k_plus_posterior",
    "log_evidence",
]

#: Largest number of rows accepted: 2^5 - 1 = 31 column types is already too many.
MAX_ROWS = _enumeration.MAX_ROWS
#: Largest number of classes enumerated (a few seconds and some 100 MB at the limit).
MAX_CLASSES = _enumeration.MAX_CLASSES

#: The samplers' checks of the hyperparameters and the discount against the data X.
_HYPERPARAMETERS = Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS)
_DISCOUNT = Joint(check_discount, Rows("X"), "alpha", "beta", "discount", sets="discount")


@validated(n_rows=Count(minimum=1, maximum=MAX_ROWS))
def column_types(n_rows: int) -> np.ndarray:
    """All ``2^n_rows - 1`` non-zero binary columns, in left-ordered order.

    Column ``t`` is the binary expansion of ``2^n_rows - 1 - t`` with the first
    row as the most significant bit, so the columns run from "owned by every
    row" down to "owned by the last row only", the order in which the left-ordered
    form places them.

    Parameters
    ----------
    n_rows : int
        Number of rows, 1 to :data:`MAX_ROWS`.

    Returns
    -------
    numpy.ndarray
        ``(n_rows, 2^n_rows - 1)`` ``int8``.

    Examples
    --------
    >>> column_types(2)
    array([[1, 1, 0],
           [1, 0, 1]], dtype=int8)
    """
    return _enumeration.column_types(n_rows).copy()


# 2^n_rows - 1 column types: beyond ten rows the count itself becomes slow to compute
@validated(n_rows=Count(minimum=1, maximum=10), k_max=Count())
def count_classes(n_rows: int, k_max: int) -> int:
    """Number of equivalence classes with at most ``k_max`` non-empty columns.

    A class with ``K`` columns is a multiset of size ``K`` from ``T = 2^n_rows - 1``
    types: ``C(T + K - 1, K)`` of them.

    Examples
    --------
    >>> count_classes(3, 8)
    6435
    """
    return _enumeration.count_classes(n_rows, k_max)


# checked when called, not when first iterated: the refusal comes at the door
@validated(n_rows=Count(minimum=1), k_max=Count(),
           size=Joint(partial(_enumeration.check_enumeration, rows_from="n_rows"), "n_rows",
                      "k_max"))
def enumerate_classes(n_rows: int, k_max: int):
    """Yield every left-ordered class with at most ``k_max`` non-empty columns.

    Classes come in order of ``K+`` (the empty matrix first). Each is yielded as
    its left-ordered matrix.

    Parameters
    ----------
    n_rows : int
        Number of rows, 1 to :data:`MAX_ROWS`.
    k_max : int
        Largest number of columns, >= 0.

    Yields
    ------
    numpy.ndarray
        ``(n_rows, K)`` ``int8`` in left-ordered form.

    Examples
    --------
    >>> [Z.tolist() for Z in enumerate_classes(1, 2)]
    [[[]], [[1]], [[1, 1]]]
    >>> sum(1 for _ in enumerate_classes(3, 8)) == count_classes(3, 8)
    True
    """
    types = _enumeration.column_types(n_rows)
    for combo in _enumeration.multisets(types.shape[1], k_max):
        yield types[:, list(combo)]


@validated(Z=BinaryMatrix())
def class_counts(Z) -> np.ndarray:
    """How many columns of each type ``Z`` has: its class, as a count vector.

    The ``t``-th entry counts the columns of ``Z`` equal to column ``t`` of
    :func:`column_types`; all-zero columns are ignored. Two matrices are in the
    same class exactly when their count vectors are equal, which makes this a
    convenient key for comparing a sampler's states with the enumeration.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary matrix with ``1 <= N <= MAX_ROWS``.

    Returns
    -------
    numpy.ndarray
        ``(2^N - 1,)`` ``int64``.

    Examples
    --------
    >>> class_counts([[1, 0, 1], [0, 1, 0]])  # types 11, 10, 01
    array([0, 2, 1])
    """
    n_rows = Z.shape[0]
    if not 1 <= n_rows <= MAX_ROWS:
        raise ValueError(f"Z must have 1 to {MAX_ROWS} rows, got {n_rows}")
    weights = 2 ** np.arange(n_rows - 1, -1, -1)
    values = weights @ Z.astype(np.int64)
    values = values[values > 0]
    # type t has value 2^N - 1 - t
    return np.bincount(2**n_rows - 1 - values, minlength=2**n_rows - 1)


@dataclass(frozen=True)
class ClassPosterior:
    """The posterior over every class with ``K+ <= k_max``.

    Attributes
    ----------
    counts : numpy.ndarray
        ``(n_classes, 2^N - 1)``: row ``c`` is class ``c`` as a count vector over
        :func:`column_types` (see :func:`class_counts`).
    k_plus : numpy.ndarray
        ``(n_classes,)`` number of features of each class.
    log_weights : numpy.ndarray
        Unnormalised ``log P([Z] | alpha, beta) + log p(X | Z, sigma_x, sigma_a)``.
    probabilities : numpy.ndarray
        The weights normalised over the enumerated classes.
    tail_bound : float
        An upper bound on the posterior mass of all classes with ``K+ > k_max``
        (which the normalisation leaves out): each of those classes has prior
        total ``P(Poisson(alpha H) > k_max)`` and a likelihood of at most
        ``(2 pi)^(-ND/2) sigma_x^(-(N-1)D) (sigma_x^2 + sigma_a^2 (k_max+1)/N)^(-D/2)``
        (the covariance's eigenvalues are all >= sigma_x^2 and the largest is at
        least ``sigma_x^2 + sigma_a^2 trace(Z Z^T) / N``). If it is small, the
        enumeration is as good as exact. The bound is conservative (typically a
        hundred times the actual tail); raise ``k_max`` to shrink it.
    """

    counts: np.ndarray
    k_plus: np.ndarray
    log_weights: np.ndarray
    probabilities: np.ndarray
    tail_bound: float

    @property
    def n_rows(self) -> int:
        """Number of rows ``N`` of the data."""
        return int(np.log2(self.counts.shape[1] + 1))

    def classes(self):
        """Yield the left-ordered matrix of every class, in the order of ``probabilities``."""
        types = _enumeration.column_types(self.n_rows)
        for row in self.counts:
            yield np.repeat(types, row, axis=1)

    def probability_of(self, Z) -> float:
        """Posterior probability of the class of ``Z`` (0 if ``K+ > k_max``).

        Examples
        --------
        >>> post = class_posterior([[1.0], [-1.0]], 1.0, 0.5, 1.0, k_max=6)
        >>> bool(np.isclose(post.probability_of([[0, 1], [1, 0]]),
        ...                 post.probability_of([[1, 0], [0, 1]])))
        True
        """
        key = class_counts(Z)
        if key.shape[0] != self.counts.shape[1]:
            raise ValueError(f"Z must have {self.n_rows} rows, got {np.asarray(Z).shape[0]}")
        match = np.flatnonzero(np.all(self.counts == key, axis=1))
        return float(self.probabilities[match[0]]) if match.size else 0.0


# the samplers' door: enumeration accepts exactly the settings the samplers accept,
# so that every sampler can be checked against it
@validated(X=DataMatrix(), hyperparameters=_HYPERPARAMETERS, k_max=Count(), discount=_DISCOUNT,
           size=Joint(_enumeration.check_enumeration, Rows("X"), "k_max"))
def class_posterior(
    X, alpha: float, sigma_x: float, sigma_a: float, *, beta: float = 1.0, k_max: int = 8,
    discount: float = 0.0,
) -> ClassPosterior:
    """Posterior probability of every class with at most ``k_max`` features.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N <= MAX_ROWS``.
    alpha, beta : float
        IBP mass and concentration, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    k_max : int, optional
        Largest ``K+`` enumerated; check ``tail_bound`` of the result.
    discount : float, optional
        ``d`` in ``[0, 1)``: the three-parameter IBP's class law (default 0).

    Returns
    -------
    ClassPosterior

    Examples
    --------
    >>> post = class_posterior([[1.0, 0.2], [0.9, 0.1], [-0.2, 1.5]], 1.0, 0.5, 1.0)
    >>> len(post.probabilities), bool(np.isclose(post.probabilities.sum(), 1.0))
    (6435, True)
    """
    n_rows, n_dims = X.shape

    counts, k_plus, log_prior_at_1, unique_gram, gram_index = _enumeration.class_table(
        n_rows, k_max, beta, discount)
    rate = alpha * stable_harmonic(n_rows, beta, discount)  # E[K+] = alpha H_N(beta, d)
    # P([Z] | alpha) = alpha^K+ exp(-alpha H) * (terms free of alpha), so moving from
    # alpha = 1 to alpha only changes these two factors.
    log_prior = log_prior_at_1 + k_plus * np.log(alpha) - (rate - rate / alpha)
    log_lik = _enumeration.gaussian_loglik(X, unique_gram, sigma_x, sigma_a)[gram_index]
    log_weights = log_prior + log_lik
    log_total = logsumexp(log_weights)

    log_lik_max = (
        -0.5 * n_rows * n_dims * np.log(2 * np.pi)
        - (n_rows - 1) * n_dims * np.log(sigma_x)
        - 0.5 * n_dims * np.log(sigma_x**2 + sigma_a**2 * (k_max + 1) / n_rows)
    )
    log_tail = poisson(rate).logsf(k_max) + log_lik_max
    tail_bound = float(np.exp(log_tail - np.logaddexp(log_total, log_tail)))

    probabilities = np.exp(log_weights - log_total)
    for array in (log_weights, probabilities):
        array.setflags(write=False)
    return ClassPosterior(counts, k_plus, log_weights, probabilities, tail_bound)


@validated(return_tail=Flag())
def k_plus_posterior(
    X,
    alpha: float,
    sigma_x: float,
    sigma_a: float,
    *,
    beta: float = 1.0,
    k_max: int = 8,
    return_tail: bool = False,
    discount: float = 0.0,
) -> np.ndarray | tuple[np.ndarray, float]:
    """Exact posterior of the number of features ``K+`` on tiny data.

    Sums the probabilities of :func:`class_posterior` by ``K+``.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N <= MAX_ROWS``.
    alpha, beta : float
        IBP mass and concentration, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    k_max : int, optional
        Largest ``K+`` enumerated.
    return_tail : bool, optional
        Also return ``tail_bound``, an upper bound on ``P(K+ > k_max | X)``
        (see :class:`ClassPosterior`).
    discount : float, optional
        ``d`` in ``[0, 1)``: the three-parameter IBP (default 0).

    Returns
    -------
    numpy.ndarray
        ``(k_max + 1,)`` with entry ``k`` the probability that ``K+ = k``,
        normalised over ``K+ <= k_max``.
    float
        Only if ``return_tail``: the tail bound.

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> p, tail = k_plus_posterior(X, 1.3, 0.6, 1.2, k_max=10, return_tail=True)
    >>> p[:6].round(3)
    array([0.212, 0.358, 0.253, 0.117, 0.042, 0.013])
    >>> bool(tail < 1e-3)  # the bound is conservative: the true tail is about 1e-6
    True
    """
    post = class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max,
                           discount=discount)
    p = np.bincount(post.k_plus, weights=post.probabilities, minlength=k_max + 1)
    return (p, post.tail_bound) if return_tail else p


def log_evidence(
    X, alpha: float, sigma_x: float, sigma_a: float, *, beta: float = 1.0, k_max: int = 8,
    discount: float = 0.0,
) -> float:
    """Log marginal likelihood ``log p(X | alpha, beta, sigma_x, sigma_a)`` by enumeration.

    ``log sum_[Z] P([Z] | alpha, beta) p(X | Z, sigma_x, sigma_a)`` over every class
    with ``K+ <= k_max``: a lower bound on the evidence, short of it by the mass of
    the classes beyond ``k_max`` (``tail_bound`` of :func:`class_posterior` bounds
    that mass relative to the total).

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N <= MAX_ROWS``.
    alpha, beta : float
        IBP mass and concentration, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    k_max : int, optional
        Largest ``K+`` enumerated.
    discount : float, optional
        ``d`` in ``[0, 1)``: the three-parameter IBP (default 0).

    Returns
    -------
    float

    Examples
    --------
    >>> from scipy.stats import norm, poisson
    >>> k = np.arange(40)  # one row, one pixel: x ~ Normal(0, sigma_x^2 + k sigma_a^2)
    >>> direct = np.log(np.sum(poisson(1.5).pmf(k) * norm(0, np.sqrt(0.25 + k)).pdf(0.7)))
    >>> bool(np.isclose(log_evidence([[0.7]], 1.5, 0.5, 1.0, k_max=30), direct))
    True
    """
    post = class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max,
                           discount=discount)
    return float(logsumexp(post.log_weights))
