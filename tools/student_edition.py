"""Write the student edition: every chapter as a notebook, exercise solutions removed.

Solutions are written between ``{solution-start}`` and ``{solution-end}`` fences
(sphinx-exercise's gated syntax), so everything from the opening fence of a
``solution-start`` directive to the closing fence of the matching
``solution-end`` is dropped; any cell tagged ``solution`` that stands elsewhere
is dropped too. The result goes to ``_build/student/`` as ``.ipynb`` files
(without outputs), ready to hand out, plus the MyST sources.

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


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    written = 0
    for source in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        student = strip_solutions(source.read_text())
        if "{solution" in student:
            sys.exit(f"{source.name}: a solution block was not removed (unbalanced fences?)")
        (outdir / source.name).write_text(student)
        jupytext.write(jupytext.reads(student, fmt="myst"), outdir / f"{source.stem}.ipynb")
        written += 1
    print(f"student edition: {written} chapters in {outdir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "student")
