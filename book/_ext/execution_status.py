"""Sphinx extension: the status page's execution table, in words.

myst-nb's ``nb-exec-table`` shows success as an emoji glyph, which renders as an
empty box on a machine without emoji fonts. The ``ibp-exec-table`` directive
builds the same table from the same records (myst-nb's per-document execution
data) with the status spelled out, and adds each chapter's per-cell time limit
(``mystnb: execution_timeout`` in its front matter), so a reader sees what a
stalled cell would have been allowed.

It also makes every execution store each cell's wall-clock time in the
notebook's metadata (``ibp_cell_seconds``): ``tools/build_book.py`` reads them from the
execution cache to fail a build in which a cell ran into its
chapter's limit. That check is needed because nbclient, when its wait for a
reply times out, makes one last non-blocking check for the reply; a reply whose
wake-up was lost is found there, and the stalled cell would otherwise pass.
"""

from __future__ import annotations

import posixpath
import time
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


#: Notebook metadata key holding ``{cell index: wall-clock seconds}`` as the build saw them.
#: Notebook-level, because jupyter-cache hashes every cell metadata key (a cell key would
#: make the cached notebook never match its source) but only ``kernelspec`` of the notebook's.
CELL_SECONDS_KEY = "ibp_cell_seconds"


def timed_execution(execute, nb, *args, **kwargs):
    """Run ``execute(nb, ...)`` (jupyter-cache's ``single_nb_execution``) and store each
    cell's wall-clock time in ``nb.metadata[CELL_SECONDS_KEY]``.

    nbclient's own ``record_timing`` stores the kernel's timestamps, which do not show a
    reply that reached the client late; the hooks below time the cell on the client's
    clock, from the request to the processed reply. Used by the build's own executions
    (the hook below) and by ``tools/execute_chapters.py``, which runs chapters in parallel
    before the build.
    """
    started: dict[int, float] = {}
    seconds: dict[str, float] = {}

    def on_cell_start(cell, cell_index):
        started[cell_index] = time.monotonic()

    def on_cell_executed(cell, cell_index, execute_reply):
        seconds[str(cell_index)] = round(time.monotonic() - started[cell_index], 3)

    kwargs.setdefault("on_cell_start", on_cell_start)
    kwargs.setdefault("on_cell_executed", on_cell_executed)
    result = execute(nb, *args, **kwargs)
    nb.metadata[CELL_SECONDS_KEY] = seconds
    return result


def _record_cell_timing() -> None:
    """Have myst-nb's cache-mode executions store each cell's wall-clock time."""
    execute = mystnb_cache.single_nb_execution
    if getattr(execute, "records_wall_time", False):
        return

    def single_nb_execution_timed(nb, *args, **kwargs):
        return timed_execution(execute, nb, *args, **kwargs)

    single_nb_execution_timed.records_wall_time = True
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
