"""Timings and book tables for the samplers: what chapter 7 measures and tabulates.

Kept out of the algorithm modules (:mod:`ibp_lab.inference.split_merge`, :mod:`ibp_lab.inference.chains`),
which only sample.

- :func:`seconds_per_step` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0, ...)``:
  measured CPU time of one Gibbs sweep and of one proposal of each split-merge
  move, to compare samplers at equal compute;
- :func:`log_ratio_parts` ``(stats)``: the median of each term of the log
  acceptance ratio of a move's proposals, splits and merges apart;
- :func:`summarize_run` ``(chains, *, warmup_fraction=0.5)``: R-hat, ESS, CPU time
  and acceptances of the chains of one :func:`ibp_lab.inference.chains.run_chains` call;
- :func:`ess_per_second_table` ``(runs, sweeps)``: effective samples per CPU second of
  several samplers' chains, the non-conjugate chapter's table.

Times are the process's CPU time (:func:`time.process_time`), not wall time:
on a shared machine, other programs slow the wall clock but hardly the CPU
time of a single-threaded computation, which is what "equal compute" means.
"""

from __future__ import annotations

import time

import numpy as np

from ibp_lab._checks import check_count, check_data_matrix, check_positive, check_real_array, check_rng
from ibp_lab._hyper import check_feature_matrix, check_hyperparameters
from ibp_lab.inference.gibbs import gibbs_sweep
from ibp_lab.inference.split_merge import random_split_merge, sequential_split_merge

__all__ = ["seconds_per_step", "log_ratio_parts", "summarize_run", "ess_per_second_table"]

# seconds_per_step measures costs, it does not sample: a few thousand steps are plenty.
_MAX_TIMING_ROUNDS = 1000
_MAX_TIMED_STEPS = 100_000


def seconds_per_step(X, Z, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                     sigma_a: float, beta: float = 1.0, n_rounds: int = 5,
                     n_sweeps: int = 10, n_proposals: int = 40) -> dict:
    """Measured CPU time of one Gibbs sweep and of one proposal of each move, from ``Z``.

    Every sweep starts from ``Z`` and each move runs its proposals from ``Z``
    (on real data a proposal is rarely accepted), so the three costs refer to
    the same state. The three are timed in turn, ``n_rounds`` times, and the
    median of the rounds is returned, so that a passing change in the
    machine's load affects all three alike.

    Returns
    -------
    dict
        ``{"gibbs_sweep": s, "random": s, "sequential": s}`` in CPU seconds.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> costs = seconds_per_step(X, np.ones((10, 2)), np.random.default_rng(1), alpha=1.0,
    ...                          sigma_x=0.5, sigma_a=1.0, n_rounds=1, n_sweeps=2,
    ...                          n_proposals=2)
    >>> sorted(costs)
    ['gibbs_sweep', 'random', 'sequential']
    """
    X = check_data_matrix("X", X)
    Z = check_feature_matrix("Z", Z, n_rows=X.shape[0])
    alpha, sigma_x, sigma_a, beta = check_hyperparameters(X, alpha, sigma_x, sigma_a, beta)
    rng = check_rng(rng)
    n_rounds = check_count("n_rounds", n_rounds, minimum=1, maximum=_MAX_TIMING_ROUNDS)
    n_sweeps = check_count("n_sweeps", n_sweeps, minimum=1, maximum=_MAX_TIMED_STEPS)
    n_proposals = check_count("n_proposals", n_proposals, minimum=1, maximum=_MAX_TIMED_STEPS)
    moves = {"random": random_split_merge, "sequential": sequential_split_merge}
    for move in moves.values():  # compile outside the timing
        move(X, Z, alpha, sigma_x, sigma_a, rng, 1, beta=beta)
    rounds = {"gibbs_sweep": [], "random": [], "sequential": []}
    for _ in range(n_rounds):
        start = time.process_time()
        for _ in range(n_sweeps):
            gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng, beta=beta)
        rounds["gibbs_sweep"].append((time.process_time() - start) / n_sweeps)
        for name, move in moves.items():
            start = time.process_time()
            move(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, beta=beta)
            rounds[name].append((time.process_time() - start) / n_proposals)
    return {name: float(np.median(values)) for name, values in rounds.items()}


