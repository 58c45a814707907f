"""Replica exchange (parallel tempering) for the collapsed Gibbs sampler.

A ladder of inverse temperatures ``1 = b_0 > b_1 > ... > b_{R-1} >= 0`` and one
replica of ``Z`` per rung. The replica at ``b`` targets the tempered posterior
``p(X | Z)^b P([Z])``: at ``b = 1`` the posterior, at ``b = 0`` the IBP prior.
Each round, every replica takes its moves at its own ``b``: by default one collapsed
Gibbs sweep (:func:`ibp_lab.inference.gibbs.gibbs_sweep` with ``inverse_temperature=b``:
the flips' and the new dishes' likelihood terms scaled by ``b``), or any moves of
:mod:`ibp_lab.inference.chains` (``moves=[GibbsSweep(), SequentialSplitMerge()]``: the
split-merge moves' acceptance ratios then weigh the likelihood's change by ``b``). Then
adjacent rungs ``j, j+1`` propose to exchange their states, accepted with probability::

    min(1, exp((b_j - b_{j+1}) (log p(X | Z_{j+1}) - log p(X | Z_j))))

the Metropolis ratio of the product target (the prior factors cancel). Swaps are
proposed on the even pairs in even rounds and the odd pairs in odd rounds (the
non-reversible "deterministic even-odd" scheme of Syed, Bouchard-Cote,
Deligiannidis & Doucet 2021) or on a randomly chosen parity each round
(``swap_scheme="seo"``, the reversible scheme). Replica exchange itself is due to
Geyer (1991), after a related proposal by Swendsen & Wang (1986).

Public names:

- :func:`run_tempered` ``(X, n_sweeps, rng, *, alpha, sigma_x, sigma_a, beta=1.0,
  n_temperatures=8, Z0=None, ...) -> TemperedResult``: one run; the cold chain's
  trace (``k_plus``, ``log_likelihood``, ``log_joint``), its final ``Z``, the
  ladder, the swap acceptance per adjacent pair, the communication barrier.
- :func:`run_tempered_chains` ``(X, n_runs, n_sweeps, rng, *, Z0=None, **options)
  -> (InferenceData, list[TemperedResult])``: independent runs laid out exactly as
  :func:`ibp_lab.inference.chains.run_chains` lays out chains, so ArviZ's R-hat and ESS
  apply unchanged (the diagnostics of the chains chapter).
- :func:`tempered_class_posterior` and :func:`tempered_k_plus_posterior`: the exact
  tempered posterior on tiny data, by enumeration (:mod:`ibp_lab.inference.exact`'s classes
  with the likelihood raised to ``b``).
- :func:`tuned_ladder`: one step of the ladder tuning below.

The ladder. The rejection rate ``r_j`` of pair ``j`` (the mean of ``1 -`` the
swap probability) is additive along the ladder to first order: Syed et al.
(2021) show that the sum ``Lambda = sum_j r_j`` approaches a property of the
problem, the *communication barrier*, as the ladder gets finer, and that the
deterministic scheme's rate of round trips is best when every pair rejects
equally often. During warm-up (``burn`` rounds, split into phases of doubling
length) the ladder is moved so that the estimated cumulative barrier is equally
spaced along it (:func:`tuned_ladder`); after warm-up it is fixed, so the kept
draws come from one fixed kernel.

Threads. The moves of one round are independent (each replica has its own
generator, spawned from ``rng``), and the compiled sweep releases the GIL, so
``workers=2`` runs them in two threads (the split-merge moves hold the GIL for
most of their time: they gain little). The chain is the same for any
``workers``; whether it is faster depends on the machine's free cores
(``benchmarks/tempering.py`` measures it).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.special import logsumexp
from scipy.stats import poisson

from ibp_lab import _kernel
from ibp_lab.inference import exact
from ibp_lab._checks import (HYPERPARAMETERS, Checked, Count, DataMatrix, Flag, Generator,
                             InverseTemperature, Joint, Optional, Positive, Sweeps,
                             check_count, check_real_array, validated)
from ibp_lab._hyper import (Hyperparameters, check_feature_matrix, check_hyperparameters,
                            harmonic)
from ibp_lab._threads import single_blas_thread
from ibp_lab.inference._moves import check_moves
from ibp_lab.inference._trace import Recorder, collect_runs
from ibp_lab.inference.chains import MOVES, GibbsSweep

__all__ = ["TemperedResult", "run_tempered", "run_tempered_chains", "tempered_class_posterior",
           "tempered_k_plus_posterior", "tuned_ladder", "SWAP_SCHEMES"]

#: Swap schemes: deterministic even-odd (non-reversible) and stochastic even-odd.
SWAP_SCHEMES = ("deo", "seo")
#: Most rungs of one ladder.
MAX_TEMPERATURES = 64
#: Most runs of one call of run_tempered_chains.
MAX_RUNS = 100
#: Most threads for the replicas' sweeps.
MAX_WORKERS = 16
# Smallest rejection rate the ladder tuning uses: keeps the cumulative barrier strictly
# increasing, so that its inverse (the new ladder) is well defined.
_MIN_REJECTION = 1e-6
# Warm-up phases of doubling length for the ladder tuning (fewer if burn is short).
_TUNING_PHASES = 5


# --------------------------------------------------------------------------------------
# the exact tempered posterior (tiny data)
# --------------------------------------------------------------------------------------


def _class_logliks(X: np.ndarray, post: exact.ClassPosterior, sigma_x: float,
                   sigma_a: float) -> np.ndarray:
    """``log p(X | Z)`` of every enumerated class, by the samplers' sufficient statistics."""
    sum_sq = float(np.sum(X * X))
    return np.array([_kernel.loglik_from_stats(*_kernel.sufficient_stats(X, Z), sum_sq,
                                               *X.shape, sigma_x, sigma_a)
                     for Z in post.classes()])


