"""Held-out prediction: complete the bottom half of a digit from its top half.

For a test digit whose observed pixels (by default the top four rows of the
8 x 6 image) are seen, every model gives a predictive density of the hidden
pixels (the bottom four rows) and a predicted mean. The score of a model on a
test set is the log predictive density per digit, ``log p(bottom | top)``, and
the root mean squared error of the predicted mean.

Models:

- :class:`FullGaussian` and :class:`PPCA`: a Gaussian over all pixels, fitted
  to the training digits; the conditional of the bottom given the top is Gaussian
  in closed form (:func:`gaussian_conditional`).
- :func:`ibp_gibbs_heldout`: posterior draws of ``Z`` from the collapsed Gibbs
  sampler. For each draw, the features are integrated out given ``Z`` and the
  test digit's own features (existing ones and new dishes) are sampled given its
  top half by a Gibbs sampler, and ``p(bottom | top)`` of every draw is estimated
  by the average of ``p(bottom | features)`` over its states: a consistent
  estimate (it converges as the number of sweeps grows), not an unbiased one
  (the sampler starts from no features, not from the conditional law).
- :func:`finite_feature_heldout`: any model with finitely many features whose
  images are known (or Gaussian) in each draw, such as the truncated PyMC model
  or the R-IBP variational posterior: the sum over the ``2^K`` feature patterns
  is exact. Its draws count equally (``draw_weights="equal"``) or each in proportion
  to how well it explains the observed pixels (``"observed"``, the consistent
  estimate of the conditional density of the draws' mixture).

Averages over posterior draws are averages of *densities* (a log-mean-exp), not
of log-densities: the predictive density is a mixture over draws. The log of an
average of densities is itself biased low as an estimate of the log of its limit
(Jensen's inequality, ``E log Y <= log E Y``); the bias vanishes as the number of
draws grows.

:func:`chain_draws` turns a :class:`ibp_lab.inference.chains.ChainResult` into the draws
that :func:`ibp_gibbs_heldout` takes, and :func:`pool_heldout` combines the
scores of several independent chains into the score of their pooled draws.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from functools import partial

import numpy as np
from scipy.special import logsumexp

from ibp_lab._checks import (
    MAX_PARAMETER,
    MIN_PARAMETER,
    Checked,
    Count,
    DataMatrix,
    Generator,
    Joint,
    Optional,
    check_count,
    check_data_matrix,
    check_positive,
    check_real_array,
    check_size,
    validated,
)
from ibp_lab._hyper import MAX_FEATURES, check_feature_matrix, check_hyperparameters, check_scales

__all__ = [
    "split_top_bottom",
    "HeldoutResult",
    "gaussian_conditional",
    "FullGaussian",
    "PPCA",
    "finite_feature_heldout",
    "finite_factor_logpdf",
    "ibp_gibbs_heldout",
    "compare_heldout",
    "chain_draws",
    "pool_heldout",
]

_LOG_2PI = float(np.log(2 * np.pi))
#: Most features :func:`finite_feature_heldout` sums over exactly (2^K patterns per digit;
#: at 18, well under a second per draw for 40 digits of 24 pixels).
MAX_PATTERN_FEATURES = 18
# Most (draw, digit, pattern) terms finite_feature_heldout evaluates: beyond it a call
# would run for hours; refused up front rather than left to hang.
_MAX_PATTERN_TERMS = 2 * 10**9
# Most entries of one block of (digit, pattern, pixel) residuals held in memory at once.
_BLOCK_ENTRIES = 2**22
# Most log densities ibp_gibbs_heldout keeps (draws x kept sweeps x digits), 8 bytes each.
_MAX_HELDOUT_TERMS = 5 * 10**7
# Largest sum((x / sigma)^2) over a digit's residuals: beyond it the densities overflow.
_MAX_SCALED_RESIDUAL = 1e250


def split_top_bottom(shape: tuple[int, int] = (8, 6), *, n_top_rows: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the observed (top rows) and hidden (remaining rows) pixels of a flattened image.

    Examples
    --------
    >>> top, bottom = split_top_bottom((8, 6))
    >>> top.size, bottom.size, int(bottom[0])
    (24, 24, 24)
    """
    # anything without a length (None, a number) is refused here, not by len()
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise TypeError(f"shape must be a pair (rows, columns) of integers, got {shape!r}")
    if len(shape) != 2:
        raise ValueError(f"shape must be (rows, columns), got {shape!r}")
    n_rows = check_count("shape[0]", shape[0], minimum=2)
    n_cols = check_count("shape[1]", shape[1], minimum=1)
    n_top_rows = check_count("n_top_rows", n_top_rows, minimum=1, maximum=n_rows - 1)
    cut = n_top_rows * n_cols
    return np.arange(cut), np.arange(cut, n_rows * n_cols)


def _index_array(name: str, value) -> np.ndarray:
    try:
        return np.asarray(value)
    except ValueError:  # ragged nested lists
        raise ValueError(f"{name} must be a non-empty 1-D array of pixel indices") from None


def _check_split(X, observed, hidden, *, name: str = "X"):
    """The digits and the two pixel index sets; ``name`` is the caller's name for ``X``."""
    X = check_data_matrix(name, X)
    if np.abs(X).max() > 1e50:
        # squared residuals would overflow and the log density become -inf
        raise ValueError(
            f"{name} is too large for a density (max |x| = {np.abs(X).max():.3g}); rescale it")
    observed = _index_array("observed", observed)
    hidden = _index_array("hidden", hidden)
    for name, idx in (("observed", observed), ("hidden", hidden)):
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"{name} must be a non-empty 1-D array of pixel indices")
        if idx.min() < 0 or idx.max() >= X.shape[1]:
            raise ValueError(f"{name} indices must lie in [0, {X.shape[1] - 1}]")
    for name, idx in (("observed", observed), ("hidden", hidden)):
        if np.unique(idx).size != idx.size:
            raise ValueError(f"{name} must not repeat a pixel index")
    if np.intersect1d(observed, hidden).size:
        raise ValueError("observed and hidden pixels must not overlap")
    return X, observed, hidden


def _check_training(X) -> np.ndarray:
    X = check_data_matrix("X", X, min_rows=2)
    if np.abs(X).max() > 1e50:
        # the sample covariance would overflow
        raise ValueError(f"X is too large to fit (max |x| = {np.abs(X).max():.3g}); rescale it")
    return X


