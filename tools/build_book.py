"""Build the book and fail loudly if any chapter did not execute cleanly.

Called by ``make book``. Three things a plain ``jupyter-book build`` does not do:

1. The execution cache is keyed on the chapters only. A change in ``ibp_lab``
   would leave stale figures, so the cache is cleared whenever a hash of the
   package's source differs from the one recorded at the last build.
2. A Jupyter Book build can exit 0 while a notebook failed. After the build, the
   per-chapter execution records (myst-nb's, in the Sphinx environment) and the
   ``reports/`` folder are checked: every chapter must have executed (now or
   from the cache) without error.
3. Every cell ran under the kernel watch of ``book/_ext/execution_status.py``, which
   fails a cell whose kernel stops gaining CPU time (a stall: killed within
   ``STALL_WINDOW_S`` seconds, whatever the limit) or that uses more CPU time than its
   chapter's limit (``mystnb: execution_timeout``, else ``_config.yml``'s
   ``execute.timeout``) on every usable core. A loaded machine stretches a cell's wall
   time, not its CPU time, so a working cell is not failed for being slow. The watch
   stores each cell's wall and CPU seconds; here a chapter without them fails (it ran
   unwatched), and so does a cell at 90% of its CPU limit (the limit is set too low).
4. The execution table (chapter, time, slowest cell, its CPU time, result) is written
   to ``_build/execution.json`` for the status page and the tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapter_settings import (  # noqa: E402
    BUILD, CACHE, ROOT, cell_limit, chapters_in_toc, execution_status, front_matter)
from execute_chapters import execute_stale  # noqa: E402

STAMP = BUILD / ".ibp_lab.sha256"
#: A cell that used this fraction of its CPU limit fails the build: the limit is set too
#: low for the cell (CPU time, unlike wall time, does not grow with the machine's load).
NEAR_LIMIT_FRACTION = 0.9


def package_hash() -> str:
    """Hash of what chapter outputs depend on beyond their own text: the package, and
    the book's extensions (what an execution records, how quoted numbers render)."""
    digest = hashlib.sha256()
    paths = sorted((ROOT / "ibp_lab").rglob("*")) + sorted((ROOT / "book" / "_ext").glob("*.py"))
    for path in paths:
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".nbi":
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def invalidate_stale_cache() -> None:
    current = package_hash()
    if STAMP.exists() and STAMP.read_text().strip() == current:
        return
    if CACHE.exists():
        print("ibp_lab changed since the last build: clearing the execution cache")
        shutil.rmtree(CACHE)
    # the doctree environment also remembers outputs; rebuild it with the cache
    shutil.rmtree(BUILD / ".doctrees", ignore_errors=True)
    BUILD.mkdir(exist_ok=True)
    STAMP.write_text(current)


class CellRecord(NamedTuple):
    """One executed cell as the kernel watch recorded it."""

    index: int  # counting every cell of the chapter (Markdown ones too), as nbclient does
    wall_s: float
    cpu_s: float
    first_line: str


def cell_records(docname: str) -> list[CellRecord]:
    """The watch's record of each code cell of the chapter's cached execution."""
    import jupytext
    from jupyter_cache import get_cache

    cache = get_cache(str(CACHE))
    record = cache.get_cached_project_nb(str(ROOT / f"{docname}.md"))  # None if not cached
    if record is None:
        return []
    nb = cache.get_cache_bundle(record.pk).nb
    cells = jupytext.read(ROOT / f"{docname}.md").cells
    stored = nb.metadata.get(execution_status().CELL_RECORD_KEY) or {}
    records = []
    for index, cell in sorted((int(i), c) for i, c in stored.items()):
        source = cells[index].source if index < len(cells) else ""
        first = next((ln for ln in source.splitlines()
                      if ln.strip() and not ln.startswith(":")), "")
        records.append(CellRecord(index, float(cell["wall_s"]), float(cell["cpu_s"]), first[:70]))
    return records


def near_limit_failures(docname: str, records: list[CellRecord], cpu_limit_s: float) -> list[str]:
    """One message per cell that used ``NEAR_LIMIT_FRACTION`` of its CPU limit, naming
    chapter and cell. Wall time is not judged: a loaded machine stretches it.

    >>> cells = [CellRecord(3, 300.0, 10.0, "a = 1"), CellRecord(5, 130.0, 108.0, "live(f)")]
    >>> print(*near_limit_failures("book/x", cells, 120))
    book/x: cell 5 ('live(f)') used 108 s of CPU, 90% of its 120 s limit: raise the chapter's limit
    """
    return [f"{docname}: cell {r.index} ({r.first_line!r}) used {r.cpu_s:.0f} s of CPU, "
            f"{r.cpu_s / cpu_limit_s:.0%} of its {cpu_limit_s:.0f} s limit: "
            "raise the chapter's limit"
            for r in records if r.cpu_s >= NEAR_LIMIT_FRACTION * cpu_limit_s]


