"""A chapter opened in JupyterLab stays as it is on disk.

JupyterLab reads and writes a chapter through jupytext's contents manager. Two guards keep
a reader's clone clean (issue 27): the shipped settings turn autosave off, so opening and
running a chapter writes nothing (tests/test_lab.py waits past the interval in a browser);
and every notebook page of ``book/`` is already in the form that a save writes, so even a
reader's save of an unchanged chapter gives the same bytes, front matter included (the
``mystnb`` limits the build reads). These run without a browser, in the fast tier.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location(
        "canonical_chapters", ROOT / "tools" / "canonical_chapters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def test_every_chapter_is_a_notebook_page():
    names = {p.name for p in TOOL.notebook_pages()}
    chapters = {p.name for p in (ROOT / "book").glob("[0-9][0-9]_*.md")}
    assert chapters and chapters <= names


@pytest.mark.parametrize("page", TOOL.notebook_pages(), ids=lambda p: p.name)
def test_a_save_through_jupytext_writes_the_page_unchanged(page):
    before = page.read_bytes()
    saved = TOOL.saved_form(page)
    assert page.read_bytes() == before  # the check itself restores the file
    assert saved == before.decode(), (
        f"{page.name}: a save in JupyterLab would rewrite it; run tools/canonical_chapters.py")


def test_a_save_keeps_the_limits_the_build_reads_and_drops_session_results():
    """The filter keeps ``mystnb`` and drops jupyterlab-myst's ``user_expressions``."""
    page = ROOT / "book" / "01_buffet.md"
    manager = TOOL.contents_manager(ROOT)
    name = str(page.relative_to(ROOT))
    before = page.read_text()
    model = manager.get(name, content=True, type="notebook")
    markdown = next(c for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    markdown["metadata"]["user_expressions"] = [{"expression": "x", "result": {"data": {}}}]
    # what the kernel's connection adds to the notebook's metadata
    model["content"]["metadata"]["language_info"] = {"name": "python", "version": "3.11"}
    try:
        manager.save(model, name)
        after = page.read_text()
    finally:
        page.write_text(before)
    assert after == before
    assert "execution_timeout" in after.split("---", 2)[1]


def test_the_shipped_lab_settings_turn_autosave_off():
    overrides = json.loads((ROOT / "binder" / "jupyterlab-overrides.json").read_text())
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["autosave"] is False
