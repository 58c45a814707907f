"""The noisy-OR IBP on the thresholded digits: causes, their pixels and a posterior
predictive check, the runs the non-conjugate chapter reads.

Usage::

    .venv/bin/python experiments/noisy_or_digits.py           # the full runs (about 6 min of CPU)
    .venv/bin/python experiments/noisy_or_digits.py --quick   # the reduced runs only (seconds)

Data: the 300 training digits, a pixel on where its ink exceeds one half (binary, as the
noisy-OR requires). Model (:mod:`ibp_lab.inference.noisy_or`): ``Z ~ IBP(alpha = 1)``, links
``w_kd ~ Bernoulli(0.2)``, strength 0.9, leak 0.03. Two chains hold these fixed
(:func:`ibp_lab.inference.noisy_or.noisy_or_sweep`, seeded ``(SEED, tag, chain)``); two more
learn strength, leak and link probability from those starting values under uniform priors
(:func:`ibp_lab.inference.noisy_or.run_noisy_or`, its default, run on in stretches of
``draw_every`` sweeps from the last state, which continues the chain draw for draw; seeded
``(SEED, tag, LEARNED_SEED_OFFSET + chain)``). All start from one active cause per image.

Per chain: K+ and ``log p(X | Z, W)`` after every sweep, the CPU seconds, the final causes'
popularities and links (the chapter draws the links as images), for the learning chains
the strength, leak and link probability after every sweep, and the posterior
predictive check: from every ``draw_every``-th state of the second half, a replicated data
set drawn by :func:`ibp_lab.inference.noisy_or.simulate`; of each, the share of images with each
number of pixels on and each pixel's share of images in which it is on.

Writes ``ibp_lab/data/experiments/noisy_or_digits.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py`` reruns.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab import datasets  # noqa: E402
from ibp_lab.inference import noisy_or
from _record import quick_then_full  # noqa: E402

SEED = 2032
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "noisy_or_digits.json"
FIXED = dict(alpha=1.0, weight_prob=0.2, strength=0.9, leak=0.03)
FULL = dict(chains=2, sweeps=8000, draw_every=100, rows=300, threshold=0.5)
LEARNED = ("strength", "leak", "weight_prob")
LEARNED_SEED_OFFSET = 10
QUICK = dict(chains=2, sweeps=20, draw_every=5, rows=40, threshold=0.5)


def _statistics(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Share of images with 0..D pixels on; share of images with each pixel on."""
    per_image = np.bincount(X.sum(axis=1), minlength=X.shape[1] + 1) / X.shape[0]
    return per_image, X.mean(axis=0)


def _chain(X: np.ndarray, plan: dict, rng: np.random.Generator) -> dict:
    Z, W = np.ones((X.shape[0], 1), np.int8), np.ones((1, X.shape[1]), np.int64)
    k_plus, log_lik, on_counts, on_pixels, seconds = [], [], [], [], 0.0
    for sweep in range(1, plan["sweeps"] + 1):
        start = time.process_time()
        Z, W = noisy_or.noisy_or_sweep(X, Z, W, rng, **FIXED)
        seconds += time.process_time() - start
        k_plus.append(int(Z.shape[1]))
        log_lik.append(noisy_or.log_likelihood(X, Z, W, strength=FIXED["strength"],
                                               leak=FIXED["leak"]))
        if sweep > plan["sweeps"] // 2 and sweep % plan["draw_every"] == 0:
            replicated = noisy_or.simulate(Z, W, rng, strength=FIXED["strength"],
                                           leak=FIXED["leak"])
            counts, pixels = _statistics(replicated)
            on_counts.append(counts.tolist())
            on_pixels.append(pixels.tolist())
    order = np.argsort(-Z.sum(axis=0), kind="stable")
    return dict(k_plus=k_plus, log_likelihood=log_lik, seconds=seconds,
                popularity=Z.sum(axis=0)[order].tolist(), links=W[order].tolist(),
                replicated_on_counts=on_counts, replicated_on_pixels=on_pixels)


def _learning_chain(X: np.ndarray, plan: dict, rng: np.random.Generator) -> dict:
    """As :func:`_chain`, with strength, leak and link probability learned: stretches of
    ``draw_every`` sweeps, each run on from the last ``(Z, W)`` and parameter values."""
    # the fixed chains' start: one cause, active everywhere and linked to every pixel
    Z, W = np.ones((X.shape[0], 1), np.int8), np.ones((1, X.shape[1]), np.int64)
    values = dict(FIXED)
    trace = {name: [] for name in ("k_plus", "log_likelihood", *LEARNED)}
    on_counts, on_pixels, seconds = [], [], 0.0
    for done in range(0, plan["sweeps"], plan["draw_every"]):
        start = time.process_time()
        run = noisy_or.run_noisy_or(X, plan["draw_every"], rng, **values, Z0=Z, W0=W)
        seconds += time.process_time() - start
        Z, W = run.Z, run.A
        for name in trace:
            trace[name].extend(run.trace[name].values.tolist())
        values.update({name: trace[name][-1] for name in LEARNED})
        if done + plan["draw_every"] > plan["sweeps"] // 2:
            replicated = noisy_or.simulate(Z, W, rng, strength=values["strength"],
                                           leak=values["leak"])
            counts, pixels = _statistics(replicated)
            on_counts.append(counts.tolist())
            on_pixels.append(pixels.tolist())
    order = np.argsort(-Z.sum(axis=0), kind="stable")
    return dict(trace, seconds=seconds, popularity=Z.sum(axis=0)[order].tolist(),
                links=W[order].tolist(), replicated_on_counts=on_counts,
                replicated_on_pixels=on_pixels)


def runs(plan: dict, tag: int) -> dict:
    """Every chain, and the observed statistics of the data."""
    X_raw = datasets.load_digit_sets().train_raw[: plan["rows"]]
    X = (X_raw > plan["threshold"]).astype(np.int8)
    noisy_or.run_noisy_or(X[:4], 1, np.random.default_rng(0), **FIXED, learn=())  # compile first
    counts, pixels = _statistics(X)
    chains = []
    for c in range(plan["chains"]):
        chains.append(_chain(X, plan, np.random.default_rng((SEED, tag, c))))
        print(f"  chain {c}: K+ {chains[-1]['k_plus'][-1]}, {chains[-1]['seconds']:.1f} s",
              flush=True)
    learning = []
    for c in range(plan["chains"]):
        learning.append(_learning_chain(X, plan, np.random.default_rng(
            (SEED, tag, LEARNED_SEED_OFFSET + c))))
        last = learning[-1]
        print(f"  learning chain {c}: K+ {last['k_plus'][-1]}, leak {last['leak'][-1]:.3f}, "
              f"strength {last['strength'][-1]:.3f}, {last['seconds']:.1f} s", flush=True)
    return dict(observed_on_counts=counts.tolist(), observed_on_pixels=pixels.tolist(),
                chains=chains, learning_chains=learning)


def main(argv=None) -> int:
    return quick_then_full(argv, doc=__doc__, name="noisy_or_digits", run=runs, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT, fixed=FIXED)


if __name__ == "__main__":
    sys.exit(main())
