"""The computations behind the book's explorers, apart from the figures that draw them.

An explorer shows one figure per setting of a few parameters (see :mod:`ibp_lab.teaching.widgets`).
The figure functions of :mod:`ibp_lab.teaching.plotting` only draw; what they draw is computed
here, by pure functions of the setting that return small frozen result objects:

- :func:`buffet`: prior draws of the buffet at ``(alpha, beta)`` (chapter 1),
  drawn by :func:`ibp_lab.teaching.plotting.buffet_explorer_figure`;
- :func:`recursion_step`: one step of the Recursive IBP (chapter 4), drawn by
  :func:`ibp_lab.teaching.plotting.recursive.recursion_step_figure`;
- :func:`marginals_table`: the table of Recursive IBP marginals (chapter 4), drawn
  by :func:`ibp_lab.teaching.plotting.recursive.marginals_figure`;
- :func:`sigma_alpha_chain`: a Gibbs chain on the digits at fixed ``sigma_x`` and
  ``alpha`` (chapter 5), drawn by :func:`ibp_lab.teaching.plotting.gibbs.sigma_alpha_explorer_figure`.

A frame that costs about a second (the chapter 5 chain) has a quick stand-in for the
live explorer: while :data:`QUICK_FRAMES` holds a list, :func:`sigma_alpha_chain`
may answer with a short chain warm-started from the nearest setting already run, and
says so in that list; the live explorer shows it at once and replaces it by the exact
frame when that is drawn (:mod:`ibp_lab.teaching.widgets`).

Hyperparameters are keyword-only (the package's convention for everything that is
not one of the model's building blocks). The random explorers take an integer
``seed`` rather than a generator: a frame must be a pure function of its setting,
so that the precomputed (static) explorer and the live one show the same picture,
and so that a setting can be memoised. Arrays in the results are read-only.

Examples
--------
>>> from ibp_lab.teaching import explorers
>>> draws = explorers.buffet(alpha=2.0, beta=1.0, n=10, n_draws=20)
>>> draws.k_plus.shape, draws.dishes_per_customer.shape
((20,), (20, 10))
"""

from __future__ import annotations

import math
import threading
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from ibp_lab._checks import check_count, check_positive, check_size
from ibp_lab.models.prior import (
    expected_num_features,
    new_dish_rate,
    sample_ibp,
    simulate_feature_counts,
)
from ibp_lab.models.recursive import columns_needed, marginals, new_dish_probabilities

__all__ = [
    "BuffetDraws",
    "RecursionStep",
    "MarginalsTable",
    "SigmaAlphaRun",
    "buffet",
    "recursion_step",
    "marginals_table",
    "sigma_alpha_chain",
    "DiscountDraws",
    "discount_buffet",
    "MAX_CUSTOMERS",
    "QUICK_FRAMES",
    "WARM_SWEEPS",
]

#: Most customers (``n * n_draws``) the buffet explorer seats for one frame.
MAX_CUSTOMERS = 10**6

#: The live explorer's leave to answer a setting quickly, approximately. ``None`` (the
#: default, the book build, every direct call): each frame is the pure function of its
#: setting. A list (set by :mod:`ibp_lab.teaching.widgets` while it draws the reader's move
#: to a setting it has not drawn ahead): :func:`sigma_alpha_chain` may answer with a chain
#: of :data:`WARM_SWEEPS` sweeps started from the last draw of the nearest setting already
#: run, and appends a sentence saying so; the list stays empty when the frame is exact.
QUICK_FRAMES: ContextVar = ContextVar("ibp_lab_quick_frames", default=None)

#: Sweeps of a warm-started quick frame of :func:`sigma_alpha_chain`.
WARM_SWEEPS = 15


def _frozen(*arrays: np.ndarray) -> None:
    """Make result arrays read-only: memoised results are shared between callers."""
    for array in arrays:
        array.setflags(write=False)


# --------------------------------------------------------------------------- chapter 1