# alpha, sigma_x, sigma_a, beta and k_max: exact.class_posterior's door, the first call
@validated(X=DataMatrix(), inverse_temperature=InverseTemperature())
def tempered_class_posterior(X, inverse_temperature: float, *, alpha: float, sigma_x: float,
                             sigma_a: float, beta: float = 1.0,
                             k_max: int = 8) -> exact.ClassPosterior:
    """The tempered posterior ``p(X | Z)^b P([Z]) / const`` of every class with ``K+ <= k_max``.

    :func:`ibp_lab.inference.exact.class_posterior` weighs each class by prior times
    likelihood (its likelihood in the ``N x N`` form); here each class's
    likelihood is recomputed from ``Z^T Z`` and ``Z^T X`` and its log weight
    moved by ``(b - 1) log p(X | Z)``. ``tail_bound`` bounds the tempered mass
    beyond ``k_max``: prior tail ``P(Poisson(alpha H) > k_max)`` times the
    likelihood bound of :class:`ibp_lab.inference.exact.ClassPosterior` raised to ``b``.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data, ``N <= 4``.
    inverse_temperature : float
        ``b`` in ``[0, 1]``.
    alpha, sigma_x, sigma_a, beta, k_max
        As in :func:`ibp_lab.inference.exact.class_posterior` (keyword-only here).

    Returns
    -------
    ibp_lab.inference.exact.ClassPosterior

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> cold = tempered_class_posterior(X, 1.0, alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    >>> bool(np.allclose(cold.probabilities, exact.class_posterior(X, 1.3, 0.6, 1.2).probabilities))
    True
    """
    b = inverse_temperature
    post = exact.class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max)
    log_lik = _class_logliks(X, post, float(sigma_x), float(sigma_a))
    log_weights = post.log_weights + (b - 1.0) * log_lik
    log_total = logsumexp(log_weights)
    n_rows, n_dims = X.shape
    log_lik_bound = (-0.5 * n_rows * n_dims * math.log(2 * math.pi)
                     - (n_rows - 1) * n_dims * math.log(sigma_x)
                     - 0.5 * n_dims * math.log(sigma_x**2 + sigma_a**2 * (k_max + 1) / n_rows))
    log_tail = poisson(alpha * harmonic(n_rows, beta)).logsf(k_max) + b * log_lik_bound
    tail = float(np.exp(log_tail - np.logaddexp(log_total, log_tail)))
    return exact.ClassPosterior(post.counts, post.k_plus, log_weights,
                                np.exp(log_weights - log_total), tail)


