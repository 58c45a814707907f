"""One palette for every figure in the book (colour-blind safe, Okabe & Ito)."""

from __future__ import annotations

PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "purple": "#CC79A7",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "grey": "#7F7F7F",
    "black": "#1A1A1A",
}
#: Colours for chains, draws or curves that are compared side by side.
CYCLE = [PALETTE[k] for k in ("blue", "orange", "green", "purple", "vermillion", "sky")]
#: Binary matrices: white for 0, dark for 1.
BINARY_CMAP = "Greys"
#: Feature images are changes to the average digit: red adds ink, blue removes it.
DIVERGING_CMAP = "RdBu_r"
#: Probabilities and other non-negative quantities.
SEQUENTIAL_CMAP = "viridis"
#: Raw digits (ink in [0, 1]).
INK_CMAP = "Greys"


def integer_ticks(ax) -> None:
    """Put ticks of both axes on whole numbers only (rows, dishes and counts are integers).

    Matplotlib's default locator happily labels a 5-column matrix at 0.5, 1.5, ...; a
    reader then wonders which dish is "dish 2.5".
    """
    from matplotlib.ticker import MaxNLocator  # keeps ``import ibp_lab.plotting`` light

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
