"""Does a learner recover the four features of Griffiths and Ghahramani's images?

One study, used by the book's chapter "Streaming inference" (``book/12_streaming.md``):
for each number of images ``N`` and each data set, simulate the four-feature images
(:func:`ibp_lab.datasets.simulate_four_feature_data`, data set ``s`` drawn from
``numpy.random.default_rng(s)``), run each learner once and record what it found:

- ``"single"``: one pass of :class:`~ibp_lab.inference.streaming.RecursiveIBP` with births from one
  observation's residual (``births="single"``);
- ``"buffer"``: the same pass with births from a buffer of admitted residuals
  (``births="buffer"``);
- ``"gibbs"``: collapsed Gibbs (:func:`ibp_lab.inference.gibbs.gibbs_sweep`) for ``n_sweeps`` sweeps
  from no features, its features the posterior means given the last ``Z``
  (:func:`ibp_lab.models.linear_gaussian.feature_posterior`).

A learner *recovers* the features (:func:`is_recovered`) when every true feature has a
partner (Hungarian matching on correlations, :func:`ibp_lab.evaluation.summaries.match_features`)
correlated above 0.9 and its number of features is within one of 4: the expected number
``n_features_expected_`` for the streams, ``K+`` for Gibbs.

Data sets are named by integer seeds, not drawn from one generator, so that any row of the
table can be rerun alone. The streams use ``rng=0`` (their draws only break ties in the
predictive methods); the Gibbs chain of data set ``s`` uses ``default_rng([s, 1])``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from ibp_lab._checks import (MAX_ENTRIES, Checked, Count, Positive, check_real_array,
                             validated)
from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.gibbs import MAX_SWEEPS, gibbs_sweep
from ibp_lab.models.linear_gaussian import feature_posterior
from ibp_lab.inference.streaming.model import RecursiveIBP
from ibp_lab.evaluation.summaries import match_features

__all__ = ["METHODS", "is_recovered", "recovery_study"]

#: The learners :func:`recovery_study` can run.
METHODS = ("single", "buffer", "gibbs")
#: A true feature counts as found when its partner correlates above this.
RECOVERY_CORRELATION = 0.9
#: The number of true features.
N_TRUE = 4


def _check_correlations(name: str, correlations) -> np.ndarray:
    correlations = check_real_array(name, correlations)
    if correlations.shape != (N_TRUE,) or not np.all(np.abs(correlations) <= 1.0):
        raise ValueError(f"{name} must hold {N_TRUE} correlations in [-1, 1], one per "
                         f"true feature, got {correlations!r}")
    return correlations


@validated(correlations=Checked(_check_correlations), n_features=Positive(allow_zero=True))
def is_recovered(correlations, n_features: float) -> bool:
    """All four features found (correlation > 0.9) and ``n_features`` within one of 4.

    Examples
    --------
    >>> is_recovered([0.99, 0.95, 0.97, 0.93], 4.6)
    True
    >>> is_recovered([0.99, 0.95, 0.97, 0.90], 4.0)  # 0.90 is not above 0.9
    False
    >>> is_recovered([0.99, 0.95, 0.97, 0.93], 5.2)  # too many features
    False
    """
    return bool(np.all(correlations > RECOVERY_CORRELATION)
                and abs(n_features - N_TRUE) <= 1)


def _stream(births):
    def run(X, seed, settings):
        model = RecursiveIBP(alpha=settings["alpha"], beta=1.0, sigma_x=settings["sigma_x"],
                             sigma_a=settings["sigma_a"], births=births,
                             buffer_size=settings["buffer_size"], rng=0).fit(X)
        return model.features_, float(model.n_features_expected_)
    return run


def _gibbs(X, seed, settings):
    rng = np.random.default_rng([seed, 1])
    Z = np.zeros((X.shape[0], 0), dtype=np.int8)
    for _ in range(settings["n_sweeps"]):
        Z = gibbs_sweep(X, Z, settings["alpha"], settings["sigma_x"],
                        settings["sigma_a"], rng)
    means, _ = feature_posterior(X, Z, settings["sigma_x"], settings["sigma_a"])
    return np.asarray(means), float(Z.shape[1])


_RUNNERS = {"single": _stream("single"), "buffer": _stream("buffer"), "gibbs": _gibbs}


def _distinct(element) -> Checked:
    """A non-empty sequence without repeats, each value as the constraint ``element`` checks it."""
    def check_list(name: str, values) -> list:
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise TypeError(f"{name} must be a sequence, got {type(values).__name__}")
        values = [element.check(name, value) for value in values]
        if not values:
            raise ValueError(f"{name} must not be empty")
        if len(set(values)) < len(values):
            raise ValueError(f"{name} must not repeat a value, got {values}")
        return values

    return Checked(check_list)


def _check_method(name: str, method) -> str:
    if method not in METHODS:
        raise ValueError(f"{name} must be among {METHODS}, got {method!r}")
    return method


# each data set is n x 36 pixels (the datasets' bound on an array's entries)
@validated(n_values=_distinct(Count(minimum=1, maximum=MAX_ENTRIES // 36)),
           seeds=_distinct(Count(maximum=None)), methods=_distinct(Checked(_check_method)),
           alpha=Positive(), sigma_x=Positive(), sigma_a=Positive(),
           n_sweeps=Count(minimum=1, maximum=MAX_SWEEPS), buffer_size=Count(minimum=2),
           p_on=Positive(upper=1.0))
def recovery_study(n_values, seeds, *, methods=METHODS, alpha: float = 1.0,
                   sigma_x: float = 0.5, sigma_a: float = 1.0, p_on: float = 0.5,
                   n_sweeps: int = 200, buffer_size: int = 100):
    """Run each method on each data set of each size; one row per run.

    Parameters
    ----------
    n_values : sequence of int
        Numbers of images ``N`` (each >= 1, no repeats).
    seeds : sequence of int
        Data sets: data set ``s`` is drawn with ``numpy.random.default_rng(s)`` (each >= 0,
        no repeats).
    methods : sequence of str, optional
        Among :data:`METHODS` (module docstring), no repeats.
    alpha, sigma_a : float, optional
        The models' IBP mass and feature scale (the IBP's ``beta`` is 1).
    sigma_x : float, optional
        The images' noise and the models' ``sigma_x`` (the canonical setting: 0.5).
    p_on : float, optional
        Probability that a feature is present in an image, in (0, 1].
    n_sweeps : int, optional
        Gibbs sweeps from no features (>= 1).
    buffer_size : int, optional
        Rows of the birth buffer of ``"buffer"`` (>= 2).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``n``, ``seed``, ``n_features`` (expected number for the
        streams, ``K+`` for Gibbs), ``r_plus``, ``r_square``, ``r_triangle``, ``r_t``
        (each true feature's correlation with its partner, 0 without one),
        ``recovered`` (:func:`is_recovered`) and ``seconds`` (wall-clock time of the fit).

    Examples
    --------
    >>> table = recovery_study([20], [0], methods=["single", "gibbs"], n_sweeps=5)
    >>> table.shape, table["method"].tolist()
    ((2, 10), ['single', 'gibbs'])
    """
    import pandas as pd

    settings = dict(alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a, n_sweeps=n_sweeps,
                    buffer_size=buffer_size)
    rows = []
    for n in n_values:
        for seed in seeds:
            X, _, A = simulate_four_feature_data(np.random.default_rng(seed), n=n,
                                                 sigma_x=settings["sigma_x"], p_on=p_on)
            for method in methods:
                rows.append(_one_run(method, X, A, seed, settings))
    return pd.DataFrame(rows, columns=["method", "n", "seed", "n_features", "r_plus",
                                       "r_square", "r_triangle", "r_t", "recovered",
                                       "seconds"])


def _one_run(method, X, A, seed, settings) -> tuple:
    start = time.perf_counter()
    features, n_features = _RUNNERS[method](X, seed, settings)
    seconds = time.perf_counter() - start
    correlations = match_features(A, features).ref_correlation()
    return (method, X.shape[0], seed, n_features, *map(float, correlations),
            is_recovered(correlations, n_features), seconds)
