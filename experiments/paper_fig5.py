"""The R-IBP paper's Fig. 5, reproduced at this machine's scale: held-out score and CPU time
of every method against alpha, over synthetic linear-Gaussian data sets.

Usage::

    .venv/bin/python experiments/paper_fig5.py           # the full runs (about 15 min of CPU)
    .venv/bin/python experiments/paper_fig5.py --quick   # the reduced runs only (seconds)
    nice -n 10 .venv/bin/python experiments/paper_fig5.py --part 2.0 &  # one alpha's data
    nice -n 10 .venv/bin/python experiments/paper_fig5.py --part 0.5 --part 1.0  # sets, shared

Each data set's runs are kept in ``_build/experiment-cache/paper_fig5/`` when done, so a
stopped script resumes there and ``--part`` processes share the work; the record is
written by a run without ``--part``, from the cache. Run it on an otherwise idle machine:
the record keeps realised CPU seconds (of the fits, and of each data set in all). Every
method runs with one BLAS thread (``threadpoolctl``), as the samplers do anyway: a second
thread on these small matrices costs CPU seconds it does not save.

Data (per alpha, ``data_sets`` sets, seeded ``(SEED, tag, alpha index, set)``):
``Z ~ IBP(alpha, beta = 1)`` on ``train + test`` rows, ``A ~ Normal(0, sigma_a^2)`` with
``dims`` columns, ``X = Z A + Normal(0, sigma_x^2)``. The first ``train`` rows are
streamed or fitted; the last ``test`` rows are held out.

Methods, every one given the true alpha, beta = 1, sigma_x and sigma_a (as in the paper):

- ``R-IBP``: :class:`ibp_lab.inference.streaming.RecursiveIBP`, one pass, default births;
- ``SVI finite`` / ``SVI infinite``: :func:`ibp_lab.inference.streaming_variational.stream_variational`,
  one pass in batches of ``svi_batch`` rows (finite with ``truncation`` columns; infinite
  opening columns up to ``truncation``);
- ``VI finite`` / ``VI infinite``: :class:`ibp_lab.inference.variational.VariationalIBP`
  (finite beta-Bernoulli and truncated stick-breaking, ``truncation`` columns), one start
  per run (not the best of several), to convergence;
- ``Gibbs``: :func:`ibp_lab.inference.chains.run_chain`, the collapsed sweep, ``sweeps`` sweeps with
  the hyperparameters fixed at the truth, the second half thinned to ``draws`` draws.

PyMC is left out: one NUTS fit of the truncated model costs minutes, times three alphas
and ten data sets. The chapter says so.

Score (the same for every method): the log predictive density of each test row's second
half of coordinates given its first half, ``log p(x_hid | x_obs, X_train)``, averaged over
the test rows (:mod:`ibp_lab.inference.heldout`). The paper scores whole rows with 100 draws of the
test rows' features and the feature images from the posterior; conditioning on half a
row is a different quantity that every method can be scored on in the same way.

The variational methods' ``q(pi)`` is scored by ``score_draws`` draws ``pi_s ~ q``,
weighted by how well each explains the row's observed half
(``heldout.finite_feature_heldout(..., draw_weights="observed")``): the estimate is
``sum_s p(x_obs, x_hid | pi_s) / sum_s p(x_obs | pi_s)``, a consistent estimate of the
conditional density of ``q``'s predictive (an equal-weight average of the draws'
conditional densities would converge to a mixture of conditionals instead). Each score
is computed twice (``score_a``, ``score_b``): with independent draws of ``q(pi)`` for the
variational methods, exactly (twice the same) for the R-IBP, and from the two halves of
the chain for Gibbs (correlated halves, so its Monte Carlo error is understated; each
Gibbs draw of ``Z`` counts equally, not weighted by its ``p(x_obs | Z)``); ``rows_a``
keeps the first scoring's per-row log densities. ``seconds`` (``process_time``) are the
fit's alone, not the scoring's; a data set's ``cpu_seconds`` are all its work.

Writes ``ibp_lab/data/experiments/paper_fig5.json`` (``--out`` elsewhere), with the
command, stack, seed and date, and the reduced runs that ``tests/test_experiments.py``
reruns.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

from ibp_lab.inference import heldout  # noqa: E402
from ibp_lab.inference.chains import GibbsSweep, run_chain  # noqa: E402
from ibp_lab.models.prior import sample_ibp  # noqa: E402
from ibp_lab.inference.streaming import RecursiveIBP  # noqa: E402
from ibp_lab.inference.streaming_variational import stream_variational  # noqa: E402
from ibp_lab.inference.variational import VariationalIBP  # noqa: E402
from _record import cached_row, write_record  # noqa: E402

SEED = 2022
OUT = ROOT / "ibp_lab" / "data" / "experiments" / "paper_fig5.json"
CACHE = ROOT / "_build" / "experiment-cache" / "paper_fig5"
#: BLAS threads of every method's fit and scoring (the timings are CPU seconds).
BLAS_THREADS = 1
TRUTH = dict(sigma_x=0.5, sigma_a=1.0)
# alpha up to 2: at 80 rows every method's features stay within the exact scorer's
# 2^18 patterns (R-IBP used up to 24 at alpha = 3 in a first run, so alpha = 3 could
# not be scored); truncation 18, the scorer's most, lies above the true K+ (at most 17)
# of every data set drawn; 20 weighted draws of q(pi) per variational scoring (issue 51:
# 2 equal-weight draws before)
FULL = dict(alphas=[0.5, 1.0, 2.0], data_sets=10, train=80, test=40, dims=24, truncation=18,
            svi_batch=10, vi_max_iter=500, sweeps=400, draws=40, score_draws=20)
QUICK = dict(alphas=[1.0, 2.0], data_sets=2, train=30, test=10, dims=8, truncation=6,
             svi_batch=10, vi_max_iter=50, sweeps=20, draws=4, score_draws=20)
METHODS = ("R-IBP", "SVI finite", "SVI infinite", "VI finite", "VI infinite", "Gibbs")


def simulate(alpha: float, plan: dict, rng: np.random.Generator):
    """Training and test rows from the linear-Gaussian IBP, and the true K+."""
    n = plan["train"] + plan["test"]
    Z = sample_ibp(alpha, n, rng)
    A = rng.normal(0.0, TRUTH["sigma_a"], size=(Z.shape[1], plan["dims"]))
    X = Z @ A + rng.normal(0.0, TRUTH["sigma_x"], size=(n, plan["dims"]))
    k_train = int((Z[: plan["train"]].sum(axis=0) > 0).sum())
    return X[: plan["train"]], X[plan["train"]:], k_train


def _timed(fit):
    start = time.process_time()
    out = fit()
    return out, time.process_time() - start


def _finite_rows(split, draws, sigma_x, weights="observed"):
    """Each test row's log density of its hidden half given its observed half, the draws
    weighted by ``p(x_obs | draw)`` (one draw: the weight is 1), or equally when a plan
    says ``draw_weights="equal"`` (paper_fig8's record was scored so)."""
    _, test, obs, hid = split
    probabilities, features, variances = draws
    return heldout.finite_feature_heldout(
        test, obs, hid, probabilities, features, sigma_x=sigma_x,
        feature_variances=variances, draw_weights=weights).log_density


def _variational(fit, split, hyper, plan, rng):
    """A fitted q (streaming or batch): two scorings, each from its own ``score_draws``
    independent draws of q(pi), weighted by how well they explain the observed halves."""
    return [_finite_rows(split, fit.predictive_draws(plan["score_draws"], r),
                         hyper["sigma_x"], plan.get("draw_weights", "observed"))
            for r in rng.spawn(2)]


def _result(rows_a, rows_b, seconds, k):
    """Two scores (means over test rows), the first scoring's rows, CPU and features."""
    return dict(score_a=float(rows_a.mean()), score_b=float(rows_b.mean()),
                rows_a=rows_a.tolist(), seconds=seconds, k=k)


def _ribp(split, hyper, plan, rng, beta=1.0):
    train = split[0]
    model, seconds = _timed(lambda: RecursiveIBP(**hyper, beta=beta, rng=rng).fit(train))
    k = len(model.features_)
    if k > heldout.MAX_PATTERN_FEATURES:
        return dict(score_a=None, score_b=None, rows_a=None, seconds=seconds, k=k)
    # the filtering prior of the next row is exact: no Monte Carlo, one score twice
    draws = (model.next_prior()[1][None, :k], model.features_[None],
             model.feature_variances_[None])
    if k == 0:  # no feature kept: the rows are noise; one feature of probability 0
        draws = (np.zeros((1, 1)), np.zeros((1, 1, train.shape[1])), np.zeros((1, 1)))
    rows = _finite_rows(split, draws, hyper["sigma_x"])
    return _result(rows, rows, seconds, k)


def _svi(split, hyper, plan, rng, family):
    fit_rng, score_rng = rng.spawn(2)
    fit, seconds = _timed(lambda: stream_variational(
        split[0], fit_rng, **hyper, family=family, n_features=plan["truncation"],
        batch_size=plan["svi_batch"]))
    a, b = _variational(fit, split, hyper, plan, score_rng)
    used = int((fit.feature_probabilities.max(axis=0) > 0.5).sum())
    return _result(a, b, seconds, used)


def _vi(split, hyper, plan, rng, family):
    fit_rng, score_rng = rng.spawn(2)
    fit, seconds = _timed(lambda: VariationalIBP(
        **hyper, family=family, n_features=plan["truncation"],
        max_iter=plan["vi_max_iter"], tol=1e-4, rng=fit_rng).fit(split[0]))
    a, b = _variational(fit, split, hyper, plan, score_rng)
    used = int((fit.feature_probabilities_.max(axis=0) > 0.5).sum())
    return _result(a, b, seconds, used)


def _gibbs(split, hyper, plan, rng):
    train, test, obs, hid = split
    fit_rng, score_rng = rng.spawn(2)
    sweeps = plan["sweeps"]
    chain, seconds = _timed(lambda: run_chain(
        train, sweeps, fit_rng, **hyper, moves=[GibbsSweep()], burn=sweeps // 2,
        thin=max(1, sweeps // 2 // plan["draws"])))
    draws = heldout.chain_draws(chain)
    half = len(draws) // 2
    # two halves of the draws, each with its own test-time sampler: two scorings (not
    # independent: the halves of one chain are correlated, and share its mode)
    a, b = [heldout.ibp_gibbs_heldout(train, part, test, obs, hid, r).log_density
            for part, r in zip((draws[:half], draws[half:2 * half]), score_rng.spawn(2))]
    k = float(np.mean([d[0].shape[1] for d in draws]))
    return _result(a, b, seconds, k)


def score_methods(train, test, hyper: dict, plan: dict, rngs) -> dict:
    """Every method fitted on ``train`` at ``hyper`` (alpha, sigma_x, sigma_a; beta = 1)
    and scored on ``test``'s second half of columns given its first half."""
    dims = train.shape[1]
    split = (train, test, np.arange(dims // 2), np.arange(dims // 2, dims))
    r = dict(zip(METHODS, rngs))
    return {
        "R-IBP": _ribp(split, hyper, plan, r["R-IBP"]),
        "SVI finite": _svi(split, hyper, plan, r["SVI finite"], "finite"),
        "SVI infinite": _svi(split, hyper, plan, r["SVI infinite"], "stick_breaking"),
        "VI finite": _vi(split, hyper, plan, r["VI finite"], "finite"),
        "VI infinite": _vi(split, hyper, plan, r["VI infinite"], "stick_breaking"),
        "Gibbs": _gibbs(split, hyper, plan, r["Gibbs"]),
    }


def one_data_set(alpha: float, plan: dict, rng: np.random.Generator) -> dict:
    start = time.process_time()
    data_rng, *method_rngs = rng.spawn(1 + len(METHODS))
    train, test, k_true = simulate(alpha, plan, data_rng)
    out = score_methods(train, test, dict(alpha=alpha, **TRUTH), plan, method_rngs)
    return dict(k_true=k_true, methods=out, cpu_seconds=time.process_time() - start)


def _plan_key(plan: dict, tag: int) -> str:
    """A name for a plan's cached runs: a new plan never reads an old plan's cache."""
    text = json.dumps(dict(plan, tag=tag, seed=SEED, blas_threads=BLAS_THREADS), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def runs(plan: dict, tag: int, alphas=None, *, cache: bool = False) -> dict:
    """Every data set of ``plan`` (only ``alphas`` if given), seeded
    ``(SEED, tag, alpha index, set)``; with ``cache``, each kept in ``CACHE`` when done."""
    warm = dict(plan, alphas=[1.0], data_sets=1, train=12, test=4, dims=4, sweeps=4, draws=2)
    one_data_set(1.0, warm, np.random.default_rng(0))  # compile before timing
    out = {}
    for i, alpha in enumerate(plan["alphas"]):
        if alphas is not None and alpha not in alphas:
            continue
        sets = []
        for s in range(plan["data_sets"]):
            def make(i=i, s=s, alpha=alpha):
                return one_data_set(alpha, plan, np.random.default_rng((SEED, tag, i, s)))

            path = CACHE / _plan_key(plan, tag) / f"{i}-{s}.json"
            sets.append(cached_row(path, make) if cache else make())
            scores = {m: v["score_a"] for m, v in sets[-1]["methods"].items()}
            print(f"  alpha {alpha} set {s}: " + ", ".join(
                f"{m} {v:.2f}" if v is not None else f"{m} -" for m, v in scores.items()),
                flush=True)
        out[str(alpha)] = sets
    return dict(methods=list(METHODS), data_sets=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced runs only; print them")
    parser.add_argument("--part", type=float, action="append", choices=FULL["alphas"],
                        help="run only this alpha's data sets into the cache (processes can "
                             "share the work); the record is written when no --part is given")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with threadpool_limits(limits=BLAS_THREADS):
        if args.part:
            runs(FULL, tag=0, alphas=args.part, cache=True)
            return 0
        quick = runs(QUICK, tag=1)
        if args.quick:
            json.dump(quick, sys.stdout, indent=1)
            return 0
        full = runs(FULL, tag=0, cache=True)
    cpu = sum(d["cpu_seconds"] for sets in full["data_sets"].values() for d in sets)
    write_record(args.out, "paper_fig5", seed=SEED, cpu_seconds=cpu, plan=FULL,
                 quick_plan=QUICK, truth=TRUTH, blas_threads=BLAS_THREADS, runs=full,
                 quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
