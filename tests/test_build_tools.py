"""The build's own checks (tools/build_book.py), on made-up records: a stall cannot pass."""

from __future__ import annotations

import importlib.util
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


def test_a_cell_that_used_its_limit_fails_the_build_by_name():
    times = [(2, 1.0, "x = 1"), (7, 54.5, "live_explorer(f, grid)"), (9, 60.0, "y = 2")]
    failures = build_book.stall_failures("book/04_recursive_ibp", times, 60)
    assert len(failures) == 2
    assert "book/04_recursive_ibp: cell 7 ('live_explorer(f, grid)')" in failures[0]
    assert "cell 9" in failures[1]


def test_cells_well_inside_their_limit_pass():
    assert build_book.stall_failures("book/x", [(0, 53.9, "a"), (1, 0.0, "b")], 60) == []


def test_every_chapter_has_a_limit_and_the_default_is_the_books():
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        docname = f"book/{path.stem}"
        assert build_book.cell_limit(docname) == build_book.front_matter(docname)["mystnb"]["execution_timeout"]
    assert build_book.cell_limit("book/intro") == 120  # _config.yml's execute.timeout


def test_a_cell_past_its_limit_raises_in_nbclient():
    """The other half of the guarantee: a cell still running at the limit is an error."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import time; time.sleep(30)")]
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
