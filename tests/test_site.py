"""The built book, opened in headless Chromium (Debian's package, never a downloaded build).

``make test`` builds the book first; these tests read ``_build/html``. Each page
is served from localhost and checked as a reader would see it: it loads without
console errors, its math is typeset by the bundled MathJax, every image loads,
no cell shows an error, no request leaves the site, and every static explorer
changes its picture when its slider moves. A screenshot of each page is kept in
``_build/screenshots``.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from tests.book_pages import toc_pages
from tests.browser_tools import chromium, serve_site

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"

pytestmark = pytest.mark.browser


def is_notebook(page: str) -> bool:
    text = (ROOT / f"{page}.md").read_text()
    return text.startswith("---") and "kernelspec:" in text.split("---", 2)[1]


@pytest.fixture(scope="module")
def server():
    yield from serve_site(HTML)


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


class PageVisit:
    """One page opened with every request and console error recorded."""

    def __init__(self, browser, base: str, path: str):
        self.base, self.outside, self.errors = base, [], []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.route("**/*", self._route)
        self.page.goto(f"{base}/{path}", wait_until="load")

    def _route(self, route):
        url = route.request.url
        if urlparse(url).scheme in ("data", "blob") or url.startswith(self.base):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.mark.parametrize("page", toc_pages())
def test_page_loads_offline_with_math_figures_and_no_errors(server, browser, page):
    visit = PageVisit(browser, server, f"{page}.html")
    try:
        p = visit.page
        has_math = p.locator(".math").count() > 0
        if has_math:
            # MathJax replaces each TeX fragment by an mjx-container once it has typeset it
            p.wait_for_function(
                "document.querySelectorAll('mjx-container').length >= "
                "document.querySelectorAll('.math').length",
                timeout=30000,
            )
            assert p.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        p.wait_for_load_state("networkidle")
        broken = p.evaluate(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
            ".map(i => i.src.slice(0, 80))"
        )
        assert broken == [], f"images that did not load: {broken}"
        assert visit.outside == [], f"requests left the site: {visit.outside}"
        assert visit.errors == [], f"console errors: {visit.errors}"
        # no cell output may be an error (traceback) or a warning printed to stderr
        assert p.locator(".output.traceback, .output.error").count() == 0
        if Path(page).name[:2].isdigit():  # numbered chapters teach with figures
            assert p.locator("figure img, .cell_output img").count() > 0, "a chapter without a figure"
        # the code a reader sees is not cut off: no shown code block needs a scroll bar
        cut = p.evaluate(
            "Array.from(document.querySelectorAll('div.cell_input pre'))"
            ".filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)"
            ".map(e => e.textContent.split('\\n').reduce((a, b) => a.length >= b.length ? a : b))"
        )
        assert cut == [], f"code lines wider than the page (longest line of each block): {cut}"
        SHOTS.mkdir(parents=True, exist_ok=True)
        p.screenshot(path=str(SHOTS / f"{Path(page).name}.png"), full_page=True)
    finally:
        visit.close()


def test_every_static_explorer_moves_when_its_slider_is_driven(server, browser):
    found = 0
    for page in toc_pages():
        if "ibp-explorer" not in (HTML / f"{page}.html").read_text():
            continue
        visit = PageVisit(browser, server, f"{page}.html")
        try:
            explorers = visit.page.locator(".ibp-explorer")
            for i in range(explorers.count()):
                found += 1
                root = explorers.nth(i)
                img = root.locator("img.ibp-explorer-frame")
                for j in range(root.locator("input[type=range]").count()):
                    slider = root.locator("input[type=range]").nth(j)
                    before_src, before_key = img.get_attribute("src"), root.get_attribute("data-key")
                    new = "0" if slider.input_value() != "0" else slider.get_attribute("max")
                    slider.fill(new)  # sets the value and fires the input event
                    assert root.get_attribute("data-key") != before_key
                    assert img.get_attribute("src") != before_src, f"{page}: explorer {i} did not move"
                    shown = root.locator(f"output[data-param='{slider.get_attribute('data-param')}']")
                    assert shown.inner_text().strip() != ""
            assert visit.errors == [] and visit.outside == []
        finally:
            visit.close()
    assert found >= 1, "no static explorer found in the built book"


def test_search_finds_a_chapter(server, browser):
    visit = PageVisit(browser, server, "search.html?q=stick-breaking")
    try:
        visit.page.wait_for_selector("#search-results li, ul.search li", timeout=20000)
        text = visit.page.locator("#search-results, ul.search").first.inner_text()
        assert "stick" in text.lower()
        assert visit.outside == []
    finally:
        visit.close()


def test_every_chapter_executed_in_the_build():
    """The build's execution records are the chapter tests: each must have succeeded."""
    rows = json.loads((ROOT / "_build" / "execution.json").read_text())
    executed = {row["chapter"]: row for row in rows}
    for page in filter(is_notebook, toc_pages()):
        assert page in executed, f"{page} has no execution record"
        assert executed[page]["succeeded"], f"{page} failed to execute"
    assert not list((HTML / "reports").glob("**/*.log")), "execution reports (errors) present"


def test_every_captioned_figure_cell_shows_an_image():
    """A cell with a figure caption must output a picture: a figure built without pyplot is
    shown only as the cell's value, and an assignment as the last line shows nothing (the
    caption then labels an empty figure and a {numref} to it dangles)."""
    import nbformat

    missing = []
    for path in sorted((ROOT / "_build" / "jupyter_execute" / "book").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for index, cell in enumerate(notebook.cells):
            figure = cell.metadata.get("mystnb", {}).get("figure") if cell.cell_type == "code" else None
            if figure and not any("image/png" in output.get("data", {}) for output in cell.get("outputs", [])):
                missing.append(f"{path.stem} cell {index} ({figure.get('name')})")
    assert not missing, f"captioned figure cells without an image: {missing}"


#: No chapter may allow a cell more than this: a stall must fail the build within minutes.
LONGEST_CELL_LIMIT_S = 300


def test_every_chapter_sets_a_cell_limit_from_its_timings():
    """Each chapter declares its own per-cell limit; no executed cell came near it."""
    rows = {row["chapter"]: row for row in json.loads((ROOT / "_build" / "execution.json").read_text())}
    for page in filter(is_notebook, toc_pages()):
        front = yaml.safe_load((ROOT / f"{page}.md").read_text().split("---", 2)[1])
        limit = (front.get("mystnb") or {}).get("execution_timeout")
        assert isinstance(limit, int) and 0 < limit <= LONGEST_CELL_LIMIT_S, (page, limit)
        row = rows[page]
        assert row["cell_limit_s"] == limit
        # tools/build_book.py fails the build at 90% of a cell's CPU limit (the chapter's limit
        # on each usable core: load stretches wall time, not CPU time); the record is re-read
        assert row["busiest_cell_cpu_s"] is not None, row
        assert row["busiest_cell_cpu_s"] < 0.9 * row["cell_cpu_limit_s"], row


def test_status_page_states_execution_status_in_words():
    """The status table spells out "ok" (a glyph needs an emoji font to render)."""
    page = (HTML / "book" / "status.html").read_text()
    table = page[page.index("ibp-exec-table"):]
    table = table[: table.index("</table>")]
    chapters = [p for p in toc_pages() if is_notebook(p)]
    assert table.count(">ok<") >= len(chapters), "a chapter without an 'ok' status"
    for glyph in ("\u2705", "\u274c"):
        assert glyph not in page
    assert "FAILED" not in table
