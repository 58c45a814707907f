"""Measuring what one observation costs as a stream grows: time and memory per observation.

Used by ``benchmarks/streaming.py`` and by the book's chapter 12. Timings are wall-clock and
depend on the machine and its load; what the chapter reads from them is the *shape* of the
curve (how the cost grows with the number of observations), not the absolute numbers.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import NamedTuple

import numpy as np

from ibp_lab._checks import check_count, check_data_matrix, check_real_array

__all__ = ["StreamCost", "stream_cost", "log_fit"]


class StreamCost(NamedTuple):
    """Cost of a stream at checkpoints ``n`` (all arrays have one entry per checkpoint)."""

    n: np.ndarray  #: observations processed
    seconds_per_obs: np.ndarray  #: time per observation of the fastest timed block before ``n``
    state_bytes: np.ndarray  #: bytes of running state (what the stream needs to continue)
    peak_bytes: np.ndarray  #: peak memory allocated while processing one observation
    n_slots: np.ndarray  #: feature slots kept
    rate: np.ndarray  #: Poisson rate of the number of features


def stream_cost(
    model, X, checkpoints, *, n_blocks: int = 10, block_size: int = 20, n_traced: int = 20
) -> StreamCost:
    """Feed the rows of ``X`` to ``model.partial_fit`` and measure the cost at checkpoints.

    Each window of observations before a checkpoint ends with ``n_blocks`` timed blocks of
    ``block_size`` observations and then ``n_traced`` observations processed one by one
    under :mod:`tracemalloc` (not timed) to record the largest memory allocated while
    processing one observation; the rest of the window runs untimed. The reported time per
    observation is that of the fastest block: the one least disturbed by other programs
    (the convention of :mod:`timeit`), measured on blocks of the same size at every
    checkpoint so that the checkpoints compare like with like.

    Parameters
    ----------
    model : RecursiveIBP
        A fresh (or partially fitted) estimator; it is updated in place.
    X : array_like
        ``(n, D)`` observations.
    checkpoints : sequence of int
        Increasing numbers of observations, each <= ``len(X)``, at least
        ``n_blocks * block_size + n_traced`` apart (the first at least that).
    n_blocks, block_size, n_traced : int, optional
        Timed blocks per checkpoint, observations per block, observations traced (each >= 1).

    Returns
    -------
    StreamCost

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> from ibp_lab.inference.streaming import RecursiveIBP
    >>> X = simulate(400, np.random.default_rng(0), alpha=1.0, sigma_x=0.1, sigma_a=1.0, d=5).X
    >>> cost = stream_cost(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.2, sigma_a=1.0), X, [100,
    ...                                                                                     300], n_blocks=3,
    ...                    block_size=10, n_traced=5)
    >>> cost.n.tolist(), bool(np.all(cost.seconds_per_obs > 0))
    ([100, 300], True)
    """
    from ibp_lab.inference.streaming.model import RecursiveIBP

    if not isinstance(model, RecursiveIBP):
        raise TypeError(f"model must be a RecursiveIBP, got {type(model).__name__}")
    X = check_data_matrix("X", X)
    n_blocks = check_count("n_blocks", n_blocks, minimum=1)
    block_size = check_count("block_size", block_size, minimum=1)
    n_traced = check_count("n_traced", n_traced, minimum=1)
    checkpoints = [
        check_count("checkpoints", c, minimum=1, maximum=X.shape[0]) for c in checkpoints
    ]
    if any(b <= a for a, b in zip(checkpoints, checkpoints[1:])):
        raise ValueError("checkpoints must be strictly increasing")
    measured = n_blocks * block_size + n_traced
    if any(b - a < measured for a, b in zip([0] + checkpoints, checkpoints)):
        raise ValueError(
            f"checkpoints must be at least n_blocks * block_size + n_traced = {measured} apart"
        )
    rows = {key: [] for key in StreamCost._fields}
    done = 0
    for stop in checkpoints:
        timed_from = stop - measured
        if timed_from > done:
            model.partial_fit(X[done:timed_from])
        per_obs = []
        for a in range(timed_from, timed_from + n_blocks * block_size, block_size):
            start = time.perf_counter()
            model.partial_fit(X[a : a + block_size])
            per_obs.append((time.perf_counter() - start) / block_size)
        peak = 0
        for row in X[stop - n_traced : stop]:
            tracemalloc.start()
            model.partial_fit(row)
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        done = stop
        rows["n"].append(stop)
        rows["seconds_per_obs"].append(min(per_obs))
        rows["state_bytes"].append(model.state_nbytes)
        rows["peak_bytes"].append(peak)
        rows["n_slots"].append(len(model.feature_usage_))
        rows["rate"].append(model.n_features_expected_)
    return StreamCost(**{key: np.asarray(value) for key, value in rows.items()})


def log_fit(n, values) -> tuple[float, float]:
    """Least-squares fit ``values = intercept + slope * ln(n)``; returns ``(intercept, slope)``.

    Examples
    --------
    >>> intercept, slope = log_fit([1, 10, 100], [1.0, 1.0 + np.log(10), 1.0 + 2 * np.log(10)])
    >>> round(intercept, 10), round(slope, 10)
    (1.0, 1.0)
    """
    n = check_real_array("n", n)
    values = check_real_array("values", values)
    if n.ndim != 1 or n.shape != values.shape or n.size < 2:
        raise ValueError(f"n and values must be 1-D of the same length >= 2, got shapes "
                         f"{n.shape} and {values.shape}")
    if not (np.all(np.isfinite(n)) and np.all(n > 0) and np.all(np.isfinite(values))):
        raise ValueError("n must be finite and > 0, values finite")
    if np.ptp(np.log(n)) == 0:
        raise ValueError("n must take at least two different values")
    slope, intercept = np.polyfit(np.log(n), values, 1)
    return float(intercept), float(slope)
