"""Cross-references and citations that read the same in JupyterLab and in the web book.

jupyterlab-myst resolves a reference only to a target in the same notebook and reads no
``.bib`` file, so a ``{ref}`` to another chapter or a ``{cite}`` showed its bare key there
(issue 27). The pages therefore link with plain Markdown: another chapter as
``[its title](NN_name.md)`` (JupyterLab opens the file), a section or figure as
``[text](#label)``, a citation as ``[Authors Year](#cite-KEY)``, which Sphinx resolves to
the entry on the references page that ``tools/bibliography.py`` writes. These tests read
the sources; no build is needed.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.book_pages import ROOT, toc_pages


def _tool():
    spec = importlib.util.spec_from_file_location("bibliography",
                                                  ROOT / "tools" / "bibliography.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BIB = _tool()
PAGES = {page: (ROOT / f"{page}.md").read_text() for page in toc_pages()}
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def page_targets(text: str) -> set[str]:
    """Labels a page defines: ``(label)=``, ``:label:`` (exercises, equations), figure
    ``name:``, ``$$ ... $$ (label)``."""
    return (set(re.findall(r"^\((\S+)\)=\s*$", text, re.M))
            | set(re.findall(r"^:label:\s*(\S+)", text, re.M))
            | set(re.findall(r"^\s+name:\s*(\S+)", text, re.M))
            | set(re.findall(r"\$\$\s*\((\S+)\)\s*$", text, re.M)))


ALL_TARGETS = set().union(*(page_targets(t) for t in PAGES.values()))


def test_the_references_page_is_what_the_tool_writes():
    assert PAGES["book/references"] == BIB.page_text(), "run tools/bibliography.py"


def test_each_entry_has_its_own_citation_text():
    texts = BIB.cite_texts()
    assert len(set(texts.values())) == len(texts)
    assert texts["griffiths2005infinite"] == "Griffiths and Ghahramani 2005"
    assert texts["teh2007stick"] == "Teh et al. 2007"  # three authors, LaTeX accents read
    assert BIB.textual(texts["teh2007stick"]) == "Teh et al. (2007)"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_role_that_jupyterlab_shows_as_a_bare_key(page):
    text = PAGES[page]
    assert not re.findall(r"\{(?:cite(?::[a-z]+)?|numref)\}`", text), page
    own = page_targets(text)
    foreign = [label for label in re.findall(r"\{ref\}`([^`]+)`", text) if label not in own]
    assert foreign == [], f"{page}: {{ref}} to another page's label {foreign}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_link_leads_somewhere(page):
    texts = BIB.cite_texts()
    problems = []
    for text, target in LINK.findall(PAGES[page]):
        if target.startswith("#cite-"):
            key = target[len("#cite-"):]
            said = texts.get(key)
            if said is None or text not in (said, BIB.textual(said)):
                problems.append(f"[{text}]({target}): the entry's text is {said!r}")
        elif target.startswith("#"):
            if target[1:] not in ALL_TARGETS:
                problems.append(f"[{text}]({target}): no such label in the book")
        elif target.endswith(".md"):
            linked = ROOT / "book" / target
            if not linked.exists():
                problems.append(f"[{text}]({target}): no such page")
            else:
                title = re.search(r"^# (.+)$", linked.read_text(), re.M)[1].strip()
                if text != title:
                    problems.append(f"[{text}]({target}): the page's title is {title!r}")
    assert problems == [], f"{page}:\n" + "\n".join(problems)


def test_the_link_checker_catches_what_it_should():
    assert LINK.findall("see [A 2001](#cite-x) and [B](05_x.md).") == [
        ("A 2001", "#cite-x"), ("B", "05_x.md")]
    assert "fig-ch-features" in ALL_TARGETS and "study-time" in ALL_TARGETS


@pytest.mark.parametrize("page", sorted(PAGES))
def test_equations_are_referred_to_only_on_their_own_page(page):
    """jupyterlab-myst numbers an equation within its notebook only."""
    text = PAGES[page]
    own = page_targets(text)
    foreign = [label for label in re.findall(r"\{eq\}`([^`]+)`", text) if label not in own]
    assert foreign == [], f"{page}: {{eq}} to another page's equation {foreign}"