def log_ratio_parts(stats: dict):
    """Median of each term of the log acceptance ratio, for splits and for merges.

    Parameters
    ----------
    stats : dict
        What :func:`random_split_merge` or :func:`sequential_split_merge` returns.

    Returns
    -------
    pandas.DataFrame
        Rows: log-likelihood change, log prior change, log proposal ratio
        (``log q(reverse) - log q(forward)``) and the log acceptance ratio (their
        sum); columns ``split`` and ``merge`` (NaN if there was none).

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> _, stats = random_split_merge(X, np.ones((6, 2)), 1.0, 0.5, 1.0,
    ...                               np.random.default_rng(1), 40)
    >>> list(log_ratio_parts(stats).columns)
    ['split', 'merge']
    """
    import pandas as pd

    parts = ["delta_log_likelihood", "delta_log_prior", "log_proposal_ratio", "log_ratio"]
    if not isinstance(stats, dict) or any(name not in stats for name in ["kind", *parts]):
        raise TypeError("stats must be the dict returned by random_split_merge or "
                        "sequential_split_merge")
    kinds = np.asarray(stats["kind"])
    if kinds.ndim != 1 or kinds.dtype.kind not in "UO" or not np.isin(kinds, ["split", "merge"]).all():
        raise ValueError("stats['kind'] must be a 1-D array of 'split' and 'merge'")
    values = {}
    for p in parts:
        values[p] = check_real_array(f"stats[{p!r}]", stats[p])
        if values[p].shape != kinds.shape:
            raise ValueError(f"stats[{p!r}] must have one entry per proposal ({kinds.size}), "
                             f"got shape {values[p].shape}")
        if np.isnan(values[p]).any():
            raise ValueError(f"stats[{p!r}] must not contain NaN")
    table = {}
    for kind in ("split", "merge"):
        chosen = kinds == kind
        table[kind] = [float(np.median(values[p][chosen])) if chosen.any()
                       else float("nan") for p in parts]
    return pd.DataFrame(table, index=["log-likelihood change", "log prior change",
                                      "log q(reverse) - log q(forward)",
                                      "log acceptance ratio"])


