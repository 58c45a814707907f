"""What the browser tests share: Debian's Chromium and the built site served from localhost.

``tests/test_site.py``, ``tests/test_accessibility.py`` and ``tests/test_lab.py`` each open
pages in headless Chromium; they start it, and serve a built site, through these two
generators so that the flags and the refusals are written once. Each test file wraps them
in its own module-scoped fixture (``yield from chromium()``).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: No update checks, syncing or first-run pages: the browser makes no request of its own.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file server that does not log every request into the test output."""

    def log_message(self, *args):
        pass


def serve_site(html: Path) -> Iterator[str]:
    """Serve the built site in ``html`` on a free local port; yields its base URL.

    Fails (rather than skips) when the site is missing: ``make test`` builds it first.
    """
    if not (html / "index.html").exists():
        pytest.fail(f"no built book in {html}: run `make book` (make test does it first)")
    handler = functools.partial(QuietHandler, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def chromium() -> Iterator:
    """Debian's Chromium, headless, under Playwright; yields the browser."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()
