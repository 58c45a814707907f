"""Figures of the chapter on the beta process: atoms, rows, growth and popularity.

- :func:`plot_atom_weights`: the atoms' weights by rank, on one axes (``ax=None``);
- :func:`beta_process_figure`: a new figure of one draw's atoms above a threshold
  and the Bernoulli-process rows drawn from them;
- :func:`plot_levy_densities`: intensities (Levy measures) on log-log axes;
- :func:`plot_feature_growth` and :func:`plot_feature_popularity`: ``K+`` against
  the number of customers, and the number of dishes owned by ``m`` customers,
  simulated against exact, from a :class:`ibp_lab.teaching.explorers.DiscountDraws`;
- :func:`discount_explorer_figure`: the discount explorer's frame (both of the
  above beside one draw of ``Z``);
- :func:`heaps_zipf_figure`: a data set's Heaps' and Zipf's curves beside the
  posterior predictive ones of fitted models (:mod:`ibp_lab.inference.hyperposterior`).

The figures draw what :mod:`ibp_lab.models.beta_process` and :mod:`ibp_lab.teaching.explorers`
computed; none draws a random number.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_binary_matrix, check_positive, check_real_array
from ibp_lab.teaching.explorers import DiscountDraws
from ibp_lab.inference.hyperposterior import PredictiveCurves, heaps_curve, zipf_curve
from ibp_lab.teaching.plotting._doors import axes_or_new, check_result
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, PALETTE, integer_ticks
from ibp_lab.teaching.plotting.matrices import plot_binary_matrix

__all__ = [
    "plot_atom_weights",
    "beta_process_figure",
    "plot_levy_densities",
    "plot_feature_growth",
    "plot_feature_popularity",
    "discount_explorer_figure",
    "heaps_zipf_figure",
]


def _check_weights(weights) -> np.ndarray:
    weights = check_real_array("weights", weights)
    if weights.ndim != 1:
        raise ValueError(f"weights must be 1-D, got shape {weights.shape}")
    if not np.all((weights > 0) & (weights <= 1)):  # also refuses NaN
        raise ValueError("weights must lie in (0, 1]")
    return weights


def _check_label(label) -> str:
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    return label


def plot_atom_weights(weights, *, ax=None, threshold: float | None = None,
                      color: str = PALETTE["blue"], label: str = ""):
    """Stems of the atom weights in decreasing order, on a log scale.

    Parameters
    ----------
    weights : array_like
        ``(K,)`` atom weights in (0, 1].
    ax : matplotlib.axes.Axes, optional
    threshold : float, optional
        Drawn as a dashed line: atoms below it were not drawn.
    color, label : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_atom_weights([0.5, 0.1, 0.02], threshold=0.01)
    >>> ax.get_yscale()
    'log'
    """
    weights = np.sort(_check_weights(weights))[::-1]
    label = _check_label(label)
    ax = axes_or_new("ax", ax, figsize=(6, 2.6))
    rank = np.arange(1, weights.size + 1)
    ax.vlines(rank, 0.0 if weights.size == 0 else weights.min() / 3, weights, color=color, lw=1)
    ax.plot(rank, weights, "o", ms=3, color=color, label=label or None)
    if threshold is not None:
        threshold = check_positive("threshold", threshold, upper=1.0)
        ax.axhline(threshold, ls="--", lw=1, color=PALETTE["grey"], label="threshold")
        ax.set_ylim(bottom=threshold / 2)
    ax.set_yscale("log")
    ax.set_xlabel("atom (by weight)")
    ax.set_ylabel(r"weight $\pi_k$")
    integer_ticks(ax)
    from matplotlib.ticker import LogLocator  # keeps ``import ibp_lab.teaching.plotting`` light

    ax.yaxis.set_major_locator(LogLocator())  # integer_ticks set both axes; y is a log scale
    if label or threshold is not None:
        ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def beta_process_figure(weights, Z, *, threshold: float | None = None) -> Figure:
    """One beta-process draw: its atoms above a threshold (top) and rows drawn from them (bottom).

    Column ``k`` of ``Z`` is atom ``k`` of ``weights``; both are shown in the
    order of decreasing weight, so a row's ones fall mostly on the left.

    Parameters
    ----------
    weights : array_like
        ``(K,)`` atom weights in (0, 1] (:class:`ibp_lab.models.beta_process.BetaProcessAtoms`).
    Z : array_like
        ``(n, K)`` binary rows (:func:`ibp_lab.models.beta_process.bernoulli_process_rows`).
    threshold : float, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = beta_process_figure([0.6, 0.2, 0.05], [[1, 0, 0], [1, 1, 0]])
    >>> len(fig.axes)
    2
    """
    weights = _check_weights(weights)
    Z = check_binary_matrix("Z", Z)
    if Z.shape[1] != weights.size:
        raise ValueError(f"Z must have one column per entry of weights ({weights.size}), "
                         f"got {Z.shape[1]}")
    order = np.argsort(-weights, kind="stable")
    fig = Figure(figsize=(9, 5))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1, 1.3]})
    plot_atom_weights(weights, ax=top, threshold=threshold)
    top.set_xlabel("")
    plot_binary_matrix(Z[:, order], ax=bottom, left_order=False,
                       title=f"{Z.shape[0]} rows of the Bernoulli process")
    bottom.set_xlabel("atom (by weight)")
    bottom.set_aspect("auto")
    fig.tight_layout()
    return with_alt(fig)


def plot_levy_densities(pi, densities: Mapping[str, np.ndarray], *, ax=None):
    """Intensities ``nu(pi)`` (one curve per label) on log-log axes.

    Parameters
    ----------
    pi : array_like
        ``(P,)`` points in (0, 1).
    densities : mapping of str to array_like
        Label -> ``(P,)`` positive values at ``pi`` (at most 6 curves).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> p = np.linspace(0.01, 0.99, 5)
    >>> len(plot_levy_densities(p, {"1 / pi": 1 / p}).lines)
    1
    """
    pi = check_real_array("pi", pi)
    if pi.ndim != 1 or not np.all((pi > 0) & (pi < 1)):
        raise ValueError("pi must be a 1-D array of points in (0, 1)")
    if not isinstance(densities, Mapping) or not 1 <= len(densities) <= len(CYCLE):
        raise ValueError(f"densities must be a mapping of 1 to {len(CYCLE)} labelled curves")
    ax = axes_or_new("ax", ax, figsize=(5, 3.4))
    for (label, values), color, style in zip(densities.items(), CYCLE, ["-", "--", "-.", ":", "-", "--"]):
        values = check_real_array(f"densities[{label!r}]", values)
        if values.shape != pi.shape or not np.all(values > 0):
            raise ValueError(f"densities[{label!r}] must be positive, one value per point of pi")
        ax.plot(pi, values, style, color=color, lw=1.5, label=_check_label(label))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"weight $\pi$")
    ax.set_ylabel("intensity")
    ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def plot_feature_growth(draws: DiscountDraws, *, ax=None, color: str = PALETTE["blue"],
                        label: str | None = None):
    """``K+`` after ``1, ..., n`` customers: every simulated draw (thin) and ``E[K+]`` (thick).

    Log-log axes, on which ``N^d`` growth is a straight line of slope ``d`` and the
    two-parameter ``log N`` growth bends flat.

    Parameters
    ----------
    draws : ibp_lab.teaching.explorers.DiscountDraws
    ax : matplotlib.axes.Axes, optional
    color : str, optional
    label : str, optional
        Legend entry of the exact curve (default: the discount).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> d = explorers.discount_buffet(alpha=2.0, beta=1.0, discount=0.5, n=30, n_draws=2)
    >>> len(plot_feature_growth(d).lines)
    3
    """
    draws = check_result("draws", draws, DiscountDraws, made_by="ibp_lab.teaching.explorers.discount_buffet")
    label = f"d = {draws.discount:g}" if label is None else _check_label(label)
    ax = axes_or_new("ax", ax, figsize=(5, 3.4))
    customers = np.arange(1, draws.n + 1)
    for running in draws.running_k_plus:
        ax.plot(customers, np.maximum(running, 0.5), color=color, lw=0.5, alpha=0.35)
    ax.plot(customers, draws.expected_k_plus, color=color, lw=2, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("customers N")
    ax.set_ylabel("dishes K+")
    ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def plot_feature_popularity(draws: DiscountDraws, *, ax=None, color: str = PALETTE["blue"],
                            label: str | None = None):
    """Dishes owned by exactly ``m`` customers: the draws' mean (dots) and ``E[K_m]`` (line).

    Log-log axes; for ``m`` well below ``n`` the exact curve falls like
    ``m^(-1 - d)``. The line is drawn where ``E[K_m] >= 0.01``, the dots where
    ``E[K_m] >= 1 / n_draws`` (below it a mean over the draws is mostly zeros).

    Parameters
    ----------
    draws : ibp_lab.teaching.explorers.DiscountDraws
    ax : matplotlib.axes.Axes, optional
    color : str, optional
    label : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> d = explorers.discount_buffet(alpha=2.0, beta=1.0, discount=0.5, n=30, n_draws=2)
    >>> plot_feature_popularity(d).get_xscale()
    'log'
    """
    draws = check_result("draws", draws, DiscountDraws, made_by="ibp_lab.teaching.explorers.discount_buffet")
    label = f"d = {draws.discount:g}" if label is None else _check_label(label)
    ax = axes_or_new("ax", ax, figsize=(5, 3.4))
    m = np.arange(1, draws.n + 1)
    shown = draws.expected_popularity >= 0.01
    # a mean over n_draws buffets cannot resolve expectations below 1 / n_draws
    seen = (draws.expected_popularity >= 1.0 / draws.n_draws) & (draws.popularity > 0)
    ax.plot(m[seen], draws.popularity[seen], "o", ms=3, color=color, alpha=0.6)
    ax.plot(m[shown], draws.expected_popularity[shown], color=color, lw=1.5, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("owners m")
    ax.set_ylabel("dishes with m owners")
    ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def discount_explorer_figure(draws: DiscountDraws) -> Figure:
    """The discount explorer's frame: one ``Z``, the growth of ``K+`` and the popularity law.

    Parameters
    ----------
    draws : ibp_lab.teaching.explorers.DiscountDraws

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> d = explorers.discount_buffet(alpha=2.0, beta=1.0, discount=0.5, n=30, n_draws=2)
    >>> len(discount_explorer_figure(d).axes)
    3
    """
    draws = check_result("draws", draws, DiscountDraws, made_by="ibp_lab.teaching.explorers.discount_buffet")
    fig = Figure(figsize=(11, 3.6))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1, 1]})
    plot_binary_matrix(draws.Z, ax=axes[0], title=f"one draw: K+ = {draws.Z.shape[1]}")
    axes[0].set_aspect("auto")
    plot_feature_growth(draws, ax=axes[1])
    plot_feature_popularity(draws, ax=axes[2], color=PALETTE["orange"])
    fig.suptitle(f"alpha = {draws.alpha:g}, beta = {draws.beta:g}, discount = {draws.discount:g}"
                 f" ({draws.n_draws} draws of {draws.n} customers)")
    fig.tight_layout()
    return with_alt(fig)


def heaps_zipf_figure(Z, models: Mapping[str, PredictiveCurves]) -> Figure:
    """Heaps' curve (distinct features after ``n`` rows) and Zipf's curve (owners by rank)
    of the data ``Z`` (black) beside each model's posterior predictive curves.

    Each model is drawn as the 5-95% band of its simulated Heaps' curves and, on the
    right, each simulated Zipf's curve thinly; log-log axes on both panels.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary data, rows in the order the curves use.
    models : mapping of str to ibp_lab.inference.hyperposterior.PredictiveCurves
        Label -> curves of ``N``-row buffets (at most 6 models).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.inference import hyperposterior as hp
    >>> from ibp_lab.models.prior import sample_ibp
    >>> Z = sample_ibp(2.0, 30, np.random.default_rng(0))
    >>> draws = hp.sample_hyperparameters(Z, 20, np.random.default_rng(1))
    >>> curves = hp.predictive_curves(draws, 30, np.random.default_rng(2), n_simulations=3)
    >>> len(heaps_zipf_figure(Z, {"fitted": curves}).axes)
    2
    """
    Z = check_binary_matrix("Z", Z)
    if not isinstance(models, Mapping) or not 1 <= len(models) <= len(CYCLE):
        raise ValueError(f"models must be a mapping of 1 to {len(CYCLE)} labelled curves")
    for label, curves in models.items():
        if not isinstance(label, str):
            raise TypeError(f"models must have string labels as keys, got {type(label).__name__}")
        check_result(f"models[{label!r}]", curves, PredictiveCurves,
                     made_by="ibp_lab.inference.hyperposterior.predictive_curves")
        if curves.heaps.shape[1] != Z.shape[0]:
            raise ValueError(f"Z has {Z.shape[0]} rows but models[{label!r}] simulates "
                             f"{curves.heaps.shape[1]}: simulate as many rows as the data have")
    fig = Figure(figsize=(10, 3.8))
    heaps_ax, zipf_ax = fig.subplots(1, 2)
    rows = np.arange(1, Z.shape[0] + 1)
    for (label, curves), color in zip(models.items(), CYCLE[1:] + CYCLE[:1]):
        low, high = np.percentile(curves.heaps, [5, 95], axis=0)
        heaps_ax.fill_between(rows, np.maximum(low, 0.5), np.maximum(high, 0.5), color=color,
                              alpha=0.35, lw=0, label=label)
        for j, owners in enumerate(curves.zipf):
            zipf_ax.plot(np.arange(1, owners.size + 1), owners, color=color, lw=0.6, alpha=0.5,
                         label=label if j == 0 else None)
    heaps_ax.plot(rows, np.maximum(heaps_curve(Z), 0.5), color="black", lw=1.5, label="data")
    owners = zipf_curve(Z)
    zipf_ax.plot(np.arange(1, owners.size + 1), owners, "o", ms=2.5, color="black",
                 label="data")
    for ax, x, y in ((heaps_ax, "rows n", "distinct features"),
                     (zipf_ax, "rank", "owners m")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.legend(fontsize=10, frameon=False)
    heaps_ax.set_title("Heaps: new features per row")
    zipf_ax.set_title("Zipf: features by popularity")
    fig.tight_layout()
    return with_alt(fig)
