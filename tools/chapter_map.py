"""The course layer's two computed things: the chapters' dependency map and the plans' hours.

``python tools/chapter_map.py`` draws ``book/_static/chapter_map.svg``: one box per chapter
in the order of ``_toc.yml``, an arrow from each chapter to every chapter whose front text
names it as a prerequisite (``PREREQUISITES``, read from the chapters' "Prerequisites"
paragraphs), columns by the length of the longest chain of prerequisites before a chapter.

``python tools/chapter_map.py --hours`` prints the hours the teaching page
(``book/teaching.md``) states: each chapter's core part and whole, by the planning rule of
that page (``PLANNING_RULE``), counted with ``tools/study_time.py``'s own counter on the
chapter's text with its optional sections (``OPTIONAL``) cut out.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIGURE = ROOT / "book" / "_static" / "chapter_map.svg"

#: Chapter -> the chapters its "Prerequisites" paragraph names (hard prerequisites).
PREREQUISITES = {
    "01_buffet": [],
    "02_stick_breaking": ["01_buffet"],
    "03_beta_process": ["01_buffet", "02_stick_breaking"],
    "04_recursive_ibp": ["01_buffet", "02_stick_breaking"],
    "05_linear_gaussian": ["01_buffet"],
    "06_chains": ["05_linear_gaussian"],
    "07_split_merge": ["05_linear_gaussian", "06_chains"],
    "08_tempering": ["05_linear_gaussian", "06_chains", "07_split_merge"],
    "09_nonconjugate": ["02_stick_breaking", "05_linear_gaussian", "06_chains"],
    "10_pymc": ["02_stick_breaking", "05_linear_gaussian"],
    "11_variational": ["05_linear_gaussian", "06_chains", "10_pymc"],
    "12_streaming": ["01_buffet", "04_recursive_ibp", "05_linear_gaussian"],
    "13_heldout": ["05_linear_gaussian", "06_chains"],
    "14_paper": ["11_variational", "12_streaming", "13_heldout"],
    "15_own_data": ["05_linear_gaussian", "06_chains", "13_heldout"],
}
#: Named as background, not as a prerequisite (drawn dashed): chapter 12 assumes "the idea
#: of mean-field variational inference for the IBP".
BACKGROUND = {"12_streaming": ["11_variational"]}

#: Optional parts of each chapter: headings (a section runs to the next heading of its level
#: or higher), paragraphs that open with a bold lead (to the next ``## `` heading), and
#: exercises by label. Everything else is the core path.
OPTIONAL = {
    "03_beta_process": {"headings": ["### Telling the two priors apart",
                                     "## Does the data want a discount?"]},
    "08_tempering": {"headings": ["## The digits at equal CPU time",
                                  "## The all-on trap at low noise",
                                  "### The digits: what the evidence says",
                                  "### The all-on trap with the ladder",
                                  "## Do the replicas run on both cores?"],
                     "exercises": ["ex-tp-barrier"]},
    "09_nonconjugate": {"headings": ["## Four samplers on the digits",
                                     "### Causes of the digits",
                                     "### A posterior predictive check"],
                        "exercises": ["ex-nc-data-births"]},
    "10_pymc": {"headings": ["## Recovering $Z$ and the features", "## What one gradient costs"],
                "exercises": ["ex-pymc-test-digits", "ex-pymc-budget"]},
    "11_variational": {"headings": ["## The digits, at equal CPU time"]},
    "12_streaming": {"headings": ["## Births from a buffer",
                                  "## Single births, buffered births and Gibbs",
                                  "## Factor analysis on the same digits"],
                     "exercises": ["ex-stream-buffer-size"]},
    "13_heldout": {"leads": ["**Births from a buffer.**"]},
    "14_paper": {"headings": ["## Fig. 7: which digits share features",
                              "## Fig. 8: a tabular data set",
                              "## Fig. 9: factor analysis",
                              "## What is not reproduced yet"]},
}

#: The teaching page's rule is the chapters' own (tools/study_time.py: 50 words a minute,
#: 3 minutes an equation, 1 minute a code cell, 30 minutes a derivation exercise and
#: 60 minutes an exercise whose code a check grades), applied to the core path too.
PLANNING_RULE = {"reading_factor": 1.0, "exercise_minutes": 30, "coding_exercise_minutes": 60}


def _study_time():
    spec = importlib.util.spec_from_file_location("study_time", ROOT / "tools" / "study_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["study_time"] = module
    spec.loader.exec_module(module)
    return module


def toc_chapters() -> list[str]:
    """The numbered chapters' stems in the order of ``_toc.yml``."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    return [Path(f).name for f in files if re.match(r"\d\d_", Path(f).name)]


