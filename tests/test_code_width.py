"""Code cells fit the rendered page: a pure-text check of the chapter sources.

It needs no built book and no browser, so it runs in the fast tier (``make check``);
``tests/test_site.py`` checks the same thing on the rendered pages in chromium.
"""

from __future__ import annotations

from tests.book_pages import ROOT, toc_pages

#: Widest code-cell line, in characters: the rendered code block of a 1280-px window holds
#: 75 characters of the theme's 14-px monospace font (measured with chromium: 634 px of text
#: width at 8.43 px per character); inside a solution's drop-down it holds 74. Hidden cells
#: count too: a reader may open them.
MAX_CODE_WIDTH = 75
MAX_SOLUTION_CODE_WIDTH = 74


def code_cell_lines(text: str, *, solutions: bool | None = None):
    """Yield (line number, line) of every line inside a ``{code-cell}`` block of a MyST page.

    ``solutions`` True (False) keeps only the cells inside (outside) a solution's
    ``{solution-start}`` .. ``{solution-end}`` block; None keeps all.
    The cell's options (a ``---`` YAML block first in the cell, or ``:key:`` lines) are
    not code: the page shows a caption as text, not in the code block.
    """
    inside = in_solution = in_options = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```{solution-start}"):
            in_solution = True
        elif line.startswith("```{solution-end}"):
            in_solution = False
        if line.startswith("```{code-cell}"):
            inside, first = True, True
        elif inside and line.startswith("```"):
            inside = False
        elif inside:
            if first and line == "---":
                in_options = True
            elif in_options:
                in_options = line != "---"
            elif solutions in (None, in_solution) and not (first and line.startswith(":")):
                yield number, line
            first = first and line.startswith(":")


def test_code_cell_lines_fit_the_rendered_page():
    wide = [
        f"{page}.md:{number} ({len(line)} characters)"
        for page in toc_pages()
        for in_solution, limit in ((False, MAX_CODE_WIDTH), (True, MAX_SOLUTION_CODE_WIDTH))
        for number, line in code_cell_lines((ROOT / f"{page}.md").read_text(),
                                            solutions=in_solution)
        if len(line) > limit
    ]
    assert wide == [], (f"code lines wider than {MAX_CODE_WIDTH} characters "
                        f"({MAX_SOLUTION_CODE_WIDTH} in a solution): {wide}")


def test_code_cell_line_finder_sees_wide_lines():
    page = "```{code-cell} ipython3\nx = 1\n" + "y" * 80 + "\n```\ntext " + "z" * 90 + "\n"
    assert [(n, len(line)) for n, line in code_cell_lines(page)] == [(2, 5), (3, 80)]
    solved = "```{solution-start} ex\n```\n" + page + "```{solution-end}\n```\n"
    assert [n for n, _ in code_cell_lines(solved, solutions=True)] == [4, 5]
    assert list(code_cell_lines(solved, solutions=False)) == []
    options = ("```{code-cell} ipython3\n---\nmystnb:\n  caption: " + "c" * 90
               + "\n---\nx = 1\n```\n```{code-cell} ipython3\n:tags: [hide-input]\n\n"
               + "w" * 80 + "\n```\n")
    assert [(n, len(line)) for n, line in code_cell_lines(options)] == [(6, 5), (10, 0), (11, 80)]
