"""The book's other editions, as ``make test`` builds them after the book: the student web
edition (``make student-web``, ``_build/student-html``) and the PDFs (``make pdf``,
``_build/latex/ibp-lab.pdf`` and ``ibp-lab-student.pdf``).

No browser: these read the built files (HTML as text, the PDFs through poppler's
``pdftotext``). They carry the ``browser`` marker all the same, as the other tests of built
output do (``tests/test_site.py``), so that ``make check``, which builds nothing, leaves
them out; the checks of the tools themselves, which need no build, run in both tiers.

Every "not there" check has its control: the text looked for in the student edition is
first found in the full one (the book's ``_build/html``, the full PDF), so a check that
looks for the wrong thing fails instead of passing.
"""

from __future__ import annotations

import html
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ibp_lab.teaching.lab import SOLUTION_MARKER
from tests.book_pages import toc_pages

ROOT = Path(__file__).resolve().parent.parent
FULL_HTML = ROOT / "_build" / "html"
STUDENT_HTML = ROOT / "_build" / "student-html"
PDF_DIR = ROOT / "_build" / "latex"
built = pytest.mark.browser  # the tier of the tests of built output (module docstring)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


student_edition = _load("student_edition")
build_pdf = _load("build_pdf")
solution_filter = _load("solution_filter")


def words(text: str) -> str:
    """Lower-case words and numbers, one space apart: what survives any rendering.

    >>> words("Its *mean*,\\n  `alpha_k` = 2.5!")
    'its mean alpha k 2 5'
    """
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def html_text(path: Path) -> str:
    """The visible text of an HTML file (scripts and styles dropped, entities decoded)."""
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", path.read_text(errors="replace"))
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


#: What a page shows in another form than its source: math, a role, a link, HTML, a table
#: cell's border. A probe is a run of words between these.
MARKUP = re.compile(r"\$[^$]*\$|\{[^}]*\}`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]*>|[$\\{}<>|]")


def plain_runs(line: str, least: int = 6) -> list[str]:
    """The runs of at least ``least`` words of a source line that render as those words.

    >>> plain_runs("So the sum of $x_i$ over the rows is the count of ones in the matrix.")
    ['over the rows is the count of ones in the matrix']
    """
    return [w for w in map(words, MARKUP.split(line)) if len(w.split()) >= least]


def prose_lines(block: str) -> list[str]:
    """The lines of a solution block that are prose: not its fences, options or code cells.

    Code is left out: its lines recur in the API reference and in outputs, and a solution's
    code cell is found by its first line instead (``SOLUTION_MARKER``).

    >>> prose_lines("```{solution-start} e\\n:class: dropdown\\n```\\nSo x is 2.\\n"
    ...             "```{code-cell} ipython3\\nprint(2)\\n```\\n```{solution-end}\\n```\\n")
    ['So x is 2.']
    """
    prose, in_code = [], False
    for line in block.splitlines():
        if line.startswith("```{code-cell}"):
            in_code = True
        elif in_code and line.startswith("```"):
            in_code = False
        elif not in_code and not line.startswith((":", "```", "---")):
            prose.append(line)
    return prose


def solution_probes() -> dict[str, list[str]]:
    """For each solution block of each page (``page:offset``), the runs of prose that only
    a solution holds, as :func:`words`.

    A probe is a run of six words or more of a prose line that renders as those words
    (:func:`plain_runs`) and occurs in no page of the student edition (so an exercise's wording that a solution repeats is not
    taken for a leak).
    """
    pages = {page: (ROOT / f"{page}.md").read_text() for page in toc_pages()}
    student_words = " ".join(words(student_edition.student_version(t)) for t in pages.values())
    probes = {}
    for page, text in pages.items():
        for block in student_edition.SOLUTION_BLOCK.finditer(text):
            runs = [run for line in prose_lines(block.group(0)) for run in plain_runs(line)]
            kept = [run for run in runs if run not in student_words]
            if kept:
                probes[f"{page}:{block.start()}"] = kept
    return probes


