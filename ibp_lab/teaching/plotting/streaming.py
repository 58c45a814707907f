"""Figures of the chapter on streaming inference (``book/12_streaming.md``).

Every function returns a new :class:`matplotlib.figure.Figure` built without pyplot, so a
figure is never shown twice and nothing is left open. The functions only draw: the numbers
come from :mod:`ibp_lab.inference.streaming`.

- :func:`feature_count_figure`: the expected number of features as the stream goes on.
- :func:`next_prior_figure`: the filtering prior of the next observation, slot by slot.
- :func:`matched_features_figure`: true features above the learned features matched to them.
- :func:`feature_grid_figure`: learned features as images, most used first.
- :func:`cost_figure`: time and memory per observation against the number of observations.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_count, check_flag
from ibp_lab.teaching.plotting._doors import (
    check_finite,
    check_images,
    check_index_array,
    check_optional_real,
    check_panels,
    check_runs,
    check_shape,
)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, DIVERGING_CMAP, PALETTE

__all__ = [
    "feature_count_figure",
    "next_prior_figure",
    "matched_features_figure",
    "feature_grid_figure",
    "cost_figure",
]


def feature_count_figure(
    histories: Mapping[str, np.ndarray],
    *,
    true_count=None,
    log_x: bool = False,
    title: str | None = None,
) -> Figure:
    """Expected number of features after each observation, one curve per run.

    Parameters
    ----------
    histories : mapping of str to array_like
        Label -> ``poisson_rate_history_`` (or any per-observation count).
    true_count : array_like, optional
        The true number of features among the first ``n`` observations, drawn as steps.
    log_x : bool, optional
        Logarithmic axis for the number of observations.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = feature_count_figure({"run": [1.0, 2.0, 2.0]}, true_count=[1, 2, 2])
    >>> len(fig.axes[0].lines)
    2
    """
    log_x = check_flag("log_x", log_x)
    histories = check_runs("histories", histories)
    check_panels("histories", len(histories))
    for label, values in histories.items():
        if values.ndim != 1:
            raise ValueError(f"histories[{label!r}] must be 1-D (one value per observation), got shape {values.shape}")
    if true_count is not None:
        true_count = check_finite("true_count", true_count, ndim=1)
    fig = Figure(figsize=(6.4, 3.4), layout="constrained")
    ax = fig.subplots()
    for color, (label, values) in zip(CYCLE * (len(histories) // len(CYCLE) + 1), histories.items()):
        ax.plot(np.arange(1, values.size + 1), values, color=color, label=label, lw=1.6)
    if true_count is not None:
        ax.step(np.arange(1, true_count.size + 1), true_count, where="post",
                color=PALETTE["black"], ls="--", lw=1.0, label="true number of features")
    if log_x:
        ax.set_xscale("log")
    ax.set(xlabel="observations seen, n", ylabel="expected number of features")
    ax.legend(frameon=False, fontsize=10)
    if title:
        ax.set_title(str(title))
    return with_alt(fig)


def next_prior_figure(dish, prob, n_kept: int, *, title: str | None = None) -> Figure:
    """Bars of the filtering prior of the next observation: kept slots, then fresh ones.

    Parameters
    ----------
    dish, prob : array_like
        Dish numbers and probabilities, as returned by ``RecursiveIBP.next_prior()``.
    n_kept : int
        How many of the slots are kept features (the rest are fresh).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = next_prior_figure([1, 2, 3], [0.5, 0.2, 0.01], 2)
    >>> len(fig.axes[0].patches)
    3
    """
    dish = check_finite("dish", dish, ndim=1, min_size=1)
    prob = check_finite("prob", prob, ndim=1, length=dish.size, partner="dish", low=0.0, high=1.0)
    n_kept = check_count("n_kept", n_kept, maximum=dish.size)
    check_panels("dish (one bar per slot)", dish.size)
    fig = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = fig.subplots()
    kept = np.arange(dish.size) < n_kept
    ax.bar(dish[kept], prob[kept], color=PALETTE["blue"], label="features seen so far")
    ax.bar(dish[~kept], prob[~kept], color=PALETTE["orange"], label="fresh slots (new features)")
    # a log scale shows the fresh slots, whose probabilities are far below the others'
    low = max(float(prob[prob > 0].min()) / 3 if np.any(prob > 0) else 1e-6, 1e-12)
    ax.set(xlabel="dish number (order of creation)", ylabel="prior probability", yscale="log",
           ylim=(low, 1.0))
    ax.legend(frameon=False, fontsize=10)
    if title:
        ax.set_title(str(title))
    return with_alt(fig)


def _images(ax_row, images, shape, vmax, titles):
    for ax, image, label in zip(ax_row, images, titles):
        ax.imshow(image.reshape(shape), cmap=DIVERGING_CMAP, vmin=-vmax, vmax=vmax,
                  interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(label, fontsize=8)


def matched_features_figure(learned, true, shape, match, correlation) -> Figure:
    """True features (top row) above the learned features matched to them (bottom row).

    Parameters
    ----------
    learned, true : array_like
        ``(K_learned, h * w)`` and ``(K_true, h * w)`` features.
    shape : (int, int)
        Image shape.
    match, correlation : array_like
        From :func:`ibp_lab.inference.streaming.match_features`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = matched_features_figure(np.eye(4), np.eye(4), (2, 2), [0, 1, 2, 3], [1, 1, 1, 1])
    >>> len(fig.axes)
    8
    """
    shape = check_shape("shape", shape)
    learned = check_images("learned", learned, shape)
    true = check_images("true", true, shape, min_rows=1)
    k = true.shape[0]
    check_panels("true (two panels per feature)", 2.0 * k)
    match = check_index_array("match", match, learned.shape[0], partner="rows of learned",
                              allow_minus_one=True)
    if match.size != k:
        raise ValueError(f"match must hold one index per row of true ({k}), got {match.size}")
    correlation = check_finite("correlation", correlation, ndim=1, length=k, partner="rows of true",
                               low=-1.0, high=1.0)
    fig = Figure(figsize=(1.3 * k + 0.4, 3.2), layout="constrained")
    axes = fig.subplots(2, k, squeeze=False)
    vmax = float(np.abs(np.vstack([learned, true])).max() or 1.0)
    _images(axes[0], true, shape, vmax, [f"true {i + 1}" for i in range(k)])
    shown = np.array([learned[m] if m >= 0 else np.zeros(true.shape[1]) for m in match])
    labels = [f"r = {c:.3f}" if m >= 0 else "none" for m, c in zip(match, correlation)]
    _images(axes[1], shown, shape, vmax, labels)
    return with_alt(fig)


def feature_grid_figure(features, usage, shape, *, ncols: int = 10, max_features: int = 40,
                        title: str | None = None) -> Figure:
    """Learned features as images, most used first, each titled with its usage.

    Features are changes to the average image: red adds ink, blue removes it, on one
    symmetric colour scale.

    Parameters
    ----------
    features : array_like
        ``(K, h * w)`` feature means.
    usage : array_like
        ``(K,)`` expected number of owners (``feature_usage_``).
    shape : (int, int)
        Image shape.
    ncols, max_features : int, optional
        Images per row; at most this many features (the most used).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = feature_grid_figure(np.eye(4), [1.0, 5.0, 2.0, 0.5], (2, 2), ncols=4)
    >>> [ax.get_title() for ax in fig.axes][:2]
    ['5.0', '2.0']
    """
    shape = check_shape("shape", shape)
    features = check_images("features", features, shape)
    usage = check_finite("usage", usage, ndim=1, length=features.shape[0], partner="rows of features", low=0.0)
    ncols = check_count("ncols", ncols, minimum=1)
    max_features = check_count("max_features", max_features, minimum=1)
    check_panels("features and max_features", min(features.shape[0], max_features))
    order = np.argsort(-usage, kind="stable")[:max_features]
    m = max(order.size, 1)
    ncols = min(ncols, m)
    nrows = int(np.ceil(m / ncols))
    fig = Figure(figsize=(1.0 * ncols + 0.3, 1.25 * nrows * shape[0] / shape[1] + 0.5),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    vmax = float(np.abs(features).max()) if features.size else 1.0
    for ax in axes.flat[order.size:]:
        ax.axis("off")
    _images(axes.flat[: order.size], features[order], shape, vmax or 1.0,
            [f"{u:.1f}" for u in usage[order]])
    if title:
        fig.suptitle(str(title), fontsize=10)
    return with_alt(fig)


#: What :func:`cost_figure` reads from an :class:`ibp_lab.inference.streaming.StreamCost`.
COST_FIELDS = ("n", "seconds_per_obs", "state_bytes", "peak_bytes", "n_slots")


def cost_figure(cost, *, time_fit=None) -> Figure:
    """Time per observation (left) and memory (right) against the number of observations.

    Parameters
    ----------
    cost : ibp_lab.inference.streaming.StreamCost
        Measurements at checkpoints.
    time_fit : (float, float), optional
        ``(intercept, slope)`` of microseconds per observation against ``ln n``, drawn as a
        line.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.inference.streaming import StreamCost
    >>> c = StreamCost(np.array([10, 100]), np.array([1e-4, 1.2e-4]), np.array([800, 1200]),
    ...                np.array([5000, 6000]), np.array([3, 5]), np.array([3.0, 5.0]))
    >>> len(cost_figure(c, time_fit=(50.0, 10.0)).axes)
    3
    """
    # Judged by its fields, not its class: a figure does not import the streaming sampler.
    if not all(hasattr(cost, field) for field in COST_FIELDS):
        raise TypeError(f"cost must be an ibp_lab.inference.streaming.StreamCost, got {type(cost).__name__}")
    n = check_finite("cost.n", cost.n, ndim=1, min_size=1, low=1.0)
    check_panels("cost.n (checkpoints)", n.size)
    fields = {}
    for field in ("seconds_per_obs", "state_bytes", "peak_bytes", "n_slots"):
        fields[field] = check_finite(f"cost.{field}", getattr(cost, field), ndim=1, length=n.size,
                                     partner="cost.n", low=0.0)
    if time_fit is not None:
        if isinstance(time_fit, (str, bytes)) or np.ndim(time_fit) != 1 or len(time_fit) != 2:
            raise ValueError(f"time_fit must be a pair (intercept, slope) of real numbers, got {time_fit!r}")
        time_fit = (check_optional_real("time_fit[0]", time_fit[0], allow_none=False),
                    check_optional_real("time_fit[1]", time_fit[1], allow_none=False))
    fig = Figure(figsize=(10.5, 3.4), layout="constrained")
    ax_time, ax_mem = fig.subplots(1, 2)
    ax_time.plot(n, fields["seconds_per_obs"] * 1e6, "o", color=PALETTE["blue"],
                 label="measured (fastest block)")
    if time_fit is not None:
        grid = np.geomspace(n.min(), n.max(), 50)
        ax_time.plot(grid, time_fit[0] + time_fit[1] * np.log(grid), color=PALETTE["orange"],
                     label=f"{time_fit[0]:.0f} + {time_fit[1]:.1f} ln n")
    ax_time.set(xscale="log", xlabel="observations seen, n", ylabel="microseconds per observation",
                ylim=(0, None))
    ax_time.legend(frameon=False, fontsize=10)
    ax_mem.plot(n, fields["state_bytes"] / 1024, "o-", color=PALETTE["blue"],
                label="running state")
    ax_mem.plot(n, fields["peak_bytes"] / 1024, "s-", color=PALETTE["green"],
                label="peak while processing one observation")
    ax_mem.set(xscale="log", xlabel="observations seen, n", ylabel="kibibytes", ylim=(0, None))
    ax_slots = ax_mem.twinx()
    ax_slots.plot(n, fields["n_slots"], ":", color=PALETTE["grey"], label="feature slots")
    ax_slots.set_ylabel("feature slots", color=PALETTE["grey"])
    ax_slots.set_ylim(0, None)
    lines = ax_mem.get_legend_handles_labels()
    extra = ax_slots.get_legend_handles_labels()
    ax_mem.legend(lines[0] + extra[0], lines[1] + extra[1], frameon=False, fontsize=10,
                  loc="lower right")
    return with_alt(fig)
