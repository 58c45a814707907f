"""Hostile-input harness: run one case in a forked child with a time and memory limit.

A *case* is a zero-argument callable (fork-inherited, so lambdas and closures are fine),
the names of the argument under test, and what the case expects:

- ``"refuse"``: the input is junk; the call must raise ValueError/TypeError whose
  message names the argument. Returning anything is ``accepted_junk``.
- ``"accept"``: the input is valid (possibly extreme); the call must return a result
  that passes the generic scan (no NaN/inf) and the case's ``check``. A refusal is
  ``refused_valid``.
- ``"either"``: a clear refusal naming the argument, or a valid result.

The verdict is ``ok`` or ``refused`` when the case holds, else one failure class
(:data:`FAILURES`) with details. This module imports nothing from ``ibp_lab``, so it
can judge any package.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import random
import re
import resource
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: Verdicts that mean the case holds.
PASSES = ("ok", "refused")
#: Every failure class the harness can report.
FAILURES = (
    "crash",          # an exception other than ValueError/TypeError
    "unnamed_error",  # ValueError/TypeError whose message does not name the argument
    "bad_result",     # NaN/inf or a value outside its documented range
    "accepted_junk",  # junk input returned a result instead of a refusal
    "refused_valid",  # a valid input was refused
    "timeout",        # no answer within the time limit
    "memory",         # MemoryError under the address-space limit
    "died",           # the child ended without an answer (signal, segfault)
    "global_state",   # NumPy's or Python's global generator changed
    "files",          # files changed outside the child's temporary directory
)

#: Address space the child may add to what it inherits: a 7 TiB request fails at once.
MEMORY_LIMIT = 4 * 2**30
TIME_LIMIT = 10.0

# The first get_state of a process imports lazily (0.1 s): pay it once here, not per child.
np.random.get_state(legacy=False)


@dataclass
class Case:
    """One hostile (or valid extreme) input to one public function."""

    function: str
    label: str
    call: Callable[[], Any]
    names: tuple[str, ...]
    expect: str = "refuse"
    check: Callable[[Any], str | None] | None = None
    allow_inf: bool = False
    time_limit: float = TIME_LIMIT
    #: Exceptions that count as a refusal (OSError too, for a path that does not exist).
    refusals: tuple = (ValueError, TypeError)

    @property
    def id(self) -> str:
        return f"{self.function}[{self.label}]"


@dataclass
class Verdict:
    kind: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.kind in PASSES


# ---------------------------------------------------------------------------------------
# the generic result scan
# ---------------------------------------------------------------------------------------


def scan_result(value, *, allow_inf: bool = False, depth: int = 0, where: str = "result") -> str | None:
    """Return a description of the first NaN (or inf) found in ``value``, or None.

    Walks arrays, numbers, tuples, lists, dicts, dataclasses and xarray datasets,
    the containers that ibp_lab returns; other objects are left to the case's check.
    """
    if depth > 4:
        return None
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        return None
    if isinstance(value, (float, int, complex, np.number)):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        return _scan_array(value, allow_inf, where)
    # exact container types only: a PyMC model is a dict-like whose lookups can raise
    if type(value) is dict:
        items = value.items()
    elif type(value) in (list, tuple) or (isinstance(value, tuple) and hasattr(value, "_fields")):
        items = enumerate(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    elif type(value).__module__.startswith("xarray") and type(value).__name__ == "Dataset":
        items = ((name, value[name].values) for name in value.data_vars)
    else:
        return None
    for key, item in items:
        problem = scan_result(item, allow_inf=allow_inf, depth=depth + 1, where=f"{where}[{key!r}]")
        if problem:
            return problem
    return None


def _scan_array(arr: np.ndarray, allow_inf: bool, where: str) -> str | None:
    if arr.dtype.kind == "c":
        return f"{where} is complex ({arr.dtype})"
    if arr.dtype.kind != "f":
        return None
    if np.isnan(arr).any():
        return f"{where} holds NaN"
    if not allow_inf and np.isinf(arr).any():
        return f"{where} holds inf"
    return None


# ---------------------------------------------------------------------------------------
# the child
# ---------------------------------------------------------------------------------------


def _vm_bytes() -> int:
    """Virtual size of this process: the limit is set above what the fork inherited."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _listing(directories) -> dict:
    """Names and modification times of the entries of a few directories."""
    out = {}
    for directory in directories:
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    out[entry.path] = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            pass
    return out


