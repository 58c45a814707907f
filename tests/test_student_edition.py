"""The student edition keeps every exercise and drops every solution."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))

spec = importlib.util.spec_from_file_location("student_edition", ROOT / "tools" / "student_edition.py")
student_edition = importlib.util.module_from_spec(spec)
spec.loader.exec_module(student_edition)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_solutions_are_removed_and_exercises_kept(chapter):
    source = chapter.read_text()
    student = student_edition.strip_solutions(source)
    assert "{solution" not in student
    assert student.count("```{exercise}") == source.count("```{exercise}") > 0
    notebook = jupytext.reads(student, fmt="myst")
    assert not [c for c in notebook.cells if "solution" in c.metadata.get("tags", [])]
    # everything that is not a solution survives: same number of non-solution code cells
    full = jupytext.reads(source, fmt="myst")
    kept = [c for c in full.cells if c.cell_type == "code" and "solution" not in c.metadata.get("tags", [])]
    assert len([c for c in notebook.cells if c.cell_type == "code"]) == len(kept)


def test_make_student_wrote_valid_notebooks():
    outdir = ROOT / "_build" / "student"
    if not outdir.exists():
        pytest.fail("_build/student is missing: `make test` runs `make student` first")
    for chapter in CHAPTERS:
        notebook = nbformat.read(outdir / f"{chapter.stem}.ipynb", as_version=4)
        nbformat.validate(notebook)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")


# Executes one student notebook in a fresh kernel, with the chapter's own per-cell limit,
# and prints what went wrong as JSON (a list of error names, empty when clean).
_EXECUTE = """
import json, sys
import nbformat
from nbclient import NotebookClient
path, timeout, cwd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nb = nbformat.read(path, as_version=4)
try:
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
    problems = [o.get("ename", "error") for c in nb.cells if c.cell_type == "code"
                for o in c.get("outputs", []) if o.get("output_type") == "error"]
except Exception as exc:
    problems = [f"{type(exc).__name__}: {str(exc)[:2000]}"]
print(json.dumps(problems))
"""


def _chapter_limit(chapter: Path) -> int:
    front = yaml.safe_load(chapter.read_text().split("---", 2)[1])
    return int(front["mystnb"]["execution_timeout"])


@pytest.fixture(scope="module")
def student_runs(tmp_path_factory) -> dict:
    """Every student notebook executed once, two at a time (the machine has two cores and each
    kernel mostly uses one), each in its own process and working folder."""
    import json
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    def run(chapter: Path):
        cwd = tmp_path_factory.mktemp(chapter.stem)
        out = subprocess.run(
            [sys.executable, "-c", _EXECUTE, str(ROOT / "_build" / "student" / f"{chapter.stem}.ipynb"),
             str(_chapter_limit(chapter)), str(cwd)],
            capture_output=True, text=True, check=False)
        try:
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return [f"the executing process ended with {out.returncode}: {out.stderr[-2000:]}"]

    with ThreadPoolExecutor(2) as pool:  # threads only wait on the processes
        return dict(zip(CHAPTERS, pool.map(run, CHAPTERS)))


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_executes_without_the_solutions(chapter, student_runs):
    """No later cell may depend on a removed solution: each student notebook runs cleanly."""
    assert student_runs[chapter] == [], student_runs[chapter]
