"""Write the student edition: every chapter as a notebook, exercise solutions removed, and
every problem set without its key.

Solutions are written between ``{solution-start}`` and ``{solution-end}`` fences
(sphinx-exercise's gated syntax), so everything from the opening fence of a
``solution-start`` directive to the closing fence of the matching
``solution-end`` is dropped; any cell tagged ``solution`` that stands elsewhere
is dropped too. The chapters go to ``_build/student/`` as ``.ipynb`` files
(without outputs), ready to hand out, plus the MyST sources; the problem sets
(``book/problems/*.md``, plain Markdown pages) go to ``_build/student/problems/``
as Markdown, their keys and marking notes (the same gated blocks) cut out and
nothing else changed.

Usage: ``python tools/student_edition.py [OUTDIR]`` (``make student``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_BLOCK = re.compile(
    r"^(?P<fence>`{3,})\{solution-start\}.*?^(?P=fence)\{solution-end\}\s*\n(?P=fence)[ \t]*\n?",
    re.MULTILINE | re.DOTALL,
)


def strip_solutions(text: str) -> str:
    """Remove gated solution blocks from a MyST notebook's text."""
    text = SOLUTION_BLOCK.sub("", text)
    notebook = jupytext.reads(text, fmt="myst")
    notebook.cells = [c for c in notebook.cells if "solution" not in c.metadata.get("tags", [])]
    return jupytext.writes(notebook, fmt="myst")


def is_notebook_text(text: str) -> bool:
    """True for a MyST notebook (front matter with a kernelspec), False for a plain page.

    >>> is_notebook_text("---\\nkernelspec:\\n  name: python3\\n---\\n# A\\n"), is_notebook_text("# A\\n")
    (True, False)
    """
    return text.startswith("---") and "kernelspec:" in text.split("---", 2)[1]


def student_version(text: str) -> str:
    """The page as a student gets it: a notebook through :func:`strip_solutions`; a plain
    Markdown page with its gated solution blocks cut out and nothing else changed (a
    round trip through jupytext would give it a notebook's header).

    Raises ``ValueError`` when a solution fence is left (an unbalanced block), rather
    than hand out a key.

    >>> page = "# P\\n\\n```{solution-start} q\\n```\\nkey\\n```{solution-end}\\n```\\nafter\\n"
    >>> student_version(page)
    '# P\\n\\nafter\\n'
    """
    student = strip_solutions(text) if is_notebook_text(text) else SOLUTION_BLOCK.sub("", text)
    if "{solution" in student:
        raise ValueError("a solution block was not removed (unbalanced fences?)")
    return student


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    written = 0
    for source in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        try:
            student = student_version(source.read_text())
        except ValueError as error:
            sys.exit(f"{source.name}: {error}")
        (outdir / source.name).write_text(student)
        jupytext.write(jupytext.reads(student, fmt="myst"), outdir / f"{source.stem}.ipynb")
        written += 1
    problems = sorted((ROOT / "book" / "problems").glob("*.md"))
    if problems:
        (outdir / "problems").mkdir(exist_ok=True)
    for source in problems:
        try:
            student = student_version(source.read_text())
        except ValueError as error:
            sys.exit(f"problems/{source.name}: {error}")
        (outdir / "problems" / source.name).write_text(student)
    print(f"student edition: {written} chapters and {len(problems)} problem sets in {outdir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "student")
