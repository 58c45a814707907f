"""Plant one-line mutants in a module, one at a time, and see which ones the tests catch.

A small mutation tester for the package (mutmut is slow on a 2-core machine shared
with a book build). Each mutant changes one token on one line of the chosen functions:
a comparison flipped (``<`` to ``<=``, ``==`` to ``!=``), an operator swapped (``+`` and
``-``, ``*`` and ``/``), a constant changed (``n`` to ``n + 1``, ``x`` to ``2 x``), ``and``
and ``or`` or ``True`` and ``False`` exchanged. Lines that only check arguments
(``raise``, ``check_...``, ``isinstance``) are left alone: the door tests cover them.

The package and the tests are copied to a temporary directory once; each mutant is
written into the copy, the given tests run there (``pytest -x``, with a time limit,
a timeout counting as caught), and the original is put back. Survivors are printed
with their line, so that a test can be written that catches them.

Usage::

    .venv/bin/python tools/plant_mutants.py ibp_lab/inference/heldout.py \\
        --functions ibp_gibbs_heldout,_next_customer_prior,_TestDigitChain \\
        --tests "tests/inference/test_heldout.py -k gibbs_heldout or next_customer or max_new"
"""

from __future__ import annotations

import argparse
import ast
import io
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
         "+": "-", "-": "+", "*": "/", "/": "*", "and": "or", "or": "and",
         "True": "False", "False": "True", "+=": "-=", "-=": "+="}
SKIP_MARKERS = ("raise ", "check_", "isinstance", "warnings.warn", "f\"", "hint=")


def function_lines(source: str, names: set[str]) -> set[int]:
    """Line numbers of the bodies of the named top-level functions and classes (all if empty)."""
    lines = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (not names or node.name in names):
            docstring = ast.get_docstring(node, clean=False)
            first = node.body[1].lineno if docstring and len(node.body) > 1 else node.body[0].lineno
            lines.update(range(first, node.end_lineno + 1))
    return lines


def mutants(source: str, lines: set[int]):
    """Yield ``(line number, description, mutated source)`` for every single-token mutant."""
    source_lines = source.splitlines(keepends=True)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        row, col = token.start
        if row not in lines or token.start[0] != token.end[0]:
            continue
        text = source_lines[row - 1]
        if any(marker in text for marker in SKIP_MARKERS) or text.lstrip().startswith("#"):
            continue
        replacement = None
        if token.type == tokenize.OP and token.string in SWAPS:
            if token.string == "*" and text[col:col + 2] == "**":
                continue
            replacement = SWAPS[token.string]
        elif token.type == tokenize.NAME and token.string in SWAPS:
            replacement = SWAPS[token.string]
        elif token.type == tokenize.NUMBER:
            value = token.string
            if value.isdigit():
                replacement = str(int(value) + 1)
            else:
                try:
                    replacement = repr(2.0 * float(value)) if float(value) != 0 else "1.0"
                except ValueError:
                    continue
        if replacement is None:
            continue
        mutated_line = text[:col] + replacement + text[token.end[1]:]
        mutated = "".join(source_lines[: row - 1]) + mutated_line + "".join(source_lines[row:])
        yield row, f"{token.string!r} -> {replacement!r}: {mutated_line.strip()}", mutated


def write_source(path: Path, text: str) -> None:
    """Write ``text`` and drop the module's bytecode: a mutant of the same length written
    within the same second as the last version would otherwise run the stale ``.pyc``
    (its validity check is the source's size and its mtime in whole seconds)."""
    path.write_text(text)
    for stale in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        stale.unlink()


def run_tests(workdir: Path, test_args: list[str], timeout: float) -> str:
    """``"caught"``, ``"timeout"`` (caught too) or ``"survived"``."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "--no-header", "-o", "addopts=", *test_args]
    try:
        done = subprocess.run(command, cwd=workdir, capture_output=True, timeout=timeout,
                              env={"PYTHONPATH": str(workdir), "PATH": "/usr/bin:/bin",
                                   "PYTHONDONTWRITEBYTECODE": "1",
                                   "MPLBACKEND": "Agg", "HOME": str(workdir)})
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "caught"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="module to mutate, relative to the repository")
    parser.add_argument("--functions", default="", help="comma-separated top-level names")
    parser.add_argument("--tests", required=True, help="pytest arguments, as one string")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--limit", type=int, default=0, help="stop after this many mutants")
    parser.add_argument("--after", default="", help="mutate only after the first line "
                        "containing this text (skips a function's argument checks)")
    args = parser.parse_args()

    target = Path(args.target)
    source = (ROOT / target).read_text()
    lines = function_lines(source, {n for n in args.functions.split(",") if n})
    if args.after:
        start = next(i for i, line in enumerate(source.splitlines(), 1) if args.after in line)
        lines = {row for row in lines if row > start}
    test_args = args.tests.split(" -k ", 1)
    test_args = test_args[0].split() + (["-k", test_args[1]] if len(test_args) == 2 else [])
    with tempfile.TemporaryDirectory(prefix="mutants_") as tmp:
        workdir = Path(tmp)
        for name in ("ibp_lab", "tests"):
            shutil.copytree(ROOT / name, workdir / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy(ROOT / "pyproject.toml", workdir)
        # the copied package's ibp_lab/teaching/_numba_cache.py (run by the tests' conftest) drops
        # numba's cache whenever a module changed: numba itself misses edits to a callee in
        # another file, which would keep mutants of _kernel.py out of their callers
        if run_tests(workdir, test_args, args.timeout) != "survived":
            sys.exit("the tests fail on the unmutated package: nothing to learn")
        copy = workdir / target
        counts = {"caught": 0, "timeout": 0, "survived": 0}
        survivors = []
        start = time.time()
        for n, (row, description, mutated) in enumerate(mutants(source, lines), 1):
            if args.limit and n > args.limit:
                break
            write_source(copy, mutated)
            outcome = run_tests(workdir, test_args, args.timeout)
            write_source(copy, source)
            counts[outcome] += 1
            if outcome == "survived":
                survivors.append((row, description))
            print(f"{n:4d} {outcome:8s} line {row}: {description}", flush=True)
        total = sum(counts.values())
        print(f"\n{target}: {total} mutants, {counts['caught']} caught, {counts['timeout']} "
              f"timed out (caught), {counts['survived']} survived, {time.time() - start:.0f} s")
        for row, description in survivors:
            print(f"SURVIVED line {row}: {description}")


if __name__ == "__main__":
    main()
