"""Plotting helpers for the book: one palette, one place for figure boilerplate.

Submodules hold the figures of one topic each; the most used names are
re-exported here. One figure API and one axis convention throughout:

- a ``*_figure(...)`` function makes and returns a whole new
  :class:`matplotlib.figure.Figure`;
- a ``plot_*(...)`` function draws on one axes given as keyword-only ``ax=None``
  (or ``axes=None`` for a row of axes), makes a figure if none is given, and
  returns the Axes;
- options are keyword-only and named alike everywhere (``shape`` of one image,
  ``labels`` one per item, ``title``, ``color``);
- figures never run a model or a sampler: they draw results the package computed
  (the explorers' computations are in :mod:`ibp_lab.teaching.explorers`).

- :mod:`ibp_lab.teaching.plotting.matrices`: binary matrices, grids of images.
- :mod:`ibp_lab.teaching.plotting.buffet`: counts against Poisson laws, the buffet explorer.
- :mod:`ibp_lab.teaching.plotting.beta_process`: atoms of the beta process, Lévy densities, power laws.
- :mod:`ibp_lab.teaching.plotting.recursive`: the Recursive IBP marginals and their explorer.
- :mod:`ibp_lab.teaching.plotting.gibbs`: the linear-Gaussian model, its sampler and the sigma_X/alpha explorer.
- :mod:`ibp_lab.teaching.plotting.chains`: several chains and label-free summaries.
- :mod:`ibp_lab.teaching.plotting.split_merge`: split-merge moves.
- :mod:`ibp_lab.teaching.plotting.tempering`: tempered laws, swap rates along the ladder, traces by CPU time.
- :mod:`ibp_lab.teaching.plotting.heldout`: predictive checks and completed digits.
- :mod:`ibp_lab.teaching.plotting.pymc`: the truncated IBP in PyMC.
- :mod:`ibp_lab.teaching.plotting.variational`: evidence bounds, laws of K+ under q, ELBO traces.
- :mod:`ibp_lab.teaching.plotting.streaming`: R-IBP streaming inference.
- :mod:`ibp_lab.teaching.plotting.nonconjugate`: chains by sweep, predictive checks of binary images.
"""

from ibp_lab.teaching.plotting._style import (
    BINARY_CMAP,
    CYCLE,
    DIVERGING_CMAP,
    INK_CMAP,
    PALETTE,
    SEQUENTIAL_CMAP,
)
from ibp_lab.teaching.plotting.buffet import buffet_explorer_figure, plot_counts_vs_poisson
from ibp_lab.teaching.plotting.chains import (
    chain_traces_figure,
    co_ownership_figure,
    feature_owners_figure,
    reappearance_figure,
)
from ibp_lab.teaching.plotting.gibbs import (
    free_fit_figure,
    k_plus_check_figure,
    plot_feature_mosaic,
    recovery_figure,
    sensitivity_figure,
    sigma_alpha_explorer_figure,
)
from ibp_lab.teaching.plotting.matrices import image_grid_figure, plot_binary_matrix
from ibp_lab.teaching.plotting.recursive import marginals_figure, recursion_step_figure

__all__ = [
    "PALETTE",
    "CYCLE",
    "BINARY_CMAP",
    "DIVERGING_CMAP",
    "INK_CMAP",
    "SEQUENTIAL_CMAP",
    "plot_binary_matrix",
    "image_grid_figure",
    "plot_counts_vs_poisson",
    "buffet_explorer_figure",
    "marginals_figure",
    "recursion_step_figure",
    "sigma_alpha_explorer_figure",
    "plot_feature_mosaic",
    "k_plus_check_figure",
    "free_fit_figure",
    "sensitivity_figure",
    "recovery_figure",
    "chain_traces_figure",
    "co_ownership_figure",
    "feature_owners_figure",
    "reappearance_figure",
]
