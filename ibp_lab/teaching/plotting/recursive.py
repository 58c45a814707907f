"""Figures of the chapter on the Recursive IBP (``book/04_recursive_ibp.md``).

Every function returns a new :class:`matplotlib.figure.Figure` built without pyplot, so a
figure is never shown twice and an explorer that renders many frames leaks no open figures.
All functions are pure: the same arguments give the same picture. They compute nothing
of the model: the two figures of the explorer draw results of :mod:`ibp_lab.teaching.explorers`.

- :func:`recursion_step_figure`: one step of the recursion in three panels
  (:func:`ibp_lab.teaching.explorers.recursion_step`).
- :func:`marginals_figure`: the table of marginals; the explorer renders it
  (:func:`ibp_lab.teaching.explorers.marginals_table`).
- :func:`comparison_grid_figure`: analytic against Monte Carlo tables over a grid.
- :func:`mse_figure`: Monte Carlo error against the number of samples, log-log.
- :func:`memory_figure`: what the recursion keeps against the whole history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_count, check_positive
from ibp_lab.teaching.explorers import MarginalsTable, RecursionStep
from ibp_lab.teaching.plotting._doors import check_finite, check_optional_real, check_panels, check_result
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import CYCLE, PALETTE, SEQUENTIAL_CMAP, integer_ticks

__all__ = [
    "recursion_step_figure",
    "marginals_figure",
    "comparison_grid_figure",
    "mse_figure",
    "memory_figure",
]


def _heatmap(ax, table: np.ndarray):
    """Draw a customers x dishes table of probabilities on a fixed [0, 1] colour scale."""
    n, k_max = table.shape
    integer_ticks(ax)
    return ax.imshow(
        table,
        cmap=SEQUENTIAL_CMAP,
        vmin=0.0,
        vmax=1.0,
        aspect="auto",
        interpolation="nearest",
        origin="upper",
        extent=(0.5, k_max + 0.5, n + 0.5, 0.5),
    )


#: Most dishes drawn as separate bars; beyond, one filled step outline per series,
#: since tens of thousands of bar patches take a minute to build.
MAX_BARS = 500


def _bars(ax, k: np.ndarray, height: np.ndarray, *, bottom=None, **kwargs):
    """Bars at the dishes ``k = 1..k_max``; a filled outline when they are too many to draw."""
    if k.size <= MAX_BARS:
        return ax.bar(k, height, width=0.85, bottom=bottom, **kwargs)
    base = np.zeros_like(height) if bottom is None else bottom
    # fill_between is one polygon; stairs would cost as much as the bars (patch limits)
    return ax.fill_between(k, base, base + height, step="mid", lw=0, **kwargs)


def recursion_step_figure(step: RecursionStep) -> Figure:
    """Show how customer ``n``'s marginals come from a running sum and two Poisson laws.

    Left: the running sum ``sum_{n' < n} p(z_{n'k} = 1)`` per dish. Middle: the laws of the
    number of dishes before (``K_{<=n-1}``) and after (``K_{<=n}``) customer ``n``.
    Right: ``p(z_nk = 1)``, stacked as the share from the running sum (dishes that already
    exist) and the share from dishes that customer ``n`` creates.

    Parameters
    ----------
    step : ibp_lab.teaching.explorers.RecursionStep
        From :func:`ibp_lab.teaching.explorers.recursion_step`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> fig = recursion_step_figure(explorers.recursion_step(alpha=3.0, beta=2.0, n=10))
    >>> len(fig.axes)
    3
    """
    step = check_result("step", step, RecursionStep, made_by="ibp_lab.teaching.explorers.recursion_step")
    n, k_max, rate_before, rate_after = step.n, step.k_max, step.rate_before, step.rate_after
    k = np.arange(1, k_max + 1)

    fig = Figure(figsize=(11.5, 3.4), layout="constrained")
    ax_sum, ax_count, ax_next = fig.subplots(1, 3)
    _bars(ax_sum, k, step.running_sum, color=PALETTE["blue"])
    ax_sum.set(xlabel="dish k", ylabel="running sum",
               title=f"$\\sum_{{n'<{n}}} p(z_{{n'k}}=1)$")
    counts = np.arange(0, k_max + 1)
    ax_count.step(counts, step.law_before, where="mid",
                  color=PALETTE["blue"], label=f"$K_{{\\leq {n - 1}}}$ (mean {rate_before:.1f})")
    ax_count.step(counts, step.law_after, where="mid",
                  color=PALETTE["orange"], label=f"$K_{{\\leq {n}}}$ (mean {rate_after:.1f})")
    ax_count.set(xlabel="number of dishes", ylabel="probability",
                 title="distribution of the number of dishes")
    ax_count.legend(frameon=False, fontsize=10)
    _bars(ax_next, k, step.existing, color=PALETTE["blue"], label="existing dish, taken again")
    _bars(ax_next, k, step.created, bottom=step.existing, color=PALETTE["orange"],
          label=f"dish created by customer {n}")
    ax_next.set(xlabel="dish k", ylabel="probability", title=f"$p(z_{{{n}k}}=1)$")
    ax_next.legend(frameon=False, fontsize=10)
    fig.suptitle(f"one step of the recursion: alpha = {step.alpha:g}, beta = {step.beta:g}, customer {n}")
    return with_alt(fig)


def marginals_figure(result: MarginalsTable) -> Figure:
    """The table of marginals ``p(z_nk = 1 | alpha, beta)``; the explorer renders it.

    Left: the table as a heatmap (customers down, dishes across in order of creation) on a
    fixed colour scale, with the expected number of dishes after each customer drawn on
    top. Right: three of its rows.

    Parameters
    ----------
    result : ibp_lab.teaching.explorers.MarginalsTable
        From :func:`ibp_lab.teaching.explorers.marginals_table`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> fig = marginals_figure(explorers.marginals_table(alpha=2.0, beta=1.0, n=10, k_max=20))
    >>> len(fig.axes)  # heatmap, colour bar, rows
    3
    """
    result = check_result("result", result, MarginalsTable, made_by="ibp_lab.teaching.explorers.marginals_table")
    alpha, beta, n, k_max, table = result.alpha, result.beta, result.n, result.k_max, result.table
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax_map, ax_rows = fig.subplots(1, 2, width_ratios=[1.6, 1])
    image = _heatmap(ax_map, table)
    customers = np.arange(1, n + 1)
    expected = result.expected_dishes.copy()
    expected[expected > k_max + 0.5] = np.nan  # leave the window rather than hug its edge
    ax_map.plot(expected, customers, color="white", lw=1.5, ls="--",
                label="expected number of dishes")
    ax_map.set(xlabel="dish k (order of creation)", ylabel="customer n",
               xlim=(0.5, k_max + 0.5), ylim=(n + 0.5, 0.5))
    ax_map.legend(loc="lower left", fontsize=10, framealpha=0.8)
    fig.colorbar(image, ax=ax_map, label="$p(z_{nk} = 1)$")
    k = np.arange(1, k_max + 1)
    rows = sorted({1, max(1, n // 5), n})
    for color, row in zip(CYCLE, rows):
        ax_rows.plot(k, table[row - 1], color=color, lw=1.5, label=f"customer {row}")
    ax_rows.set(xlabel="dish k", ylabel="probability", ylim=(0, 1), xlim=(0.5, k_max + 0.5))
    ax_rows.legend(frameon=False, fontsize=10)
    fig.suptitle(f"Recursive IBP marginals: alpha = {alpha:g}, beta = {beta:g}, {n} customers")
    return with_alt(fig)


def comparison_grid_figure(
    results: Mapping[tuple[float, float], tuple[np.ndarray, np.ndarray]],
    alphas: Sequence[float],
    betas: Sequence[float],
    *,
    n_samples: int | None = None,
) -> Figure:
    """Analytic and Monte Carlo tables side by side for every ``(alpha, beta)`` in a grid.

    Parameters
    ----------
    results : dict
        ``(alpha, beta) -> (analytic, simulated)``, two tables of the same shape.
    alphas, betas : sequence of float
        Rows and column pairs of the grid, in display order.
    n_samples : int, optional
        Number of simulated buffets, for the titles.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.models.recursive import marginals
    >>> table = marginals(2.0, 1.0, 5, 6)
    >>> fig = comparison_grid_figure({(2.0, 1.0): (table, table)}, [2.0], [1.0])
    >>> len(fig.axes)  # two heatmaps and a colour bar
    3
    """
    alphas = _check_grid("alphas", alphas)
    betas = _check_grid("betas", betas)
    check_panels("alphas and betas", 2.0 * len(alphas) * len(betas))
    if n_samples is not None:
        n_samples = check_count("n_samples", n_samples, minimum=1)
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be a dict ((alpha, beta) -> (analytic, simulated)), got "
                        f"{type(results).__name__}")
    checked = {}
    for alpha in alphas:
        for beta in betas:
            if (alpha, beta) not in results:
                raise ValueError(f"results must hold every (alpha, beta) of alphas x betas; "
                                 f"({alpha:g}, {beta:g}) is missing")
            pair = results[(alpha, beta)]
            if isinstance(pair, np.ndarray) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise ValueError(f"results[({alpha:g}, {beta:g})] must be a pair (analytic, simulated) of tables")
            tables = [check_finite(f"results[({alpha:g}, {beta:g})][{i}]", t, ndim=2, low=0.0, high=1.0)
                      for i, t in enumerate(pair)]
            if tables[0].shape != tables[1].shape or 0 in tables[0].shape:
                raise ValueError(f"results[({alpha:g}, {beta:g})] must hold two non-empty tables of one shape, "
                                 f"got {tables[0].shape} and {tables[1].shape}")
            checked[(alpha, beta)] = tables
    results = checked
    fig = Figure(figsize=(2.3 * 2 * len(betas) + 1, 2.3 * len(alphas) + 0.6), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(alphas), 2 * len(betas), squeeze=False))
    source = "Monte Carlo" if n_samples is None else f"Monte Carlo ({n_samples})"
    image = None
    for i, alpha in enumerate(alphas):
        for j, beta in enumerate(betas):
            analytic, simulated = results[(alpha, beta)]
            for offset, (table, name) in enumerate([(analytic, "analytic"), (simulated, source)]):
                ax = axes[i, 2 * j + offset]
                image = _heatmap(ax, table)
                ax.set_title(f"{name}\nalpha={alpha:g}, beta={beta:g}", fontsize=8)
                ax.tick_params(labelsize=7)
                if i == len(alphas) - 1:
                    ax.set_xlabel("dish k", fontsize=8)
                if j == 0 and offset == 0:
                    ax.set_ylabel("customer n", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.6, label="$p(z_{nk} = 1)$")
    return with_alt(fig)


def _check_grid(name: str, values) -> list[float]:
    """A non-empty sequence of finite real numbers (a grid axis), as a list of floats."""
    if values is None or isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of real numbers, got {type(values).__name__}")
    arr = check_finite(name, values, ndim=1, min_size=1)
    check_panels(name, arr.size)
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def mse_figure(
    sample_sizes: Sequence[int],
    errors: Mapping[tuple[float, float], tuple[np.ndarray, float]],
    *,
    slope: float | None = None,
    slope_se: float | None = None,
) -> Figure:
    """Mean squared error of Monte Carlo marginals against the number of samples (log-log).

    Parameters
    ----------
    sample_sizes : sequence of int
        Numbers of simulated buffets.
    errors : dict
        ``(alpha, beta) -> (mse, variance)`` as returned by
        :func:`ibp_lab.models.recursive.monte_carlo_mse`; the expected error ``variance / N`` is
        drawn dashed in the same colour.
    slope, slope_se : float, optional
        A fitted slope and its standard error, for the title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = mse_figure([10, 100], {(2.0, 1.0): (np.array([0.01, 0.001]), 0.1)})
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')
    """
    sizes = _check_positive_values("sample_sizes", sample_sizes, integers=True)
    if not isinstance(errors, Mapping):
        raise TypeError(f"errors must be a dict ((alpha, beta) -> (mse, variance)), got {type(errors).__name__}")
    if len(errors) == 0:
        raise ValueError("errors must hold at least one (alpha, beta), got an empty dict")
    check_panels("errors (one curve per entry)", len(errors))
    checked = {}
    for key, value in errors.items():
        if isinstance(key, (str, bytes)) or not isinstance(key, tuple) or len(key) != 2:
            raise TypeError(f"errors keys must be pairs (alpha, beta), got {key!r}")
        alpha = check_positive("errors key alpha", key[0], upper=None)
        beta = check_positive("errors key beta", key[1], upper=None)
        if isinstance(value, (str, bytes, np.ndarray)) or not isinstance(value, Sequence) or len(value) != 2:
            raise ValueError(f"errors[{key!r}] must be a pair (mse, variance)")
        mse = check_finite(f"errors[{key!r}] mse", value[0], ndim=1, length=sizes.size,
                           partner="sample_sizes", low=0.0)
        variance = check_positive(f"errors[{key!r}] variance", value[1], allow_zero=True, upper=None)
        checked[(alpha, beta)] = (mse, variance)
    errors = checked
    slope = check_optional_real("slope", slope)
    slope_se = check_optional_real("slope_se", slope_se)
    if slope_se is not None and slope_se < 0:
        raise ValueError(f"slope_se must be >= 0, got {slope_se:g}")
    alphas = sorted({a for a, _ in errors})
    betas = sorted({b for _, b in errors})
    markers = ["o", "s", "^", "D", "v", "P"]
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    for (alpha, beta), (mse, variance) in errors.items():
        color = CYCLE[alphas.index(alpha) % len(CYCLE)]
        marker = markers[betas.index(beta) % len(markers)]
        ax.plot(sizes, mse, marker=marker, ms=5, lw=1, color=color,
                label=f"alpha={alpha:g}, beta={beta:g}")
        ax.plot(sizes, variance / sizes, ls=":", lw=1, color=color)
    ax.set(xscale="log", yscale="log", xlabel="simulated buffets R",
           ylabel="mean squared error over the table")
    title = "dotted: expected error mean p(1-p) / R"
    if slope is not None:
        title = f"fitted slope {slope:.3f}" + ("" if slope_se is None else f" ± {slope_se:.3f}")
        title += "; dotted: mean p(1-p) / R"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=10, frameon=False, ncol=1, loc="lower left")
    return with_alt(fig)


def memory_figure(
    n_values: Sequence[int], state_bytes: Sequence[float], history_bytes: Sequence[float]
) -> Figure:
    """Bytes kept by the recursion against bytes of the whole history, as ``n`` grows.

    Parameters
    ----------
    n_values : sequence of int
        Numbers of customers.
    state_bytes : sequence of float
        Memory of the recursion's state after each number of customers.
    history_bytes : sequence of float
        Memory of the history ``z_{<n}`` that the conditional needs.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = memory_figure([10, 100], [100, 200], [140, 1800])
    >>> len(fig.axes[0].lines)
    2
    """
    n_values = _check_positive_values("n_values", n_values, integers=True)
    state_bytes = _check_positive_values("state_bytes", state_bytes, length=n_values.size)
    history_bytes = _check_positive_values("history_bytes", history_bytes, length=n_values.size)
    fig = Figure(figsize=(6.0, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(n_values, history_bytes, "o-", color=PALETTE["vermillion"],
            label="history $z_{<n}$ (one byte per entry)")
    ax.plot(n_values, state_bytes, "s-", color=PALETTE["blue"],
            label="recursion: running sums + rate")
    ax.set(xscale="log", yscale="log", xlabel="customers n", ylabel="bytes kept")
    ax.legend(frameon=False, fontsize=10)
    return with_alt(fig)


def _check_positive_values(name: str, values, *, integers: bool = False, length: int | None = None) -> np.ndarray:
    """A non-empty 1-D array of finite values > 0 (a log axis), integers if asked."""
    arr = check_finite(name, values, ndim=1, min_size=1, length=length,
                       partner="sample_sizes" if name == "sample_sizes" else "n_values")
    if arr.min() <= 0:
        raise ValueError(f"{name} must hold values > 0 (drawn on a log axis), got {arr.min():g}")
    if integers and np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must hold integers, got fractions")
    return arr