@dataclass(frozen=True)
class HeldoutResult:
    """Per-digit held-out scores of one model.

    Attributes
    ----------
    log_density : numpy.ndarray
        ``(n,)`` log predictive density of each digit's hidden pixels given the
        observed ones.
    mean : numpy.ndarray
        ``(n, h)`` predicted mean of the hidden pixels.
    """

    log_density: np.ndarray
    mean: np.ndarray

    def rmse(self, X_hidden) -> float:
        """Root mean squared error of the predicted mean against the true hidden pixels."""
        X_hidden = check_real_array("X_hidden", X_hidden)
        if X_hidden.shape != self.mean.shape:
            raise ValueError(f"X_hidden must have shape {self.mean.shape}, got {X_hidden.shape}")
        if not np.all(np.isfinite(X_hidden)) or (X_hidden.size and np.abs(X_hidden).max() > 1e50):
            raise ValueError("X_hidden must be finite, with |x| <= 1e50")
        err = X_hidden - self.mean
        with np.errstate(over="ignore"):
            rmse = float(np.sqrt(np.mean(err**2)))
        if not np.isfinite(rmse):
            # squares overflowed: scale by the largest error first (same value, no overflow)
            top = float(np.max(np.abs(err)))
            rmse = top * float(np.sqrt(np.mean((err / top) ** 2))) if np.isfinite(top) else top
        return rmse


