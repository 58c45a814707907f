"""Drop numba's on-disk cache of ibp_lab when any of its sources changed.

numba (``cache=True``) checks only the file that defines a function: a cached caller in
``gibbs.py`` keeps its compiled copy of a ``_kernel.py`` step after that step was edited, so
tests and chapters would silently run the old algebra. This guard hashes every ibp_lab source
file and, when the hash differs from the one stored beside the cache,
deletes the cache files (``*.nbi``, ``*.nbc``) so that the next call compiles afresh. Every
module counts, not only those that import numba: a compiled function may be defined in a
plain module (``_kernel.new_dish_rate`` compiles ``_hyper.new_dish_rate``) or read its
constants.

Called by ``tests/conftest.py`` (before any test calls a compiled function), by
``tools/build_book.py`` and ``tools/run_one_chapter.py``. Importing it loads nothing compiled
(the package imports its modules on use). A fresh clone has no cache, so there it does nothing
but write the stamp.

>>> len(compiled_sources_hash())
64
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAMP = PACKAGE / "__pycache__" / "numba-sources.sha256"


def compiled_sources_hash(package: Path = PACKAGE) -> str:
    """SHA-256 over the path and text of every module of the package."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def clear_if_stale(package: Path = PACKAGE) -> int:
    """Delete the package's numba cache files if its sources changed; return how many."""
    stamp = package / "__pycache__" / STAMP.name
    current = compiled_sources_hash(package)
    if stamp.exists() and stamp.read_text().strip() == current:
        return 0
    removed = 0
    for pattern in ("*.nbi", "*.nbc"):
        for path in package.rglob(pattern):
            path.unlink(missing_ok=True)
            removed += 1
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(current + "\n")
    return removed


if __name__ == "__main__":
    print(f"removed {clear_if_stale()} stale numba cache files")
