"""Figures of the chapter on variational inference (``book/11_variational.md``).

Every function only draws numbers that :mod:`ibp_lab.inference.variational` and
:mod:`ibp_lab.inference.exact` computed; none runs a model.

- :func:`plot_evidence_bounds`: ELBOs against the truncation, under the exact evidence.
- :func:`plot_k_plus_laws`: the law of ``K+`` under ``q`` beside the exact posterior.
- :func:`elbo_traces_figure`: the ELBO after each iteration from several starts.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab.teaching.plotting._doors import (axes_or_new, check_finite, check_labels,
                                     check_optional_real, check_panels)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, PALETTE, integer_ticks

__all__ = ["plot_evidence_bounds", "plot_k_plus_laws", "elbo_traces_figure"]


def _check_curves(name: str, curves, *, length: int | None = None) -> dict:
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(f"{name} must be a non-empty mapping: label -> array of numbers")
    check_panels(name, len(curves))
    check_labels(name, list(curves), len(curves), what="curve")
    return {str(label): check_finite(f"{name}[{label!r}]", values, ndim=1, length=length,
                                     partner="n_features" if length else "")
            for label, values in curves.items()}


def plot_evidence_bounds(n_features, bounds, exact_value: float, *, ax=None):
    """Lower bounds on ``log p(X)`` against the truncation ``K``, under the exact value.

    Parameters
    ----------
    n_features : array_like of int
        The truncations.
    bounds : mapping of str to array_like
        Label -> one bound per truncation.
    exact_value : float
        The exact log evidence, drawn as a horizontal line.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_evidence_bounds([1, 2], {"ELBO": [-3.0, -2.5]}, -2.0)
    >>> len(ax.lines)
    2
    """
    n_features = check_finite("n_features", n_features, ndim=1)
    bounds = _check_curves("bounds", bounds, length=n_features.size)
    exact_value = check_optional_real("exact_value", exact_value, allow_none=False)
    ax = axes_or_new("ax", ax, figsize=(4.5, 3.2))
    ax.axhline(exact_value, color=PALETTE["black"], lw=1, ls="--", label="exact log p(X)")
    for color, (label, values) in zip(CYCLE, bounds.items()):
        ax.plot(n_features, values, "o-", color=color, label=label)
    integer_ticks(ax)
    ax.set_xlabel("truncation K (columns of q)")
    ax.set_ylabel("nats")
    ax.legend(fontsize=10)
    return with_alt(ax)


def plot_k_plus_laws(laws, *, ax=None):
    """Bars of several laws of ``K+`` side by side (the exact posterior and ``q``'s).

    Parameters
    ----------
    laws : mapping of str to array_like
        Label -> probabilities of ``K+ = 0, 1, ...`` (lengths may differ).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_k_plus_laws({"exact": [0.5, 0.5], "q": [0.2, 0.7, 0.1]})
    >>> len(ax.patches)
    5
    """
    laws = _check_curves("laws", laws)
    ax = axes_or_new("ax", ax, figsize=(4.5, 3.2))
    width = 0.8 / len(laws)
    for i, (color, (label, p)) in enumerate(zip(CYCLE, laws.items())):
        k = np.arange(p.size)
        ax.bar(k + (i - (len(laws) - 1) / 2) * width, p, width, color=color, label=label)
    integer_ticks(ax)
    ax.set_xlabel("number of features $K_+$")
    ax.set_ylabel("probability")
    ax.legend(fontsize=10)
    return with_alt(ax)


def elbo_traces_figure(traces, *, highlight=None) -> Figure:
    """The ELBO after each iteration, one curve per start, in a new figure.

    Parameters
    ----------
    traces : sequence of array_like
        One ``elbo_`` per start.
    highlight : mapping of str to int, optional
        Label -> index of a start to draw in colour (the best, the worst); the
        others are grey.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = elbo_traces_figure([[-5.0, -4.0], [-6.0, -4.5]], highlight={"best": 0})
    >>> len(fig.axes[0].lines)
    2
    """
    if isinstance(traces, (str, bytes, Mapping)) or not hasattr(traces, "__len__") \
            or len(traces) == 0:
        raise TypeError("traces must be a non-empty list of ELBO arrays, one per start")
    check_panels("traces", len(traces))
    traces = [check_finite(f"traces[{i}]", t, ndim=1, min_size=1) for i, t in enumerate(traces)]
    if highlight is not None and not isinstance(highlight, Mapping):
        raise TypeError("highlight must be a mapping: label -> index of a start, "
                        f"got {type(highlight).__name__}")
    highlight = dict(highlight or {})
    for label, index in highlight.items():
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(traces):
            raise ValueError(f"highlight[{label!r}] must be an index of traces "
                             f"(0 to {len(traces) - 1}), got {index!r}")
    fig = Figure(figsize=(6.0, 3.4), layout="constrained")
    ax = fig.subplots()
    coloured = {int(i): (label, color) for color, (label, i) in zip(CYCLE, highlight.items())}
    for i, t in enumerate(traces):
        label, color = coloured.get(i, (None, PALETTE["grey"]))
        ax.plot(np.arange(1, t.size + 1), t, color=color, lw=2 if label else 0.8,
                alpha=1.0 if label else 0.6, label=label, zorder=3 if label else 2)
    ends = np.array([t[-1] for t in traces])
    low = float(np.quantile(ends, 0.0))
    spread = float(ends.max() - low) or 1.0
    ax.set_ylim(low - 0.5 * spread, ends.max() + 0.15 * spread)  # the late iterations
    ax.set_xscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO (nats)")
    if highlight:
        ax.legend(fontsize=10)
    return with_alt(fig)
