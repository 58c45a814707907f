"""JupyterLab, as `make lab` and Binder start it, opens a chapter as a notebook.

The chapters are MyST Markdown files; jupytext and the default-viewer settings
(binder/jupyterlab-overrides.json, copied into the environment by `make` and by
Binder's postBuild) make JupyterLab open them as notebooks with code cells.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SETTINGS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab_url():
    if not SETTINGS.exists():
        pytest.fail(f"{SETTINGS} is missing: `make` copies binder/jupyterlab-overrides.json there")
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(ROOT / "_build" / "lab-runtime")}
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.root_dir={ROOT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("JupyterLab did not start within 60 s")
    yield url
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def test_a_chapter_opens_as_a_notebook(lab_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{lab_url}/lab/tree/book/01_buffet.md", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90000)
        # JupyterLab renders only the cells in view, so one of each kind is what can be seen
        page.wait_for_selector(".jp-Notebook .jp-MarkdownCell", timeout=30000)
        # The notebook's windowing may re-render the first cells once more after both kinds
        # appeared (CI saw one cell at that instant), so wait for the settled count rather than
        # reading it once; a notebook that never shows two cells still fails after 30 s.
        page.wait_for_function(
            "document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 2", timeout=30000
        )
        (ROOT / "_build" / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ROOT / "_build" / "screenshots" / "jupyterlab_01_buffet.png"))
        browser.close()