def gaussian_conditional(mean, cov, X, observed, hidden) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the hidden pixels given the observed ones, for a Gaussian.

    For ``x ~ Normal(mean, cov)``: ``x_h | x_o ~ Normal(mean_h + C_ho C_oo^-1
    (x_o - mean_o), C_hh - C_ho C_oo^-1 C_oh)``, computed with a Cholesky factor
    of ``C_oo``.

    Parameters
    ----------
    mean : array_like
        ``(D,)`` mean.
    cov : array_like
        ``(D, D)`` covariance, symmetric positive definite on the observed block.
    X : array_like
        ``(n, D)`` digits (only the observed pixels are read).
    observed, hidden : array_like of int
        Pixel indices.

    Returns
    -------
    cond_mean : numpy.ndarray
        ``(n, h)`` conditional means.
    cond_cov : numpy.ndarray
        ``(h, h)`` conditional covariance (the same for every digit).

    Examples
    --------
    >>> m, c = gaussian_conditional([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], [[2.0, 0.0]], [0], [1])
    >>> m, c
    (array([[1.]]), array([[0.75]]))
    """
    X, observed, hidden = _check_split(X, observed, hidden)
    mean = check_real_array("mean", mean)
    cov = check_real_array("cov", cov)
    D = X.shape[1]
    if mean.shape != (D,) or cov.shape != (D, D):
        raise ValueError(f"mean must have shape ({D},) and cov ({D}, {D}), got {mean.shape} and {cov.shape}")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise ValueError("mean and cov must be finite")
    # a covariance is symmetric; the formulas below read only some of its blocks, so an
    # asymmetric matrix would otherwise give an answer for a Gaussian that does not exist
    # (rounding-level asymmetry, as from W @ W.T, is allowed)
    scale = float(np.abs(cov).max())
    if float(np.abs(cov - cov.T).max()) > 1e-10 * max(scale, np.finfo(float).tiny):
        raise ValueError("cov must be symmetric (a covariance matrix), got cov != cov.T")
    c_oo = cov[np.ix_(observed, observed)]
    c_ho = cov[np.ix_(hidden, observed)]
    try:
        L = np.linalg.cholesky(c_oo)
    except np.linalg.LinAlgError as exc:
        raise ValueError("cov must be positive definite on the observed pixels") from exc
    gain = np.linalg.solve(L.T, np.linalg.solve(L, c_ho.T)).T  # C_ho C_oo^-1
    cond_mean = mean[hidden] + (X[:, observed] - mean[observed]) @ gain.T
    cond_cov = cov[np.ix_(hidden, hidden)] - gain @ c_ho.T
    return cond_mean, 0.5 * (cond_cov + cond_cov.T)


def _gaussian_heldout(mean, cov, X, observed, hidden) -> HeldoutResult:
    X, observed, hidden = _check_split(X, observed, hidden)  # lists of indices become arrays
    cond_mean, cond_cov = gaussian_conditional(mean, cov, X, observed, hidden)
    try:
        L = np.linalg.cholesky(cond_cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            "the covariance of the hidden pixels given the observed ones is numerically "
            "singular (a hidden pixel is fixed by the observed ones); use a larger ridge"
        ) from None
    white = np.linalg.solve(L, (X[:, hidden] - cond_mean).T)
    log_det = 2.0 * np.sum(np.log(np.diag(L)))
    log_density = -0.5 * (hidden.size * _LOG_2PI + log_det + np.sum(white**2, axis=0))
    return HeldoutResult(log_density, cond_mean)


class FullGaussian:
    """A Gaussian with a full covariance matrix, fitted by maximum likelihood.

    Parameters
    ----------
    ridge : float, optional
        Added to the diagonal of the covariance so that nearly blank pixels do not
        make it singular.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> top, bottom = np.array([0, 1]), np.array([2, 3])
    >>> FullGaussian().fit(X).heldout(X[:5], top, bottom).log_density.shape
    (5,)
    """

    def __init__(self, *, ridge: float = 1e-4):
        self.ridge = check_positive("ridge", ridge, allow_zero=True)

    def fit(self, X) -> "FullGaussian":
        X = _check_training(X)
        mean = X.mean(axis=0)
        covariance = np.cov(X, rowvar=False, bias=True) + self.ridge * np.eye(X.shape[1])
        try:
            np.linalg.cholesky(covariance)
        except np.linalg.LinAlgError:
            # refused here, not later in heldout: a constant pixel with ridge = 0, say
            raise ValueError(
                f"the fitted covariance is singular with ridge = {self.ridge:g} (a pixel is "
                "constant or a linear combination of others); use ridge > 0"
            ) from None
        self.mean_, self.covariance_ = mean, covariance
        return self

    def heldout(self, X, observed, hidden) -> HeldoutResult:
        """Score the hidden pixels of ``X`` given the observed ones."""
        if not hasattr(self, "mean_"):
            raise ValueError("this FullGaussian is not fitted yet: call fit(X) first")
        return _gaussian_heldout(self.mean_, self.covariance_, X, observed, hidden)


class PPCA:
    """Probabilistic PCA (Tipping & Bishop) with ``n_components`` latent dimensions.

    The maximum-likelihood fit is closed-form: with the eigenvalues
    ``l_1 >= ... >= l_D`` of the sample covariance, the noise variance is the
    mean of the discarded ones and ``W = U_q (L_q - s^2 I)^{1/2}``, so the model
    covariance is ``W W^T + s^2 I``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6))
    >>> model = PPCA(2).fit(X)
    >>> model.components_.shape, bool(model.noise_variance_ > 0)
    ((6, 2), True)
    """

    def __init__(self, n_components: int):
        self.n_components = check_count("n_components", n_components, minimum=1)

    def fit(self, X) -> "PPCA":
        X = _check_training(X)
        D = X.shape[1]
        if self.n_components >= D:
            raise ValueError(f"n_components must be < the number of pixels {D}, got {self.n_components}")
        self.mean_ = X.mean(axis=0)
        eigenvalues, eigenvectors = np.linalg.eigh(np.cov(X, rowvar=False, bias=True))
        eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
        q = self.n_components
        # floored relative to the largest variance too, so that W W^T + s^2 I stays
        # numerically positive definite at any scale of the data
        self.noise_variance_ = float(max(eigenvalues[q:].mean(), 1e-12, 1e-12 * eigenvalues[0]))
        scale = np.sqrt(np.maximum(eigenvalues[:q] - self.noise_variance_, 0.0))
        self.components_ = eigenvectors[:, :q] * scale
        self.covariance_ = self.components_ @ self.components_.T + self.noise_variance_ * np.eye(D)
        return self

    def heldout(self, X, observed, hidden) -> HeldoutResult:
        """Score the hidden pixels of ``X`` given the observed ones."""
        if not hasattr(self, "mean_"):
            raise ValueError("this PPCA is not fitted yet: call fit(X) first")
        return _gaussian_heldout(self.mean_, self.covariance_, X, observed, hidden)


def _log_mean_exp(log_values: np.ndarray, axis: int = 0) -> np.ndarray:
    return logsumexp(log_values, axis=axis) - np.log(log_values.shape[axis])


def _isotropic_logpdf(residual_sq: np.ndarray, variance: np.ndarray, n_dims: int) -> np.ndarray:
    return -0.5 * (n_dims * (_LOG_2PI + np.log(variance)) + residual_sq / variance)


#: How :func:`finite_feature_heldout` combines its draws (``draw_weights``).
DRAW_WEIGHTS = ("equal", "observed")


def _check_finite_model(X, probabilities, features, sigma_x, feature_variances):
    """Validate the draws of :func:`finite_feature_heldout`; returns them as float arrays."""
    probs = check_real_array("probabilities", probabilities)
    if probs.ndim == 1:
        probs = probs[None]
    if probs.ndim != 2 or probs.shape[0] == 0 or probs.shape[1] == 0:
        raise ValueError(
            "probabilities must be a 2-D (draws, features) array with at least one draw and "
            f"one feature, got shape {probs.shape}")
    S, K = probs.shape
    A = check_real_array("features", features)
    # (S, K, D) exactly: a 2-D array is ambiguous (one draw's K x D images, or S x D
    # images of one feature), so it is refused rather than guessed
    if A.ndim != 3:
        raise ValueError(
            f"features must be a 3-D (draws, features, pixels) array of shape ({S}, {K}, "
            f"{X.shape[1]}), got {A.ndim} dimension(s)")
    if A.shape != (S, K, X.shape[1]):
        raise ValueError(f"features must have shape ({S}, {K}, {X.shape[1]}), got {A.shape}")
    if K > MAX_PATTERN_FEATURES:
        raise ValueError(f"at most {MAX_PATTERN_FEATURES} features can be summed over exactly "
                         f"(2^K patterns), got K = {K}")
    if S * X.shape[0] * 2**K > _MAX_PATTERN_TERMS:
        raise ValueError(
            f"draws x digits x 2^K = {S} x {X.shape[0]} x {2**K} terms is more than "
            f"{_MAX_PATTERN_TERMS:g}; use fewer draws, digits or features"
        )
    if not np.all((probs >= 0) & (probs <= 1)):
        raise ValueError("probabilities must lie in [0, 1]")
    if isinstance(sigma_x, (bool, np.bool_)) or getattr(sigma_x, "dtype", None) == bool:
        raise TypeError("sigma_x must be a number or an array of numbers, not a bool")
    sx = check_real_array("sigma_x", sigma_x)
    if sx.ndim > 1 or sx.size not in (1, S):
        raise ValueError(f"sigma_x must be one number or one per draw ({S}), got shape {sx.shape}")
    sx = np.broadcast_to(sx.ravel(), (S,))
    for s, value in enumerate(sx):
        check_positive("sigma_x" if sx.size == 1 else f"sigma_x[{s}]", float(value))
    var_k = np.zeros((S, K)) if feature_variances is None else check_real_array(
        "feature_variances", feature_variances)
    if var_k.shape != (S, K) or np.any(var_k < 0) or not np.all(np.isfinite(var_k)) \
            or np.any(var_k > MAX_PARAMETER**2):
        raise ValueError(f"feature_variances must be a finite (S, K) = ({S}, {K}) array in "
                         f"[0, {MAX_PARAMETER**2:g}]")
    if not np.all(np.isfinite(A)):
        raise ValueError("features must be finite")
    # every residual x - z A is at most max|x| + sum_k |A_k| per pixel; with the smallest
    # variance sigma_x^2 that bounds the quadratic forms, which must not overflow
    with np.errstate(over="ignore"):
        reach = float(np.abs(X).max()) + float(np.abs(A).sum(axis=1).max())
    if not reach / float(sx.min()) <= np.sqrt(_MAX_SCALED_RESIDUAL / X.shape[1]):
        raise ValueError(
            f"the data or features are too large for sigma_x = {float(sx.min()):g}: the "
            "squared residuals over sigma_x^2 overflow; rescale the data and features"
        )
    return probs, A, sx, var_k


def _check_draw_weights(name: str, draw_weights) -> str:
    if not isinstance(draw_weights, str) or draw_weights not in DRAW_WEIGHTS:
        raise ValueError(f"{name} must be one of {DRAW_WEIGHTS}, got {draw_weights!r}")
    return draw_weights


@validated(split=Joint(_check_split, "X", "observed", "hidden", sets=("X", "observed", "hidden")),
           model=Joint(_check_finite_model, "X", "probabilities", "features", "sigma_x",
                       "feature_variances",
                       sets=("probabilities", "features", "sigma_x", "feature_variances")),
           draw_weights=Checked(_check_draw_weights))
def finite_feature_heldout(
    X, observed, hidden, probabilities, features, *, sigma_x, feature_variances=None,
    draw_weights: str = "equal",
) -> HeldoutResult:
    """Held-out score of a model with ``K`` features, summing exactly over the ``2^K`` patterns.

    In draw ``s`` a test digit owns feature ``k`` with probability
    ``probabilities[s, k]`` (independently), and given its pattern ``z`` its
    pixels are ``Normal(z A_s, (sigma_x[s]^2 + sum_k z_k v_sk) I)``, where ``v_sk``
    are optional variances of the features (a Gaussian posterior over ``A``, as
    in variational inference; 0 when the features are known). Then, for each draw,
    ``p(x_obs | s) = sum_z p(z | s) p(x_obs | z, s)`` and
    ``p(x_obs, x_hid | s)`` likewise are exact, and so is their ratio
    ``p(x_hid | x_obs, s)``. The draws are combined in one of two ways:

    - ``draw_weights="equal"``: ``(1/S) sum_s p(x_hid | x_obs, s)``, the average of the
      draws' conditional densities. It converges to ``E_q[p(x_hid | x_obs, pi)]``, a
      mixture of conditionals, which is not the conditional density of the mixture
      ``q`` stands for: a draw that explains ``x_obs`` badly counts as much as one that
      explains it well.
    - ``draw_weights="observed"``: the conditional density of the mixture,
      ``p_q(x_hid | x_obs) = E_q[p(x_obs, x_hid | pi)] / E_q[p(x_obs | pi)]``, estimated
      by the ratio of the draws' averages,
      ``sum_s p(x_obs, x_hid | s) / sum_s p(x_obs | s)``, which is
      ``sum_s w_s p(x_hid | x_obs, s)`` with importance weights
      ``w_s`` proportional to ``p(x_obs | s)`` (self-normalised importance sampling
      from ``q`` to ``q(pi | x_obs)``). With the draws independent from ``q``, the
      numerator and the denominator each converge almost surely to their expectations
      (the strong law of large numbers; both are bounded densities), and the
      denominator's limit is positive, so the ratio converges to ``p_q(x_hid | x_obs)``
      and its log to the log: the estimator is consistent. It is not unbiased (a
      ratio of averages), its bias is of order ``1/S`` beside a Monte Carlo error of
      order ``1/sqrt(S)``. Each test digit gets its own weights; with one draw the
      two ways agree. The predicted mean is weighted in the same way.

    Parameters
    ----------
    X : array_like
        ``(n, D)`` test digits.
    observed, hidden : array_like of int
        Pixel indices.
    probabilities : array_like
        ``(S, K)`` feature probabilities per draw, in [0, 1].
    features : array_like
        ``(S, K, D)`` feature images per draw.
    sigma_x : array_like
        ``(S,)`` noise standard deviations (or a scalar).
    feature_variances : array_like, optional
        ``(S, K)`` variance of each pixel of each feature image.
    draw_weights : {"equal", "observed"}, optional
        How the draws are combined (above): ``"equal"`` (the default, kept for the
        records made with it) or ``"observed"``, the consistent estimate of the
        predictive's conditional density.

    Returns
    -------
    HeldoutResult

    Examples
    --------
    >>> X = np.array([[1.0, 1.0], [0.0, 0.0]])
    >>> r = finite_feature_heldout(X, [0], [1], [[0.5]], [[[1.0, 1.0]]], sigma_x=0.1)
    >>> np.round(r.mean, 3).ravel().tolist()
    [1.0, 0.0]

    Two draws of the feature's probability: weighted by how well each explains the
    observed pixel, the draw that gives the feature often counts four times as much as
    the other for the first digit (p(x_obs | s) = 0.73 and 0.18), the other way round
    for the second.

    >>> r = finite_feature_heldout(X, [0], [1], [[0.9], [0.1]], np.ones((2, 1, 2)),
    ...                            sigma_x=0.5, draw_weights="observed")
    >>> np.round(r.mean, 2).ravel().tolist()
    [0.88, 0.12]
    """
    probs, A, sx, var_k = probabilities, features, sigma_x, feature_variances
    log_obs, log_joint, means = _pattern_sums(X, observed, hidden, probs, A, sx, var_k)
    if draw_weights == "equal":
        return HeldoutResult(_log_mean_exp(log_joint - log_obs), means.mean(axis=0))
    weights = np.exp(log_obs - logsumexp(log_obs, axis=0))  # (S, n), columns sum to 1
    return HeldoutResult(logsumexp(log_joint, axis=0) - logsumexp(log_obs, axis=0),
                         np.einsum("sn,snh->nh", weights, means))


def _log_sum_exp_rows(values: np.ndarray, *, normalised: bool = False):
    """``log sum_j exp(values[i, j])`` per row; with ``normalised``, also the row-normalised
    ``exp(values)``.

    Shifted by each row's largest value, so nothing overflows (a row is never all
    ``-inf``: some pattern has positive prior probability and every density is positive).
    Faster than scipy's logsumexp on the (digits, patterns) blocks, which dominate the
    scorer's time.
    """
    top = values.max(axis=1, keepdims=True)
    shifted = np.exp(values - top)
    total = shifted.sum(axis=1, keepdims=True)
    log_total = (np.log(total) + top)[:, 0]
    return (log_total, shifted / total) if normalised else log_total


def _log_pattern_prior(patterns: np.ndarray, log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """``log p(z)`` of every pattern (rows of ``patterns``) for independent features."""
    if np.all(np.isfinite(log_p)) and np.all(np.isfinite(log_q)):
        return patterns @ (log_p - log_q) + log_q.sum()  # one product, not a (P, K) pass
    # np.where, not a product: 0 * log(0) would be NaN for a probability of 0 or 1
    return np.where(patterns == 1, log_p, log_q).sum(axis=1)


def _same_model(A, sx, var_k, s: int) -> bool:
    """Whether draw ``s`` has draw ``s - 1``'s images, noise and variances."""
    return s > 0 and sx[s] == sx[s - 1] and np.array_equal(A[s], A[s - 1]) \
        and np.array_equal(var_k[s], var_k[s - 1])


