"""Explorers: drag a parameter and watch a figure respond, live or in the static book.

An explorer is a pure figure function ``render(**params) -> Figure`` and a grid
of parameter values. In the book, ``render`` draws a result that
:mod:`ibp_lab.teaching.explorers` computed for the setting, for example
``lambda alpha, beta: buffet_explorer_figure(explorers.buffet(alpha=alpha, beta=beta))``.
It can be shown two ways:

- :func:`live_explorer`: ipywidgets sliders that call ``render`` in the running
  kernel (JupyterLab, Binder);
- :func:`static_explorer`: every grid point rendered once, at build time, into a
  self-contained HTML block (inline JavaScript and PNG frames, nothing loaded
  from a network), so that a reader of the web page can drag the sliders with no
  kernel;
- :func:`explorer`: one cell for both. In a kernel (JupyterLab, Binder) it shows
  the live sliders, on a finer grid; in the book build (``IBP_LAB_BOOK_BUILD=1``)
  the precomputed slider. Its output also carries the first frame as a PNG, the
  picture of a captioned figure.

Both call the same ``render`` with the same arguments, so a static frame is
exactly what the live explorer shows at that setting once it has settled. A
setting the live explorer has not drawn ahead may first show a quick stand-in, if
``render`` offers one (:data:`ibp_lab.teaching.explorers.QUICK_FRAMES`: the
chapter 5 chain, warm-started), named as such in the status line and replaced by
the exact frame as soon as that is drawn.
"""

from __future__ import annotations

import base64
import cmath
import hashlib
import html
import io
import itertools
import json
import numbers
from collections.abc import Callable, Mapping, Sequence

from ibp_lab._checks import check_count

__all__ = ["StaticExplorer", "static_explorer", "live_explorer", "explorer", "Explorer",
           "refine_grid", "figure_png", "MAX_FRAMES"]

#: Most grid points an explorer renders: each static frame is a PNG embedded in the page.
MAX_FRAMES = 400
#: Highest resolution of a frame (dots per inch).
MAX_DPI = 600


def figure_png(fig, *, dpi: int = 72) -> bytes:
    """Render a matplotlib figure to PNG bytes and close it.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> figure_png(plt.figure(figsize=(1, 1)))[:4]
    b'\\x89PNG'
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    try:  # closed whatever happens: a refused dpi or a failed save must not leak it
        dpi = check_count("dpi", dpi, minimum=1, maximum=MAX_DPI)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _render_png(render: Callable, params: dict, dpi: int) -> bytes:
    """``render(**params)`` as PNG bytes (see :func:`_render_frame`)."""
    return _render_frame(render, params, dpi)[0]


def _setting(params: Mapping) -> str:
    """The sliders' values in words: ``alpha = 2, beta = 1``."""
    return ", ".join(f"{name} = {value}" for name, value in params.items())


