"""Time a newcomer's ``make test`` phase by phase, on a fresh clone of this repository.

Usage::

    python3 tools/time_phases.py                 # clone HEAD into a temporary folder, time it
    python3 tools/time_phases.py --here          # time the phases in this checkout instead
    python3 tools/time_phases.py --json out.json # also write the table as JSON

The phases are the ones ``make test`` runs, in its order: the installs (``make
setup-test``: the pinned stack, the test tools and Debian's chromium side by side), the
book (``make book``: every chapter executed, then the Sphinx build), the student edition,
and the suite (the Makefile's own pytest command, so with its workers). Each phase's wall
and CPU time (of its processes and their children) is printed; the suite's time is split
by test file from pytest's JUnit report (each test's own duration, so files that ran on
different workers add up to more than the wall time), with the slowest tests.
A phase that fails stops the run and its exit status is returned.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_phase(name: str, command: list[str], cwd: Path, log: Path) -> dict:
    """Run one phase, its output to ``log``; wall and CPU seconds and the exit status."""
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(command)}", flush=True)
    cpu, start = children_cpu(), time.monotonic()
    with log.open("w") as out:
        status = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode
    row = {"phase": name, "wall_s": round(time.monotonic() - start, 1),
           "cpu_s": round(children_cpu() - cpu, 1), "status": status, "log": str(log)}
    print(f"    {row['wall_s']:7.1f} s wall, {row['cpu_s']:7.1f} s CPU, exit {status}", flush=True)
    return row


def per_file(junit: Path) -> tuple[list[tuple[str, float, int]], list[tuple[str, float]]]:
    """Seconds and test count per test file, and the 15 slowest tests, from a JUnit report."""
    files: dict[str, list[float]] = defaultdict(list)
    tests = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0.0)
        classname = case.get("classname") or ""
        # "tests.test_lab" or "ibp_lab.inference.gibbs" (doctests): the file, as a path
        name = classname.replace(".", "/") + ".py" if classname else case.get("file", "?")
        files[name].append(seconds)
        tests.append((f"{classname}::{case.get('name')}", seconds))
    rows = sorted(((f, sum(s), len(s)) for f, s in files.items()), key=lambda r: -r[1])
    return rows, sorted(tests, key=lambda t: -t[1])[:15]


def pytest_command(checkout: Path, junit: Path) -> list[str]:
    """The Makefile's own pytest command (``make -n test`` prints it), with a JUnit report."""
    dry = subprocess.run(["make", "-n", "--no-print-directory", "test"], cwd=checkout,
                         capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in dry.splitlines() if re.search(r"-m pytest\b", ln))
    return ["bash", "-c", f"{line} --junitxml={junit} -p no:cacheprovider"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--here", action="store_true", help="time this checkout, not a fresh clone")
    parser.add_argument("--json", type=Path, help="write the table here as JSON")
    args = parser.parse_args(argv)
    if args.here:
        checkout = ROOT
    else:
        checkout = Path(tempfile.mkdtemp(prefix="ibp-lab-fresh-")) / "ibp-lab"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(checkout)], check=True)
        print(f"fresh clone of {ROOT} at {checkout}")
    logs = checkout / "_build" / "phase-logs"
    logs.mkdir(parents=True, exist_ok=True)
    junit = logs / "pytest.xml"
    phases = [
        ("install", ["make", "--no-print-directory", "setup-test"]),
        ("book", ["make", "--no-print-directory", "book"]),
        ("student", ["make", "--no-print-directory", "student"]),
        ("suite", pytest_command(checkout, junit)),
    ]
    rows, start = [], time.monotonic()
    for name, command in phases:
        rows.append(run_phase(name, command, checkout, logs / f"{name}.log"))
        if rows[-1]["status"] != 0:
            break
    total = round(time.monotonic() - start, 1)
    print(f"\n{'phase':10s} {'wall (s)':>9s} {'CPU (s)':>9s}")
    for row in rows:
        print(f"{row['phase']:10s} {row['wall_s']:9.1f} {row['cpu_s']:9.1f}")
    print(f"{'total':10s} {total:9.1f}   ({total / 60:.1f} min wall; {os.cpu_count()} cores)")
    result = {"checkout": str(checkout), "phases": rows, "total_wall_s": total}
    if junit.exists():
        files, slowest = per_file(junit)
        print("\ntest file (seconds of its tests, summed over workers)")
        for name, seconds, count in files[:25]:
            print(f"  {name:48s} {seconds:8.1f} s  {count:5d} tests")
        print("\nslowest tests")
        for name, seconds in slowest:
            print(f"  {seconds:8.1f} s  {name[:110]}")
        result |= {"files": files, "slowest": slowest}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return next((row["status"] for row in rows if row["status"] != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
