"""Build the student web edition: the book without solutions, keys or marking notes
(``make student-web``), into ``_build/student-html``, ready for a course site to host.

The same book as ``make book`` builds, rendered again from its execution cache (nothing
runs again) with ``tools/solution_filter.py``, which removes every solution from the
parsed pages: the worked answers, their code cells and outputs, the problem sets' keys and
marking notes. It builds with ``-W``, as the book does (``tools/editions.py`` for the
configuration and the build folder, ``_build/editions/student-web``).

What the HTML builder copies from the sources is replaced afterwards, since it would hand
the solutions out again: each page's "download" files, ``_sources/<page>.md`` and, for a
chapter, ``_sources/<page>.ipynb``, become the student edition's text
(``tools/student_edition.py``) and a notebook of it with the book's outputs (those of the
cells it keeps).

``--no-execute`` renders without outputs (layout work while the cache is stale; glue
warnings tolerated) into ``--path-output`` and copies nothing to ``_build/student-html``.

Usage: ``python tools/build_student_web.py [--no-execute] [--path-output DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from editions import (  # noqa: E402
    BUILD, EDITIONS, ROOT, STUDENT_TITLE, WITHOUT_OUTPUTS, chapters_in_toc, edition_config,
    failing_warnings, require_cached_chapters, run_jupyter_book)
from student_edition import student_version  # noqa: E402

STUDENT_HTML = BUILD / "student-html"


def student_notebook(student_text: str, full_notebook):
    """The student page as a notebook, each kept code cell with the book's outputs.

    The student's code cells are the book's minus the solutions, in the same order
    (``tests/test_student_edition.py``), so each takes the outputs of the next book cell
    with the same source.
    """
    import jupytext

    notebook = jupytext.reads(student_text, fmt="myst")
    book_cells = iter(c for c in full_notebook.cells if c.cell_type == "code")
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        match = next((c for c in book_cells if c.source.strip() == cell.source.strip()), None)
        if match is None:
            raise ValueError(f"no cell of the book matches the student cell {cell.source[:60]!r}")
        cell.outputs = match.get("outputs", [])
        cell.execution_count = match.get("execution_count")
    return notebook


def replace_downloads(html: Path) -> int:
    """Overwrite the pages' source downloads in ``html/_sources`` with the student text;
    the number of files written. A download of a page that is not in the book's table of
    contents stops the build (it could not be checked)."""
    import nbformat

    written = 0
    sources = html / "_sources"
    for docname in chapters_in_toc():
        text = student_version((ROOT / f"{docname}.md").read_text())
        md = sources / f"{docname}.md"
        if md.exists():
            md.write_text(text)
            written += 1
        ipynb = sources / f"{docname}.ipynb"
        if ipynb.exists():
            full = nbformat.read(ipynb, as_version=4)
            nbformat.write(student_notebook(text, full), ipynb)
            written += 1
    known = {f"{d}{s}" for d in chapters_in_toc() for s in (".md", ".ipynb")}
    strays = [p for p in sources.rglob("*") if p.is_file()
              and p.relative_to(sources).as_posix().removesuffix(".txt") not in known]
    if strays:
        sys.exit(f"unexpected source downloads in the student site: {strays[:5]}")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--no-execute", action="store_true",
                        help="render without outputs (the cache is not read)")
    parser.add_argument("--path-output", type=Path, default=EDITIONS / "student-web",
                        help="build folder (default _build/editions/student-web)")
    args = parser.parse_args(argv)
    execute = not args.no_execute
    if execute:
        require_cached_chapters()
    config = edition_config(student=True, execute=execute, title_suffix=STUDENT_TITLE)
    status, log = run_jupyter_book(config, args.path_output, "html",
                                   warnings_are_errors=execute)
    if status != 0:
        sys.exit(f"the student web edition failed to build (exit {status}); see above")
    failing = [] if execute else failing_warnings(log, WITHOUT_OUTPUTS)  # -W did it otherwise
    if failing:
        sys.exit("warnings of the student web build:\n" + "\n".join(failing))
    html = args.path_output / "_build" / "html"
    written = replace_downloads(html)
    print(f"student web edition: {written} source downloads replaced by the student text")
    if execute:
        shutil.rmtree(STUDENT_HTML, ignore_errors=True)
        shutil.copytree(html, STUDENT_HTML)
        print(f"student web edition: {STUDENT_HTML / 'index.html'}")


if __name__ == "__main__":
    main()
