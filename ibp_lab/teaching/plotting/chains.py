"""Figures of the chapter on several chains (``book/06_chains.md``).

Every function returns a new :class:`matplotlib.figure.Figure` built without pyplot and
is a pure function of its arguments.

- :func:`chain_traces_figure`: ``K+`` and the log joint of every chain over sweeps.
- :func:`co_ownership_figure`: ``E[Z Z^T]`` heatmaps with the rows sorted by a label.
- :func:`feature_owners_figure`: feature images with the classes of the data that own them.
- :func:`reappearance_figure`: how often each reference feature reappears in each chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ibp_lab._checks import check_binary_matrix, check_count, check_real_array, check_size
from ibp_lab.teaching.plotting._doors import (
    MAX_PANELS,
    check_chains,
    check_class_labels,
    check_fraction,
    check_images,
    check_labels,
    check_runs,
    check_scale,
    check_shape,
    check_trace,
)
from ibp_lab.teaching.plotting._alt import with_alt
from ibp_lab.teaching.plotting._style import (
    CYCLE,
    DIVERGING_CMAP,
    MARKERS,
    PALETTE,
    SEQUENTIAL_CMAP,
    label_line_ends,
    series_style,
)
from ibp_lab.evaluation.summaries import class_ownership

__all__ = [
    "chain_traces_figure",
    "co_ownership_figure",
    "feature_owners_figure",
    "reappearance_figure",
]


def chain_traces_figure(chains, labels: Sequence[str]) -> Figure:
    """``K+`` (left) and the log joint (right) of every chain over all sweeps.

    The warm-up (``trace.attrs["burn"]`` sweeps) is shaded. The log joint axis
    starts at a low percentile of the post-warm-up values, so the first sweeps
    from a poor start do not flatten the rest.

    Parameters
    ----------
    chains : list of ibp_lab.inference.chains.ChainResult
        At least one chain (a single chain goes in a list).
    labels : list of str
        One legend entry per chain.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chain
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> c = run_chain(X, 10, np.random.default_rng(1), sigma_x=1.0, sigma_a=1.0, burn=3)
    >>> len(chain_traces_figure([c], ["one"]).axes)
    2
    """
    chains = check_chains("chains", chains)
    labels = check_labels("labels", labels, len(chains), what="chain")
    burns = []
    for c, chain in enumerate(chains):
        check_trace(f"chains[{c}].trace", chain.trace, ("k_plus", "log_joint"))
        burns.append(check_count(f"chains[{c}].trace.attrs['burn']", chain.trace.attrs.get("burn", 0)))
    fig = Figure(figsize=(11, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    settled, k_lines, joint_lines = [], [], []
    for c, (chain, label, burn) in enumerate(zip(chains, labels, burns)):
        trace = chain.trace
        sweeps = np.arange(1, trace.sizes["draw"] + 1)
        style = series_style(c, n_points=sweeps.size)  # colour, dashes and markers: not colour alone
        k_lines += left.plot(sweeps, trace.k_plus.values, lw=1, label=label, **style)
        joint_lines += right.plot(sweeps, trace.log_joint.values, lw=0.8, label=label, **style)
        settled.append(trace.log_joint.values[burn:])
    burn = burns[0]
    for ax in (left, right):
        if burn:
            ax.axvspan(0, burn, color=PALETTE["grey"], alpha=0.12, lw=0)
        ax.set_xlabel("sweep")
    settled = np.concatenate(settled)
    settled = settled[np.isfinite(settled)]
    if settled.size:  # otherwise (all warm-up, or no finite value) matplotlib's own limits
        low, high = np.percentile(settled, 0.5), np.max(settled)
        spread = (high - low) or 1.0  # a flat trace still gets a visible band
        right.set_ylim(low - 0.5 * spread, high + 0.1 * spread)
    left.set(ylabel="K+", title="number of features (shaded: warm-up)")
    right.set(ylabel="log p(X, Z | alpha, sigma)", title="log joint")
    left.legend(fontsize=10, frameon=False)
    for ax, lines in ((left, k_lines), (right, joint_lines)):
        label_line_ends(ax, lines, labels)
    return with_alt(fig, f"K+ and the log joint of {len(chains)} chain{'s' if len(chains) > 1 else ''} "
                         f"({', '.join(labels)}) over {max(c.trace.sizes['draw'] for c in chains)} sweeps, "
                         f"the first {burn} shaded as warm-up")


def co_ownership_figure(
    matrices: Mapping[str, np.ndarray], labels, *, vmax: float | None = None
) -> Figure:
    """Heatmaps of ``E[Z Z^T]`` with rows and columns sorted by a class label.

    Parameters
    ----------
    matrices : dict
        Panel title (str) -> ``(N, N)`` finite co-ownership matrix, entries >= 0
        (:func:`ibp_lab.evaluation.summaries.co_ownership`); the same ``N`` for every panel.
    labels : array_like
        ``(N,)`` class of every row, integers or strings (for the digits, the
        digit: never used to fit, only to sort), ticks at the middle of each class block.
    vmax : float, optional
        Top of the colour scale (> 0), shared by all panels (default: the 99.5th
        percentile of all entries).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> len(co_ownership_figure({"a": np.eye(4)}, [1, 0, 1, 0]).axes)
    2
    """
    matrices = check_runs("matrices", matrices)
    check_size("matrices (one panel each)", float(len(matrices)), limit=MAX_PANELS,
               hint="draw fewer panels")
    first = next(iter(matrices.values()))
    n_rows = first.shape[0] if first.ndim == 2 else 0
    for title, M in matrices.items():
        if M.ndim != 2 or M.shape != (n_rows, n_rows) or n_rows == 0:
            raise ValueError(f"matrices[{title!r}] must be a square (N, N) matrix with N >= 1, the same N "
                             f"for every panel, got shape {M.shape}")
        if np.any(M < 0):
            raise ValueError(f"matrices[{title!r}] must be >= 0 (expected numbers of shared features)")
    labels = check_class_labels("labels", labels, n_rows, partner="the matrices")
    vmax = check_scale("vmax", vmax)
    order = np.argsort(labels, kind="stable")
    classes, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    if vmax is None:
        vmax = max(float(np.percentile(M, 99.5)) for M in matrices.values()) or 1.0
    n = len(matrices)
    fig = Figure(figsize=(4.6 * n + 0.8, 4.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n))
    for ax, (title, M) in zip(axes, matrices.items()):
        im = ax.imshow(
            np.asarray(M)[np.ix_(order, order)],
            cmap=SEQUENTIAL_CMAP,
            vmin=0,
            vmax=vmax,
            interpolation="nearest",
        )
        centres = starts + counts / 2 - 0.5
        ax.set_xticks(centres, [str(c) for c in classes])
        ax.set_yticks(centres, [str(c) for c in classes])
        for edge in starts[1:] - 0.5:
            ax.axhline(edge, color="white", lw=0.4)
            ax.axvline(edge, color="white", lw=0.4)
        ax.set(title=title, xlabel="digit", ylabel="digit")
    fig.colorbar(im, ax=list(axes), shrink=0.85, label="expected number of shared features")
    return with_alt(fig)


def feature_owners_figure(
    A,
    Z,
    labels,
    shape: tuple[int, int],
    *,
    scale: float | None = None,
    ncols: int = 10,
    min_share: float = 0.3,
) -> Figure:
    """Feature images with the classes that own them, and the share of each class owning each.

    Top: each feature's posterior mean image (most owned first), titled with its
    number of owners and the classes of which more than ``min_share`` own it.
    Bottom: a table, features by classes, of the share of each class's rows that
    own the feature.

    Parameters
    ----------
    A : array_like
        ``(K, D)`` finite feature images, ``K >= 1``, ``D = h * w``.
    Z : array_like
        ``(N, K)`` binary: the draw they belong to.
    labels : array_like
        ``(N,)`` class of every row (integers or strings).
    shape : (int, int)
        ``(h, w)`` of one image.
    scale : float, optional
        Symmetric colour limit, > 0 (default: the largest absolute value in ``A``).
    ncols : int, optional
        Images per row, >= 1.
    min_share : float, optional
        Share in [0, 1] of a class's rows above which the class is named in a title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> Z = np.array([[1, 0], [1, 1], [0, 1]])
    >>> fig = feature_owners_figure(np.eye(2, 4), Z, [0, 0, 1], (2, 2))
    >>> len(fig.axes) >= 3
    True
    """
    shape = check_shape("shape", shape)
    A = check_images("A", A, shape)
    Z = check_binary_matrix("Z", Z)
    if A.shape[0] != Z.shape[1]:
        raise ValueError(f"A must have one image per column of Z ({Z.shape[1]}), got {A.shape[0]}")
    if A.shape[0] == 0:
        raise ValueError("A and Z must hold at least one feature, got none")
    check_size("A (one panel per feature)", float(A.shape[0]), limit=MAX_PANELS, hint="show fewer features")
    labels = check_class_labels("labels", labels, Z.shape[0], partner="Z")
    scale = check_scale("scale", scale)
    ncols = check_count("ncols", ncols, minimum=1)
    min_share = check_fraction("min_share", min_share)
    order = np.argsort(-Z.sum(axis=0), kind="stable")
    A, Z = A[order], Z[:, order]
    share = class_ownership(Z, labels)
    classes = np.unique(labels)
    k = A.shape[0]
    ncols = max(1, min(ncols, k))
    nrows = -(-k // ncols)
    scale = scale or float(np.abs(A).max()) or 1.0
    table_height = 0.2 * k + 1.2
    fig = Figure(figsize=(1.15 * ncols + 0.6, 1.55 * nrows + table_height), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.55 * nrows, table_height])
    axes = np.atleast_2d(top.subplots(nrows, ncols, squeeze=False))
    for j, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if j >= k:
            ax.axis("off")
            continue
        ax.imshow(
            A[j].reshape(shape),
            cmap=DIVERGING_CMAP,
            vmin=-scale,
            vmax=scale,
            interpolation="nearest",
        )
        main = [
            str(c) for c in classes[np.argsort(-share[j])] if share[j, classes == c][0] > min_share
        ][:3]
        ax.set_title(
            f"f{j}: {int(Z[:, j].sum())} digits\n"
            + ("mostly " + ", ".join(main) if main else "spread"),
            fontsize=7,
        )
    ax = bottom.subplots()
    im = ax.imshow(share, cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(k), [f"f{j}" for j in range(k)], fontsize=7)
    ax.set_xticks(range(len(classes)), [str(c) for c in classes])
    ax.set(xlabel="digit", title="share of each digit's examples that own the feature")
    bottom.colorbar(im, ax=ax, shrink=0.9)
    return with_alt(fig)


def reappearance_figure(rates, chain_labels: Sequence[str], *, threshold: float = 0.9) -> Figure:
    """How often each reference feature reappears in the draws of each chain.

    Parameters
    ----------
    rates : array_like
        ``(n_chains, K_ref)`` shares in [0, 1] (:func:`ibp_lab.evaluation.summaries.reappearance`
        per chain), at least one chain; a 1-D array is one chain.
    chain_labels : list of str
        One legend entry per chain.
    threshold : float, optional
        The correlation in [-1, 1] used for matching, for the axis label.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> len(reappearance_figure(np.array([[1.0, 0.5]]), ["a"]).axes)
    1
    """
    rates = np.atleast_2d(check_real_array("rates", rates))
    if rates.ndim != 2 or rates.shape[0] == 0:
        raise ValueError(f"rates must be 2-D (n_chains, K_ref) with at least one chain, got shape {rates.shape}")
    if not np.all((rates >= 0) & (rates <= 1)):  # also refuses NaN
        raise ValueError("rates must hold shares in [0, 1] (no NaN)")
    check_size("rates (one marker per chain and feature)", float(rates.size), limit=MAX_PANELS * 100,
               hint="show fewer chains or features")
    chain_labels = check_labels("chain_labels", chain_labels, rates.shape[0], what="chain (row of rates)")
    threshold = check_fraction("threshold", threshold, low=-1.0)
    k = rates.shape[1]
    fig = Figure(figsize=(max(6.0, 0.45 * k + 2), 3.4), layout="constrained")
    ax = fig.subplots()
    for c, (row, label) in enumerate(zip(rates, chain_labels)):
        offset = (c - (len(rates) - 1) / 2) * 0.12
        ax.plot(np.arange(k) + offset, row, MARKERS[c % len(MARKERS)], ms=5, color=CYCLE[c % len(CYCLE)],
                label=label)
    ax.set_xticks(range(k), [f"f{j}" for j in range(k)], fontsize=8)
    ax.set(
        ylim=(-0.05, 1.05),
        ylabel=f"share of draws with a\nmatch (r > {threshold:g})",
        xlabel="reference feature (most owned first)",
    )
    ax.legend(
        fontsize=8,
        frameon=False,
        ncol=min(4, len(rates)),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
    )
    return with_alt(fig)