def summarize_run(chains, *, warmup_fraction: float = 0.5) -> dict:
    """Cost, acceptances and label-free diagnostics of a run of chains.

    R-hat (rank-normalised, split) and bulk ESS of ``K+`` and of the log joint
    come from ArviZ over the draws after the first ``warmup_fraction`` of each
    chain's full trace.

    Parameters
    ----------
    chains : list of ibp_lab.inference.chains.ChainResult
        The chains of one :func:`ibp_lab.inference.chains.run_chains` call (its second
        return value), all of the same length.
    warmup_fraction : float, optional
        Share of each chain's draws left out of the diagnostics, in ``[0, 1)``.

    Returns
    -------
    dict
        ``CPU seconds`` (all chains), ``iterations`` (per chain), ``accepted moves``
        (all chains, warm-up included), ``accepted after warm-up``,
        ``R-hat K+``, ``R-hat log joint``, ``ESS K+``, ``ESS log joint`` and
        ``log joint per chain`` (the mean of each chain after warm-up, as text).
        R-hat and ESS of a trace that never changes are NaN (nothing to diagnose).

    Examples
    --------
    >>> from ibp_lab.inference import chains as ch
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> _, run = ch.run_chains(X, 2, 20, np.random.default_rng(1), Z0=np.ones((6, 1)),
    ...                        alpha=1.0, sigma_x=0.5, sigma_a=1.0,
    ...                        moves=[ch.GibbsSweep(), ch.SequentialSplitMerge(n_proposals=2)])
    >>> summary = summarize_run(run)
    >>> summary["iterations"], bool(summary["R-hat K+"] > 0)
    (20, True)
    """
    az = _arviz()
    chains = _check_chain_list("chains", chains)
    warmup_fraction = check_positive("warmup_fraction", warmup_fraction, allow_zero=True)
    if not warmup_fraction < 1.0:
        raise ValueError(f"warmup_fraction must be in [0, 1), got {warmup_fraction}")
    n_draws = chains[0].trace.sizes["draw"]
    first_kept = int(warmup_fraction * n_draws)
    if n_draws - first_kept < 4:
        # R-hat splits each chain in two halves; fewer draws give NaN, not a diagnosis
        raise ValueError(
            f"need at least 4 draws per chain after warm-up for R-hat and ESS, got "
            f"{n_draws - first_kept} (of {n_draws}, warmup_fraction = {warmup_fraction})"
        )
    values = {name: np.stack([c.trace[name].values[first_kept:] for c in chains]).astype(np.float64)
              for name in ("k_plus", "log_joint")}
    accepted = np.stack([c.sample_stats["accepted_moves"].values for c in chains])
    return {
        "CPU seconds": float(sum(c.seconds[-1] for c in chains)),
        "iterations": int(n_draws),
        "accepted moves": int(accepted.sum()),
        "accepted after warm-up": int(accepted[:, first_kept:].sum()),
        "R-hat K+": float(az.rhat(values["k_plus"])),
        "R-hat log joint": float(az.rhat(values["log_joint"])),
        "ESS K+": float(az.ess(values["k_plus"])),
        "ESS log joint": float(az.ess(values["log_joint"])),
        "log joint per chain": ", ".join(f"{v:.0f}" for v in values["log_joint"].mean(axis=1)),
    }


#: What :func:`ess_per_second_table` reads of each chain and of each sampler's run.
_CHAIN_KEYS = ("ess_log_joint", "ess_k_plus", "seconds", "mean_k_plus")
_RUN_KEYS = ("chains", "rhat_log_joint", "rhat_k_plus", "pooled_ess_log_joint",
             "pooled_ess_k_plus")


def ess_per_second_table(runs, sweeps):
    """Effective samples per CPU second of several samplers: chain by chain, and of all
    chains together.

    Parameters
    ----------
    runs : mapping
        Sampler name -> ``{"chains": [...], "rhat_log_joint", "rhat_k_plus",
        "pooled_ess_log_joint", "pooled_ess_k_plus"}``: each chain a mapping with its bulk
        ESS of the log joint and of K+ (NaN, or None as JSON writes it, when the value never
        moved), its CPU ``seconds`` and ``mean_k_plus``; the pooled values are the
        multi-chain bulk ESS (NaN or None when nothing moved), which R-hat's between-chain
        variance lowers, and an R-hat that is not a number may be None too. An optional
        entry ``"collapsed"`` holds only ``{"seconds_per_sweep": t}``: the from-scratch
        sweep that draws the same chains as ``"accelerated"`` (which must then be present),
        so its ESS per sweep and R-hat are those chains' and only its time differs.
    sweeps : mapping
        Sampler name -> sweeps per chain (the ESS counts the last nine tenths).

    Returns
    -------
    pandas.DataFrame
        One row per sampler: how it was measured (``"run"``, or ``"derived"`` for the
        collapsed row), sweeps per chain, the realised CPU seconds per chain (range), CPU ms
        per sweep (median), the median over chains of the ESS of the log joint per 1,000
        sweeps, the ESS per CPU second of the log joint and of K+ (median over chains, and
        range), the multi-chain ESS per CPU second of both (all chains' ESS over all their
        seconds), the chains whose K+ moved, R-hat of both and the chains' mean K+.

    Examples
    --------
    >>> chain = dict(ess_log_joint=20.0, ess_k_plus=float("nan"), seconds=2.0, mean_k_plus=3.0)
    >>> run = dict(chains=[chain, chain], rhat_log_joint=1.2, rhat_k_plus=1.5,
    ...            pooled_ess_log_joint=8.0, pooled_ess_k_plus=float("nan"))
    >>> table = ess_per_second_table({"accelerated": run,
    ...                               "collapsed": dict(seconds_per_sweep=0.1)},
    ...                              {"accelerated": 100})
    >>> table["ESS/s log joint"].tolist(), table["multi-chain ESS/s log joint"].tolist()
    ([10.0, 2.0], [2.0, 0.4])
    """
    import pandas as pd

    runs, sweeps = _check_comparison(runs, sweeps)
    runs = {name: _with_nan(run) for name, run in runs.items()}
    rows = {name: _comparison_row(run, sweeps[name], 1.0) for name, run in runs.items()
            if name != "collapsed"}
    if "collapsed" in runs:
        fast = runs["accelerated"]
        ms_slow = 1e3 * runs["collapsed"]["seconds_per_sweep"]
        # the same chains, each sweep ms_slow / ms_fast times slower
        slow = np.array([ms_slow * sweeps["accelerated"] / 1e3 / c["seconds"]
                         for c in fast["chains"]])
        rows["collapsed"] = _comparison_row(fast, sweeps["accelerated"], slow)
        rows["collapsed"]["measured"] = "derived"
    return pd.DataFrame.from_dict(rows, orient="index")


