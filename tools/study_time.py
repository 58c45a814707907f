"""Estimate how long a student needs for each chapter, from what the chapter contains.

The estimate is a sum of stated rates, not a timing of students (none was done):

- prose at :data:`WORDS_PER_MINUTE` (a study pace for mathematical text: reading with a pencil,
  not skimming);
- :data:`MINUTES_PER_EQUATION` for each displayed equation, to follow it;
- :data:`MINUTES_PER_CODE_CELL` to read each shown code cell and look at its output;
- :data:`MINUTES_PER_EXERCISE` for each exercise, and :data:`MINUTES_PER_CODING_EXERCISE` for
  one where the student writes a function that an ``ibp_lab.teaching.exercises`` check grades.

Each chapter's "**Time.**" paragraph states the rounded totals (``--write`` rewrites them);
``tests/test_study_time.py`` checks that the text and the counts agree. Usage::

    .venv/bin/python tools/study_time.py          # a table for every chapter
    .venv/bin/python tools/study_time.py --write  # rewrite every chapter's Time paragraph
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Calibrated for graduate students (issue 50): the first rule (100 words a minute, 1.5 an
# equation, 0.5 a code cell, 15 an exercise, 45 a graded one) gave 27 hours for the book,
# where an expert's read of derivation-dense chapters gave 45-60; these rates, half of those,
# give about 50. No class has been timed.
WORDS_PER_MINUTE = 50
MINUTES_PER_EQUATION = 3
MINUTES_PER_CODE_CELL = 1
MINUTES_PER_EXERCISE = 30
MINUTES_PER_CODING_EXERCISE = 60

FENCE = re.compile(r"^(`{3,}|:{3,})\s*(\{[\w-]+\})?")


@dataclass(frozen=True)
class ChapterCounts:
    """What a chapter holds, counted from its MyST source."""

    words: int
    equations: int
    code_cells: int
    exercises: int
    coding_exercises: int

    def reading_minutes(self) -> float:
        """Minutes to read the prose, follow the equations and look at the code cells."""
        return (self.words / WORDS_PER_MINUTE + self.equations * MINUTES_PER_EQUATION
                + self.code_cells * MINUTES_PER_CODE_CELL)

    def exercise_minutes(self) -> float:
        """Minutes for the exercises, a graded coding exercise counting more."""
        plain = self.exercises - self.coding_exercises
        return plain * MINUTES_PER_EXERCISE + self.coding_exercises * MINUTES_PER_CODING_EXERCISE


def count(text: str) -> ChapterCounts:
    """Count prose words, display equations, shown code cells and exercises of one page.

    Solutions are not counted as reading (a student who does the exercise reads them as
    part of it). An exercise is a coding exercise when a code cell calling an
    ``ibp_lab.teaching.exercises`` check follows it before its solution.
    """
    body = text.split("---", 2)[2] if text.startswith("---") else text
    words = equations = code_cells = exercises = coding = 0
    in_cell = in_solution = in_math = in_exercise = False
    cell_lines: list[str] = []
    for line in body.splitlines():
        match = FENCE.match(line)
        name = match.group(2) if match else None
        if in_cell:  # inside a code cell: only its end matters
            if match and name is None:
                shown = not any("remove-input" in l or "remove-cell" in l for l in cell_lines)
                code_cells += int(shown and not in_solution)
                coding += int(in_exercise and any("check_" in l for l in cell_lines))
                in_cell = False
            else:
                cell_lines.append(line)
            continue
        if name == "{code-cell}":
            in_cell, cell_lines = True, []
        elif name == "{exercise}":
            exercises, in_exercise = exercises + 1, True
        elif name == "{solution-start}":
            in_solution, in_exercise = True, False
        elif name == "{solution-end}":
            in_solution = False
        elif name == "{math}" or line.strip() == "$$" or (line.startswith("$$") and not in_math):
            equations += int(not in_math and not in_solution)
            in_math = name == "{math}" or not in_math
            if line.strip() != "$$" and name != "{math}" and line.rstrip().endswith("$$") and len(line.strip()) > 2:
                in_math = False  # a one-line display
            continue
        elif in_math and (line.startswith("$$") or (match and name is None)):
            in_math = False
            continue
        if match or in_math or in_solution or line.startswith(":") or line.startswith("**Time"):
            continue  # (the Time line itself is not counted: its own words would move it)
        words += len(re.findall(r"[A-Za-z]{2,}", re.sub(r"\{[a-z:-]+\}`[^`]*`", " x ", line)))
    return ChapterCounts(words, equations, code_cells, exercises, coding)


def run_seconds(chapter: str) -> float:
    """Seconds the chapter's code took in the last build (0 when it was not built)."""
    path = ROOT / "_build" / "execution.json"
    if not path.exists():
        return 0.0
    runs = {row["chapter"]: row["runtime_s"] for row in json.loads(path.read_text())}
    return float(runs.get(f"book/{chapter}", 0.0))