def chapter_title(stem: str) -> str:
    """The chapter's ``# `` title."""
    return re.search(r"^# (.+)$", (ROOT / "book" / f"{stem}.md").read_text(), re.M)[1].strip()


def _cut_heading(text: str, heading: str) -> str:
    level = len(heading.split(" ", 1)[0])
    start = text.find("\n" + heading)
    if start < 0:
        raise ValueError(f"no heading starting {heading!r}")
    stop = re.compile(r"^#{1,%d} " % level, re.M).search(text, start + len(heading) + 1)
    return text[:start + 1] + (text[stop.start():] if stop else "")


def _cut_lead(text: str, lead: str) -> str:
    start = text.find("\n" + lead)
    if start < 0:
        raise ValueError(f"no paragraph opening {lead!r}")
    stop = re.compile(r"^## ", re.M).search(text, start)
    return text[:start + 1] + (text[stop.start():] if stop else "")


def _cut_exercise(text: str, label: str) -> str:
    block = re.compile(r"```\{exercise\}\n:label: %s\n.*?```\{solution-end\}\n```\n"
                       % re.escape(label), re.S)
    if not block.search(text):
        raise ValueError(f"no exercise {label!r}")
    return block.sub("", text)


def core_text(stem: str) -> str:
    """The chapter's text with its optional parts cut out."""
    text = (ROOT / "book" / f"{stem}.md").read_text()
    spec = OPTIONAL.get(stem, {})
    for heading in spec.get("headings", []):
        text = _cut_heading(text, heading)
    for lead in spec.get("leads", []):
        text = _cut_lead(text, lead)
    for label in spec.get("exercises", []):
        text = _cut_exercise(text, label)
    return text


def planning_minutes(text: str) -> float:
    """Minutes to study a text by ``PLANNING_RULE``."""
    counts = _study_time().count(text)
    plain = counts.exercises - counts.coding_exercises
    return (PLANNING_RULE["reading_factor"] * counts.reading_minutes()
            + PLANNING_RULE["exercise_minutes"] * plain
            + PLANNING_RULE["coding_exercise_minutes"] * counts.coding_exercises)


def hours_table() -> list[tuple[str, float, float, float]]:
    """(chapter, stated hours by the chapters' rule, core hours, whole hours) per chapter."""
    study_time = _study_time()
    rows = []
    for stem in toc_chapters():
        whole_text = (ROOT / "book" / f"{stem}.md").read_text()
        counts = study_time.count(whole_text)
        stated = counts.reading_minutes() + counts.exercise_minutes()
        rows.append((stem, stated / 60, planning_minutes(core_text(stem)) / 60,
                     planning_minutes(whole_text) / 60))
    return rows


#: Where each chapter's box stands (column, height): columns follow the longest chain of
#: prerequisites before a chapter; heights were chosen so that no arrow crosses a box.
LAYOUT = {
    "01_buffet": (0, 0.0), "02_stick_breaking": (1, 1.6), "05_linear_gaussian": (1, -1.6),
    "03_beta_process": (2, 3.0), "04_recursive_ibp": (2, 1.4), "10_pymc": (2, 0.0),
    "06_chains": (2, -1.6), "09_nonconjugate": (3, 2.6), "11_variational": (3, -0.7),
    "13_heldout": (3, -1.6), "07_split_merge": (3, -2.8), "12_streaming": (4, 1.0),
    "08_tempering": (4, -2.8), "14_paper": (5, -0.8),
    "15_own_data": (4, -1.9),
}


