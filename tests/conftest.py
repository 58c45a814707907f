"""Test-suite set-up: no display, so matplotlib draws off-screen; the markers; the order and
grouping of the tests for parallel workers (pytest-xdist, ``make test`` and ``make check``).

Tiers (the README's "Tests"): ``make test`` runs everything; ``make check`` deselects
``slow``, ``browser`` and ``campaign`` (all but a sample of the hostile-input campaign).
Under ``pytest -n N --dist loadgroup --no-loadscope-reorder`` each work unit below goes whole
to one worker, in the order given here:

- a module's tests stay together (its module-scoped fixtures are then computed once);
- the campaign's per-function tests are grouped by campaign group (one process per group);
- the JupyterLab chapters come first and the Binder install second: they are the longest
  units, and starting them first lets the other worker take everything else meanwhile;
  the JupyterLab reader checks third (mostly a wait, beside the others).
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

# Property-based tests draw their examples from a fixed seed, so that a run of the suite is
# reproducible; `HYPOTHESIS_PROFILE=explore pytest` searches with fresh randomness.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _clear_stale_numba_cache() -> None:
    """ibp_lab/teaching/_numba_cache.py: numba's cache misses edits to a compiled callee in another file."""
    from ibp_lab.teaching._numba_cache import clear_if_stale

    clear_if_stale()


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


#: Work units started first, longest first (see the module docstring).
FIRST = ("test_lab.py", "test_binder.py", "test_lab_reader.py")


def _work_unit(item) -> str:
    name = item.path.name
    params = getattr(item, "callspec", None)
    if name == "test_campaign.py" and params is not None and "function" in params.params:
        group = item.module.GROUP_OF.get(params.params["function"])
        if group is not None:
            return f"campaign-{group}"
    return item.nodeid.split("::")[0]  # the file


def pytest_itemcollected(item):
    import pytest

    # marked as each test is collected, before pytest-xdist reads the marks into node ids
    item.add_marker(pytest.mark.xdist_group(_work_unit(item)))


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: order kept


def pytest_collection_finish(session):
    # the campaign runs, per group, only the functions selected in this session (a sample
    # in make check, all of them in make test)
    for item in session.items:
        if item.path.name == "test_campaign.py" and _work_unit(item).startswith("campaign-"):
            function = item.callspec.params["function"]
            item.module.SELECTED.setdefault(item.module.GROUP_OF[function], set()).add(function)
