"""Comparing inference methods over repeated runs: paired differences, their spread, and
the part of it that is Monte Carlo error.

A comparison a reader can trust runs every method on the same data sets (or seeds, or
starts), at the same hyperparameters, and reports per method: how many runs gave a score
at all, the mean score and its spread over runs, the realised CPU time, and the
difference from a reference method *paired by run* (the same data set scored by both),
with its standard error over runs. When each score is itself a Monte Carlo estimate,
scoring it twice with independent draws (``a`` and ``b``) measures its Monte Carlo error:
the mean of the two has variance ``E[(a - b)^2] / 4``. That variance, summed over the two
methods of a pair and averaged over runs, is the Monte Carlo share of the difference's
standard error; the rest is how much the difference really varies from run to run.

- :func:`compare_methods`: the table, one row (a dict) per method.
- :func:`claim_verdict`: whether a claimed direction holds in every setting.
- :func:`scores_from_runs`: the two dicts :func:`compare_methods` takes, from a list of
  runs as the experiment records store them.
- :func:`comparison_table`: :func:`compare_methods`' rows as the table a chapter prints.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ibp_lab._checks import Joint, Positive, RealArray, check_real_array, validated

__all__ = ["compare_methods", "claim_verdict", "scores_from_runs", "comparison_table"]

_MAX_SCORE = 1e100


def _pair_arrays(name: str, runs) -> tuple[np.ndarray, np.ndarray]:
    """``(R,)`` replicate scores ``a`` and ``b`` (NaN where a run gave no score)."""
    if not isinstance(runs, Sequence) or isinstance(runs, (str, bytes)) or not runs:
        raise TypeError(f"scores[{name!r}] must be a non-empty list of (a, b) pairs")
    a, b = [], []
    for i, pair in enumerate(runs):
        if pair is None:
            a.append(np.nan), b.append(np.nan)
            continue
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"scores[{name!r}][{i}] must be a pair (a, b) or None, "
                             f"got {pair!r}")
        if not all(v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool))
                   for v in pair):
            raise TypeError(f"scores[{name!r}][{i}] must hold two real numbers (or None), "
                            f"got {pair!r}")
        pair_array = np.array([np.nan if v is None else float(v) for v in pair])
        # beyond 1e100 the squared differences of the error estimates would overflow
        if np.isnan(pair_array).sum() == 1 or np.any(np.abs(pair_array) > _MAX_SCORE):
            raise ValueError(f"scores[{name!r}][{i}] must be two finite numbers of size at "
                             f"most {_MAX_SCORE:g}, or (None, None), got {pair!r}")
        a.append(pair_array[0]), b.append(pair_array[1])
    return np.array(a), np.array(b)


def _check(scores, seconds, reference):
    if not isinstance(scores, Mapping) or not scores:
        raise TypeError("scores must be a non-empty dict: method -> list of (a, b) pairs")
    pairs = {str(m): _pair_arrays(str(m), runs) for m, runs in scores.items()}
    counts = {len(a) for a, _ in pairs.values()}
    if len(counts) != 1:
        raise ValueError(f"every method needs the same runs (paired by run), got run counts "
                         f"{sorted(counts)}")
    n_runs = counts.pop()
    if reference not in pairs:
        raise ValueError(f"reference must be one of the methods {sorted(pairs)}, got "
                         f"{reference!r}")
    if not isinstance(seconds, Mapping) or set(map(str, seconds)) != set(pairs):
        raise ValueError("seconds must be a dict with the same methods as scores")
    times = {}
    for m, values in seconds.items():
        t = check_real_array(f"seconds[{m!r}]", values)
        if t.shape != (n_runs,):
            raise ValueError(f"seconds[{m!r}] must hold one time per run")
        if not np.all(np.isfinite(t)) or np.any(t < 0):
            raise ValueError(f"seconds[{m!r}] must be finite and >= 0")
        times[str(m)] = t
    return pairs, times


def compare_methods(scores: Mapping, seconds: Mapping, *, reference: str) -> list[dict]:
    """One row per method: runs scored, mean score and spread, CPU, paired difference.

    Parameters
    ----------
    scores : dict
        ``method -> [(a, b), ...]``, one pair per run: the run's score computed twice with
        independent Monte Carlo draws (equal if the score is exact), or ``None`` /
        ``(None, None)`` if the run gave no score. Higher is better. Every method has the
        same runs, in the same order.
    seconds : dict
        ``method -> [t, ...]``: realised CPU seconds of each run.
    reference : str
        The method the differences are taken from.

    Returns
    -------
    list of dict
        Per method, in the order given: ``method``, ``runs``, ``scored`` (runs with a
        score), ``mean`` and ``sd`` of the score over scored runs, ``cpu_median`` and
        ``cpu_range`` (seconds), ``difference`` (mean over runs scored by both of the
        method's score minus the reference's), ``difference_sd``, ``difference_se``
        (``sd / sqrt(n)``), ``mc_se`` (the Monte Carlo part of that standard error; 0 for
        the reference, whose difference from itself is 0), and
        ``wins`` (runs where the method scored above the reference).

    Examples
    --------
    >>> rows = compare_methods({"A": [(1.0, 1.0), (2.0, 2.0)], "B": [(1.5, 1.3), (2.4, 2.6)]},
    ...                        {"A": [0.1, 0.2], "B": [1.0, 1.1]}, reference="A")
    >>> round(rows[1]["difference"], 3), rows[1]["wins"], round(rows[1]["mc_se"], 3)
    (0.45, 2, 0.071)
    """
    pairs, times = _check(scores, seconds, reference)
    ref = np.mean(pairs[reference], axis=0)
    ref_mc = (pairs[reference][0] - pairs[reference][1]) ** 2 / 4
    rows = []
    for method, (a, b) in pairs.items():
        score, mc = (a + b) / 2, (a - b) ** 2 / 4
        scored = ~np.isnan(score)
        both = scored & ~np.isnan(ref)
        diff = score[both] - ref[both]
        n = int(both.sum())
        rows.append(dict(
            method=method, runs=len(score), scored=int(scored.sum()),
            mean=float(score[scored].mean()) if scored.any() else None,
            sd=float(score[scored].std(ddof=1)) if scored.sum() > 1 else None,
            cpu_median=float(np.median(times[method])),
            cpu_range=(float(times[method].min()), float(times[method].max())),
            difference=float(diff.mean()) if n else None,
            difference_sd=float(diff.std(ddof=1)) if n > 1 else None,
            difference_se=float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else None,
            # the reference's difference from itself is 0 exactly: no Monte Carlo error
            mc_se=(0.0 if method == reference else
                   float(np.sqrt((mc[both] + ref_mc[both]).mean() / n)) if n else None),
            wins=int((diff > 0).sum())))
    return rows


def _check_paired_errors(d: np.ndarray, se: np.ndarray) -> None:
    if d.ndim != 1 or d.size == 0 or se.shape != d.shape:
        raise ValueError(f"differences and standard_errors must be two 1-D arrays of the same "
                         f"length >= 1, got shapes {d.shape} and {se.shape}")
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(se)) and np.all(se >= 0)):
        raise ValueError("differences must be finite and standard_errors finite and >= 0")


@validated(differences=RealArray(), standard_errors=RealArray(),
           paired=Joint(_check_paired_errors, "differences", "standard_errors"), z=Positive())
def claim_verdict(differences, standard_errors, *, z: float = 2.0) -> str:
    """A claim that a difference is positive in every setting, judged at ``z`` standard errors.

    Parameters
    ----------
    differences, standard_errors : array_like
        ``(S,)``: per setting (for instance each alpha), the mean paired difference in the
        claimed direction (positive when the claim is right) and its standard error.
    z : float, optional
        How many standard errors make a difference clear (default 2: about a 5% two-sided
        test per setting for many runs, about 8% for ten, by Student's t).

    Returns
    -------
    str
        ``"holds"`` if every difference is above ``z`` standard errors; ``"fails"`` if
        every one is below ``-z`` standard errors; ``"reversed in some settings"`` if some
        are clearly negative and others not; otherwise ``"holds in some settings"`` (some
        clearly positive, none clearly negative) or ``"not resolved"``.

    Examples
    --------
    >>> claim_verdict([0.5, 0.4], [0.1, 0.1])
    'holds'
    >>> claim_verdict([0.5, -0.4], [0.1, 0.1])
    'reversed in some settings'
    >>> claim_verdict([0.05, 0.02], [0.1, 0.1])
    'not resolved'
    """
    d, se = differences, standard_errors
    clear_up, clear_down = d > z * se, d < -z * se
    if clear_up.all():
        return "holds"
    if clear_down.all():
        return "fails"
    if clear_down.any():
        return "reversed in some settings"
    return "holds in some settings" if clear_up.any() else "not resolved"


def scores_from_runs(runs, methods) -> tuple[dict, dict]:
    """``scores`` and ``seconds`` for :func:`compare_methods`, from stored runs.

    Parameters
    ----------
    runs : list of dict
        One per run (data set, seed or start), each with a ``"methods"`` dict:
        ``method -> {"score_a": float or None, "score_b": float or None, "seconds": float}``.
    methods : list of str
        The methods to take, in order.

    Returns
    -------
    scores, seconds : dict
        ``method -> [(a, b), ...]`` and ``method -> [t, ...]``, one entry per run.

    Examples
    --------
    >>> runs = [{"methods": {"m": {"score_a": 1.0, "score_b": 1.2, "seconds": 0.3}}}]
    >>> scores_from_runs(runs, ["m"])
    ({'m': [(1.0, 1.2)]}, {'m': [0.3]})
    """
    if not isinstance(runs, Sequence) or isinstance(runs, (str, bytes)) or not runs:
        raise TypeError("runs must be a non-empty list of dicts, each with a 'methods' dict")
    if isinstance(methods, (str, bytes)) or not isinstance(methods, Sequence) or not methods:
        raise TypeError("methods must be a non-empty list of method names")
    scores, seconds = {m: [] for m in methods}, {m: [] for m in methods}
    for i, run in enumerate(runs):
        table = run.get("methods") if isinstance(run, Mapping) else None
        if not isinstance(table, Mapping):
            raise ValueError(f"runs[{i}] must be a dict with a 'methods' dict")
        for m in methods:
            entry = table.get(m)
            if not isinstance(entry, Mapping) or not {"score_a", "score_b", "seconds"} <= set(entry):
                raise ValueError(f"runs[{i}]['methods'] must give {m!r} a dict with score_a, "
                                 "score_b and seconds")
            scores[m].append((entry["score_a"], entry["score_b"]))
            seconds[m].append(entry["seconds"])
    return scores, seconds


#: compare_methods' keys -> the table's column names ({ref}: the reference method).
_TABLE_COLUMNS = {"scored": "runs scored", "mean": "mean", "sd": "sd",
                  "difference": "vs {ref}", "difference_se": "se", "mc_se": "MC se",
                  "wins": "wins", "cpu_median": "CPU s", "cpu_range": "CPU s range"}


def comparison_table(rows, *, reference: str):
    """The rows of :func:`compare_methods` as a table, one line per method.

    Parameters
    ----------
    rows : list of dict
        What :func:`compare_methods` returned.
    reference : str
        The reference method those rows were computed against (it names the column of
        differences).

    Returns
    -------
    pandas.DataFrame
        Indexed by method, with the columns ``runs scored``, ``mean``, ``sd``,
        ``vs <reference>`` (mean paired difference), ``se``, ``MC se`` (its Monte Carlo
        part), ``wins``, ``CPU s`` (median) and ``CPU s range``.

    Examples
    --------
    >>> rows = compare_methods({"A": [(1.0, 1.0), (2.0, 2.0)], "B": [(1.5, 1.3), (2.4, 2.6)]},
    ...                        {"A": [0.1, 0.2], "B": [1.0, 1.1]}, reference="A")
    >>> list(comparison_table(rows, reference="A").columns[3:5])
    ['vs A', 'se']
    """
    import pandas as pd

    if (not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)) or not rows
            or not all(isinstance(r, Mapping) and {"method", *_TABLE_COLUMNS} <= set(r)
                       for r in rows)):
        raise TypeError("rows must be the non-empty list of dicts that compare_methods returns")
    methods = [r["method"] for r in rows]
    if not isinstance(reference, str) or reference not in methods:
        raise ValueError(f"reference must be one of the methods {methods}, got {reference!r}")
    names = {k: v.format(ref=reference) for k, v in _TABLE_COLUMNS.items()}
    frame = pd.DataFrame([{names[k]: r[k] for k in names} for r in rows],
                         index=pd.Index(methods, name="method"))
    frame["CPU s range"] = [f"{lo:.3g}-{hi:.3g}" for lo, hi in frame["CPU s range"]]
    return frame
