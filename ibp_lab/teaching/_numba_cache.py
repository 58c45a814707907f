"""Drop numba's on-disk cache of ibp_lab when any of its sources changed.

numba (``cache=True``) checks only the file that defines a function: a cached caller in
``gibbs.py`` keeps its compiled copy of a ``_kernel.py`` step after that step was edited, so
tests and chapters would silently run the old algebra. This guard hashes every ibp_lab source
file and, when the hash differs from the one stored beside the cache,
deletes the cache files (``*.nbi``, ``*.nbc``) so that the next call compiles afresh. Every
module counts, not only those that import numba: a compiled function may be defined in a
plain module (``_kernel.new_dish_rate`` compiles ``_hyper.new_dish_rate``) or read its
constants.

:func:`warm` compiles every kernel once where the environment is built (``make book``,
``make lab``, Binder's ``postBuild``), so that a reader's first run does not wait for it.

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

PACKAGE = Path(__file__).resolve().parents[1]  # the whole package, every wing
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


def warm() -> float:
    """Compile (or load) every compiled kernel the chapters use, on tiny data; return seconds.

    A kernel compiles the first time it is called with a new type signature and numba then
    keeps it on disk (``cache=True``), so a reader's first run would otherwise spend its
    first half-minute compiling with nothing on the screen. ``make book``, ``make lab`` and
    Binder's ``postBuild`` call this once where the environment is built. The calls go
    through the public functions, so the argument types are the ones the chapters pass.

    Examples
    --------
    >>> warm() >= 0.0
    True
    """
    import time

    import numpy as np

    from ibp_lab.inference import chains, gibbs, heldout, slice_sampler, smc, tempering, uncollapsed
    from ibp_lab.inference import noisy_or
    from ibp_lab.inference.split_merge import random_split_merge, sequential_split_merge, singleton_update
    from ibp_lab.inference.streaming import RecursiveIBP, filtering

    start = time.perf_counter()
    clear_if_stale()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    Z = (rng.random((6, 2)) < 0.5).astype(float)
    hyper = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    frozen = X.copy()
    frozen.setflags(write=False)  # the bundled digits are read-only: a second signature
    for data in (X, frozen):
        for options in ({}, {"beta": 0.7}, {"inverse_temperature": 0.5}):
            gibbs.gibbs_sweep(data, Z, hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"], rng,
                              **options)
    gibbs.gibbs_sweep_numpy(X, Z, hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"], rng)
    heldout.ibp_gibbs_heldout(X, [(Z, 0.5, 1.0, 1.0)], X[:2], [0, 1], [2], rng, n_sweeps=2,
                              burn=1)
    for move in (random_split_merge, sequential_split_merge):
        move(X, Z, hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"], rng, 2)
    singleton_update(X, Z, hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"], rng)
    chains.run_chains(X, 1, 2, rng, **hyper,
                      moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=2),
                             chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a", "sigma_x")])
    tempering.run_tempered(X, 2, rng, **hyper, n_temperatures=2)
    uncollapsed.run_uncollapsed(X, 2, rng, **hyper)  # the compiled Gaussian births
    for births in ("prior", "data"):  # the compiled noisy-OR births, binary data
        noisy_or.run_noisy_or((X > 0).astype(np.int8), 2, rng, births=births)
    slice_sampler.run_slice(X, 2, rng, **hyper)
    smc.run_smc(X, 3, rng, **hyper, n_temperatures=2)
    stream = rng.normal(size=(30, 3))
    for births in ("buffer", "single"):
        model = RecursiveIBP(rng=0, births=births, buffer_size=10).fit(stream)
        model.transform(stream[:3])
        model.score(stream[:3])
    RecursiveIBP(rng=0, model="factor_analysis").fit(stream)
    filtering.log_feature_count_pmf(np.log([0.5, 0.4]))
    return time.perf_counter() - start


if __name__ == "__main__":
    import sys

    if "--warm" in sys.argv[1:]:
        print(f"compiled ibp_lab's kernels in {warm():.1f} s")
    else:
        print(f"removed {clear_if_stale()} stale numba cache files")
