"""Sequential Monte Carlo from the IBP prior to the posterior, and the evidence it estimates.

The tempered posteriors of :mod:`ibp_lab.inference.tempering`, ``p_b(Z) ∝ p(X | Z)^b P([Z])``,
join the prior (``b = 0``) to the posterior (``b = 1``). Sequential Monte Carlo
(Del Moral, Doucet & Jasra 2006) carries ``n`` weighted particles along a ladder
``0 = b_0 < b_1 < ... < b_T = 1``. The particles start as exact draws from the
prior (:func:`ibp_lab.models.prior.sample_ibp`, all weights equal); then, at each step
``t``,

1. *reweight*: particle ``i`` has its weight multiplied by the incremental weight
   ``p(X | Z_i)^(b_t - b_{t-1})``, the ratio of the new target to the old one at
   the particle's state (the prior factors cancel);
2. *resample* (systematic resampling) if the effective sample size
   ``ESS = 1 / sum_i W_i^2`` of the normalised weights ``W`` fell below
   ``ess_threshold * n``; the weights are then equal again;
3. *move*: each particle takes ``n_sweeps`` rounds of its moves at ``b_t``: by default
   one collapsed Gibbs sweep (:func:`ibp_lab.inference.gibbs.gibbs_sweep` with
   ``inverse_temperature=b_t``, the kernel of the tempering chapter), or any moves of
   :mod:`ibp_lab.inference.chains` (split-merge proposals among them, their acceptance
   ratios weighing the likelihood's change by ``b_t``), as BlackJAX's tempered SMC takes
   any kernel. They leave ``pi_{b_t}`` invariant and so do not change the weights.

The evidence. Because ``pi_0`` is normalised (the prior) and each step's
incremental weight is the ratio of unnormalised targets, the product over steps of
the weighted mean incremental weight,

    Z_hat = prod_t sum_i W_{t-1, i} p(X | Z_i)^(b_t - b_{t-1}),

is an unbiased estimate of ``p(X) = sum_[Z] P([Z]) p(X | Z)`` when the
resampling times are fixed in advance: always (``ess_threshold=1``) or never
(the standard result for SMC samplers; Del Moral, Doucet & Jasra 2006).
Its logarithm is biased low (Jensen), by about half the variance of
``log Z_hat`` when that variance is small. With the adaptive rule (resample when
the ESS falls) the estimate is consistent as ``n`` grows (Del Moral, Doucet &
Jasra 2012). ``tests/inference/test_smc.py`` checks all three against enumeration.

Annealed importance sampling (Neal 2001) is the same run with no resampling
(``ess_threshold=0``, or :func:`run_ais`): each particle then carries its whole
path's weight.

Public names:

- :func:`run_smc` ``(X, n_particles, rng, *, alpha, sigma_x, sigma_a, beta=1.0,
  n_temperatures=50, inverse_temperatures=None, n_sweeps=1, ess_threshold=0.5,
  moves=None) -> SMCResult``
- :func:`run_ais`: :func:`run_smc` with ``ess_threshold=0``.
- :func:`power_ladder`: the default ladder ``b_t = (t / T)^power``.
- :func:`harmonic_mean_log_evidence`: the harmonic-mean estimate from posterior
  draws' log-likelihoods (Newton & Raftery 1994), the classic estimator whose
  variance is usually infinite; shown in the chapter to fail.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ibp_lab import _kernel
from ibp_lab._checks import (HYPERPARAMETERS, Checked, Count, DataMatrix, Generator, Joint,
                             Positive, Rows, check_real_array, check_size, validated)
from ibp_lab._hyper import Hyperparameters, check_hyperparameters
from ibp_lab.inference._moves import check_moves
from ibp_lab.inference.chains import MOVES, GibbsSweep
from ibp_lab.models.prior import sample_ibp

__all__ = ["SMCResult", "run_smc", "run_ais", "power_ladder", "harmonic_mean_log_evidence"]

#: Most particles of one run.
MAX_PARTICLES = 100_000
#: Most steps of one ladder.
MAX_STEPS = 10_000
#: Most sweeps per particle and step.
MAX_SWEEPS_PER_STEP = 1_000
#: Most Gibbs row updates of one run (particles x steps x sweeps x rows): about an hour
#: of the compiled sweep on small data, so that a mistyped argument fails at once.
MAX_ROW_UPDATES = 1e9


def _check_values(result: SMCResult, values) -> np.ndarray:
    """``values`` of :meth:`SMCResult.mean`: finite, one per particle."""
    values = check_real_array("values", values)
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite")
    if values.shape != result.log_weights.shape:
        raise ValueError(f"values must have one entry per particle ({result.log_weights.size}), "
                         f"got shape {values.shape}")
    return values


@dataclass
class SMCResult:
    """What :func:`run_smc` returns.

    Attributes
    ----------
    log_evidence : float
        ``log Z_hat``, the estimate of ``log p(X | alpha, beta, sigma_x, sigma_a)``.
    log_weights : numpy.ndarray
        ``(n,)`` normalised log weights of the particles at ``b = 1``
        (``logsumexp(log_weights) == 0``).
    k_plus : numpy.ndarray
        ``(n,)`` ``K+`` of each particle at ``b = 1``.
    log_likelihood : numpy.ndarray
        ``(n,)`` ``log p(X | Z)`` of each particle at ``b = 1``.
    states : list of numpy.ndarray
        The particles' ``Z`` at ``b = 1``.
    inverse_temperatures : numpy.ndarray
        ``(T + 1,)`` the ladder, from 0 to 1.
    log_evidence_increments : numpy.ndarray
        ``(T,)`` the log of each step's weighted mean incremental weight; they add
        up to :attr:`log_evidence`.
    ess : numpy.ndarray
        ``(T,)`` the effective sample size after each step's reweighting (before
        any resampling).
    resampled : numpy.ndarray
        ``(T,)`` bool: whether the particles were resampled at that step.
    local_barrier : numpy.ndarray
        ``(T + 1,)`` the weighted particles' estimate, at each rung (after its
        move), of ``lambda(b) = E|log p(X | Z) - log p(X | Z')| / 2`` for ``Z, Z'``
        independent from ``p_b``: Syed et al. (2022)'s local communication barrier,
        whose integral over a stretch of ladder is the barrier that replica exchange
        meets there (:meth:`communication_barrier`).
    cpu_seconds : float
        CPU time of the run (:func:`time.process_time`).
    """

    log_evidence: float
    log_weights: np.ndarray
    k_plus: np.ndarray
    log_likelihood: np.ndarray
    states: list
    inverse_temperatures: np.ndarray
    log_evidence_increments: np.ndarray
    ess: np.ndarray
    resampled: np.ndarray
    local_barrier: np.ndarray
    cpu_seconds: float

    @property
    def weights(self) -> np.ndarray:
        """The normalised weights at ``b = 1`` (they sum to 1)."""
        return np.exp(self.log_weights)

    @validated(values=Joint(_check_values, "self", "values", sets="values"))
    def mean(self, values) -> float:
        """The weighted particles' estimate of the posterior mean of ``values`` (one per particle).

        Examples
        --------
        >>> run = run_smc([[1.0, 0.2], [0.9, -0.1]], 50, np.random.default_rng(0),
        ...               alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_temperatures=10)
        >>> bool(run.mean(run.k_plus) == np.sum(run.weights * run.k_plus))
        True
        """
        return float(np.sum(self.weights * values))

    @validated(min_inverse_temperature=Positive(allow_zero=True, upper=1.0))
    def communication_barrier(self, min_inverse_temperature: float = 0.0) -> float:
        """``Lambda = integral of lambda(b) db`` from ``min_inverse_temperature`` to 1.

        The trapezoid rule over the ladder's rungs in that stretch (the first rung at
        or above ``min_inverse_temperature``); a prediction of
        :attr:`ibp_lab.inference.tempering.TemperedResult.communication_barrier` for a ladder
        over the same stretch, as good as the particles' picture of each ``p_b``.

        Examples
        --------
        >>> run = run_smc([[1.0, 0.2], [0.9, -0.1]], 50, np.random.default_rng(0),
        ...               alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_temperatures=10)
        >>> bool(0 <= run.communication_barrier(0.3) <= run.communication_barrier())
        True
        """
        keep = self.inverse_temperatures >= min_inverse_temperature
        b, lam = self.inverse_temperatures[keep], self.local_barrier[keep]
        return float(np.sum(np.diff(b) * (lam[1:] + lam[:-1]) / 2))

    def region_log_evidence(self, labels) -> dict:
        """``log p(X, region)`` for each region the particles fall in: the evidence of a mode.

        ``labels`` gives each particle's region (for example its ``K+``, or the Gibbs
        chain whose mode it lies in). For a function ``f`` of the final state,
        ``Z_hat * sum_i W_i f(Z_i)`` is an unbiased estimate of ``p(X) E[f(Z) | X]``
        when the resampling times are fixed (the identity the evidence rests on, with
        ``f`` inside); with ``f`` a region's indicator that is
        ``p(X, Z in region) = sum over the region of P([Z]) p(X | Z)``, the region's
        share of the evidence. Unlike the log joint of one state, it counts every
        state of the region, so it can weigh a broad mode against a narrow, higher one.
        Regions that no particle reaches are absent (their estimate is 0, log -inf).

        Parameters
        ----------
        labels : array_like
            ``(n,)`` integer labels, one per particle: an array of any integer dtype, or
            Python ints (of any size). Grouped exactly, never through floats (in which
            ``2**53`` and ``2**53 + 1`` are one number); floats, booleans and anything else
            are refused.

        Returns
        -------
        dict
            ``{label: log p_hat(X, region)}``, labels in increasing order.

        Examples
        --------
        >>> run = run_smc([[1.0, 0.2], [0.9, -0.1]], 50, np.random.default_rng(0),
        ...               alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_temperatures=10)
        >>> by_k = run.region_log_evidence(run.k_plus)
        >>> bool(np.isclose(logsumexp(list(by_k.values())), run.log_evidence))
        True
        """
        codes, values = _region_codes(labels, self.log_weights.size)
        return {value: float(self.log_evidence + logsumexp(self.log_weights[codes == c]))
                for c, value in enumerate(values)}

    @validated(k_max=Count(maximum=10**6))
    def k_plus_pmf(self, k_max: int) -> np.ndarray:
        """Weighted law of ``K+`` at ``b = 1`` on ``0 .. k_max`` (mass above ``k_max`` dropped)."""
        pmf = np.bincount(np.minimum(self.k_plus, k_max + 1), weights=self.weights,
                          minlength=k_max + 2)
        return pmf[: k_max + 1]


def _region_codes(labels, n: int) -> tuple[np.ndarray, list[int]]:
    """``labels`` (``(n,)`` integers) as codes ``0 .. R - 1`` and the ``R`` distinct labels, in
    increasing order, as Python ints: grouped exactly whatever the integer dtype."""
    try:
        raw = np.asarray(labels)
    except ValueError:  # a ragged nested list
        raise ValueError("labels must be a 1-D array of integer labels") from None
    if raw.shape != (n,):
        raise ValueError(f"labels must have one entry per particle ({n}), got shape {raw.shape}")
    if raw.dtype.kind in "iu":  # NumPy compares integers exactly, int64 and uint64 alike
        distinct, codes = np.unique(raw, return_inverse=True)
        return codes.reshape(n), [int(v) for v in distinct]
    if raw.dtype == object and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                   for v in raw):
        # Python ints beyond every NumPy integer type: grouped as Python ints
        distinct = sorted({int(v) for v in raw})
        position = {v: i for i, v in enumerate(distinct)}
        return np.array([position[int(v)] for v in raw], dtype=np.int64), distinct
    raise TypeError(f"labels must be integers (an array of any integer dtype, or Python ints), "
                    f"got dtype {raw.dtype}: floats are not exact beyond 2**53")


@validated(n_temperatures=Count(minimum=1, maximum=MAX_STEPS), power=Positive(upper=100.0))
def power_ladder(n_temperatures: int, power: float = 4.0) -> np.ndarray:
    """``b_t = (t / T)^power`` for ``t = 0 .. T``, ``T = n_temperatures``.

    A power above 1 puts the rungs close together near ``b = 0``: there the
    prior's draws differ in ``log p(X | Z)`` by the most (hundreds of nats on
    real data), so a step ``db`` there changes the weights the most.

    Examples
    --------
    >>> power_ladder(4, power=2.0)
    array([0.    , 0.0625, 0.25  , 0.5625, 1.    ])
    """
    return (np.arange(n_temperatures + 1) / n_temperatures) ** power


def _check_ladder(inverse_temperatures) -> np.ndarray:
    ladder = check_real_array("inverse_temperatures", inverse_temperatures)
    if ladder.ndim != 1 or not 2 <= ladder.size <= MAX_STEPS + 1:
        raise ValueError("inverse_temperatures must be a 1-D array of 2 to "
                         f"{MAX_STEPS + 1} values, got shape {ladder.shape}")
    if ladder[0] != 0.0 or ladder[-1] != 1.0 or not np.all(np.diff(ladder) > 0):
        raise ValueError("inverse_temperatures must increase strictly from 0 to 1, got "
                         f"{ladder[0]:g} ... {ladder[-1]:g}"
                         + ("" if np.all(np.diff(ladder) > 0) else " (not increasing)"))
    return ladder


def _systematic_resample(log_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n`` particles drawn by systematic resampling (one uniform for all).

    Each particle ``i`` is copied ``floor(n W_i)`` or ``ceil(n W_i)`` times, in
    expectation ``n W_i``: unbiased, with less variance than multinomial draws.
    """
    n = log_weights.size
    cumulative = np.cumsum(np.exp(log_weights))
    cumulative[-1] = 1.0  # rounding must not leave the last point past the end
    points = (rng.random() + np.arange(n)) / n
    return np.searchsorted(cumulative, points, side="right")


