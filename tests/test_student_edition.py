"""The student edition keeps every exercise and drops every solution, and runs: its code is
exactly what JupyterLab's Run All executes (tests/test_lab.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from ibp_lab.teaching.lab import SOLUTION_MARKER

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


def _code_sources(notebook) -> list[str]:
    return [c.source.strip() for c in notebook.cells if c.cell_type == "code"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_student_edition_is_what_jupyterlab_runs(chapter):
    """The student notebook's code is the chapter's code without the cells JupyterLab skips.

    JupyterLab's Run All of a chapter (tests/test_lab.py, in a student's kernel: no
    ``IBP_LAB_BOOK_BUILD``) executes every code cell except those whose first line is
    ``SOLUTION_MARKER``, which the kernel skips, and fails on any error output. When the
    student edition holds exactly those cells, in that order, that run is also a run of the
    student edition: a later cell that needed a removed solution fails there. So the student
    notebooks are not executed a second time.
    """
    source = chapter.read_text()
    lab = jupytext.reads(source, fmt="myst")
    runs = [s for s in _code_sources(lab) if s.splitlines()[0] != SOLUTION_MARKER]
    student = nbformat.read(ROOT / "_build" / "student" / f"{chapter.stem}.ipynb", as_version=4)
    assert _code_sources(student) == runs
    # and every solution code cell is one the kernel skips
    solutions = [c for c in lab.cells if c.cell_type == "code"
                 and "solution" in c.metadata.get("tags", [])]
    assert all(c.source.splitlines()[0] == SOLUTION_MARKER for c in solutions)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_is_in_the_form_jupyterlab_reads(chapter):
    """No myst-nb glue, no explorer of the old two-call form: quoted numbers are ``quote``
    and ``{eval}``, which JupyterLab renders, and each explorer is one ``explorer(...)``."""
    source = chapter.read_text()
    assert "{glue" not in source and "myst_nb" not in source
    assert not re.search(r"\bglue\(", source)
    assert "live_explorer(" not in source and "static_explorer(" not in source