@dataclass(frozen=True)
class BuffetDraws:
    """Draws of the buffet at one setting (the output of :func:`buffet`).

    Attributes
    ----------
    alpha, beta : float
        The setting.
    n, n_draws, seed : int
        Customers per buffet, buffets simulated, seed of the draws.
    Z : numpy.ndarray
        ``(n, K+)`` int8, the first draw, in order of creation.
    k_plus : numpy.ndarray
        ``(n_draws,)`` number of dishes of each further draw.
    dishes_per_customer : numpy.ndarray
        ``(n_draws, n)`` number of dishes each customer took, in those draws.
    expected_k_plus : float
        ``E[K+]`` under the prior, :func:`ibp_lab.models.prior.expected_num_features`.
    """

    alpha: float
    beta: float
    n: int
    n_draws: int
    seed: int
    Z: np.ndarray
    k_plus: np.ndarray
    dishes_per_customer: np.ndarray
    expected_k_plus: float


def buffet(*, alpha: float, beta: float, n: int = 50, n_draws: int = 300, seed: int = 0) -> BuffetDraws:
    """Simulate the buffet at ``(alpha, beta)``: one matrix, then ``n_draws`` counts.

    The draws use ``np.random.default_rng(seed)``: first one ``Z`` by
    :func:`ibp_lab.models.prior.sample_ibp`, then the counts by
    :func:`ibp_lab.models.prior.simulate_feature_counts`, in that order.

    Parameters
    ----------
    alpha, beta : float
        IBP mass and concentration, > 0.
    n : int, optional
        Customers per buffet, >= 1.
    n_draws : int, optional
        Buffets simulated for the counts, >= 1; ``n * n_draws`` may be at most
        :data:`MAX_CUSTOMERS`, so that one frame of the explorer stays quick.
    seed : int, optional
        Seed of the draws, >= 0.

    Returns
    -------
    BuffetDraws

    Examples
    --------
    >>> draws = buffet(alpha=2.0, beta=1.0, n=10, n_draws=20, seed=0)
    >>> draws.Z.shape[0], round(draws.expected_k_plus, 3)
    (10, 5.858)
    """
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    n = check_count("n", n, minimum=1)
    n_draws = check_count("n_draws", n_draws, minimum=1)
    seed = check_count("seed", seed, maximum=None)
    check_size("the explorer's draws (n x n_draws customers)", float(n) * n_draws,
               limit=MAX_CUSTOMERS, hint="use fewer customers or fewer draws")
    rng = np.random.default_rng(seed)
    # This order of draws is what the book's static explorer was rendered with.
    Z = sample_ibp(alpha, n, rng, beta=beta)
    k_plus, per_row = simulate_feature_counts(alpha, n, n_draws, rng, beta=beta)
    _frozen(Z, k_plus, per_row)
    return BuffetDraws(alpha, beta, n, n_draws, seed, Z, k_plus, per_row,
                       expected_num_features(alpha, n, beta=beta))


# --------------------------------------------------------------------------- chapter 4


def _check_table(n: int, k_max: int) -> None:
    """Refuse an ``(n, k_max)`` table of marginals beyond MAX_ENTRIES, naming both."""
    check_size("the table of marginals (n x k_max)", float(n) * k_max,
               hint="use fewer customers n or fewer dishes k_max")


@dataclass(frozen=True)
class RecursionStep:
    """One step of the Recursive IBP, for customer ``n`` (the output of :func:`recursion_step`).

    Attributes
    ----------
    alpha, beta : float
    n, k_max : int
        The customer, and the dishes ``1..k_max`` shown.
    running_sum : numpy.ndarray
        ``(k_max,)`` ``sum_{n' < n} p(z_{n'k} = 1)``.
    existing : numpy.ndarray
        ``(k_max,)`` share of ``p(z_nk = 1)`` from dishes that exist before customer ``n``.
    created : numpy.ndarray
        ``(k_max,)`` share from dishes that customer ``n`` creates.
    rate_before, rate_after : float
        Means of the Poisson laws of the number of dishes after ``n - 1`` and ``n`` customers.
    law_before, law_after : numpy.ndarray
        ``(k_max + 1,)`` those laws at ``0..k_max`` dishes.
    """

    alpha: float
    beta: float
    n: int
    k_max: int
    running_sum: np.ndarray
    existing: np.ndarray
    created: np.ndarray
    rate_before: float
    rate_after: float
    law_before: np.ndarray
    law_after: np.ndarray


