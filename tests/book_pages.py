"""The book's pages as ``_toc.yml`` lists them: one reader for the tests that walk them."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_pages() -> list[str]:
    """Every page of ``_toc.yml``, root first, without the ``.md`` suffix."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [entry["file"] for entry in part.get("chapters", [])]
    return pages
