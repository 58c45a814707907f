"""Rerun the statistical tests on fresh seeds and count failures against their stated rates.

Every statistical test is marked ``@pytest.mark.statistical(rate=r)``, with ``r`` its
computed false-alarm rate (``rate=None`` where no rate can be computed, as for a NUTS
run, whose thresholds are checked by measurement instead), and draws its seeds
through ``tests/seeds.py``. This script runs them with ``IBP_SEED_OFFSET=k`` for
``k = start .. start + runs - 1``, one pytest process at a time (the machine is
shared), and prints for each test the failures out of the runs, the stated rate,
and the binomial p-value P(at least that many failures | runs, rate): a small
p-value means the test fails a correct implementation more often than it says.

    .venv/bin/python tools/fresh_seeds.py --runs 3
    .venv/bin/python tools/fresh_seeds.py --runs 30 -k "gibbs and not long_chain" tests/inference/test_gibbs.py

The same file is a pytest plugin (loaded with ``-p fresh_seeds``) that writes the
stated rate of every collected statistical test to ``$FRESH_SEEDS_RATES``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------
# the plugin half: runs inside pytest
# --------------------------------------------------------------------------------------


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("FRESH_SEEDS_RATES")
    if not path:
        return
    rates = {}
    for item in items:
        marker = item.get_closest_marker("statistical")
        if marker is not None:
            rates[item.nodeid] = marker.kwargs.get("rate")
    Path(path).write_text(json.dumps(rates))


# --------------------------------------------------------------------------------------
# the driver half
# --------------------------------------------------------------------------------------


def binomial_sf(failures: int, runs: int, rate: float) -> float:
    """P(Bin(runs, rate) >= failures), exactly (a sum of at most runs + 1 terms)."""
    if failures <= 0:
        return 1.0
    from math import comb

    return min(1.0, sum(comb(runs, j) * rate**j * (1 - rate) ** (runs - j)
                        for j in range(failures, runs + 1)))


def build_command(paths, keyword, junit):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
               "fresh_seeds", "-m", "statistical", f"--junitxml={junit}", "-o",
               "addopts=", *paths]
    return command + (["-k", keyword] if keyword else [])


def environment(offset: int, rates_file: str | None) -> dict:
    env = dict(os.environ, IBP_SEED_OFFSET=str(offset))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tools"), str(ROOT),
                                         env.get("PYTHONPATH", "")])
    if rates_file:
        env["FRESH_SEEDS_RATES"] = rates_file
    return env


def outcomes(junit: Path) -> dict[str, bool]:
    """Test id -> failed, from a JUnit XML report."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        nodeid = f"{path}.py::{case.get('name')}"
        failed = any(child.tag in ("failure", "error") for child in case)
        if not any(child.tag == "skipped" for child in case):
            result[nodeid] = failed
    return result


def run(args) -> int:
    paths = args.paths or ["tests"]
    with tempfile.TemporaryDirectory() as tmp:
        rates_file = str(Path(tmp) / "rates.json")
        failures: dict[str, int] = {}
        counts: dict[str, int] = {}
        for offset in range(args.start, args.start + args.runs):
            junit = Path(tmp) / f"offset{offset}.xml"
            started = time.time()
            subprocess.run(build_command(paths, args.keyword, junit), cwd=ROOT,
                           env=environment(offset, rates_file if offset == args.start else None),
                           stdout=subprocess.DEVNULL if not args.verbose else None,
                           check=False)
            if not junit.exists():
                print(f"offset {offset}: pytest produced no report", file=sys.stderr)
                return 2
            result = outcomes(junit)
            for nodeid, failed in result.items():
                counts[nodeid] = counts.get(nodeid, 0) + 1
                failures[nodeid] = failures.get(nodeid, 0) + failed
            print(f"offset {offset}: {sum(result.values())} of {len(result)} failed "
                  f"({time.time() - started:.0f} s)", flush=True)
        rates = json.loads(Path(rates_file).read_text()) if Path(rates_file).exists() else {}
    report(failures, counts, rates)
    return 0


def report(failures, counts, rates):
    print(f"\n{'test':<100} {'fail/runs':>9} {'stated':>8} {'p-value':>8}")
    total_expected = 0.0
    for nodeid in sorted(counts):
        rate = next((r for key, r in rates.items() if key.endswith(nodeid)
                     or nodeid.endswith(key)), None)
        runs, failed = counts[nodeid], failures[nodeid]
        if rate is None:
            stated, p_value = "n/a", "n/a"
        else:
            total_expected += rate * runs
            stated, p_value = f"{rate:.1e}", f"{binomial_sf(failed, runs, rate):.2g}"
        flag = "  <--" if p_value != "n/a" and float(p_value) < 0.01 else ""
        print(f"{nodeid:<100} {failed:>4}/{runs:<4} {stated:>8} {p_value:>8}{flag}")
    print(f"\nall: {sum(failures.values())} failures in {sum(counts.values())} test runs; "
          f"{total_expected:.3f} expected from the stated rates")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="test files or directories (default: tests)")
    parser.add_argument("--runs", type=int, default=3, help="number of fresh offsets")
    parser.add_argument("--start", type=int, default=1, help="first IBP_SEED_OFFSET")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    parser.add_argument("--verbose", action="store_true", help="show pytest's output")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.start < 1:
        parser.error("--runs and --start must be >= 1 (offset 0 is the suite's own seeds)")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
