"""Captions under figures in a JupyterLab kernel (issue 53): read from the chapter, shown
after the captioned cell runs, not after others, not for skipped solutions, not in the build."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibp_lab.teaching import captions
from ibp_lab.teaching.captions import CAPTION_PREFIX, chapter_captions, equation_numbers, show_captions
from ibp_lab.teaching.lab import skip_solutions

ROOT = Path(__file__).resolve().parents[2]

PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
  language: python
---

$$ x = 1 $$ (eq-first)

```{math}
:label: eq-second
y = 2
```

```{code-cell} ipython3
---
mystnb:
  figure:
    caption: The draws against the law {eq}`eq-second`,
      over two lines.
    name: fig-draws
---
shown = "figure"
```

```{code-cell} ipython3
plain = 1
```
"""


def test_captions_are_read_with_their_equation_numbers():
    assert equation_numbers(PAGE) == {"eq-first": 1, "eq-second": 2}
    assert chapter_captions(PAGE) == {
        'shown = "figure"': "The draws against the law (2), over two lines."}


def test_every_chapter_figure_caption_is_found_and_its_references_resolved():
    for chapter in sorted((ROOT / "book").glob("[01][0-9]_*.md")):
        source = chapter.read_text()
        found = chapter_captions(source)
        assert len(found) == source.count("\n  figure:\n    caption:"), chapter.name
        assert not any("{eq}" in caption for caption in found.values()), chapter.name


class _Shown:
    """Records what the shell displays (a caption's Markdown, as its text)."""

    is_publishing = False

    def __init__(self):
        self.outputs = []

    def publish(self, data, metadata=None, **kwargs):
        self.outputs.append(data.get("text/markdown", data.get("text/plain")))

    def clear_output(self, wait=False):
        pass


@pytest.fixture()
def shell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = _Shown()
    monkeypatch.setattr(shell, "display_pub", shown)
    monkeypatch.delenv("IBP_LAB_BOOK_BUILD", raising=False)
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    yield shell, shown.outputs
    show_captions_off(shell)


def show_captions_off(shell):
    for callback in list(shell.events.callbacks["post_run_cell"]):
        if getattr(callback, "__name__", "") == "show_caption":
            shell.events.unregister("post_run_cell", callback)


def test_the_caption_follows_its_cell_and_no_other(shell, tmp_path, monkeypatch):
    shell, outputs = shell
    chapter = tmp_path / "chapter.md"
    chapter.write_text(PAGE)
    monkeypatch.setenv("JPY_SESSION_NAME", str(chapter))
    assert show_captions() == 1
    shell.run_cell("plain = 1", store_history=True)
    assert outputs == []
    shell.run_cell('shown = "figure"\n', store_history=True)
    assert outputs == [f"{CAPTION_PREFIX} The draws against the law (2), over two lines."]
    assert show_captions() == 1  # a second call replaces the first: still one caption a run
    shell.run_cell('shown = "figure"', store_history=True)
    assert len(outputs) == 2


def test_a_failed_or_skipped_cell_shows_no_caption(shell, tmp_path):
    shell, outputs = shell
    chapter = tmp_path / "chapter.md"
    chapter.write_text(PAGE.replace('shown = "figure"', "1 / 0"))
    assert show_captions(chapter) == 1
    shell.run_cell("1 / 0", store_history=True)
    assert outputs == []
    skipped = PAGE.replace('shown = "figure"', "from ibp_lab.teaching.lab import Pending")
    chapter.write_text(skipped)  # the history's last entry is what a skipped solution runs
    show_captions(chapter)
    shell.run_cell("from ibp_lab.teaching.lab import Pending", store_history=True)
    assert outputs == []


def test_nothing_is_shown_in_the_book_build_or_without_a_chapter(shell, tmp_path, monkeypatch):
    shell, outputs = shell
    chapter = tmp_path / "chapter.md"
    chapter.write_text(PAGE)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert show_captions() == 0
    monkeypatch.setenv("IBP_LAB_BOOK_BUILD", "1")
    monkeypatch.setenv("JPY_SESSION_NAME", str(chapter))
    assert skip_solutions() is False  # the build: no solution skipped, no caption hook
    shell.run_cell('shown = "figure"', store_history=True)
    assert outputs == []
    monkeypatch.delenv("IBP_LAB_BOOK_BUILD")
    assert skip_solutions() is True  # a JupyterLab kernel: the chapter's captions show
    shell.run_cell('shown = "figure"', store_history=True)
    assert len(outputs) == 1
    skip_solutions(False)


def test_a_path_that_is_not_a_file_is_refused(shell, tmp_path):
    with pytest.raises(ValueError, match="path must name a chapter's Markdown file"):
        show_captions(tmp_path / "missing.md")
    with pytest.raises(TypeError, match="source must be a chapter's text"):
        chapter_captions(None)
    assert captions.__all__