def _with_nan(run: dict) -> dict:
    """A record's run with its missing values (JSON null: nothing moved) as NaN."""
    def number(value):
        return float("nan") if value is None else value

    if "chains" not in run:
        return run
    out = {key: number(value) for key, value in run.items() if key != "chains"}
    out["chains"] = [{key: number(value) for key, value in chain.items()}
                     for chain in run["chains"]]
    return out


def _comparison_row(run, n_sweeps: int, slower) -> dict:
    """One sampler's row; ``slower`` (one per chain) stretches the chains' CPU seconds."""
    chains = run["chains"]
    seconds = np.array([c["seconds"] for c in chains], float) * slower
    ess_lj = np.array([c["ess_log_joint"] for c in chains], float)
    per_lj = ess_lj / seconds
    per_k = np.nan_to_num(np.array([c["ess_k_plus"] for c in chains], float)) / seconds
    moved = sum(bool(np.isfinite(c["ess_k_plus"])) for c in chains)
    means = [c["mean_k_plus"] for c in chains]
    return {"measured": "run", "sweeps per chain": int(n_sweeps),
            "CPU s per chain": f"{seconds.min():.3g}-{seconds.max():.3g}",
            "ms per sweep": float(np.median(1e3 * seconds / n_sweeps)),
            "ESS per 1000 sweeps, log joint": float(np.median(ess_lj) / (0.9 * n_sweeps) * 1e3),
            "ESS/s log joint": float(np.median(per_lj)),
            "range, log joint": f"{per_lj.min():.2g}-{per_lj.max():.2g}",
            "ESS/s K+": float(np.median(per_k)),
            "range, K+": f"{per_k.min():.2g}-{per_k.max():.2g}",
            "multi-chain ESS/s log joint": float(np.nan_to_num(run["pooled_ess_log_joint"])
                                                 / seconds.sum()),
            "multi-chain ESS/s K+": float(np.nan_to_num(run["pooled_ess_k_plus"])
                                          / seconds.sum()),
            "chains with K+ moving": f"{moved} of {len(chains)}",
            "R-hat log joint": float(run["rhat_log_joint"]),
            "R-hat K+": float(run["rhat_k_plus"]),
            "mean K+ by chain": f"{min(means):.1f}-{max(means):.1f}"}


def _check_ess(where: str, value) -> None:
    """A positive finite ESS, or NaN or None (the value never moved)."""
    if value is None:
        return
    if not (isinstance(value, (int, float)) and not isinstance(value, bool)
            and (np.isnan(value) or 0 < value < np.inf)):
        raise ValueError(f"{where} must be a positive number or NaN, got {value!r}")