def test_every_solution_block_has_probes():
    """The leak checks below look for these; a block without any would go unchecked."""
    probes = solution_probes()
    blocks = sum(len(list(student_edition.SOLUTION_BLOCK.finditer((ROOT / f"{p}.md").read_text())))
                 for p in toc_pages())
    assert blocks >= 50
    # a block of math and code only has none (one of 68 when this was written)
    assert len(probes) >= 0.9 * blocks, f"{blocks - len(probes)} blocks without a probe"


def test_the_solution_filter_recognises_solutions_only():
    from docutils import nodes
    from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

    for node in (solution_node(), solution_start_node(), solution_end_node(),
                 nodes.container(classes=["cell", "tag_solution"])):
        assert solution_filter.is_solution(node)
    for node in (nodes.container(classes=["cell", "tag_hide-input"]), nodes.paragraph(),
                 nodes.admonition(classes=["exercise"])):
        assert not solution_filter.is_solution(node)


def test_the_tex_log_check_fails_on_lost_content_only():
    log = ("Missing character: There is no \u26a0 (U+26A0) in font FreeSerif/OT:script=latn;lan\n"
           "LaTeX Warning: Reference `book/x:fig' on page 3 undefined on input line 9.\n"
           "Overfull \\hbox (2.3pt too wide) in paragraph at lines 1--2\n"
           "Package hyperref Warning: Token not allowed in a PDF string (Unicode):\n")
    failures, notes = build_pdf.tex_log_problems(log, execute=True)
    assert len(failures) == 2 and failures[0].startswith("Missing character")
    assert notes == {"overfull boxes": 1, "underfull boxes": 0, "PDF-bookmark notes": 1}
    # without outputs the figures' references are missing by design; a lost glyph is not
    assert len(build_pdf.tex_log_problems(log, execute=False)[0]) == 1
    assert build_pdf.tex_log_problems(log.split("\n", 1)[1].replace("Reference", "Nothing"),
                                      execute=True)[0] == []


# -- the student web edition (make student-web) -------------------------------------------

@pytest.fixture(scope="module")
def student_site() -> dict[str, str]:
    """Page (``book/01_buffet``) -> visible text, and ``*`` -> everything the site serves
    as text (pages, search index, source downloads)."""
    if not (STUDENT_HTML / "index.html").exists():
        pytest.fail("_build/student-html is missing: `make student-web` (make test runs it)")
    pages = {page: html_text(STUDENT_HTML / f"{page}.html") for page in toc_pages()
             if (STUDENT_HTML / f"{page}.html").exists()}
    served = [p for p in STUDENT_HTML.rglob("*")
              if p.suffix in {".html", ".js", ".md", ".ipynb", ".txt", ".json"}
              and "_static" not in p.parts]
    pages["*"] = " ".join(p.read_text(errors="replace") for p in served)
    return pages


@built
def test_the_student_site_has_every_page(student_site):
    missing = [page for page in toc_pages() if page not in student_site]
    assert not missing, f"pages missing from the student site: {missing}"
    for page in toc_pages():
        title = next(line[2:] for line in (ROOT / f"{page}.md").read_text().splitlines()
                     if line.startswith("# "))
        assert words(title) in words(student_site[page]), page


@built
def test_the_student_site_keeps_the_exercises_and_drops_the_solutions():
    exercises = solutions = 0
    for page in toc_pages():
        full = (FULL_HTML / f"{page}.html").read_text()
        student = (STUDENT_HTML / f"{page}.html").read_text()
        count = len(re.findall(r'class="exercise[\s"]', full))
        assert len(re.findall(r'class="exercise[\s"]', student)) == count, page
        exercises += count
        solutions += len(re.findall(r'class="solution[\s"]', full))
        assert not re.search(r'class="solution[\s"]', student), page
        assert "tag_solution" not in student, page
    assert exercises >= 50 and solutions >= 50  # the control: the book has both


@built
def test_no_solution_text_is_served_by_the_student_site(student_site):
    """Not in a page, the search index or a download: each probe is first found in the
    book's own site (the control), then looked for in the student site."""
    full = words(" ".join(html_text(FULL_HTML / f"{page}.html") for page in toc_pages()))
    served = words(student_site["*"])
    unseen, leaks = [], []
    for block, probes in solution_probes().items():
        if not any(p in full for p in probes):
            unseen.append(block)
        leaks += [f"{block}: {p!r}" for p in probes if p in served]
    assert len(unseen) <= 0.1 * len(solution_probes()), f"probes not in the book: {unseen}"
    assert not leaks, "solution text in the student site:\n" + "\n".join(leaks[:10])


