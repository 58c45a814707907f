"""Execute the chapters the execution cache lacks, two at a time, before the book is built.

``jupyter-book build`` executes one notebook after another, so on a two-core machine half
of the machine waits while a chapter runs (each chapter's kernel mostly uses one core).
``tools/build_book.py`` calls :func:`execute_stale` first: every chapter whose current
text has no entry in the execution cache (``_build/.jupyter_cache``) runs here, in a
fresh kernel of its own, the longest first, ``workers`` at a time; each executed notebook
goes into the cache exactly as myst-nb would put it there. The Sphinx build that follows
then finds every chapter in the cache and only renders it.

What stays the same as a build's own execution (myst-nb's ``NotebookClientCache``):

- the notebook is read by myst-nb's own reader, so its hash is the one the build looks up;
- it runs in ``book/`` (``execute.run_in_temp: false``), with the chapter's own per-cell
  limit (``mystnb: execution_timeout``, else ``execute.timeout``), errors not allowed, and
  ``IBP_LAB_BOOK_BUILD=1`` in the kernel's environment;
- each cell runs under the same kernel watch (``book/_ext/execution_status.py``): a cell
  that stalls (its kernel gains no CPU time) fails within ``STALL_WINDOW_S``, one that
  keeps working is not failed for wall time, and each cell's wall and CPU seconds are
  stored in the notebook's metadata for the build's checks.

A chapter that fails is reported with its traceback and nothing of it is cached; the
build stops there.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapter_settings import BUILD, CACHE, ROOT, cell_limit, execution_status  # noqa: E402

#: What myst-nb records as the reader of a MyST Markdown notebook (myst_nb.core.read).
READ_DATA = {"type": "plugin", "name": "myst_nb_md"}


def read_chapter(docname: str):
    """The chapter as myst-nb's Sphinx parser reads it (same cells, same hash)."""
    import yaml
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extensions = set((config.get("parse") or {}).get("myst_enable_extensions") or [])
    path = ROOT / f"{docname}.md"
    return read_myst_markdown_notebook(path.read_text(encoding="utf-8"),
                                       config=MdParserConfig(enable_extensions=extensions),
                                       add_source_map=True, path=str(path))


def is_notebook(docname: str) -> bool:
    from myst_nb.core.read import is_myst_markdown_notebook

    return is_myst_markdown_notebook((ROOT / f"{docname}.md").read_text(encoding="utf-8"))


def stale(docnames: list[str], cache) -> list[str]:
    """The notebook chapters whose current text the cache has no execution of."""
    missing = []
    for docname in docnames:
        if not is_notebook(docname):
            continue
        try:
            cache.match_cache_notebook(read_chapter(docname))
        except KeyError:
            missing.append(docname)
    return missing


def _execute(docname: str, timeout: int) -> dict:
    """Run one chapter in a fresh kernel (in a worker process); the executed notebook back."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = read_chapter(docname)
    result = execution_status().timed_execution(
        single_nb_execution, nb, cwd=str(ROOT / Path(docname).parent), allow_errors=False,
        timeout=timeout, meta_override=True, chapter=docname)
    return {"docname": docname, "nb": nb, "seconds": result.time,
            "error": result.exc_string if result.err is not None else None}


def expected_seconds(docnames: list[str]) -> dict[str, float]:
    """Each chapter's last execution time (``_build/execution.json``), else its cell limit,
    so that the longest chapters start first and the two workers finish together."""
    table = BUILD / "execution.json"
    last = {}
    if table.exists():
        last = {row["chapter"]: row.get("runtime_s") or 0.0 for row in json.loads(table.read_text())}
    return {d: float(last.get(d) or cell_limit(d)) for d in docnames}


def execute_stale(docnames: list[str], *, workers: int = 2) -> list[str]:
    """Execute and cache every chapter of ``docnames`` the cache lacks; return their names.

    Exits with a message naming each chapter that failed (its traceback printed).
    """
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    CACHE.parent.mkdir(parents=True, exist_ok=True)
    cache = get_cache(str(CACHE))
    todo = stale(docnames, cache)
    if not todo:
        return []
    expected = expected_seconds(todo)
    todo.sort(key=lambda d: -expected[d])
    os.environ["IBP_LAB_BOOK_BUILD"] = "1"  # the kernels the build starts see it
    print(f"executing {len(todo)} chapters, {workers} at a time: {', '.join(todo)}", flush=True)
    failures, start = [], time.monotonic()
    # spawn: the workers start clean, without the database connection this process holds
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(_execute, d, cell_limit(d)) for d in todo]
        for future in as_completed(futures):
            done = future.result()
            if done["error"] is not None:
                failures.append(done["docname"])
                print(f"{done['docname']}: execution failed\n{done['error']}", file=sys.stderr)
                continue
            record = cache.add_nb_to_project(str(ROOT / f"{done['docname']}.md"), read_data=READ_DATA)
            cache.cache_notebook_bundle(
                CacheBundleIn(done["nb"], record.uri, data={"execution_seconds": done["seconds"]}),
                check_validity=False, overwrite=True)
            print(f"  executed {done['docname']} in {done['seconds']:.1f} s "
                  f"({time.monotonic() - start:.0f} s since the start)", flush=True)
    if failures:
        sys.exit(f"chapters failed to execute: {', '.join(failures)} (tracebacks above)")
    return todo