def _check_comparison(runs, sweeps) -> tuple[dict, dict]:
    from collections.abc import Mapping

    for name, value in (("runs", runs), ("sweeps", sweeps)):
        if not isinstance(value, Mapping) or not value:
            raise TypeError(f"{name} must be a non-empty dict keyed by sampler name, got "
                            f"{type(value).__name__}")
    runs = dict(runs)
    if "collapsed" in runs:
        if "accelerated" not in runs:
            raise ValueError("runs has 'collapsed' but no 'accelerated': the collapsed row "
                             "borrows the accelerated chains' ESS per sweep")
        collapsed = runs["collapsed"]
        if not isinstance(collapsed, Mapping) or "seconds_per_sweep" not in collapsed:
            raise ValueError("runs['collapsed'] must be a dict with 'seconds_per_sweep'")
        check_positive("runs['collapsed']['seconds_per_sweep']", collapsed["seconds_per_sweep"])
    for name, run in runs.items():
        if name == "collapsed":
            continue
        if not isinstance(run, Mapping) or not set(_RUN_KEYS) <= set(run):
            raise ValueError(f"runs[{name!r}] must be a dict with {', '.join(_RUN_KEYS)}")
        if not isinstance(run["chains"], (list, tuple)) or not run["chains"]:
            raise ValueError(f"runs[{name!r}]['chains'] must be a non-empty list")
        for key in ("pooled_ess_log_joint", "pooled_ess_k_plus", "rhat_log_joint",
                    "rhat_k_plus"):  # R-hat, like an ESS, is positive, or missing
            _check_ess(f"runs[{name!r}][{key!r}]", run[key])
        for c, chain in enumerate(run["chains"]):
            if not isinstance(chain, Mapping) or not set(_CHAIN_KEYS) <= set(chain):
                raise ValueError(f"runs[{name!r}]['chains'][{c}] must be a dict with "
                                 f"{', '.join(_CHAIN_KEYS)}")
            check_positive(f"runs[{name!r}]['chains'][{c}]['seconds']", chain["seconds"])
            for key in ("ess_log_joint", "ess_k_plus"):
                _check_ess(f"runs[{name!r}]['chains'][{c}][{key!r}]", chain[key])
        if name not in sweeps:
            raise ValueError(f"sweeps has no entry for {name!r}")
        check_count(f"sweeps[{name!r}]", sweeps[name], minimum=1)
    return runs, dict(sweeps)


def _check_chain_list(name: str, chains) -> list:
    """A non-empty list of :class:`ibp_lab.inference.chains.ChainResult` of equal length, as a list."""
    from ibp_lab.inference.chains import ChainResult

    if isinstance(chains, ChainResult):
        raise TypeError(f"{name} must be a list of ChainResult; wrap one chain in a list: [chain]")
    if not isinstance(chains, (list, tuple)) or len(chains) == 0:
        raise TypeError(f"{name} must be a non-empty list of ibp_lab.inference.chains.ChainResult "
                        f"(from run_chains), got {type(chains).__name__}")
    for c, chain in enumerate(chains):
        if not isinstance(chain, ChainResult):
            raise TypeError(f"{name}[{c}] must be a ChainResult, got {type(chain).__name__}")
        if "seconds" not in chain.sample_stats:
            raise ValueError(f"{name}[{c}] has no per-draw sample_stats (seconds); "
                             f"run it with ibp_lab.inference.chains.run_chains")
    lengths = {chain.trace.sizes["draw"] for chain in chains}
    if len(lengths) != 1:
        raise ValueError(f"{name} must have the same number of draws per chain, got {sorted(lengths)}")
    return list(chains)


def _arviz():
    import warnings

    with warnings.catch_warnings():  # ArviZ 0.23 announces its 1.0 API at import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az
