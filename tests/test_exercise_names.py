"""Every name an exercise mentions works in the chapter's kernel.

A student who reads "run `gibbs.k_plus_trace`" in an exercise types it into the chapter's
kernel, where only what the chapter imported is bound: if the imports cell bound
``k_plus_trace`` from ``ibp_lab.inference.gibbs`` but not the module ``gibbs``, the first line
raises ``NameError``. For every chapter this test runs the imports of the imports cell (its
first code cell) in a fresh namespace, without executing the chapter, and checks

- each dotted name (``module.function``) and each called name (``f(...)``) in the inline
  code of an exercise's text: its first part is bound by the imports cell, or by a cell
  of the chapter the student runs (an assignment, a definition or an import); where it is
  a module or another object bound by an import, every further part is an attribute;
- each such name in a solution's code, where the solution's own imports count too.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))

_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_EXERCISE = re.compile(r"^(`{3,})\{exercise\}[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
_SOLUTION = re.compile(r"^```\{solution-start\}.*?^```\{solution-end\}", re.S | re.M)
_INLINE_CODE = re.compile(r"(?<![`{}\w])`([^`\n]+)`")
# a dotted name, or a name followed by "(": what a student would type and run
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")


def _cell_code(cell: str) -> str:
    """A code cell's Python: its YAML header and IPython magics removed."""
    lines = cell.split("\n")
    if lines and lines[0].strip() == "---":  # options as a YAML block
        lines = lines[1 + lines[1:].index("---") + 1:]
    while lines and lines[0].startswith(":"):  # options as ":key: value" lines
        lines = lines[1:]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def _cells(text: str) -> list[str]:
    return [_cell_code(match.group(1)) for match in _CODE_CELL.finditer(text)]


def _solution_cells(text: str) -> list[str]:
    return [cell for block in _SOLUTION.findall(text) for cell in _cells(block)]


def _bound_names(code: str) -> set[str]:
    """Every name a piece of code binds (assignment, def, class, argument, import)."""
    bound = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def _imports_only(code: str) -> str:
    """The import statements of a piece of code, at any depth, as code."""
    return "\n".join(ast.unparse(node) for node in ast.walk(ast.parse(code))
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def _used_names(code: str) -> set[str]:
    """The called and dotted names a piece of code uses (``f`` of ``f(...)``, ``a.b.c``)."""
    def dotted(node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None

    used = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            used.add(node.func.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = dotted(node)
            if name is not None:
                used.add(name)
    return used


def _unresolved(name: str, imported: dict, bound: set[str]) -> str | None:
    """Why ``name`` fails in the chapter's kernel, or None when it works.

    Its first part must be in ``imported`` (run imports), a builtin, or in ``bound``
    (names the chapter's cells bind at run time, whose attributes cannot be checked
    without running them).
    """
    head, *rest = name.split(".")
    if head in imported:
        value = imported[head]
    elif hasattr(builtins, head):
        value = getattr(builtins, head)
    elif head in bound:
        return None
    else:
        return f"{name}: {head!r} is not bound in the chapter's kernel"
    for depth, attribute in enumerate(rest):
        if not hasattr(value, attribute):
            return f"{name}: {'.'.join([head, *rest[:depth]])} has no attribute {attribute!r}"
        value = getattr(value, attribute)
    return None


def _run_imports_cell(text: str) -> dict:
    """The namespace the imports cell (the chapter's first code cell) builds by importing.

    Only its import statements run: the rest of the cell (a warm-up that compiles numba's
    kernels, settings) binds names the student's cells bind too, which ``_bound_names``
    counts, and would make this test slow.
    """
    namespace: dict = {}
    exec(compile(_imports_only(_cells(text)[0]), "<imports cell>", "exec"), namespace)
    return namespace


def _problems(text: str) -> list[str]:
    imported = _run_imports_cell(text)
    solutions = _solution_cells(text)
    student_cells = [cell for cell in _cells(text) if cell not in solutions]
    bound = set().union(*map(_bound_names, student_cells))
    later_imports: dict = {}
    for cell in student_cells[1:]:
        exec(_imports_only(cell), later_imports)
    known = {**later_imports, **imported}

    problems = []
    for _, body in _EXERCISE.findall(text):
        for span in _INLINE_CODE.findall(body):
            names = set(_DOTTED.findall(span)) | set(_CALLED.findall(span))
            problems += [f"exercise text: {why}" for name in sorted(names)
                         if (why := _unresolved(name, known, bound))]
    for cell in solutions:
        own: dict = dict(known)
        exec(_imports_only(cell), own)
        problems += [f"solution code: {why}" for name in sorted(_used_names(cell))
                     if (why := _unresolved(name, own, bound | _bound_names(cell)))]
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_name_an_exercise_mentions_is_bound(chapter):
    problems = _problems(chapter.read_text())
    assert not problems, (f"{chapter.name}: names its exercises use that its kernel lacks "
                          "(import them in the imports cell):\n" + "\n".join(problems))


def test_the_check_catches_an_unimported_module():
    page = ("```{code-cell} ipython3\nfrom ibp_lab.inference.gibbs import gibbs_sweep\n```\n\n"
            "```{exercise}\n:label: ex-x\n\nRun `gibbs.k_plus_trace` and "
            "`gibbs_sweep(X, Z)`, then `prior.no_such_function`.\n```\n\n"
            "```{solution-start} ex-x\n```\n\n```{code-cell} ipython3\n"
            "from ibp_lab.models import prior\nZ = prior.sample_ibp(1.0, 3, rng)\n"
            "prior.not_there(Z)\nundefined_helper(Z)\n```\n\n```{solution-end}\n```\n")
    problems = _problems(page)
    assert any("gibbs.k_plus_trace" in p and "'gibbs' is not bound" in p for p in problems)
    assert any("prior.no_such_function" in p for p in problems)  # prior: the solution's own
    assert any("prior.not_there" in p and "no attribute" in p for p in problems)
    assert any("undefined_helper" in p for p in problems)
    assert not any("gibbs_sweep" in p or "sample_ibp" in p for p in problems)


NUMBER_WORDS = {"Two": 2, "Three": 3, "Four": 4, "Five": 5, "Six": 6, "Seven": 7,
                "Eight": 8, "Nine": 9, "Ten": 10, "Eleven": 11, "Twelve": 12}


def test_the_introduction_counts_the_self_checking_exercises():
    from ibp_lab.teaching import exercises

    checks = [name for name in exercises.__all__ if name.startswith("check_")]
    intro = (ROOT / "book" / "intro.md").read_text()
    stated = re.search(r"^(\w+) exercises check themselves", intro, re.M)
    assert stated and NUMBER_WORDS.get(stated.group(1)) == len(checks), (
        f"book/intro.md says {stated and stated.group(1)!r} exercises check themselves; "
        f"ibp_lab.teaching.exercises has {len(checks)} checks: {checks}")
    chapters = "".join(path.read_text() for path in CHAPTERS)
    unused = [name for name in checks if f"{name}(" not in chapters]
    assert not unused, f"checks no chapter's exercise calls: {unused}"
