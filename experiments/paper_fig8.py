"""The R-IBP paper's Fig. 8, reproduced at this machine's scale: a real tabular data set,
every method over a grid of hyperparameters, and the R-IBP's CPU time against alpha and beta.

Usage::

    .venv/bin/python experiments/paper_fig8.py           # the full runs (about 5 min of CPU)
    .venv/bin/python experiments/paper_fig8.py --quick   # the reduced runs only (seconds)

Run it on an otherwise idle machine: the record keeps realised CPU seconds.

Data: the paper's UCI sets (cancer gene expression, 801 x 20k; diabetic patients, 100k x
55) are not bundled and nothing is downloaded. This script uses the diabetes data that
scikit-learn ships (``sklearn.datasets.load_diabetes(scaled=False)``: 442 patients, 10
baseline variables; a different data set from the paper's diabetic patients). Its rows
are put in the order of ``default_rng(SEED).permutation``; the first ``train`` are fitted,
the next ``test`` held out; every column is standardised by the training rows' mean and
standard deviation.

Grid: every method of ``paper_fig5`` (R-IBP, SVI finite and infinite, VI finite and
infinite, collapsed Gibbs) at every ``(alpha, sigma_x, sigma_a)`` of the plan, with
``beta = 1`` (the baselines are defined for ``beta = 1`` only), scored as in ``paper_fig5``:
``log p(x_hid | x_obs, X_train)`` of the test rows' last five columns given their first
five, twice with independent Monte Carlo draws (the variational methods' draws of q weighted
equally, as when this record was made; paper_fig5 now weights them by ``p(x_obs | draw)``). Seeds ``(SEED, tag, configuration)``.

Time: the R-IBP alone fitted at every ``(alpha, beta)`` of ``time_alphas x time_betas``
(``sigma_x = 0.5``, ``sigma_a = 1``), ``time_repeats`` times each, with its CPU seconds and
its number of kept features.

Writes ``ibp_lab/data/experiments/paper_fig8.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py``
reruns.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab.inference.streaming import RecursiveIBP  # noqa: E402
from _record import quick_then_full  # noqa: E402
from paper_fig5 import METHODS, _timed, score_methods  # noqa: E402

SEED = 2017
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "paper_fig8.json"
FULL = dict(train=300, test=142, alphas=[0.5, 1.0, 2.0, 4.0], sigma_x=[0.5, 0.8],
            sigma_a=[0.5, 1.0], truncation=14, svi_batch=10, vi_max_iter=500, sweeps=400,
            draws=40, score_draws=5, time_alphas=[0.5, 1.0, 2.0, 4.0, 8.0],
            time_betas=[0.5, 1.0, 2.0, 4.0, 8.0], time_repeats=3)
QUICK = dict(train=40, test=10, alphas=[1.0], sigma_x=[0.8], sigma_a=[1.0], truncation=6,
             svi_batch=10, vi_max_iter=50, sweeps=20, draws=4, score_draws=4,
             time_alphas=[1.0, 2.0], time_betas=[1.0, 2.0], time_repeats=1)
DATA = "sklearn.datasets.load_diabetes(scaled=False): 442 rows x 10 columns"


def load(plan: dict) -> tuple[np.ndarray, np.ndarray]:
    """Training and test rows, standardised by the training rows."""
    from sklearn.datasets import load_diabetes

    X = load_diabetes(scaled=False).data[np.random.default_rng(SEED).permutation(442)]
    train, test = X[: plan["train"]], X[plan["train"]: plan["train"] + plan["test"]]
    mean, sd = train.mean(axis=0), train.std(axis=0)
    return (train - mean) / sd, (test - mean) / sd


def runs(plan: dict, tag: int) -> dict:
    train, test = load(plan)
    warm = dict(plan, truncation=2, sweeps=4, draws=2, score_draws=2)
    score_methods(train[:12], test[:4], dict(alpha=1.0, sigma_x=0.8, sigma_a=1.0), warm,
                  np.random.default_rng(0).spawn(len(METHODS)))  # compile before timing
    grid = []
    for i, (alpha, sx, sa) in enumerate(itertools.product(plan["alphas"], plan["sigma_x"],
                                                          plan["sigma_a"])):
        hyper = dict(alpha=alpha, sigma_x=sx, sigma_a=sa)
        rngs = np.random.default_rng((SEED, tag, i)).spawn(len(METHODS))
        # scored as when the record was made: q's draws weighted equally
        scoring = dict(plan, draw_weights="equal")
        grid.append(dict(hyper, methods=score_methods(train, test, hyper, scoring, rngs)))
        print(f"  {hyper}: " + ", ".join(
            f"{m} {v['score_a']:.2f}" if v["score_a"] is not None else f"{m} -"
            for m, v in grid[-1]["methods"].items()), flush=True)
    timing = []
    for j, (alpha, beta) in enumerate(itertools.product(plan["time_alphas"],
                                                        plan["time_betas"])):
        for rep in range(plan["time_repeats"]):
            rng = np.random.default_rng((SEED, tag, 1000 + j, rep))
            model, seconds = _timed(lambda: RecursiveIBP(
                alpha=alpha, beta=beta, sigma_x=0.5, sigma_a=1.0, rng=rng).fit(train))
            timing.append(dict(alpha=alpha, beta=beta, repeat=rep, seconds=seconds,
                               k=len(model.features_)))
    return dict(methods=list(METHODS), grid=grid, timing=timing, n_train=int(len(train)))


def main(argv=None) -> int:
    import sklearn

    return quick_then_full(argv, doc=__doc__, name="paper_fig8", run=runs, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT, data=DATA,
                           sklearn=sklearn.__version__)


if __name__ == "__main__":
    sys.exit(main())
