"""JupyterLab as a reader leaves it: a chapter's file untouched, a revealed solution runnable.

Two browser checks of issue 27, in a module of their own so that they run beside the
chapter-by-chapter JupyterLab test (tests/test_lab.py) on the other worker: most of their
time is a wait past JupyterLab's autosave interval, which costs no CPU. They use the same
server and browser fixtures (a server of their own), the settings a reader gets.
"""

from __future__ import annotations

import time

import pytest

from tests.test_lab import (LAB_ROOT, browser, lab_url, open_notebook,  # noqa: F401 (fixtures)
                            run_all, shut_down_kernels)

pytestmark = pytest.mark.browser


#: JupyterLab's default autosave interval (s); the shipped settings turn autosave off.
AUTOSAVE_INTERVAL_S = 120


def test_a_chapter_left_open_past_the_autosave_interval_is_not_rewritten(lab_url, browser):
    """Opening, running and reading a chapter leaves its file byte for byte as it was.

    The chapter that lost its front matter in the issue's trial (01), run and then left
    open for longer than JupyterLab's autosave interval. (Were a reader to save it
    unchanged, tests/test_lab_files.py shows the same bytes would be written.)"""
    chapter = "book/01_buffet.md"
    before = (LAB_ROOT / chapter).read_bytes()
    page, _ = open_notebook(browser, lab_url, chapter)
    try:
        opened = time.time()
        run_all(page)
        time.sleep(max(0.0, AUTOSAVE_INTERVAL_S + 10 - (time.time() - opened)))
        assert (LAB_ROOT / chapter).read_bytes() == before, (
            f"{chapter} was rewritten while open in JupyterLab")
        # and a reader's own save of the unchanged chapter writes the same bytes
        page.click(".jp-Notebook .jp-MarkdownCell >> nth=0")
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        time.sleep(3)
        assert (LAB_ROOT / chapter).read_bytes() == before, (
            f"saving {chapter} unchanged in JupyterLab rewrote it")
    finally:
        page.close()
        shut_down_kernels(lab_url)


def test_a_revealed_solution_runs_with_shift_enter(lab_url, browser):
    """Run All skips the solutions; a reader who opens one and runs it sees its output."""
    chapter = "book/01_buffet.md"
    page, _ = open_notebook(browser, lab_url, chapter)
    try:
        run_all(page)
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        # the first hidden code cell after the imports (cell 0) is the first solution
        hidden = page.evaluate(HIDDEN_CODE_CELLS)
        index = next(i for i, h in enumerate(hidden) if h and i > 0)
        cell = cells.nth(index)
        assert cell.locator(".jp-OutputArea-output").count() == 0  # skipped by Run All
        cell.locator(".jp-InputPlaceholder").click()  # reveal the code, as a reader does
        cell.locator(".jp-InputArea-editor").click()
        time.sleep(2.0)  # a reader's pause: the request is not part of a batch (BATCH_GAP_S)
        page.keyboard.press("Shift+Enter")
        cell.locator(".jp-OutputArea-output").first.wait_for(timeout=60000)
        assert "+/-" in cell.locator(".jp-OutputArea").inner_text()
    finally:
        page.close()
        shut_down_kernels(lab_url)


#: Each code cell of the page: is its input hidden (folded)?
HIDDEN_CODE_CELLS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell'))
    .map(c => !!c.querySelector('.jp-InputPlaceholder'))"""