def recursion_step(*, alpha: float, beta: float, n: int, k_max: int | None = None) -> RecursionStep:
    """How customer ``n``'s marginals come from a running sum and two Poisson laws.

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    n : int
        The customer, >= 2.
    k_max : int, optional
        Dishes kept, >= 1; by default enough to cover all but 1e-4 of the law of the
        number of dishes after customer ``n``.

    Returns
    -------
    RecursionStep

    Examples
    --------
    >>> step = recursion_step(alpha=3.0, beta=2.0, n=4, k_max=6)
    >>> bool(np.allclose(step.existing + step.created, marginals(3.0, 2.0, 4, 6)[-1]))
    True
    """
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    n = check_count("n", n, minimum=2)
    if k_max is None:
        k_max = columns_needed(alpha, beta, n, tail=1e-4)
    k_max = check_count("k_max", k_max, minimum=1)
    _check_table(n, k_max)
    table = marginals(alpha, beta, n, k_max)
    running_sum = table[:-1].sum(axis=0)
    rate_before = expected_num_features(alpha, n - 1, beta=beta)
    rate_new = new_dish_rate(alpha, n - 1, beta=beta)  # customer n: n - 1 seated before it
    created = new_dish_probabilities(rate_before, rate_new, k_max)
    existing = running_sum / (beta + n - 1)
    counts = np.arange(0, k_max + 1)
    law_before = stats.poisson.pmf(counts, rate_before)
    law_after = stats.poisson.pmf(counts, rate_before + rate_new)
    _frozen(running_sum, existing, created, law_before, law_after)
    return RecursionStep(alpha, beta, n, k_max, running_sum, existing, created,
                         float(rate_before), float(rate_before + rate_new), law_before, law_after)


@dataclass(frozen=True)
class MarginalsTable:
    """The Recursive IBP marginals at one setting (the output of :func:`marginals_table`).

    Attributes
    ----------
    alpha, beta : float
    n, k_max : int
    table : numpy.ndarray
        ``(n, k_max)`` with entry ``[i, k] = p(z_{i+1, k+1} = 1)``.
    expected_dishes : numpy.ndarray
        ``(n,)`` expected number of dishes after each customer.
    """

    alpha: float
    beta: float
    n: int
    k_max: int
    table: np.ndarray
    expected_dishes: np.ndarray


def marginals_table(*, alpha: float, beta: float, n: int = 50, k_max: int | None = None) -> MarginalsTable:
    """The table of marginals ``p(z_nk = 1 | alpha, beta)`` and the expected number of dishes.

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    n : int, optional
        Customers, >= 1.
    k_max : int, optional
        Dishes, >= 1. By default all dishes that exist after ``n`` customers with
        probability above 1e-3 (:func:`ibp_lab.models.recursive.columns_needed`), so that
        the explorer's window follows ``alpha`` and ``beta``.

    Returns
    -------
    MarginalsTable

    Examples
    --------
    >>> result = marginals_table(alpha=2.0, beta=1.0, n=10, k_max=20)
    >>> result.table.shape, round(float(result.expected_dishes[-1]), 3)
    ((10, 20), 5.858)
    """
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    n = check_count("n", n, minimum=1)
    if k_max is None:
        k_max = columns_needed(alpha, beta, n, tail=1e-3)
    k_max = check_count("k_max", k_max, minimum=1)
    _check_table(n, k_max)
    table = marginals(alpha, beta, n, k_max)
    expected = np.array([expected_num_features(alpha, i, beta=beta) for i in range(1, n + 1)])
    _frozen(table, expected)
    return MarginalsTable(alpha, beta, n, k_max, table, expected)


# --------------------------------------------------------------------------- chapter 5


