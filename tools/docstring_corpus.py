"""Build the bundled word data: which words each of 1,000 standard-library docstrings uses.

The book's heavy-tailed data (the beta-process chapter, issue 31) are documents and their
words: every machine that runs Python has them, and their word counts follow Zipf's and
Heaps' laws. The sources are read, never imported (importing the standard library runs
code). A document is the docstring of a public function or class (name without a leading
underscore, methods included) in the standard library's own ``.py`` files, private modules
(a leading underscore), tests, IDLE, the demos and site-packages left out; its words are the lower-cased runs of letters
``a-z`` of length >= 2, counted once per document. Documents with fewer than
``MIN_WORDS`` distinct words are dropped, and ``N_DOCUMENTS`` are drawn at random
(seed ``SEED``) from the rest, sorted by name.

The result, gzipped JSON, goes to ``ibp_lab/data/docstring_words.json.gz``; its SHA-256
(of the uncompressed bytes) is printed for ``ibp_lab.datasets``. Run once with the
Python whose library is wanted::

    python tools/docstring_corpus.py
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import pathlib
import platform
import re
import sysconfig

import numpy as np

N_DOCUMENTS = 1000
MIN_WORDS = 8
SEED = 31
SKIP = ("test", "tests", "idlelib", "site-packages", "__phello__", "turtledemo", "lib2to3")
WORD = re.compile(r"[a-z]{2,}")
OUT = pathlib.Path(__file__).resolve().parent.parent / "ibp_lab" / "data" / "docstring_words.json.gz"


def documents(root: pathlib.Path):
    """``(name, set of words)`` of every public docstring under ``root``."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(part in SKIP or (part.startswith("_") and part != "__init__.py")
               for part in parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        module = ".".join(parts)[:-3]
        yield from _walk(tree, module)


def _walk(node, prefix):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and not child.name.startswith("_"):
            name = f"{prefix}.{child.name}"
            text = ast.get_docstring(child)
            if text:
                yield name, set(WORD.findall(text.lower()))
            if isinstance(child, ast.ClassDef):
                yield from _walk(child, name)


def main() -> None:
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    found = [(name, words) for name, words in documents(root) if len(words) >= MIN_WORDS]
    unique = {}
    for name, words in found:  # a name defined twice (platform variants) counts once
        unique.setdefault(name, words)
    names = sorted(unique)
    chosen = sorted(np.random.default_rng(SEED).choice(len(names), N_DOCUMENTS, replace=False))
    picked = [(names[i], unique[names[i]]) for i in chosen]
    vocabulary = sorted(set().union(*(words for _, words in picked)))
    index = {word: j for j, word in enumerate(vocabulary)}
    record = {
        "source": f"docstrings of the CPython {platform.python_version()} standard library",
        "rule": "public functions and classes; words [a-z]{2,} lower-cased, once per document; "
                f">= {MIN_WORDS} distinct words; {N_DOCUMENTS} drawn with seed {SEED}",
        "documents": [name for name, _ in picked],
        "vocabulary": vocabulary,
        "rows": [sorted(index[w] for w in words) for _, words in picked],
    }
    raw = json.dumps(record, separators=(",", ":")).encode()
    OUT.write_bytes(gzip.compress(raw, mtime=0))
    print(f"{len(names)} candidate documents; {N_DOCUMENTS} kept; {len(vocabulary)} words")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes); SHA-256 {hashlib.sha256(raw).hexdigest()}")


if __name__ == "__main__":
    main()
