"""A chapter that reads the same in the web book and in a JupyterLab kernel.

Two things differ between the book build (Sphinx executes the chapter with
myst-nb) and a student's kernel (JupyterLab with ``jupyterlab-myst``):

- **Quoted numbers.** The prose writes a number as ``{eval}`f"{name:.3f}"```.
  In JupyterLab, ``jupyterlab-myst`` evaluates that expression in the kernel; in
  the web build, ``book/_ext/eval_glue.py`` reads the value glued under ``name``.
  :func:`quote` does both: it glues the value (myst-nb) and binds ``name`` in the
  kernel's namespace.
- **Solutions.** A solution's code cell starts with :data:`SOLUTION_MARKER`. The
  book build runs it (its output and numbers appear in the web page's solution);
  in JupyterLab, :func:`skip_solutions` makes the kernel skip such a cell when it
  comes as part of a batch (Run All, Run All Below, several selected cells), so
  that Run All does not run, or show, the solutions; a solution cell run on its own
  (Shift+Enter) runs. The names a skipped cell would have quoted are bound to a
  :class:`Pending` placeholder, so the solution's prose reads "(run the solution's
  code)" instead of an error.

Importing this module does nothing; only calling :func:`quote` or
:func:`skip_solutions` touches the running kernel.
"""

from __future__ import annotations

import numpy as np

import os
import re

__all__ = ["quote", "skip_solutions", "in_book_build", "Pending", "SOLUTION_MARKER",
           "BOOK_BUILD_VARIABLE"]

#: Environment variable set (to "1") while the book build executes the chapters.
BOOK_BUILD_VARIABLE = "IBP_LAB_BOOK_BUILD"
#: First line of every solution code cell (a comment: the web page shows it as one).
SOLUTION_MARKER = "# Solution (Run All skips it: run this cell on its own)"
#: Requests sent within this many seconds of the previous one come from one action of the
#: reader. Run All sends every cell's request without waiting for the kernel, a few
#: milliseconds apart on an idle machine; on a loaded one the browser's own rendering of
#: the cells between them stretched a gap past 50 ms (the JupyterLab test, beside a second
#: server). A reader who reveals a solution and runs it acts seconds after the last request.
BATCH_GAP_S = 1.0

# quote("key", ...) with a literal key, as a skipped solution cell writes it
_QUOTED_KEY = re.compile(r"""\bquote\(\s*(['"])([A-Za-z_]\w*)\1""")


def in_book_build() -> bool:
    """True while the book build executes the chapter (``IBP_LAB_BOOK_BUILD=1``).

    Examples
    --------
    >>> import os
    >>> in_book_build() == (os.environ.get("IBP_LAB_BOOK_BUILD") == "1")
    True
    """
    return os.environ.get(BOOK_BUILD_VARIABLE) == "1"


def _kernel_namespace() -> dict | None:
    """The running IPython kernel's user namespace, or None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython: nothing to bind into
        return None
    shell = get_ipython()
    return None if shell is None else shell.user_ns


def quote(name: str, value, display: bool = True):
    """Glue ``value`` under ``name`` for the book, and bind ``name`` in the kernel.

    A drop-in replacement for ``myst_nb.glue`` (same arguments). The prose then
    quotes the value as ``{eval}`f"{name:.3f}"``` (or ``{eval}`f"{name}"```).

    Parameters
    ----------
    name : str
        A Python identifier: the glue key and the kernel variable.
    value : object
        What to quote (a NumPy scalar is quoted as the Python number it holds).
    display : bool, default True
        Also show the value in the cell's output, as ``glue`` does.

    Returns
    -------
    None

    Examples
    --------
    >>> quote("lab_demo_value", 0.25, display=False)
    >>> quote("not a name", 1.0)
    Traceback (most recent call last):
    ...
    ValueError: name must be a Python identifier (the prose evaluates it), got 'not a name'
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a Python identifier (the prose evaluates it), got {name!r}")
    if not isinstance(display, bool):
        raise TypeError(f"display must be True or False, got {type(display).__name__}")
    from myst_nb import glue

    if isinstance(value, np.generic):
        # NumPy 2 writes a scalar as "np.float64(0.5)", which {glue:text} cannot format
        value = value.item()
    glue(name, value, display=display)
    namespace = _kernel_namespace()
    if namespace is not None:
        namespace[name] = value