def execution_row(docname: str, data: dict, records: list[CellRecord]) -> dict:
    """The chapter's row of ``_build/execution.json``.

    ``slowest_cell``/``slowest_cell_s`` is the longest cell on the clock; ``busiest_cell``
    and ``busiest_cell_cpu_s`` the one that used most CPU, against ``cell_cpu_limit_s``.
    """
    status = execution_status()
    slowest = max(records, key=lambda r: r.wall_s, default=None)
    busiest = max(records, key=lambda r: r.cpu_s, default=None)
    return {
        "chapter": docname,
        "method": data.get("method"),
        "runtime_s": data.get("runtime"),
        "succeeded": bool(data.get("succeeded")),
        "mtime": data.get("mtime"),
        "cell_limit_s": cell_limit(docname),
        "slowest_cell": slowest.index if slowest else None,
        "slowest_cell_s": slowest.wall_s if slowest else None,
        "slowest_cell_cpu_s": slowest.cpu_s if slowest else None,
        "busiest_cell": busiest.index if busiest else None,
        "busiest_cell_cpu_s": busiest.cpu_s if busiest else None,
        "cell_cpu_limit_s": status.cpu_limit(cell_limit(docname)),
        "stall_window_s": status.STALL_WINDOW_S,
    }


def check_execution() -> list[dict]:
    env_path = BUILD / ".doctrees" / "environment.pickle"
    with env_path.open("rb") as handle:
        env = pickle.load(handle)
    metadata = getattr(env, "nb_metadata", {})
    rows, failures = [], []
    for docname in chapters_in_toc():
        source = ROOT / f"{docname}.md"
        text = source.read_text()
        if not (text.startswith("---") and "kernelspec:" in text.split("---", 2)[1]):
            continue  # plain Markdown page, nothing to execute
        data = metadata.get(docname, {}).get("exec_data")
        if not data:
            failures.append(f"{docname}: no execution record (was it executed?)")
            continue
        records = cell_records(docname)
        row = execution_row(docname, data, records)
        rows.append(row)
        if not data.get("succeeded"):
            failures.append(f"{docname}: execution failed: {data.get('error')}")
        if not records:
            failures.append(f"{docname}: no per-cell records in the execution cache "
                            "(executed without the kernel watch?)")
        failures += near_limit_failures(docname, records, row["cell_cpu_limit_s"])
    reports = sorted((BUILD / "html" / "reports").glob("**/*.log"))
    failures += [f"execution report present: {p.relative_to(ROOT)}" for p in reports]
    if failures:
        print("\n".join(["Chapters did not execute cleanly:"] + failures), file=sys.stderr)
        sys.exit(1)
    return rows


def build_workers() -> int:
    """Chapters executed at once: ``IBP_LAB_BUILD_WORKERS``, else one per core."""
    value = os.environ.get("IBP_LAB_BUILD_WORKERS", "")
    return int(value) if value.isdigit() and int(value) > 0 else (os.cpu_count() or 1)


def main() -> None:
    from ibp_lab.teaching._numba_cache import clear_if_stale

    clear_if_stale()  # a stale compiled callee would give chapters the old algebra
    invalidate_stale_cache()
    # the chapters the cache lacks run first, one per core; the build then only renders
    execute_stale(chapters_in_toc(), workers=build_workers())
    command = [
        str(Path(sys.executable).parent / "jupyter-book"),
        "build", str(ROOT), "--builder", "html", "-W", "--keep-going",
    ]
    # the kernels the build starts see it: solutions run, explorers precompute their frames
    env = dict(os.environ, IBP_LAB_BOOK_BUILD="1")
    result = subprocess.run(command, cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(f"jupyter-book build failed (exit {result.returncode}); see the warnings above")
    rows = check_execution()
    (BUILD / "execution.json").write_text(json.dumps(rows, indent=2))
    for row in rows:
        print(f"  {row['chapter']:28s} {row['method']:>6s} {row['runtime_s'] or 0:7.1f} s  "
              f"slowest cell {row['slowest_cell_s'] or 0:6.1f} s; most CPU "
              f"{row['busiest_cell_cpu_s'] or 0:6.1f} s of {row['cell_cpu_limit_s']:.0f} s  ok")
    print(f"book built: {BUILD / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
