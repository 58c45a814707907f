"""Sphinx extension: the status page's execution table, in words.

myst-nb's ``nb-exec-table`` shows success as an emoji glyph, which renders as an
empty box on a machine without emoji fonts. The ``ibp-exec-table`` directive
builds the same table from the same records (myst-nb's per-document execution
data) with the status spelled out, and adds each chapter's per-cell time limit
(``mystnb: execution_timeout`` in its front matter), the measure of the CPU time any one
of its cells may use.

It also runs every execution of a chapter under a :class:`KernelWatch`, which tells a
stalled cell from a slow machine by what the kernel does, not by the clock:

- a cell whose kernel (its child processes included, such as PyMC's chains) gains almost
  no CPU time for ``STALL_WINDOW_S`` seconds has stalled: it is killed at once, whatever
  its limit. That covers a kernel that sleeps or deadlocks, and one that finished while
  the client missed its reply (a lost wake-up, which nbclient's last check at its limit
  would otherwise find, so that the stalled cell passed);
- a cell that keeps working is never failed for wall time: on a loaded machine it gets
  less of a core and takes longer, but uses the same CPU time. Its limit is one of CPU
  time, the chapter's ``execution_timeout`` on every usable core (:func:`cpu_limit`);
  nbclient's own wall-clock limit is set ``WALL_BACKSTOP`` times higher, a last resort.

Each cell's wall and CPU seconds are stored in the notebook's metadata
(``CELL_RECORD_KEY``); ``tools/build_book.py`` reads them from the execution cache for
its checks and for ``_build/execution.json``.
"""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
import threading
import time
from collections import deque
from datetime import datetime
from pathlib import Path

import yaml
import myst_nb.core.execute.cache as mystnb_cache
from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

# myst-nb re-renders every document that carries this flag when execution data
# change; setting it on our page keeps the table fresh without a second mechanism.
from myst_nb.ext.execution_tables import METADATA_KEY
from myst_nb.sphinx_ import NbMetadataCollector

HEADERS = ["Chapter", "Executed", "How", "Run time (s)", "Cell limit (s)", "Status"]


class ExecutionStatusNode(nodes.General, nodes.Element):
    """Placeholder, replaced by the table once every chapter has executed."""


class ExecutionStatusTable(SphinxDirective):
    """``{ibp-exec-table}``: a table of the chapters' executions, status in text."""

    def run(self):
        NbMetadataCollector.set_doc_data(self.env, self.env.docname, METADATA_KEY, True)
        return [ExecutionStatusNode()]


def cell_limit(srcdir: Path, docname: str) -> str:
    """The chapter's per-cell time limit from its front matter, or the book's default."""
    text = (srcdir / f"{docname}.md").read_text(encoding="utf-8")
    if text.startswith("---"):
        front = yaml.safe_load(text.split("---", 2)[1]) or {}
        limit = (front.get("mystnb") or {}).get("execution_timeout")
        if limit is not None:
            return str(limit)
    return "default"


def status_text(data: dict) -> str:
    """``ok`` or ``FAILED (<error>)``: words, not a glyph."""
    return "ok" if data.get("succeeded") else f"FAILED ({data.get('error') or 'unknown error'})"


def _cell(content) -> nodes.entry:
    paragraph = nodes.paragraph()
    paragraph += content if isinstance(content, nodes.Node) else nodes.Text(str(content))
    return nodes.entry("", paragraph)


def _link(parent: str, docname: str) -> pending_xref:
    ref = pending_xref(refdoc=parent, reftarget=posixpath.relpath(docname, posixpath.dirname(parent)),
                       reftype="doc", refdomain="std", refexplicit=True, refwarn=True)
    ref += nodes.inline(text=docname)
    return ref


