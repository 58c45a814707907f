"""Figures of the PyMC chapter (``book/10_pymc.md``).

Every function returns a new :class:`matplotlib.figure.Figure` built without pyplot and
draws from arrays or ArviZ ``InferenceData`` made by :mod:`ibp_lab.inference.pymc_models`.

- :func:`log_density_figure`: the model's log density per chain, warm-up included,
  for one or more runs side by side (the all-off trap shows as a floor far below).
- :func:`stick_posterior_figure`: the posterior of every ``pi_k`` per chain, and of the
  last one alone: the truncation check.
- :func:`feature_usage_figure`: how often the digits of each class own each feature.
- :func:`gradient_cost_figure`: seconds per gradient against the truncation level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import (
    check_class_labels,
    check_finite,
    check_fraction,
    check_labels,
    check_panels,
)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import PALETTE, SEQUENTIAL_CMAP, label_line_ends, series_style

__all__ = [
    "log_density_figure",
    "stick_posterior_figure",
    "feature_usage_figure",
    "gradient_cost_figure",
]


def _group_variable(name: str, idata, group: str, variable: str, dims: tuple) -> np.ndarray:
    """``idata.<group>.<variable>`` as a finite float array over ``dims`` (then any others)."""
    from arviz import InferenceData

    if not isinstance(idata, InferenceData):
        raise TypeError(f"{name} must be an arviz.InferenceData, got {type(idata).__name__}")
    if group not in idata.groups() or variable not in idata[group].data_vars:
        raise ValueError(f"{name} must hold {group}.{variable}")
    values = idata[group][variable]
    if not set(dims) <= set(values.dims):
        raise ValueError(f"{name}.{group}.{variable} must have dims {dims}, got {values.dims}")
    arr = check_finite(f"{name}.{group}.{variable}", values.transpose(*dims, ...).to_numpy())
    return arr


def _log_density_by_chain(name: str, idata) -> tuple[np.ndarray, int]:
    """``(chains, iterations)`` log density, warm-up first if kept, and the warm-up length."""
    kept = _group_variable(name, idata, "sample_stats", "lp", ("chain", "draw"))
    if kept.ndim != 2 or kept.size == 0:
        raise ValueError(f"{name}.sample_stats.lp must be (chain, draw) with at least one draw, "
                         f"got shape {kept.shape}")
    if "warmup_sample_stats" in idata.groups() and "lp" in idata.warmup_sample_stats:
        warm = _group_variable(name, idata, "warmup_sample_stats", "lp", ("chain", "draw"))
        if warm.ndim != 2 or warm.shape[0] != kept.shape[0]:
            raise ValueError(f"{name}.warmup_sample_stats.lp must be (chain, draw) with "
                             f"{kept.shape[0]} chains, got shape {warm.shape}")
        return np.concatenate([warm, kept], axis=1), warm.shape[1]
    return kept, 0


def log_density_figure(runs: Mapping[str, object], *, lower_quantile: float = 0.01) -> Figure:
    """The model's log density along each chain, one panel per run, on a shared axis.

    Parameters
    ----------
    runs : dict
        Title -> ``InferenceData`` with ``sample_stats.lp`` (and, if kept,
        ``warmup_sample_stats.lp``).
    lower_quantile : float, optional
        The axis starts at this quantile of all values shown (minus a margin), so
        that the first few warm-up steps from a poor start do not squash the rest.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(sample_stats={"lp": -np.arange(20.0).reshape(2, 10)})
    >>> fig = log_density_figure({"run": idata})
    >>> len(fig.axes[0].lines)  # one line per chain
    2
    """
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs must be a dict (title -> InferenceData), got {type(runs).__name__}")
    if len(runs) == 0:
        raise ValueError("runs must hold at least one run, got an empty dict")
    check_panels("runs", len(runs))
    lower_quantile = check_fraction("lower_quantile", lower_quantile)
    traces = {}
    for title, idata in runs.items():
        if not isinstance(title, str):
            raise TypeError(f"runs keys must be strings (panel titles), got {type(title).__name__}")
        traces[title] = _log_density_by_chain(f"runs[{title!r}]", idata)
    check_panels("runs (chains of all runs)", sum(lp.shape[0] for lp, _ in traces.values()))
    fig = Figure(figsize=(5.2 * len(runs), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(runs), sharey=True, squeeze=False)[0])
    values = np.concatenate([lp.ravel() for lp, _ in traces.values()])
    low, high = np.quantile(values, lower_quantile), values.max()
    margin = 0.05 * (high - low) + 1.0
    for ax, (title, (lp, n_warm)) in zip(axes, traces.items()):
        lines = [ax.plot(np.arange(lp.shape[1]), lp[chain], lw=0.9, label=f"chain {chain}",
                         **series_style(chain, n_points=lp.shape[1]))[0] for chain in range(lp.shape[0])]
        label_line_ends(ax, lines, [f"chain {chain}" for chain in range(lp.shape[0])])
        if n_warm:
            ax.axvspan(0, n_warm, color=PALETTE["grey"], alpha=0.12, lw=0)
            ax.text(n_warm / 2, 0.02, "warm-up", transform=ax.get_xaxis_transform(),
                    ha="center", fontsize=8, color=PALETTE["grey"])
        ax.set(xlabel="iteration", title=title, ylim=(low - margin, high + margin))
    axes[0].set_ylabel("log density")
    axes[-1].legend(frameon=False, fontsize=10, loc="lower right")
    return with_alt(fig)


def stick_posterior_figure(idata, *, threshold: float | None = None) -> Figure:
    """Posterior of the feature probabilities ``pi_k`` per chain; the last one alone.

    Left: posterior median and 90% interval of each ``pi_k``, chains side by side.
    Right: the draws of the last stick ``pi_K``, one histogram per chain. A
    truncation at ``K`` is adequate when ``pi_K`` is close to zero.

    Parameters
    ----------
    idata : arviz.InferenceData
        With ``posterior.pi`` (``chain, draw, feature``).
    threshold : float, optional
        Draw this level as a dashed line (for instance the largest ``pi_K``
        one would accept).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import arviz as az
    >>> pi = np.sort(np.random.default_rng(0).random((2, 30, 3)), axis=-1)[..., ::-1]
    >>> idata = az.from_dict(posterior={"pi": pi}, dims={"pi": ["feature"]})
    >>> len(stick_posterior_figure(idata).axes)
    2
    """
    pi = _group_variable("idata", idata, "posterior", "pi", ("chain", "draw"))
    if pi.ndim != 3 or pi.shape[1] == 0 or pi.shape[2] == 0:
        raise ValueError(f"idata.posterior.pi must be (chain, draw, feature) with at least one draw and "
                         f"one feature, got shape {pi.shape}")
    if pi.min() < 0 or pi.max() > 1:
        raise ValueError(f"idata.posterior.pi must hold probabilities in [0, 1], got values in "
                         f"[{pi.min():g}, {pi.max():g}]")
    check_panels("idata (chains x features)", pi.shape[0] * float(pi.shape[2]))
    threshold = None if threshold is None else check_fraction("threshold", threshold)
    n_chains, _, n_features = pi.shape
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    ax_all, ax_last = fig.subplots(1, 2, width_ratios=[1.4, 1])
    k = np.arange(1, n_features + 1)
    width = 0.6 / max(n_chains, 1)
    for chain in range(n_chains):
        style = series_style(chain)  # each chain its own colour, marker and dashes
        low, mid, high = np.quantile(pi[chain], [0.05, 0.5, 0.95], axis=0)
        x = k - 0.3 + width * (chain + 0.5)
        ax_all.errorbar(x, mid, yerr=[mid - low, high - mid], fmt=style["marker"], ms=3, lw=1,
                        color=style["color"], label=f"chain {chain}")
        ax_last.hist(pi[chain, :, -1], bins=25, range=(0, max(float(pi[..., -1].max()), 1e-3)),
                     histtype="step", lw=1.5, color=style["color"], ls=style["linestyle"],
                     label=f"chain {chain}")
    ax_all.set(xlabel="feature k", ylabel="$\\pi_k$ (median, 90% interval)", xticks=k,
               ylim=(0, None))
    ax_all.legend(frameon=False, fontsize=10)
    ax_last.set(xlabel=f"$\\pi_{{{n_features}}}$, the last stick", ylabel="draws",
                title="truncation check")
    if threshold is not None:
        for ax in (ax_all,):
            ax.axhline(threshold, ls="--", color=PALETTE["grey"], lw=1)
        ax_last.axvline(threshold, ls="--", color=PALETTE["grey"], lw=1)
    return with_alt(fig)


def feature_usage_figure(
    probabilities, labels, *, feature_names: Sequence[str] | None = None
) -> Figure:
    """Average probability that a digit of each class owns each feature.

    Parameters
    ----------
    probabilities : array_like
        ``(N, K)`` posterior probabilities ``P(z_nk = 1)`` (from
        :func:`ibp_lab.inference.pymc_models.recover_z`).
    labels : array_like
        ``(N,)`` class of each row (digits 0-9), used only to read the result.
    feature_names : sequence of str, optional
        Column labels; ``1..K`` by default.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = feature_usage_figure(np.full((4, 2), 0.5), [0, 0, 1, 1])
    >>> len(fig.axes)  # heatmap and colour bar
    2
    """
    probabilities = check_finite("probabilities", probabilities, ndim=2, low=0.0, high=1.0)
    if probabilities.shape[0] < 1 or probabilities.shape[1] < 1:
        raise ValueError(f"probabilities must be (N, K) with N, K >= 1, got shape {probabilities.shape}")
    n_features = probabilities.shape[1]
    check_panels("probabilities (one column per feature)", n_features)
    labels = check_class_labels("labels", labels, probabilities.shape[0], partner="probabilities")
    classes = np.unique(labels)
    check_panels("labels (one row per class)", classes.size)
    table = np.array([probabilities[labels == c].mean(axis=0) for c in classes])
    if feature_names is None:
        feature_names = [str(k + 1) for k in range(n_features)]
    names = check_labels("feature_names", feature_names, n_features, what="feature (column of probabilities)")
    fig = Figure(figsize=(1.0 + 0.55 * n_features, 3.6), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(table, cmap=SEQUENTIAL_CMAP, vmin=0, vmax=1, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(np.arange(n_features), names)
    ax.set_yticks(np.arange(classes.size), [str(c) for c in classes])
    ax.set(xlabel="feature", ylabel="digit class")
    fig.colorbar(image, ax=ax, label="mean $P(z_{nk} = 1)$")
    return with_alt(fig)


def gradient_cost_figure(n_features, seconds, *, reference: int | None = None) -> Figure:
    """Milliseconds per log-density gradient against the truncation level ``K``.

    Parameters
    ----------
    n_features : sequence of int
        Truncation levels timed.
    seconds : sequence of float
        Seconds per evaluation at each level.
    reference : int, optional
        Draw the line "doubling per feature" through this level (by default the largest).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = gradient_cost_figure([2, 4], [1e-4, 4e-4])
    >>> fig.axes[0].get_yscale()
    'log'
    """
    ks = check_finite("n_features", n_features, ndim=1, min_size=1, low=1.0, high=1000.0)
    if np.any(ks != np.round(ks)):
        raise ValueError("n_features must hold integers (truncation levels), got fractions")
    ms = 1e3 * check_finite("seconds", seconds, ndim=1, length=ks.size, partner="n_features",
                            low=1e-300, high=1e300)
    if ms.min() <= 0:
        raise ValueError("seconds must be > 0 (a log axis)")
    if reference is None:
        ref = int(ks[-1])
    else:
        if isinstance(reference, np.integer):
            reference = int(reference)
        if isinstance(reference, bool) or not isinstance(reference, int):
            raise TypeError(f"reference must be an integer (one of n_features), got {type(reference).__name__}")
        if reference not in ks:
            raise ValueError(f"reference must be one of n_features {ks.astype(int).tolist()}, got {reference}")
        ref = reference
    ref_ms = ms[list(ks).index(ref)]
    fig = Figure(figsize=(5.6, 3.4), layout="constrained")
    ax = fig.subplots()
    ax.plot(ks, ms, "o-", color=PALETTE["blue"], label="measured")
    ax.plot(ks, ref_ms * 2.0 ** (ks - ref), "--", color=PALETTE["grey"],
            label="doubling per feature")
    ax.set(yscale="log", xlabel="truncation level K (2^K patterns per row)",
           ylabel="ms per log density + gradient", xticks=ks)
    ax.legend(frameon=False, fontsize=10)
    return with_alt(fig)
