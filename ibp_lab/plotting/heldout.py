"""Figures of chapter 9: predictive checks and completed digits."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibp_lab._checks import check_real_array
from ibp_lab.plotting._style import CYCLE, INK_CMAP, PALETTE

__all__ = ["ink_check_figure", "completion_figure"]


def ink_check_figure(real: dict, replicated: dict, *, ink_real=None, ink_replicated=None):
    """Observed ink statistics against their posterior predictive distribution.

    Parameters
    ----------
    real, replicated : dict
        Output of :func:`ibp_lab.predictive_checks.ink_statistics` for the real
        digits and for a stack of replicated data sets.
    ink_real, ink_replicated : array_like, optional
        Raw ink values; if given, a third panel compares their histograms.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.predictive_checks import ink_statistics
    >>> rng = np.random.default_rng(0)
    >>> fig = ink_check_figure(ink_statistics(rng.random((1, 5, 4))), ink_statistics(rng.normal(size=(3, 5, 4))))
    >>> len(fig.axes)
    2
    """
    n_panels = 3 if ink_real is not None else 2
    fig, axes = plt.subplots(1, n_panels, figsize=(4.2 * n_panels, 3.3))
    axes[0].hist(replicated["share_blank"], bins=15, color=PALETTE["blue"], alpha=0.6,
                 label="replicated data sets")
    axes[0].axvline(float(np.mean(real["share_blank"])), color=PALETTE["vermillion"], lw=2, label="real digits")
    axes[0].set(xlabel="share of blank pixels", ylabel="data sets")
    axes[0].legend(frameon=False, fontsize=8)
    bins = np.linspace(0, 1, 21)
    axes[1].hist(np.ravel(real["digit_share_blank"]), bins=bins, density=True, color=PALETTE["vermillion"],
                 alpha=0.5, label="real digits")
    axes[1].hist(np.ravel(replicated["digit_share_blank"]), bins=bins, density=True, histtype="step", lw=2,
                 color=PALETTE["blue"], label="replicated digits")
    axes[1].set(xlabel="each digit's share of blank pixels", ylabel="density")
    axes[1].legend(frameon=False, fontsize=8)
    if ink_real is not None:
        edges = np.linspace(-0.6, 1.4, 41)
        axes[2].hist(np.ravel(ink_real), bins=edges, density=True, color=PALETTE["vermillion"], alpha=0.5,
                     label="real ink")
        axes[2].hist(np.ravel(ink_replicated), bins=edges, density=True, histtype="step", lw=2,
                     color=PALETTE["blue"], label="replicated ink")
        axes[2].axvline(0.0, color=PALETTE["grey"], lw=1)
        axes[2].set(xlabel="ink (0 = blank paper)", ylabel="density", yscale="log")
        axes[2].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def completion_figure(X_raw, predictions: dict, observed, hidden, shape=(8, 6), *, offset=None):
    """Test digits with their bottom halves completed by each model.

    Parameters
    ----------
    X_raw : array_like
        ``(n, D)`` test digits on the raw ink scale (one column per digit shown).
    predictions : dict
        Model name -> ``(n, h)`` predicted hidden pixels on the scale of the fit.
    observed, hidden : array_like of int
        Pixel indices.
    shape : (int, int)
        Image shape.
    offset : array_like, optional
        ``(D,)`` added to the predictions to return to the raw scale (the training
        mean when the models were fitted to centred data).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = completion_figure(np.zeros((2, 4)), {"m": np.ones((2, 2))}, [0, 1], [2, 3], (2, 2))
    >>> len(fig.axes)
    4
    """
    X_raw = check_real_array("X_raw", X_raw)
    observed, hidden = np.asarray(observed), np.asarray(hidden)
    offset = np.zeros(X_raw.shape[1]) if offset is None else check_real_array("offset", offset)
    rows = ["truth"] + list(predictions)
    n = X_raw.shape[0]
    fig, axes = plt.subplots(len(rows), n, figsize=(0.9 * n + 1.2, 1.25 * len(rows)), squeeze=False)
    for r, name in enumerate(rows):
        for c in range(n):
            image = X_raw[c].copy()
            if name != "truth":
                image[hidden] = predictions[name][c] + offset[hidden]
            ax = axes[r, c]
            ax.imshow(image.reshape(shape), cmap=INK_CMAP, vmin=0, vmax=1, interpolation="nearest")
            ax.axhline(len(observed) / shape[1] - 0.5, color=CYCLE[1], lw=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r, 0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
    fig.tight_layout()
    return fig
