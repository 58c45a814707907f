"""Each chapter's stated study time is the one its length gives (tools/study_time.py)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import study_time  # noqa: E402  (tools/ is not a package)

CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_time_paragraph_states_the_estimate(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    stated = re.search(r"^\*\*Time\.\*\* About (.*?):", text, flags=re.M)
    assert stated, f"{chapter} has no '**Time.** About ...:' paragraph"
    counts = study_time.count(text)
    total = (study_time.round_up(counts.reading_minutes())
             + study_time.round_up(counts.exercise_minutes()))
    assert stated.group(1) == study_time.spoken(total), (
        f"{chapter} states {stated.group(1)!r}; its length gives {study_time.spoken(total)!r}: "
        "run tools/study_time.py --write")


def test_counts_of_a_small_page():
    page = "\n".join([
        "---", "kernelspec: {}", "---", "# Title words", "", "Some prose here, $x$ too.", "",
        "$$", "a = b", "$$ (eq-a)", "", "```{code-cell} ipython3", "x = 1", "```", "",
        "```{code-cell} ipython3", ":tags: [remove-cell]", "y = 2", "```", "",
        "```{exercise}", ":label: ex-a", "Prove it.", "```", "",
        "```{exercise}", ":label: ex-b", "Write it.", "```", "",
        "```{code-cell} ipython3", "check_thing(f)", "```", "",
        "```{solution-start} ex-b", ":class: dropdown", "```", "Long solution words here.",
        "```{solution-end}", "```",
    ])
    counts = study_time.count(page)
    # words: Title words / Some prose here too / Prove it / Write it (one-letter tokens skipped)
    assert counts == study_time.ChapterCounts(words=10, equations=1, code_cells=2, exercises=2,
                                               coding_exercises=1)


@pytest.mark.parametrize("minutes, words", [(1, "1 minute"), (45, "45 minutes"),
                                            (60, "1 hour"), (125, "2 hours 5 minutes")])
def test_spoken(minutes, words):
    assert study_time.spoken(minutes) == words


def _minutes(rate: float) -> str:
    """A rate as the introduction says it: "a minute and a half", "1 minute", "3 minutes"."""
    spoken = {0.5: "half a minute", 1.5: "a minute and a half", 1: "1 minute"}
    return spoken.get(rate, f"{rate:g} minutes")


def test_introduction_states_the_rates_the_tool_uses():
    intro = (ROOT / "book" / "intro.md").read_text().replace("\n", " ")
    stated = re.search(r"\(study-time\)=.*?(?=\n## |\Z)", intro, flags=re.S)
    assert stated, "book/intro.md has no (study-time)= section"
    for phrase in (f"{study_time.WORDS_PER_MINUTE} words a minute",
                   f"{_minutes(study_time.MINUTES_PER_EQUATION)} per equation",
                   f"{_minutes(study_time.MINUTES_PER_CODE_CELL)} per code cell",
                   f"{study_time.MINUTES_PER_EXERCISE} minutes per exercise",
                   f"{study_time.MINUTES_PER_CODING_EXERCISE} for an exercise whose code"):
        assert phrase in stated.group(0), f"the introduction does not say {phrase!r}"
