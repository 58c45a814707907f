"""Posterior predictive checks for the linear-Gaussian IBP model of the digits.

A fitted model can be asked to *draw* data sets like the one it was fitted to.
Where the replicated data differ systematically from the real data in some
statistic, the model misses something. For ink on paper, the telling
statistics are about blank paper: real digits have many pixels with exactly no
ink and none with negative ink; a Gaussian model of the centred ink has no
reason to reproduce either.

- :func:`replicate_digits`: data sets drawn from the posterior predictive, one per
  posterior draw of ``(Z, sigma_x, sigma_a)``.
- :func:`ink_statistics`: share of blank pixels, share of negative ink, and each
  digit's share of blank pixels.
"""

from __future__ import annotations

import numpy as np

from ibp_lab._checks import (
    Checked,
    DataMatrix,
    Generator,
    Joint,
    Positive,
    check_binary_matrix,
    check_positive,
    check_real_array,
    check_size,
    validated,
)

__all__ = ["replicate_digits", "ink_statistics"]


def _check_samples(samples, X: np.ndarray) -> list[tuple]:
    """Every draw ``(Z, sigma_x, sigma_a, ...)`` checked against ``X``, before any is used."""
    if isinstance(samples, (str, bytes)) or not hasattr(samples, "__len__"):
        raise TypeError(
            f"samples must be a sequence of draws (Z, sigma_x, sigma_a), got {type(samples).__name__}"
        )
    if len(samples) == 0:
        raise ValueError("samples must hold at least one posterior draw (Z, sigma_x, sigma_a)")
    check_size("the replicated data", float(len(samples)) * X.size, hint="use fewer draws")
    checked = []
    for s, draw in enumerate(samples):
        if isinstance(draw, (str, bytes)) or not hasattr(draw, "__len__") or len(draw) < 3:
            raise ValueError(f"samples[{s}] must be a tuple (Z, sigma_x, sigma_a, ...), got {draw!r:.60}")
        checked.append((check_binary_matrix("Z", draw[0], n_rows=X.shape[0]),
                        check_positive("sigma_x", draw[1]), check_positive("sigma_a", draw[2])))
    return checked


def _check_ink(name: str, ink) -> np.ndarray:
    ink = check_real_array(name, ink)
    if ink.ndim < 2 or ink.shape[-2] == 0 or ink.shape[-1] == 0 or ink.size == 0:
        raise ValueError(f"{name} must be an array of shape (..., N, D) with N, D >= 1, got {ink.shape}")
    if not np.all(np.isfinite(ink)):
        raise ValueError(f"{name} must be finite (no NaN or infinite values)")
    return ink


@validated(X=DataMatrix(), rng=Generator(),
           samples=Joint(_check_samples, "samples", "X", sets="samples"))
def replicate_digits(X, samples, rng: np.random.Generator) -> np.ndarray:
    """Replicated data sets from posterior draws of the linear-Gaussian IBP model.

    For each draw ``(Z, sigma_x, sigma_a, ...)``: feature images ``A`` are drawn
    from their posterior given ``Z`` (:func:`ibp_lab.models.linear_gaussian.feature_posterior`),
    then ``X_rep = Z A + Normal(0, sigma_x^2)`` noise, for the same rows as ``X``.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data the draws were fitted to (centred, as in the fit).
    samples : sequence of tuple
        Posterior draws ``(Z, sigma_x, sigma_a, ...)``; extra entries are ignored.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        ``(S, N, D)`` replicated data, on the scale of ``X``.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> Z = np.array([[1], [0], [1], [1], [0]])
    >>> replicate_digits(X, [(Z, 0.5, 1.0)], np.random.default_rng(1)).shape
    (1, 5, 3)
    """
    from ibp_lab.models.linear_gaussian import feature_posterior

    replicates = np.empty((len(samples),) + X.shape)
    for s, (Z, sigma_x, sigma_a) in enumerate(samples):
        mean, cov = feature_posterior(X, Z, sigma_x, sigma_a)
        K = mean.shape[0]
        if K:
            # every pixel's feature column shares the K x K posterior covariance
            L = np.linalg.cholesky(cov + 1e-12 * np.eye(K))
            A = mean + L @ rng.standard_normal(mean.shape)
            fitted = Z.astype(float) @ A
        else:
            fitted = np.zeros_like(X)
        replicates[s] = fitted + sigma_x * rng.standard_normal(X.shape)
    return replicates


@validated(ink=Checked(_check_ink), blank_below=Positive())
def ink_statistics(ink, *, blank_below: float = 0.5 / 16) -> dict:
    """Statistics of ink on paper that a Gaussian model need not reproduce.

    Parameters
    ----------
    ink : array_like
        ``(..., N, D)`` ink values on the raw scale (0 = blank paper, 1 = full
        ink), for one data set or a stack of replicated ones.
    blank_below : float, optional
        Ink below this counts as blank (the raw data are multiples of 1/16, so
        the default makes "blank" mean "exactly no ink" for real digits).

    Returns
    -------
    dict
        ``share_blank`` and ``share_negative`` (one number per data set) and
        ``digit_share_blank`` (``(..., N)``: each digit's share of blank pixels).

    Examples
    --------
    >>> stats = ink_statistics([[0.0, 0.5], [1.0, -0.2]])
    >>> float(stats["share_blank"]), float(stats["share_negative"])
    (0.5, 0.25)
    """
    blank = ink < blank_below
    return {
        "share_blank": blank.mean(axis=(-2, -1)),
        "share_negative": (ink < 0).mean(axis=(-2, -1)),
        "digit_share_blank": blank.mean(axis=-1),
    }
