"""Build the book and fail loudly if any chapter did not execute cleanly.

Called by ``make book``. Three things a plain ``jupyter-book build`` does not do:

1. The execution cache is keyed on the chapters only. A change in ``ibp_lab``
   would leave stale figures, so the cache is cleared whenever a hash of the
   package's source differs from the one recorded at the last build.
2. A Jupyter Book build can exit 0 while a notebook failed. After the build, the
   per-chapter execution records (myst-nb's, in the Sphinx environment) and the
   ``reports/`` folder are checked: every chapter must have executed (now or
   from the cache) without error.
3. No cell may run into its chapter's time limit (``mystnb: execution_timeout``
   in the chapter's front matter, set from the chapter's own timings; the book's
   default in ``_config.yml`` otherwise). nbclient fails a cell that times out,
   but when the reply was already queued and its wake-up lost, nbclient's last
   check at the limit finds it and the cell "succeeds" after a stall. Each cell's
   wall-clock time is recorded by ``book/_ext/execution_status.py``; a cell that
   used 90% of its limit fails the build, naming the chapter and the cell.
4. The execution table (chapter, time, slowest cell, result) is written to
   ``_build/execution.json`` for the status page and the tests.
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

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
STAMP = BUILD / ".ibp_lab.sha256"
#: Notebook metadata written by book/_ext/execution_status.py: {cell index: wall seconds}.
CELL_SECONDS_KEY = "ibp_cell_seconds"
#: A cell that used this fraction of its limit stalled, whatever nbclient concluded.
STALL_FRACTION = 0.9


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


def chapters_in_toc() -> list[str]:
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [entry["file"] for entry in part.get("chapters", [])]
    return names


def front_matter(docname: str) -> dict:
    import yaml

    text = (ROOT / f"{docname}.md").read_text()
    if not text.startswith("---"):
        return {}
    return yaml.safe_load(text.split("---", 2)[1]) or {}


def cell_limit(docname: str) -> int:
    """The chapter's per-cell limit in seconds: its own, or the book's default."""
    import yaml

    own = (front_matter(docname).get("mystnb") or {}).get("execution_timeout")
    if own is not None:
        return int(own)
    return int(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])


def cell_times(docname: str) -> list[tuple[int, float, str]]:
    """(index, wall seconds, first line) of each timed cell of the chapter's cached execution.

    Indices count every cell of the chapter (Markdown ones too), as nbclient does.
    """
    import jupytext
    from jupyter_cache import get_cache

    cache = get_cache(str(CACHE))
    record = cache.get_cached_project_nb(str(ROOT / f"{docname}.md"))  # the cache record, if any
    if record is None:
        return []
    nb = cache.get_cache_bundle(record.pk).nb
    cells = jupytext.read(ROOT / f"{docname}.md").cells
    times = []
    for index, seconds in sorted((int(i), float(t)) for i, t in (nb.metadata.get(CELL_SECONDS_KEY) or {}).items()):
        source = cells[index].source if index < len(cells) else ""
        first = next((ln for ln in source.splitlines() if ln.strip() and not ln.startswith(":")), "")
        times.append((index, seconds, first[:70]))
    return times


def stall_failures(docname: str, times: list[tuple[int, float, str]], limit: float) -> list[str]:
    """One message per cell that used STALL_FRACTION of its limit, naming chapter and cell.

    >>> stall_failures("book/x", [(3, 10.0, "a = 1"), (5, 119.9, "live(...)")], 120)
    ["book/x: cell 5 ('live(...)') took 120 s of its 120 s limit: a stall, or a limit set too low"]
    """
    return [f"{docname}: cell {index} ({first!r}) took {seconds:.0f} s of its {limit} s limit: "
            "a stall, or a limit set too low"
            for index, seconds, first in times if seconds >= STALL_FRACTION * limit]


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
        limit, times = cell_limit(docname), cell_times(docname)
        slowest = max(times, key=lambda t: t[1], default=(None, None, ""))
        rows.append(
            {
                "chapter": docname,
                "method": data.get("method"),
                "runtime_s": data.get("runtime"),
                "succeeded": bool(data.get("succeeded")),
                "mtime": data.get("mtime"),
                "cell_limit_s": limit,
                "slowest_cell": slowest[0],
                "slowest_cell_s": slowest[1],
            }
        )
        if not data.get("succeeded"):
            failures.append(f"{docname}: execution failed: {data.get('error')}")
        if not times:
            failures.append(f"{docname}: no per-cell timings in the execution cache")
        failures += stall_failures(docname, times, limit)
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
    from execute_chapters import execute_stale  # tools/ is on sys.path when this script runs
    from ibp_lab._numba_cache import clear_if_stale

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
              f"slowest cell {row['slowest_cell_s'] or 0:6.1f} s of {row['cell_limit_s']} s  ok")
    print(f"book built: {BUILD / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
