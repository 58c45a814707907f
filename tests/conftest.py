"""Test-suite set-up: no display, so matplotlib draws off-screen; the statistical marker."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

# Property-based tests draw their examples from a fixed seed, so that a run of the suite is
# reproducible; `HYPOTHESIS_PROFILE=explore pytest` searches with fresh randomness.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _clear_stale_numba_cache() -> None:
    """tools/numba_cache.py: numba's cache misses edits to a compiled callee in another file."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tools" / "numba_cache.py"
    spec = importlib.util.spec_from_file_location("numba_cache", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.clear_if_stale()


def pytest_configure(config):
    # before collection imports ibp_lab (doctests included)
    _clear_stale_numba_cache()
    # Registered here rather than in pyproject.toml (owned elsewhere); tools/fresh_seeds.py
    # selects these tests with `-m statistical` and reruns them with IBP_SEED_OFFSET=k.
    config.addinivalue_line(
        "markers",
        "statistical(rate=r): a test of random output whose seeds come from tests/seeds.py; "
        "r is its computed false-alarm rate (None if it has none), derived in a comment "
        "beside it (rerun on fresh seeds: tools/fresh_seeds.py)",
    )
