"""Sphinx extension: a book that works offline and loads without console errors.

MathJax 3 comes from a registry package (``django-static-mathjax``, installed by
requirements.txt); after the HTML build, the parts the pages use (the TeX/CHTML
component, its fonts and the lazily loaded extensions) are copied into
``_static/mathjax``. ``mathjax_path`` in ``_config.yml`` points there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

_PARTS = ["tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "ui", "a11y"]


def _mathjax_source() -> Path:
    import mathjax  # the django-static-mathjax distribution

    root = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (root / "tex-chtml.js").is_file():
        raise RuntimeError(f"MathJax not found under {root}: pip install django-static-mathjax")
    return root


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    source = _mathjax_source()
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in _PARTS:
        src, dst = source / part, target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def _tidy_page(app, pagename, templatename, context, doctree):
    # pydata-sphinx-theme logs a console error on a first visit when no mode is set
    context["default_mode"] = "light"
    # sphinx-thebe's inline configuration is registered twice by the Jupyter Book
    # stack; the second copy re-declares a constant and the browser reports an error
    seen, unique = set(), []
    for script in context.get("script_files", []):
        attributes = sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())
        key = (getattr(script, "filename", None) or "", tuple(attributes))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    _mathjax_source()  # fail early, before a long build, if the package is missing
    app.connect("html-page-context", _tidy_page, priority=900)
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
