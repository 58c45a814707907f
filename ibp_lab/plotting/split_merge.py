"""Figures of chapter 6: split-merge moves, their acceptance ratios and their chains."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibp_lab._checks import check_real_array
from ibp_lab.plotting._style import CYCLE, PALETTE

__all__ = ["plot_log_ratios", "plot_k_plus_check", "plot_traces_by_time"]

_KIND_COLOURS = {"split": PALETTE["blue"], "merge": PALETTE["vermillion"]}


def plot_log_ratios(stats_by_move: dict, *, axes=None, floor: float = -2000.0):
    """Histograms of the log Metropolis-Hastings ratios of splits and merges, one panel per move.

    The horizontal axis is symmetric-logarithmic: ratios run from about -1000
    to 0, and a proposal has a fair chance only within a few units of 0 (it is
    accepted when the log ratio exceeds ``log U``, ``U`` uniform). Ratios
    below ``floor`` are drawn at ``floor``.

    Parameters
    ----------
    stats_by_move : dict
        Panel title -> the ``stats`` of :func:`ibp_lab.split_merge.random_split_merge`
        or :func:`ibp_lab.split_merge.sequential_split_merge`.
    axes : sequence of matplotlib.axes.Axes, optional
        One per move; a new figure is made if omitted.
    floor : float, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> stats = {"kind": np.array(["split", "merge"]), "log_ratio": np.array([-50.0, -3.0])}
    >>> fig = plot_log_ratios({"random": stats})
    >>> len(fig.axes)
    1
    """
    if axes is None:
        fig, axes = plt.subplots(1, len(stats_by_move), figsize=(5.2 * len(stats_by_move), 3.3),
                                 sharey=True, squeeze=False)
        axes = axes[0]
    fig = axes[0].figure
    bins = -np.flip(np.concatenate([[0.0], np.geomspace(0.1, -floor, 40)]))
    bins = np.append(bins, 5.0)
    for ax, (title, stats) in zip(axes, stats_by_move.items()):
        for kind, colour in _KIND_COLOURS.items():
            ratios = np.maximum(stats["log_ratio"][stats["kind"] == kind], floor)
            if ratios.size:
                ax.hist(ratios, bins=bins, color=colour, alpha=0.55,
                        label=f"{kind}s ({ratios.size})")
        ax.axvline(0.0, color=PALETTE["black"], lw=0.8)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel("log acceptance ratio")
        ax.set_title(title)
        ax.legend(fontsize=8, frameon=False, loc="upper left")
    axes[0].set_ylabel("proposals")
    return fig


def plot_k_plus_check(frequencies, p_exact, *, ax=None, label: str = "sampler"):
    """A sampler's histogram of ``K+`` as bars, the exact posterior as points.

    Examples
    --------
    >>> ax = plot_k_plus_check([0.2, 0.5, 0.3], [0.25, 0.45, 0.3])
    >>> ax.get_xlabel()
    'K+'
    """
    frequencies = check_real_array("frequencies", frequencies)
    p_exact = check_real_array("p_exact", p_exact)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.2))
    k = np.arange(len(p_exact))
    ax.bar(k, frequencies[: len(k)], color=PALETTE["sky"], alpha=0.7, label=label)
    ax.plot(k, p_exact, "o", color=PALETTE["black"], ms=4, label="exact (enumeration)")
    ax.set_xlabel("K+")
    ax.set_ylabel("posterior probability")
    ax.legend(fontsize=8, frameon=False)
    return ax


def plot_traces_by_time(runs: dict, *, variables=("k_plus", "log_joint"), labels=None,
                        ylabels=None, ylim_quantile: float | None = 0.02):
    """Traces of several chains against compute time, one column per sampler.

    Each chain's draws are spread evenly over its measured CPU time, so that
    samplers with different costs per iteration are compared at equal compute.

    Parameters
    ----------
    runs : dict
        Column title -> :class:`ibp_lab.split_merge.MoveChains`.
    variables : sequence of str, optional
        Trace variables, one row of panels each.
    labels : sequence of str, optional
        Legend label of each chain.
    ylabels : sequence of str, optional
        Axis label of each variable.
    ylim_quantile : float, optional
        Lower limit of the last row's axis at this quantile of all its values
        (log joints start far below where they settle); None to keep matplotlib's.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.split_merge import run_chains_with_moves
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> run = run_chains_with_moves(X, [np.ones((6, 1))], 4, np.random.default_rng(1),
    ...                             alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    >>> fig = plot_traces_by_time({"with the move": run})
    >>> len(fig.axes)
    2
    """
    ylabels = list(ylabels or variables)
    fig, axes = plt.subplots(len(variables), len(runs), figsize=(5.6 * len(runs),
                                                                  2.6 * len(variables)),
                             sharex="col", sharey="row", squeeze=False)
    for col, (title, run) in enumerate(runs.items()):
        trace = run.trace
        n_draws = trace.sizes["draw"]
        for row, name in enumerate(variables):
            ax = axes[row, col]
            for c in range(trace.sizes["chain"]):
                seconds = np.arange(1, n_draws + 1) * run.seconds[c] / n_draws
                label = labels[c] if labels is not None and row == 0 and col == 0 else None
                ax.plot(seconds, trace[name].values[c], color=CYCLE[c % len(CYCLE)], lw=0.8,
                        label=label)
            if col == 0:
                ax.set_ylabel(ylabels[row])
        axes[0, col].set_title(title)
        axes[-1, col].set_xlabel("CPU time (s)")
    if ylim_quantile is not None:
        last = np.concatenate([run.trace[variables[-1]].values.ravel() for run in runs.values()])
        axes[-1, 0].set_ylim(np.quantile(last, ylim_quantile), last.max()
                             + 0.05 * (last.max() - np.quantile(last, ylim_quantile)))
    if labels is not None:
        axes[0, 0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig
