"""Execute one chapter headless and print what it glues: a quick check while writing.

The full build (``make book``) executes every chapter through jupyter-cache and Sphinx;
this runs a single chapter the same way the kernel sees it (from ``book/``) and lists its
glued names and plain-text values, so that an author can see which numbers a change moved.

Usage, from ``book/``::

    ../.venv/bin/python ../tools/run_one_chapter.py 05_linear_gaussian.md

Exits non-zero, with nbclient's traceback, when a cell raises.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jupytext
import nbclient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ibp_lab.teaching._numba_cache import clear_if_stale  # noqa: E402


def glued_values(notebook) -> dict[str, str]:
    """Map each glued name to its text/plain value (myst-nb stores it under ``scrapbook``)."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            if "name" in record:
                key = record.get("mime_prefix", "") + "text/plain"
                values[record["name"]] = output.get("data", {}).get(key, "<no text>")
    return values


def main(path: str) -> None:
    clear_if_stale()
    # as in the book build: solutions run and explorers precompute (ibp_lab.teaching.lab)
    os.environ["IBP_LAB_BOOK_BUILD"] = "1"
    notebook = jupytext.read(path)
    start = time.perf_counter()
    nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3").execute()
    for name, value in sorted(glued_values(notebook).items()):
        print(f"{name} = {value}")
    print(f"ran {path} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: run_one_chapter.py CHAPTER.md")
    main(sys.argv[1])
