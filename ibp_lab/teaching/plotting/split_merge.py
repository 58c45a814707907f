"""Figures of chapter 7: split-merge moves, their acceptance ratios and their chains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import (
    axes_or_new,
    check_finite,
    check_fraction,
    check_labels,
    check_optional_real,
    check_panels,
    is_chain_result,
)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import PALETTE, label_line_ends, series_style

__all__ = ["log_ratios_figure", "plot_k_plus_check", "traces_by_time_figure"]

_KIND_COLOURS = {"split": PALETTE["blue"], "merge": PALETTE["vermillion"]}


def log_ratios_figure(stats_by_move: dict, *, floor: float = -2000.0) -> Figure:
    """Histograms of the log Metropolis-Hastings ratios of splits and merges, one panel per move.

    The horizontal axis is symmetric-logarithmic: ratios run from about -1000
    to 0, and a proposal has a fair chance only within a few units of 0 (it is
    accepted when the log ratio exceeds ``log U``, ``U`` uniform). Ratios
    below ``floor`` are drawn at ``floor``.

    Parameters
    ----------
    stats_by_move : dict
        Panel title -> the ``stats`` of :func:`ibp_lab.inference.split_merge.random_split_merge`
        or :func:`ibp_lab.inference.split_merge.sequential_split_merge`.
    floor : float, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> stats = {"kind": np.array(["split", "merge"]), "log_ratio": np.array([-50.0, -3.0])}
    >>> fig = log_ratios_figure({"random": stats})
    >>> len(fig.axes)
    1
    """
    stats_by_move = _check_move_stats(stats_by_move)
    floor = check_optional_real("floor", floor, allow_none=False)
    if not -1e300 <= floor < 0:
        raise ValueError(f"floor must be a negative number >= -1e300 (log ratios are <= 0), got {floor:g}")
    fig = Figure(figsize=(5.2 * len(stats_by_move), 3.3))
    axes = fig.subplots(1, len(stats_by_move), sharey=True, squeeze=False)[0]
    bins = -np.flip(np.concatenate([[0.0], np.geomspace(0.1, -floor, 40)]))
    bins = np.append(bins, 5.0)
    for ax, (title, stats) in zip(axes, stats_by_move.items()):
        for kind, colour in _KIND_COLOURS.items():
            ratios = np.maximum(stats["log_ratio"][stats["kind"] == kind], floor)  # -inf -> floor
            if ratios.size:
                ax.hist(ratios, bins=bins, color=colour, alpha=0.55,
                        label=f"{kind}s ({ratios.size})")
        ax.axvline(0.0, color=PALETTE["black"], lw=0.8)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel("log acceptance ratio")
        ax.set_title(title)
        ax.legend(fontsize=10, frameon=False, loc="upper left")
    axes[0].set_ylabel("proposals")
    return with_alt(fig)


def _check_move_stats(stats_by_move) -> dict:
    """Titles -> ``stats`` with 1-D ``kind`` and ``log_ratio`` of one length (NaN refused, -inf kept)."""
    if not isinstance(stats_by_move, Mapping):
        raise TypeError(f"stats_by_move must be a dict (title -> stats of a split-merge move), got "
                        f"{type(stats_by_move).__name__}")
    if len(stats_by_move) == 0:
        raise ValueError("stats_by_move must hold at least one move, got an empty dict")
    check_panels("stats_by_move", len(stats_by_move))
    out = {}
    for title, stats in stats_by_move.items():
        where = f"stats_by_move[{title!r}]"
        if not isinstance(title, str):
            raise TypeError(f"stats_by_move keys must be strings (panel titles), got {type(title).__name__}")
        if not isinstance(stats, Mapping) or "kind" not in stats or "log_ratio" not in stats:
            raise ValueError(f"{where} must be the stats dict of a split-merge move, with 'kind' and 'log_ratio'")
        kind = np.asarray(stats["kind"]) if not isinstance(stats["kind"], (str, bytes)) else None
        if kind is None or kind.ndim != 1 or (kind.size and kind.dtype.kind != "U"):
            raise TypeError(f"{where}['kind'] must be a 1-D array of strings ('split', 'merge')")
        ratio = np.asarray(stats["log_ratio"]) if not isinstance(stats["log_ratio"], (str, bytes)) else None
        if ratio is None or ratio.dtype.kind not in "biuf" or ratio.ndim != 1:
            raise TypeError(f"{where}['log_ratio'] must be a 1-D array of real numbers")
        ratio = ratio.astype(float)
        if ratio.shape != kind.shape:
            raise ValueError(f"{where}['log_ratio'] must hold one ratio per entry of 'kind' ({kind.size}), "
                             f"got {ratio.size}")
        if np.any(np.isnan(ratio)) or np.any(ratio == np.inf):
            raise ValueError(f"{where}['log_ratio'] must not hold NaN or +inf (-inf, an impossible "
                             "proposal, is drawn at floor)")
        out[title] = {"kind": kind, "log_ratio": ratio}
    return out


def plot_k_plus_check(frequencies, p_exact, *, ax=None, label: str = "sampler"):
    """A sampler's histogram of ``K+`` as bars, the exact posterior as points.

    Examples
    --------
    >>> ax = plot_k_plus_check([0.2, 0.5, 0.3], [0.25, 0.45, 0.3])
    >>> ax.get_xlabel()
    'K+'
    """
    p_exact = check_finite("p_exact", p_exact, ndim=1, low=0.0, high=1.0, min_size=1)
    frequencies = check_finite("frequencies", frequencies, ndim=1, low=0.0, high=1.0)
    if frequencies.size < p_exact.size:
        raise ValueError(f"frequencies must hold at least one entry per entry of p_exact ({p_exact.size}), "
                         f"got {frequencies.size}")
    check_panels("p_exact (one bar per K+)", p_exact.size)
    ax = axes_or_new("ax", ax, figsize=(5, 3.2))
    k = np.arange(len(p_exact))
    ax.bar(k, frequencies[: len(k)], color=PALETTE["sky"], label=label)
    ax.plot(k, p_exact, "o", color=PALETTE["black"], ms=4, label="exact (enumeration)")
    ax.set_xlabel("K+")
    ax.set_ylabel("posterior probability")
    ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def traces_by_time_figure(runs: dict, *, variables=("k_plus", "log_joint"), labels=None,
                          ylabels=None, ylim_quantile: float | None = 0.02) -> Figure:
    """Traces of several chains against compute time, one column per sampler.

    Each chain's draws are placed at the CPU time its run recorded for them
    (:attr:`ibp_lab.inference.chains.ChainResult.seconds`), so that samplers with
    different costs per iteration are compared at equal compute.

    Parameters
    ----------
    runs : dict
        Column title -> the chains of one :func:`ibp_lab.inference.chains.run_chains`
        call (its list of :class:`~ibp_lab.inference.chains.ChainResult`).
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
    >>> from ibp_lab.inference import chains as ch
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> _, run = ch.run_chains(X, 1, 4, np.random.default_rng(1), Z0=np.ones((6, 1)),
    ...                        alpha=1.0, sigma_x=0.5, sigma_a=1.0,
    ...                        moves=[ch.GibbsSweep(), ch.SequentialSplitMerge(n_proposals=2)])
    >>> fig = traces_by_time_figure({"with the move": run})
    >>> len(fig.axes)
    2
    """
    runs = _check_move_runs(runs)
    if isinstance(variables, (str, bytes)) or not isinstance(variables, Sequence):
        raise TypeError(f"variables must be a list of trace variable names, got {type(variables).__name__}")
    if len(variables) == 0:
        raise ValueError("variables must name at least one trace variable, got none")
    check_panels("variables and runs", len(variables) * float(len(runs)))
    variables = check_labels("variables", variables, len(variables), what="row of panels")
    for title, run in runs.items():
        for c, chain in enumerate(run):
            for name in variables:
                if name not in chain.trace.data_vars:
                    raise ValueError(f"variables must be in the trace of every chain; runs[{title!r}][{c}] has "
                                     f"no {name!r} (it has {sorted(map(str, chain.trace.data_vars))})")
                check_finite(f"runs[{title!r}][{c}].trace.{name}", chain.trace[name].values, ndim=1)
    n_chains = max(len(run) for run in runs.values())
    check_panels("runs (chains, one line each)", n_chains)
    if labels is not None:
        labels = check_labels("labels", labels, len(runs[next(iter(runs))]), what="chain")
    ylabels = list(variables) if ylabels is None else check_labels("ylabels", ylabels, len(variables),
                                                                     what="variable")
    if ylim_quantile is not None:
        ylim_quantile = check_fraction("ylim_quantile", ylim_quantile)
    fig = Figure(figsize=(5.6 * len(runs), 2.6 * len(variables)))
    axes = fig.subplots(len(variables), len(runs), sharex="col", sharey="row", squeeze=False)
    for col, (title, run) in enumerate(runs.items()):
        for row, name in enumerate(variables):
            ax = axes[row, col]
            lines = []
            for c, chain in enumerate(run):
                label = labels[c] if labels is not None and row == 0 and col == 0 else None
                lines += ax.plot(chain.seconds, chain.trace[name].values, lw=0.8, label=label,
                                 **series_style(c, n_points=len(chain.seconds)))
            if labels is not None:
                label_line_ends(ax, lines, labels[: len(lines)])
            if col == 0:
                ax.set_ylabel(ylabels[row])
        axes[0, col].set_title(title)
        axes[-1, col].set_xlabel("CPU time (s)")
    if ylim_quantile is not None:
        last = np.concatenate([chain.trace[variables[-1]].values for run in runs.values() for chain in run])
        axes[-1, 0].set_ylim(np.quantile(last, ylim_quantile), last.max()
                             + 0.05 * (last.max() - np.quantile(last, ylim_quantile)))
    if labels is not None:
        axes[0, 0].legend(fontsize=10, frameon=False)
    fig.tight_layout()
    return with_alt(fig)


def _check_move_runs(runs) -> dict:
    """Titles -> lists of :class:`ibp_lab.inference.chains.ChainResult` with per-draw CPU times."""
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs must be a dict (title -> list of ChainResult), got {type(runs).__name__}")
    if len(runs) == 0:
        raise ValueError("runs must hold at least one run, got an empty dict")
    check_panels("runs", len(runs))
    checked = {}
    for title, run in runs.items():
        if not isinstance(title, str):
            raise TypeError(f"runs keys must be strings (column titles), got {type(title).__name__}")
        if is_chain_result(run):
            raise TypeError(f"runs[{title!r}] must be a list of ChainResult; wrap one chain in a list: [chain]")
        if not isinstance(run, (list, tuple)) or len(run) == 0:
            raise TypeError(f"runs[{title!r}] must be a non-empty list of ibp_lab.inference.chains.ChainResult "
                            f"(from run_chains), got {type(run).__name__}")
        for c, chain in enumerate(run):
            if not is_chain_result(chain):
                raise TypeError(f"runs[{title!r}][{c}] must be a ChainResult, got {type(chain).__name__}")
            if chain.trace.sizes.get("draw", 0) < 1 or "seconds" not in chain.sample_stats:
                raise ValueError(f"runs[{title!r}][{c}] must hold at least one draw and its CPU seconds "
                                 f"(run it with ibp_lab.inference.chains.run_chains)")
            check_finite(f"runs[{title!r}][{c}].seconds", chain.seconds, ndim=1,
                         length=chain.trace.sizes["draw"], partner="draws", low=0.0)
        checked[title] = list(run)
    return checked