def _half_mean_abs_difference(values: np.ndarray, log_weights: np.ndarray) -> float:
    """``E|V - V'| / 2`` for ``V, V'`` independent from the weighted values (O(n log n)).

    With the values sorted, ``sum_{i<j} W_i W_j (v_j - v_i)`` is
    ``sum_j W_j (v_j S_{j-1} - T_{j-1})`` (``S``, ``T`` the running sums of ``W`` and
    ``W v``), and ``E|V - V'|`` is twice it.

    >>> _half_mean_abs_difference(np.array([0.0, 2.0]), np.log([0.5, 0.5]))
    0.5
    """
    order = np.argsort(values)
    v, w = values[order], np.exp(log_weights[order])
    s_before = np.cumsum(w) - w
    t_before = np.cumsum(w * v) - w * v
    return float(np.sum(w * (v * s_before - t_before)))


def _ess(log_weights: np.ndarray) -> float:
    """``1 / sum W_i^2`` of normalised log weights."""
    return float(np.exp(-logsumexp(2.0 * log_weights)))


class _Particles:
    """The particles' states and log-likelihoods, moved by tempered moves (default the
    tempered Gibbs sweep)."""

    def __init__(self, X, hyper, n, rng, moves):
        self.X, self.hyper, self.moves = X, hyper, moves
        self.sum_sq = float(np.sum(X * X))
        alpha, _, _, beta = hyper
        self.states = [sample_ibp(alpha, X.shape[0], rng, beta=beta).astype(np.int8)
                       for _ in range(n)]
        self.log_lik = np.array([self._log_lik(Z) for Z in self.states])

    def _log_lik(self, Z) -> float:
        ztz, ztx = _kernel.sufficient_stats(self.X, Z)
        return _kernel.loglik_from_stats(ztz, ztx, self.sum_sq, *self.X.shape,
                                         self.hyper.sigma_x, self.hyper.sigma_a)

    def resample(self, index: np.ndarray) -> None:
        self.states = [self.states[i] for i in index]  # copies are made by the next move
        self.log_lik = self.log_lik[index]

    def move(self, b: float, n_sweeps: int, rng) -> None:
        # particle by particle, n_sweeps rounds of the moves each: with the default one
        # Gibbs sweep, the draws of n_sweeps sweeps in one compiled call
        for i, Z in enumerate(self.states):
            for _ in range(n_sweeps):
                for move in self.moves:
                    Z, _ = move(self.X, Z, rng, self.hyper, inverse_temperature=b)
            self.states[i] = Z
            self.log_lik[i] = self._log_lik(Z)


