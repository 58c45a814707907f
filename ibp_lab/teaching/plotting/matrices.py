"""Pictures of binary matrices and of images made of pixels (features, digits).

- :func:`plot_binary_matrix`: draws on one axes (``ax=None``) and returns it.
- :func:`image_grid_figure`: a new figure with one panel per image.
"""

from __future__ import annotations


import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import (
    check_binary_matrix,
    check_count,
    check_flag,
    check_positive,
    check_size,
)
from ibp_lab.teaching.plotting._doors import axes_or_new, check_images, check_labels, check_shape
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import BINARY_CMAP, DIVERGING_CMAP, INK_CMAP, integer_ticks
from ibp_lab.models.prior import left_ordered

__all__ = ["plot_binary_matrix", "image_grid_figure"]


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
        Customers and dishes are numbered from 1 and ticked at whole numbers only.

    Examples
    --------
    >>> ax = plot_binary_matrix([[1, 0], [1, 1]])
    >>> ax.get_xlabel()
    'dish (feature)'
    >>> [float(t) for t in ax.get_xticks() if 0.5 <= t <= 2.5]
    [1.0, 2.0]
    """
    Z = check_binary_matrix("Z", Z)
    left_order = check_flag("left_order", left_order)
    check_size("Z", float(Z.size), hint="plot a smaller matrix")
    _check_title("title", title)
    ax = axes_or_new("ax", ax, figsize=(4, 4))
    if left_order:
        Z = left_ordered(Z)
    shown = Z if Z.shape[1] else np.zeros((Z.shape[0], 1), np.int8)
    n_rows, n_cols = shown.shape
    # Customers and dishes are numbered from 1, as in the text; each cell is centred on
    # its whole number, and only whole numbers are ticked.
    ax.imshow(shown, cmap=BINARY_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest",
              extent=(0.5, n_cols + 0.5, n_rows + 0.5, 0.5))
    integer_ticks(ax)
    ax.set_xlabel("dish (feature)")
    ax.set_ylabel("customer (row)")
    if title is not None:
        ax.set_title(title)
    return with_alt(ax)


#: Most images one grid draws (each is its own axes, about 10 ms apiece).
MAX_IMAGES = 1000


def _check_title(name: str, title) -> None:
    if title is not None and not isinstance(title, str):
        raise TypeError(f"{name} must be a string or None, got {type(title).__name__}")


def image_grid_figure(
    images,
    shape: tuple[int, int],
    *,
    ncols: int = 10,
    labels=None,
    diverging: bool = False,
    scale: float | None = None,
    size: float = 1.0,
    title: str | None = None,
) -> Figure:
    """Flattened images (digits or features) on a grid, one panel each, in a new figure.

    Parameters
    ----------
    images : array_like
        ``(m, h * w)`` one flattened image per row, finite; at most
        :data:`MAX_IMAGES`.
    shape : (int, int)
        ``(h, w)`` of one image.
    ncols : int, optional
        Images per row of the grid.
    labels : sequence of str, optional
        One label per image, drawn above it.
    diverging : bool, optional
        Features are changes to the average image: draw them with a symmetric
        red (adds ink) and blue (removes ink) scale. Otherwise ink in grey.
    scale : float, optional
        Colour limit (``vmax``); by default the largest absolute value (diverging)
        or 1 (ink).
    size : float, optional
        Inches per image.
    title : str, optional
        Title of the whole figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = image_grid_figure(np.eye(4), (2, 2), ncols=2)
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
    _check_title("title", title)
    check_size("images", float(images.shape[0]), limit=MAX_IMAGES, hint="draw fewer images")
    if labels is not None:
        labels = check_labels("labels", labels, images.shape[0], what="image")
    m = max(images.shape[0], 1)
    ncols = min(ncols, m)
    nrows = int(np.ceil(m / ncols))
    fig = Figure(figsize=(size * ncols, size * nrows * shape[0] / shape[1] + 0.3))
    axes = fig.subplots(nrows, ncols, squeeze=False)
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
        if labels is not None:
            ax.set_title(labels[idx], fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return with_alt(fig)
