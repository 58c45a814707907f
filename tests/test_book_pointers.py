"""Each chapter's "Next" pointer names the chapter that follows it in ``_toc.yml``.

The pointers went stale when chapters were added (the second expert read found three that
skipped a new chapter). The table of contents is the one order of the book: every chapter
but the last carries exactly one "Next" pointer, whose first link to a chapter is the file of
the next chapter in ``_toc.yml`` (a Markdown link, which JupyterLab follows too); the last
carries none. No build is needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: "Next: [title](NN_name.md)" or "Next, ...", as a sentence or a bullet.
NEXT = re.compile(r"(?:^|[\s-])Next[:,]\s")
LINK = re.compile(r"\]\((\d\d_[a-z_]+)\.md\)")


def chapters() -> list[Path]:
    """The numbered chapters, in the order of ``_toc.yml``."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    return [ROOT / f"{name}.md" for name in files if re.match(r"book/\d\d_", name)]


def next_pointers(path: Path) -> list[str]:
    """The text from each "Next" pointer to the end of its paragraph."""
    text = path.read_text()
    return [text[m.start(): text.find("\n\n", m.start())] for m in NEXT.finditer(text)]


ORDER = chapters()


def test_the_table_of_contents_lists_the_fifteen_chapters():
    assert len(ORDER) == 15 and ORDER[0].name == "01_buffet.md"


def test_chapter_files_are_numbered_in_reading_order():
    # a lecturer handing out files reads the numbers as the order: 01, 02, ... as in _toc.yml
    numbers = [int(path.name[:2]) for path in ORDER]
    assert numbers == list(range(1, len(ORDER) + 1)), [path.name for path in ORDER]
    on_disk = sorted(p.name for p in (ROOT / "book").glob("[0-9][0-9]_*.md"))
    assert on_disk == [path.name for path in ORDER]


@pytest.mark.parametrize("index", range(len(ORDER)))
def test_next_pointer_names_the_following_chapter(index):
    here = ORDER[index]
    pointers = next_pointers(here)
    if index == len(ORDER) - 1:
        assert pointers == [], f"{here.name} is the last chapter but points on: {pointers}"
        return
    assert len(pointers) == 1, f"{here.name}: {len(pointers)} 'Next' pointers: {pointers}"
    links = LINK.findall(pointers[0])
    assert links, f"{here.name}: the 'Next' pointer links no chapter: {pointers[0]!r}"
    assert links[0] == ORDER[index + 1].stem, (
        f"{here.name} points next to {links[0]}.md, but _toc.yml puts "
        f"{ORDER[index + 1].name} after it")


def test_the_checker_catches_a_stale_pointer(tmp_path):
    page = tmp_path / "07_split_merge.md"
    page.write_text("(ch-split-merge)=\n# Moves\n\nNext: [PyMC](10_pymc.md) tries PyMC.\n\nEnd.\n")
    assert LINK.findall(next_pointers(page)[0]) == ["10_pymc"]


def _eval_forms():
    """The build's own pattern of the ``{eval}`` forms it accepts (``book/_ext``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("eval_glue",
                                                  ROOT / "book" / "_ext" / "eval_glue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EVAL_FORMS


@pytest.mark.parametrize("path", ORDER, ids=lambda p: p.stem)
def test_every_eval_in_the_prose_is_a_form_the_build_accepts(path):
    # the build refuses any other expression (a failed book), found here without a build
    forms = _eval_forms()
    refused = [text for text in re.findall(r"\{eval\}`([^`]*)`", path.read_text())
               if not forms.match(text.strip())]
    assert refused == []