@built
def test_the_student_downloads_are_the_student_edition():
    import nbformat

    sources = STUDENT_HTML / "_sources"
    notebooks = sorted(sources.rglob("*.ipynb"))
    assert len(notebooks) >= 14
    for path in sorted(sources.rglob("*.md")):
        assert "{solution" not in path.read_text(), path
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert not [c for c in code if c.source.startswith(SOLUTION_MARKER)], path
        if path.stem[:2].isdigit():  # a chapter: the book's outputs came along
            assert any(c.get("outputs") for c in code), path


# -- the PDF editions (make pdf) ------------------------------------------------------------

@pytest.fixture(scope="module")
def pdf_text() -> dict[str, str]:
    """Edition -> the PDF's text by ``pdftotext`` (poppler-utils, installed by make tex)."""
    if shutil.which("pdftotext") is None:
        pytest.fail("pdftotext is missing: `make tex` installs poppler-utils")
    texts = {}
    for edition, (name, _) in build_pdf.PDF_EDITIONS.items():
        pdf = PDF_DIR / f"{name}.pdf"
        if not pdf.exists():
            pytest.fail(f"{pdf.relative_to(ROOT)} is missing: `make pdf` (make test runs it)")
        texts[edition] = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"],
                                        capture_output=True, text=True, check=True).stdout
    return texts


@built
@pytest.mark.parametrize("edition", list(build_pdf.PDF_EDITIONS))
def test_the_pdf_holds_every_chapter_title(pdf_text, edition):
    text = words(pdf_text[edition])
    for page in toc_pages():
        title = next(line[2:] for line in (ROOT / f"{page}.md").read_text().splitlines()
                     if line.startswith("# "))
        assert words(title) in text, f"{edition} PDF: no title {title!r} ({page})"


def glued_sample(per_page: int = 3) -> list[tuple[str, str]]:
    """(page, number) quoted by ``{eval}`` in the book's site: up to ``per_page`` distinct
    unsigned numbers of four characters or more from each chapter page, in page order."""
    sample = []
    for page in toc_pages():
        path = FULL_HTML / f"{page}.html"
        if not re.match(r"book/\d\d_", page) or not path.exists():
            continue
        values = re.findall(r'<span class="pasted-text">([^<]*)</span>', path.read_text())
        numbers = list(dict.fromkeys(v for v in values if re.fullmatch(r"\d[\d.,]{2,}\d", v)))
        sample += [(page, value) for value in numbers[:per_page]]
    return sample


@built
def test_the_pdf_quotes_the_computed_numbers(pdf_text):
    """A sample of the numbers the chapters compute and quote in their prose ({eval}), as
    the web book shows them, is in the full PDF's text."""
    sample = glued_sample()
    assert len(sample) >= 20, "too few quoted numbers found in _build/html"
    text = " ".join(pdf_text["full"].split())
    missing = [f"{page}: {value}" for page, value in sample if value not in text]
    assert not missing, "quoted numbers missing from the PDF:\n" + "\n".join(missing)


@built
def test_the_student_pdf_has_the_exercises_and_no_solutions(pdf_text):
    full, student = words(pdf_text["full"]), words(pdf_text["student"])
    exercise = re.compile(r"^Exercise \d+$", re.MULTILINE)
    assert len(exercise.findall(pdf_text["student"])) == len(exercise.findall(pdf_text["full"]))
    assert len(exercise.findall(pdf_text["full"])) >= 50
    probes = solution_probes()
    # the control: the PDF breaks lines and hyphenates, so only most probes are found whole
    found = [block for block, lines in probes.items() if any(p in full for p in lines)]
    assert len(found) >= 0.5 * len(probes), f"only {len(found)} of {len(probes)} blocks found"
    leaks = [f"{block}: {p!r}" for block in found for p in probes[block] if p in student]
    assert not leaks, "solution text in the student PDF:\n" + "\n".join(leaks[:10])
    # a solution's code cell, found by its first line
    marker = words(SOLUTION_MARKER)
    assert full.count(marker) >= 40 and marker not in student