def direct_prerequisites() -> dict[str, list[str]]:
    """``PREREQUISITES`` without the arrows a longer path implies (its transitive reduction).

    Examples
    --------
    >>> direct_prerequisites()["08_tempering"]
    ['07_split_merge']
    """
    def upstream(stem: str) -> set[str]:
        found = set()
        for need in PREREQUISITES[stem]:
            found |= {need} | upstream(need)
        return found

    return {stem: [need for need in needs
                   if not any(need in upstream(other) for other in needs if other != need)]
            for stem, needs in PREREQUISITES.items()}


def draw(path: Path = FIGURE) -> Path:
    """Draw the dependency map to ``path`` (SVG, text kept as text, no date: reproducible)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "ibp-lab-chapter-map"
    order = toc_chapters()
    missing = set(order) ^ set(PREREQUISITES) | set(order) ^ set(LAYOUT)
    if missing:
        raise SystemExit(f"PREREQUISITES and _toc.yml disagree on {sorted(missing)}")
    position = {stem: (col * 2.6, height) for stem, (col, height) in LAYOUT.items()}
    optional_whole = {"03_beta_process", "10_pymc", "09_nonconjugate", "14_paper"}
    fig, ax = plt.subplots(figsize=(12.5, 6.2))
    boxes = {}
    for stem, (x, y) in position.items():
        words = chapter_title(stem).split(":")[0]
        label = f"{order.index(stem) + 1}. " + "\n".join(_wrap(words, 24))
        boxes[stem] = ax.text(x, y, label, ha="center", va="center", fontsize=8.5,
                              bbox=dict(boxstyle="round,pad=0.35",
                                        fc="#fff7e0" if stem in optional_whole else "#e8f0fb",
                                        ec="#555555"))
    for stem, needs in direct_prerequisites().items():
        for need in needs:
            _arrow(ax, boxes[need], boxes[stem], dashed=False)
    for stem, needs in BACKGROUND.items():
        for need in needs:
            _arrow(ax, boxes[need], boxes[stem], dashed=True)
    xs = [p[0] for p in position.values()]
    ys = [p[1] for p in position.values()]
    ax.set_xlim(min(xs) - 1.3, max(xs) + 1.3)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.8)
    ax.axis("off")
    ax.set_title("Chapters numbered in reading order. An arrow points from a chapter to one "
                 "that needs it; a chapter needs everything upstream of it.\n"
                 "Dashed: background only. Yellow: left out of the four-week plan, "
                 "or read only in part.",
                 fontsize=9.5)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line]


def _arrow(ax, start, end, *, dashed: bool) -> None:
    """An arrow from box to box, clipped at the boxes' edges."""
    ax.annotate("", xy=end.get_position(), xytext=start.get_position(),
                arrowprops=dict(arrowstyle="-|>", color="#666666", lw=0.9,
                                patchA=start.get_bbox_patch(), patchB=end.get_bbox_patch(),
                                shrinkA=1, shrinkB=1, linestyle="--" if dashed else "-"))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", action="store_true",
                        help="print the plans' hours per chapter instead of drawing")
    args = parser.parse_args(argv)
    if args.hours:
        rows = hours_table()
        print(f"{'chapter':20s} {'stated':>7s} {'core':>6s} {'whole':>6s}")
        for stem, stated, core, whole in rows:
            print(f"{stem:20s} {stated:7.2f} {core:6.2f} {whole:6.2f}")
        totals = [sum(r[i] for r in rows) for i in (1, 2, 3)]
        print(f"{'total':20s} {totals[0]:7.2f} {totals[1]:6.2f} {totals[2]:6.2f}")
    else:
        print(f"wrote {draw().relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
