"""Figures of chapters 1 and 2: counts against their Poisson laws, the buffet explorer.

- :func:`plot_counts_vs_poisson`: draws on one axes (``ax=None``) and returns it.
- :func:`buffet_explorer_figure`: a new figure of the draws that
  :func:`ibp_lab.teaching.explorers.buffet` made (the figure draws no random numbers).
"""

from __future__ import annotations


import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from ibp_lab._checks import check_positive, check_real_array
from ibp_lab.teaching.explorers import BuffetDraws
from ibp_lab.teaching.plotting._doors import axes_or_new, check_result
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import PALETTE
from ibp_lab.teaching.plotting.matrices import plot_binary_matrix

__all__ = ["plot_counts_vs_poisson", "buffet_explorer_figure"]


#: Most histogram bins a count plot draws (one per integer while they suffice).
MAX_BINS = 200
#: Largest Poisson mean a count plot accepts: counts stay exact in float64.
MAX_MEAN = 1e15
def plot_counts_vs_poisson(counts, mean: float, *, ax=None, color: str = PALETTE["blue"],
                           label: str = ""):
    """Histogram of integer ``counts`` with the Poisson(``mean``) probabilities on top.

    Parameters
    ----------
    counts : array_like of int
        Simulated counts: at least one, integers in ``[0, MAX_MEAN]``.
    mean : float
        Mean of the Poisson law to compare with.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made if omitted.
    color : str, optional
    label : str, optional
        Prefix of the legend entries.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_counts_vs_poisson([1, 2, 2, 3], 2.0)
    >>> len(ax.patches) > 0
    True
    """
    counts = check_real_array("counts", counts).ravel()
    if counts.size == 0:
        raise ValueError("counts must hold at least one count, got none")
    if not np.all((counts >= 0) & (counts == np.floor(counts))):  # also refuses NaN, inf
        raise ValueError("counts must be non-negative integers")
    if counts.max() > MAX_MEAN:  # beyond it the bin edges are no longer exact integers
        raise ValueError(f"counts must be at most {MAX_MEAN:g}, got {counts.max():g}")
    mean = check_positive("mean", mean, allow_zero=True, upper=MAX_MEAN)
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    ax = axes_or_new("ax", ax, figsize=(5, 3.4))
    law = stats.poisson(mean)
    top = int(max(counts.max(), law.ppf(0.999))) + 1
    if top <= MAX_BINS:  # one bin per integer from 0, as the book's figures show
        low, width = 0, 1
    else:
        # Only the range where there is something to see, in at most MAX_BINS bins of
        # equal integer width: a mean of 1e12 would otherwise ask for 1e12 bins.
        low = int(min(counts.min(), law.ppf(0.001)))
        width = -(-(top - low + 1) // MAX_BINS)
    edges = np.arange(low, top + width + 1, width) - 0.5
    ax.hist(counts, bins=edges, density=True, color=color, alpha=0.35,
            label=f"{label}simulated (mean {counts.mean():.2f})")
    # density=True divides by the bin width, so the histogram is per integer like the pmf
    k = np.unique(np.linspace(low, top, min(top - low + 1, 4 * MAX_BINS)).round())
    ax.plot(k, law.pmf(k), "o-" if width == 1 else "-", ms=3, lw=1, color=color,
            label=f"{label}Poisson({mean:.2f})")
    ax.set_ylabel("probability")
    ax.legend(fontsize=10, frameon=False)
    return with_alt(ax)


def buffet_explorer_figure(draws: BuffetDraws) -> Figure:
    """The alpha/beta explorer of chapter 1: one figure of the draws at one setting.

    Three panels: the first draw of ``Z``, left-ordered; the histogram of ``K+``
    over the other draws against its Poisson law; the number of dishes per
    customer (pooled over rows and draws) against Poisson(``alpha``). The draws
    come from :func:`ibp_lab.teaching.explorers.buffet`, so the static and the live
    explorer, which both render ``buffet_explorer_figure(explorers.buffet(...))``,
    show the same picture at the same setting.

    Parameters
    ----------
    draws : ibp_lab.teaching.explorers.BuffetDraws

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> fig = buffet_explorer_figure(explorers.buffet(alpha=2.0, beta=1.0, n=10, n_draws=20))
    >>> len(fig.axes)
    3
    """
    draws = check_result("draws", draws, BuffetDraws, made_by="ibp_lab.teaching.explorers.buffet")
    fig = Figure(figsize=(11, 3.4))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1, 1]})
    plot_binary_matrix(draws.Z, ax=axes[0], title=f"one draw: K+ = {draws.Z.shape[1]}")
    plot_counts_vs_poisson(draws.k_plus, draws.expected_k_plus, ax=axes[1])
    axes[1].set_xlabel(f"K+ among {draws.n} customers")
    plot_counts_vs_poisson(draws.dishes_per_customer.ravel(), draws.alpha, ax=axes[2],
                           color=PALETTE["orange"])
    axes[2].set_xlabel("dishes per customer")
    fig.suptitle(f"alpha = {draws.alpha:g}, beta = {draws.beta:g}")
    fig.tight_layout()
    return with_alt(fig)