def _pattern_sums(X, observed, hidden, probs, A, sx, var_k):
    """Per draw and digit: ``log p(x_obs | s)``, ``log p(x_obs, x_hid | s)`` (both ``(S, n)``)
    and the conditional mean of the hidden pixels ``(S, n, h)``, summed over the patterns.

    The pattern likelihoods depend on a draw's images, noise and variances only, so a
    draw that shares them with the one before (the variational posteriors' draws, which
    differ in their probabilities alone) reuses them and pays only for its prior.
    """
    S, K = probs.shape
    n = X.shape[0]
    # every 0/1 pattern, in itertools.product's order (the first feature the highest bit)
    patterns = ((np.arange(2**K)[:, None] >> np.arange(K - 1, -1, -1)) & 1).astype(float)
    x_obs, x_hid = X[:, observed], X[:, hidden]
    sq_obs, sq_hid = (x_obs**2).sum(axis=1), (x_hid**2).sum(axis=1)
    log_obs, log_joint = np.empty((S, n)), np.empty((S, n))
    means = np.empty((S, n, hidden.size))
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(probs), np.log1p(-probs)
    # digits in blocks, so that the (digit, pattern) arrays stay a few MB
    block = max(1, _BLOCK_ENTRIES // patterns.shape[0])
    for start in range(0, n, block):
        rows = slice(start, start + block)
        for s in range(S):
            if not _same_model(A, sx, var_k, s):
                variance = sx[s] ** 2 + patterns @ var_k[s]  # (P,)
                A_obs, A_hid = A[s][:, observed], A[s][:, hidden]
                # |x - z A|^2 = |x|^2 - 2 z (A x) + z (A A^T) z: K-sized work per pattern
                quad_obs = ((patterns @ (A_obs @ A_obs.T)) * patterns).sum(axis=1)
                quad_hid = ((patterns @ (A_hid @ A_hid.T)) * patterns).sum(axis=1)
                # clipped at 0: the expansion can round a tiny residual below zero
                res_top = np.maximum(sq_obs[rows, None] - 2 * x_obs[rows] @ A_obs.T
                                     @ patterns.T + quad_obs, 0.0)  # (n, P)
                res_bot = np.maximum(sq_hid[rows, None] - 2 * x_hid[rows] @ A_hid.T
                                     @ patterns.T + quad_hid, 0.0)
                lik_top = _isotropic_logpdf(res_top, variance, observed.size)
                lik_bot = _isotropic_logpdf(res_bot, variance, hidden.size)
                images_hid = patterns @ A_hid  # (P, h): each pattern's hidden mean
            log_top = _log_pattern_prior(patterns, log_p[s], log_q[s]) + lik_top
            log_obs[s, rows], given_top = _log_sum_exp_rows(log_top, normalised=True)
            log_joint[s, rows] = _log_sum_exp_rows(log_top + lik_bot)
            means[s, rows] = given_top @ images_hid  # given_top: p(z | x_obs, s)
    return log_obs, log_joint, means


#: Most features :func:`finite_factor_logpdf` sums over (a K-sized solve per pattern).
MAX_FACTOR_FEATURES = 16


def finite_factor_logpdf(X, probabilities, features, *, sigma_x, sigma_w,
                         feature_variances=None) -> np.ndarray:
    """Log density of whole rows under a factor model with ``K`` gated features, the
    weights integrated out and the ``2^K`` patterns summed exactly.

    A row owns feature ``k`` with probability ``probabilities[k]`` (independently) and is
    ``x = sum_k z_k w_k A_k + e`` with weights ``w_k ~ N(0, sigma_w^2)`` and noise
    ``e ~ N(0, sigma_x^2 I)``; ``A_k`` has mean ``features[k]`` and variance
    ``feature_variances[k]`` in every coordinate. Given the pattern ``z``, ``x`` has mean
    0 and covariance ``sigma_w^2 sum_k z_k (mu_k mu_k^T + s_k I) + sigma_x^2 I``, exactly;
    each pattern is scored by the Gaussian with that covariance, which is the exact law
    when the features are known (``s_k = 0``) and matches its first two moments
    otherwise. This is the R-IBP factor-analysis model's predictive with the weights
    integrated out, where drawing them from their prior would bias the log density low.

    Parameters
    ----------
    X : array_like
        ``(n, D)`` rows.
    probabilities : array_like
        ``(K,)`` in [0, 1], ``1 <= K <= 16`` (at 16, a few seconds).
    features : array_like
        ``(K, D)`` feature means.
    sigma_x, sigma_w : float
        Noise and weight standard deviations, > 0.
    feature_variances : array_like, optional
        ``(K,)`` per-coordinate variances of the features, >= 0 (default 0).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` log densities.

    Examples
    --------
    One feature owned for sure: the row is Gaussian with covariance
    ``sigma_w^2 mu mu^T + sigma_x^2 I``.

    >>> from scipy.stats import multivariate_normal
    >>> mu, x = np.array([1.0, 2.0]), np.array([[0.5, -0.3]])
    >>> got = finite_factor_logpdf(x, [1.0], [mu], sigma_x=0.5, sigma_w=2.0)
    >>> want = multivariate_normal(np.zeros(2), 4 * np.outer(mu, mu) + 0.25 * np.eye(2))
    >>> bool(np.isclose(got[0], want.logpdf(x[0])))
    True
    """
    X = check_data_matrix("X", X)
    probs = check_real_array("probabilities", probabilities)
    A = check_real_array("features", features)
    if probs.ndim != 1 or not 1 <= probs.size <= MAX_FACTOR_FEATURES:
        raise ValueError(f"probabilities must be a 1-D array of 1 to {MAX_FACTOR_FEATURES} "
                         f"feature probabilities, got shape {probs.shape}")
    K, D = probs.size, X.shape[1]
    if not np.all((probs >= 0) & (probs <= 1)):
        raise ValueError("probabilities must lie in [0, 1]")
    if A.shape != (K, D) or not np.all(np.isfinite(A)):
        raise ValueError(f"features must be a finite ({K}, {D}) array, got shape {A.shape}")
    s = np.zeros(K) if feature_variances is None else check_real_array(
        "feature_variances", feature_variances)
    if s.shape != (K,) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"feature_variances must be {K} finite numbers >= 0")
    sx = check_positive("sigma_x", sigma_x)
    sw = check_positive("sigma_w", sigma_w)
    if np.abs(X).max(initial=0.0) > 1e50 or np.abs(A).max(initial=0.0) * sw > 1e50:
        raise ValueError("X, features and sigma_w must be at most 1e50 in size (the "
                         "quadratic forms would overflow)")
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(probs), np.log1p(-probs)
    sq = (X**2).sum(axis=1)
    proj = X @ A.T  # (n, K): the features' inner products with the rows
    gram = A @ A.T
    terms = []
    for pattern in itertools.product([False, True], repeat=K):
        z = np.array(pattern)
        log_prior = np.where(z, log_p, log_q).sum()
        v = sx**2 + sw**2 * s[z].sum()
        # Woodbury: (v I + sw^2 U^T U)^-1 = (I - U^T (v/sw^2 I + U U^T)^-1 U) / v
        inner = v / sw**2 * np.eye(int(z.sum())) + gram[np.ix_(z, z)]
        if z.any() and np.linalg.cond(inner) > 1e12:
            # sigma_x^2 / sigma_w^2 negligible beside features that are (nearly)
            # collinear: the pattern's covariance is singular to working precision
            raise ValueError(
                f"sigma_x = {sx:g} is too small beside sigma_w = {sw:g} and these features: "
                "a pattern's covariance is singular; use a larger sigma_x")
        _, logdet_inner = np.linalg.slogdet(inner)
        logdet = (D - z.sum()) * np.log(v) + logdet_inner + z.sum() * np.log(sw**2)
        u = proj[:, z]
        quad = (sq - np.einsum("ij,ij->i", u, np.linalg.solve(inner, u.T).T)) / v
        terms.append(log_prior - 0.5 * (D * _LOG_2PI + logdet + quad))
    return logsumexp(np.array(terms), axis=0)


