"""Execute chapters many times, one fresh kernel each, and report the slow runs.

A notebook execution that *stalls* (the kernel idle, the client waiting for a
message that never comes) looks like a slow chapter unless something looks for
it. This script executes notebooks repeatedly with nbclient, exactly as the book
build does (same kernel, same working directory), times every cell, and reports
for each notebook the median and the slowest run, and every cell that ran longer
than ``--stall-factor`` times its own median or hit the per-cell time limit.

Besides the chapters it can run a small probe notebook (``--probe``) holding the
kinds of output the chapters produce: inline figures, ``glue``, HTML and widget
displays, stderr, numba compilation, a thread pool.

Examples
--------
Every chapter three times, then the probe fifty times::

    .venv/bin/python tools/stress_execution.py --repeat 3 book/[0-9][0-9]_*.md
    .venv/bin/python tools/stress_execution.py --probe --repeat 50
    .venv/bin/python tools/stress_execution.py --probe output-widget --repeat 20

The report ends with one line per notebook and a verdict; the exit status is 1
when any run stalled (a cell over the time limit) and 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from queue import Empty

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

ROOT = Path(__file__).resolve().parent.parent

# The probe: one cell per kind of output the chapters make, several times over.
PROBE_CELLS = [
    "%matplotlib inline\nimport numpy as np, matplotlib.pyplot as plt, sys\n"
    "from myst_nb import glue\nimport ipywidgets as widgets\nfrom IPython.display import HTML, display",
    "fig, ax = plt.subplots(); ax.plot(np.arange(10)); glue('probe_fig', fig, display=False); plt.close(fig)",
    "glue('probe_number', 3.14159, display=False)",
    "for i in range(3):\n    fig, ax = plt.subplots(); ax.imshow(np.random.default_rng(i).random((20, 20)))\nplt.show()",
    "display(HTML('<div>static explorer' + 'x' * 200_000 + '</div>'))",
    "s = widgets.FloatSlider(); display(widgets.VBox([s, widgets.Output()]))",
    "print('to stderr', file=sys.stderr); print('to stdout')",
    "import numba\n@numba.njit(cache=False)\ndef f(x):\n    return x.sum()\nf(np.ones(5))",
    "from concurrent.futures import ThreadPoolExecutor\n"
    "with ThreadPoolExecutor(2) as ex:\n    list(ex.map(lambda x: np.linalg.svd(np.ones((200, 200)))[1][0], range(8)))",
]
# What a live explorer did (ibp_lab.teaching.widgets.live_explorer, before it drew into an Image
# widget): a figure displayed inside an Output widget. Executed headless, nbclient
# captures that output and sends the widget's new state to the kernel on the shell
# channel, in the middle of the cell.
OUTPUT_WIDGET_CELL = (
    "out = widgets.Output()\n"
    "def draw(a):\n"
    "    out.clear_output(wait=True)\n"
    "    with out:\n"
    "        fig, ax = plt.subplots(); ax.plot([0, a]); display(fig); plt.close(fig)\n"
    "widgets.interactive_output(draw, {'a': widgets.IntSlider(3)})\n"
    "display(out)"
)
PROBES = {
    "all": PROBE_CELLS * 3 + [OUTPUT_WIDGET_CELL] * 3,
    "output-widget": PROBE_CELLS[:1] + [OUTPUT_WIDGET_CELL] * 12,
    "explorer": PROBE_CELLS[:1] + [
        "from ibp_lab.teaching.widgets import live_explorer\n"
        "def render(a):\n"
        "    fig, ax = plt.subplots(); ax.plot([0, a]); return fig\n"
        "live_explorer(render, {'a': [1, 2, 3]})"] * 12,
}


def probe_notebook(kind: str) -> nbformat.NotebookNode:
    """A probe notebook: the kinds of output the chapters produce (``all``), or one kind."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in PROBES[kind]]
    return nb


def watch_wakeups(channel, name: str, found: list, slice_s: float) -> None:
    """Make ``channel.get_msg`` wait in slices and record messages the event loop missed.

    ``get_msg`` waits on ``socket.poll(timeout)``. When the event loop is woken
    by the message, the poll returns before its timeout. When the wake-up is lost,
    the poll returns only at its timeout, whose final non-blocking check finds the
    message already queued. Waiting in slices of ``slice_s`` seconds turns such a
    lost wake-up into a delay of at most one slice and records it in ``found``.
    """

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = slice_s if deadline is None else min(slice_s, max(0.0, deadline - time.monotonic()))
            began = time.monotonic()
            ready = await channel.socket.poll(int(wait * 1000))
            if ready:
                # Ready only when the slice ran out: found by the timeout's final check, so the
                # wake-up was lost. (A message that truly arrives in the last 5 ms of a slice is
                # counted too: about 1 in 1000 of the slices that end with a message.)
                if wait >= slice_s and time.monotonic() - began >= wait - 0.005:
                    found.append(name)
                return await channel._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty

    channel.get_msg = get_msg


