"""Write book/references.md from book/references.bib: one list that JupyterLab and the web book both read.

A chapter cites as a Markdown link, ``[Griffiths and Ghahramani 2005](#cite-griffiths2005infinite)``:
JupyterLab (jupyterlab-myst, which reads no ``.bib`` file) shows the author-year text,
and the web book links it to the entry's target on the references page, where this tool
writes every entry of ``references.bib`` under a ``(cite-KEY)=`` target, in author-year
order (pybtex reads the file and resolves its LaTeX; the titles keep their case).

:func:`cite_texts` is the one place where a key becomes its author-year text;
``tests/test_references.py`` checks that references.md is what this tool writes, and that
every citation in the book names an entry with that entry's own text.

Usage: ``python tools/bibliography.py [--check]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIB = ROOT / "book" / "references.bib"
PAGE = ROOT / "book" / "references.md"
HEADER = """(references)=
# References

Every chapter cites from this one list (written from `references.bib` by
`tools/bibliography.py`; a chapter's citations link here). The data set is cited as the
UCI repository asks ([Alpaydin and Kaynak 1998](#cite-alpaydin1998optdigits)).
"""


def entries() -> dict:
    """The bibliography's entries by key (pybtex)."""
    from pybtex.database import parse_file

    return dict(parse_file(str(BIB)).entries)


def _latex(text: str) -> str:
    """A field's LaTeX as plain text (accents resolved, braces dropped, case kept)."""
    from pybtex.richtext import Text

    return str(Text.from_latex(text))


def _markdown(text: str) -> str:
    """Escape the few characters that Markdown would read as markup."""
    for char in "\\*_[]`":
        text = text.replace(char, "\\" + char)
    return text


def _last_name(person) -> str:
    return _latex(" ".join(person.prelast_names + person.last_names))


def _full_name(person) -> str:
    return _latex(" ".join(person.first_names + person.middle_names + person.prelast_names
                           + person.last_names))


def _people(entry) -> list:
    return entry.persons.get("author") or entry.persons.get("editor") or []


def cite_text(entry) -> str:
    """``Smith 2001``, ``Smith and Jones 2001``, ``Smith et al. 2001``: an entry's citation."""
    names = [_last_name(p) for p in _people(entry)]
    who = f"{names[0]} et al." if len(names) >= 3 else " and ".join(names)
    return f"{who} {entry.fields['year']}"


def cite_texts() -> dict:
    """Every key's citation text, with ``a``, ``b``... after the year where two would read
    the same (in the order of their keys)."""
    plain = {key: cite_text(entry) for key, entry in entries().items()}
    texts = {}
    for key in sorted(plain):
        same = sorted(k for k, text in plain.items() if text == plain[key])
        texts[key] = plain[key] + ("abcdefghij"[same.index(key)] if len(same) > 1 else "")
    return texts


def textual(text: str) -> str:
    """A citation text for running prose: ``Smith et al. 2001`` -> ``Smith et al. (2001)``."""
    return re.sub(r" (\d{4}[a-z]?)$", r" (\1)", text)


def _names(entry) -> str:
    names = [_full_name(p) for p in _people(entry)]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return joined + (" (eds.)" if "author" not in entry.persons else "")


def format_entry(entry) -> str:
    """One entry as Markdown: names, title, where it appeared, year, DOI."""
    field = lambda name: _markdown(_latex(entry.fields[name])) if name in entry.fields else ""
    pages = field("pages").replace("--", "–")
    where = ""
    if entry.fields.get("journal"):
        volume = field("volume") + (f"({field('number')})" if field("number") else "")
        where = f"*{field('journal')}*" + (f" {volume}" if volume else "") + (
            f": {pages}" if pages else "")
    elif entry.fields.get("booktitle"):
        series = " ".join(p for p in (field("series"), field("volume")) if p)
        series = f", {series}" if series else ""
        where = f"In *{field('booktitle')}*{series}" + (f", {pages}" if pages else "")
    else:
        where = field("howpublished") or field("institution")
    publisher = field("publisher")
    parts = [_markdown(_names(entry)), field("title"), where, publisher, entry.fields["year"]]
    text = ". ".join(p.rstrip(".") for p in parts if p) + "."
    doi = entry.fields.get("doi")
    if doi:
        text += f" [doi:{doi}](https://doi.org/{doi})"
    return text


def page_text() -> str:
    """references.md as this tool writes it."""
    texts = cite_texts()
    ordered = sorted(entries().items(), key=lambda item: (texts[item[0]].lower(), item[0]))
    blocks = [f"(cite-{key})=\n**{texts[key]}.** {format_entry(entry)}\n"
              for key, entry in ordered]
    return HEADER + "\n" + "\n".join(blocks)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if references.md is stale")
    args = parser.parse_args(argv)
    text = page_text()
    if args.check:
        stale = PAGE.read_text() != text
        print("references.md is stale: run tools/bibliography.py" if stale else "up to date")
        return int(stale)
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(entries())} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