def _check_gibbs_draws(X_train, samples, beta):
    """Every posterior draw through the samplers' door; returns ``[(Z, Hyperparameters)]``."""
    if isinstance(samples, (str, bytes, dict)) or not hasattr(samples, "__len__") \
            or not hasattr(samples, "__iter__"):
        raise TypeError("samples must be a list of posterior draws (Z, sigma_x, sigma_a, alpha)")
    if len(samples) == 0:
        raise ValueError("samples must hold at least one posterior draw (Z, sigma_x, sigma_a, alpha)")
    draws = []
    for s, draw in enumerate(samples):
        if not isinstance(draw, (tuple, list)) or len(draw) != 4:
            raise ValueError(f"samples[{s}] must be a tuple (Z, sigma_x, sigma_a, alpha)")
        Z, sigma_x, sigma_a, alpha = draw
        Z = check_feature_matrix(f"samples[{s}] Z", Z, n_rows=X_train.shape[0])
        # the samplers' door: a draw is scored only at settings a sampler could produce
        hyper = check_hyperparameters(X_train, alpha, sigma_x, sigma_a, beta, name="X_train")
        draws.append((Z, hyper))
    return draws


def _check_test_digits(X_test: np.ndarray, X_train: np.ndarray, draws) -> None:
    """``X_test`` has ``X_train``'s pixels and fits every draw's scales."""
    if X_test.shape[1] != X_train.shape[1]:
        raise ValueError(f"X_test must have {X_train.shape[1]} columns like X_train, got {X_test.shape[1]}")
    for _, hyper in draws:
        check_scales(X_test, hyper.sigma_x, hyper.sigma_a, name="X_test")


