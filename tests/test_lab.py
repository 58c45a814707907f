"""JupyterLab, as `make lab` and Binder start it, shows a chapter as the web page does.

The chapters are MyST Markdown files; jupytext and the default-viewer settings
(binder/jupyterlab-overrides.json, copied into the environment by `make` and by
Binder's postBuild) make JupyterLab open them as notebooks, and jupyterlab-myst
renders their prose (math, references, exercises, solutions, ``{eval}`` numbers).

Each chapter is opened, run (Run All, as a student would), and read back from the page:

- no raw MyST in the rendered prose (``{glue``, ``{eval}``, ``{ref}``, ``:label:``, an
  unevaluated ``f"{name}"``, an inline error);
- no "not found" reference to an equation, exercise or target of the chapter itself,
  and no bare label anywhere: no label of the book and no citation key shows in the
  rendered prose (other chapters, figures and citations are Markdown links with readable
  text, tests/test_references.py);
- every solution closed: its ``<details>`` shut, its code cells skipped (no output) and
  collapsed;
- no code cell shows an error (Run All stops at one: the test fails at once, naming it); so
  the student edition, whose code is exactly the cells this run executes
  (tests/test_student_edition.py), runs too;
- exactly one explorer per ``explorer(...)`` cell: the live widget, no precomputed copy;
- every slider of every live explorer driven with the arrow keys (JupyterLab must not
  take them), each move answered within :data:`MOVE_LIMIT_S`, after a reader's pause;
- then jumps that the explorer cannot have drawn ahead (it draws only the settings one
  slider step from those shown): End and Home on every slider, and a click on the slider's
  track at least two steps from every setting shown so far; over a chapter, their median
  under :data:`JUMP_MEDIAN_LIMIT_S` and their maximum under :data:`JUMP_MAX_LIMIT_S`.
  Each time runs from the key's (or the click's) release to the new figure on the page;
  a quick stand-in (:data:`ibp_lab.teaching.explorers.QUICK_FRAMES`) counts as the
  figure, and the time to the exact frame that replaces it is recorded beside it.

The response times go to ``_build/screenshots/lab_explorer_times.json`` (each with its
``kind``: ``neighbour``, ``jump`` or ``click``), with a screenshot of each chapter. Cost: about the book's execution time (each chapter runs
once in a kernel) plus a minute of explorer driving. ``IBP_LAB_LAB_ROOT`` points the
tests at another checkout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from ibp_lab.teaching.captions import chapter_captions
from tests.browser_tools import chromium

ROOT = Path(__file__).resolve().parent.parent
LAB_ROOT = Path(os.environ.get("IBP_LAB_LAB_ROOT", ROOT))
SHOTS = ROOT / "_build" / "screenshots"
TIMES = SHOTS / "lab_explorer_times.json"
SETTINGS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
#: A move of a live explorer must show its new figure within this time (the issue's limit).
MOVE_LIMIT_S = 1.0
#: The reader's pause between moves (the live explorer draws the next settings meanwhile).
PAUSE_S = 4.0
#: Over a chapter, the median and the longest time of a jump to a setting not drawn ahead
#: (the issue's limits).
JUMP_MEDIAN_LIMIT_S = 1.0
JUMP_MAX_LIMIT_S = 2.0
#: The keys of a jump: to the last and to the first value of the slider.
JUMP_KEYS = ("End", "Home")
#: Longest a chapter may take to Run All in JupyterLab.
RUN_ALL_LIMIT_S = 600
#: A first Run All may take this many times the chapter's stated run time: the statement
#: is the build's run on an idle core, rounded up to whole minutes ("under a minute", read
#: as one, when it ran under half a minute: tools/study_time.py), while here the suite's
#: second worker shares the machine's two cores and JupyterLab renders every output.
RUN_TIME_SLACK = 2.0
SOLUTION_MARKER = "# Solution (Run All skips it: run this cell on its own)"
RAW_MYST = re.compile(
    r"\{(?:glue|eval|ref|numref|eq|cite(?::[pt])?|exercise|solution(?:-start|-end)?|math|doc|"
    r"details|dropdown)[^}]*\}|^:(?:label|class):|f\"\{|```", re.M)
INLINE_ERROR = re.compile(r"\b(?:NameError|SyntaxError|Traceback)\b")

pytestmark = pytest.mark.browser


def _bare_keys() -> set[str]:
    """Every label of the book's pages and every citation key: none may show as text."""
    pages = (LAB_ROOT / "book").glob("*.md")
    text = "\n".join(p.read_text() for p in pages)
    labels = set(re.findall(r"^\((\S+)\)=\s*$", text, re.M))
    labels |= set(re.findall(r"^:label:\s*(\S+)", text, re.M))
    labels |= set(re.findall(r"^\s+name:\s*(fig-\S+)", text, re.M))
    keys = set(re.findall(r"^@\w+\{([^,]+),", (LAB_ROOT / "book" / "references.bib").read_text(),
                          re.M))
    # labels that are also plain words (intro, references, status) would match prose
    return {k for k in labels | keys if "-" in k or any(ch.isdigit() for ch in k)}


