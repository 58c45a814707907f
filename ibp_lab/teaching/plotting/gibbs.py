"""Figures of the chapter on the linear-Gaussian model and Gibbs (``book/05_linear_gaussian.md``).

Every ``*_figure`` function returns a new :class:`matplotlib.figure.Figure` built without
pyplot (no figure is shown twice, an explorer rendering many frames leaks none) and is a pure
function of its arguments; none runs a sampler (the explorer's chain is
:func:`ibp_lab.teaching.explorers.sigma_alpha_chain`).

- :func:`plot_feature_mosaic`: many feature images in one picture on one axes (fast: one
  ``imshow``).
- :func:`k_plus_check_figure`: a sampler's histogram of ``K+`` against the exact posterior.
- :func:`free_fit_figure`: the fit with every hyperparameter free, over sweeps.
- :func:`sensitivity_figure`: posterior ``K+`` against fixed ``sigma_x`` and fixed ``alpha``.
- :func:`sigma_alpha_explorer_figure`: the explorer's render function.
- :func:`recovery_figure`: true features of synthetic data beside the ones the sampler found.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_count, check_real_array, check_size
from ibp_lab.teaching.explorers import SigmaAlphaRun
from ibp_lab.teaching.plotting._doors import (
    MAX_PANELS,
    MAX_SCALE,
    axes_or_new,
    check_images,
    check_result,
    check_runs,
    check_scale,
    check_shape,
    check_trace,
)
from ibp_lab.teaching.plotting._alt import mark_box_plot, with_alt
from ibp_lab.teaching.plotting._style import DIVERGING_CMAP, PALETTE, label_line_ends, series_style

__all__ = [
    "plot_feature_mosaic",
    "k_plus_check_figure",
    "free_fit_figure",
    "sensitivity_figure",
    "sigma_alpha_explorer_figure",
    "recovery_figure",
]

#: Colour limit of feature images in the explorer: the same in every frame, so they compare.
EXPLORER_SCALE = 0.8


def plot_feature_mosaic(
    images, shape: tuple[int, int], *, ax=None, ncols: int = 10, scale: float | None = None, gap: int = 1
):
    """Tile feature images into one picture on one axes, red adding ink and blue removing it.

    One ``imshow`` for all features, so that drawing sixty of them costs no more than
    drawing one (the explorer renders dozens of such frames).

    Parameters
    ----------
    images : array_like
        ``(K, h * w)`` finite flattened images; ``K = 0`` draws an empty panel.
    shape : (int, int)
        ``(h, w)`` of one image, integers >= 1.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made if omitted.
    ncols : int, optional
        Images per row, >= 1.
    scale : float, optional
        Symmetric colour limit, > 0; by default the largest absolute value.
    gap : int, optional
        Blank pixels between images, >= 0. The whole mosaic may hold at most
        :data:`ibp_lab._checks.MAX_ENTRIES` pixels.

    Returns
    -------
    matplotlib.axes.Axes
        Its last image (``ax.images[-1]``) is the mosaic, for a colour bar.

    Examples
    --------
    >>> ax = plot_feature_mosaic(np.eye(3, 4), (2, 2), ncols=2)
    >>> ax.images[-1].get_array().shape
    (5, 5)
    """
    shape = check_shape("shape", shape)
    images = check_images("images", images, shape)
    ncols = check_count("ncols", ncols, minimum=1)
    scale = check_scale("scale", scale)
    gap = check_count("gap", gap)
    h, w = shape
    k = images.shape[0]
    ncols = min(ncols, max(k, 1))
    nrows = max(1, -(-k // ncols))
    # The canvas is allocated whole: a huge gap or image shape would ask for exabytes.
    check_size("the mosaic (images, shape, ncols and gap)",
               float(nrows * (h + gap)) * float(ncols * (w + gap)), hint="use a smaller gap")
    canvas = np.full((nrows * (h + gap) - gap, ncols * (w + gap) - gap), np.nan)
    for j in range(k):
        r, c = divmod(j, ncols)
        canvas[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = images[
            j
        ].reshape(h, w)
    vmax = scale if scale is not None else float(np.abs(images).max()) if k else 1.0
    vmax = vmax or 1.0
    if vmax > MAX_SCALE:  # -vmax..vmax would overflow the colour normalisation
        raise ValueError(f"images must be at most {MAX_SCALE:g} in absolute value (or pass scale), "
                         f"got {vmax:g}")
    ax = axes_or_new("ax", ax, figsize=(0.6 * ncols, 0.8 * nrows + 0.3))
    ax.imshow(
        np.ma.masked_invalid(canvas),
        cmap=DIVERGING_CMAP,
        vmin=-vmax,
        vmax=vmax,
        interpolation="nearest",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    return with_alt(ax)


def _check_probability_vector(name: str, p) -> np.ndarray:
    """A non-empty, finite 1-D array of probabilities in [0, 1]."""
    p = check_real_array(name, p)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of probabilities, got shape {p.shape}")
    if not np.all((p >= 0) & (p <= 1)):  # also refuses NaN
        raise ValueError(f"{name} must hold probabilities in [0, 1] (no NaN)")
    return p


def _check_on_support(name: str, values: np.ndarray, k_show: int, *, unit: bool) -> None:
    """A 1-D array covering ``K+ = 0..k_show``, in [0, 1] (``unit``) or >= 0."""
    if values.ndim != 1 or values.size < k_show + 1:
        raise ValueError(f"{name} must be 1-D with at least k_show + 1 = {k_show + 1} entries "
                         f"(one per K+ shown), got shape {values.shape}")
    top = 1.0 if unit else np.inf
    if not np.all((values >= 0) & (values <= top)):
        raise ValueError(f"{name} must hold values in [0, {top:g}]")


def k_plus_check_figure(
    p_exact,
    frequencies: Mapping[str, np.ndarray],
    *,
    standard_errors: Mapping[str, np.ndarray] | None = None,
    k_show: int | None = None,
) -> Figure:
    """A sampler's histogram of ``K+`` against the exact posterior, and their difference.

    Left: the exact probabilities (bars) and each run's frequencies (markers). Right:
    frequency minus exact probability for each run, with a band of two Monte Carlo
    standard errors if given: a run whose markers leave its band is biased.

    Parameters
    ----------
    p_exact : array_like
        Exact ``P(K+ = k)``, ``k = 0, 1, ...``: a non-empty 1-D array of numbers in [0, 1].
    frequencies : dict
        Run name (str) -> frequencies in [0, 1] on the same support (at least
        ``k_show + 1`` of them); at least one run.
    standard_errors : dict, optional
        Run name -> standard error (>= 0) of each frequency.
    k_show : int, optional
        Largest ``K+`` drawn, in ``[0, len(p_exact) - 1]`` (default: the last with
        probability above 1e-3).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = k_plus_check_figure([0.2, 0.5, 0.3], {"run": np.array([0.21, 0.49, 0.3])})
    >>> len(fig.axes)
    2
    """
    p_exact = _check_probability_vector("p_exact", p_exact)
    if k_show is None:
        shown = np.flatnonzero(p_exact > 1e-3)
        k_show = int(shown.max()) if shown.size else p_exact.size - 1
    else:
        k_show = check_count("k_show", k_show, maximum=p_exact.size - 1)
    frequencies = check_runs("frequencies", frequencies)
    check_size("frequencies (one set of markers per run)", float(len(frequencies)), limit=MAX_PANELS,
               hint="compare fewer runs")
    for name, freq in frequencies.items():
        _check_on_support(f"frequencies[{name!r}]", freq, k_show, unit=True)
    if standard_errors is not None:
        standard_errors = check_runs("standard_errors", standard_errors)
        for name, se in standard_errors.items():
            _check_on_support(f"standard_errors[{name!r}]", se, k_show, unit=False)
    k = np.arange(k_show + 1)
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.bar(
        k, p_exact[: k_show + 1], color=PALETTE["grey"], alpha=0.4, label="exact (enumeration)"
    )
    n_runs = len(frequencies)
    for r, (name, freq) in enumerate(frequencies.items()):
        style = series_style(r)  # each run its own colour, marker and dashes
        colour = style["color"]
        offset = (r - (n_runs - 1) / 2) * 0.18
        freq = freq[: k_show + 1]
        left.plot(k + offset, freq, style["marker"], ms=4, color=colour, label=name)
        diff = freq - p_exact[: k_show + 1]
        right.plot(k + offset, diff, lw=1, label=name, **style)
        if standard_errors is not None and name in standard_errors:
            band = 2 * standard_errors[name][: k_show + 1]
            right.fill_between(k, -band, band, color=colour, alpha=0.15, lw=0)
    right.axhline(0, color=PALETTE["black"], lw=0.8)
    left.set(xlabel="K+", ylabel="probability", title="posterior of K+")
    right.set(xlabel="K+", ylabel="frequency - exact", title="difference (band: 2 standard errors)")
    left.legend(fontsize=10, frameon=False)
    right.legend(fontsize=10, frameon=False)
    return with_alt(fig)


def free_fit_figure(trace) -> Figure:
    """The fit with every hyperparameter free: ``K+``, the scales and ``alpha`` over sweeps.

    Parameters
    ----------
    trace : xarray.Dataset
        ``ChainResult.trace`` of :func:`ibp_lab.inference.chains.run_chain`: real variables
        ``k_plus``, ``sigma_x``, ``sigma_a`` and ``alpha`` along ``draw``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import xarray as xr
    >>> t = xr.Dataset({v: ("draw", np.ones(5)) for v in ["k_plus", "sigma_x", "sigma_a", "alpha"]})
    >>> len(free_fit_figure(t).axes)
    3
    """
    check_trace("trace", trace, ("k_plus", "sigma_x", "sigma_a", "alpha"))
    sweeps = np.arange(1, trace.sizes["draw"] + 1)
    fig = Figure(figsize=(11, 3.2), layout="constrained")
    axes = fig.subplots(1, 3)
    axes[0].plot(sweeps, trace.k_plus.values, color=PALETTE["blue"])
    axes[0].set(xlabel="sweep", ylabel="K+", title="number of features")
    scales = []
    for i, (name, label) in enumerate([("sigma_x", "sigma_X (noise)"), ("sigma_a", "sigma_A (features)")]):
        style = series_style(i + 1, n_points=sweeps.size)  # dashes and markers, not colour alone
        scales += axes[1].plot(sweeps, trace[name].values, label=label, **style)
    axes[1].set(xlabel="sweep", ylabel="standard deviation", title="the two scales")
    axes[1].legend(fontsize=10, frameon=False)
    label_line_ends(axes[1], scales, ["sigma_X", "sigma_A"])
    axes[2].plot(sweeps, trace.alpha.values, color=PALETTE["purple"])
    axes[2].set(xlabel="sweep", ylabel="alpha", title="IBP mass alpha")
    return with_alt(fig)


def _check_settings(name: str, runs) -> dict:
    """Setting (> 0) -> non-empty 1-D finite ``K+`` values >= 0, at most MAX_PANELS settings."""
    runs = check_runs(name, runs, keys="positive")
    check_size(f"{name} (one box per setting)", float(len(runs)), limit=MAX_PANELS,
               hint="show fewer settings")
    for key, values in runs.items():
        if values.ndim != 1 or values.size == 0 or not np.all(values >= 0):
            raise ValueError(f"{name}[{key!r}] must be a non-empty 1-D array of K+ values >= 0, "
                             f"got shape {values.shape}")
    return runs


def sensitivity_figure(
    by_sigma_x: Mapping[float, np.ndarray],
    by_alpha: Mapping[float, np.ndarray],
    *,
    n_rows: int | None = None,
) -> Figure:
    """Posterior ``K+`` over sweeps for fixed values of ``sigma_x`` and of ``alpha``.

    Each setting shows the ``K+`` of every kept sweep as a box. If ``n_rows`` is
    given, the right panel's labels include the prior mean of ``K+``,
    ``alpha * H_N``.

    Parameters
    ----------
    by_sigma_x, by_alpha : dict
        Setting (a number > 0) -> the ``K+`` of the kept sweeps (a non-empty 1-D
        array of finite numbers >= 0); at least one setting each.
    n_rows : int, optional
        Number of data points ``N`` >= 1, for the prior mean of ``K+``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = sensitivity_figure({0.2: np.array([5, 6])}, {1.0: np.array([4, 4])})
    >>> len(fig.axes)
    2
    """
    by_sigma_x = _check_settings("by_sigma_x", by_sigma_x)
    by_alpha = _check_settings("by_alpha", by_alpha)
    if n_rows is not None:
        n_rows = check_count("n_rows", n_rows, minimum=1)
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    for ax, runs, colour in (
        (left, by_sigma_x, PALETTE["blue"]),
        (right, by_alpha, PALETTE["orange"]),
    ):
        values = list(runs.values())
        parts = ax.boxplot(
            values,
            positions=range(len(values)),
            widths=0.5,
            patch_artist=True,
            boxprops={"facecolor": colour, "alpha": 0.35},
            medianprops={"color": colour},
        )
        mark_box_plot(ax, parts)
    left.set_xticks(range(len(by_sigma_x)), [f"{s:g}" for s in by_sigma_x])
    left.set(
        xlabel="sigma_X (held fixed)", ylabel="K+ after warm-up", title="the noise level sets K+"
    )
    if n_rows is not None:
        from ibp_lab.models.prior import expected_num_features

        labels = [f"{a:g}\n(prior {expected_num_features(a, n_rows):.3g})" for a in by_alpha]
    else:
        labels = [f"{a:g}" for a in by_alpha]
    right.set_xticks(range(len(by_alpha)), labels)
    right.set(xlabel="alpha (held fixed), with the prior mean of K+", title="alpha barely does")
    return with_alt(fig)


def sigma_alpha_explorer_figure(run: SigmaAlphaRun) -> Figure:
    """The sigma_X / alpha explorer: one Gibbs chain on the digits at one fixed setting.

    Draws a run of :func:`ibp_lab.teaching.explorers.sigma_alpha_chain`. Left: ``K+`` over the
    sweeps, with the prior mean ``alpha * H_N`` for comparison. Right: the posterior mean
    image of every feature of the last draw, most owned first, all on the same colour
    scale (:data:`EXPLORER_SCALE`) so that frames compare. The static and the live
    explorer both render ``sigma_alpha_explorer_figure(explorers.sigma_alpha_chain(...))``,
    so they show the same picture at the same setting.

    Parameters
    ----------
    run : ibp_lab.teaching.explorers.SigmaAlphaRun

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.teaching import explorers
    >>> fig = sigma_alpha_explorer_figure(explorers.sigma_alpha_chain(sigma_x=0.3, alpha=1.0, n_sweeps=5))
    >>> len(fig.axes)  # K+ trace, features, colour bar
    3
    """
    run = check_result("run", run, SigmaAlphaRun, made_by="ibp_lab.teaching.explorers.sigma_alpha_chain")
    prior_mean, images, owners = run.prior_mean_k_plus, run.features, run.owners

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
    sweeps = np.arange(1, run.n_sweeps + 1)
    left.plot(sweeps, run.k_plus, color=PALETTE["blue"], label="K+ of the chain")
    top = 80
    if prior_mean < top:
        left.axhline(
            prior_mean,
            color=PALETTE["orange"],
            ls="--",
            lw=1,
            label=f"prior mean of K+ ({prior_mean:.3g})",
        )
    else:
        left.annotate(
            f"prior mean of K+: {prior_mean:.3g} (off the scale)",
            xy=(0.03, 0.93),
            xycoords="axes fraction",
            fontsize=8,
            color=PALETTE["orange"],
        )
    left.set(
        xlabel="sweep",
        ylabel="K+",
        ylim=(0, top),
        xlim=(0, run.n_sweeps),
        title=f"sigma_X = {run.sigma_x:g}, alpha = {run.alpha:g}",
    )
    left.legend(fontsize=10, frameon=False, loc="lower right")
    plot_feature_mosaic(images, run.shape, ax=right, ncols=12, scale=EXPLORER_SCALE)
    right.set_title(
        f"the {images.shape[0]} features of the last draw (most owned first; "
        f"owners: {owners.max() if owners.size else 0} to {owners.min() if owners.size else 0})",
        fontsize=9,
    )
    fig.colorbar(right.images[-1], ax=right, shrink=0.8, label="change of ink")
    return with_alt(fig)


def _check_match(match, k_true: int, k_found: int) -> None:
    """The pairs of a FeatureMatch must index rows of A_true and A_found, one-to-one."""
    try:
        ref = np.asarray(match.ref_index)
        idx = np.asarray(match.index)
        corr = np.asarray(match.correlation)
    except Exception as exc:  # a FeatureMatch built by hand from junk
        raise TypeError("match must hold arrays ref_index, index and correlation") from exc
    if not (ref.ndim == idx.ndim == corr.ndim == 1 and ref.size == idx.size == corr.size) \
            or ref.dtype.kind not in "iu" or idx.dtype.kind not in "iu" or corr.dtype.kind != "f":
        raise ValueError("match must hold 1-D integer ref_index and index and float correlation "
                         "of equal length")
    if ref.size and (ref.min() < 0 or ref.max() >= k_true):
        raise ValueError(f"match pairs true feature {int(ref.max())}, but A_true has {k_true} row(s): "
                         "was match computed from these A_true and A_found?")
    if idx.size and (idx.min() < 0 or idx.max() >= k_found):
        raise ValueError(f"match pairs found feature {int(idx.max())}, but A_found has {k_found} row(s): "
                         "was match computed from these A_true and A_found?")
    if len(set(ref.tolist())) != ref.size or len(set(idx.tolist())) != idx.size:
        raise ValueError("match must pair each feature at most once")
    if not np.all(np.isfinite(corr)):
        raise ValueError("match correlations must be finite")


def recovery_figure(A_true, A_found, match, shape: tuple[int, int]) -> Figure:
    """True features of synthetic data (top) above the matched features found (bottom).

    Parameters
    ----------
    A_true, A_found : array_like
        ``(K_true, D)`` and ``(K_found, D)`` finite images, ``D = h * w``,
        ``K_true >= 1``.
    match : ibp_lab.evaluation.summaries.FeatureMatch
        From :func:`ibp_lab.evaluation.summaries.match_features` ``(A_true, A_found)``: its
        pairs must index rows of ``A_true`` and ``A_found``.
    shape : (int, int)
        ``(h, w)`` of one image.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.evaluation.summaries import match_features
    >>> A = np.eye(2, 4)
    >>> len(recovery_figure(A, A[::-1], match_features(A, A[::-1]), (2, 2)).axes)
    4
    """
    from ibp_lab.evaluation.summaries import FeatureMatch

    shape = check_shape("shape", shape)
    A_true = check_images("A_true", A_true, shape, min_rows=1)
    A_found = check_images("A_found", A_found, shape)
    if not isinstance(match, FeatureMatch):
        raise TypeError("match must be an ibp_lab.evaluation.summaries.FeatureMatch "
                        f"(from match_features(A_true, A_found)), got {type(match).__name__}")
    _check_match(match, A_true.shape[0], A_found.shape[0])
    check_size("A_true and A_found (one panel per feature)",
               float(A_true.shape[0] + A_found.shape[0]), limit=MAX_PANELS, hint="show fewer features")
    matched = set(match.index.tolist())
    unmatched = [k for k in range(A_found.shape[0]) if k not in matched]
    ncols = max(A_true.shape[0], 1) + len(unmatched)
    scale = float(max(np.abs(A_true).max(), np.abs(A_found).max() if A_found.size else 0.0)) or 1.0
    fig = Figure(figsize=(1.5 * ncols, 3.4), layout="constrained")
    axes = fig.subplots(2, ncols, squeeze=False)
    partner = match.matched_to(A_true.shape[0])
    corr = dict(zip(match.ref_index.tolist(), match.correlation.tolist()))
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    for k in range(A_true.shape[0]):
        axes[0, k].imshow(A_true[k].reshape(shape), cmap=DIVERGING_CMAP, vmin=-scale, vmax=scale)
        axes[0, k].set_title(f"true {k + 1}", fontsize=9)
        if partner[k] >= 0:
            axes[1, k].imshow(
                A_found[partner[k]].reshape(shape), cmap=DIVERGING_CMAP, vmin=-scale, vmax=scale
            )
            axes[1, k].set_title(f"found: r = {corr[k]:.2f}", fontsize=9)
        else:
            axes[1, k].axis("off")
    for j, k in enumerate(unmatched, start=A_true.shape[0]):
        axes[0, j].axis("off")
        axes[1, j].imshow(A_found[k].reshape(shape), cmap=DIVERGING_CMAP, vmin=-scale, vmax=scale)
        axes[1, j].set_title("found, unmatched", fontsize=9)
    return with_alt(fig)
