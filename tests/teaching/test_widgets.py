"""Explorers: the static frames are exactly what the live explorer draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from ibp_lab.teaching import explorers
from ibp_lab.teaching.plotting import buffet_explorer_figure
from ibp_lab.teaching.plotting.gibbs import sigma_alpha_explorer_figure
from ibp_lab.teaching.plotting.recursive import marginals_figure
from ibp_lab.teaching.widgets import figure_png, live_explorer, static_explorer


def small_buffet(alpha, beta):
    return buffet_explorer_figure(explorers.buffet(alpha=alpha, beta=beta, n=12, n_draws=30))


@pytest.mark.slow  # measured over 4 s (make test only; see README)
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
    with pytest.raises(ValueError, match="unknown parameter"):
        explorer.frame_at(a=1, b=2)
    # what is promised: one frame per grid point, and each is a PNG
    assert sorted(explorer.frames) == [(0,), (1,)]
    assert all(frame.startswith(b"\x89PNG") for frame in explorer.frames.values())


HOSTILE_LABELS = [
    "</script><script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)",
    "<!-- & \u2028 \u2029 -->",
]


def _script_bodies(page):
    """Text between each <script> and the first </script> after it (what a browser runs)."""
    import re

    return re.findall(r"<script>(.*?)</script>", page, flags=re.S)


@pytest.mark.parametrize("label", HOSTILE_LABELS)
def test_labels_and_title_cannot_break_out_of_the_explorer_markup(label):
    """Grid values and the title enter the page escaped for HTML text, attributes and script."""
    import html
    import json
    import re

    explorer = static_explorer(lambda a: plt.figure(figsize=(1, 1)), {"a": [label, "ok"]},
                               title=label, initial={"a": label})
    page = explorer._repr_html_()
    # one script element, and it is the explorer's own: the label did not close or open one
    scripts = _script_bodies(page)
    assert len(scripts) == 1 and page.count("<script") == 1 and page.count("</script>") == 1
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        assert char not in scripts[0]
    # outside the script no tag or attribute can be injected: raw < > " ' never appear from the label
    outside = page.replace(scripts[0], "")
    assert html.escape(label, quote=True) in outside
    assert label not in outside or label == html.escape(label, quote=True)
    # and the script still decodes to the label itself
    labels = re.search(r"var labels = (\{.*?\});", scripts[0]).group(1)
    assert json.loads(labels) == {"a": [label, "ok"]}
    plt.close("all")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"initial": {"a": 3}}, ValueError, "not on the grid"),
        ({"initial": {"b": 1}}, ValueError, "one value for each"),
        ({"initial": [1]}, ValueError, "one value for each"),
        ({"title": 5}, TypeError, "title must be a string"),
        ({"dpi": 10**6}, ValueError, "dpi must be an integer <= 600"),
        ({"dpi": "72"}, TypeError, "dpi must be an integer"),
    ],
)
def test_static_explorer_refuses_bad_options_at_the_door(kwargs, error, message):
    with pytest.raises(error, match=message):
        static_explorer(lambda a: plt.figure(figsize=(1, 1)), {"a": [1, 2]}, **kwargs)
    plt.close("all")


def test_a_grid_too_large_to_render_is_refused_before_rendering():
    calls = []
    with pytest.raises(ValueError, match="more than MAX_FRAMES"):
        static_explorer(lambda a, b: calls.append(1), {"a": list(range(100)), "b": list(range(100))})
    assert calls == []


#: The chapters' render functions, as the chapters write them (figure of an explorers result).
BOOK_RENDERS = {
    "buffet (ch. 1)": (lambda alpha, beta: buffet_explorer_figure(explorers.buffet(alpha=alpha, beta=beta)),
                       {"alpha": 2.0, "beta": 1.0}),
    "marginals (ch. 3)": (lambda alpha, beta: marginals_figure(explorers.marginals_table(alpha=alpha, beta=beta)),
                          {"alpha": 6.0, "beta": 5.6}),
    "sigma_x/alpha (ch. 4)": (lambda sigma_x, alpha: sigma_alpha_explorer_figure(
        explorers.sigma_alpha_chain(sigma_x=sigma_x, alpha=alpha)), {"sigma_x": 0.25, "alpha": 1.0}),
}


@pytest.mark.parametrize("render, setting", list(BOOK_RENDERS.values()), ids=list(BOOK_RENDERS))
def test_each_book_explorer_shows_the_live_picture_in_its_static_frame(render, setting):
    """The chapters' explorers: the static frame at a setting is the live figure at that setting."""
    explorer = static_explorer(render, {name: [value] for name, value in setting.items()})
    assert explorer.frame_at(**setting) == figure_png(render(**setting))