def _ladder_of(inverse_temperatures, n_temperatures) -> np.ndarray:
    """The run's ladder: the one given, checked, or :func:`power_ladder`'s."""
    if inverse_temperatures is None:
        return power_ladder(n_temperatures)
    return _check_ladder(inverse_temperatures)


def _check_run_size(n_particles: int, ladder: np.ndarray, n_sweeps: int, n_rows: int) -> None:
    check_size("the run's Gibbs row updates",
               float(n_particles) * (ladder.size - 1) * n_sweeps * n_rows,
               names=("n_particles", "n_temperatures", "n_sweeps"), limit=MAX_ROW_UPDATES)


def _check_smc_moves(moves) -> tuple:
    return (GibbsSweep(),) if moves is None else check_moves(moves, MOVES)


@validated(
    X=DataMatrix(),
    rng=Generator(),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    n_particles=Count(minimum=1, maximum=MAX_PARTICLES),
    ladder=Joint(_ladder_of, "inverse_temperatures", "n_temperatures",
                 sets="inverse_temperatures"),
    n_sweeps=Count(minimum=1, maximum=MAX_SWEEPS_PER_STEP),
    ess_threshold=Positive(allow_zero=True, upper=1.0),
    size=Joint(_check_run_size, "n_particles", "inverse_temperatures", "n_sweeps", Rows("X")),
    moves=Joint(_check_smc_moves, "moves", sets="moves"),
)
def run_smc(X, n_particles: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
            sigma_a: float, beta: float = 1.0, n_temperatures: int = 50,
            inverse_temperatures=None, n_sweeps: int = 1,
            ess_threshold: float = 0.5, moves=None) -> SMCResult:
    """Sequential Monte Carlo from the IBP prior to the posterior; the log evidence.

    See the module docstring for the algorithm and what the estimate is.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_particles : int
        Particles ``n``, >= 1.
    rng : numpy.random.Generator
        Source of randomness: the prior draws, then each step's resampling and
        sweeps.
    alpha, sigma_x, sigma_a, beta : float
        Hyperparameters of the linear-Gaussian IBP, held fixed.
    n_temperatures : int, optional
        Steps ``T`` of the default ladder :func:`power_ladder` (ignored when
        ``inverse_temperatures`` is given).
    inverse_temperatures : array_like, optional
        The ladder, strictly increasing from 0 to 1.
    n_sweeps : int, optional
        Rounds of the ``moves`` (by default Gibbs sweeps) per particle at each step, >= 1.
    ess_threshold : float, optional
        Resample when the ESS falls below ``ess_threshold * n_particles``; in
        ``[0, 1]``. 0 never resamples (annealed importance sampling), 1 resamples
        at every step.
    moves : Move, str or list of them, optional
        What one round does to a particle, in order, at the step's inverse temperature:
        the moves of :func:`ibp_lab.inference.chains.run_chain` (objects such as
        ``chains.SequentialSplitMerge(n_proposals=5)``, or names). Default
        ``[GibbsSweep()]``, the same draws as before moves could be chosen.

    Returns
    -------
    SMCResult

    Examples
    --------
    >>> from ibp_lab.inference import exact
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> run = run_smc(X, 200, np.random.default_rng(0), alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    >>> exact_value = exact.log_evidence(X, 1.3, 0.6, 1.2)
    >>> bool(abs(run.log_evidence - exact_value) < 0.1)
    True
    >>> run.k_plus.shape, bool(np.isclose(np.exp(run.log_weights).sum(), 1.0))
    ((200,), True)

    With a split-merge move after each particle's sweep:

    >>> run = run_smc(X, 50, np.random.default_rng(0), alpha=1.3, sigma_x=0.6, sigma_a=1.2,
    ...               n_temperatures=10, moves=["gibbs_sweep", "random_split_merge"])
    >>> bool(abs(run.log_evidence - exact_value) < 0.5)
    True
    """
    hyper = Hyperparameters(alpha, sigma_x, sigma_a, beta)
    n, ladder, threshold = n_particles, inverse_temperatures, ess_threshold
    X = np.ascontiguousarray(X, dtype=np.float64)
    start = time.process_time()
    particles = _Particles(X, hyper, n, rng, moves)
    log_w = np.full(n, -np.log(n))
    T = ladder.size - 1
    increments, ess, resampled = np.zeros(T), np.zeros(T), np.zeros(T, bool)
    barrier = np.zeros(T + 1)
    barrier[0] = _half_mean_abs_difference(particles.log_lik, log_w)
    for t in range(T):
        log_w = log_w + (ladder[t + 1] - ladder[t]) * particles.log_lik
        increments[t] = logsumexp(log_w)
        log_w -= increments[t]
        ess[t] = _ess(log_w)
        if ess[t] < threshold * n:
            particles.resample(_systematic_resample(log_w, rng))
            log_w = np.full(n, -np.log(n))
            resampled[t] = True
        particles.move(ladder[t + 1], n_sweeps, rng)
        barrier[t + 1] = _half_mean_abs_difference(particles.log_lik, log_w)
    states = [np.ascontiguousarray(Z) for Z in particles.states]
    return SMCResult(
        log_evidence=float(increments.sum()), log_weights=log_w,
        k_plus=np.array([Z.shape[1] for Z in states], dtype=np.int64),
        log_likelihood=particles.log_lik.copy(), states=states, inverse_temperatures=ladder,
        log_evidence_increments=increments, ess=ess, resampled=resampled,
        local_barrier=barrier, cpu_seconds=time.process_time() - start)


