"""Figures a reader who cannot see them, or cannot tell colours apart, can still read (issue 53).

- every figure function gives its figure a text alternative that IPython puts in the
  output's metadata (``"alt"``), saying what the figure shows, never a path or TeX;
- an explorer's frames each say their setting, and the page swaps the text with the frame;
- the palette's colours reach 3:1 against white (WCAG 1.4.11, lines and marks);
- chains differ in line style and marker and are named at their ends, not by colour alone.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from IPython.core.formatters import DisplayFormatter  # noqa: E402

from ibp_lab.inference.chains import run_chain  # noqa: E402
from ibp_lab.teaching.plotting import (  # noqa: E402
    CYCLE,
    PALETTE,
    chain_traces_figure,
    image_grid_figure,
    plot_binary_matrix,
)
from ibp_lab.teaching.plotting._alt import ALT_KEY, alt_text, with_alt  # noqa: E402
from ibp_lab.teaching.plotting.tempering import traces_by_cpu_figure  # noqa: E402
from ibp_lab.teaching.widgets import static_explorer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def relative_luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of a ``#rrggbb`` colour."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_known_values():
    # black on white is 21:1; Okabe-Ito's orange was measured at 2.25:1 (issue 53)
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast("#E69F00", "#FFFFFF") == pytest.approx(2.25, abs=0.01)


@pytest.mark.parametrize("name", sorted(PALETTE))
def test_every_palette_colour_reaches_3_to_1_on_white(name):
    assert contrast(PALETTE[name], "#FFFFFF") >= 3.0, f"{name} {PALETTE[name]}"


def displayed_alt(figure) -> str | None:
    """What IPython's display machinery puts in the output's metadata for ``figure``."""
    _, metadata = DisplayFormatter().format(figure)
    return metadata.get(ALT_KEY)


@pytest.fixture(scope="module")
def chains():
    X = np.random.default_rng(0).normal(size=(6, 4))
    return [run_chain(X, 20, np.random.default_rng(seed), sigma_x=1.0, sigma_a=1.0, burn=5) for seed in (1, 2, 3)]


def test_a_figure_function_puts_what_it_shows_in_the_output_metadata(chains):
    fig = chain_traces_figure(chains, ["first", "second", "third"])
    alt = displayed_alt(fig)
    assert alt is not None
    for words in ("3 chains", "first, second, third", "20 sweeps", "warm-up", "log joint", "sweep"):
        assert words in alt, (words, alt)
    assert "$" not in alt and "_images" not in alt and not re.search(r"\.png\b", alt)


def test_a_panel_drawn_on_a_pyplot_figure_describes_that_figure():
    fig, ax = plt.subplots()
    plot_binary_matrix(np.eye(3, dtype=int), ax=ax, title="$Z$ for $\\alpha = 2$")
    alt = displayed_alt(fig)
    plt.close(fig)
    assert alt.startswith("'Z for alpha = 2': an image of 3 by 3 cells"), alt
    assert "customer (row)" in alt


def test_a_figure_without_a_text_alternative_adds_no_metadata():
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    assert displayed_alt(fig) is None  # only ibp_lab's figures say what they show
    plt.close(fig)
    with pytest.raises(TypeError, match="summary"):
        with_alt(plt.figure(), 3)
    plt.close("all")


def test_a_grid_of_many_images_is_counted_not_read_out():
    fig = image_grid_figure(np.random.default_rng(0).random((12, 4)), (2, 2), ncols=4,
                            labels=[f"digit {i}" for i in range(12)])
    alt = alt_text(fig)
    assert alt.startswith("12 panels, each an image of 2 by 2 cells"), alt
    assert "'digit 0', 'digit 1'" in alt and "and 6 more" in alt
    assert len(alt) < 300


def test_chains_differ_in_more_than_colour_and_are_named_where_they_end(chains):
    fig = chain_traces_figure(chains, ["first", "second", "third"])
    for ax in fig.axes:
        lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
        assert len({line.get_linestyle() for line in lines}) == 3
        assert len({line.get_marker() for line in lines}) == 3
        assert sorted(text.get_text().strip() for text in ax.texts) == ["first", "second", "third"]
    t = np.arange(5.0)
    fig = traces_by_cpu_figure({"plain": [(t, -t), (t, -2 * t)]})
    assert sorted(text.get_text().strip() for text in fig.axes[0].texts) == ["chain 0", "chain 1"]
    assert {line.get_color() for line in fig.axes[0].get_lines()} <= set(CYCLE)


def test_an_explorers_frames_each_say_their_setting():
    def render(a):
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.plot([0, 1], [0, a], label="slope line")
        return fig

    shown = static_explorer(render, {"a": [1, 2]}, title="slopes")
    assert shown.alts[(0,)].startswith("slopes at a = 1. A line plot: slope line")
    assert shown.alts[(1,)].startswith("slopes at a = 2.")
    page = shown._repr_html_()
    assert 'alt="slopes at a = 2.' in page  # the initial frame: the middle of the grid
    assert "img.alt = alts[key]" in page  # the page swaps the text with the frame


def test_the_books_extension_reads_the_alt_where_nbconvert_does():
    spec = importlib.util.spec_from_file_location("book_accessibility", ROOT / "book" / "_ext" / "accessibility.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ALT_KEY == ALT_KEY
    assert module.figure_alt({ALT_KEY: "two chains"}, "image/png") == "two chains"
    assert module.figure_alt({"image/png": {ALT_KEY: "inner"}, ALT_KEY: "outer"}, "image/png") == "inner"
    assert module.figure_alt({"image/png": {"width": 3}}, "image/png") is None