@dataclass(frozen=True)
class SigmaAlphaRun:
    """A Gibbs chain on the training digits at one fixed ``(sigma_x, alpha)``.

    The output of :func:`sigma_alpha_chain`.

    Attributes
    ----------
    sigma_x, alpha : float
    n_sweeps, seed : int
    n_rows : int
        Digits the chain ran on.
    k_plus : numpy.ndarray
        ``(n_sweeps,)`` ``K+`` after each sweep.
    features : numpy.ndarray
        ``(K, D)`` posterior mean image of every feature of the last draw, most owned first.
    owners : numpy.ndarray
        ``(K,)`` digits owning each of those features.
    shape : tuple of int
        ``(h, w)`` of one image.
    prior_mean_k_plus : float
        ``alpha * H_N``, the prior mean of ``K+`` for ``N = n_rows``.
    warm_from : tuple of float or None
        ``(sigma_x, alpha)`` of the run whose last draw started this chain (a quick frame,
        see :data:`QUICK_FRAMES`); ``None`` for the chain from one feature owned by
        every digit.
    """

    sigma_x: float
    alpha: float
    n_sweeps: int
    seed: int
    n_rows: int
    k_plus: np.ndarray
    features: np.ndarray
    owners: np.ndarray
    shape: tuple
    prior_mean_k_plus: float
    warm_from: tuple | None = None


def sigma_alpha_chain(*, sigma_x: float, alpha: float, n_sweeps: int = 100, seed: int = 0) -> SigmaAlphaRun:
    """Run the chapter 5 explorer's chain: Gibbs on the digits with ``sigma_x`` and ``alpha`` fixed.

    Runs :func:`ibp_lab.inference.chains.run_chain` on the 300 centred training digits
    (``sigma_a`` is sampled, starting at 0.3) from one feature owned by every digit,
    with ``np.random.default_rng(seed)``, then takes the posterior mean image of each
    feature of the last draw. Results are memoised per setting (a static explorer and
    the chapter's default figure ask for the same ones).

    Quick frames: while :data:`QUICK_FRAMES` holds a list and this setting has not been
    run yet, the answer is instead a chain of :data:`WARM_SWEEPS` sweeps at this setting,
    with the same seed, started from the last draw (``Z`` and ``sigma_a``) of the nearest
    setting already run with the same ``n_sweeps`` and ``seed`` (nearest in ``sigma_x``
    first, then in ``alpha``, both on a log scale); its ``warm_from`` names that setting
    and a sentence saying so is appended to the list. It is not memoised: the exact run
    is the only one kept for the setting.

    Parameters
    ----------
    sigma_x : float
        Noise standard deviation, > 0.
    alpha : float
        IBP mass, > 0.
    n_sweeps : int, optional
        Sweeps of the chain, >= 1 (100 take about 0.1 s of one core on the digits at
        ``sigma_x = 0.35``, 0.5 to 0.7 s at ``sigma_x = 0.15`` where the features are many).
    seed : int, optional
        Seed of the chain, >= 0.

    Returns
    -------
    SigmaAlphaRun

    Examples
    --------
    >>> run = sigma_alpha_chain(sigma_x=0.3, alpha=1.0, n_sweeps=3)
    >>> run.k_plus.shape, run.features.shape[1] == run.shape[0] * run.shape[1]
    ((3,), True)
    """
    sigma_x = check_positive("sigma_x", sigma_x)
    alpha = check_positive("alpha", alpha)
    n_sweeps = check_count("n_sweeps", n_sweeps, minimum=1)
    seed = check_count("seed", seed)
    notes = QUICK_FRAMES.get()
    if isinstance(notes, list) and n_sweeps > WARM_SWEEPS:
        warm = _warm_sigma_alpha_chain(sigma_x, alpha, n_sweeps, seed)
        if warm is not None:
            a, b = warm.warm_from
            notes.append(f"a quick frame: {WARM_SWEEPS} sweeps started from the last draw "
                         f"at sigma_x = {a:g}, alpha = {b:g}")
            return warm
    return _sigma_alpha_chain(sigma_x, alpha, n_sweeps, seed)


@lru_cache(maxsize=1)
def _training_digits() -> np.ndarray:
    from ibp_lab.datasets import load_digit_sets

    X = load_digit_sets().train
    X.setflags(write=False)
    return X