BARE_KEYS = _bare_keys()


def chapters() -> list[str]:
    toc = yaml.safe_load((LAB_ROOT / "_toc.yml").read_text())
    files = [e["file"] for part in toc.get("parts", []) for e in part.get("chapters", [])]
    return [f"{f}.md" for f in files if re.match(r"\d\d_", Path(f).name)]


def own_labels(source: str) -> set[str]:
    """Labels the chapter defines that jupyterlab-myst can resolve (not figure names)."""
    labels = set(re.findall(r"^:label:\s*(\S+)", source, re.M))
    labels |= set(re.findall(r"^\((\S+)\)=\s*$", source, re.M))
    labels |= set(re.findall(r"\$\$\s*\((\S+)\)\s*$", source, re.M))
    return labels


def stated_run_seconds(source: str) -> int | None:
    """The chapter's "The code runs in about N minutes" (or "in under a minute", taken as
    one minute), in seconds (None if it says neither)."""
    if "The code runs in under a minute." in source:
        return 60
    match = re.search(r"The code runs in about (\d+) minutes?", source)
    return 60 * int(match[1]) if match else None


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
    # A fresh, empty user-settings folder (and workspaces folder) per server: the test sees
    # exactly the settings a reader gets (overrides.json, autosave off included), not a
    # previous session's, and two servers (tests/test_lab_reader.py) do not share one.
    (ROOT / "_build").mkdir(exist_ok=True)
    settings = Path(tempfile.mkdtemp(prefix="lab-user-settings-", dir=ROOT / "_build"))
    workspaces = Path(tempfile.mkdtemp(prefix="lab-workspaces-", dir=ROOT / "_build"))
    env.pop("IBP_LAB_BOOK_BUILD", None)  # a student's kernel, not the book build
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.root_dir={LAB_ROOT}", f"--LabApp.user_settings_dir={settings}",
         f"--LabApp.workspaces_dir={workspaces}",
         # the test ends each chapter's kernel through the REST API (shut_down_kernels)
         "--ServerApp.disable_check_xsrf=True"],
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
    shutil.rmtree(settings, ignore_errors=True)
    shutil.rmtree(workspaces, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


def shut_down_kernels(lab_url: str) -> None:
    """End every kernel of the server, as closing the notebook and its kernel would: a
    chapter's kernel (and its explorers' background drawing) must not share the cores with
    the next chapter's run."""
    import urllib.request

    with urllib.request.urlopen(f"{lab_url}/api/kernels", timeout=30) as reply:
        kernels = json.loads(reply.read())
    for kernel in kernels:
        request = urllib.request.Request(f"{lab_url}/api/kernels/{kernel['id']}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def open_notebook(browser, lab_url: str, path: str):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    logs: list[str] = []
    page.on("console", lambda message: logs.append(message.text))
    page.goto(f"{lab_url}/lab/tree/{path}?reset", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-MarkdownCell", timeout=90000)
    # the kernel is connected and idle (the status bar says so) before anything runs
    page.wait_for_function(
        "() => document.body.innerText.includes('Python 3 (ipykernel) | Idle')", timeout=120000)
    return page, logs


def run_all(page) -> float:
    start = time.time()
    page.click("li.lm-MenuBar-item:has-text('Run')")
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    # done: no cell waiting or running, the kernel idle, for two seconds in a row
    settled = 0
    while time.time() - start < RUN_ALL_LIMIT_S:
        busy = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.jp-CodeCell .jp-InputPrompt')).some(e => /\\*|\\[ \\]/.test(e.textContent))
            || !document.body.innerText.includes('| Idle')""")
        settled = 0 if busy else settled + 1
        if settled >= 4:
            return time.time() - start
        # Run All stops at an error, leaving the later cells unrun: fail now, not at the limit
        error = page.evaluate(ERROR_OUTPUT)
        if error:
            pytest.fail(f"a cell raised during Run All:\n{error[:3000]}")
        time.sleep(0.5)
    pytest.fail(f"Run All did not finish within {RUN_ALL_LIMIT_S} s")


#: The text of the first error output of the page ('' if none): a traceback as JupyterLab shows it.
ERROR_OUTPUT = """() => (Array.from(document.querySelectorAll('.jp-CodeCell .jp-OutputArea-output'))
    .map(o => o.innerText).find(t => /Traceback \\(most recent call last\\)|Cell In\\[\\d+\\], line \\d+/.test(t))
    || '')"""

READ_CELLS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell')).map(c => ({
    markdown: c.classList.contains('jp-MarkdownCell'),
    text: c.classList.contains('jp-MarkdownCell')
        ? (c.querySelector('.myst') || c.querySelector('.jp-MarkdownOutput') || {}).innerText
          || '' : '',
    open: Array.from(c.querySelectorAll('details')).filter(d => d.open).length,
    source: c.classList.contains('jp-CodeCell')
        ? (c.querySelector('.jp-InputArea-editor') || {}).innerText || '' : '',
    inputHidden: !!c.querySelector('.jp-InputPlaceholder'),
    output: (c.querySelector('.jp-OutputArea') || {}).innerText || '',
    outputs: c.querySelectorAll('.jp-OutputArea-output').length,
    captions: Array.from(c.querySelectorAll('.jp-OutputArea-output'))
        .filter(o => (o.innerText || '').startsWith('Figure.')).length,
    liveExplorers: c.querySelectorAll('.ibp-live-explorer').length,
    staticExplorers: c.querySelectorAll('.ibp-explorer').length,
}))"""


def prose_problems(cells: list[dict], logs: list[str], source: str) -> list[str]:
    problems = []
    for index, cell in enumerate(cells):
        if not cell["markdown"]:
            continue
        for match in RAW_MYST.finditer(cell["text"]):
            problems.append(f"cell {index}: raw MyST {match[0]!r} in "
                            f"{cell['text'][max(0, match.start() - 60):match.end() + 40]!r}")
        for match in INLINE_ERROR.finditer(cell["text"]):
            problems.append(f"cell {index}: error in the prose: "
                            f"{cell['text'][max(0, match.start() - 60):match.end() + 60]!r}")
        if cell["open"]:
            problems.append(f"cell {index}: a solution (or details) shown open")
    for index, cell in enumerate(cells):
        if cell["markdown"]:
            shown = set(re.findall(r"[A-Za-z0-9_-]+", cell["text"])) & BARE_KEYS
            problems += [f"cell {index}: bare label {key!r}" for key in sorted(shown)]
    labels = own_labels(source)
    for line in logs:
        match = re.search(r"target was not found: (\S+)", line)
        if match and match[1] in labels:
            problems.append(f"reference to this chapter's {match[1]!r} not found")
    return problems


def solution_and_explorer_problems(cells: list[dict], source: str) -> list[str]:
    problems = []
    code = [c for c in cells if not c["markdown"]]
    for cell in code:
        if SOLUTION_MARKER in cell["source"] or (cell["inputHidden"] and not cell["source"]):
            if cell["output"].strip() or cell["outputs"]:
                problems.append(f"a hidden cell (a solution, or the imports) shows output: "
                                f"{cell['output'][:80]!r}")
    expected = len(re.findall(r"^explorer\(", source, re.M))
    live = sum(c["liveExplorers"] for c in code)
    static = sum(c["staticExplorers"] for c in code)
    if live != expected or static:
        problems.append(f"{expected} explorer(s) in the source, {live} live and {static} "
                        "precomputed on the page: each must show once, live")
    for cell in code:
        if cell["liveExplorers"] and cell["outputs"] - cell["captions"] != 1:
            problems.append(f"an explorer cell shows {cell['outputs']} outputs, not one "
                            "and its caption")
    # every captioned figure Run All draws shows its caption below it, as on the web page
    captioned = [code for code, _ in chapter_captions(source).items()
                 if not code.startswith(SOLUTION_MARKER)]
    shown = sum(c["captions"] for c in code)
    if shown != len(captioned):
        problems.append(f"{shown} figure captions shown for {len(captioned)} captioned figures")
    return problems


ACTIVE_CELL = ("() => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'))"
               ".findIndex(c => c.classList.contains('jp-mod-active'))")


def slider_positions(root) -> tuple[int, ...]:
    """The index of every slider's value (noUiSlider's aria-valuenow: a SelectionSlider
    slides over the indices of its options)."""
    handles = root.locator(".noUi-handle")
    return tuple(round(float(handles.nth(j).get_attribute("aria-valuenow")))
                 for j in range(handles.count()))


def far_from(position: tuple[int, ...], shown: set) -> bool:
    """Two slider steps or more from every setting shown: the explorer draws ahead only
    the settings one step from those it showed, so it cannot have drawn this one."""
    return all(sum(abs(a - b) for a, b in zip(position, seen)) >= 2 for seen in shown)


def timed_move(page, root, j: int, act, chapter: str, explorer: int, kind: str, label: str,
               shown: set) -> dict:
    """After a reader's pause, ``act()`` on slider ``j``; the time from its release to the
    new figure, and to the exact frame if a quick stand-in came first."""
    time.sleep(PAUSE_S)
    image, status = root.locator("img").first, root.locator(".widget-html").first
    readout = root.locator(".widget-readout").nth(j)
    before_value, before_src = readout.inner_text(), image.get_attribute("src")
    root.locator(".noUi-handle").nth(j).focus()  # focusing makes the explorer's cell active
    active = page.evaluate(ACTIVE_CELL)
    start = time.perf_counter()
    act()
    try:
        page.wait_for_function("([img, src]) => img.src !== src",
                               arg=[image.element_handle(), before_src], timeout=30000)
        seconds = time.perf_counter() - start
    except Exception:  # noqa: BLE001 (the figure never changed)
        seconds = float("inf")
    exact_seconds, quick_src = None, image.get_attribute("src")
    try:  # the status line follows the figure from the kernel
        page.wait_for_function("el => !el.innerText.includes('computing')",
                               arg=status.element_handle(), timeout=5000)
    except Exception:  # noqa: BLE001 (read as it is)
        pass
    if "exact frame follows" in status.inner_text():
        try:
            page.wait_for_function("([img, src]) => img.src !== src",
                                   arg=[image.element_handle(), quick_src], timeout=30000)
            exact_seconds = round(time.perf_counter() - start, 3)
        except Exception:  # noqa: BLE001 (recorded as never)
            exact_seconds = float("inf")
    position = slider_positions(root)
    move = {"chapter": chapter, "explorer": explorer, "slider": j, "kind": kind, "key": label,
            "from": before_value, "to": readout.inner_text(), "seconds": round(seconds, 3),
            "drawn_ahead_possible": not far_from(position, shown),
            "exact_seconds": exact_seconds,
            "keys_taken_by_lab": page.evaluate(ACTIVE_CELL) != active}
    shown.add(position)
    return move


def click_target(position: tuple[int, ...], j: int, size: int, shown: set) -> int | None:
    """A value of slider ``j`` far (two steps or more) from every setting shown, the
    farthest from its current value; ``None`` if there is none."""
    far = [i for i in range(size)
           if far_from(position[:j] + (i,) + position[j + 1:], shown)]
    return max(far, key=lambda i: abs(i - position[j])) if far else None


def drive_explorers(page, chapter: str) -> list[dict]:
    """Every slider: one step each way with the arrow keys, then the jumps (End, Home, a
    click on the track), each after a reader's pause; the time from the key to the figure."""
    moves = []
    explorers = page.locator(".ibp-live-explorer")
    for i in range(explorers.count()):
        root = explorers.nth(i)
        root.scroll_into_view_if_needed()
        handles = root.locator(".noUi-handle")
        shown = {slider_positions(root)}
        for j in range(handles.count()):
            for key in ("ArrowRight", "ArrowLeft"):
                moves.append(timed_move(page, root, j, lambda key=key: page.keyboard.press(key),
                                        chapter, i, "neighbour", key, shown))
        for j in range(handles.count()):
            size = round(float(handles.nth(j).get_attribute("aria-valuemax"))) + 1
            for key, end in zip(JUMP_KEYS, (size - 1, 0)):
                if slider_positions(root)[j] == end:
                    continue  # already there: the key would not move the slider
                moves.append(timed_move(page, root, j, lambda key=key: page.keyboard.press(key),
                                        chapter, i, "jump", key, shown))
            target = click_target(slider_positions(root), j, size, shown)
            if target is None:
                continue
            track = root.locator(".noUi-base").nth(j).bounding_box()
            x = track["x"] + track["width"] * target / (size - 1)
            y = track["y"] + track["height"] / 2
            moves.append(timed_move(page, root, j, lambda x=x, y=y: page.mouse.click(x, y),
                                    chapter, i, "click", f"click at value {target}", shown))
    return moves


def jump_problems(moves: list[dict]) -> list[str]:
    """The issue's limits on the jumps (End, Home, clicks) to settings not drawn ahead."""
    times = sorted(m["seconds"] for m in moves if m["kind"] != "neighbour"
                   and not m["drawn_ahead_possible"])
    if not times:
        return []
    middle = len(times) // 2
    median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
    problems = []
    if median >= JUMP_MEDIAN_LIMIT_S:
        problems.append(f"jumps to settings not drawn ahead: median {median:.2f} s, over the "
                        f"{JUMP_MEDIAN_LIMIT_S} s limit ({times})")
    if times[-1] >= JUMP_MAX_LIMIT_S:
        problems.append(f"jumps to settings not drawn ahead: longest {times[-1]:.2f} s, over "
                        f"the {JUMP_MAX_LIMIT_S} s limit ({times})")
    return problems


def record(moves: list[dict], chapter: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    old = json.loads(TIMES.read_text()) if TIMES.exists() else []
    TIMES.write_text(json.dumps([m for m in old if m["chapter"] != chapter] + moves, indent=1))


def test_a_chapter_opens_as_a_notebook_and_myst_renders_it(lab_url, browser):
    page, logs = open_notebook(browser, lab_url, "book/01_buffet.md")
    try:
        page.wait_for_function(
            "document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 2", timeout=30000)
        # jupyterlab-myst declares an older @jupyter/ydoc; it must still load and render
        page.wait_for_selector(".jp-MarkdownCell .myst", timeout=30000)
        assert any("jupyterlab-myst is activated" in line for line in logs), logs[:20]
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "jupyterlab_01_buffet.png"))
    finally:
        page.close()


# Needs the chapters in the form JupyterLab reads ({eval}, quote, explorer): the
@pytest.mark.parametrize("chapter", chapters())
def test_a_chapter_run_in_jupyterlab_reads_as_the_web_page(lab_url, browser, chapter):
    source = (LAB_ROOT / chapter).read_text()
    assert "{glue:" not in source, f"{chapter} uses myst-nb's glue, which JupyterLab does not render"
    page, logs = open_notebook(browser, lab_url, chapter)
    try:
        seconds = run_all(page)
        time.sleep(2)  # the markdown cells re-render their {eval} results
        cells = page.evaluate(READ_CELLS)
        name = Path(chapter).stem
        page.screenshot(path=str(SHOTS / f"jupyterlab_{name}.png"), full_page=False)
        problems = prose_problems(cells, logs, source)
        problems += [f"cell {i}: an error output: {c['output'][:300]!r}" for i, c in enumerate(cells)
                     if not c["markdown"] and re.search(r"Traceback \(most recent call last\)|"
                                                        r"Cell In\[\d+\], line \d+", c["output"])]
        problems += solution_and_explorer_problems(cells, source)
        if (LAB_ROOT / chapter).read_text() != source:
            problems.append("the chapter's file was rewritten while it was open in JupyterLab")
        moves = drive_explorers(page, name)
        if moves:
            page.screenshot(path=str(SHOTS / f"jupyterlab_{name}_explorer.png"))
        stated = stated_run_seconds(source)
        record(moves + [{"chapter": name, "run_all_seconds": round(seconds, 1),
                         "stated_seconds": stated}], name)
        if stated and seconds > RUN_TIME_SLACK * stated:
            problems.append(f"Run All took {seconds:.0f} s, the chapter says about "
                            f"{stated // 60} minute(s)")
        for move in moves:
            if move["keys_taken_by_lab"] or move["from"] == move["to"]:
                problems.append(f"explorer {move['explorer']} slider {move['slider']}: "
                                f"{move['key']} did not move the slider (JupyterLab took it?)")
            if move["kind"] == "neighbour" and move["seconds"] > MOVE_LIMIT_S:
                problems.append(f"explorer {move['explorer']} slider {move['slider']} "
                                f"{move['from']} -> {move['to']}: {move['seconds']} s, "
                                f"over the {MOVE_LIMIT_S} s limit")
        problems += jump_problems(moves)
        assert not problems, f"{chapter}:\n" + "\n".join(problems)
    finally:
        page.close()
        shut_down_kernels(lab_url)
