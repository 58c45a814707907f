"""Data drawn from the factor-analysis model of the streaming chapter.

The linear-Gaussian model has one simulator, :func:`ibp_lab.linear_gaussian.simulate`;
factor analysis draws the same ``Z`` and ``A`` (:func:`ibp_lab.linear_gaussian._draw_features`)
and then a weight for every owned feature. Learned features are compared with the true
ones by :func:`ibp_lab.summaries.match_features` (``absolute=True`` for factor analysis,
whose features are defined up to sign).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ibp_lab._checks import check_positive
from ibp_lab.linear_gaussian import _draw_features

__all__ = ["SimulatedStream", "simulate_factor_analysis"]


class SimulatedStream(NamedTuple):
    """Observations and the truth behind them."""

    X: np.ndarray  #: ``(n, d)`` observations
    Z: np.ndarray  #: ``(n, K)`` ``int8`` feature ownership, columns in order of creation
    A: np.ndarray  #: ``(K, d)`` true features
    W: np.ndarray  #: ``(n, K)`` weights


def simulate_factor_analysis(
    n: int,
    rng: np.random.Generator,
    *,
    alpha: float,
    sigma_x: float,
    sigma_a: float,
    sigma_w: float,
    d: int,
    beta: float = 1.0,
) -> SimulatedStream:
    """Draw ``n`` observations from the factor-analysis model with an IBP prior.

    ``Z ~ IBP(alpha, beta)``, ``A_k ~ N(0, sigma_a^2 I)`` (the draws of
    :func:`ibp_lab.linear_gaussian.simulate`, in the same order), then weights
    ``w_nk ~ N(0, sigma_w^2)`` and ``x_n = sum_k z_nk w_nk A_k + N(0, sigma_x^2 I)``.

    Parameters
    ----------
    n, d : int
        Number of observations and their dimension, each >= 1.
    rng : numpy.random.Generator
    alpha, beta : float
        IBP mass and concentration, > 0.
    sigma_x, sigma_a, sigma_w : float
        Noise, feature and weight scales, each > 0.

    Returns
    -------
    SimulatedStream
        ``(X, Z, A, W)``.

    Examples
    --------
    >>> X, Z, A, W = simulate_factor_analysis(100, np.random.default_rng(0), alpha=2.0,
    ...                                       sigma_x=0.1, sigma_a=1.0, sigma_w=1.0, d=5)
    >>> X.shape, Z.shape[0], A.shape[1], W.shape == Z.shape
    ((100, 5), 100, 5, True)
    """
    sigma_x = check_positive("sigma_x", sigma_x)  # every check before the first draw
    sigma_w = check_positive("sigma_w", sigma_w)
    Z, A = _draw_features(n, rng, alpha=alpha, sigma_a=sigma_a, d=d, beta=beta)
    W = sigma_w * rng.standard_normal(Z.shape)
    X = (Z * W) @ A + rng.normal(0.0, sigma_x, size=(n, d))
    return SimulatedStream(X, Z, A, W)
