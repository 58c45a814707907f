"""Text alternatives for the book's figures, written where the figures are drawn.

A reader who cannot see a figure gets, in its place, a sentence that says what it
shows. The sentence is made here, from the figure itself, when the figure is
displayed: its panels' titles, what each panel draws (lines and their legend names,
points, bars, images and their size), its axes with their ranges and scales, and a
summary that the figure function wrote (:func:`with_alt`). A chapter that later
changes a title or adds a line changes the text too.

How it reaches the page: :func:`with_alt` gives the figure a ``_repr_mimebundle_``
that IPython calls when it displays the figure (as a cell's value or through the
inline backend); it adds nothing to the data (the PNG still comes from matplotlib)
and puts the text in the output's metadata under ``"alt"``, where nbconvert's HTML
templates read an image's alt text. The book's Sphinx extension
(``book/_ext/accessibility.py``) gives it to the ``<img>``. The explorers
(:mod:`ibp_lab.teaching.widgets`) write one text per frame, with the sliders' values.
"""

from __future__ import annotations

import re

import numpy as np

#: The output metadata key of a figure's text alternative (nbconvert reads the same key).
ALT_KEY = "alt"
#: Most panels described one by one; the rest are counted.
MAX_DESCRIBED_PANELS = 6
#: Most legend names listed for one panel.
MAX_NAMES = 6
#: The gid :func:`mark_box_plot` gives a box plot's artists, so that its whiskers, caps
#: and medians are read as boxes, not as lines.
BOX_GID = "ibp-box-plot"


def _root_figure(target):
    """The top-level Figure of a Figure, SubFigure or Axes."""
    figure = target if not hasattr(target, "get_figure") or hasattr(target, "savefig") else target.get_figure()
    while getattr(figure, "figure", figure) is not figure:  # a SubFigure's parent chain
        figure = figure.figure
    return figure


class _AltBundle:
    """The figure's ``_repr_mimebundle_``: no data of its own, the alt text as metadata.

    IPython asks every display formatter in turn; an empty data dict leaves the PNG
    to matplotlib's own formatter, and the metadata is kept beside it.
    """

    def __init__(self, figure):
        self.figure = figure

    def __call__(self, include=None, exclude=None):
        return {}, {ALT_KEY: alt_text(self.figure)}


def with_alt(target, summary: str | None = None):
    """Give ``target``'s figure a text alternative and return ``target`` unchanged.

    Parameters
    ----------
    target : matplotlib Figure or Axes
        What a figure function made or drew on.
    summary : str, optional
        What the figure (for a Figure) or the panel (for an Axes) shows, in words;
        it leads the text, before what is read off the figure itself.

    Returns
    -------
    The same ``target``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> ax = fig.subplots()
    >>> _ = ax.plot([1, 2, 3], [2, 4, 3], label="chain 1")
    >>> _ = ax.set(xlabel="sweep", ylabel="K+")
    >>> with_alt(fig, "K+ of one chain") is fig
    True
    >>> fig._repr_mimebundle_()[1]["alt"]
    'K+ of one chain. A line plot: chain 1; x axis sweep, 1 to 3; y axis K+, 2 to 4.'
    """
    if summary is not None and not isinstance(summary, str):
        raise TypeError(f"summary must be a string or None, got {type(summary).__name__}")
    figure = _root_figure(target)
    if summary:
        target._ibp_alt_summary = summary.strip()
    figure._repr_mimebundle_ = _AltBundle(figure)
    return target


def mark_box_plot(ax, parts: dict) -> dict:
    """Mark what ``ax.boxplot`` drew as boxes, for the text alternative; return ``parts``.

    Matplotlib draws a box plot as lines (whiskers, caps, medians) and a box each; read
    as they are, five boxes would be "a line plot of 30 lines".

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> parts = mark_box_plot(ax, ax.boxplot([[1, 2, 3], [2, 3, 5]], positions=[0, 1]))
    >>> _ = ax.set_xticks([0, 1], ["low", "high"]); _ = ax.set(xlabel="setting", ylabel="K+")
    >>> describe_axes(ax)
    '2 box plots; x axis setting, at low, high; y axis K+, 1 to 5.'
    """
    for artists in parts.values():
        for artist in artists:
            artist.set_gid(BOX_GID)
    ax._ibp_boxes = getattr(ax, "_ibp_boxes", 0) + len(parts["medians"])
    return parts


