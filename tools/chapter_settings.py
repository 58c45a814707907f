"""What the build's tools share about the chapters: paths, the table of contents, limits.

``tools/build_book.py`` (the build and its checks) and ``tools/execute_chapters.py`` (the
chapters executed before the build) both read these; neither imports the other's
internals. The kernel watch and the per-cell records live with the Sphinx extension that
also uses them, ``book/_ext/execution_status.py``; :func:`execution_status` imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
EXTENSIONS = ROOT / "book" / "_ext"


def chapters_in_toc() -> list[str]:
    """Every page of ``_toc.yml``, root first, as docnames (``book/01_buffet``)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [entry["file"] for entry in part.get("chapters", [])]
    return names


def front_matter(docname: str) -> dict:
    """The page's YAML front matter (empty for a page without one).

    >>> front_matter("book/status")["mystnb"]["execution_timeout"] > 0
    True
    """
    import yaml

    text = (ROOT / f"{docname}.md").read_text()
    if not text.startswith("---"):
        return {}
    return yaml.safe_load(text.split("---", 2)[1]) or {}


def cell_limit(docname: str) -> int:
    """The chapter's per-cell limit in seconds: its own, or the book's default.

    >>> cell_limit("book/intro")  # no front-matter limit: _config.yml's execute.timeout
    120
    """
    import yaml

    own = (front_matter(docname).get("mystnb") or {}).get("execution_timeout")
    if own is not None:
        return int(own)
    return int(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])


def execution_status():
    """``book/_ext/execution_status.py``, imported (the Sphinx build loads it the same way)."""
    if str(EXTENSIONS) not in sys.path:
        sys.path.insert(0, str(EXTENSIONS))
    import execution_status as module

    return module
