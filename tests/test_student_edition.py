"""The student edition keeps every exercise and drops every solution."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jupytext
import nbformat
import pytest

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


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_executes_without_the_solutions(chapter, tmp_path):
    """No later cell may depend on a removed solution: each student notebook runs cleanly."""
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "_build" / "student" / f"{chapter.stem}.ipynb", as_version=4)
    NotebookClient(notebook, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