def _check_burn(n_sweeps: int, burn) -> int:
    return check_count("burn", burn, maximum=n_sweeps - 1)


@validated(X_train=DataMatrix(),
           # the samplers' door comes first: [(Z, Hyperparameters)] for the draws
           samples=Joint(_check_gibbs_draws, "X_train", "samples", "beta", sets="samples"),
           split=Joint(partial(_check_split, name="X_test"), "X_test", "observed", "hidden",
                       sets=("X_test", "observed", "hidden")),
           test_fits=Joint(_check_test_digits, "X_test", "X_train", "samples"),
           rng=Generator(), n_sweeps=Count(minimum=1),
           burn=Joint(_check_burn, "n_sweeps", "burn", sets="burn"),
           max_new=Optional(Count(maximum=MAX_FEATURES)))
def ibp_gibbs_heldout(
    X_train,
    samples,
    X_test,
    observed,
    hidden,
    rng: np.random.Generator,
    *,
    beta: float = 1.0,
    n_sweeps: int = 40,
    burn: int = 10,
    max_new: int | None = None,
) -> HeldoutResult:
    """Held-out score of the IBP linear-Gaussian model from posterior draws of ``Z``.

    For each draw ``(Z, sigma_x, sigma_a, alpha)`` the features are integrated
    out given ``Z``: a test digit owning features ``z`` (among the draw's ``K``)
    plus ``k`` brand-new ones has independent pixels
    ``Normal(z Abar, sigma_x^2 (1 + z P z^T) + k sigma_a^2)``, with ``Abar`` and
    ``sigma_x^2 P`` the posterior mean and covariance of the features
    (:func:`ibp_lab.models.linear_gaussian.feature_posterior`). Its prior is that of the
    ``(N + 1)``-th customer: feature ``k`` with probability ``m_k / (beta + N)``,
    Poisson(``alpha beta / (beta + N)``) new dishes.
    A Gibbs sampler over ``(z, k)`` given the top half (all test digits at once)
    visits the features in a fresh random order each sweep and then draws ``k``
    from its exact conditional law (no truncation: the law is summed until a bound
    on the rest is below ``e^-40`` of its largest term); after ``burn`` sweeps, each
    state contributes ``p(bottom | z, k)``, so that for each draw the average is a
    consistent estimate of ``p(bottom | top)`` (an ergodic average: it converges as
    ``n_sweeps`` grows, but is not unbiased at finite ``n_sweeps``, since the
    sampler starts from no features); draws and states are combined by averaging
    densities, and the log of that average is biased low at any finite number of
    terms (Jensen's inequality). The flip log-odds, the prior log-odds and the new-dish law
    are those of the Gibbs sampler's kernel (``ibp_lab._kernel``), applied to every
    test digit at once.

    Parameters
    ----------
    X_train : array_like
        ``(N, D)`` training data the draws were fitted to.
    samples : sequence of tuple
        Posterior draws ``(Z, sigma_x, sigma_a, alpha)``.
    X_test : array_like
        ``(n, D)`` test digits.
    observed, hidden : array_like of int
        Pixel indices.
    rng : numpy.random.Generator
    beta : float, optional
        IBP concentration used in the fit.
    n_sweeps, burn : int, optional
        Gibbs sweeps over each test digit's features per draw, and how many of
        them are discarded.
    max_new : int, optional
        A safety cap on the number of new dishes of a test digit. ``None`` (the
        default): no cap, the exact law. With a cap the law is truncated at
        ``max_new`` and renormalised, which biases the score; a ``RuntimeWarning``
        says so whenever the mass cut off exceeds ``MAX_CUT_MASS`` for some digit
        and sweep.

    Returns
    -------
    HeldoutResult

    Examples
    --------
    >>> X_train = np.array([[1.0, 1.0], [1.0, 0.9], [0.0, 0.1]])
    >>> Z = np.array([[1], [1], [0]], dtype=np.int8)
    >>> r = ibp_gibbs_heldout(X_train, [(Z, 0.5, 1.0, 1.0)], [[1.0, 1.1]], [0], [1],
    ...                       np.random.default_rng(0), n_sweeps=20, burn=5)
    >>> r.log_density.shape, r.mean.shape
    ((1,), (1, 1))
    """
    from ibp_lab.models.linear_gaussian import feature_posterior

    draws = samples  # [(Z, Hyperparameters)], by the constraint
    # float product: the estimate itself must not overflow
    check_size(
        f"the kept log densities (draws x kept sweeps x digits = {len(draws)} x "
        f"{n_sweeps - burn} x {X_test.shape[0]})",
        float(len(draws)) * float(n_sweeps - burn) * float(X_test.shape[0]),
        names=("samples", "n_sweeps", "burn", "X_test"), limit=_MAX_HELDOUT_TERMS,
        hint="use fewer draws, sweeps or test digits")
    x_obs, x_hid = X_test[:, observed], X_test[:, hidden]
    log_terms, mean, largest_cut = [], np.zeros((X_test.shape[0], hidden.size)), 0.0
    for Z, hyper in draws:
        A_bar, cov = feature_posterior(X_train, Z, hyper.sigma_x, hyper.sigma_a)
        prior = _next_customer_prior(Z.sum(axis=0), Z.shape[0], hyper.alpha, beta)
        chain = _TestDigitChain(x_obs, A_bar[:, observed], cov / hyper.sigma_x**2, hyper)
        for sweep in range(n_sweeps):
            chain.flip_features(prior.log_odds_on, rng)
            largest_cut = max(largest_cut, chain.draw_new_dishes(prior.new_dish_rate, rng, max_new))
            if sweep >= burn:
                pred = chain.z @ A_bar[:, hidden]
                log_terms.append(_isotropic_logpdf(((x_hid - pred) ** 2).sum(1),
                                                   chain.variance(), hidden.size))
                mean += pred
    if largest_cut > MAX_CUT_MASS:
        warnings.warn(
            f"max_new = {max_new} cut off up to {largest_cut:.3g} of the law of a test digit's "
            "number of new dishes: the score is biased; raise max_new or leave it None",
            RuntimeWarning, stacklevel=3)  # past the @validated wrapper, at the caller
    log_terms = np.array(log_terms)
    return HeldoutResult(_log_mean_exp(log_terms), mean / log_terms.shape[0])


