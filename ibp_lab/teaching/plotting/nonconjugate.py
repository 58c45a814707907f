"""Figures of the non-conjugate chapter: chains by sweep and a binary predictive check.

Each function returns a new :class:`matplotlib.figure.Figure` built without pyplot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import check_finite, check_panels, check_runs
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, PALETTE

__all__ = ["traces_by_sweep_figure", "binary_check_figure"]


def traces_by_sweep_figure(traces: Mapping[str, object], *, ylabel: str = "$K_+$") -> Figure:
    """One value per sweep for each named chain, on one axes.

    Parameters
    ----------
    traces : mapping of str to array_like
        A chain's name and its values, one per sweep (at most 6 chains).
    ylabel : str, optional
        What the values are.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = traces_by_sweep_figure({"chain 1": [1, 2, 3], "chain 2": [3, 2, 2]})
    >>> len(fig.axes[0].lines)
    2
    """
    traces = check_runs("traces", traces)
    if len(traces) > len(CYCLE):
        raise ValueError(f"traces must hold at most {len(CYCLE)} chains, got {len(traces)}")
    if not isinstance(ylabel, str):
        raise TypeError(f"ylabel must be a str, got {type(ylabel).__name__}")
    fig = Figure(figsize=(6.0, 3.0))
    ax = fig.subplots()
    for (name, values), color in zip(traces.items(), CYCLE):
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"traces[{name!r}] must be a non-empty 1-D array of values, one "
                             f"per sweep, got shape {values.shape}")
        ax.plot(np.arange(1, values.size + 1), values, color=color, lw=1.0, label=name)
    ax.set_xlabel("sweep")
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    fig.tight_layout()
    return with_alt(fig)


def binary_check_figure(observed_counts, replicated_counts, observed_pixels,
                        replicated_pixels, *, band: float = 0.9) -> Figure:
    """A posterior predictive check of binary images: how many pixels each image has on,
    and how often each pixel is on, observed against replicated data sets.

    Parameters
    ----------
    observed_counts : array_like
        ``(D + 1,)``: the share of images with ``0, 1, ..., D`` pixels on.
    replicated_counts : array_like
        ``(R, D + 1)``: the same for each of ``R`` replicated data sets.
    observed_pixels : array_like
        ``(D,)``: the share of images in which each pixel is on.
    replicated_pixels : array_like
        ``(R, D)``: the same for each replicated data set.
    band : float, optional
        The central probability of the replicated bands drawn (default 0.9).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> counts = rng.dirichlet(np.ones(5), size=4)
    >>> fig = binary_check_figure(counts[0], counts[1:], rng.random(4), rng.random((3, 4)))
    >>> len(fig.axes)
    2
    """
    observed_counts = check_finite("observed_counts", observed_counts, ndim=1, min_size=2,
                                   low=0, high=1)
    replicated_counts = _replicated("replicated_counts", replicated_counts, observed_counts.size)
    observed_pixels = check_finite("observed_pixels", observed_pixels, ndim=1,
                                   length=observed_counts.size - 1, partner="observed_counts",
                                   low=0, high=1)
    replicated_pixels = _replicated("replicated_pixels", replicated_pixels, observed_pixels.size)
    band = float(check_finite("band", band, ndim=0, low=0, high=1))
    if not 0 < band < 1:
        raise ValueError(f"band must be in (0, 1), got {band:g}")
    tails = [(1 - band) / 2, (1 + band) / 2]
    fig = Figure(figsize=(10.0, 3.4))
    left, right = fig.subplots(1, 2)
    on = np.arange(observed_counts.size)
    low, high = np.quantile(replicated_counts, tails, axis=0)
    left.fill_between(on, low, high, step="mid", color=PALETTE["sky"], alpha=0.5,
                      label=f"replicated, central {band:.0%}")
    left.step(on, observed_counts, where="mid", color=PALETTE["black"], label="observed")
    seen = np.flatnonzero((observed_counts > 0) | (high > 0))
    left.set_xlim(max(seen[0] - 2, 0), min(seen[-1] + 2, on[-1]))
    left.set_xlabel("pixels on in an image")
    left.set_ylabel("share of images")
    left.legend(frameon=False)
    low, high = np.quantile(replicated_pixels, tails, axis=0)
    middle = np.median(replicated_pixels, axis=0)
    outside = (observed_pixels < low) | (observed_pixels > high)
    right.errorbar(observed_pixels, middle, yerr=[middle - low, high - middle], fmt="o", ms=3,
                   color=PALETTE["blue"], ecolor=PALETTE["sky"],
                   label=f"replicated: median, central {band:.0%}")
    right.plot(observed_pixels[outside], middle[outside], "o", ms=4, color=PALETTE["vermillion"],
               label="observed outside its interval")
    right.plot([0, 1], [0, 1], color=PALETTE["grey"], lw=0.8)
    right.set_xlabel("share of images with the pixel on, observed")
    right.set_ylabel("replicated")
    right.legend(frameon=False)
    fig.tight_layout()
    return with_alt(fig)


def _replicated(name: str, value, width: int) -> np.ndarray:
    value = check_finite(name, value, ndim=2, min_size=1, low=0, high=1)
    if value.shape[1] != width:
        raise ValueError(f"{name} must have {width} columns (one per entry of the observed "
                         f"statistic), got shape {value.shape}")
    check_panels(name, 1)
    return value
