"""One palette for every figure in the book (colour-blind safe, after Okabe & Ito).

Two of Okabe and Ito's colours, orange (2.25:1) and sky blue (2.31:1), are too light
for a thin line on white: WCAG 1.4.11 asks 3:1 of the parts of a graphic that carry
meaning. They are darkened here, at the same hue, until they reach 3.3:1
(``tests/test_plotting_style.py`` checks every colour of the palette). Colour is never
the only cue: chains and methods also differ in line style and marker
(:func:`series_style`), and :func:`label_line_ends` names each line where it ends.
"""

from __future__ import annotations

PALETTE = {
    "blue": "#0072B2",
    "orange": "#BB8100",       # Okabe-Ito #E69F00, darkened to 3.3:1 on white
    "green": "#009E73",
    "purple": "#C870A1",       # Okabe-Ito #CC79A7 (3.06:1), darkened to 3.3:1
    "vermillion": "#D55E00",
    "sky": "#1C95D9",          # Okabe-Ito #56B4E9, darkened to 3.3:1 on white
    "grey": "#707070",
    "black": "#1A1A1A",
}
#: Colours for chains, draws or curves that are compared side by side.
CYCLE = [PALETTE[k] for k in ("blue", "orange", "green", "purple", "vermillion", "sky")]
#: Line styles and markers that go with CYCLE, so that series differ in more than colour.
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3))]
MARKERS = ["o", "s", "^", "D", "v", "P"]
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
    from matplotlib.ticker import MaxNLocator  # keeps ``import ibp_lab.teaching.plotting`` light

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def series_style(index: int, *, n_points: int = 0) -> dict:
    """Colour, line style and marker of the ``index``-th compared series (chain, method).

    ``n_points`` is the length of the series: about ten markers are spread along it,
    enough to tell the series apart without hiding the line.

    Examples
    --------
    >>> series_style(1, n_points=100)["linestyle"], series_style(1)["marker"]
    ('--', 's')
    >>> series_style(6)["color"] == series_style(0)["color"]
    True
    """
    return {"color": CYCLE[index % len(CYCLE)], "linestyle": LINESTYLES[index % len(LINESTYLES)],
            "marker": MARKERS[index % len(MARKERS)], "markevery": max(1, n_points // 10) if n_points else 1,
            "markersize": 4}


def label_line_ends(ax, lines, labels) -> None:
    """Write each label beside the end of its line, in the line's colour (direct labels).

    Labels that would overlap are pushed apart vertically; the axes keep a margin on
    the right for them.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> lines = [ax.plot([0, 1], [0, y])[0] for y in (1.0, 1.01)]
    >>> label_line_ends(ax, lines, ["a", "b"])
    >>> [t.get_text().strip() for t in ax.texts]
    ['a', 'b']
    """
    import numpy as np

    ends = []
    for line, label in zip(lines, labels):
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        finite = np.isfinite(x) & np.isfinite(y)
        if finite.any():
            ends.append((float(x[finite][-1]), float(y[finite][-1]), label, line.get_color()))
    if not ends:
        return
    low, high = ax.get_ylim()
    gap = 0.06 * (high - low)  # about one line of small text on a 3-inch panel
    ends.sort(key=lambda end: end[1])
    placed = []
    for _, y, _, _ in ends:
        placed.append(max(y, placed[-1] + gap) if placed else y)
    # a stack pushed past the top of the axes is moved down as a whole, to stay inside
    overshoot = placed[-1] - (high - gap / 2)
    if overshoot > 0:
        placed = [y_text - overshoot for y_text in placed]
    for (x, y, label, colour), y_text in zip(ends, placed):
        # a leading space keeps the label off the line's last point
        ax.annotate(f" {label}", (x, y), xytext=(x, y_text), textcoords="data", color=colour,
                    fontsize=8, va="center", ha="left", annotation_clip=False)
    ax.margins(x=0.08)
