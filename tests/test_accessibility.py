"""The built book against WCAG 2.1 AA, in headless Chromium (issue 53).

Every page of ``_toc.yml`` is opened from localhost as in ``tests/test_site.py`` and checked:

- axe-core (from the npm registry, pinned in ``tests/a11y/package.json`` and installed by
  ``npm ci --prefix tests/a11y``; never from a CDN) finds no violation of the rules tagged
  wcag2a, wcag2aa, wcag21a and wcag21aa, in the light and in the dark colour mode;
- every content image has a text alternative, and it is neither empty nor a file path;
- no formula is a tab stop (MathJax's menu would otherwise put every formula in the tab
  order, with no visible focus on inline ones);
- the page reflows: at 320 CSS px (1.4.10) and at 640 (a 1280 px window at 200% zoom,
  1.4.4) nothing is wider than the window, except what needs two dimensions (figures,
  tables, code blocks, formulas), which scrolls inside itself;
- every control the keyboard reaches shows where the focus is (2.4.7).

``IBP_LAB_SITE`` may name another built site (for example a copy of an older build).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.book_pages import toc_pages
from tests.browser_tools import chromium, serve_site

ROOT = Path(__file__).resolve().parent.parent
HTML = Path(os.environ.get("IBP_LAB_SITE", ROOT / "_build" / "html"))
AXE = ROOT / "tests" / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
WCAG21_AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
MODES = ["light", "dark"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    yield from serve_site(HTML)


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


def open_page(browser, base: str, page: str, *, width: int = 1280, mode: str = "light"):
    """The page loaded offline with its formulas typeset, in the given colour mode.

    The mode is what the theme's own switch stores (``localStorage.mode``), so the page
    is drawn as a reader who chose it sees it. Returns (context, page).
    """
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    tab = context.new_page()
    # nothing may come from outside the site (axe-core included: it is injected from disk)
    tab.route("**/*", lambda route: route.continue_()
              if urlparse(route.request.url).scheme in ("data", "blob") or route.request.url.startswith(base)
              else route.abort())
    tab.goto(f"{base}/{page}.html", wait_until="load")
    if tab.locator(".math").count():
        tab.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise"
                              " && document.querySelectorAll('mjx-container').length >= "
                              "document.querySelectorAll('.math').length", timeout=30000)
        tab.evaluate("MathJax.startup.promise")
    tab.wait_for_load_state("networkidle")
    return context, tab


def axe_violations(tab) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations on the open page, one line per rule and node."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `npm ci --prefix tests/a11y` (make test does it first)")
    tab.add_script_tag(path=str(AXE))
    result = tab.evaluate(
        "async tags => (await axe.run(document, {runOnly: {type: 'tag', values: tags},"
        " resultTypes: ['violations']})).violations.map(v => ({id: v.id, help: v.help,"
        " nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}))",
        WCAG21_AA_TAGS,
    )
    return [f"{rule['id']} ({rule['help']}): {node['target']}: {(node['summary'] or '').splitlines()[-1].strip()}"
            for rule in result for node in rule["nodes"]]


#: What Sphinx writes as alt text when a figure has none is its file's path; a hash, a
#: file name or a bare word says nothing of what the figure shows either.
PATH_LIKE = r"/(^|\/)_images\/|\.(png|jpe?g|svg|gif)$|^[0-9a-f]{16,}/i"
#: What may scroll inside itself rather than reflow (WCAG 1.4.10's two-dimensional content).
SCROLLS_INSIDE = "pre, table, figure, img, svg, mjx-container, .MathJax, .ibp-explorer, .cell_output, .math"
#: The widths checked: the reflow width of 1.4.10, and a 1280 px window at 200% zoom (1.4.4).
WIDTHS = [320, 640]


def audit_page(browser, base: str, page: str) -> dict:
    """Everything the tests below check on one page, from one visit (a visit costs seconds)."""
    context, tab = open_page(browser, base, page)
    try:
        found = {"axe": {"light": axe_violations(tab)}}
        found["images"] = tab.evaluate(
            f"""() => Array.from(document.querySelectorAll('article img'))
                .filter(img => img.getAttribute('role') !== 'presentation')
                .map(img => [img.getAttribute('src').slice(-40), img.getAttribute('alt')])
                .filter(([src, alt]) => alt === null || alt.trim().length < 12 || {PATH_LIKE}.test(alt.trim()))"""
        )
        found["tab_stop_formulas"] = tab.evaluate(
            "document.querySelectorAll('mjx-container[tabindex]:not([tabindex=\"-1\"])').length")
        # an explorer's frame says which slider values it shows, and changes with them
        found["fixed_explorer_alt"] = []
        for i in range(tab.locator(".ibp-explorer").count()):
            root = tab.locator(".ibp-explorer").nth(i)
            frame, slider = root.locator("img.ibp-explorer-frame"), root.locator("input[type=range]").first
            before = frame.get_attribute("alt")
            slider.fill("0" if slider.input_value() != "0" else slider.get_attribute("max"))
            if frame.get_attribute("alt") == before:
                found["fixed_explorer_alt"].append(i)
        # the dark mode as the theme's switch sets it; its colours apply at once (no transition)
        tab.evaluate("document.documentElement.dataset.theme = 'dark'; document.documentElement.dataset.mode = 'dark'")
        tab.wait_for_timeout(300)
        found["axe"]["dark"] = axe_violations(tab)
        found["width"] = {}
        for width in WIDTHS:
            tab.set_viewport_size({"width": width, "height": 900})
            tab.wait_for_timeout(300)
            found["width"][width] = tab.evaluate(
                """([width, inside]) => {
                     const page = document.documentElement.scrollWidth;
                     const culprits = Array.from(document.querySelectorAll('body *'))
                       .filter(e => e.getBoundingClientRect().right > width + 1 && !e.closest(inside)
                                    && e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden')
                       .filter(e => !Array.from(e.children).some(c => c.getBoundingClientRect().right > width + 1))
                       .slice(0, 5).map(e => `${e.tagName.toLowerCase()}.${e.className}: ${e.textContent.trim().slice(0, 60)}`);
                     return {page, culprits};
                   }""",
                [width, SCROLLS_INSIDE],
            )
        return found
    finally:
        context.close()


@pytest.fixture(scope="module")
def audit(server, browser):
    """``audit(page)``: the page's findings, each page visited once for all the tests."""
    found = {}

    def get(page):
        if page not in found:
            found[page] = audit_page(browser, server, page)
        return found[page]

    return get


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("page", toc_pages())
def test_axe_core_finds_no_wcag21_aa_violation(audit, page, mode):
    found = audit(page)["axe"][mode]
    assert found == [], f"{page} ({mode} mode): {len(found)} WCAG 2.1 A/AA violations:\n" + "\n".join(found)


@pytest.mark.parametrize("page", toc_pages())
def test_every_content_image_says_what_it_shows(audit, page):
    bad = audit(page)["images"]
    assert bad == [], f"{page}: images whose alt text is missing, too short or a file path: {bad}"
    fixed = audit(page)["fixed_explorer_alt"]
    assert fixed == [], f"{page}: explorers whose frame's alt text ignores the sliders: {fixed}"


@pytest.mark.parametrize("page", toc_pages())
def test_no_formula_is_a_tab_stop(audit, page):
    stops = audit(page)["tab_stop_formulas"]
    assert stops == 0, f"{page}: {stops} formulas are tab stops (MathJax's menu: enableMenu)"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", toc_pages())
def test_page_reflows_without_sideways_scrolling(audit, page, width):
    wide = audit(page)["width"][width]
    assert wide["page"] <= width, (f"{page} at {width} px is {wide['page']} px wide; "
                                   f"the widest pieces: {json.dumps(wide['culprits'])}")


#: Pages whose every tab stop is walked: the home page and a chapter with an explorer,
#: formulas, exercises and hidden code (the header and sidebars are the same on every page).
FOCUS_PAGES = ["book/intro", "book/01_buffet"]


@pytest.mark.parametrize("page", FOCUS_PAGES)
def test_every_tab_stop_shows_its_focus(server, browser, page):
    context, tab = open_page(browser, server, page)
    try:
        unseen, seen = [], set()
        for _ in range(600):
            tab.keyboard.press("Tab")
            state = tab.evaluate(
                """() => {
                     const e = document.activeElement;
                     if (!e || e === document.body) return null;
                     const s = getComputedStyle(e);
                     const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1)
                                  || (s.boxShadow && s.boxShadow !== 'none');
                     const label = (e.getAttribute('aria-label') || e.textContent || e.tagName).trim().slice(0, 50);
                     const path = [];
                     for (let n = e; n && n !== document.body; n = n.parentElement) {
                       path.unshift(n.tagName + Array.from(n.parentElement ? n.parentElement.children : []).indexOf(n));
                     }
                     return {key: path.join('>'), label, ring, tag: e.tagName.toLowerCase()};
                   }"""
            )
            if state is None or state["key"] in seen:
                break  # the focus left the page or came round again
            seen.add(state["key"])
            if not state["ring"]:
                unseen.append(f"{state['tag']} '{state['label']}'")
        assert len(seen) > 5, f"{page}: the keyboard reached only {len(seen)} controls"
        assert unseen == [], f"{page}: tab stops with no visible focus: {unseen}"
    finally:
        context.close()


def _summary(site: str, pages: list[str]) -> dict:
    """axe-core's counts over the pages: clean pages, page-rule violations, nodes (light mode)."""
    rows = {}
    for base in serve_site(Path(site)):
        for browser in chromium():
            for page in pages:
                context, tab = open_page(browser, base, page)
                rows[page] = axe_violations(tab)
                context.close()
    rules = {(page, line.split(" ", 1)[0]) for page, lines in rows.items() for line in lines}
    return {"pages": len(rows), "clean": sum(not lines for lines in rows.values()),
            "page_rule_violations": len(rules), "nodes": sum(map(len, rows.values())),
            "by_rule": {rule: sum(1 for _, r in rules if r == rule) for rule in sorted({r for _, r in rules})}}


if __name__ == "__main__":  # python tests/test_accessibility.py [SITE]: the counts of issue 53
    import sys

    site = sys.argv[1] if len(sys.argv) > 1 else str(HTML)
    pages = [page for page in toc_pages() if (Path(site) / f"{page}.html").exists()]
    print(json.dumps(_summary(site, pages), indent=1))
