"""Figures of chapters 1 and 2: counts against their Poisson laws, the buffet explorer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from ibp_lab._checks import check_count, check_positive, check_real_array, check_size
from ibp_lab.plotting._doors import check_axes
from ibp_lab.plotting._style import PALETTE
from ibp_lab.plotting.matrices import plot_binary_matrix
from ibp_lab.prior import expected_num_features, sample_ibp, simulate_feature_counts

__all__ = ["plot_counts_vs_poisson", "buffet_explorer_figure"]


#: Most histogram bins a count plot draws (one per integer while they suffice).
MAX_BINS = 200
#: Largest Poisson mean a count plot accepts: counts stay exact in float64.
MAX_MEAN = 1e15
#: Most customers (``n * n_draws``) the buffet explorer seats for one frame.
MAX_CUSTOMERS = 10**6


def plot_counts_vs_poisson(ax, counts, mean: float, *, color: str = PALETTE["blue"], label: str = ""):
    """Histogram of integer ``counts`` with the Poisson(``mean``) probabilities on top.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    counts : array_like of int
        Simulated counts: at least one, integers in ``[0, MAX_MEAN]``.
    mean : float
        Mean of the Poisson law to compare with.
    color : str, optional
    label : str, optional
        Prefix of the legend entries.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> _ = plot_counts_vs_poisson(ax, [1, 2, 2, 3], 2.0)
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
    check_axes("ax", ax)
    mean = check_positive("mean", mean, allow_zero=True, upper=MAX_MEAN)
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
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
    ax.legend(fontsize=7, frameon=False)
    return ax


def buffet_explorer_figure(alpha: float, beta: float, *, n: int = 50, n_draws: int = 300, seed: int = 0):
    """The alpha/beta explorer of chapter 1, as one figure for one setting.

    Three panels: one left-ordered draw of ``Z`` with ``n`` customers; the
    histogram of ``K+`` over ``n_draws`` draws against its Poisson law; the
    number of dishes per customer (pooled over rows and draws) against
    Poisson(``alpha``); ``n * n_draws`` may be at most :data:`MAX_CUSTOMERS`.
    The figure is a pure function of its arguments (the
    draws use ``np.random.default_rng(seed)``), so the static and the live
    explorer show the same picture at the same setting.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = buffet_explorer_figure(2.0, 1.0, n=10, n_draws=20)
    >>> len(fig.axes)
    3
    """
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    n = check_count("n", n, minimum=1)
    n_draws = check_count("n_draws", n_draws, minimum=1)
    seed = check_count("seed", seed, maximum=None)
    # Every draw seats n customers one by one: a frame of the explorer must stay quick.
    check_size("the explorer's draws (n x n_draws customers)", float(n) * n_draws,
               limit=MAX_CUSTOMERS, hint="use fewer customers or fewer draws")
    rng = np.random.default_rng(seed)
    Z = sample_ibp(alpha, n, rng, beta=beta)
    k_plus, per_row = simulate_feature_counts(alpha, n, n_draws, rng, beta=beta)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1.2, 1, 1]})
    plot_binary_matrix(Z, ax=axes[0], title=f"one draw: K+ = {Z.shape[1]}")
    plot_counts_vs_poisson(axes[1], k_plus, expected_num_features(alpha, n, beta=beta))
    axes[1].set_xlabel(f"K+ among {n} customers")
    plot_counts_vs_poisson(axes[2], per_row.ravel(), alpha, color=PALETTE["orange"])
    axes[2].set_xlabel("dishes per customer")
    fig.suptitle(f"alpha = {alpha:g}, beta = {beta:g}")
    fig.tight_layout()
    return fig
