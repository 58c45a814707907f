"""Run the hostile-input campaign outside pytest and print its counts.

    .venv/bin/python tools/campaign.py                  # every public function
    .venv/bin/python tools/campaign.py prior. gibbs.    # functions whose name starts so
    .venv/bin/python tools/campaign.py --list           # functions and their case counts
    .venv/bin/python tools/campaign.py --group prior --json   # one group's verdicts as JSON

Prints the cases run per function, the verdicts per class, and every failure with its
input (function[case]) and details. Each case runs in a forked child with a time and
memory limit (tests/campaign.py). Each spec group (robust_inputs.GROUPS) runs in its own
process, which imports only what the group needs, so that forks stay cheap. The exit
status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
os.environ.setdefault("MPLBACKEND", "Agg")

import campaign  # noqa: E402


def run_group(name: str, prefixes=(), time_limit=None) -> list[dict]:
    """Run one group's cases here (forking per case) and return their verdicts."""
    import robust_inputs

    cases = [c for c in robust_inputs.all_cases(groups=[name])
             if not prefixes or c.function.startswith(tuple(prefixes))]
    robust_inputs.warm_up(cases)
    rows, current, start = [], None, time.perf_counter()
    for case in cases:
        if case.function != current:  # progress on stderr: a slow function shows where it is
            current = case.function
            print(f"[{time.perf_counter() - start:6.0f} s] {current}", file=sys.stderr, flush=True)
        verdict = campaign.run_case(case, time_limit=time_limit)
        rows.append(dict(function=case.function, id=case.id, expect=case.expect,
                         kind=verdict.kind, detail=verdict.detail))
    return rows


def run_in_subprocess(name: str, prefixes=(), time_limit=None, timeout=3600) -> list[dict]:
    """Run one group in a fresh process (small, so cheap to fork) and read its JSON."""
    command = [sys.executable, os.path.abspath(__file__), "--group", name, "--json", *prefixes]
    if time_limit:
        command += ["--time-limit", str(time_limit)]
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         timeout=timeout, check=False)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return [dict(function=f"{name}.<group>", id=f"{name}.<group>", expect="accept", kind="died",
                     detail=f"the group's process ended with {out.returncode} and no verdicts")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only functions whose name starts with one of these")
    parser.add_argument("--list", action="store_true", help="list functions and case counts, run nothing")
    parser.add_argument("--group", action="append", help="run only these groups (default: all)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON (one group)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per case (default: per spec)")
    parser.add_argument("--write-known", action="store_true",
                        help="rewrite KNOWN in tests/test_campaign.py with this run's failures")
    args = parser.parse_args(argv)

    import robust_inputs

    groups = args.group or list(robust_inputs.GROUPS)
    if args.list:
        return list_cases(robust_inputs.all_cases(groups=groups), args.prefixes)
    if args.json:
        rows = [row for g in groups for row in run_group(g, args.prefixes, args.time_limit)]
        json.dump(rows, sys.stdout)
        return 0
    start, rows = time.perf_counter(), []
    for name in groups:
        print(f"group {name}", file=sys.stderr, flush=True)
        rows += run_in_subprocess(name, args.prefixes, args.time_limit)
    print_report(rows, time.perf_counter() - start)
    if args.write_known:
        write_known([r for r in rows if r["kind"] not in campaign.PASSES])
    return 1 if any(r["kind"] not in campaign.PASSES for r in rows) else 0


KNOWN_START, KNOWN_END = "KNOWN: dict[str, str] = {", "}  # end of KNOWN"


def write_known(failures: list[dict]) -> None:
    """Replace the KNOWN block of tests/test_campaign.py: one xfail(strict=True) per failure."""
    path = os.path.join(os.path.dirname(HERE), "tests", "test_campaign.py")
    text = open(path).read()
    head, rest = text.split(KNOWN_START, 1)
    _, tail = rest.split(KNOWN_END, 1)
    lines = [f"    {r['id']!r}: {short_reason(r)!r}," for r in sorted(failures, key=lambda r: r["id"])]
    with open(path, "w") as handle:
        handle.write(head + KNOWN_START + "\n" + "\n".join(lines) + "\n" + KNOWN_END + tail)
    print(f"wrote {len(failures)} known failures to {path}")


def short_reason(row: dict) -> str:
    detail = " ".join(row["detail"].split())
    return f"{row['kind']}: {detail[:90]}"


def list_cases(cases, prefixes) -> int:
    counts = {}
    for c in cases:
        if not prefixes or c.function.startswith(tuple(prefixes)):
            counts[c.function] = counts.get(c.function, 0) + 1
    for name, n in counts.items():
        print(f"{n:5d}  {name}")
    print(f"{sum(counts.values()):5d}  cases, {len(counts)} functions")
    return 0


def print_report(rows: list[dict], seconds: float) -> None:
    per_function, per_kind = {}, {}
    for r in rows:
        per_function.setdefault(r["function"], []).append(r)
        per_kind[r["kind"]] = per_kind.get(r["kind"], 0) + 1
    failures = [r for r in rows if r["kind"] not in campaign.PASSES]
    print("cases per function:")
    for name, rs in per_function.items():
        failed = sum(1 for r in rs if r["kind"] not in campaign.PASSES)
        print(f"  {len(rs):4d}  {name}" + (f"  ({failed} failed)" if failed else ""))
    print(f"\n{len(rows)} cases, {len(per_function)} functions, {seconds:.0f} s")
    print("verdicts:")
    for kind in campaign.PASSES + campaign.FAILURES:
        if per_kind.get(kind):
            print(f"  {per_kind[kind]:5d}  {kind}")
    if failures:
        print(f"\nfailures ({len(failures)}):")
        for r in failures:
            print(f"  {r['kind']:14s} {r['id']}  (expects {r['expect']})\n      {r['detail']}")


if __name__ == "__main__":
    sys.exit(main())
