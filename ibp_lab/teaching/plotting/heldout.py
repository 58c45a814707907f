"""Figures of chapter 13: predictive checks and completed digits.

Each function returns a new :class:`matplotlib.figure.Figure` built without pyplot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import (
    check_finite,
    check_index_array,
    check_panels,
    check_shape,
)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, INK_CMAP, PALETTE

__all__ = ["ink_check_figure", "completion_figure"]


def ink_check_figure(real: dict, replicated: dict, *, ink_real=None, ink_replicated=None) -> Figure:
    """Observed ink statistics against their posterior predictive distribution.

    Parameters
    ----------
    real, replicated : dict
        Output of :func:`ibp_lab.evaluation.predictive_checks.ink_statistics` for the real
        digits and for a stack of replicated data sets.
    ink_real, ink_replicated : array_like, optional
        Raw ink values; if given, a third panel compares their histograms.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.evaluation.predictive_checks import ink_statistics
    >>> rng = np.random.default_rng(0)
    >>> fig = ink_check_figure(ink_statistics(rng.random((1, 5, 4))), ink_statistics(rng.normal(size=(3, 5, 4))))
    >>> len(fig.axes)
    2
    """
    real = _check_ink_stats("real", real)
    replicated = _check_ink_stats("replicated", replicated)
    if (ink_real is None) != (ink_replicated is None):
        raise ValueError("ink_real and ink_replicated must be given together (or neither), got "
                         f"ink_real {'None' if ink_real is None else 'given'} and ink_replicated "
                         f"{'None' if ink_replicated is None else 'given'}")
    if ink_real is not None:
        ink_real = check_finite("ink_real", ink_real, min_size=1)
        ink_replicated = check_finite("ink_replicated", ink_replicated, min_size=1)
    n_panels = 3 if ink_real is not None else 2
    fig = Figure(figsize=(4.2 * n_panels, 3.3))
    axes = fig.subplots(1, n_panels)
    axes[0].hist(replicated["share_blank"], bins=15, color=PALETTE["blue"], alpha=0.6,
                 label="replicated data sets")
    axes[0].axvline(float(np.mean(real["share_blank"])), color=PALETTE["vermillion"], lw=2, label="real digits")
    axes[0].set(xlabel="share of blank pixels", ylabel="data sets")
    axes[0].legend(frameon=False, fontsize=10)
    bins = np.linspace(0, 1, 21)
    axes[1].hist(np.ravel(real["digit_share_blank"]), bins=bins, density=True, color=PALETTE["vermillion"],
                 alpha=0.5, label="real digits")
    axes[1].hist(np.ravel(replicated["digit_share_blank"]), bins=bins, density=True, histtype="step", lw=2,
                 color=PALETTE["blue"], label="replicated digits")
    axes[1].set(xlabel="each digit's share of blank pixels", ylabel="density")
    axes[1].legend(frameon=False, fontsize=10)
    if ink_real is not None:
        edges = np.linspace(-0.6, 1.4, 41)
        axes[2].hist(np.ravel(ink_real), bins=edges, density=True, color=PALETTE["vermillion"], alpha=0.5,
                     label="real ink")
        axes[2].hist(np.ravel(ink_replicated), bins=edges, density=True, histtype="step", lw=2,
                     color=PALETTE["blue"], label="replicated ink")
        axes[2].axvline(0.0, color=PALETTE["grey"], lw=1)
        axes[2].set(xlabel="ink (0 = blank paper)", ylabel="density", yscale="log")
        axes[2].legend(frameon=False, fontsize=10)
    fig.tight_layout()
    return with_alt(fig)


def _check_ink_stats(name: str, stats) -> dict:
    """Output of :func:`ibp_lab.evaluation.predictive_checks.ink_statistics`: finite ``share_blank`` and
    ``digit_share_blank`` in [0, 1]."""
    if not isinstance(stats, Mapping):
        raise TypeError(f"{name} must be the dict of ibp_lab.evaluation.predictive_checks.ink_statistics, "
                        f"got {type(stats).__name__}")
    out = dict(stats)
    for key in ("share_blank", "digit_share_blank"):
        if key not in stats:
            raise ValueError(f"{name} must hold {key!r} (from ink_statistics); it has {sorted(map(str, stats))}")
        out[key] = check_finite(f"{name}[{key!r}]", stats[key], low=0.0, high=1.0, min_size=1)
    return out


def completion_figure(X_raw, predictions: dict, observed, hidden, shape=(8, 6), *, offset=None) -> Figure:
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
    X_raw = check_finite("X_raw", X_raw, ndim=2)
    n, d = X_raw.shape
    if n < 1:
        raise ValueError("X_raw must hold at least one digit (row), got none")
    shape = check_shape("shape", shape)
    if shape[0] * shape[1] != d:
        raise ValueError(f"shape {shape} must hold X_raw's {d} pixels per digit (h * w = {shape[0] * shape[1]})")
    observed = check_index_array("observed", observed, d, partner="X_raw's pixels", min_size=1)
    hidden = check_index_array("hidden", hidden, d, partner="X_raw's pixels", min_size=1)
    offset = (np.zeros(d) if offset is None
              else check_finite("offset", offset, ndim=1, length=d, partner="X_raw's pixels"))
    if not isinstance(predictions, Mapping):
        raise TypeError(f"predictions must be a dict (model name -> predicted pixels), got "
                        f"{type(predictions).__name__}")
    if len(predictions) == 0:
        raise ValueError("predictions must hold at least one model, got an empty dict")
    check_panels("X_raw and predictions", (len(predictions) + 1) * float(n))
    checked = {}
    for name, values in predictions.items():
        if not isinstance(name, str):
            raise TypeError(f"predictions keys must be strings (model names), got {type(name).__name__}")
        values = check_finite(f"predictions[{name!r}]", values, ndim=2)
        if values.shape != (n, hidden.size):
            raise ValueError(f"predictions[{name!r}] must have shape {(n, hidden.size)} (one row per digit "
                             f"of X_raw, one column per hidden pixel), got {values.shape}")
        checked[name] = values
    predictions = checked
    rows = ["truth"] + list(predictions)
    fig = Figure(figsize=(0.9 * n + 1.2, 1.25 * len(rows)))
    axes = fig.subplots(len(rows), n, squeeze=False)
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
    return with_alt(fig)