#: Largest mass of the new-dish law that ``max_new`` may cut off without a warning.
MAX_CUT_MASS = 1e-9


class _NextCustomerPrior(NamedTuple):
    """The IBP prior of customer ``N + 1`` given the first ``N`` (:func:`_next_customer_prior`)."""

    log_odds_on: np.ndarray
    new_dish_rate: float


def _next_customer_prior(m, n_rows: int, alpha: float, beta: float) -> _NextCustomerPrior:
    """Prior of a new row given ``n_rows`` rows whose features have owner counts ``m``.

    In the two-parameter buffet customer ``N + 1`` takes feature ``k`` with
    probability ``m_k / (beta + N)``, log-odds ``log m_k - log(beta + N - m_k)``, and
    Poisson(``alpha beta / (beta + N)``) new dishes: the kernel's ``prior_log_odds``
    and ``new_dish_rate`` with all ``N`` training rows as the others. Arguments are
    trusted (``0 < m_k <= N``).

    Examples
    --------
    >>> prior = _next_customer_prior([1, 3], 3, 2.0, 1.0)
    >>> np.round(np.exp(prior.log_odds_on), 3).tolist(), prior.new_dish_rate
    ([0.333, 3.0], 0.5)
    """
    from ibp_lab import _kernel

    log_odds_on = np.array([_kernel.prior_log_odds.py_func(count, float(n_rows), beta)
                            for count in np.asarray(m, dtype=float)])
    return _NextCustomerPrior(log_odds_on,
                              float(_kernel.new_dish_rate.py_func(alpha, beta, float(n_rows))))


class _TestDigitChain:
    """The Gibbs state ``(z, k)`` of every test digit, with ``resid = x_top - z Abar_top``,
    ``rr = ||resid||^2``, ``Pz = P z`` and ``q = z P z`` kept up to date by rank-one steps."""

    def __init__(self, x_obs, A_top, P, hyper):
        from ibp_lab import _kernel

        n, K = x_obs.shape[0], A_top.shape[0]
        self.A_top, self.P = A_top, P
        self.sx2, self.sa2 = hyper.sigma_x**2, hyper.sigma_a**2
        self.z = np.zeros((n, K))
        self.k_new = np.zeros(n, dtype=np.int64)
        self.resid = x_obs.copy()
        self.rr = (self.resid**2).sum(axis=1)
        self.Pz = np.zeros((n, K))
        self.q = np.zeros(n)
        self._flip_log_odds = _kernel.flip_log_odds.py_func  # elementwise on arrays
        self._kernel = _kernel

    def variance(self) -> np.ndarray:
        """Each digit's pixel variance ``sigma_x^2 (1 + z P z) + k sigma_a^2``."""
        return self.sx2 * (1.0 + self.q) + self.k_new * self.sa2

    def flip_features(self, log_odds_on: np.ndarray, rng: np.random.Generator) -> None:
        """One Gibbs update of every feature of every digit, features in a fresh random order."""
        n, D = self.resid.shape
        for k in rng.permutation(self.z.shape[1]):
            sign = 1.0 - 2.0 * self.z[:, k]  # +1 switches feature k on, -1 off
            resid_flip = self.resid - sign[:, None] * self.A_top[k]
            rr_flip = (resid_flip**2).sum(axis=1)
            q_flip = self.q + 2.0 * sign * self.Pz[:, k] + self.P[k, k]
            log_odds = self._flip_log_odds(self.rr, rr_flip, self.q, q_flip, self.k_new * self.sa2,
                                           self.sx2, D, sign * log_odds_on[k])
            # flip with probability 1 / (1 + exp(-log_odds)), in log space
            flip = np.log(rng.random(n)) < -np.logaddexp(0.0, -log_odds)
            self.resid[flip] = resid_flip[flip]
            self.rr[flip] = rr_flip[flip]
            self.q[flip] = q_flip[flip]
            self.Pz[flip] += sign[flip, None] * self.P[k]
            self.z[flip, k] = 1.0 - self.z[flip, k]

    def draw_new_dishes(self, rate: float, rng: np.random.Generator, max_new: int | None) -> float:
        """Draw every digit's number of new dishes from its exact conditional law (one
        uniform each); return the largest mass that ``max_new`` cut off (0 without a cap)."""
        uniforms = rng.random(self.k_new.size)
        v0 = self.sx2 * (1.0 + self.q)
        D = self.resid.shape[1]
        if max_new is None:
            buffer = np.empty(16)
            for i, u in enumerate(uniforms):
                self.k_new[i], buffer = self._kernel.sample_new_dishes(
                    u, rate, v0[i], self.sa2, self.rr[i], D, buffer)
            return 0.0
        largest_cut = 0.0
        for i, u in enumerate(uniforms):
            log_w = self._kernel.new_dish_log_weights(rate, v0[i], self.sa2, self.rr[i], D)
            w = np.exp(log_w - log_w.max())
            kept = np.cumsum(w[: max_new + 1])
            largest_cut = max(largest_cut, 1.0 - kept[-1] / w.sum())
            self.k_new[i] = min(int(np.searchsorted(kept, u * kept[-1], side="right")), max_new)
        return largest_cut


