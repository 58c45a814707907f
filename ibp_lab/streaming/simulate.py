"""Data drawn from the streaming models, and matching learned features to true ones."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special
from scipy.optimize import linear_sum_assignment

from ibp_lab._checks import (
    check_count,
    check_flag,
    check_positive,
    check_real_array,
    check_rng,
)
from ibp_lab.prior import sample_ibp

__all__ = ["SimulatedStream", "simulate_linear_gaussian", "match_features"]


class SimulatedStream(NamedTuple):
    """Observations and the truth behind them."""

    X: np.ndarray  #: ``(n, D)`` observations
    Z: np.ndarray  #: ``(n, K)`` ``int8`` feature ownership, columns in order of creation
    A: np.ndarray  #: ``(K, D)`` true features
    W: np.ndarray  #: ``(n, K)`` weights (all ones for the linear-Gaussian model)


def simulate_linear_gaussian(
    n: int,
    dim: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    beta: float = 1.0,
    sigma_x: float = 0.1,
    sigma_a: float = 1.0,
    sigma_w: float | None = None,
) -> SimulatedStream:
    """Draw ``n`` observations from the linear-Gaussian (or factor-analysis) model.

    ``Z ~ IBP(alpha, beta)`` (:func:`ibp_lab.prior.sample_ibp`), ``A_k ~ N(0, sigma_a^2 I)``,
    and ``x_n = sum_k z_nk w_nk A_k + N(0, sigma_x^2 I)`` with ``w_nk = 1``, or
    ``w_nk ~ N(0, sigma_w^2)`` when ``sigma_w`` is given (factor analysis).

    Parameters
    ----------
    n, dim : int
        Number of observations and their dimension, each >= 1.
    alpha : float
        IBP mass, > 0.
    rng : numpy.random.Generator
    beta, sigma_x, sigma_a : float, optional
        IBP concentration, noise and feature scales, each > 0.
    sigma_w : float, optional
        Weight scale for factor analysis, > 0.

    Returns
    -------
    SimulatedStream
        ``(X, Z, A, W)``.

    Examples
    --------
    >>> X, Z, A, W = simulate_linear_gaussian(100, 5, 2.0, np.random.default_rng(0))
    >>> X.shape, Z.shape[0], A.shape[1], bool(np.all(W == 1))
    ((100, 5), 100, 5, True)
    """
    n = check_count("n", n, minimum=1)
    dim = check_count("dim", dim, minimum=1)
    alpha = check_positive("alpha", alpha)
    rng = check_rng(rng)
    beta = check_positive("beta", beta)
    sigma_x = check_positive("sigma_x", sigma_x)
    sigma_a = check_positive("sigma_a", sigma_a)
    from ibp_lab.streaming.model import MAX_ENTRIES  # the estimator's bound on allocations

    expected = alpha * beta * (special.digamma(beta + n) - special.digamma(beta))
    if n * dim > MAX_ENTRIES or expected * (n + dim) > MAX_ENTRIES:
        raise ValueError(
            f"n = {n}, dim = {dim} and about {expected:.3g} features would need more than "
            f"{MAX_ENTRIES} numbers (MAX_ENTRIES): lower n, dim or alpha"
        )
    Z = sample_ibp(alpha, n, rng, beta=beta)
    A = sigma_a * rng.standard_normal((Z.shape[1], dim))
    if sigma_w is None:
        W = np.ones(Z.shape)
    else:
        W = check_positive("sigma_w", sigma_w) * rng.standard_normal(Z.shape)
    X = (Z * W) @ A + sigma_x * rng.standard_normal((n, dim))
    return SimulatedStream(X, Z, A, W)


def match_features(learned, true, *, absolute: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Pair learned features with true ones so that the total correlation is largest.

    Feature labels are arbitrary, so learned and true features are compared after an
    optimal one-to-one matching (the Hungarian algorithm,
    :func:`scipy.optimize.linear_sum_assignment`) on their Pearson correlations.

    Parameters
    ----------
    learned : array_like
        ``(K_learned, D)`` features.
    true : array_like
        ``(K_true, D)`` features.
    absolute : bool, optional
        Match on ``|correlation|`` (factor analysis: a feature and its negative are the
        same feature with the weight's sign flipped).

    Returns
    -------
    correlation : numpy.ndarray
        ``(K_true,)`` correlation of each true feature with its match. If there are fewer
        learned features than true ones, a true feature left without a match gets 0, as
        if matched to a blank (constant) feature, which
        :func:`ibp_lab.summaries.feature_correlations` correlates 0 with everything.
    match : numpy.ndarray
        ``(K_true,)`` index of the matched learned feature (-1 if none).

    Examples
    --------
    >>> true = np.eye(3)
    >>> corr, match = match_features(true[[2, 0, 1]] + 0.01, true)
    >>> match.tolist(), bool(np.all(corr > 0.99))
    ([1, 2, 0], True)
    >>> corr, match = match_features(true[:1], true)  # one learned feature for three true
    >>> corr.round(2).tolist(), match.tolist()
    ([1.0, 0.0, 0.0], [0, -1, -1])
    """
    from ibp_lab.summaries import feature_correlations  # one definition of feature correlation

    absolute = check_flag("absolute", absolute)
    learned = np.atleast_2d(check_real_array("learned", learned))
    true = np.atleast_2d(check_real_array("true", true))
    for name, arr in (("learned", learned), ("true", true)):
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (features x D), got {arr.ndim} dimension(s)")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
    if learned.shape[1] != true.shape[1]:
        raise ValueError(
            f"learned and true features must have the same dimension, got {learned.shape[1]} "
            f"and {true.shape[1]}"
        )
    corr = feature_correlations(true, learned)
    score = np.abs(corr) if absolute else corr
    # 0, not NaN, for an unmatched true feature: a NaN would spread silently through a
    # mean or a min, while 0 reads as "explained by nothing" and match = -1 says why.
    correlation = np.zeros(true.shape[0])
    match = np.full(true.shape[0], -1)
    if learned.shape[0]:
        rows, cols = linear_sum_assignment(score, maximize=True)
        correlation[rows] = score[rows, cols]
        match[rows] = cols
    return correlation, match
