"""tools/convert_to_lab.py: every chapter converts, a second run changes nothing, and a
construct it cannot convert is refused with the file and line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from convert_to_lab import convert  # noqa: E402

from ibp_lab.lab import SOLUTION_MARKER  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_chapter_converts_once_and_for_all(path):
    original = path.read_text()
    once = convert(original)
    assert convert(once) == once  # idempotent
    assert "{glue" not in once and "myst_nb" not in once and not re.search(r"\bglue\(", once)
    if once == original:  # the book is converted already: nothing of the old forms is left
        assert "live_explorer(" not in once and "static_explorer(" not in once
        return
    # every quoted number of the prose is still quoted, under the same name and format
    glued = re.findall(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`", original)
    evals = re.findall(r'\{eval\}`f"\{([A-Za-z_]\w*)(?::([^}"]*))?\}"`', once)
    if "{glue:text}" in original:
        assert glued == evals
    # one explorer cell per place
    assert once.count("\nexplorer(") == original.count("live_explorer(render")
    # every solution code cell is marked for the kernel to skip
    solution_cells = len(re.findall(r"^tags: \[solution\]|^:tags: \[solution\]", original, re.M))
    assert once.count(SOLUTION_MARKER) >= solution_cells


HEADER = "---\nkernelspec: {name: python3}\n---\n"


@pytest.mark.parametrize("body, message", [
    ("Figure {glue:figure}`x`.\n", "glue role other than"),
    ("Value {glue:text}`not-a-name:.2f`.\n", "not a Python identifier"),
    ('```{code-cell} ipython3\nglue("bad key", 1)\n```\n', "not a Python identifier"),
    ('```{code-cell} ipython3\nlive_explorer(render, g)\n```\n', "not followed by"),
    ('```{code-cell} ipython3\nx = 1\nglue("x", 2)\n```\n', "also a variable"),
    ('```{code-cell} ipython3\nfrom myst_nb import glue as g\n```\n', "glue used otherwise"),
])
def test_what_cannot_be_converted_is_refused_naming_file_and_line(tmp_path, body, message):
    path = tmp_path / "chapter.md"
    path.write_text(HEADER + "\n" + body)
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "convert_to_lab.py"), str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert re.match(rf"{re.escape(str(path))}: line \d+: ", result.stderr), result.stderr
    assert message in result.stderr
    assert path.read_text() == HEADER + "\n" + body  # nothing written
