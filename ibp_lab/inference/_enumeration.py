"""The enumeration of equivalence classes that the exact doors share.

With ``N`` rows there are ``T = 2^N - 1`` non-zero column types, and a left-ordered class
is a multiset of them (see :mod:`ibp_lab.inference.exact`). The pieces here serve every
module that enumerates classes: :mod:`ibp_lab.inference.exact` (the IBP's posterior and
evidence), :func:`ibp_lab.inference.noisy_or.class_posterior` (the links summed out) and
:func:`ibp_lab.inference.variational.finite_log_evidence` (the finite model's evidence).

- :data:`MAX_ROWS`, :data:`MAX_CLASSES` and :func:`check_enumeration`: the one rule that
  refuses, before any work, an enumeration that cannot finish in seconds.
- :func:`column_types`, :func:`count_classes`, :func:`multisets`: the types and the classes.
- :func:`class_table`: every class's counts, ``K+``, ``Z Z^T`` and prior at ``alpha = 1``,
  computed once per size and cached.
- :func:`gaussian_loglik`: the linear-Gaussian likelihood of a stack of ``Z Z^T``.

No argument is checked here beyond the rule: the public doors check them.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from math import comb

import numpy as np
from scipy.special import gammaln

from ibp_lab._hyper import harmonic, stable_harmonic

__all__ = [
    "MAX_ROWS",
    "MAX_CLASSES",
    "column_types",
    "count_classes",
    "check_enumeration",
    "multisets",
    "class_table",
    "gaussian_loglik",
]

#: Largest number of rows accepted: 2^5 - 1 = 31 column types is already too many.
MAX_ROWS = 4
#: Largest number of classes enumerated (a few seconds and some 100 MB at the limit).
MAX_CLASSES = 500_000


def column_types(n_rows: int) -> np.ndarray:
    """All ``2^n_rows - 1`` non-zero binary columns in left-ordered order, ``(n_rows, T)``
    ``int8`` (:func:`ibp_lab.inference.exact.column_types` is the checked door)."""
    values = np.arange(2**n_rows - 1, 0, -1)
    bits = (values[None, :] >> np.arange(n_rows - 1, -1, -1)[:, None]) & 1
    return bits.astype(np.int8)


def count_classes(n_rows: int, k_max: int) -> int:
    """Classes with at most ``k_max`` columns of ``T = 2^n_rows - 1`` types,
    ``C(T + k_max, k_max)`` (:func:`ibp_lab.inference.exact.count_classes` is the checked door).

    ``sum_{k=0}^{k_max} C(T + k - 1, k) = C(T + k_max, k_max)`` (hockey stick): no loop over
    ``k``, so that a huge ``k_max`` is refused at once instead of counted term by term.
    """
    return comb(2**n_rows - 1 + k_max, k_max)


def check_enumeration(n_rows: int, k_max: int, *, rows_from: str = "X", limits=()) -> int:
    """The one rule of every enumeration door: refuse, before any work, an enumeration that
    cannot finish in seconds, naming the size it would need and the ``k_max`` that would.

    Every size is counted in closed form first: the classes (:func:`count_classes`) against
    :data:`MAX_CLASSES`, and each entry ``(what, count, limit)`` of ``limits`` (a door whose
    classes cost more than the Gaussian's, :func:`ibp_lab.inference.noisy_or.class_posterior`, adds its
    own units: ``count(k)`` of them at ``k_max = k``) against its limit. ``rows_from`` names
    the argument that set ``n_rows`` (``X`` for the posteriors, ``n_rows`` itself for
    :func:`ibp_lab.inference.exact.enumerate_classes`). Returns the number of classes.

    Examples
    --------
    >>> check_enumeration(3, 8)
    6435
    >>> check_enumeration(4, 9)
    Traceback (most recent call last):
    ...
    ValueError: k_max = 9 with 4 rows would enumerate 1307504 classes, more than MAX_CLASSES = 500000 (what finishes in seconds); use a smaller k_max: at most 8 with 4 rows
    """
    if n_rows > MAX_ROWS:
        what = "X must have at most" if rows_from == "X" else f"{rows_from} must be at most"
        raise ValueError(
            f"{what} {MAX_ROWS} rows for exact enumeration, got {n_rows}: "
            f"with N rows there are 2^N - 1 column types and the number of classes grows "
            f"like (2^N - 1)^k_max / k_max!"
        )
    n_classes = count_classes(n_rows, k_max)
    checks = [("classes", lambda k: count_classes(n_rows, k), MAX_CLASSES, "MAX_CLASSES"),
              *((what, count, limit, None) for what, count, limit in limits)]
    for what, count, limit, name in checks:
        needed = count(k_max)
        if needed > limit:
            largest = 0  # the counts grow with k: the last k within the limit
            while largest + 1 < k_max and count(largest + 1) <= limit:
                largest += 1
            bound = f"{name} = {limit}" if name else f"the {limit} allowed"
            raise ValueError(
                f"k_max = {k_max} with {n_rows} rows would enumerate {needed} {what}, more "
                f"than {bound} (what finishes in seconds); use a smaller k_max: at most "
                f"{largest} with {n_rows} rows")
    return n_classes


def multisets(n_types: int, k_max: int):
    """Yield every class with at most ``k_max`` columns as a tuple of type indices."""
    # combinations_with_replacement yields non-decreasing type indices, and the
    # types are already in left-ordered order: each tuple is a canonical class.
    for k in range(k_max + 1):
        yield from itertools.combinations_with_replacement(range(n_types), k)


@lru_cache(maxsize=16)
def class_table(n_rows: int, k_max: int, beta: float, discount: float = 0.0):
    """Counts, ``K+``, ``Z Z^T`` and ``log P([Z] | alpha=1, beta, d)`` of every class.

    The prior is :func:`ibp_lab.models.prior.log_prior`'s formula evaluated for all
    classes at once from their count vectors ``c`` (``c_t`` columns of type
    ``t``, which ``m_t`` rows own)::

        K+ log beta - sum_t log c_t! - H + sum_t c_t log B(m_t, N - m_t + beta)

    at ``alpha = 1`` (``H = sum_{i=1}^N beta / (beta + i - 1)``). Calling
    ``log_prior`` once per class would cost about 75 microseconds each, seconds
    for the 10^5 classes of ``k_max = 14``; the tests check that both agree on
    every class. Cached: the table depends neither on the data nor on alpha.

    With a discount ``d > 0`` (the three-parameter IBP) each column of type ``t``
    contributes ``log Gamma(1 + beta) - log Gamma(1 - d) - log Gamma(beta + d) +
    log Gamma(m_t - d) + log Gamma(N - m_t + beta + d) - log Gamma(N + beta)`` and
    ``H`` is :func:`ibp_lab._hyper.stable_harmonic`; at ``d = 0`` this is the formula
    above (``Gamma(1 + beta) / Gamma(beta) = beta``), which is kept for ``d = 0`` so that
    the two-parameter numbers do not move.
    """
    types = column_types(n_rows)
    n_types = types.shape[1]
    counts = np.array(
        [np.bincount(np.asarray(combo, dtype=np.int64), minlength=n_types)
         for combo in multisets(n_types, k_max)],
        dtype=np.int64,
    ).reshape(-1, n_types)
    k_plus = counts.sum(axis=1)
    m = types.sum(axis=0).astype(np.float64)
    if discount == 0.0:
        log_beta_fn = gammaln(m) + gammaln(n_rows - m + beta) - gammaln(n_rows + beta)
        log_prior_at_1 = (k_plus * np.log(beta) - gammaln(counts + 1.0).sum(axis=1)
                          - harmonic(n_rows, beta)
                          + counts @ log_beta_fn)
    else:
        log_column = (gammaln(1.0 + beta) - gammaln(1.0 - discount) - gammaln(beta + discount)
                      + gammaln(m - discount) + gammaln(n_rows - m + beta + discount)
                      - gammaln(n_rows + beta))
        log_prior_at_1 = (counts @ log_column - gammaln(counts + 1.0).sum(axis=1)
                          - stable_harmonic(n_rows, beta, discount))
    outer = np.einsum("it,jt->tij", types, types).astype(np.float64)  # z_t z_t^T per type
    gram = np.einsum("ct,tij->cij", counts.astype(np.float64), outer)
    # Many classes share Z Z^T and hence their likelihood: evaluate it once per distinct Z Z^T.
    unique_gram, gram_index = np.unique(gram.reshape(len(counts), -1), axis=0, return_inverse=True)
    unique_gram = unique_gram.reshape(-1, n_rows, n_rows)
    gram_index = gram_index.ravel()
    for array in (counts, k_plus, log_prior_at_1, unique_gram, gram_index):
        array.setflags(write=False)
    return counts, k_plus, log_prior_at_1, unique_gram, gram_index


def gaussian_loglik(X: np.ndarray, gram: np.ndarray, sigma_x: float, sigma_a: float) -> np.ndarray:
    """``sum_d log Normal(x_d; 0, sigma_a^2 G + sigma_x^2 I)`` for a stack of ``G``."""
    n_rows, n_dims = X.shape
    cov = sigma_a**2 * gram + sigma_x**2 * np.eye(n_rows)
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"the covariance sigma_a^2 Z Z^T + sigma_x^2 I is numerically singular: "
            f"sigma_x / sigma_a = {sigma_x / sigma_a:.3g} is too small; use a larger sigma_x"
        ) from None
    log_det = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    solved = np.linalg.solve(chol, np.broadcast_to(X, (len(gram), n_rows, n_dims)))
    quad = np.sum(solved**2, axis=(1, 2))
    return -0.5 * (n_rows * n_dims * np.log(2 * np.pi) + n_dims * log_det + quad)