#: A build's run time (s) below which a chapter says its code runs "in under a minute":
#: half a minute, because the same chapter takes up to about twice as long on a busy
#: machine (the loaded builds of stops 57-59).
UNDER_A_MINUTE_S = 30.0


def round_up(minutes: float, step: int = 5) -> int:
    """Round up to a multiple of ``step`` minutes (an estimate should not promise too little)."""
    return step * math.ceil(minutes / step)


def spoken(minutes: int) -> str:
    """Minutes in words: ``95`` -> ``'1 hour 35 minutes'``, ``1`` -> ``'1 minute'``."""
    hours, rest = divmod(minutes, 60)
    parts = ([f"{hours} hour" + "s" * (hours > 1)] if hours else []) + (
        [f"{rest} minute" + "s" * (rest != 1)] if rest or not hours else [])
    return " ".join(parts)


def counted(n: int, noun: str) -> str:
    """``"1 displayed equation"``, ``"2 displayed equations"``, ``"1,636 words"``.

    >>> counted(1, "code cell"), counted(0, "exercise"), counted(1636, "word")
    ('1 code cell', '0 exercises', '1,636 words')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def time_line(chapter: str) -> str:
    """The chapter's "**Time.**" paragraph, from its counts (and the last build's run time).

    The rates behind it are explained once, in the introduction (label ``study-time``).
    """
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    counts = count(text)
    reading, exercises = round_up(counts.reading_minutes()), round_up(counts.exercise_minutes())
    coding = (f", {counts.coding_exercises} of them writing code that a check grades"
              if counts.coding_exercises else "")
    the_exercises = ("the exercise" if counts.exercises == 1
                     else f"the {counted(counts.exercises, 'exercise')}")
    run = run_seconds(chapter)
    if run and run < UNDER_A_MINUTE_S:
        run_text = " The code runs in under a minute."
    elif run:
        run_text = f" The code runs in about {spoken(math.ceil(run / 60))}."
    else:  # no build here to time it: keep what the last build measured, never drop it
        said = re.search(r" The code runs in about [^.]*\.", text)
        run_text = said[0] if said else ""
    return (f"**Time.** About {spoken(reading + exercises)}: {spoken(reading)} to study "
            f"{counted(counts.words, 'word')}, {counted(counts.equations, 'displayed equation')}"
            f" and {counted(counts.code_cells, 'code cell')}, and {spoken(exercises)} for "
            f"{the_exercises}{coding} (estimated from the chapter's length, "
            f"[How long a chapter takes](#study-time)).{run_text}")


def write_time_lines() -> list[str]:
    """Replace the "**Time.**" paragraph of every chapter; return the chapters changed."""
    changed = []
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        text = path.read_text()
        new = re.sub(r"^\*\*Time[.:]\*\*.*?(?=\n\n)", lambda _: time_line(path.stem),
                     text, count=1, flags=re.S | re.M)
        if new != text:
            path.write_text(new)
            changed.append(path.stem)
    return changed


def main() -> None:
    if sys.argv[1:] == ["--write"]:
        print("rewrote the Time line of", ", ".join(write_time_lines()) or "no chapter")
        return
    print(f"{'chapter':24s} words eqs cells exer (coding)  minutes")
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        counts = count(path.read_text())
        minutes = round_up(counts.reading_minutes()) + round_up(counts.exercise_minutes())
        print(f"{path.stem:24s} {counts.words:5d} {counts.equations:3d} {counts.code_cells:5d} "
              f"{counts.exercises:4d} ({counts.coding_exercises})     {minutes:4d}")


if __name__ == "__main__":
    sys.exit(main())