@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_live_explorer_draws_the_static_frame_of_each_setting():
    """Moving a slider redraws the Image widget with exactly the static frame of that setting."""
    pytest.importorskip("ipywidgets")
    grid = {"alpha": [1.0, 6.0], "beta": [1.0, 3.0]}
    box = live_explorer(small_buffet, grid, initial={"alpha": 1.0, "beta": 1.0})
    static = static_explorer(small_buffet, grid)
    sliders, image = box.children[0].children, box.children[1]
    assert image.value == static.frame_at(alpha=1.0, beta=1.0)
    sliders[0].value = 6.0
    assert image.value == static.frame_at(alpha=6.0, beta=1.0)
    sliders[1].value = 3.0
    assert image.value == static.frame_at(alpha=6.0, beta=3.0)
    plt.close("all")


# --- the combined explorer (one cell per place: live in a kernel, static in the book) ---

from ibp_lab.teaching.widgets import explorer, refine_grid  # noqa: E402


def test_refine_grid_puts_one_midpoint_between_neighbours_and_keeps_the_rest():
    refined = refine_grid({"alpha": [0.5, 1.0, 2.0], "n": [10, 11, 20], "kind": ["b", "a"]})
    assert refined == {"alpha": [0.5, 0.75, 1.0, 1.5, 2.0], "n": [10, 11, 15, 20],
                       "kind": ["b", "a"]}
    # a decreasing list is not refined (its order may mean something)
    assert refine_grid({"a": [3.0, 1.0]}) == {"a": [3.0, 1.0]}


def test_in_a_kernel_the_explorer_offers_the_live_widget_on_the_finer_grid(monkeypatch):
    pytest.importorskip("ipywidgets")
    import base64

    monkeypatch.delenv("IBP_LAB_BOOK_BUILD", raising=False)
    grid = {"alpha": [1.0, 6.0], "beta": [1.0, 3.0]}
    shown = explorer(small_buffet, grid, initial={"alpha": 1.0, "beta": 1.0})
    bundle = shown._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    box = shown.live()
    assert view["model_id"] == box.model_id
    assert "ibp-explorer" not in bundle["text/html"]  # no frames rendered in a kernel
    assert base64.b64decode(bundle["image/png"]) == figure_png(small_buffet(1.0, 1.0))
    sliders, status, image = box.children[0].children, box.children[1], box.children[2]
    assert list(sliders[0].options) == [1.0, 3.5, 6.0]  # finer than the static grid
    sliders[0].value = 3.5  # a setting the web page has no frame for
    assert image.value == figure_png(small_buffet(3.5, 1.0))
    assert shown.last_seconds is not None and "drawn in the kernel in" in status.value
    assert "ibp-live-busy" not in box._dom_classes  # the busy state ends with the redraw
    plt.close("all")


def test_in_the_book_build_the_explorer_is_the_precomputed_slider(monkeypatch):
    import base64

    monkeypatch.setenv("IBP_LAB_BOOK_BUILD", "1")
    grid = {"alpha": [1.0, 6.0], "beta": [1.0]}
    bundle = explorer(small_buffet, grid, initial={"alpha": 6.0, "beta": 1.0},
                      title="t")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    static = static_explorer(small_buffet, grid, title="t", initial={"alpha": 6.0, "beta": 1.0})
    assert bundle["text/html"] == static._repr_html_()
    assert base64.b64decode(bundle["image/png"]) == static.frame_at(alpha=6.0, beta=1.0)
    assert 'aria-valuetext="alpha = 6.0"' in bundle["text/html"]
    assert "stopPropagation" in bundle["text/html"]  # arrow keys stay with the slider
    plt.close("all")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"initial": {"alpha": 2.0}}, ValueError, "initial"),
    ({"initial": {"alpha": 1.0}, "live_grid": {"beta": [1.0]}}, ValueError, "live_grid"),
    ({"initial": {"alpha": 1.0}, "live_grid": {"alpha": [3.0]}}, ValueError, "initial"),
    ({"initial": {"alpha": 1.0}, "title": 3}, TypeError, "title"),
])
def test_explorer_refuses_bad_options_at_the_door(kwargs, error, message):
    with pytest.raises(error, match=message):
        explorer(lambda alpha: plt.figure(), {"alpha": [1.0, 3.0]}, **kwargs)


