"""Figures of the tempering chapter: tempered laws, the ladder's swap rates, traces by CPU time."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_real_array
from ibp_lab.teaching.plotting._doors import check_labels, check_optional_real, check_panels
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import PALETTE, label_line_ends, series_style

__all__ = ["tempered_laws_figure", "ladder_figure", "traces_by_cpu_figure"]


def _vector(name: str, value, *, size: int | None = None) -> np.ndarray:
    array = check_real_array(name, value)
    if array.ndim != 1 or (size is not None and array.size != size):
        raise ValueError(f"{name} must be a 1-d array" + (f" of {size} numbers" if size else "")
                         + f", got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinite values)")
    return array


def _laws(name: str, value) -> np.ndarray:
    array = check_real_array(name, value)
    if array.size and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinite values)")
    return array


def tempered_laws_figure(inverse_temperatures, exact_laws, sampled_laws) -> Figure:
    """The exact law of ``K+`` at each inverse temperature (bars) and a run's frequencies (dots).

    Parameters
    ----------
    inverse_temperatures : array_like
        ``(R,)`` the rungs.
    exact_laws, sampled_laws : array_like
        ``(R, k)`` each: row ``j`` is the law of ``K+`` at rung ``j``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = tempered_laws_figure([1.0, 0.0], [[0.5, 0.5], [0.2, 0.8]], [[0.4, 0.6], [0.2, 0.8]])
    >>> len(fig.axes)
    2
    """
    b = _vector("inverse_temperatures", inverse_temperatures)
    check_panels("inverse_temperatures", b.size)
    exact_laws = _laws("exact_laws", exact_laws)
    sampled_laws = _laws("sampled_laws", sampled_laws)
    if (exact_laws.ndim != 2 or exact_laws.shape[0] != b.size
            or sampled_laws.shape != exact_laws.shape):
        raise ValueError(f"exact_laws and sampled_laws must both have shape ({b.size}, k), got "
                         f"{exact_laws.shape} and {sampled_laws.shape}")
    fig = Figure(figsize=(2.4 * b.size + 0.6, 2.8))
    axes = fig.subplots(1, b.size, sharey=True, squeeze=False)[0]
    k = np.arange(exact_laws.shape[1])
    for ax, level_b, p, f in zip(axes, b, exact_laws, sampled_laws):
        ax.bar(k, p, color=PALETTE["sky"], label="exact")
        ax.plot(k, f, "o", color=PALETTE["vermillion"], ms=4, label="replica")
        ax.set_title(f"b = {level_b:.2f}")
        ax.set_xlabel("$K_+$")
        ax.set_xticks(k[::2])
    axes[0].set_ylabel("probability")
    axes[0].legend(frameon=False, fontsize=10)
    fig.tight_layout()
    return with_alt(fig)


def ladder_figure(ladders: Mapping, rejections: Mapping) -> Figure:
    """Swap acceptance of each adjacent pair (left) and the cumulative barrier (right).

    Parameters
    ----------
    ladders : dict
        Label -> ``(R,)`` inverse temperatures (decreasing, from 1).
    rejections : dict
        The same labels -> ``(R - 1,)`` rejection rate of each pair.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = ladder_figure({"run": [1.0, 0.5, 0.1]}, {"run": [0.4, 0.6]})
    >>> len(fig.axes)
    2
    """
    if not isinstance(ladders, Mapping) or not isinstance(rejections, Mapping) \
            or set(ladders) != set(rejections) or not ladders:
        raise ValueError("ladders and rejections must be non-empty dicts with the same labels")
    check_panels("ladders", len(ladders))
    labels = check_labels("ladders", list(ladders), len(ladders), what="runs")
    fig = Figure(figsize=(8.4, 3.1))
    left, right = fig.subplots(1, 2)
    for i, label in enumerate(labels):
        style = {**series_style(i), "markersize": 3}  # colour, marker and dashes per ladder
        b = _vector(f"ladders[{label!r}]", ladders[label])
        r = _vector(f"rejections[{label!r}]", rejections[label], size=b.size - 1)
        middle = 0.5 * (b[1:] + b[:-1])
        left.plot(middle, 1.0 - r, label=label, **style)
        barrier = np.concatenate([[0.0], np.cumsum(r[::-1])])
        right.plot(b[::-1], barrier, label=label, **style)
    left.set_xlabel("inverse temperature b (pair midpoint)")
    left.set_ylabel("swap acceptance")
    left.set_ylim(0, 1)
    right.set_xlabel("inverse temperature b")
    right.set_ylabel(r"cumulative barrier $\Lambda(b)$")
    left.legend(frameon=False, fontsize=10)
    fig.tight_layout()
    return with_alt(fig)


def traces_by_cpu_figure(runs: Mapping, *, reference: float | None = None,
                         reference_label: str = "reference") -> Figure:
    """Log joint of several chains against the CPU seconds each has used, one panel per group.

    Parameters
    ----------
    runs : dict
        Panel title -> list of ``(seconds, log_joint)`` pairs of 1-d arrays, one per chain.
    reference : float, optional
        A horizontal line (for example the log joint of the true ``Z``).
    reference_label : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> t = np.arange(5.0)
    >>> fig = traces_by_cpu_figure({"plain": [(t, -t)], "tempered": [(t, -t / 2)]}, reference=0.0)
    >>> len(fig.axes)
    2
    """
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(
            "runs must be a non-empty dict: panel title -> list of (seconds, log_joint)")
    check_panels("runs", len(runs))
    check_labels("runs", list(runs), len(runs), what="panel")
    for title, chains in runs.items():
        if isinstance(chains, (str, bytes, Mapping)) or not isinstance(chains, (list, tuple)) \
                or not all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in chains):
            raise TypeError(f"runs[{title!r}] must be a list of (seconds, log_joint) pairs, "
                            f"got {type(chains).__name__}")
    reference = check_optional_real("reference", reference)
    fig = Figure(figsize=(4.3 * len(runs), 3.2))
    axes = fig.subplots(1, len(runs), sharey=True, squeeze=False)[0]
    for ax, (title, chains) in zip(axes, runs.items()):
        lines = []
        for c, (seconds, log_joint) in enumerate(chains):
            seconds = _vector(f"runs[{title!r}][{c}] seconds", seconds)
            log_joint = _vector(f"runs[{title!r}][{c}] log_joint", log_joint, size=seconds.size)
            lines += ax.plot(seconds, log_joint, lw=0.8, label=f"chain {c}",
                             **series_style(c, n_points=seconds.size))
        label_line_ends(ax, lines, [f"chain {c}" for c in range(len(lines))])
        if reference is not None:
            ax.axhline(reference, color=PALETTE["black"], ls="--", lw=0.8,
                       label=reference_label)
        ax.set_title(str(title))
        ax.set_xlabel("CPU seconds")
    axes[0].set_ylabel("log joint")
    axes[0].legend(frameon=False, fontsize=10)
    fig.tight_layout()
    return with_alt(fig)