def make_table(parent: str, records: dict, srcdir: Path) -> nodes.table:
    """The table node: one row per executed document, in name order."""
    table = nodes.table(classes=["colwidths-auto", "ibp-exec-table"])
    group = nodes.tgroup(cols=len(HEADERS))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in HEADERS]
    head, body = nodes.thead(), nodes.tbody()
    group += [head, body]
    head += nodes.row("", *[_cell(h) for h in HEADERS])
    for docname in sorted(records):
        data = records[docname].get("exec_data")
        if not data:
            continue
        when = datetime.fromtimestamp(data["mtime"]).strftime("%Y-%m-%d %H:%M") if data.get("mtime") else "-"
        runtime = "-" if data.get("runtime") is None else f"{data['runtime']:.1f}"
        body += nodes.row("", _cell(_link(parent, docname)), _cell(when), _cell(data.get("method", "-")),
                          _cell(runtime), _cell(cell_limit(srcdir, docname)), _cell(status_text(data)))
    return table


class ExecutionStatusPostTransform(SphinxPostTransform):
    default_priority = 8  # before references are resolved, as myst-nb's own table

    def run(self, **kwargs) -> None:
        records = NbMetadataCollector.get_doc_data(self.env)
        for node in list(self.document.findall(ExecutionStatusNode)):
            node.replace_self(make_table(self.env.docname, records, Path(self.env.srcdir)))


#: Notebook metadata key holding ``{cell index: {"wall_s": ..., "cpu_s": ...}}``: each cell's
#: wall-clock seconds on the client's clock and the CPU seconds its kernel (children
#: included) spent on it. Notebook-level, because jupyter-cache hashes every cell metadata
#: key (a cell key would make the cached notebook never match its source) but only
#: ``kernelspec`` of the notebook's.
CELL_RECORD_KEY = "ibp_cells"
#: A cell has stalled when its kernel, children included, gains less than ``STALL_SHARE`` of
#: one core over ``STALL_WINDOW_S`` seconds: 0.6 s of CPU in 30 s. A working cell on a
#: loaded 2-core machine still gets its fair share (about 2/15 of a core at a load of 15,
#: 4 s in 30 s); an idle kernel gains nothing (measured: 0.00 s in 20 s), whether it sleeps,
#: waits on a lock, or finished while the client missed its reply (a lost wake-up).
STALL_WINDOW_S = 30.0
STALL_SHARE = 0.02
#: How often the watch reads the kernel's CPU time (about 1 ms of the client's CPU a read).
POLL_S = 0.5
#: nbclient's own wall-clock limit, in multiples of the chapter's limit: only a last resort
#: should the watch itself fail, never what a busy machine meets.
WALL_BACKSTOP = 10