def _render_frame(render: Callable, params: dict, dpi: int, title: str = "Explorer") -> tuple[bytes, str]:
    """``render(**params)`` as PNG bytes and its text alternative, refusing a non-Figure.

    The text names the setting, then says what the figure shows
    (:func:`ibp_lab.teaching.plotting._alt.alt_text`), so that a reader who cannot see the frame
    hears it change with the sliders.

    The check is made here rather than left to :func:`figure_png`, whose message names
    its own argument ``fig``: the caller of an explorer passed ``render``, and should
    be told that ``render`` (at these parameters) returned the wrong thing.
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    before = set(plt.get_fignums())
    try:
        fig = render(**params)
        if not isinstance(fig, Figure):
            raise TypeError(
                f"render must return a matplotlib Figure, got {type(fig).__name__} "
                f"for the parameters {params!r:.200}"
            )
    except BaseException:
        # what render opened before it failed (or beside what it returned) is closed
        for number in set(plt.get_fignums()) - before:
            plt.close(number)
        raise
    from ibp_lab.teaching.plotting._alt import alt_text

    alt = f"{title} at {_setting(params)}. {alt_text(fig)}"
    return figure_png(fig, dpi=dpi), alt


def _script_json(value) -> str:
    """``value`` as JSON that is safe inside an HTML ``<script>`` element.

    ``json.dumps`` leaves ``</script>`` (which ends the element whatever the JSON
    around it), ``<!--`` and ``&`` intact, and U+2028/U+2029 break older JavaScript
    parsers; each is written as a ``\\uXXXX`` escape, which JSON decodes to the same
    string.
    """
    text = json.dumps(value, ensure_ascii=False)
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def _not_finite(value) -> bool:
    """A NaN or infinity of any numeric type (NumPy's float32 is not a Python float)."""
    if isinstance(value, numbers.Integral) or not isinstance(value, numbers.Complex):
        return False
    return not cmath.isfinite(complex(value))


def _check_grid(grid, what: str = "grid") -> dict[str, list]:
    if not isinstance(grid, Mapping) or not grid:
        raise TypeError(f"{what} must be a non-empty dict mapping parameter names to lists of values")
    checked = {}
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{what} keys must be parameter names, got {name!r}")
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise ValueError(f"{what}[{name!r}] must be a non-empty list of values, got {values!r}")
        if any(_not_finite(v) for v in values):
            raise ValueError(f"{what}[{name!r}] must hold finite numbers, got {list(values)!r}")
        checked[name] = list(values)
    n_frames = 1
    for values in checked.values():
        n_frames *= len(values)
    if n_frames > MAX_FRAMES:
        raise ValueError(
            f"grid has {n_frames} points, more than MAX_FRAMES = {MAX_FRAMES}; each is a "
            "rendered figure embedded in the page, so use fewer values"
        )
    return checked


def _start_indices(grid: dict[str, list], initial) -> tuple[int, ...]:
    """Grid indices of ``initial`` (a dict of values on the grid), or the middle of each list."""
    if initial is None:
        return tuple(len(v) // 2 for v in grid.values())
    if not isinstance(initial, Mapping) or set(initial) != set(grid):
        raise ValueError(
            f"initial must be a dict with one value for each of {list(grid)}, got {initial!r}"
        )
    start = []
    for name, values in grid.items():
        if initial[name] not in values:
            raise ValueError(f"initial[{name!r}] = {initial[name]!r} is not on the grid {values}")
        start.append(values.index(initial[name]))
    return tuple(start)


class StaticExplorer:
    """Precomputed frames of an explorer, displayed as a self-contained HTML slider.

    Attributes
    ----------
    grid : dict
        Parameter name -> list of values.
    frames : dict
        Tuple of grid indices (one per parameter, in ``grid`` order) -> PNG bytes.
    initial : tuple
        Grid indices shown first.
    alts : dict
        Tuple of grid indices -> the frame's text alternative (its setting and what it
        shows); the title where none was given.
    """

    def __init__(self, frames: dict, grid: dict, initial: tuple, title: str, alts: dict | None = None):
        self.frames, self.grid, self.initial, self.title = frames, grid, initial, title
        self.alts = {key: (alts or {}).get(key, title) for key in frames}

    def frame_at(self, **params) -> bytes:
        """PNG of the frame at the given parameter values (each must be on the grid)."""
        unknown = sorted(set(params) - set(self.grid))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; the explorer varies {list(self.grid)}")
        index = []
        for name, values in self.grid.items():
            if name not in params:
                raise ValueError(f"missing parameter {name!r}; the explorer varies {list(self.grid)}")
            if params[name] not in values:
                raise ValueError(f"{name}={params[name]!r} is not on the grid {values}")
            index.append(values.index(params[name]))
        return self.frames[tuple(index)]

    def _repr_html_(self) -> str:
        digest = hashlib.sha256(repr((self.title, self.grid)).encode()).hexdigest()[:10]
        root_id = f"ibp-explorer-{digest}"
        frames = {"_".join(map(str, k)): base64.b64encode(v).decode() for k, v in self.frames.items()}
        alts = {"_".join(map(str, k)): v for k, v in self.alts.items()}
        # Every string below that comes from the caller (title, names, values) is escaped
        # for where it lands: html.escape(quote=True) in text and attributes,
        # _script_json inside the script.
        controls = []
        for (name, values), start in zip(self.grid.items(), self.initial):
            controls.append(
                f'<label style="margin-right:1.5em">{html.escape(name)} '
                f'<input type="range" min="0" max="{len(values) - 1}" step="1" value="{start}" '
                f'data-param="{html.escape(name)}" aria-label="{html.escape(name)}" '
                f'aria-valuetext="{html.escape(name)} = {html.escape(str(values[start]))}" '
                'data-lm-suppress-shortcuts="true"> '
                f'<output data-param="{html.escape(name)}">{html.escape(str(values[start]))}</output>'
                "</label>"
            )
        first = "_".join(map(str, self.initial))
        labels = _script_json({name: [str(v) for v in values] for name, values in self.grid.items()})
        return f"""<div class="ibp-explorer" id="{root_id}" data-key="{first}">
<div class="ibp-explorer-title"><strong>{html.escape(self.title)}</strong>
 <em>(precomputed: drag a slider or use its arrow keys)</em></div>
<div class="ibp-explorer-controls">{"".join(controls)}</div>
<img class="ibp-explorer-frame" style="max-width:100%" alt="{html.escape(alts[first])}"
 src="data:image/png;base64,{frames[first]}">
<script>
(function () {{
  var root = document.getElementById("{root_id}");
  var frames = {_script_json(frames)};
  var alts = {_script_json(alts)};
  var labels = {labels};
  var inputs = root.querySelectorAll("input[type=range]");
  var img = root.querySelector("img.ibp-explorer-frame");
  function update() {{
    var key = Array.prototype.map.call(inputs, function (el) {{ return el.value; }}).join("_");
    Array.prototype.forEach.call(inputs, function (el) {{
      var shown = labels[el.dataset.param][+el.value];
      root.querySelector('output[data-param="' + el.dataset.param + '"]').textContent = shown;
      el.setAttribute("aria-valuetext", el.dataset.param + " = " + shown);
    }});
    img.src = "data:image/png;base64," + frames[key];
    img.alt = alts[key];
    root.dataset.key = key;
  }}
  Array.prototype.forEach.call(inputs, function (el) {{
    el.addEventListener("input", update);
    // a notebook page (JupyterLab) binds the arrow keys to cell navigation: keep them
    // for the slider when it has the focus
    el.addEventListener("keydown", function (event) {{
      if (/^(Arrow|Page|Home|End)/.test(event.key)) {{ event.stopPropagation(); }}
    }});
  }});
}})();
</script>
</div>"""


def static_explorer(
    render: Callable, grid: Mapping[str, Sequence], *, title: str = "Explorer", initial=None, dpi: int = 72
) -> StaticExplorer:
    """Render ``render(**params)`` at every grid point into a static HTML explorer.

    Parameters
    ----------
    render : callable
        Pure function of the parameters returning a matplotlib figure.
    grid : dict
        Parameter name -> list of values (the slider positions); at most
        :data:`MAX_FRAMES` points in all.
    title : str, optional
        Shown above the sliders; each frame's alt text is the title, the setting and
        what the frame shows.
    initial : dict, optional
        Parameter values shown first; by default the middle of each list.
    dpi : int, optional
        Resolution of the frames (they are embedded in the page), 1 to 600.

    Returns
    -------
    StaticExplorer
        Displays as HTML in a notebook or in the built book.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> def render(a):
    ...     fig, ax = plt.subplots(figsize=(1, 1)); ax.set_title(str(a)); return fig
    >>> explorer = static_explorer(render, {"a": [1, 2]})
    >>> len(explorer.frames), 'type="range"' in explorer._repr_html_()
    (2, True)
    """
    if not callable(render):
        raise TypeError(f"render must be a function returning a figure, got {type(render).__name__}")
    grid = _check_grid(grid)
    names = list(grid)
    start = _start_indices(grid, initial)
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    dpi = check_count("dpi", dpi, minimum=1, maximum=MAX_DPI)
    frames, alts = {}, {}
    for index in itertools.product(*(range(len(v)) for v in grid.values())):
        params = {name: grid[name][i] for name, i in zip(names, index)}
        frames[index], alts[index] = _render_frame(render, params, dpi, title)
    return StaticExplorer(frames, grid, start, title, alts)


def live_explorer(render: Callable, grid: Mapping[str, Sequence], *, initial=None, dpi: int = 72):
    """Sliders over ``grid`` that re-run ``render`` in the kernel (needs ipywidgets).

    The figure is drawn into an :class:`ipywidgets.Image` (the PNG bytes that
    :func:`static_explorer` embeds for the same setting), not displayed inside an
    ``Output`` widget. That choice is about reliability, not looks: when a notebook
    runs headless (the book build, nbclient), output captured by an ``Output``
    widget makes the client send the widget's new state to the kernel in the middle
    of the cell, and in our stress runs that occasionally lost the cell's reply
    until the build's time limit (``tools/stress_execution.py --probe
    output-widget``). An ``Image`` widget only sends state from the kernel.

    Parameters
    ----------
    render : callable
        Pure function of the parameters returning a matplotlib figure.
    grid : dict
        Parameter name -> list of values the sliders step through; it may be
        finer than the static explorer's grid.
    initial : dict, optional
        Starting values; by default the middle of each list.
    dpi : int, default 72
        Resolution of the drawn figure, as for :func:`figure_png`.

    Returns
    -------
    ipywidgets.VBox
        The sliders above the figure; display it in JupyterLab or Binder.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> def render(a):
    ...     fig, ax = plt.subplots(figsize=(2, 2)); ax.plot([0, a]); return fig
    >>> box = live_explorer(render, {"a": [1, 2, 3]})
    >>> [type(w).__name__ for w in box.children]
    ['HBox', 'Image']
    >>> box.children[1].value == figure_png(render(2))
    True
    """
    import ipywidgets as widgets

    if not callable(render):
        raise TypeError(f"render must be a function returning a figure, got {type(render).__name__}")
    grid = _check_grid(grid)
    start = _start_indices(grid, initial)
    dpi = check_count("dpi", dpi, minimum=1, maximum=MAX_DPI)
    sliders = {}
    for (name, values), index in zip(grid.items(), start):
        sliders[name] = widgets.SelectionSlider(
            options=values, value=values[index], description=name, continuous_update=False
        )

    def current_png() -> bytes:
        return _render_png(render, {name: s.value for name, s in sliders.items()}, dpi)

    image = widgets.Image(value=current_png(), format="png")

    def redraw(change) -> None:
        image.value = current_png()

    for slider in sliders.values():
        slider.observe(redraw, names="value")
    return widgets.VBox([widgets.HBox(list(sliders.values())), image])


def _midpoint(low, high):
    """A value between two numeric grid neighbours, to three significant digits."""
    if isinstance(low, int) and isinstance(high, int):
        middle = (low + high) // 2
        return middle if low < middle < high else None
    return float(f"{(low + high) / 2:.3g}")


def refine_grid(grid: Mapping[str, Sequence]) -> dict[str, list]:
    """The grid with a midpoint between each pair of neighbouring numeric values.

    A list that is not numeric and increasing is kept as it is. The live sliders
    step through the refined grid, the precomputed ones through ``grid``.

    Examples
    --------
    >>> refine_grid({"alpha": [0.5, 1.0, 2.0], "n": [10, 20], "kind": ["a", "b"]})
    {'alpha': [0.5, 0.75, 1.0, 1.5, 2.0], 'n': [10, 15, 20], 'kind': ['a', 'b']}
    """
    refined = {}
    for name, values in _check_grid(grid).items():
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if not numeric or any(b <= a for a, b in zip(values, values[1:])):
            refined[name] = list(values)
            continue
        finer = [values[0]]
        for low, high in zip(values, values[1:]):
            middle = _midpoint(low, high)
            if middle is not None and low < middle < high:
                finer.append(middle)
            finer.append(high)
        refined[name] = finer
    return refined


#: Shown in a kernel's text/html when the live widget cannot be displayed.
_LIVE_NOTE = ("<p><em>Live explorer: run this cell in JupyterLab (with ipywidgets) to get "
              "its sliders.</em></p>")
_BUSY_STYLE = ("<style>.ibp-live-busy img{opacity:0.35;transition:opacity .1s}</style>")


class Explorer:
    """One explorer cell: live sliders in a kernel, precomputed frames in the book.

    Built by :func:`explorer`; displaying it (the cell's value) picks the form.

    Attributes
    ----------
    grid, live_grid : dict
        Parameter values of the static frames and of the live sliders.
    initial : dict
        The setting shown first (on both grids).
    last_seconds : float or None
        Wall time in the kernel from the live explorer's last move to its new figure
        leaving the kernel (a quick stand-in, if one came first; ``None`` before a move);
        the page shows it a little later.
    """

    def __init__(self, render, grid, live_grid, initial, title, dpi, prefetch):
        self.render, self.grid, self.live_grid = render, grid, live_grid
        self.initial, self.title, self.dpi, self.prefetch = initial, title, dpi, prefetch
        self.last_seconds = None
        self._quick_seen = False  # has render ever answered with a quick stand-in?
        self._first_png = None
        self._live = None

    def first_png(self) -> bytes:
        """The frame at the initial setting (rendered once)."""
        if self._first_png is None:
            self._first_png = _render_png(self.render, self.initial, self.dpi)
        return self._first_png

    def live(self):
        """The ipywidgets box (sliders, status line, figure), built on first use."""
        if self._live is None:
            self._live = self._build_live()
        return self._live

    def _key(self, params: dict) -> tuple:
        return tuple(params[name] for name in self.live_grid)

    def _frame(self, params: dict):
        """A future of the exact PNG at ``params``: one already asked for, or a new job
        of the worker (which waits for the reader's move in hand to be drawn first)."""
        key = self._key(params)
        future = self._frames.get(key)
        if future is None:
            future = self._worker.submit(self._draw_behind, dict(params))
            self._frames[key] = future
        return future

    def _draw_behind(self, params: dict) -> bytes:
        # a frame drawn ahead starts only when no move of the reader is being drawn: the
        # two would share the cores and the interpreter, and the reader's comes first
        self._reader_idle.wait()
        return _render_png(self.render, params, self.dpi)

    def _draw_quick(self, params: dict) -> tuple[bytes, list]:
        """The reader's frame, drawn with leave to be approximate
        (:data:`ibp_lab.teaching.explorers.QUICK_FRAMES`): its PNG and the notes saying
        how it was approximated (none: it is the exact frame)."""
        from ibp_lab.teaching.explorers import QUICK_FRAMES

        token = QUICK_FRAMES.set([])
        try:
            png = _render_png(self.render, params, self.dpi)
            return png, list(QUICK_FRAMES.get())
        finally:
            QUICK_FRAMES.reset(token)

    def _prefetch_neighbours(self, params: dict) -> None:
        """Draw the settings one slider step away while the reader looks at this one.

        The kernel is idle between moves; spending that time on the likely next
        settings is what makes a one-step move answer at once even where a setting
        costs seconds (the linear-Gaussian chains). One worker thread does it, so
        at most one frame is drawn behind the reader's back at any time, beside the
        reader's own move (the compiled samplers release the GIL, so on two cores both
        run at once).
        """
        for name, values in self.live_grid.items():
            index = values.index(params[name])
            for step in (1, -1):
                if 0 <= index + step < len(values):
                    self._frame({**params, name: values[index + step]})

    def _forget_queued(self) -> None:
        """Drop prefetches not yet started, so the reader's own move goes first."""
        for key, future in list(self._frames.items()):
            if future.cancel():
                del self._frames[key]

    def _build_live(self):
        import threading
        import time
        from concurrent.futures import Future, ThreadPoolExecutor

        import ipywidgets as widgets

        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ibp-explorer")
        self._mover = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ibp-explorer-move")
        self._frames = {}
        self._reader_idle = threading.Event()
        self._reader_idle.set()
        sliders = {
            name: widgets.SelectionSlider(
                options=values, value=self.initial[name], description=name,
                continuous_update=False)
            for name, values in self.live_grid.items()
        }
        image = widgets.Image(value=self.first_png(), format="png")
        status = widgets.HTML(value=_BUSY_STYLE + "<span>ready</span>")
        box = widgets.VBox([widgets.HBox(list(sliders.values())), status, image])
        box.add_class("ibp-live-explorer")

        def current_key() -> tuple:
            return self._key({name: s.value for name, s in sliders.items()})

        def show_status(text: str) -> None:
            status.value = _BUSY_STYLE + f"<span>{html.escape(text)}</span>"

        def show_exact(params: dict, setting: str, start: float, future) -> None:
            """Put the exact frame in place of a quick one, if the reader is still there."""
            if future.cancelled() or future.exception() is not None:
                return
            if current_key() == self._key(params):
                image.value = future.result()
                show_status(f"{setting}: exact frame drawn in the kernel "
                            f"{time.perf_counter() - start:.2f} s after the move")

        def redraw(change) -> None:
            params = {name: s.value for name, s in sliders.items()}
            setting = ", ".join(f"{k} = {v}" for k, v in params.items())
            start = time.perf_counter()
            self._forget_queued()
            future = self._frames.get(self._key(params))
            notes = []
            try:
                if future is not None and future.done() and future.exception() is None:
                    image.value = future.result()  # drawn ahead
                elif future is not None and not future.done() and not self._quick_seen:
                    # being drawn ahead, and no quick stand-in exists: drawing it a second
                    # time beside the first would only slow both
                    box.add_class("ibp-live-busy")
                    show_status(f"\u231b computing {setting}\u2026")
                    image.value = future.result()
                else:
                    # the busy state is sent before drawing, so it shows at once
                    box.add_class("ibp-live-busy")
                    show_status(f"\u231b computing {setting}\u2026")
                    self._reader_idle.clear()  # frames drawn ahead wait for this one
                    png, notes = self._mover.submit(self._draw_quick, params).result()
                    image.value = png
                    self._quick_seen = self._quick_seen or bool(notes)
                    if not notes and (future is None or future.done()):
                        future = Future()
                        future.set_result(png)
                        self._frames[self._key(params)] = future
            finally:
                box.remove_class("ibp-live-busy")
                self._reader_idle.set()
            self.last_seconds = time.perf_counter() - start
            # the kernel knows when the figure left it, not when the page showed it
            drawn = f"drawn in the kernel in {self.last_seconds:.2f} s (the page adds its transfer)"
            if notes:
                show_status(f"{setting}: {'; '.join(notes)}, {drawn}; the exact frame follows")
                exact = self._frame(params)
                exact.add_done_callback(lambda done: show_exact(params, setting, start, done))
            else:
                show_status(f"{setting}: {drawn}")
            if self.prefetch:
                self._prefetch_neighbours(params)

        for slider in sliders.values():
            slider.observe(redraw, names="value")
        if self.prefetch:
            self._prefetch_neighbours(self.initial)
        return box

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from ibp_lab.teaching.lab import in_book_build

        bundle = {"text/plain": f"<{self.title}>"}
        if in_book_build():
            frames = static_explorer(self.render, self.grid, title=self.title,
                                     initial=self.initial, dpi=self.dpi)
            self._first_png = frames.frame_at(**self.initial)
            bundle["text/html"] = frames._repr_html_()
        else:
            box = self.live()
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "model_id": box.model_id, "version_major": 2, "version_minor": 0}
            bundle["text/html"] = _LIVE_NOTE
        bundle["image/png"] = base64.b64encode(self.first_png()).decode()
        return bundle


def explorer(
    render: Callable, grid: Mapping[str, Sequence], *, initial: Mapping, title: str = "Explorer",
    live_grid: Mapping[str, Sequence] | None = None, dpi: int = 72, prefetch: bool = True,
) -> Explorer:
    """One explorer for a place in a chapter: live in a kernel, precomputed in the book.

    Displayed as a cell's value, it offers three forms of the same figure:

    - in a kernel, the live sliders on ``live_grid`` (by default
      :func:`refine_grid` of ``grid``: a midpoint between neighbours), each move
      redrawn by ``render`` with a visible busy state and the time it took (the
      neighbouring settings are drawn ahead, see ``prefetch``). A move to a setting
      not drawn ahead is drawn with leave to be approximate
      (:data:`ibp_lab.teaching.explorers.QUICK_FRAMES`): if ``render`` takes it, the
      status line says how the frame was approximated, and the exact frame replaces it
      when drawn (a frame drawn ahead starts only once the reader's move is drawn);
    - during the book build (``IBP_LAB_BOOK_BUILD=1``), the precomputed slider of
      :func:`static_explorer` on ``grid`` (the web page shows it);
    - always, the frame at ``initial`` as a PNG (the picture of a captioned figure).

    Nothing is rendered before the explorer is displayed.

    Parameters
    ----------
    render : callable
        Pure function of the parameters returning a matplotlib figure.
    grid : dict
        Parameter name -> values of the precomputed frames.
    initial : dict
        The setting shown first; it must lie on ``grid`` (and so on the refined grid).
    title : str, optional
        Title of the precomputed slider and alt text of its frames.
    live_grid : dict, optional
        Values of the live sliders; they must include ``initial``.
    dpi : int, default 72
        Resolution of every frame.
    prefetch : bool, default True
        After each move, draw the settings one step away in a worker thread while
        the kernel is idle, so that the next one-step move is answered at once.

    Returns
    -------
    Explorer

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> def render(a):
    ...     fig = Figure(figsize=(1, 1)); fig.add_subplot().set_title(str(a)); return fig
    >>> shown = explorer(render, {"a": [1.0, 2.0, 3.0]}, initial={"a": 2.0})
    >>> shown.live_grid
    {'a': [1.0, 1.5, 2.0, 2.5, 3.0]}
    >>> sorted(shown._repr_mimebundle_())  # in a kernel (not the book build)
    ['application/vnd.jupyter.widget-view+json', 'image/png', 'text/html', 'text/plain']
    """
    if not callable(render):
        raise TypeError(f"render must be a function returning a figure, got {type(render).__name__}")
    grid = _check_grid(grid)
    live = refine_grid(grid) if live_grid is None else _check_grid(live_grid, "live_grid")
    if set(live) != set(grid):
        raise ValueError(f"live_grid must vary the same parameters as grid {list(grid)}, got {list(live)}")
    start = _start_indices(grid, initial)
    try:
        _start_indices(live, initial)  # initial must be on the live grid too
    except ValueError as error:
        raise ValueError(f"live_grid must include initial: {error}") from None
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    dpi = check_count("dpi", dpi, minimum=1, maximum=MAX_DPI)
    from ibp_lab._checks import check_flag

    prefetch = check_flag("prefetch", prefetch)
    first = {name: grid[name][i] for name, i in zip(grid, start)}
    return Explorer(render, grid, {name: live[name] for name in grid}, first, title, dpi, prefetch)