def tempered_k_plus_posterior(X, inverse_temperature: float, *, alpha: float, sigma_x: float,
                              sigma_a: float, beta: float = 1.0, k_max: int = 8) -> np.ndarray:
    """The law of ``K+`` under the tempered posterior, ``(k_max + 1,)``.

    At ``b = 0`` it is the prior's Poisson(``alpha H_N``) law, truncated to ``k_max``.

    Examples
    --------
    >>> from scipy.stats import poisson
    >>> p0 = tempered_k_plus_posterior([[0.3], [1.0]], 0.0, alpha=1.0, sigma_x=0.5,
    ...                                sigma_a=1.0, k_max=30)
    >>> bool(np.allclose(p0[:5], poisson(1.5).pmf(range(5)), atol=1e-12))
    True
    """
    post = tempered_class_posterior(X, inverse_temperature, alpha=alpha, sigma_x=sigma_x,
                                    sigma_a=sigma_a, beta=beta, k_max=k_max)
    return np.bincount(post.k_plus, weights=post.probabilities, minlength=k_max + 1)


# --------------------------------------------------------------------------------------
# the ladder
# --------------------------------------------------------------------------------------


def _initial_ladder(n_temperatures: int, hottest: float) -> np.ndarray:
    """Geometric from 1 down to ``hottest`` (linear if ``hottest`` is 0)."""
    if n_temperatures == 1:
        return np.ones(1)
    if hottest == 0.0:
        return np.linspace(1.0, 0.0, n_temperatures)
    return np.geomspace(1.0, hottest, n_temperatures)


def _check_ladder(name: str, inverse_temperatures) -> np.ndarray:
    """A ladder of :func:`tuned_ladder`: finite, decreasing from 1 to a value in [0, 1]."""
    b = check_real_array("inverse_temperatures", inverse_temperatures)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError("inverse_temperatures must be a non-empty 1-d array of finite "
                         f"numbers, got shape {b.shape}")
    if b[0] != 1.0 or b[-1] < 0.0 or np.any(np.diff(b) > 0):
        raise ValueError("inverse_temperatures must decrease from 1 to a value in [0, 1], "
                         f"got {b}")
    return b


def _check_rejection(rejection, b: np.ndarray) -> np.ndarray:
    """The rejection rates of :func:`tuned_ladder`: one finite number >= 0 per pair of rungs."""
    r = check_real_array("rejection", rejection)
    if r.shape != (b.size - 1,):
        raise ValueError(f"rejection must have len(inverse_temperatures) - 1 = {b.size - 1} "
                         f"entries, got shape {r.shape}")
    # any finite increments >= 0 of the barrier work (a rejection rate is in [0, 1])
    if not np.all(np.isfinite(r) & (r >= 0.0)):
        raise ValueError(f"rejection must hold finite numbers >= 0, got {r}")
    return r


@validated(inverse_temperatures=Checked(_check_ladder),
           rejection=Joint(_check_rejection, "rejection", "inverse_temperatures",
                           sets="rejection"))
def tuned_ladder(inverse_temperatures, rejection) -> np.ndarray:
    """The ladder on which the estimated barrier is equally spaced (Syed et al. 2021).

    With ``Lambda(b_j) = sum_{i >= j} r_i`` (0 at the hottest rung), ``Lambda``
    is interpolated linearly in ``b`` and inverted at equally spaced levels; the
    two ends stay where they are.

    Parameters
    ----------
    inverse_temperatures : array_like
        ``(R,)`` decreasing, from 1.
    rejection : array_like
        ``(R - 1,)`` estimated rejection rate of each adjacent pair, in ``[0, 1]``
        (any finite increments ``>= 0`` of the barrier are accepted).

    Returns
    -------
    numpy.ndarray
        ``(R,)`` the new ladder, decreasing.

    Examples
    --------
    >>> tuned_ladder([1.0, 0.5, 0.0], [0.9, 0.1]).round(3)
    array([1.   , 0.722, 0.   ])
    """
    b = inverse_temperatures
    r = np.maximum(rejection, _MIN_REJECTION)
    # only the barrier's shape matters (its levels are equally spaced): scaled to a largest
    # increment of 1, so that huge increments cannot sum to inf (1e308 + 1e308 did)
    if r.size:  # one rung: no pair, nothing to scale
        r = r / r.max()
    barrier = np.concatenate([[0.0], np.cumsum(r[::-1])])  # at b[::-1], increasing
    levels = np.linspace(0.0, barrier[-1], b.size)
    return np.interp(levels, barrier, b[::-1])[::-1].copy()


