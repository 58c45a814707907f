"""Build the book and fail loudly if any chapter did not execute cleanly.

Called by ``make book``. Three things a plain ``jupyter-book build`` does not do:

1. The execution cache is keyed on the chapters only. A change in ``ibp_lab``
   would leave stale figures, so the cache is cleared whenever a hash of the
   package's source differs from the one recorded at the last build.
2. A Jupyter Book build can exit 0 while a notebook failed. After the build, the
   per-chapter execution records (myst-nb's, in the Sphinx environment) and the
   ``reports/`` folder are checked: every chapter must have executed (now or
   from the cache) without error.
3. The execution table (chapter, time, result) is written to
   ``_build/execution.json`` for the status page and the tests.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
STAMP = BUILD / ".ibp_lab.sha256"


def package_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "ibp_lab").rglob("*")):
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
        rows.append(
            {
                "chapter": docname,
                "method": data.get("method"),
                "runtime_s": data.get("runtime"),
                "succeeded": bool(data.get("succeeded")),
                "mtime": data.get("mtime"),
            }
        )
        if not data.get("succeeded"):
            failures.append(f"{docname}: execution failed: {data.get('error')}")
    reports = sorted((BUILD / "html" / "reports").glob("**/*.log"))
    failures += [f"execution report present: {p.relative_to(ROOT)}" for p in reports]
    if failures:
        print("\n".join(["Chapters did not execute cleanly:"] + failures), file=sys.stderr)
        sys.exit(1)
    return rows


def main() -> None:
    invalidate_stale_cache()
    command = [
        str(Path(sys.executable).parent / "jupyter-book"),
        "build", str(ROOT), "--builder", "html", "-W", "--keep-going",
    ]
    result = subprocess.run(command, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(f"jupyter-book build failed (exit {result.returncode}); see the warnings above")
    rows = check_execution()
    (BUILD / "execution.json").write_text(json.dumps(rows, indent=2))
    for row in rows:
        print(f"  {row['chapter']:28s} {row['method']:>6s} {row['runtime_s'] or 0:7.1f} s  ok")
    print(f"book built: {BUILD / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