class Pending:
    """Stands for a number a skipped solution cell would have quoted.

    Formats (with any format spec) as a short note, so that the prose of a
    solution reads ``(run the solution's code, then this text)`` until its cells are run.

    Examples
    --------
    >>> f"{Pending():.3f}"
    "(run the solution's code, then this text)"
    """

    text = "(run the solution's code, then this text)"

    def __format__(self, spec: str) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


class _Requests:
    """When the kernel's execute requests were sent: is the current one part of a batch?"""

    def __init__(self) -> None:
        self.last_id = None
        self.last_sent = None
        self.batched = False

    def current_is_batched(self) -> bool:
        """True if the running cell's request was sent with the previous one (Run All).

        Reads the request's header (``msg_id``, ``date``: the time the front end sent
        it, by the browser's clock, so two requests compare without any clock skew).
        A request is read once; a second look at it gives the same answer.
        """
        from IPython import get_ipython

        shell = get_ipython()
        parent = shell.get_parent() if hasattr(shell, "get_parent") else {}
        header = (parent or {}).get("header", {})
        msg_id, sent = header.get("msg_id"), _as_datetime(header.get("date"))
        if msg_id is None or msg_id == self.last_id:
            return self.batched
        self.batched = bool(sent is not None and self.last_sent is not None
                            and abs((sent - self.last_sent).total_seconds()) < BATCH_GAP_S)
        self.last_id, self.last_sent = msg_id, sent
        return self.batched


def _as_datetime(value):
    """A header's date as a datetime (jupyter_client parses it; a string is parsed here)."""
    from datetime import datetime

    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return value if isinstance(value, datetime) else None


_REQUESTS = _Requests()


def _skip_marked_cells(lines: list[str]) -> list[str]:
    """IPython input transformer: a solution cell that came in a batch (Run All) becomes
    code that only binds placeholders; every cell's request time is noted on the way."""
    batched = _REQUESTS.current_is_batched()
    if not lines or lines[0].rstrip("\n") != SOLUTION_MARKER or not batched:
        return lines
    keys = sorted({match[2] for match in _QUOTED_KEY.finditer("".join(lines))})
    bind = "".join(f"{key} = _ibp_lab_pending\n" for key in keys)
    return ["from ibp_lab.teaching.lab import Pending as _ibp_lab_pending\n",
            "_ibp_lab_pending = _ibp_lab_pending()\n", bind, "del _ibp_lab_pending\n"]


def skip_solutions(skip: bool = True, *, pending=()) -> bool:
    """Make Run All skip solution cells (those starting with :data:`SOLUTION_MARKER`).

    A solution cell is skipped when its request was sent together with the previous
    cell's (within :data:`BATCH_GAP_S`: Run All, Run All Below, a selection run at
    once); run on its own, it runs. Called by a chapter's first cell. It does nothing during the book build,
    which must run the solutions. ``skip_solutions(False)`` runs them again. In a kernel
    JupyterLab started for a chapter, it also turns on
    :func:`ibp_lab.teaching.captions.show_captions`, so that figures show their captions.

    Parameters
    ----------
    skip : bool, default True
        Skip (True) or run (False) solution cells from now on.
    pending : sequence of str, optional
        Names that solutions' prose quotes: bound to :class:`Pending` now (unless
        already bound), so the prose reads "(run the solution's code, then this text)" until they run.

    Returns
    -------
    bool
        Whether solution cells are now skipped.

    Examples
    --------
    >>> skip_solutions(False)   # solution cells run (as in the book build)
    False
    """
    if not isinstance(skip, bool):
        raise TypeError(f"skip must be True or False, got {type(skip).__name__}")
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if isinstance(pending, str) or not all(isinstance(n, str) and n.isidentifier() for n in pending):
        raise ValueError(f"pending must be a list of Python identifiers, got {pending!r}")
    transformers = shell.input_transformers_cleanup
    while _skip_marked_cells in transformers:
        transformers.remove(_skip_marked_cells)
    if not in_book_build():
        from ibp_lab.teaching.captions import show_captions

        show_captions()  # JupyterLab shows no code cell's caption: the kernel does
    if skip and not in_book_build():
        transformers.insert(0, _skip_marked_cells)
        for name in pending:
            shell.user_ns.setdefault(name, Pending())
        return True
    return False
