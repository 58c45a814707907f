"""The book says everything in its own words: no run of eight or more consecutive prose
words of a page stands in a source document (``../shared/seeds``).

The seeds are absent in CI, so the check reads the committed hashes of every eight-word
shingle of the seeds (``tests/data/seed_shingles.txt.gz``, written by
``tools/seed_shingles.py``) and hashes each page's prose shingles the same way.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("seed_shingles",
                                                  ROOT / "tools" / "seed_shingles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHINGLES = _tool()


@pytest.fixture(scope="module")
def seed_hashes() -> set[str]:
    return SHINGLES.load_hashes()


def _page_param(page: Path):
    if page.name in OWNED_ELSEWHERE:
        return pytest.param(page, marks=pytest.mark.xfail(strict=True,
                                                          reason=OWNED_ELSEWHERE[page.name]))
    return page


#: Pages whose copied phrases their owner has yet to rewrite (strict: once rewritten, the
#: test fails until the entry goes)
OWNED_ELSEWHERE: dict[str, str] = {}


@pytest.mark.parametrize("page", [_page_param(p) for p in SHINGLES.book_pages()],
                         ids=lambda p: p.name)
def test_no_page_copies_a_seed_phrase(page, seed_hashes):
    copied = SHINGLES.copied_runs(page.read_text(), seed_hashes)
    assert not copied, (f"{page.name} has runs of {SHINGLES.SHINGLE_WORDS}+ words that stand "
                        "in a seed; say them in the book's own words:\n" + "\n".join(copied))


# a made-up "seed" (no seed text stands in this file): the check must be able to fail
FAKE_SEED = "a buffet lets every guest take any number of dishes that others tried before"


@pytest.fixture(scope="module")
def fake_hashes() -> set[str]:
    return {SHINGLES.shingle_hash(s) for s in SHINGLES.shingles(SHINGLES.words(FAKE_SEED))}


def test_the_check_finds_a_copied_phrase(fake_hashes):
    # the words around it, case, punctuation, inline math and code do not hide it
    page = ("Some words first. A *Buffet* lets every guest take $K$ any number of "
            "dishes `x = 1` that others tried, before; then more words.\n")
    assert SHINGLES.copied_runs(page, fake_hashes) == [FAKE_SEED]
    # seven words in a row are not a copy
    assert not SHINGLES.copied_runs("a buffet lets every guest take any. Then.", fake_hashes)


def test_the_check_reads_exercises_and_captions_but_not_code(fake_hashes):
    exercise = f"````{{exercise}}\n:label: ex-x\n\nNote that {FAKE_SEED}.\n````\n"
    caption = ("```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: "
               f"'{FAKE_SEED}'\n---\nx = 1\n```\n")
    code = f"```{{code-cell}} ipython3\n# {FAKE_SEED}\n```\n"
    broken = FAKE_SEED.replace("any", "any\n$$\nx\n$$\n")
    assert SHINGLES.copied_runs(exercise, fake_hashes) == [FAKE_SEED]
    assert SHINGLES.copied_runs(caption, fake_hashes) == [FAKE_SEED]
    assert not SHINGLES.copied_runs(code, fake_hashes)
    assert not SHINGLES.copied_runs(broken, fake_hashes)  # a displayed equation breaks a run


def test_the_committed_hashes_are_whole(seed_hashes):
    # the seeds hold about 18,500 words, hence about as many distinct shingles
    assert len(seed_hashes) > 15_000
    assert all(len(h) == SHINGLES.HASH_HEX and int(h, 16) >= 0 for h in seed_hashes)


def test_the_hashes_match_the_seeds_when_present(seed_hashes):
    if not SHINGLES.SEEDS.is_dir():
        pytest.skip("the seed documents are not in this checkout (CI): the committed hashes stand")
    assert SHINGLES.seed_hashes() == seed_hashes, \
        "the seeds changed: run tools/seed_shingles.py to rewrite tests/data/seed_shingles.txt.gz"
