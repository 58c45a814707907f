"""The linear-Gaussian latent feature model, with its feature images integrated out.

The model (Griffiths & Ghahramani 2005, 2011)::

    X = Z A + E,    a_kd ~ Normal(0, sigma_a^2),    e_nd ~ Normal(0, sigma_x^2)

``X`` is ``(N, D)`` data, ``Z`` the ``(N, K)`` binary feature matrix and row
``k`` of ``A`` the image of feature ``k``. Because ``A`` enters linearly and is
Gaussian, it can be integrated out: every column ``x_d`` of ``X`` is
independently ``Normal(0, sigma_a^2 Z Z^T + sigma_x^2 I)``. With
``M = Z^T Z + (sigma_x / sigma_a)^2 I`` the same density reads (G & G 2011,
eq. 26)::

    log p(X | Z) = - N D / 2 log(2 pi) - (N - K) D log sigma_x - K D log sigma_a
                   - D / 2 log |M| - tr(X^T (I - Z M^-1 Z^T) X) / (2 sigma_x^2)

which costs a ``K x K`` factorisation instead of an ``N x N`` one.

- :func:`collapsed_loglik`: ``log p(X | Z, sigma_x, sigma_a)``.
- :func:`feature_posterior`: the Gaussian posterior of ``A`` given ``Z``.
- :func:`sample_features`: one draw of ``A`` from that posterior (the uncollapsed samplers'
  step, :mod:`ibp_lab.inference.uncollapsed`).
- :func:`simulate`: draw ``Z`` from the IBP, then ``A`` and ``X``.

All-zero columns of ``Z`` are allowed and harmless: they add nothing to the
likelihood (the formula is exact for any ``K``), which is why the infinite
model's likelihood only involves the features some row owns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_solve

from ibp_lab import _hyper, _kernel
from ibp_lab._checks import BinaryMatrix, Count, DataMatrix, Generator, Joint, Positive, validated

__all__ = ["collapsed_loglik", "feature_posterior", "sample_features", "simulate", "SimulatedData",
           "simulate_factor_analysis", "SimulatedStream"]

# Limits shared with the samplers (ibp_lab._hyper); MIN_SCALE stays importable from here.
MIN_SCALE = _hyper.MIN_SCALE
# Largest n * d that simulate draws (800 MB of float64).
_MAX_SIMULATED_ENTRIES = 10**8


def _check_model_fit(X, Z, sigma_x, sigma_a) -> None:
    _hyper.check_scales(X, sigma_x, sigma_a)
    if Z.shape[1] > _hyper.MAX_FEATURES:
        # M is K x K: a wide Z would ask for K^2 memory before any arithmetic
        raise ValueError(
            f"Z must have at most MAX_FEATURES = {_hyper.MAX_FEATURES} columns, got {Z.shape[1]}"
        )


#: The model's inputs, checked alike by every function of the model.
_MODEL_INPUTS = dict(X=DataMatrix(), Z=BinaryMatrix(rows_of="X"), sigma_x=Positive(),
                     sigma_a=Positive(),
                     fit=Joint(_check_model_fit, "X", "Z", "sigma_x", "sigma_a"))


def _check_simulated_size(n: int, d: int) -> None:
    if n * d > _MAX_SIMULATED_ENTRIES:
        # refused before anything is drawn: n * d floats would not fit in memory
        raise ValueError(
            f"n * d must be <= {_MAX_SIMULATED_ENTRIES:g} entries of X, got {n} * {d} = {n * d:g}"
        )


#: What every simulator checks before its first draw (alpha and beta: sample_ibp's door).
_FEATURE_DRAWS = dict(n=Count(minimum=1), d=Count(minimum=1),
                      size=Joint(_check_simulated_size, "n", "d"), sigma_a=Positive(),
                      rng=Generator())


@validated(**_MODEL_INPUTS)
def collapsed_loglik(X, Z, sigma_x: float, sigma_a: float) -> float:
    """Log-likelihood ``log p(X | Z, sigma_x, sigma_a)`` with the features integrated out.

    Uses a Cholesky factor ``L`` of ``M = Z^T Z + (sigma_x / sigma_a)^2 I``:
    ``log |M| = 2 sum log diag(L)`` and the trace term is
    ``||X||^2 - ||L^-1 Z^T X||^2``, so no inverse is ever formed.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data, finite.
    Z : array_like
        ``(N, K)`` binary feature matrix; ``K = 0`` is allowed (then every
        entry of ``X`` is independent ``Normal(0, sigma_x^2)``).
    sigma_x : float
        Noise standard deviation, > 0.
    sigma_a : float
        Prior standard deviation of the feature images, > 0.

    Returns
    -------
    float

    Examples
    --------
    With no features, the data are pure noise:

    >>> from scipy.stats import norm
    >>> X = np.array([[0.5, -1.0], [2.0, 0.0]])
    >>> bool(np.isclose(collapsed_loglik(X, np.zeros((2, 0)), 0.7, 1.0),
    ...                 norm(0, 0.7).logpdf(X).sum()))
    True

    One shared feature makes the two rows correlated; the same number comes from
    the ``N x N`` Gaussian with covariance ``Z Z^T + 0.49 I``:

    >>> round(collapsed_loglik(X, [[1], [1]], 0.7, 1.0), 4)
    -6.2608
    """
    Zf = Z.astype(np.float64)
    return _kernel.checked_loglik_from_stats(Zf.T @ Zf, Zf.T @ X, float(np.sum(X * X)), *X.shape, sigma_x, sigma_a)


@validated(**_MODEL_INPUTS)
def feature_posterior(X, Z, sigma_x: float, sigma_a: float) -> tuple[np.ndarray, np.ndarray]:
    """Posterior of the feature images ``A`` given ``Z``: mean and covariance.

    Each column ``a_d`` of ``A`` (one pixel across all features) has the same
    posterior covariance, and the columns are independent::

        a_d | X, Z ~ Normal(M^-1 Z^T x_d, sigma_x^2 M^-1),
        M = Z^T Z + (sigma_x / sigma_a)^2 I

    so the returned ``cov`` (``K x K``) is shared by every one of the ``D``
    dimensions. Computed with a Cholesky factor of ``M``.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.

    Returns
    -------
    mean : numpy.ndarray
        ``(K, D)`` posterior mean; row ``k`` is feature ``k``'s image.
    cov : numpy.ndarray
        ``(K, K)`` posterior covariance of the features, the same for each of
        the ``D`` dimensions.

    Examples
    --------
    One feature owned by both rows: its mean is the shrunk average of the rows.

    >>> mean, cov = feature_posterior([[1.0, 2.0], [3.0, 2.0]], [[1], [1]], 1.0, 1.0)
    >>> mean  # (x_1 + x_2) / (2 + 1)
    array([[1.33333333, 1.33333333]])
    >>> cov
    array([[0.33333333]])
    """
    k = Z.shape[1]
    if k == 0:
        return np.zeros((0, X.shape[1])), np.zeros((0, 0))
    L = _kernel.cholesky_of_m(Z, sigma_x, sigma_a)
    factor = (L, True)
    mean = cho_solve(factor, Z.T.astype(np.float64) @ X)
    cov = sigma_x**2 * cho_solve(factor, np.eye(k))
    cov = 0.5 * (cov + cov.T)  # exactly symmetric, for samplers that factor it again
    return mean, cov


@validated(**_MODEL_INPUTS, rng=Generator())
def sample_features(X, Z, rng: np.random.Generator, *, sigma_x: float,
                    sigma_a: float) -> np.ndarray:
    """One draw of the feature images ``A`` from their posterior given ``Z`` (and ``X``).

    With ``M = Z^T Z + (sigma_x / sigma_a)^2 I = L L^T`` (:func:`feature_posterior`),
    ``A = M^-1 Z^T X + sigma_x L^-T E`` with ``E`` a ``(K, D)`` matrix of standard
    normals: each column then has covariance ``sigma_x^2 L^-T L^-1 = sigma_x^2 M^-1``.
    ``K * D`` normals are drawn, nothing else.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix (all-zero columns get a draw from the prior).
    rng : numpy.random.Generator
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.

    Returns
    -------
    numpy.ndarray
        ``(K, D)`` feature images.

    Examples
    --------
    Many draws average to the posterior mean:

    >>> X, Z = [[1.0, 2.0], [3.0, 2.0]], [[1], [1]]
    >>> rng = np.random.default_rng(0)
    >>> draws = [sample_features(X, Z, rng, sigma_x=1.0, sigma_a=1.0) for _ in range(4000)]
    >>> np.round(np.mean(draws, axis=0), 1)  # feature_posterior's mean, 4/3 each
    array([[1.3, 1.3]])
    """
    return _kernel.draw_posterior_features(X, Z, sigma_x, sigma_a, rng)


class SimulatedData(NamedTuple):
    """Data drawn from the model, and the truth behind them (unpacks as ``X, Z, A``)."""

    X: np.ndarray  #: ``(n, d)`` data
    Z: np.ndarray  #: ``(n, K+)`` ``int8`` feature ownership, columns in order of creation
    A: np.ndarray  #: ``(K+, d)`` true feature images


@validated(sigma_x=Positive(), **_FEATURE_DRAWS)
def simulate(
    n: int,
    rng: np.random.Generator,
    *,
    alpha: float,
    sigma_x: float,
    sigma_a: float,
    d: int,
    beta: float = 1.0,
) -> SimulatedData:
    """Simulate the whole generative model: ``Z`` from the IBP, then ``A`` and ``X``.

    The one simulator of the linear-Gaussian model (the streaming chapter's factor
    analysis adds weights to it: :func:`simulate_factor_analysis`).
    Random numbers are drawn in this order: ``Z``, then ``A``, then the noise.

    Parameters
    ----------
    n : int
        Number of data points (rows), >= 1.
    rng : numpy.random.Generator
        Source of randomness.
    alpha : float
        IBP mass parameter, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    d : int
        Dimension of each data point, >= 1.
    beta : float, optional
        IBP concentration, > 0.

    Returns
    -------
    SimulatedData
        ``(X, Z, A)``: ``(n, d)`` data ``X = Z A + noise``, the ``(n, K+)`` ``int8``
        feature matrix from :func:`ibp_lab.models.prior.sample_ibp` and the ``(K+, d)``
        feature images.

    Examples
    --------
    >>> X, Z, A = simulate(10, np.random.default_rng(0), alpha=2.0, sigma_x=0.1,
    ...                    sigma_a=1.0, d=3)
    >>> X.shape, Z.shape[0], A.shape == (Z.shape[1], 3)
    ((10, 3), 10, True)
    """
    Z, A = _draw_features(n, rng, alpha=alpha, sigma_a=sigma_a, d=d, beta=beta)
    return SimulatedData(Z @ A + rng.normal(0.0, sigma_x, size=(n, d)), Z, A)


def _draw_features(n, rng, *, alpha, sigma_a, d, beta):
    """``Z ~ IBP(alpha, beta)`` and ``A``: the first two draws of every simulator.

    ``n``, ``d``, ``sigma_a`` and ``rng`` arrive checked (the simulators' constraints
    :data:`_FEATURE_DRAWS`); ``alpha`` and ``beta`` are checked by
    :func:`ibp_lab.models.prior.sample_ibp`, before anything is drawn.
    """
    from ibp_lab.models.prior import sample_ibp  # imported here: prior is only needed to simulate

    Z = sample_ibp(alpha, n, rng, beta=beta)
    return Z, rng.normal(0.0, sigma_a, size=(Z.shape[1], d))


class SimulatedStream(NamedTuple):
    """Observations and the truth behind them."""

    X: np.ndarray  #: ``(n, d)`` observations
    Z: np.ndarray  #: ``(n, K)`` ``int8`` feature ownership, columns in order of creation
    A: np.ndarray  #: ``(K, d)`` true features
    W: np.ndarray  #: ``(n, K)`` weights


@validated(sigma_x=Positive(), sigma_w=Positive(), **_FEATURE_DRAWS)
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
    :func:`simulate`, in the same order), then weights
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
    Z, A = _draw_features(n, rng, alpha=alpha, sigma_a=sigma_a, d=d, beta=beta)
    W = sigma_w * rng.standard_normal(Z.shape)
    X = (Z * W) @ A + rng.normal(0.0, sigma_x, size=(n, d))
    return SimulatedStream(X, Z, A, W)