def usable_cores() -> int:
    """CPUs this process may run on (its CPU affinity: a container's cpuset, or all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_limit(limit_s: float, cores: int | None = None) -> float:
    """CPU seconds a cell may use: its chapter's limit on every usable core.

    A cell that stays within its limit on an idle machine cannot use more, however many
    of its threads or processes run at once; on a loaded machine its wall time stretches
    but its CPU time does not, so the same work meets the same limit.

    >>> cpu_limit(60, cores=2)
    120.0
    """
    return float(limit_s) * (usable_cores() if cores is None else cores)


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user and system) of process ``pid`` and all its descendants, the ones
    that ended and were waited for included; None once ``pid`` is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        tree = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    total = 0.0
    for process in tree:
        try:
            times = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # ended between the listing and the read: its parent collects it
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _first_line(cell) -> str:
    return next((line for line in cell.source.splitlines() if line.strip()), "")[:60]


class KernelWatch:
    """Watches one kernel while its cells run; kills it when a cell stalls or overruns.

    A thread reads the CPU time of the kernel's process tree every ``poll_s`` seconds
    while a cell runs. The cell fails (the kernel and its children are killed, and
    nbclient, which checks each second that the kernel lives, stops waiting) when

    - it stalled: the tree gained less than ``STALL_SHARE`` of a core over the last
      ``stall_window_s`` seconds, or
    - it overran: it used more than :func:`cpu_limit` CPU seconds.

    Wall time never fails a cell here, so a loaded machine does not; ``failure`` then
    names the chapter, the cell and what was measured.

    Parameters
    ----------
    limit_s : float
        The chapter's per-cell limit (``mystnb: execution_timeout``), in seconds.
    chapter : str
        The chapter's name, for the failure message.
    stall_window_s, poll_s : float
        The stall rule's window and the reading interval (small in tests).

    Examples
    --------
    >>> watch = KernelWatch(60, chapter="book/01_buffet")
    >>> watch.cpu_limit_s == cpu_limit(60)
    True
    """

    def __init__(self, limit_s: float, *, chapter: str = "", stall_window_s: float = STALL_WINDOW_S,
                 poll_s: float = POLL_S):
        self.cpu_limit_s = cpu_limit(limit_s)
        self.chapter = chapter or "notebook"
        self.stall_window_s = stall_window_s
        self.poll_s = poll_s
        self.pid: int | None = None
        self.failure: str | None = None
        self.records: dict[str, dict] = {}
        self._cell = None  # (index, first line, wall start, CPU at start)
        self._samples: deque[tuple[float, float]] = deque()  # (wall, tree CPU) within the window
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kernel-watch", daemon=True)

    # -- nbclient's side: the kernel manager and the cell hooks ----------------------------

    def kernel_manager_class(self):
        """An ``AsyncKernelManager`` that tells this watch its kernel's process id."""
        from jupyter_client.manager import AsyncKernelManager

        watch = self

        class WatchedKernelManager(AsyncKernelManager):
            async def start_kernel(self, **kwargs):
                await super().start_kernel(**kwargs)
                process = getattr(self.provisioner, "process", None)
                if process is None:  # a remote kernel: nothing here can read its CPU time
                    raise RuntimeError("the kernel watch needs a local kernel process")
                watch.pid = process.pid

        return WatchedKernelManager

    def cell_started(self, cell, cell_index, **_):
        with self._lock:
            cpu = tree_cpu_seconds(self.pid) if self.pid is not None else None
            now = time.monotonic()
            self._cell = (cell_index, _first_line(cell), now, cpu or 0.0)
            self._samples = deque([(now, cpu or 0.0)])

    def cell_finished(self, cell, cell_index, **_):
        with self._lock:
            if self._cell is None:
                return
            index, _, started, cpu_start = self._cell
            cpu = tree_cpu_seconds(self.pid) if self.pid is not None else None
            self.records[str(index)] = {"wall_s": round(time.monotonic() - started, 3),
                                        "cpu_s": round(max((cpu or cpu_start) - cpu_start, 0.0), 3)}
            self._cell = None

    # -- the watch itself -----------------------------------------------------------------

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            with self._lock:
                if self._cell is not None and self.failure is None and self.pid is not None:
                    self._check(time.monotonic(), tree_cpu_seconds(self.pid))

    def _check(self, now: float, cpu: float | None) -> None:
        if cpu is None:
            return  # the kernel is gone: nbclient reports a dead kernel itself
        index, first, started, cpu_start = self._cell
        if cpu - cpu_start > self.cpu_limit_s:
            self._fail(f"{self.chapter}: cell {index} ({first!r}) used {cpu - cpu_start:.0f} s "
                       f"of CPU, over its limit of {self.cpu_limit_s:.0f} s (the chapter's "
                       f"limit on each of {usable_cores()} cores): raise the limit or shorten "
                       "the cell")
            return
        self._samples.append((now, cpu))
        while len(self._samples) > 1 and self._samples[1][0] <= now - self.stall_window_s:
            self._samples.popleft()  # keep one sample at least a window old
        then, cpu_then = self._samples[0]
        if now - then >= self.stall_window_s and cpu - cpu_then < STALL_SHARE * (now - then):
            self._fail(f"{self.chapter}: cell {index} ({first!r}) stalled: its kernel used "
                       f"{cpu - cpu_then:.2f} s of CPU in the last {now - then:.0f} s "
                       f"({now - started:.0f} s into the cell); killed")

    def _fail(self, message: str) -> None:
        import psutil

        self.failure = message
        if self.pid is None:
            return
        try:
            kernel = psutil.Process(self.pid)
            tree = kernel.children(recursive=True) + [kernel]
        except psutil.NoSuchProcess:
            return
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


