"""Figure captions under a chapter's figures in JupyterLab, as the web page shows them.

A chapter states a figure's caption in its code cell's metadata
(``mystnb: figure: caption:``). The book build reads it there and sets it under the
figure; JupyterLab (with ``jupyterlab-myst``) ignores a code cell's metadata, so the
figure would stand there bare, and some (error bands, owner counts) cannot be read
without their captions. :func:`show_captions` closes that gap from the kernel's side:
it reads the open chapter's source once, and after each cell that ran, if that cell is
a captioned one, shows its caption as a Markdown output right below the figure.

Nothing happens outside IPython or when the kernel cannot tell which chapter it runs,
as in the book build (which sets the captions itself): the build's kernel is started for
no notebook of JupyterLab's, and :func:`ibp_lab.teaching.lab.skip_solutions`, which turns
the captions on, does not call this module there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["CAPTION_PREFIX", "chapter_captions", "equation_numbers", "show_captions"]

#: How a caption output starts, so a reader (and a test) tells it from the figure's output.
CAPTION_PREFIX = "**Figure.**"
# where a chapter labels an equation: a :label: option of a math block, or $$ ... $$ (label)
_EQUATION_LABEL = re.compile(r"^:label:\s*(eq-\S+)\s*$|\$\$\s*\((eq-\S+)\)\s*$", re.M)
_EQ_ROLE = re.compile(r"\{eq\}`([^`]+)`")
# the first line of a solution cell that Run All skipped (see ibp_lab.teaching.lab)
_SKIPPED_CELL_START = "from ibp_lab.teaching.lab import Pending"


def equation_numbers(source: str) -> dict[str, int]:
    """The number each labelled equation of a chapter shows: 1, 2, ... in page order.

    Parameters
    ----------
    source : str
        The chapter's MyST Markdown.

    Returns
    -------
    dict
        Label to number, as the web page and ``jupyterlab-myst`` number them.

    Examples
    --------
    >>> equation_numbers("$$ a $$ (eq-a)\\n\\n:label: eq-b\\n")
    {'eq-a': 1, 'eq-b': 2}
    """
    labels = [first or second for first, second in _EQUATION_LABEL.findall(source)]
    return {label: number for number, label in enumerate(dict.fromkeys(labels), start=1)}


def _plain_caption(caption: str, numbers: dict[str, int]) -> str:
    """The caption with its equation references as the numbers the page shows."""
    return _EQ_ROLE.sub(lambda m: f"({numbers[m[1]]})" if m[1] in numbers else m[1], caption)


def chapter_captions(source: str) -> dict[str, str]:
    """Each captioned code cell of a chapter: its code (stripped) and its caption.

    Parameters
    ----------
    source : str
        The chapter's MyST Markdown, as JupyterLab opens it (through jupytext).

    Returns
    -------
    dict
        The code of each captioned cell, stripped of surrounding white space, to its
        caption with ``{eq}`` references replaced by the equations' numbers.

    Examples
    --------
    >>> page = ("---\\njupytext:\\n  text_representation:\\n    format_name: myst\\n---\\n"
    ...         "```{code-cell} ipython3\\n---\\nmystnb:\\n  figure:\\n"
    ...         "    caption: The draws.\\n---\\nplot(draws)\\n```\\n")
    >>> chapter_captions(page)
    {'plot(draws)': 'The draws.'}
    """
    import jupytext

    if not isinstance(source, str):
        raise TypeError(f"source must be a chapter's text (str), got {type(source).__name__}")
    numbers = equation_numbers(source)
    captions = {}
    for cell in jupytext.reads(source, fmt="md:myst").cells:
        caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
        if cell.cell_type == "code" and caption:
            captions[cell.source.strip()] = _plain_caption(" ".join(str(caption).split()), numbers)
    return captions


def _chapter_path(shell) -> Path | None:
    """The notebook the kernel runs, as JupyterLab names it (None if it does not say)."""
    name = os.environ.get("JPY_SESSION_NAME") or shell.user_ns.get("__session__")
    if not name:
        return None
    # JupyterLab gives the file's full path; a bare session path is relative to the
    # server's root, while the kernel runs in the notebook's folder
    for path in (Path(name), Path.cwd() / Path(name).name):
        if path.suffix == ".md" and path.is_file():
            return path
    return None


def _caption_hook(shell, captions: dict[str, str]):
    """A ``post_run_cell`` callback that shows the caption of a captioned cell that ran."""

    def show_caption(result) -> None:
        caption = captions.get((result.info.raw_cell or "").strip()) if result.info else None
        if caption is None or not result.success:
            return
        history = shell.user_ns.get("_ih") or [""]
        if history[-1].startswith(_SKIPPED_CELL_START):
            return  # a solution that Run All skipped shows no figure, so no caption
        from IPython.display import Markdown, display

        display(Markdown(f"{CAPTION_PREFIX} {caption}"))

    return show_caption


def show_captions(path: str | os.PathLike | None = None) -> int:
    """Show each captioned figure's caption below it when its cell runs in JupyterLab.

    Called by a chapter's first cell (through :func:`ibp_lab.teaching.lab.skip_solutions`).
    A second call replaces the first one's captions; nothing is done outside IPython or
    when no chapter is named and JupyterLab names none (as in the book build).

    Parameters
    ----------
    path : str or path-like, optional
        The chapter's Markdown file. By default the notebook JupyterLab says the kernel
        runs (``JPY_SESSION_NAME``).

    Returns
    -------
    int
        How many captions the kernel will show (0 when it shows none).

    Examples
    --------
    >>> show_captions()   # outside a JupyterLab kernel: nothing to do
    0
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return 0
    shell = get_ipython()
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path must name a chapter's Markdown file; {str(path)!r} is not a file")
    if shell is None:
        return 0
    path = path or _chapter_path(shell)
    callbacks = shell.events.callbacks["post_run_cell"]
    for callback in [c for c in callbacks if getattr(c, "__name__", "") == "show_caption"]:
        shell.events.unregister("post_run_cell", callback)
    if path is None:
        return 0
    captions = chapter_captions(path.read_text(encoding="utf-8"))
    shell.events.register("post_run_cell", _caption_hook(shell, captions))
    return len(captions)
