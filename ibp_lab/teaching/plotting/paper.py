"""Figures of the chapter that reproduces the R-IBP paper's experiments.

Each function returns a new :class:`matplotlib.figure.Figure` built without pyplot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import check_finite, check_runs
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE

__all__ = ["score_and_time_figure", "class_matrices_figure"]


def _per_setting(name: str, values: Mapping, methods, n_settings: int) -> dict:
    runs = check_runs(name, values)
    if set(runs) != set(methods):
        raise ValueError(f"{name} must have the same methods as means, got {sorted(runs)}")
    for method, row in runs.items():
        if row.shape != (n_settings,):
            raise ValueError(f"{name}[{method!r}] must hold one value per entry of settings "
                             f"({n_settings}), got shape {row.shape}")
    return runs


def score_and_time_figure(settings, means: Mapping, spreads: Mapping, seconds: Mapping, *,
                          xlabel: str = r"$\alpha$",
                          ylabel: str = "held-out log density per row") -> Figure:
    """Two panels against a setting: each method's mean score with its spread over runs,
    and its median CPU seconds (log scale).

    Parameters
    ----------
    settings : array_like
        ``(S,)`` values of the setting (for instance alpha), increasing.
    means, spreads : mapping of str to array_like
        Per method (at most 6), ``(S,)`` mean scores and their standard deviations over
        runs (drawn as bars of one standard deviation).
    seconds : mapping of str to array_like
        Per method, ``(S,)`` median CPU seconds per run, > 0.
    xlabel, ylabel : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = score_and_time_figure([1, 2], {"a": [-3, -4], "b": [-3.5, -5]},
    ...                             {"a": [0.1, 0.2], "b": [0.3, 0.1]},
    ...                             {"a": [0.5, 0.6], "b": [0.05, 0.07]})
    >>> len(fig.axes)
    2
    """
    x = check_finite("settings", settings, ndim=1, min_size=1)
    if np.any(np.diff(x) <= 0):
        raise ValueError("settings must be strictly increasing")
    mean = check_runs("means", means)
    if len(mean) > len(CYCLE):
        raise ValueError(f"means must hold at most {len(CYCLE)} methods, got {len(mean)}")
    mean = _per_setting("means", means, mean, x.size)
    spread = _per_setting("spreads", spreads, mean, x.size)
    cpu = _per_setting("seconds", seconds, mean, x.size)
    if any(np.any(v < 0) for v in spread.values()):
        raise ValueError("spreads must be >= 0")
    if any(np.any(v <= 0) for v in cpu.values()):
        raise ValueError("seconds must be > 0 (drawn on a log scale)")
    for name, label in (("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(label, str):
            raise TypeError(f"{name} must be a str, got {type(label).__name__}")
    fig = Figure(figsize=(9.0, 3.4))
    ax_score, ax_time = fig.subplots(1, 2)
    # methods side by side at each setting, so that their bars do not hide each other
    step = 0.04 * (x.max() - x.min() if x.size > 1 else 1.0)
    for i, (method, color) in enumerate(zip(mean, CYCLE)):
        shift = (i - (len(mean) - 1) / 2) * step
        ax_score.errorbar(x + shift, mean[method], yerr=spread[method], color=color,
                          marker="o", ms=4, lw=1.0, capsize=2, label=method)
        ax_time.plot(x, cpu[method], color=color, marker="o", ms=4, lw=1.0, label=method)
    ax_score.set_xlabel(xlabel)
    ax_score.set_ylabel(ylabel)
    ax_time.set_xlabel(xlabel)
    ax_time.set_ylabel("CPU seconds per run (median)")
    ax_time.set_yscale("log")
    ax_time.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return with_alt(fig)


def class_matrices_figure(classes, matrices: Mapping) -> Figure:
    """Class-by-class matrices side by side, each with its own colour scale, the diagonal
    left blank (the figures compare the pairs of different classes).

    Parameters
    ----------
    classes : array_like
        ``(C,)`` class names (numbers or strings), ``2 <= C <= 20``.
    matrices : mapping of str to array_like
        Panel title -> ``(C, C)`` finite matrix (at most 4 panels).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = class_matrices_figure([1, 3, 5], {"sharing": np.eye(3), "confusion": np.ones((3, 3))})
    >>> len(fig.axes)  # two panels and their colour bars
    4
    """
    labels = np.asarray(classes)
    if labels.ndim != 1 or not 2 <= labels.size <= 20:
        raise ValueError(f"classes must be 2 to 20 class names, got shape {labels.shape}")
    panels = check_runs("matrices", matrices)
    if len(panels) > 4:
        raise ValueError(f"matrices must hold at most 4 panels, got {len(panels)}")
    C = labels.size
    for title, M in panels.items():
        if M.shape != (C, C):
            raise ValueError(f"matrices[{title!r}] must be ({C}, {C}) like classes, got "
                             f"shape {M.shape}")
    fig = Figure(figsize=(3.4 * len(panels), 3.0))
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    for ax, (title, M) in zip(axes, panels.items()):
        shown = np.where(np.eye(C, dtype=bool), np.nan, M)
        image = ax.imshow(shown, cmap="viridis")
        ax.set_xticks(range(C), [str(c) for c in labels.tolist()])
        ax.set_yticks(range(C), [str(c) for c in labels.tolist()])
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    return with_alt(fig)
