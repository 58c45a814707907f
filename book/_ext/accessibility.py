"""Sphinx extension: the web book to WCAG 2.1 AA (issue 53; ``book/accessibility.md``).

1. **Text alternatives of figures (1.1.1).** A figure drawn by :mod:`ibp_lab.teaching.plotting`
   says what it shows in its output's metadata (``"alt"``, where nbconvert reads it too;
   ``ibp_lab/teaching/plotting/_alt.py``). myst-nb takes only the width and height from an image's
   output metadata, so its image renderer is wrapped here to give the ``<img>`` that text.
   An ``alt`` a cell sets itself (``mystnb: image: alt:``) still wins.
2. **Names that match the visible labels (2.5.3).** myst-nb names the summary of a hidden
   cell "Toggle hidden content" while it shows "Show code cell source": the summary is
   written here without that name, so its name is the text it shows. The theme's search
   and colour-mode buttons come from the templates in ``a11y_templates/``.
3. **Contrast, focus, reflow (1.4.3, 1.4.10, 2.4.7).** ``book/_static/ibp-a11y.css``; a
   display formula too wide for the column scrolls inside itself and is then a tab stop
   (``book/_static/ibp-a11y.js``, as the theme does for code and tables).

Formulas leave the tab order through ``mathjax3_config`` in ``_config.yml``
(``enableMenu: false``: MathJax's menu made every formula a tab stop); the hidden MathML
that screen readers read stays.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATIC = HERE.parent / "_static"
TEMPLATES = HERE / "a11y_templates"
#: The output metadata key that holds a figure's text alternative (ibp_lab.teaching.plotting._alt.ALT_KEY).
ALT_KEY = "alt"


def figure_alt(output_metadata: dict, mime_type: str) -> str | None:
    """The text alternative an output carries for its image, if any.

    Looked up as nbconvert does: under the image's MIME type first, then at the top.

    Examples
    --------
    >>> figure_alt({"alt": "two chains"}, "image/png")
    'two chains'
    >>> figure_alt({"image/png": {"alt": "K+ by sweep"}, "alt": "other"}, "image/png")
    'K+ by sweep'
    >>> figure_alt({"image/png": {"width": 300}}, "image/png") is None
    True
    """
    for source in (output_metadata.get(mime_type), output_metadata):
        if isinstance(source, dict) and isinstance(source.get(ALT_KEY), str) and source[ALT_KEY].strip():
            return source[ALT_KEY].strip()
    return None


def _wrap_image_renderer() -> None:
    """myst-nb's image renderer, giving the ``<img>`` the output's own text alternative."""
    from myst_nb.core.render import NbElementRenderer

    original = NbElementRenderer.render_image
    if getattr(original, "_ibp_alt", False):
        return

    def render_image(self, data):
        nodes = original(self, data)
        alt = figure_alt(data.output_metadata or {}, data.mime_type)
        for node in nodes:
            if alt and not node.get("alt"):
                node["alt"] = alt
        return nodes

    render_image._ibp_alt = True
    NbElementRenderer.render_image = render_image


def visit_hidden_cell(self, node):
    """A hidden cell's summary, named by what it shows (no aria-label of its own)."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def depart_hidden_cell(self, node):
    self.body.append("</details>\n")


def _use_book_files(app, config) -> None:
    # our templates before the themes' components (both themes append theirs later)
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    _wrap_image_renderer()
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    app.connect("config-inited", _use_book_files)
    app.add_css_file("ibp-a11y.css", priority=900)  # after the themes' own sheets
    app.add_js_file("ibp-a11y.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
