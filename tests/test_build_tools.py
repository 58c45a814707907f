"""The build's own checks (tools/build_book.py, book/_ext/execution_status.py): a stall fails
fast, a slow machine does not fail a working cell; the locks pin what is installed."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_book = _load("build_book")
status = build_book.execution_status()  # book/_ext/execution_status.py, as the build imports it


# -- what the build checks afterwards: CPU time against the limit, never wall time ---------

def test_a_cell_near_its_cpu_limit_fails_the_build_by_name():
    Cell = build_book.CellRecord
    records = [Cell(2, 1.0, 1.0, "x = 1"), Cell(7, 60.0, 108.0, "live_explorer(f, grid)"),
               Cell(9, 130.0, 120.0, "y = 2")]
    failures = build_book.near_limit_failures("book/04_recursive_ibp", records, 120)
    assert len(failures) == 2
    assert failures[0].startswith(
        "book/04_recursive_ibp: cell 7 ('live_explorer(f, grid)') used 108 s of CPU")
    assert "cell 9" in failures[1]


def test_a_cell_long_on_the_clock_but_light_on_cpu_passes():
    """A loaded machine stretches wall time: 500 s on the clock against a 120 s limit passes."""
    records = [build_book.CellRecord(0, 500.0, 107.9, "a"), build_book.CellRecord(1, 0.0, 0.0, "b")]
    assert build_book.near_limit_failures("book/x", records, 120) == []


def test_every_chapter_has_a_limit_and_the_default_is_the_books():
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        docname = f"book/{path.stem}"
        assert build_book.cell_limit(docname) == build_book.front_matter(docname)["mystnb"]["execution_timeout"]
    assert build_book.cell_limit("book/intro") == 120  # _config.yml's execute.timeout


def test_the_build_tools_do_not_import_each_other_in_a_circle():
    """build_book imports execute_chapters; what both need is in chapter_settings."""
    def imports(name):
        text = (ROOT / "tools" / f"{name}.py").read_text()
        return {line.split()[1] for line in text.splitlines()
                if line.startswith(("import ", "from "))}

    assert "execute_chapters" in imports("build_book")
    assert "build_book" not in imports("execute_chapters")
    assert not {"build_book", "execute_chapters"} & imports("chapter_settings")


# -- the stall rule on made-up readings of the kernel's CPU time (no kernel) ---------------

def _watch_reading(cpu_per_second: float, seconds: float, window: float = 30.0):
    """Feed a watch (no kernel: nothing to kill) a kernel gaining ``cpu_per_second``."""
    watch = status.KernelWatch(60, chapter="book/x", stall_window_s=window, poll_s=0.5)
    watch._cell = (4, "fit(X)", 0.0, 0.0)
    watch._samples.append((0.0, 0.0))
    for step in range(1, int(seconds / 0.5) + 1):
        now = step * 0.5
        watch._check(now, cpu_per_second * now)
        if watch.failure:
            return watch, now
    return watch, None


def test_a_kernel_with_a_small_share_of_a_core_is_working_not_stalled():
    # 5% of a core: a single-threaded cell at a load of about 40 on two cores
    watch, failed_at = _watch_reading(0.05, 600)
    assert failed_at is None and watch.failure is None


def test_a_kernel_without_cpu_progress_stalls_within_the_window():
    watch, failed_at = _watch_reading(0.005, 600)
    assert failed_at is not None and 30 <= failed_at <= 31
    assert watch.failure.startswith("book/x: cell 4 ('fit(X)') stalled")


def test_a_kernel_over_its_cpu_limit_fails_by_name():
    watch, failed_at = _watch_reading(2.0, 600)  # two cores busy: 60 s of limit x 2 cores
    assert failed_at is not None and abs(failed_at - status.cpu_limit(60) / 2) <= 0.5
    assert "book/x: cell 4 ('fit(X)') used" in watch.failure and "CPU" in watch.failure


# -- the rule in a real kernel, with a short stall window --------------------------------

def _notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = ([nbformat.v4.new_markdown_cell("# planted")]
                + [nbformat.v4.new_code_cell(source) for source in sources])
    return nb


def _execute(nb, limit, tmp_path, window=1.5):
    from jupyter_cache.executors.utils import single_nb_execution

    started = time.monotonic()
    result = status.timed_execution(single_nb_execution, nb, cwd=str(tmp_path),
                                    allow_errors=False, timeout=limit,
                                    chapter="book/99_planted", stall_window_s=window, poll_s=0.1)
    return result, time.monotonic() - started


def test_a_stalled_cell_fails_fast_naming_chapter_and_cell(tmp_path, monkeypatch):
    """A deadlocked cell (no CPU) fails within seconds, long before its limit."""
    monkeypatch.setattr(status, "WALL_BACKSTOP", 2)  # should the watch miss it: 20 s, not 100
    deadlock = "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()"
    result, seconds = _execute(_notebook("x = 1", deadlock), 10, tmp_path)
    assert result.err is not None
    assert "book/99_planted: cell 2 ('import threading') stalled" in result.exc_string
    assert seconds < 10, seconds  # the old rule failed it at its limit at the earliest


def test_a_slow_working_cell_runs_past_its_limit_on_the_clock(tmp_path):
    """A cell that works at a quarter of a core, as on a loaded machine, passes although
    its wall time is over its (tiny) limit: CPU time, not the clock, meets the limit."""
    loaded = ("import time\n"
              "for _ in range(8):  # 50 ms of CPU, then 150 ms off the core\n"
              "    end = time.process_time() + 0.05\n"
              "    while time.process_time() < end:\n"
              "        pass\n"
              "    time.sleep(0.15)")
    nb = _notebook(loaded)
    result, _ = _execute(nb, 1, tmp_path)
    assert result.err is None, result.exc_string
    record = nb.metadata[status.CELL_RECORD_KEY]["1"]
    assert record["wall_s"] > 1.5 and 0.4 <= record["cpu_s"] < status.cpu_limit(1), record


def test_work_in_a_child_process_is_progress(tmp_path):
    """The kernel waits on a child that works (as on PyMC's chains): not a stall."""
    child = ("import subprocess, sys\n"
             "burn = 'import time\\nend = time.process_time() + 1.5\\nwhile time.process_time() < end: pass'\n"
             "subprocess.run([sys.executable, '-c', burn], check=True)")
    nb = _notebook(child)
    result, _ = _execute(nb, 5, tmp_path, window=1.0)
    assert result.err is None, result.exc_string
    assert nb.metadata[status.CELL_RECORD_KEY]["1"]["cpu_s"] >= 1.5


def test_a_runaway_cell_fails_at_its_cpu_limit(tmp_path):
    result, _ = _execute(_notebook("while True:\n    pass"), 0.25, tmp_path)
    assert result.err is not None
    assert "book/99_planted: cell 1 ('while True:') used" in result.exc_string


def test_nbclients_own_limit_still_raises():
    """The backstop under the watch: a cell still running at nbclient's limit is an error."""
    nb = _notebook("import time; time.sleep(30)")
    with pytest.raises(CellTimeoutError, match="time.sleep"):
        NotebookClient(nb, timeout=2, kernel_name="python3").execute()


def test_a_files_tests_reach_the_scheduler_as_one_group(request):
    """Under ``make test`` (pytest-xdist, ``--dist loadgroup``) each test's node id carries
    its work unit, so one worker runs a whole file and its module fixtures once. pytest 9.2
    with pytest-xdist 3.8 dropped the suffix silently (the node id became read-only) and a
    file's tests, campaign groups included, were spread over both workers and run twice."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@tests/test_build_tools.py"), request.node.nodeid


def test_the_shipped_lab_settings_ask_nothing_of_the_network():
    """No news pop-up on a student's first open, and no request to a website (offline)."""
    import json
    from pathlib import Path

    overrides = json.loads((Path(__file__).resolve().parent.parent / "binder"
                            / "jupyterlab-overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_the_lock_pins_every_direct_requirement_at_its_version():
    """requirements.txt reads requirements.lock as constraints; the two agree on every pin."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    direct = [line.strip() for line in (root / "requirements.txt").read_text().splitlines()
              if re.match(r"[A-Za-z0-9]", line)]
    lock_lines = [line.strip() for line in (root / "requirements.lock").read_text().splitlines()
                  if line.strip() and not line.startswith("#")]
    assert "-c requirements.lock" in (root / "requirements.txt").read_text()
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", line) for line in lock_lines)

    def norm(pin):  # pip's name normalisation: case, '-', '_' and '.' alike
        name, version = pin.split("==")
        return re.sub(r"[-_.]+", "-", name).lower(), version

    locked = dict(norm(line) for line in lock_lines)
    for pin in direct:
        name, version = norm(pin)
        assert locked.get(name) == version, f"{pin}: the lock says {locked.get(name)}"


def _pins(name: str) -> dict[str, str]:
    """``{normalised name: version}`` of a lock file's ``name==version`` lines."""
    import re

    lines = [line.strip() for line in (ROOT / name).read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", line) for line in lines), name
    return dict(_normalised(line) for line in lines)


def _normalised(pin: str) -> tuple[str, str]:  # pip's name normalisation: case, '-', '_', '.'
    import re

    name, version = pin.split("==")
    return re.sub(r"[-_.]+", "-", name).lower(), version


def test_the_dev_lock_pins_every_test_tool_at_its_version():
    """requirements-dev.txt reads requirements-dev.lock as constraints; the two agree, and
    the dev lock holds only what the runtime lock does not (one version per package)."""
    text = (ROOT / "requirements-dev.txt").read_text()
    assert "-c requirements-dev.lock" in text.splitlines()
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    assert not set(runtime) & set(dev), sorted(set(runtime) & set(dev))
    for pin in (line.strip() for line in text.splitlines() if line[:1].isalnum()):
        name, version = _normalised(pin)
        assert dev.get(name) == version, f"{pin}: the dev lock says {dev.get(name)}"


def test_the_environment_is_exactly_the_two_locks():
    """What `make test` installed (every distribution but pip's own tools and the editable
    package) is pinned by requirements.lock or requirements-dev.lock at its version, and
    every pin is installed: nothing floats."""
    from importlib.metadata import distributions

    locked = {**_pins("requirements.lock"), **_pins("requirements-dev.lock")}
    unpinned = {"pip", "setuptools", "wheel", "ibp-lab"}  # what pip freeze leaves out
    installed = {}
    for dist in distributions():
        name, _ = _normalised(f"{dist.metadata['Name']}==")
        if name not in unpinned:
            installed[name] = dist.version
    differ = {n: (v, locked.get(n)) for n, v in installed.items() if locked.get(n) != v}
    assert not differ, f"installed (version, locked version) not as locked: {differ}"
    missing = set(locked) - set(installed)
    assert not missing, f"locked, not installed: {sorted(missing)}"
