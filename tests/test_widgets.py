"""Explorers: the static frames are exactly what the live explorer draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ibp_lab.plotting import buffet_explorer_figure
from ibp_lab.widgets import figure_png, live_explorer, static_explorer


def small_buffet(alpha, beta):
    return buffet_explorer_figure(alpha, beta, n=12, n_draws=30)


def test_static_frame_equals_the_live_computation_at_the_same_setting():
    grid = {"alpha": [1.0, 3.0], "beta": [0.5, 2.0]}
    explorer = static_explorer(small_buffet, grid)
    for alpha in grid["alpha"]:
        for beta in grid["beta"]:
            assert explorer.frame_at(alpha=alpha, beta=beta) == figure_png(small_buffet(alpha, beta))


def test_frames_differ_between_settings_and_html_is_self_contained():
    explorer = static_explorer(small_buffet, {"alpha": [1.0, 6.0], "beta": [1.0]})
    assert explorer.frame_at(alpha=1.0, beta=1.0) != explorer.frame_at(alpha=6.0, beta=1.0)
    page = explorer._repr_html_()
    assert "http://" not in page and "https://" not in page and "<script src" not in page
    assert page.count('type="range"') == 2


def test_live_explorer_builds_one_slider_per_parameter():
    ipywidgets = pytest.importorskip("ipywidgets")
    box = live_explorer(small_buffet, {"alpha": [1.0, 2.0], "beta": [1.0]})
    sliders = box.children[0].children
    assert [s.description for s in sliders] == ["alpha", "beta"]
    assert all(isinstance(s, ipywidgets.SelectionSlider) for s in sliders)
    plt.close("all")


def test_buffet_explorer_figure_is_deterministic():
    assert figure_png(small_buffet(2.0, 1.0)) == figure_png(small_buffet(2.0, 1.0))


@pytest.mark.parametrize(
    "grid, message",
    [({}, "grid must be a non-empty dict"), ({"alpha": []}, "non-empty list"), ({"1a": [1]}, "parameter names")],
)
def test_bad_grids_are_rejected(grid, message):
    with pytest.raises((TypeError, ValueError), match=message):
        static_explorer(small_buffet, grid)


def test_frame_at_rejects_values_off_the_grid():
    explorer = static_explorer(lambda a: plt.figure(figsize=(1, 1)), {"a": [1, 2]})
    with pytest.raises(ValueError, match="not on the grid"):
        explorer.frame_at(a=3)
    assert np.isfinite(len(explorer.frames))


@pytest.mark.parametrize(
    "render, setting",
    [
        (buffet_explorer_figure, {"alpha": 2.0, "beta": 1.0}),
        ("marginals_figure", {"alpha": 6.0, "beta": 5.6}),
        ("sigma_alpha_explorer_figure", {"sigma_x": 0.25, "alpha": 1.0}),
    ],
    ids=["buffet (ch. 1)", "marginals (ch. 3)", "sigma_x/alpha (ch. 4)"],
)
def test_each_book_explorer_shows_the_live_picture_in_its_static_frame(render, setting):
    """The chapters' explorers: the static frame at a setting is the live figure at that setting."""
    import ibp_lab.plotting as plotting

    render = getattr(plotting, render) if isinstance(render, str) else render
    explorer = static_explorer(render, {name: [value] for name, value in setting.items()})
    assert explorer.frame_at(**setting) == figure_png(render(**setting))