def _plain(text: str) -> str:
    """A label without TeX markup: ``$K_+$`` -> ``K+``, ``$\\alpha$`` -> ``alpha``."""
    text = text.replace("$", "").replace("\\mathrm", "").replace("\\,", " ")
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)
    text = text.replace("_+", "+").replace("{", "").replace("}", "").replace("\n", " ")
    return re.sub(r"\s+", " ", text).strip()


def _number(value: float) -> str:
    if not np.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}"


def _names(labels: list[str]) -> str:
    shown = labels[:MAX_NAMES]
    more = len(labels) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _marks(ax) -> list[str]:
    """What a panel draws, in words (lines, points, bars, images, bands)."""
    marks = []
    # reference lines (axhline, axvline: drawn in axes coordinates) are not data
    lines = [line for line in ax.get_lines() if line.get_visible() and line.get_gid() != BOX_GID
             and line.get_transform().contains_branch(ax.transData)
             and (len(line.get_xdata()) > 1 or line.get_marker() not in (None, "", "None", " "))]
    named = [_plain(line.get_label()) for line in lines if not line.get_label().startswith("_")]
    joined = [line for line in lines if line.get_linestyle() not in ("None", "", " ")]
    kind = "line plot" if len(joined) >= len(lines) / 2 else "dot plot"
    if lines:
        unnamed = len(lines) - len(named)
        text = f"a {kind}"
        if named:
            text += ": " + _names(named)
            if unnamed:
                text += f" (and {unnamed} unlabelled line{'s' if unnamed > 1 else ''})"
        elif len(lines) > 1:
            text += f" of {len(lines)} lines"
        marks.append(text)
    boxes = getattr(ax, "_ibp_boxes", 0)
    if boxes:
        marks.append(f"{boxes} box plot{'s' if boxes > 1 else ''}")
    bars = [p for p in ax.patches if type(p).__name__ == "Rectangle" and p.get_visible()]
    if len(bars) > 1:
        marks.append(f"{len(bars)} bars")
    for image in ax.get_images():
        array = np.asarray(image.get_array())
        if array.ndim >= 2:
            marks.append(f"an image of {array.shape[0]} by {array.shape[1]} cells "
                         f"(colour scale {image.get_cmap().name})")
    spans = [c for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
    if spans:
        marks.append(f"{len(spans)} shaded band{'s' if len(spans) > 1 else ''}")
    points = [c for c in ax.collections if type(c).__name__ == "PathCollection"]
    if points:
        marks.append(f"{sum(len(c.get_offsets()) for c in points)} scattered points")
    return marks


def _axis(ax, which: str) -> str | None:
    label = _plain(getattr(ax, f"get_{which}label")())
    if not label:
        return None
    low, high = sorted(getattr(ax, f"get_{which}lim")())
    data = ax.dataLim
    # the data's own range where there are data (limits add margins), the limits otherwise
    if ax.has_data() and np.all(np.isfinite([data.x0, data.x1, data.y0, data.y1])):
        low, high = (data.x0, data.x1) if which == "x" else (data.y0, data.y1)
        low, high = sorted((low, high))
        axis_low, axis_high = sorted(getattr(ax, f"get_{which}lim")())
        low, high = max(low, axis_low), min(high, axis_high)
    text = f"{which} axis {label}"
    categories = _category_labels(ax, which)
    if categories and not ax.get_images():
        # positions 0, 1, 2 ... stand for the labels: the labels are what the reader sees
        text += ", at " + _names(categories)
    elif not ax.get_images() and np.isfinite(low) and np.isfinite(high):
        text += f", {_number(low)} to {_number(high)}"
    if getattr(ax, f"get_{which}scale")() == "log":
        text += " (log scale)"
    return text


def _category_labels(ax, which: str) -> list[str]:
    """The tick labels a figure set by hand (``set_xticks(positions, labels)``), if any."""
    from matplotlib.ticker import FixedLocator, LogFormatter, ScalarFormatter

    axis = getattr(ax, f"{which}axis")
    if not isinstance(axis.get_major_locator(), FixedLocator) or isinstance(
            axis.get_major_formatter(), (ScalarFormatter, LogFormatter)):
        return []
    return [_plain(t.get_text()) for t in axis.get_ticklabels() if t.get_text().strip()]


def describe_axes(ax) -> str:
    """One panel in words: its summary, title, marks and axes.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> _ = ax.bar([1, 2, 3], [3, 1, 2]); _ = ax.set(title="counts", xlabel="k")
    >>> describe_axes(ax)
    "'counts': 3 bars; x axis k, 0.6 to 3.4."
    """
    colourbar = getattr(ax, "_colorbar", None)
    if colourbar is not None:
        label = _plain(ax.get_ylabel() or ax.get_xlabel()) or "values"
        low, high = colourbar.norm.vmin, colourbar.norm.vmax
        if low is None or high is None:
            return f"A colour scale of {label}."
        return f"A colour scale of {label} from {_number(low)} to {_number(high)}."
    parts = []
    summary = getattr(ax, "_ibp_alt_summary", None)
    title = _plain(" ".join(t for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t))
    head = summary or ""
    if title:
        head = f"{head} ('{title}')" if head else f"'{title}'"
    marks = _marks(ax)
    axes = [text for text in (_axis(ax, "x"), _axis(ax, "y")) if text]
    body = "; ".join(([", ".join(marks)] if marks else []) + axes)
    if head and body:
        parts.append(f"{head}: {body}")
    else:
        parts.append(head or body or "an empty panel")
    text = parts[0]
    return text[0].upper() + text[1:] + "."


def alt_text(figure) -> str:
    """The text alternative of a figure: its summary, then each panel in words.

    Many panels of one kind (a grid of digits or features) are counted rather than
    read out one by one.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> for ax in fig.subplots(1, 8):
    ...     _ = ax.imshow(np.eye(3)); _ = ax.set_title("f")
    >>> alt_text(with_alt(fig, "eight features"))
    "eight features. 8 panels, each an image of 3 by 3 cells (colour scale viridis) titled 'f'."
    """
    figure = _root_figure(figure)
    panels = [ax for ax in figure.get_axes() if ax.get_visible() and (ax.axison or ax.get_images())]
    plots = [ax for ax in panels if getattr(ax, "_colorbar", None) is None]
    parts = []
    summary = getattr(figure, "_ibp_alt_summary", None)
    if summary:
        parts.append(summary.rstrip(".") + ".")
    if figure._suptitle is not None and figure._suptitle.get_text():
        parts.append(f"Title: {_plain(figure._suptitle.get_text())}.")
    images_only = [ax for ax in plots if ax.get_images() and not ax.get_lines() and not ax.get_xlabel()]
    if len(plots) > MAX_DESCRIBED_PANELS and len(images_only) >= len(plots) - 1:
        array = np.asarray(images_only[0].get_images()[0].get_array())
        titles = list(dict.fromkeys(_plain(ax.get_title()) for ax in images_only if ax.get_title()))
        text = (f"{len(images_only)} panels, each an image of {array.shape[0]} by {array.shape[1]} cells "
                f"(colour scale {images_only[0].get_images()[0].get_cmap().name})")
        if titles:
            text += " titled " + _names([f"'{t}'" for t in titles])
        parts.append(text + ".")
        others = [ax for ax in panels if ax not in images_only]
    else:
        if len(plots) > 1:
            parts.append(f"{len(plots)} panels.")
        others = panels
    described, panel_texts = 0, []
    for ax in others:
        if getattr(ax, "_colorbar", None) is None:
            described += 1
            if described > MAX_DESCRIBED_PANELS:
                continue
        text = describe_axes(ax)
        if panel_texts and panel_texts[-1][0] == text:  # the same panel again: counted, not repeated
            panel_texts[-1][1] += 1
        else:
            panel_texts.append([text, 1])
    parts += [text if n == 1 else f"{n} times: {text}" for text, n in panel_texts]
    if described > MAX_DESCRIBED_PANELS:
        parts.append(f"{described - MAX_DESCRIBED_PANELS} more panels of the same kind.")
    return " ".join(parts) if parts else "An empty figure."
