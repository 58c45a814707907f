"""Pictures of binary matrices and of images made of pixels (features, digits)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibp_lab._checks import check_binary_matrix
from ibp_lab.plotting._style import BINARY_CMAP, DIVERGING_CMAP, INK_CMAP
from ibp_lab.prior import left_ordered

__all__ = ["plot_binary_matrix", "plot_image_grid"]


def plot_binary_matrix(Z, *, ax=None, left_order: bool = True, title: str | None = None):
    """Draw a binary matrix: rows are customers (data points), columns dishes (features).

    Parameters
    ----------
    Z : array_like
        ``(n, K)`` binary matrix.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made if omitted.
    left_order : bool, optional
        Sort the columns into left-ordered form first (the usual staircase).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_binary_matrix([[1, 0], [1, 1]])
    >>> ax.get_xlabel()
    'dish (feature)'
    """
    Z = check_binary_matrix("Z", Z)
    if left_order:
        Z = left_ordered(Z)
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    shown = Z if Z.shape[1] else np.zeros((Z.shape[0], 1), np.int8)
    ax.imshow(shown, cmap=BINARY_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("dish (feature)")
    ax.set_ylabel("customer (row)")
    if title is not None:
        ax.set_title(title)
    return ax


def plot_image_grid(
    images,
    shape: tuple[int, int],
    *,
    ncols: int = 10,
    titles=None,
    diverging: bool = False,
    scale: float | None = None,
    size: float = 1.0,
    suptitle: str | None = None,
):
    """Draw flattened images (digits or features) on a grid.

    Parameters
    ----------
    images : array_like
        ``(m, h * w)`` one flattened image per row.
    shape : (int, int)
        ``(h, w)`` of one image.
    ncols : int, optional
        Images per row of the grid.
    titles : sequence of str, optional
        One title per image.
    diverging : bool, optional
        Features are changes to the average image: draw them with a symmetric
        red (adds ink) and blue (removes ink) scale. Otherwise ink in grey.
    scale : float, optional
        Colour limit (``vmax``); by default the largest absolute value (diverging)
        or 1 (ink).
    size : float, optional
        Inches per image.
    suptitle : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_image_grid(np.eye(4), (2, 2), ncols=2)
    >>> len(fig.axes)
    4
    """
    images = np.asarray(images, dtype=float)
    if images.ndim != 2 or images.shape[1] != shape[0] * shape[1]:
        raise ValueError(
            f"images must have shape (m, {shape[0] * shape[1]}) for shape {shape}, got {images.shape}"
        )
    m = max(images.shape[0], 1)
    ncols = min(ncols, m)
    nrows = int(np.ceil(m / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows * shape[0] / shape[1] + 0.3),
                             squeeze=False)
    if diverging:
        vmax = scale or float(np.abs(images).max() or 1.0)
        kw = dict(cmap=DIVERGING_CMAP, vmin=-vmax, vmax=vmax)
    else:
        kw = dict(cmap=INK_CMAP, vmin=0.0, vmax=scale or 1.0)
    for idx, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if idx >= images.shape[0]:
            ax.axis("off")
            continue
        ax.imshow(images[idx].reshape(shape), interpolation="nearest", **kw)
        if titles is not None:
            ax.set_title(str(titles[idx]), fontsize=8)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig
