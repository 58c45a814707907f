"""Hashes of every run of eight words in the source documents, so the book can be checked
for copied phrases where the sources are absent (CI has no ``../shared``).

The project was written from the documents in ``../shared/seeds`` (a paper, a notebook,
notes) and must say everything in its own words: a run of eight or more consecutive words
of a chapter's prose that also stands in a seed is a copy. This script reads the seeds,
normalises their words (:func:`words`), and writes the SHA-1 of every eight-word shingle,
truncated to 12 hex digits, sorted and gzipped, to ``tests/data/seed_shingles.txt.gz``.
The seeds' text itself is never committed. ``tests/test_own_words.py`` hashes the
chapters' prose shingles (:func:`prose_words`) against that file.

Run ``.venv/bin/python tools/seed_shingles.py`` after the seeds change;
``--report`` lists the copied runs of each chapter (with the seeds present).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
SHINGLE_FILE = ROOT / "tests" / "data" / "seed_shingles.txt.gz"
#: A copied phrase is a run of this many consecutive words (or more).
SHINGLE_WORDS = 8
#: Hex digits kept of each SHA-1: 48 bits, so among ~2e4 seed shingles and ~1e5 chapter
#: shingles a chance collision has probability about 2e4 * 1e5 / 2**48 < 1e-5.
HASH_HEX = 12

# what is not the chapter's prose: front matter, fenced blocks (code cells, math, directive
# options), display and inline math, inline code and roles, citation links
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)[^$]+?(?<!\\)\$")
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_CITATION = re.compile(r"\[[^\]]*\]\(#cite-[^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_DIRECTIVE_OPTION = re.compile(r"^:[\w-]+:.*$", re.M)
_LABEL = re.compile(r"^\([\w-]+\)=\s*$", re.M)
_HTML = re.compile(r"<[^>\n]+>")
#: Stands where something that is not prose was cut out: a run of words never spans it.
BREAK = "\x00"


def words(text: str) -> list[str]:
    """The words of a text, lowercase, without punctuation or markup.

    An apostrophe or emphasis mark joins (``don't`` -> ``dont``); every other character that is not a
    letter or digit separates words.

    Examples
    --------
    >>> words("The *IBP*'s prior: Z_{nk}, don't!")
    ['the', 'ibps', 'prior', 'z', 'nk', 'dont']
    """
    # emphasis marks and apostrophes join what they sit between ("*IBP*'s" -> "ibps")
    lowered = re.sub(r"[*'\u2019]", "", text.lower())
    return re.findall(r"[^\W_]+", lowered)


#: Directives whose body is prose; every other fenced block (code, math, tables built by
#: code) is cut out.
PROSE_DIRECTIVES = {"exercise", "solution-start", "solution-end", "dropdown", "note",
                    "admonition", "tip", "warning", "important", "figure"}
_FENCE_LINE = re.compile(r"^(`{3,}|~{3,})\s*(?:\{([\w:-]+)\})?(.*)$")


def _captions(options: object) -> list[str]:
    """Every ``caption`` string in a code cell's options (a figure's caption is prose)."""
    if isinstance(options, dict):
        found = [v for k, v in options.items() if k == "caption" and isinstance(v, str)]
        return found + [c for v in options.values() for c in _captions(v)]
    if isinstance(options, list):
        return [c for v in options for c in _captions(v)]
    return []


def _cell_captions(body: list[str]) -> list[str]:
    """The captions in a code cell's YAML header (between its first two ``---`` lines)."""
    if not body or body[0].strip() != "---" or "---" not in [b.strip() for b in body[1:]]:
        return []
    header_end = 1 + [b.strip() for b in body[1:]].index("---")
    return _captions(yaml.safe_load("\n".join(body[1:header_end])))


def _without_fenced_blocks(text: str) -> str:
    """The text with every fenced block cut out except the body of a prose directive
    and the captions of a code cell's figures."""
    out = []
    stack: list[tuple[str, bool, list[str]]] = []  # (fence, is its body prose, its lines)
    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        if match and stack and line.strip() == stack[-1][0]:
            _, _, body = stack.pop()
            out.append(BREAK)
            if all(prose for _, prose, _ in stack):
                out.extend(caption + BREAK for caption in _cell_captions(body))
        elif match:
            stack.append((match.group(1), match.group(2) in PROSE_DIRECTIVES, []))
            out.append(BREAK)
        elif all(prose for _, prose, _ in stack):
            out.append(line)
        else:
            stack[-1][2].append(line)
            out.append(BREAK)
    return "\n".join(out)


