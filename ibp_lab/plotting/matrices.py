"""Pictures of binary matrices and of images made of pixels (features, digits)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibp_lab._checks import (
    check_binary_matrix,
    check_count,
    check_flag,
    check_positive,
    check_size,
)
from ibp_lab.plotting._doors import check_axes, check_images, check_shape
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
    left_order = check_flag("left_order", left_order)
    check_size("Z", float(Z.size), hint="plot a smaller matrix")
    _check_title("title", title)
    if ax is not None:
        check_axes("ax", ax)
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


#: Most images one grid draws (each is its own axes, about 10 ms apiece).
MAX_IMAGES = 1000


def _check_title(name: str, title) -> None:
    if title is not None and not isinstance(title, str):
        raise TypeError(f"{name} must be a string or None, got {type(title).__name__}")


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
        ``(m, h * w)`` one flattened image per row, finite; at most
        :data:`MAX_IMAGES`.
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
    shape = check_shape("shape", shape)
    images = check_images("images", images, shape)
    ncols = check_count("ncols", ncols, minimum=1)
    diverging = check_flag("diverging", diverging)
    if scale is not None:
        scale = check_positive("scale", scale)
    size = check_positive("size", size, upper=100.0)
    _check_title("suptitle", suptitle)
    check_size("images", float(images.shape[0]), limit=MAX_IMAGES, hint="draw fewer images")
    if titles is not None and (isinstance(titles, (str, bytes)) or len(titles) != images.shape[0]):
        raise ValueError(f"titles must hold one title per image ({images.shape[0]})")
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