def execute_once(nb: nbformat.NotebookNode, cwd: Path, cell_timeout: int,
                 watch_slice: float | None = None) -> dict:
    """Execute ``nb`` in a fresh kernel; return the per-cell times and the outcome."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))  # a fresh copy each run
    starts: dict[int, float] = {}
    times: dict[int, float] = {}
    lost: list[str] = []

    def on_start(cell, cell_index):
        starts[cell_index] = time.monotonic()

    def on_done(cell, cell_index, execute_reply):
        times[cell_index] = time.monotonic() - starts[cell_index]

    def on_kernel(notebook):
        if watch_slice is not None:
            watch_wakeups(client.kc.shell_channel, "shell", lost, watch_slice)
            watch_wakeups(client.kc.iopub_channel, "iopub", lost, watch_slice)

    client = NotebookClient(
        nb, timeout=cell_timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
        on_cell_start=on_start, on_cell_executed=on_done, on_notebook_start=on_kernel,
    )
    began, outcome = time.monotonic(), "ok"
    try:
        client.execute()
    except CellTimeoutError:
        outcome = "stalled"
        index = max(starts)  # the cell that was running when the limit struck
        times[index] = time.monotonic() - starts[index]
    except Exception as exc:  # a failing chapter is reported, not a stall
        outcome = f"error: {type(exc).__name__}"
    if outcome == "ok" and times and max(times.values()) >= cell_timeout - 1.0:
        # nbclient's wait ends at the limit with a final check that finds a message that
        # was there all along; the run then "succeeds", having stalled for the whole limit
        outcome = "stalled"
    return {"outcome": outcome, "seconds": time.monotonic() - began, "cells": times, "lost_wakeups": lost}


def load(path: Path) -> nbformat.NotebookNode:
    """A chapter (MyST Markdown) as a notebook; code cells only matter."""
    return jupytext.read(path)


def summarise(name: str, runs: list[dict], stall_factor: float) -> tuple[str, list[str]]:
    """One line for the notebook, and one line per suspicious cell time."""
    totals = [r["seconds"] for r in runs]
    median = statistics.median(totals)
    stalls = sum(r["outcome"] == "stalled" for r in runs)
    errors = sum(r["outcome"].startswith("error") for r in runs)
    line = (f"{name:32s} runs {len(runs):3d}  median {median:7.1f} s  slowest {max(totals):7.1f} s "
            f"({max(totals) / median:4.2f} x median)  stalls {stalls}  errors {errors}")
    cell_medians = {}
    for index in {i for r in runs for i in r["cells"]}:
        cell_medians[index] = statistics.median(r["cells"].get(index, 0.0) for r in runs)
    odd = []
    for k, run in enumerate(runs):
        for index, seconds in run["cells"].items():
            if seconds > max(stall_factor * cell_medians[index], cell_medians[index] + 5.0):
                odd.append(f"  run {k}: cell {index} took {seconds:.1f} s (median {cell_medians[index]:.1f} s)"
                           f" [{run['outcome']}]")
    return line, odd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapters (.md) to execute")
    parser.add_argument("--probe", choices=sorted(PROBES), nargs="?", const="all",
                        help="also run a probe notebook: every kind of output (all, the default), "
                             "figures in an Output widget, or ibp_lab's live explorer")
    parser.add_argument("--repeat", type=int, default=3, help="executions per notebook")
    parser.add_argument("--cell-timeout", type=int, default=150, help="seconds before a cell counts as stalled")
    parser.add_argument("--stall-factor", type=float, default=3.0,
                        help="report a cell slower than this multiple of its median")
    parser.add_argument("--json", type=Path, help="write every run's timings here")
    parser.add_argument("--watch-wakeups", type=float, metavar="SECONDS",
                        help="wait for kernel messages in slices of this length and count the "
                             "messages whose wake-up was lost (a diagnosis: it shortens stalls)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.cell_timeout < 1:
        parser.error("--repeat and --cell-timeout must be positive")
    jobs = [(p.stem, load(p), p.resolve().parent) for p in args.notebooks]
    if args.probe:
        jobs.append((f"probe-{args.probe}", probe_notebook(args.probe), ROOT / "book"))
    if not jobs:
        parser.error("give chapters, --probe, or both")
    print(f"ipykernel {version('ipykernel')}, jupyter_client {version('jupyter_client')}, "
          f"pyzmq {version('pyzmq')}, nbclient {version('nbclient')}; cell limit {args.cell_timeout} s")
    results: dict[str, list[dict]] = {name: [] for name, _, _ in jobs}
    for k in range(args.repeat):  # interleaved, so that a slow period hits every notebook alike
        for name, nb, cwd in jobs:
            run = execute_once(nb, cwd, args.cell_timeout, args.watch_wakeups)
            results[name].append(run)
            lost = f", lost wake-ups: {run['lost_wakeups']}" if run["lost_wakeups"] else ""
            print(f"[{k + 1}/{args.repeat}] {name}: {run['seconds']:.1f} s {run['outcome']}{lost}", flush=True)
    print()
    any_stall = False
    for name, runs in results.items():
        line, odd = summarise(name, runs, args.stall_factor)
        print(line)
        for note in odd:
            print(note)
        any_stall |= any(r["outcome"] == "stalled" for r in runs)
    n_runs = sum(len(r) for r in results.values())
    n_stalls = sum(r["outcome"] == "stalled" for runs in results.values() for r in runs)
    n_lost = sum(len(r["lost_wakeups"]) for runs in results.values() for r in runs)
    print(f"\n{n_runs} executions, {n_stalls} stalled, {n_lost} lost wake-ups detected")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if any_stall else 0


if __name__ == "__main__":
    sys.exit(main())
