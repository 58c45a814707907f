"""Binary matrices and customer x dish tables are ticked at whole numbers only (issue 14)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from ibp_lab.teaching import explorers
from ibp_lab.teaching.plotting import marginals_figure, plot_binary_matrix


def _visible_ticks(ax, axis: str) -> np.ndarray:
    """Tick positions that fall inside the drawn range of one axis."""
    ticks = np.asarray(getattr(ax, f"get_{axis}ticks")())
    low, high = sorted(getattr(ax, f"get_{axis}lim")())
    return ticks[(ticks >= low) & (ticks <= high)]


@pytest.mark.parametrize("shape", [(1, 1), (2, 5), (7, 3), (30, 41), (200, 2)])
def test_binary_matrix_ticks_are_whole_numbers_from_one(shape):
    Z = (np.arange(np.prod(shape)).reshape(shape) % 3 == 0).astype(np.int8)
    Z[:, 0] = 1  # no empty columns, as a sampler returns them
    ax = plot_binary_matrix(Z, ax=Figure().subplots(), left_order=False)
    for axis, size in (("x", shape[1]), ("y", shape[0])):
        ticks = _visible_ticks(ax, axis)
        assert ticks.size >= 1
        np.testing.assert_array_equal(ticks, np.round(ticks))
        # customers and dishes are numbered 1..size, as in the text
        assert ticks.min() >= 1 and ticks.max() <= size


def test_cells_are_centred_on_their_numbers():
    """Cell (customer 1, dish 1) is drawn around (1, 1): the ticks label the cells."""
    ax = plot_binary_matrix([[1, 0, 0], [1, 1, 1]], ax=Figure().subplots(), left_order=False)
    assert ax.images[-1].get_extent() == [0.5, 3.5, 2.5, 0.5]


def test_marginals_heatmap_ticks_are_whole_numbers():
    fig = marginals_figure(explorers.marginals_table(alpha=2.0, beta=1.0, n=7, k_max=9))
    fig.canvas.draw()
    heatmap = fig.axes[0]
    for axis in ("x", "y"):
        ticks = _visible_ticks(heatmap, axis)
        assert ticks.size >= 1
        np.testing.assert_array_equal(ticks, np.round(ticks))