def prose_runs(markdown: str) -> list[list[str]]:
    """The runs of prose words of a MyST chapter: code, math and citations cut out.

    A code cell, a displayed equation or a citation breaks the prose (no run spans it);
    inline math, inline code and quoted numbers are dropped from the run they sit in.

    Examples
    --------
    >>> prose_runs("A prior $p(Z)$ over matrices.\\n```{code-cell} ipython3\\nx = 1\\n```\\nDone.")
    [['a', 'prior', 'over', 'matrices'], ['done']]
    """
    text = _FRONT_MATTER.sub("", markdown)
    text = _without_fenced_blocks(text)
    for pattern in (_DISPLAY_MATH, _CITATION, _DIRECTIVE_OPTION, _LABEL, _HTML):
        text = pattern.sub(BREAK, text)
    # inline math, code and quoted numbers go but join the words around them: the seeds
    # extracted from a PDF lost their symbols, so "each $\pi_k$ is" stands there as "each is"
    for pattern in (_INLINE_MATH, _ROLE, _INLINE_CODE):
        text = pattern.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    runs = [words(piece) for piece in text.split(BREAK)]
    return [run for run in runs if run]


def shingles(run: list[str], size: int = SHINGLE_WORDS) -> list[str]:
    """Every ``size`` consecutive words of a run, joined by single spaces.

    Examples
    --------
    >>> shingles(["a", "b", "c"], size=2)
    ['a b', 'b c']
    """
    return [" ".join(run[i:i + size]) for i in range(len(run) - size + 1)]


def shingle_hash(shingle: str) -> str:
    """The SHA-1 of a shingle, truncated to :data:`HASH_HEX` hex digits.

    Examples
    --------
    >>> len(shingle_hash("one two three four five six seven eight"))
    12
    """
    return hashlib.sha1(shingle.encode("utf-8")).hexdigest()[:HASH_HEX]


def seed_hashes(seed_dir: Path = SEEDS) -> set[str]:
    """Hashes of every eight-word shingle of every seed document (all its text)."""
    files = sorted(p for p in seed_dir.iterdir() if p.is_file() and p.name != "README.md")
    if not files:
        raise FileNotFoundError(f"no seed documents in {seed_dir}")
    hashes: set[str] = set()
    for path in files:
        hashes.update(shingle_hash(s) for s in shingles(words(path.read_text(errors="replace"))))
    return hashes


def load_hashes(path: Path = SHINGLE_FILE) -> set[str]:
    """The committed seed hashes."""
    with gzip.open(path, "rt", encoding="ascii") as handle:
        return {line.strip() for line in handle if line.strip()}


def copied_runs(markdown: str, hashes: set[str]) -> list[str]:
    """The maximal runs of eight or more prose words that stand in the seeds.

    Overlapping copied shingles are merged into one phrase.
    """
    found = []
    for run in prose_runs(markdown):
        hits = [shingle_hash(s) in hashes for s in shingles(run)]
        start = None
        for i, hit in enumerate(hits + [False]):
            if hit and start is None:
                start = i
            elif not hit and start is not None:
                found.append(" ".join(run[start:i - 1 + SHINGLE_WORDS]))
                start = None
    return found


def book_pages() -> list[Path]:
    """The chapters and the introduction."""
    return sorted((ROOT / "book").glob("[0-9][0-9]_*.md")) + [ROOT / "book" / "intro.md"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true",
                        help="list each chapter's copied runs instead of writing the hashes")
    args = parser.parse_args(argv)
    hashes = seed_hashes()
    if args.report:
        for page in book_pages():
            for phrase in copied_runs(page.read_text(), hashes):
                print(f"{page.name}: ({len(phrase.split())} words) {phrase}")
        return 0
    SHINGLE_FILE.parent.mkdir(parents=True, exist_ok=True)
    # fixed mtime: the same seeds write the same bytes
    with open(SHINGLE_FILE, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as handle:
        handle.write("".join(f"{h}\n" for h in sorted(hashes)).encode("ascii"))
    print(f"wrote {len(hashes)} hashes to {SHINGLE_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