#: Last draw ``(Z, sigma_a)`` of each exact run, by ``(sigma_x, alpha, n_sweeps, seed)``:
#: where quick frames start. Bounded like the memo; the lock guards it between the live
#: explorer's threads.
_LAST_DRAWS: dict = {}
_LAST_DRAWS_LOCK = threading.Lock()


def _run_digits_chain(sigma_x, alpha, n_sweeps, seed, *, Z0=None, sigma_a=0.3):
    # Imported here: the sampler and the digits are only needed by this explorer.
    from ibp_lab.inference.chains import GibbsSweep, ScaleUpdate, run_chain

    return run_chain(_training_digits(), n_sweeps, np.random.default_rng(seed), Z0=Z0,
                     sigma_x=sigma_x, sigma_a=sigma_a, alpha=alpha,
                     moves=[GibbsSweep(), ScaleUpdate("sigma_a")])


def _summarise_chain(chain, sigma_x, alpha, n_sweeps, seed, warm_from=None) -> SigmaAlphaRun:
    from ibp_lab.datasets import DIGIT_SHAPE
    from ibp_lab.models.linear_gaussian import feature_posterior

    X = _training_digits()
    images, _ = feature_posterior(X, chain.Z, sigma_x, chain.sigma_a)
    owners = chain.Z.sum(axis=0)
    order = np.argsort(-owners, kind="stable")
    k_plus = chain.trace.k_plus.values.copy()
    features, owners = np.ascontiguousarray(images[order]), owners[order]
    _frozen(k_plus, features, owners)
    return SigmaAlphaRun(sigma_x, alpha, n_sweeps, seed, X.shape[0], k_plus, features, owners,
                         tuple(DIGIT_SHAPE), expected_num_features(alpha, X.shape[0]), warm_from)


@lru_cache(maxsize=64)
def _sigma_alpha_chain(sigma_x: float, alpha: float, n_sweeps: int, seed: int) -> SigmaAlphaRun:
    chain = _run_digits_chain(sigma_x, alpha, n_sweeps, seed)
    last_Z = np.array(chain.Z, copy=True)
    _frozen(last_Z)
    with _LAST_DRAWS_LOCK:
        _LAST_DRAWS[(sigma_x, alpha, n_sweeps, seed)] = (last_Z, float(chain.sigma_a))
        while len(_LAST_DRAWS) > 64:
            del _LAST_DRAWS[next(iter(_LAST_DRAWS))]
    return _summarise_chain(chain, sigma_x, alpha, n_sweeps, seed)


def _nearest_run(sigma_x: float, alpha: float, n_sweeps: int, seed: int):
    """The key and last draw of the nearest exact run (sigma_x first, then alpha, on a log
    scale) with the same ``n_sweeps`` and ``seed``; ``None`` if there is none, or if this
    setting itself has been run (its exact frame is then at hand)."""
    with _LAST_DRAWS_LOCK:
        runs = [(key, draw) for key, draw in _LAST_DRAWS.items()
                if key[2] == n_sweeps and key[3] == seed]
    if not runs or any(key[:2] == (sigma_x, alpha) for key, _ in runs):
        return None
    return min(runs, key=lambda run: (abs(math.log(run[0][0] / sigma_x)),
                                      abs(math.log(run[0][1] / alpha))))


def _warm_sigma_alpha_chain(sigma_x, alpha, n_sweeps, seed) -> SigmaAlphaRun | None:
    nearest = _nearest_run(sigma_x, alpha, n_sweeps, seed)
    if nearest is None:
        return None
    (near_sigma, near_alpha, _, _), (Z, sigma_a) = nearest
    chain = _run_digits_chain(sigma_x, alpha, WARM_SWEEPS, seed, Z0=Z, sigma_a=sigma_a)
    return _summarise_chain(chain, sigma_x, alpha, WARM_SWEEPS, seed, (near_sigma, near_alpha))


# --------------------------------------------------------------------------- the beta process