def _names_argument(message: str, names) -> bool:
    """True if the message names one of ``names`` as a word.

    ``X`` must not be found inside ``sigma_X``; ``samples`` is found in ``samples[2]``
    and ``X`` in ``X_train``.
    """
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9])", message) for name in names)


def _judge_exception(case: Case, exc: BaseException) -> Verdict:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError):
        return Verdict("memory", text)
    if not isinstance(exc, case.refusals):
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f" at {os.path.basename(frame.filename)}:{frame.lineno}"
        return Verdict("crash", text[:300] + where)
    if case.expect == "accept":
        return Verdict("refused_valid", text[:300])
    if not _names_argument(str(exc), case.names):
        return Verdict("unnamed_error", f"message does not name {'/'.join(case.names)}: {text[:300]}")
    return Verdict("refused", text[:200])


def _judge_result(case: Case, result) -> Verdict:
    if case.expect == "refuse":
        return Verdict("accepted_junk", f"returned {type(result).__name__}: {_short(result)}")
    problem = scan_result(result, allow_inf=case.allow_inf)
    if problem is None and case.check is not None:
        try:
            problem = case.check(result)
        except Exception as exc:  # noqa: BLE001 - a result the check cannot read is a bad result
            problem = f"the result check failed on it: {type(exc).__name__}: {exc}"[:300]
    if problem:
        return Verdict("bad_result", problem)
    return Verdict("ok")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."


def _child(case: Case, conn, watched, workdir: str) -> None:
    try:
        gc.enable()
        resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + MEMORY_LIMIT, resource.RLIM_INFINITY))
        os.chdir(workdir)
        # whatever the case makes through tempfile lands in the parent's directory, removed with it
        tempfile.tempdir = workdir
        before_np = np.random.get_state(legacy=False)
        before_py = random.getstate()
        before_files = _listing(watched)
        try:
            verdict = _judge_result(case, case.call())
        except BaseException as exc:  # noqa: BLE001 - classifying every exception is the point
            verdict = _judge_exception(case, exc)
        if not _same_np_state(before_np, np.random.get_state(legacy=False)) or before_py != random.getstate():
            verdict = Verdict("global_state", "the global NumPy or Python generator changed")
        changed = _diff(before_files, _listing(watched))
        if changed:
            verdict = Verdict("files", f"touched {changed[:3]}")
        conn.send((verdict.kind, verdict.detail))
    except BaseException as exc:  # noqa: BLE001 - the verdict itself failed to travel
        try:
            conn.send(("crash", f"harness: {type(exc).__name__}: {exc}"[:300]))
        except BaseException:  # noqa: BLE001
            pass
    finally:
        conn.close()
        os._exit(0)  # skip atexit handlers inherited from the parent


def _same_np_state(a, b) -> bool:
    return a["bit_generator"] == b["bit_generator"] and repr(a["state"]) == repr(b["state"])


def _diff(before: dict, after: dict) -> list[str]:
    """Entries created or removed: other people edit files here, so times are not compared."""
    return sorted(set(before) ^ set(after))


#: Directories in which no entry may appear or vanish: the repository, its package, tests, home.
def watched_directories() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    return [root, here, os.path.join(root, "ibp_lab"), os.path.expanduser("~")]


def run_case(case: Case, *, time_limit: float | None = None) -> Verdict:
    """Run ``case`` in a forked child and return its verdict."""
    limit = case.time_limit if time_limit is None else time_limit
    # objects the parent holds stay out of the child's collections: fewer copied pages
    gc.freeze()
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    # the parent owns the child's directory: a child killed at its limit, or killed just after its
    # verdict, cannot remove it (35,903 empty directories had piled up in /tmp that way)
    workdir = tempfile.mkdtemp(prefix="campaign-")
    child = ctx.Process(target=_child, args=(case, send, watched_directories(), workdir), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(limit):
            try:
                kind, detail = receive.recv()
                return Verdict(kind, detail)
            except EOFError:
                pass
            child.join(5)
            return Verdict("died", f"exit code {child.exitcode}")
        return Verdict("timeout", f"no answer within {limit:g} s")
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()
        shutil.rmtree(workdir, ignore_errors=True)


@dataclass
class Report:
    """Counts of a campaign run: cases per function, verdicts per class, failures."""

    per_function: dict = field(default_factory=dict)
    per_kind: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)

    def add(self, case: Case, verdict: Verdict) -> None:
        self.per_function[case.function] = self.per_function.get(case.function, 0) + 1
        self.per_kind[verdict.kind] = self.per_kind.get(verdict.kind, 0) + 1
        if not verdict.passed:
            self.failures.append((case, verdict))
