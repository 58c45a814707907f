"""Run the hostile-input campaign outside pytest and print its counts.

    .venv/bin/python tools/campaign.py                 # every public function
    .venv/bin/python tools/campaign.py prior. gibbs.   # functions whose name starts so
    .venv/bin/python tools/campaign.py --list          # functions and their case counts

Prints the cases run per function, the verdicts per class, and every failure with its
input (function[case]) and details. Each case runs in a forked child with a time and
memory limit (tests/campaign.py). The exit status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
os.environ.setdefault("MPLBACKEND", "Agg")

import campaign  # noqa: E402
import robust_inputs  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only functions whose name starts with one of these")
    parser.add_argument("--list", action="store_true", help="list functions and case counts, run nothing")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per case (default: per spec)")
    args = parser.parse_args(argv)

    cases = [c for c in robust_inputs.all_cases()
             if not args.prefixes or c.function.startswith(tuple(args.prefixes))]
    if args.list:
        counts = {}
        for c in cases:
            counts[c.function] = counts.get(c.function, 0) + 1
        for name, n in counts.items():
            print(f"{n:5d}  {name}")
        print(f"{len(cases):5d}  cases, {len(counts)} functions")
        return 0
    robust_inputs.warm_up(cases)
    report = campaign.Report()
    start = time.perf_counter()
    for case in cases:
        report.add(case, campaign.run_case(case, time_limit=args.time_limit))
    print_report(report, time.perf_counter() - start)
    return 1 if report.failures else 0


def print_report(report: campaign.Report, seconds: float) -> None:
    print("cases per function:")
    for name, n in report.per_function.items():
        failed = sum(1 for c, _ in report.failures if c.function == name)
        print(f"  {n:4d}  {name}" + (f"  ({failed} failed)" if failed else ""))
    total = sum(report.per_function.values())
    print(f"\n{total} cases, {len(report.per_function)} functions, {seconds:.0f} s")
    print("verdicts:")
    for kind in campaign.PASSES + campaign.FAILURES:
        if report.per_kind.get(kind):
            print(f"  {report.per_kind[kind]:5d}  {kind}")
    if report.failures:
        print("\nfailures:")
        for case, verdict in report.failures:
            print(f"  {verdict.kind:14s} {case.id}  (expects {case.expect})\n      {verdict.detail}")


if __name__ == "__main__":
    sys.exit(main())