@dataclass(frozen=True)
class DiscountDraws:
    """Draws of the three-parameter buffet at one setting (the output of :func:`discount_buffet`).

    Attributes
    ----------
    alpha, beta, discount : float
        The setting.
    n, n_draws : int
        Customers per buffet and buffets drawn (from ``np.random.default_rng(0)``).
    Z : numpy.ndarray
        ``(n, K+)`` int8, the first draw, in order of creation.
    running_k_plus : numpy.ndarray
        ``(n_draws, n)``: entry ``[j, i]`` is the number of dishes among the first
        ``i + 1`` customers of draw ``j``.
    popularity : numpy.ndarray
        ``(n,)`` mean over the draws of the number of dishes owned by exactly ``m``
        customers, ``m = 1, ..., n``.
    expected_k_plus : numpy.ndarray
        ``(n,)`` exact ``E[K+]`` after ``1, ..., n`` customers.
    expected_popularity : numpy.ndarray
        ``(n,)`` exact ``E[K_m]`` for ``m = 1, ..., n``.
    """

    alpha: float
    beta: float
    discount: float
    n: int
    n_draws: int
    Z: np.ndarray
    running_k_plus: np.ndarray
    popularity: np.ndarray
    expected_k_plus: np.ndarray
    expected_popularity: np.ndarray


def discount_buffet(*, alpha: float, beta: float, discount: float, n: int = 300,
                    n_draws: int = 20) -> DiscountDraws:
    """Simulate the three-parameter buffet at ``(alpha, beta, discount)`` for the explorer.

    ``n_draws`` matrices of ``n`` customers from :func:`ibp_lab.models.prior.sample_ibp`,
    drawn in turn from ``np.random.default_rng(0)`` (a frame is a function of its
    setting alone, so the static and the live explorer agree), with the exact
    curves they are compared with.

    Parameters
    ----------
    alpha, beta, discount : float
        Mass (> 0), concentration (> ``-discount``) and discount (``0 <= d < 1``).
    n : int, optional
        Customers, 2 to 5000.
    n_draws : int, optional
        Buffets, >= 1; ``n * n_draws`` at most :data:`MAX_CUSTOMERS`.

    Returns
    -------
    DiscountDraws

    Examples
    --------
    >>> draws = discount_buffet(alpha=2.0, beta=1.0, discount=0.5, n=50, n_draws=3)
    >>> draws.running_k_plus.shape, round(float(draws.expected_k_plus[0]), 3)
    ((3, 50), 2.0)
    """
    from ibp_lab._hyper import check_beta_discount

    alpha = check_positive("alpha", alpha)
    beta, discount = check_beta_discount(beta, discount)
    n = check_count("n", n, minimum=2, maximum=5000)
    n_draws = check_count("n_draws", n_draws, minimum=1)
    check_size("the explorer's draws (n x n_draws customers)", float(n) * n_draws,
               limit=MAX_CUSTOMERS, hint="use fewer customers or fewer draws")
    return _discount_buffet(alpha, beta, discount, n, n_draws)


@lru_cache(maxsize=64)
def _discount_buffet(alpha: float, beta: float, discount: float, n: int, n_draws: int) -> DiscountDraws:
    from ibp_lab._hyper import stable_new_dish_rate
    from ibp_lab.models.prior import expected_feature_popularity

    rng = np.random.default_rng(0)
    running = np.empty((n_draws, n), dtype=np.int64)
    popularity = np.zeros(n)
    for j in range(n_draws):
        Z = sample_ibp(alpha, n, rng, beta=beta, discount=discount)
        if j == 0:
            first = Z
        # columns are in order of creation: a dish's first owner is its first 1
        first_owner = Z.argmax(axis=0)
        running[j] = np.cumsum(np.bincount(first_owner, minlength=n))
        popularity += np.bincount(Z.sum(axis=0), minlength=n + 1)[1:] / n_draws
    # E[K+] after i customers is the sum of the first i new-dish rates
    expected = np.cumsum(stable_new_dish_rate(alpha, beta, discount, np.arange(n, dtype=float)))
    expected_pop = expected_feature_popularity(alpha, n, beta=beta, discount=discount)
    _frozen(first, running, popularity, expected, expected_pop)
    return DiscountDraws(alpha, beta, discount, n, n_draws, first, running, popularity,
                         expected, expected_pop)