def _tuning_ends(burn: int) -> set[int]:
    """Rounds after which the ladder is re-tuned: phases of doubling length over ``burn``."""
    n_phases = min(_TUNING_PHASES, burn // 20)
    if n_phases == 0:
        return set()
    weights = 2.0 ** np.arange(n_phases)
    return set(np.round(np.cumsum(weights) / weights.sum() * burn).astype(int) - 1)


# --------------------------------------------------------------------------------------
# one run
# --------------------------------------------------------------------------------------


@dataclass
class TemperedResult:
    """What :func:`run_tempered` returns.

    Attributes
    ----------
    trace : xarray.Dataset
        The cold chain (``b = 1``), one entry per round along ``draw`` (warm-up
        included): ``k_plus``, ``log_likelihood`` and ``log_joint`` (as in
        :class:`ibp_lab.inference.chains.ChainResult`). ``attrs``: ``burn``, ``beta``.
    replica_trace : xarray.Dataset
        ``k_plus`` and ``log_likelihood`` of every rung, dims ``(draw, level)``
        (level 0 is the cold chain).
    Z : numpy.ndarray
        The cold chain's final state.
    states : list of numpy.ndarray
        Every rung's final state, by level.
    inverse_temperatures : numpy.ndarray
        The ladder after warm-up (decreasing, from 1).
    swap_acceptance : numpy.ndarray
        ``(R - 1,)`` accepted / proposed swaps of each adjacent pair after warm-up.
    rejection : numpy.ndarray
        ``(R - 1,)`` mean of ``1 -`` the swap probability of each pair after
        warm-up, computed every round for every pair (lower variance than the
        accept counts); its sum is :attr:`communication_barrier`.
    restarts : int
        After warm-up, how many times a state that had last visited the hottest
        rung reached the cold one (Syed et al.'s tempered restarts).
    sample_stats : xarray.Dataset
        ``seconds`` per draw: CPU time (:func:`time.process_time`, all threads)
        from the start of the run; ``attrs["moves"]`` names the moves of each round.
    """

    trace: xr.Dataset
    replica_trace: xr.Dataset
    Z: np.ndarray
    states: list[np.ndarray]
    inverse_temperatures: np.ndarray
    swap_acceptance: np.ndarray
    rejection: np.ndarray
    restarts: int
    sample_stats: xr.Dataset = field(default_factory=xr.Dataset)

    @property
    def communication_barrier(self) -> float:
        """Sum of the pairs' rejection rates after warm-up (Syed et al. 2021's Lambda)."""
        return float(self.rejection.sum())

    @property
    def posterior_trace(self) -> xr.Dataset:
        """The cold chain's trace after warm-up."""
        return self.trace.isel(draw=slice(self.trace.attrs["burn"], None))

    @property
    def seconds(self) -> np.ndarray:
        """CPU seconds from the start of the run to the end of each round."""
        return self.sample_stats["seconds"].values


class _Replicas:
    """The states, one generator each, their log-likelihoods and which rung holds which."""

    def __init__(self, X, Z0, hyper, rngs, workers, moves):
        self.X, self.hyper, self.rngs, self.moves = X, hyper, rngs, moves
        self.states = [Z0.copy() for _ in rngs]
        self.sum_sq = float(np.sum(X * X))
        self.state_at = np.arange(len(rngs))  # state_at[level] = index of the state there
        self.pool = ThreadPoolExecutor(workers) if workers > 1 else None
        self.log_lik = np.array([self._log_lik(Z) for Z in self.states])

    def _log_lik(self, Z) -> float:
        ztz, ztx = _kernel.sufficient_stats(self.X, Z)
        return _kernel.loglik_from_stats(ztz, ztx, self.sum_sq, *self.X.shape,
                                         self.hyper.sigma_x, self.hyper.sigma_a)

    def _sweep(self, state: int, b: float) -> None:
        Z = self.states[state]
        for move in self.moves:  # each at the rung's inverse temperature
            Z, _ = move(self.X, Z, self.rngs[state], self.hyper, inverse_temperature=b)
        self.states[state] = Z
        self.log_lik[state] = self._log_lik(Z)

    def sweep_all(self, ladder: np.ndarray) -> None:
        jobs = list(zip(self.state_at, ladder))
        if self.pool is None:
            for state, b in jobs:
                self._sweep(state, b)
        else:
            list(self.pool.map(lambda job: self._sweep(*job), jobs))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def _swap_log_ratios(ladder: np.ndarray, log_lik_by_level: np.ndarray) -> np.ndarray:
    """Log acceptance ratio of exchanging the states of rungs ``j`` and ``j + 1``."""
    return -np.diff(ladder) * np.diff(log_lik_by_level)


class _Ladder:
    """Swap proposals, their statistics, warm-up tuning and restart counting."""

    def __init__(self, ladder, scheme, burn, tune, swap_rng):
        self.b, self.scheme, self.burn, self.rng = ladder, scheme, burn, swap_rng
        n_pairs = ladder.size - 1
        self.tune_at = _tuning_ends(burn) if tune else set()
        self.phase_rejection, self.phase_rounds = np.zeros(n_pairs), 0
        self.rejection, self.accepted, self.proposed = (np.zeros(n_pairs) for _ in range(3))
        self.last_end = np.full(ladder.size, -1)  # per state: 0 cold, 1 hot, -1 neither yet
        self.restarts = 0

    def swap(self, t: int, replicas: _Replicas) -> None:
        log_ratio = _swap_log_ratios(self.b, replicas.log_lik[replicas.state_at])
        rejection = 1.0 - np.exp(np.minimum(log_ratio, 0.0))
        parity = t % 2 if self.scheme == "deo" else int(self.rng.random() < 0.5)
        for j in range(parity, self.b.size - 1, 2):
            accept = math.log(self.rng.random()) < log_ratio[j] if log_ratio[j] < 0 else True
            if t >= self.burn:
                self.proposed[j] += 1
                self.accepted[j] += accept
            if accept:
                at = replicas.state_at
                at[j], at[j + 1] = at[j + 1], at[j]
        self._count(t, rejection, replicas.state_at)

    def _count(self, t: int, rejection: np.ndarray, state_at: np.ndarray) -> None:
        if t >= self.burn:
            self.rejection += rejection
            cold, hot = state_at[0], state_at[-1]
            self.restarts += int(self.last_end[cold] == 1)
            self.last_end[cold], self.last_end[hot] = 0, 1
            return
        self.phase_rejection += rejection
        self.phase_rounds += 1
        if t in self.tune_at:
            self.b = tuned_ladder(self.b, self.phase_rejection / self.phase_rounds)
            self.phase_rejection[:], self.phase_rounds = 0.0, 0

    def summary(self, n_kept: int):
        with np.errstate(invalid="ignore"):
            acceptance = np.where(self.proposed > 0, self.accepted / np.maximum(self.proposed, 1),
                                  np.nan)
        return acceptance, self.rejection / max(n_kept, 1)


def _check_hottest(hottest: float, n_temperatures: int) -> None:
    if hottest == 1.0 and n_temperatures > 1:
        raise ValueError("min_inverse_temperature must be < 1 when n_temperatures > 1, got 1.0")


def _check_swap_scheme(name: str, swap_scheme) -> str:
    if not isinstance(swap_scheme, str) or swap_scheme not in SWAP_SCHEMES:
        raise ValueError(f"swap_scheme must be one of {SWAP_SCHEMES}, got {swap_scheme!r}")
    return swap_scheme


def _check_burn(burn, n_sweeps: int) -> int:
    return check_count("burn", burn, maximum=n_sweeps - 1)


def _check_tempered_moves(moves) -> tuple:
    return (GibbsSweep(),) if moves is None else check_moves(moves, MOVES)


@single_blas_thread  # small linear algebra: one BLAS thread (ibp_lab._threads)
@validated(
    X=DataMatrix(),
    rng=Generator(),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    n_sweeps=Sweeps(),
    n_temperatures=Count(minimum=1, maximum=MAX_TEMPERATURES),
    min_inverse_temperature=Positive(allow_zero=True, upper=1.0),
    hottest=Joint(_check_hottest, "min_inverse_temperature", "n_temperatures"),
    swap_scheme=Checked(_check_swap_scheme),
    burn=Joint(_check_burn, "burn", "n_sweeps", sets="burn"),
    workers=Count(minimum=1, maximum=MAX_WORKERS),
    tune=Flag(),
    moves=Joint(_check_tempered_moves, "moves", sets="moves"),
    Z0=Optional(Checked(check_feature_matrix, rows_of="X")),
)
def run_tempered(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                 sigma_a: float, beta: float = 1.0, n_temperatures: int = 8, Z0=None,
                 min_inverse_temperature: float = 0.01, swap_scheme: str = "deo",
                 burn: int = 0, tune: bool = True, workers: int = 1,
                 moves=None) -> TemperedResult:
    """Replica exchange over likelihood temperatures, at fixed hyperparameters.

    See the module docstring for the algorithm. Each of ``n_sweeps`` rounds is one
    application of the ``moves`` (default one Gibbs sweep) to every replica followed by
    one swap phase, so a round costs about ``n_temperatures`` times the moves' CPU time.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_sweeps : int
        Rounds, >= 1 (warm-up included).
    rng : numpy.random.Generator
        Parent generator: replica ``s`` sweeps with ``rng.spawn(R + 1)[s]``, the
        swaps use the last child.
    alpha, sigma_x, sigma_a, beta : float
        Hyperparameters, held fixed.
    n_temperatures : int, optional
        Rungs ``R`` of the ladder, including the cold one (1 gives plain Gibbs).
    Z0 : array_like, optional
        Start of every replica; default one feature owned by every row.
    min_inverse_temperature : float, optional
        The hottest rung's ``b``, in ``[0, 1)`` (0 is the prior).
    swap_scheme : {"deo", "seo"}, optional
        Deterministic (non-reversible) or stochastic even-odd swaps.
    burn : int, optional
        Warm-up rounds: the ladder is tuned during them (if ``tune``) and the swap
        statistics count only the rounds after them.
    tune : bool, optional
        Tune the ladder during warm-up (:func:`tuned_ladder`).
    workers : int, optional
        Threads for the replicas' sweeps (the result does not depend on it).
    moves : Move, str or list of them, optional
        What one round does to each replica, in order, at the replica's inverse
        temperature: the moves of :func:`ibp_lab.inference.chains.run_chain` (objects
        such as ``chains.SequentialSplitMerge(n_proposals=5)``, or names). Default
        ``[GibbsSweep()]``, the same draws as before moves could be chosen.

    Returns
    -------
    TemperedResult

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> run = run_tempered(X, 400, np.random.default_rng(0), alpha=1.3, sigma_x=0.6,
    ...                    sigma_a=1.2, n_temperatures=4, burn=100)
    >>> run.trace.sizes["draw"], run.inverse_temperatures.size, run.swap_acceptance.shape
    (400, 4, (3,))
    >>> bool(0 < run.communication_barrier < 3)
    True

    With split-merge proposals after each replica's sweep:

    >>> from ibp_lab.inference.chains import GibbsSweep, SequentialSplitMerge
    >>> run = run_tempered(X, 100, np.random.default_rng(0), alpha=1.3, sigma_x=0.6,
    ...                    sigma_a=1.2, n_temperatures=3,
    ...                    moves=[GibbsSweep(), SequentialSplitMerge(n_proposals=2)])
    >>> run.sample_stats.attrs["moves"]
    'GibbsSweep(), SequentialSplitMerge(n_proposals=2)'
    """
    hyper = Hyperparameters(alpha, sigma_x, sigma_a, beta)
    R, hottest = n_temperatures, min_inverse_temperature
    if Z0 is None:
        Z0 = np.ones((X.shape[0], 1), np.int8)
    X = np.ascontiguousarray(X, dtype=np.float64)
    children = rng.spawn(R + 1)
    replicas = _Replicas(X, Z0, hyper, children[:R], workers, moves)
    ladder = _Ladder(_initial_ladder(R, hottest), swap_scheme, burn, tune, children[R])
    record = Recorder(n_sweeps, {"k_plus": (np.int64, ("level",)),
                                 "log_likelihood": (np.float64, ("level",)),
                                 "log_joint": np.float64}, sizes={"level": R})
    try:
        for t in range(n_sweeps):
            replicas.sweep_all(ladder.b)
            if R > 1:
                ladder.swap(t, replicas)
            record.clock(t)
            record.draw(t, **_measured(replicas))
    finally:
        replicas.close()
    return _result(record, hyper, replicas, ladder, burn)


def _measured(replicas: _Replicas) -> dict:
    """A round's record: every rung's ``K+`` and log-likelihood, the cold chain's log joint."""
    at = replicas.state_at
    log_lik = replicas.log_lik[at]
    alpha, _, _, beta = replicas.hyper
    log_prior = _kernel.class_log_prior(replicas.states[at[0]], math.log(alpha) + math.log(beta),
                                        alpha * harmonic(replicas.X.shape[0], beta), beta)
    return {"k_plus": [replicas.states[s].shape[1] for s in at], "log_likelihood": log_lik,
            "log_joint": log_lik[0] + log_prior}


def _result(record: Recorder, hyper, replicas: _Replicas, ladder: _Ladder,
            burn: int) -> TemperedResult:
    """The run's result: the cold chain's trace (level 0) beside every rung's."""
    recorded, sample_stats = record.datasets(
        stats_attrs={"moves": ", ".join(map(repr, replicas.moves))})
    trace = recorded.isel(level=0, drop=True).assign_attrs(burn=burn, beta=hyper.beta)
    acceptance, rejection = ladder.summary(record.sizes["draw"] - burn)
    states = [replicas.states[s] for s in replicas.state_at]
    return TemperedResult(trace, recorded[["k_plus", "log_likelihood"]], states[0], states,
                          ladder.b.copy(), acceptance, rejection, ladder.restarts, sample_stats)


# --------------------------------------------------------------------------------------
# several runs, laid out like chains.run_chains
# --------------------------------------------------------------------------------------


def _run_starts(Z0, n_runs: int) -> list:
    """``Z0`` of :func:`run_tempered_chains` as one start per run (each checked by
    :func:`run_tempered`)."""
    if isinstance(Z0, (list, tuple)) and len(Z0) > 0 and np.ndim(Z0[0]) == 2:
        if len(Z0) != n_runs:
            raise ValueError(f"Z0 must be one matrix or a list of n_runs = {n_runs} matrices, "
                             f"got a list of {len(Z0)}")
        return list(Z0)
    return [Z0] * n_runs


# X and the run's options: run_tempered's door, for each run
@validated(n_runs=Count(minimum=1, maximum=MAX_RUNS), rng=Generator(),
           Z0=Joint(_run_starts, "Z0", "n_runs", sets="Z0"))
def run_tempered_chains(X, n_runs: int, n_sweeps: int, rng: np.random.Generator, *, Z0=None,
                        **options):
    """Independent tempered runs, their cold chains collected for ArviZ.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_runs : int
        Number of runs, >= 1; run ``c`` uses ``rng.spawn(n_runs)[c]``.
    n_sweeps : int
        Rounds per run.
    rng : numpy.random.Generator
    Z0 : array_like or list of array_like, optional
        One start for every run, or a list with one per run.
    **options
        Keyword arguments of :func:`run_tempered` (``alpha``, ``sigma_x``,
        ``sigma_a``, ``n_temperatures``, ``burn``, ``moves``, ...).

    Returns
    -------
    idata : arviz.InferenceData
        ``posterior``: the cold chains after warm-up, dims ``(chain, draw)``, variables
        ``k_plus``, ``log_likelihood``, ``log_joint``; ``sample_stats``: ``seconds``;
        as :func:`ibp_lab.inference.chains.run_chains` gives them.
    runs : list of TemperedResult

    Examples
    --------
    >>> import arviz as az
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> idata, runs = run_tempered_chains(X, 2, 300, np.random.default_rng(1), alpha=1.3,
    ...                                   sigma_x=0.6, sigma_a=1.2, n_temperatures=3, burn=100)
    >>> dict(idata.posterior.sizes)
    {'chain': 2, 'draw': 200}
    >>> rhat = az.rhat(idata, var_names=["k_plus", "log_joint"])
    """
    runs = [run_tempered(X, n_sweeps, child, Z0=start, **options)
            for child, start in zip(rng.spawn(n_runs), Z0)]  # Z0: one start per run
    trace = runs[0].trace  # every run keeps the draws after the same warm-up
    kept = np.arange(trace.attrs["burn"], trace.sizes["draw"])
    return collect_runs([(run.trace, run.sample_stats, kept) for run in runs]), runs