def test_the_live_explorer_draws_the_next_settings_ahead_and_serves_them(monkeypatch):
    """After a move, the settings one step away are drawn in the worker; moving to one
    shows that drawing (no new call of render) and it is the frame of that setting."""
    pytest.importorskip("ipywidgets")
    monkeypatch.delenv("IBP_LAB_BOOK_BUILD", raising=False)
    calls = []

    def counted(alpha, beta):
        calls.append((alpha, beta))
        return small_buffet(alpha, beta)

    shown = explorer(counted, {"alpha": [1.0, 3.0], "beta": [1.0, 2.0]},
                     initial={"alpha": 1.0, "beta": 1.0})
    box = shown.live()
    for future in list(shown._frames.values()):
        future.result()  # let the worker finish what it drew ahead
    assert set(calls) == {(1.0, 1.0), (2.0, 1.0), (1.0, 1.5)}  # the start and its neighbours
    sliders, image = box.children[0].children, box.children[2]
    sliders[0].value = 2.0
    assert calls.count((2.0, 1.0)) == 1  # served from the drawing made ahead
    assert image.value == figure_png(small_buffet(2.0, 1.0))
    shown._worker.shutdown(wait=True)  # the drawings made ahead of the move end here
    calls.clear()
    quiet = explorer(counted, {"alpha": [1.0, 3.0], "beta": [1.0]},
                     initial={"alpha": 1.0, "beta": 1.0}, prefetch=False)
    quiet.live()
    assert calls == [(1.0, 1.0)]  # only the first frame: nothing drawn ahead
    plt.close("all")


def test_a_grid_value_that_is_nan_of_any_float_type_is_refused():
    import numpy as np

    for nan in (float("nan"), np.float32("nan"), np.float16("inf"), complex("nan")):
        with pytest.raises(ValueError, match=r"grid\['a'\] must hold finite numbers"):
            static_explorer(lambda a: plt.figure(), {"a": [1.0, nan]})


def test_no_figure_is_left_open_when_rendering_or_saving_fails():
    plt.close("all")

    def fails(a):
        plt.figure()
        raise RuntimeError("the reader's render broke")

    def returns_axes(a):
        return plt.subplots()[1]

    with pytest.raises(RuntimeError, match="render broke"):
        static_explorer(fails, {"a": [1.0]})
    with pytest.raises(TypeError, match="render must return a matplotlib Figure, got Axes"):
        static_explorer(returns_axes, {"a": [1.0]})
    with pytest.raises(ValueError, match="dpi"):
        figure_png(plt.figure(), dpi=0)
    assert plt.get_fignums() == []


def test_a_jump_shows_a_quick_stand_in_at_once_then_the_exact_frame(monkeypatch):
    """A move to a setting not drawn ahead is drawn under QUICK_FRAMES: a render that
    takes the leave shows its stand-in (the status says so), then the exact frame; a
    frame drawn ahead is shown as it is."""
    import time

    pytest.importorskip("ipywidgets")
    monkeypatch.delenv("IBP_LAB_BOOK_BUILD", raising=False)

    def render(alpha):
        notes = explorers.QUICK_FRAMES.get()
        if notes is not None:
            notes.append("a stand-in")
            return small_buffet(alpha, 5.0)
        return small_buffet(alpha, 1.0)

    shown = explorer(render, {"alpha": [1.0, 2.0, 3.0, 4.0]}, initial={"alpha": 1.0},
                     live_grid={"alpha": [1.0, 2.0, 3.0, 4.0]})
    box = shown.live()
    for future in list(shown._frames.values()):
        future.result()
    slider, status, image = box.children[0].children[0], box.children[1], box.children[2]
    slider.value = 2.0  # drawn ahead: the exact frame at once
    assert image.value == figure_png(small_buffet(2.0, 1.0))
    slider.value = 4.0  # a jump: two steps away from every setting drawn
    assert "a stand-in" in status.value and "the exact frame follows" in status.value
    deadline = time.time() + 60
    while image.value != figure_png(small_buffet(4.0, 1.0)) and time.time() < deadline:
        time.sleep(0.05)
    assert image.value == figure_png(small_buffet(4.0, 1.0))
    assert "exact frame" in status.value
    shown._worker.shutdown(wait=True)
    plt.close("all")