def timed_execution(execute, nb, *args, timeout: float | None, chapter: str = "",
                    stall_window_s: float = STALL_WINDOW_S, poll_s: float = POLL_S, **kwargs):
    """Run ``execute(nb, ...)`` (jupyter-cache's ``single_nb_execution``) under a
    :class:`KernelWatch`, and store each cell's wall and CPU seconds in
    ``nb.metadata[CELL_RECORD_KEY]``.

    ``timeout`` is the chapter's per-cell limit: the watch fails a cell that stalls or
    uses more than :func:`cpu_limit` of CPU; nbclient itself is given ``WALL_BACKSTOP``
    times the limit. A failure of the watch comes back as the result's error, naming the
    chapter and the cell. Used by the build's own executions (the hook below) and by
    ``tools/execute_chapters.py``, which runs chapters in parallel before the build.

    Examples
    --------
    >>> from jupyter_cache.executors.utils import single_nb_execution
    >>> result = timed_execution(single_nb_execution, nb, cwd="book", allow_errors=False,
    ...                          timeout=60, chapter="book/01_buffet")  # doctest: +SKIP
    >>> result.err is None, nb.metadata[CELL_RECORD_KEY]["3"]  # doctest: +SKIP
    (True, {'wall_s': 1.2, 'cpu_s': 1.1})
    """
    from jupyter_cache.executors.utils import ExecutionResult
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    limit = float(timeout) if timeout and timeout > 0 else math.inf  # nbclient: None, no limit
    watch = KernelWatch(limit, chapter=chapter, stall_window_s=stall_window_s, poll_s=poll_s)
    kwargs.setdefault("on_cell_execute", watch.cell_started)
    kwargs.setdefault("on_cell_executed", watch.cell_finished)
    kwargs.setdefault("kernel_manager_class", watch.kernel_manager_class())
    started = time.monotonic()
    with watch:
        try:
            backstop = int(limit * WALL_BACKSTOP) if math.isfinite(limit) else None
            result = execute(nb, *args, timeout=backstop, **kwargs)
        except DeadKernelError:
            if watch.failure is None:
                raise
            result = ExecutionResult(nb, kwargs.get("cwd"), time.monotonic() - started)
    if watch.failure is not None:  # the kernel was killed: that is the error to report
        result.err, result.exc_string = CellTimeoutError(watch.failure), watch.failure
    nb.metadata[CELL_RECORD_KEY] = watch.records
    return result


def _record_cell_timing() -> None:
    """Have myst-nb's cache-mode executions run under the kernel watch and store each
    cell's wall and CPU seconds (myst-nb passes the chapter's limit as ``timeout``)."""
    execute = mystnb_cache.single_nb_execution
    if getattr(execute, "watches_cells", False):
        return

    def single_nb_execution_timed(nb, *args, **kwargs):
        return timed_execution(execute, nb, *args, **kwargs)

    single_nb_execution_timed.watches_cells = True
    mystnb_cache.single_nb_execution = single_nb_execution_timed


def _write_cached_outputs() -> None:
    """Make the notebook myst-nb writes out (``_build/jupyter_execute/<chapter>.ipynb``, and
    the page's ``.ipynb`` download in ``_sources/``) carry the outputs of a cached execution.

    With a cache hit, myst-nb's ``NotebookClientCache.start_client`` swaps in a *new* notebook
    merged with the cached outputs and renders the page from it, but the parser then writes
    the notebook object it read, which has none: every figure and printed value is missing
    from the written notebook (myst-nb 1.x; an execution, rather than a cache hit, fills the
    object it read, so that path was always right). Copying the merged notebook into the
    object read restores the outputs; the page is rendered from the same content as before.
    """
    start_client = mystnb_cache.NotebookClientCache.start_client
    if getattr(start_client, "writes_cached_outputs", False):
        return

    def start_client_filling_the_notebook_read(self):
        read = self._notebook
        start_client(self)
        if self._notebook is not read:  # a cache hit: outputs are in the merged copy only
            read.clear()
            read.update(self._notebook)
            self._notebook = read

    start_client_filling_the_notebook_read.writes_cached_outputs = True
    mystnb_cache.NotebookClientCache.start_client = start_client_filling_the_notebook_read


def setup(app):
    _record_cell_timing()
    _write_cached_outputs()
    app.add_node(ExecutionStatusNode)
    app.add_directive("ibp-exec-table", ExecutionStatusTable)
    app.add_post_transform(ExecutionStatusPostTransform)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
