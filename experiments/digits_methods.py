"""The book's inference methods on the digits, compared as the book compares methods: the
same hyperparameters, the same realised CPU where a budget is shared, repeated runs, and
two scorings per run so that Monte Carlo error can be told from real differences.

Usage::

    .venv/bin/python experiments/digits_methods.py           # the full runs (about 8 min of CPU)
    .venv/bin/python experiments/digits_methods.py --quick   # the reduced runs only (seconds)

Run it on an otherwise idle machine: the record keeps realised CPU seconds.

Data: the book's digits (:func:`ibp_lab.datasets.load_digit_sets`: 300 training digits,
200 test digits by writers unseen in training, centred by the training mean). Each test
digit shows its top four pixel rows; the score is ``log p(bottom | top, X_train)`` per
digit (:mod:`ibp_lab.inference.heldout`), and the RMSE of the predicted bottom half.

Every method gets the same hyperparameters, held fixed: ``alpha``, ``beta = 1``,
``sigma_x`` and ``sigma_a`` of the plan. Run ``r`` (seeds ``(SEED, tag, r)``):

- ``VI, best of 8``: :class:`ibp_lab.inference.variational.VariationalIBP` (stick-breaking, ``n_features``
  columns) from ``starts`` starts, keeping the highest ELBO; its CPU time is the sum over
  the starts, and it is the budget of the Gibbs chain below;
- ``VI, one start``: the first of those starts alone, with its own CPU time (a single run,
  so that the best of several is never set against one run of another method);
- ``Gibbs, same CPU``: :func:`ibp_lab.inference.chains.run_chain` (the collapsed sweep) in blocks of
  ``block`` sweeps, continued until its realised CPU reaches the budget; the states at the
  ends of the blocks of the second half are its draws (thinned to at most ``draws``). The
  reduced runs stop after ``blocks`` blocks instead, so that a rerun gives the same numbers
  on any machine;
- ``R-IBP``: :class:`ibp_lab.inference.streaming.RecursiveIBP`, one pass over the training digits in a
  random order, default births; its CPU is what one pass costs (it gets no budget).

Each score is computed twice (``score_a``, ``score_b``): from two independent sets of
``score_draws`` draws of ``q(pi)`` for the variational fits, from the two halves of the draws
(each with its own test-time sampler) for Gibbs, and exactly, twice the same, for the
R-IBP's filtering prior. CPU seconds (``process_time``) are the fits', not the scorings'.

Writes ``ibp_lab/data/experiments/digits_methods.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py``
reruns.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab.inference import heldout  # noqa: E402
from ibp_lab.inference.chains import GibbsSweep, run_chain  # noqa: E402
from ibp_lab.datasets import DIGIT_SHAPE, load_digit_sets  # noqa: E402
from ibp_lab.inference.streaming import RecursiveIBP  # noqa: E402
from ibp_lab.inference.variational import VariationalIBP  # noqa: E402
from _record import quick_then_full  # noqa: E402

SEED = 1012
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "digits_methods.json"
METHODS = ("VI, best of 8", "VI, one start", "Gibbs, same CPU", "R-IBP")
FULL = dict(runs=10, alpha=2.0, sigma_x=0.25, sigma_a=0.3, n_features=12, starts=8,
            vi_max_iter=1000, block=5, blocks=None, draws=40, score_draws=20, train=300,
            test=200)
QUICK = dict(runs=2, alpha=2.0, sigma_x=0.25, sigma_a=0.3, n_features=4, starts=8,
             vi_max_iter=30, block=2, blocks=6, draws=4, score_draws=3, train=40, test=10)


def _scored(rows_a, rows_b, hidden, seconds, k, **extra) -> dict:
    """Two scorings (mean log density over test digits), the RMSE of the first, CPU, K."""
    rmse = float(np.sqrt(np.mean((hidden - rows_a.mean) ** 2)))
    return dict(score_a=float(rows_a.log_density.mean()),
                score_b=float(rows_b.log_density.mean()), rmse=rmse, seconds=seconds,
                k=k, **extra)


def _vi(train, split, plan, hyper, rng) -> dict:
    """``starts`` variational fits: the first alone, and the best ELBO of all."""
    fit_rngs, score_rng = rng.spawn(plan["starts"]), rng.spawn(1)[0]
    fits, seconds = [], []
    for r in fit_rngs:
        start = time.process_time()
        fits.append(VariationalIBP(**hyper, n_features=plan["n_features"],
                                   max_iter=plan["vi_max_iter"], tol=1e-4, rng=r).fit(train))
        seconds.append(time.process_time() - start)
    best = int(np.argmax([f.elbo_[-1] for f in fits]))
    out = {}
    for name, index, cost in (("VI, best of 8", best, sum(seconds)),
                              ("VI, one start", 0, seconds[0])):
        fit = fits[index]
        a, b = [_finite(split, fit.predictive_draws(plan["score_draws"], r), hyper)
                for r in score_rng.spawn(2)]
        used = int(np.sum(fit.prior_probabilities_ > 0.01))
        out[name] = _scored(a, b, split[-1], cost, used, start=index)
    return out


def _finite(split, draws, hyper):
    test, top, bottom, _ = split
    probabilities, features, variances = draws
    return heldout.finite_feature_heldout(test, top, bottom, probabilities, features,
                                          sigma_x=hyper["sigma_x"],
                                          feature_variances=variances)


def _gibbs(train, split, plan, hyper, budget, rng) -> dict:
    """The collapsed chain, block after block, until its CPU reaches ``budget`` (or for
    ``plan["blocks"]`` blocks)."""
    fit_rng, score_rng = rng.spawn(2)
    states, Z, sweeps = [], None, 0
    start = time.process_time()

    def go_on() -> bool:
        if plan["blocks"] is not None:
            return len(states) < plan["blocks"]
        return not states or time.process_time() - start < budget

    while go_on():
        chain = run_chain(train, plan["block"], fit_rng, Z0=Z, **hyper,
                          moves=[GibbsSweep()])
        Z, sweeps = chain.Z, sweeps + plan["block"]
        states.append(Z)
    seconds = time.process_time() - start
    kept = states[len(states) // 2:]
    kept = kept[:: max(1, len(kept) // plan["draws"])][-plan["draws"]:]
    draws = [(z, hyper["sigma_x"], hyper["sigma_a"], hyper["alpha"]) for z in kept]
    test, top, bottom, _ = split
    half = max(1, len(draws) // 2)
    parts = (draws[:half], draws[half:2 * half] or draws[:half])
    a, b = [heldout.ibp_gibbs_heldout(train, part, test, top, bottom, r)
            for part, r in zip(parts, score_rng.spawn(2))]
    k = float(np.mean([z.shape[1] for z in kept]))
    return _scored(a, b, split[-1], seconds, k, budget=budget, sweeps=sweeps,
                   n_draws=len(draws))


def _ribp(train, split, hyper, rng) -> dict:
    order_rng, fit_rng = rng.spawn(2)
    rows = train[order_rng.permutation(len(train))]
    start = time.process_time()
    model = RecursiveIBP(**hyper, beta=1.0, rng=fit_rng).fit(rows)
    seconds = time.process_time() - start
    k = len(model.features_)
    if k > heldout.MAX_PATTERN_FEATURES:  # too many kept features to sum exactly
        return dict(score_a=None, score_b=None, rmse=None, seconds=seconds, k=k)
    # the filtering prior for the next digit is exact: one scoring, twice the same
    result = _finite(split, (model.next_prior()[1][None, :k], model.features_[None],
                             model.feature_variances_[None]), hyper)
    return _scored(result, result, split[-1], seconds, k)


def one_run(train, split, plan: dict, rng: np.random.Generator) -> dict:
    hyper = dict(alpha=plan["alpha"], sigma_x=plan["sigma_x"], sigma_a=plan["sigma_a"])
    vi_rng, gibbs_rng, ribp_rng = rng.spawn(3)
    out = _vi(train, split, plan, hyper, vi_rng)
    out["Gibbs, same CPU"] = _gibbs(train, split, plan, hyper,
                                    out["VI, best of 8"]["seconds"], gibbs_rng)
    out["R-IBP"] = _ribp(train, split, hyper, ribp_rng)
    return dict(methods={m: out[m] for m in METHODS})


def runs(plan: dict, tag: int) -> dict:
    digits = load_digit_sets()
    train, test = digits.train[: plan["train"]], digits.test[: plan["test"]]
    top, bottom = heldout.split_top_bottom(DIGIT_SHAPE, n_top_rows=4)
    split = (test, top, bottom, test[:, bottom])
    warm = dict(plan, starts=1, vi_max_iter=2, block=1, blocks=2, draws=1, score_draws=1)
    one_run(train[:10], (test[:2], top, bottom, test[:2, bottom]), warm,
            np.random.default_rng(0))  # compile before timing
    out = []
    for r in range(plan["runs"]):
        out.append(one_run(train, split, plan, np.random.default_rng((SEED, tag, r))))
        print(f"  run {r}: " + ", ".join(
            f"{m} {v['score_a']:.2f} ({v['seconds']:.1f} s)" if v["score_a"] is not None
            else f"{m} -" for m, v in out[-1]["methods"].items()), flush=True)
    return dict(methods=list(METHODS), runs=out)


def main(argv=None) -> int:
    return quick_then_full(argv, doc=__doc__, name="digits_methods", run=runs, full=FULL,
                           quick=QUICK, seed=SEED, out=OUT,
                           data="ibp_lab.datasets.load_digit_sets()")


if __name__ == "__main__":
    sys.exit(main())