def compare_heldout(results: dict, X_hidden, *, reference: str) -> list[dict]:
    """Table of held-out scores relative to a reference model.

    For each model: the mean log predictive density per digit, its difference
    from the reference with the standard error of that paired difference
    (digits are the independent units), and the RMSE of the predicted mean.

    Parameters
    ----------
    results : dict
        Model name -> :class:`HeldoutResult`.
    X_hidden : array_like
        ``(n, h)`` the true hidden pixels.
    reference : str
        Name of the reference model (a key of ``results``).

    Returns
    -------
    list of dict
        One row per model with keys ``model``, ``log_density``, ``difference``,
        ``difference_se``, ``rmse``.

    Examples
    --------
    >>> a = HeldoutResult(np.array([1.0, 2.0]), np.zeros((2, 1)))
    >>> b = HeldoutResult(np.array([0.0, 1.0]), np.ones((2, 1)))
    >>> [row["difference"] for row in compare_heldout({"a": a, "b": b}, np.zeros((2, 1)), reference="b")]
    [1.0, 0.0]
    """
    if not isinstance(results, dict):
        raise TypeError("results must be a dict: model name -> HeldoutResult")
    if not results:
        # both arguments are at fault: no model to score, and none for reference to name
        raise ValueError(
            "results must hold at least one model (name -> HeldoutResult), got an empty dict: "
            "reference must be one of its names")
    for name, result in results.items():
        if not isinstance(result, HeldoutResult):
            raise TypeError(f"results[{name!r}] must be a HeldoutResult, got {type(result).__name__}")
    if not isinstance(reference, str) or reference not in results:
        raise ValueError(f"reference must be one of {sorted(map(str, results))}, got {reference!r}")
    base = results[reference].log_density
    for name, result in results.items():
        if result.log_density.shape != base.shape:
            raise ValueError(
                f"results[{name!r}] scores {result.log_density.size} digits, the reference "
                f"{base.size}: the models must be scored on the same digits"
            )
    rows = []
    for name, result in results.items():
        diff = result.log_density - base
        se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("nan")
        rows.append(
            {
                "model": name,
                "log_density": float(result.log_density.mean()),
                "difference": float(diff.mean()),
                "difference_se": se if name != reference else 0.0,
                "rmse": result.rmse(X_hidden),
            }
        )
    return rows


def chain_draws(chain) -> list[tuple]:
    """The kept posterior draws of a chain, as :func:`ibp_gibbs_heldout` takes them.

    Parameters
    ----------
    chain : ibp_lab.inference.chains.ChainResult
        A chain from :func:`ibp_lab.inference.chains.run_chain` (or one of
        :func:`ibp_lab.inference.chains.run_chains`).

    Returns
    -------
    list of tuple
        One ``(Z, sigma_x, sigma_a, alpha)`` per kept sample, in order.

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chain
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> chain = run_chain(X, 6, np.random.default_rng(1), burn=2, thin=2)
    >>> draws = chain_draws(chain)
    >>> len(draws), draws[0][0].shape[0], len(draws[0])
    (2, 10, 4)
    """
    from ibp_lab.inference.chains import ChainResult

    if not isinstance(chain, ChainResult):
        raise TypeError(f"chain must be a ChainResult (from run_chain), got {type(chain).__name__}")
    kept = chain.posterior_trace
    return [(Z, float(sx), float(sa), float(a)) for Z, sx, sa, a in zip(
        chain.samples, kept.sigma_x.values, kept.sigma_a.values, kept.alpha.values)]


def pool_heldout(results) -> HeldoutResult:
    """The score of the pooled draws of several independent runs of equal size.

    Each run's ``log_density`` is a log-mean-exp over its own terms (draws times
    kept states) and its ``mean`` an average over them. When every run has the
    same number of terms, the log-mean-exp over all of them is the log-mean-exp
    over runs of the runs' scores, and the pooled mean the mean of the means:
    the predictive density of the mixture of the runs, weighted equally.

    Parameters
    ----------
    results : sequence of HeldoutResult
        One per run (for example one per chain), scored on the same digits with
        the same number of draws and kept sweeps.

    Returns
    -------
    HeldoutResult

    Examples
    --------
    >>> a = HeldoutResult(np.log([0.2, 1.0]), np.zeros((2, 1)))
    >>> b = HeldoutResult(np.log([0.4, 1.0]), np.ones((2, 1)))
    >>> pooled = pool_heldout([a, b])
    >>> np.round(np.exp(pooled.log_density), 3).tolist(), pooled.mean.ravel().tolist()
    ([0.3, 1.0], [0.5, 0.5])
    """
    if isinstance(results, (HeldoutResult, dict, str, bytes)) or not hasattr(results, "__len__"):
        raise TypeError("results must be a list of HeldoutResult, one per run")
    results = list(results)
    if not results:
        raise ValueError("results must hold at least one HeldoutResult")
    for r, result in enumerate(results):
        if not isinstance(result, HeldoutResult):
            raise TypeError(f"results[{r}] must be a HeldoutResult, got {type(result).__name__}")
        if (result.log_density.shape != results[0].log_density.shape
                or result.mean.shape != results[0].mean.shape):
            raise ValueError(f"results[{r}] scores other digits than results[0]: shapes "
                             f"{result.mean.shape} and {results[0].mean.shape}")
    log_density = _log_mean_exp(np.array([r.log_density for r in results]))
    return HeldoutResult(log_density, np.mean([r.mean for r in results], axis=0))