def _refuse_ess_threshold(options: dict) -> None:
    if "ess_threshold" in options:
        raise TypeError("run_ais never resamples: do not pass ess_threshold (use run_smc)")


# the rest: run_smc's door
@validated(options=Joint(_refuse_ess_threshold, "options"))
def run_ais(X, n_particles: int, rng: np.random.Generator, **options) -> SMCResult:
    """Annealed importance sampling: :func:`run_smc` without resampling (``ess_threshold=0``).

    Examples
    --------
    >>> run = run_ais([[1.0], [0.8]], 100, np.random.default_rng(1), alpha=1.0,
    ...               sigma_x=0.5, sigma_a=1.0, n_temperatures=20)
    >>> bool(run.resampled.any())
    False
    """
    return run_smc(X, n_particles, rng, ess_threshold=0.0, **options)


def _check_log_likelihoods(name: str, log_likelihoods) -> np.ndarray:
    values = check_real_array("log_likelihoods", log_likelihoods)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"log_likelihoods must be a non-empty 1-D array, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("log_likelihoods must be finite")
    return values


@validated(log_likelihoods=Checked(_check_log_likelihoods))
def harmonic_mean_log_evidence(log_likelihoods) -> float:
    """The harmonic-mean estimate of the log evidence from posterior draws (Newton & Raftery 1994).

    ``p(X) = 1 / E_post[1 / p(X | Z)]``, so ``-log mean_s exp(-log p(X | Z_s))``
    over posterior draws ``Z_s``. It is consistent, but ``1 / p(X | Z)`` is
    largest where the posterior puts almost no mass, so its variance can be
    infinite (Neal's comment on Newton & Raftery 1994) and is enormous when
    the prior is much wider than the posterior; posterior draws miss the
    prior's low-likelihood states, so in practice it overestimates the evidence.

    Parameters
    ----------
    log_likelihoods : array_like
        ``log p(X | Z_s)`` of posterior draws (1-D, finite, at least one).

    Returns
    -------
    float

    Examples
    --------
    >>> bool(np.isclose(harmonic_mean_log_evidence([-1.0, -2.0]),
    ...                 -np.log(np.mean(np.exp([1.0, 2.0])))))
    True
    """
    values = log_likelihoods
    return float(np.log(values.size) - logsumexp(-values))
