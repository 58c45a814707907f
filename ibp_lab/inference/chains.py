"""Markov chains for the linear-Gaussian IBP: a chain is a list of moves.

- :func:`run_chains` ``(X, n_chains, n_sweeps, rng, *, moves=..., Z0=None, alpha=...,
  ...) -> (InferenceData, list[ChainResult])`` runs independent chains; each
  iteration applies the ``moves`` in turn (default :data:`DEFAULT_MOVES`: one
  :func:`ibp_lab.inference.gibbs.gibbs_sweep`, then alpha's conjugate draw, then three
  Metropolis steps on ``sigma_a``);
- :func:`run_chain` is the same code for one chain and returns one :class:`ChainResult`;
- moves on ``Z`` are small objects ``move(X, Z, rng, hyper, inverse_temperature=1.0) -> (Z,
  stats)`` (:class:`Move`): :class:`GibbsSweep` (defined in :mod:`ibp_lab.inference.gibbs`),
  :class:`RandomSplitMerge`, :class:`SequentialSplitMerge` (``n_proposals``
  Metropolis-Hastings proposals each) and :class:`SingletonUpdate` (defined in
  :mod:`ibp_lab.inference.split_merge`), each beside its algorithm and importable from
  here too; a string names one with its default settings (:data:`MOVES`). A chain applies them at inverse temperature
  1; replica exchange (:func:`ibp_lab.inference.tempering.run_tempered`) and sequential
  Monte Carlo (:func:`ibp_lab.inference.smc.run_smc`) take the same moves and apply them
  to the tempered posterior ``p(X | Z)^b P([Z])``;
- moves on the hyperparameters given ``Z``, defined here, are taken by a chain only:
  :class:`AlphaUpdate` (conjugate), :class:`DiscountUpdate` (slice) and
  :class:`ScaleUpdate` (Metropolis on ``sigma_a`` and/or ``sigma_x``). A hyperparameter
  with no move stays fixed: ``moves=[GibbsSweep()]`` is a chain at fixed hyperparameters.
  Each object holds only its settings; every chain gets a fresh step from it (with its own
  adaptive step sizes), so one list serves all the chains of :func:`run_chains`.

Every chain records, per draw, its CPU time (:func:`time.process_time`, not
wall time: other programs on a shared machine slow the wall clock but hardly
the CPU time of a single-threaded computation, which is what "equal compute"
means) and the proposals its moves accepted; per chain, each split-merge
move's ``stats``.

Hyperparameters (the moves of :func:`run_chain` on them): ``alpha`` has a
conjugate update (:class:`AlphaUpdate`), since ``P([Z] | alpha)`` is proportional to
``alpha^K+ exp(-alpha H)`` with ``H = sum_{i=1}^N beta / (beta + i - 1)``: with
a Gamma(a, b) prior (shape, rate) the posterior is Gamma(a + K+, b + H).
Every hyperparameter is kept inside the range that a fresh call accepts
(:func:`ibp_lab._hyper.check_hyperparameters`): the priors are truncated to it.
For ``alpha`` that is ``[1e-100, MAX_EXPECTED_FEATURES / H]``, and the conjugate
draw comes from the truncated Gamma (a prior with a tiny shape would otherwise
let ``alpha`` underflow to 0 while ``K+ = 0``, and a huge one ask for more
features than the sampler holds). ``sigma_a`` and ``sigma_x`` have HalfNormal(1) priors and are moved by
random-walk Metropolis on the log scale (:class:`ScaleUpdate`; the Jacobian
``sigma'/sigma`` enters the acceptance ratio); their step sizes adapt during the first
``burn`` sweeps only, so the kernel is fixed while samples are kept. Proposals with
``sigma_x / sigma_a < MIN_NOISE_RATIO`` (1e-3), where the rank-one algebra loses its
precision, or outside the range accepted for the data, are rejected: the priors
are truncated there, far from any posterior mass of real data.

Defaults and the data's scale. ``sigma_x`` and ``sigma_a`` default to 1, as in every
estimator of the package (:class:`~ibp_lab.inference.gibbs_estimator.GibbsIBP`,
:class:`~ibp_lab.inference.variational.VariationalIBP`, :class:`~ibp_lab.inference.streaming.RecursiveIBP`):
the scale of standardised data (each column with mean 0 and variance 1). Under the model
an entry of ``X`` has mean 0 and variance about ``sigma_x^2 + sigma_a^2`` per feature
owned; before any sweep a ``UserWarning`` (:class:`ScaleWarning`) names what to do when
``X``'s scale is far from that (:func:`scale_mismatch` states the rule). A chain whose
``K+`` runs away anyway (more features than ``max(N, 50)`` and than the prior's mean plus
ten standard deviations, in one iteration) stops with a ``ValueError`` that says so,
within seconds instead of growing hundreds of features a sweep for minutes.

Pointwise log-likelihood (:func:`run_chains`, ``log_likelihood=True``): for each kept
draw and each row ``n``, ``log p(x_n | Z, sigma_x, sigma_a, X_{-n})``, the collapsed
conditional of row ``n`` given the other rows, ``A`` integrated out
(:func:`pointwise_log_likelihood`). It is the term with which ArviZ's PSIS-LOO
(``az.loo``) estimates the leave-one-out predictive density ``log p(x_n | X_{-n})``: for
any parameter ``theta`` of the chain's state, ``1 / p(x_n | X_{-n}) = E[1 / p(x_n |
theta, X_{-n}) | X]``, and with ``theta = (Z, hyperparameters)`` and ``A`` integrated
out that expectation has less Monte Carlo error than with a draw of ``A``
(Rao-Blackwell). The rows are not independent given ``Z`` alone (they share ``A``),
so WAIC's reading of the terms as independent is an approximation that LOO does not need.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.special import gammainc, gammaincc, gammaincinv, gammainccinv

from ibp_lab import _kernel
from ibp_lab._checks import (
    HYPERPARAMETERS,
    MAX_PARAMETER,
    MIN_PARAMETER,
    Checked,
    Count,
    DataMatrix,
    Flag,
    Generator,
    Joint,
    Optional,
    Rows,
    Sweeps,
    check_count,
    check_data_matrix,
    check_positive,
    check_positive_pair,
    validated,
)
from ibp_lab._hyper import (
    MAX_DISCOUNT,
    MAX_EXPECTED_FEATURES,
    MIN_DISCOUNT,
    DataScale,
    Hyperparameters,
    alpha_upper,
    check_discount,
    check_discount_in_support,
    check_feature_matrix,
    check_hyperparameters,
    harmonic,
    scales_allowed,
    stable_harmonic,
)
from ibp_lab._threads import single_blas_thread
from ibp_lab.inference._moves import HyperparameterMove, Move, check_moves, move_keys
from ibp_lab.inference._trace import Recorder, collect_runs
from ibp_lab.inference.gibbs import GibbsSweep
from ibp_lab.inference.split_merge import (MAX_PROPOSALS, RandomSplitMerge, SequentialSplitMerge,
                                           SingletonUpdate)
from ibp_lab.inference.split_merge._metropolis import combine_stats

__all__ = ["ChainResult", "run_chain", "run_chains", "Move", "GibbsSweep", "RandomSplitMerge",
           "SequentialSplitMerge", "SingletonUpdate", "AlphaUpdate", "DiscountUpdate",
           "ScaleUpdate", "ScaleWarning", "pointwise_log_likelihood"]

#: Most chains one call of run_chains runs.
MAX_CHAINS = 1000
# Most Metropolis steps per sweep for each scale (each costs a K x K factorisation).
_MAX_SCALE_STEPS = 10_000
#: How far (a factor either way) X's scale may be from the hyperparameters' before a warning.
SCALE_FACTOR = 10.0
_LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------------------
# moves: what one iteration of a chain does to Z (each defined beside its algorithm)
# --------------------------------------------------------------------------------------

#: The moves a string in ``moves=`` names (each with its default settings).
MOVES = {cls.name: cls for cls in (GibbsSweep, SingletonUpdate, RandomSplitMerge,
                                   SequentialSplitMerge)}


@dataclass
class ChainResult:
    """What :func:`run_chain` returns.

    Attributes
    ----------
    trace : xarray.Dataset
        One entry per sweep along dimension ``draw`` (``draw = t`` is the state
        after sweep ``t + 1``; warm-up included): ``k_plus``, ``alpha``,
        ``sigma_x``, ``sigma_a``, ``log_likelihood`` (``log p(X | Z, sigma_x,
        sigma_a)``) and ``log_joint`` (``log_likelihood + log P([Z] | alpha,
        beta)``; the hyperparameters' priors are not included), and ``discount``
        when it is updated or not 0. All are label-free. ``trace.attrs`` records
        ``burn``, ``thin`` and ``beta``.
    samples : list of numpy.ndarray
        The kept ``Z`` (``int8``): sweeps with ``draw >= burn`` and
        ``(draw - burn) % thin == 0``.
    sample_draws : numpy.ndarray
        The ``draw`` of each kept sample.
    Z : numpy.ndarray
        The final state, to continue a chain (with the final hyperparameters below).
    alpha, sigma_x, sigma_a : float
        Final hyperparameter values.
    acceptance : dict
        Metropolis acceptance rate after warm-up of each updated scale
        (``"sigma_a"``, ``"sigma_x"``) and its final log-scale step size
        (``"sigma_a_step"``, ``"sigma_x_step"``).
    sample_stats : xarray.Dataset
        Per draw, like ``trace``: ``seconds`` (CPU time, :func:`time.process_time`,
        from the start of the chain to the end of that iteration) and
        ``accepted_moves`` (Metropolis-Hastings proposals of the ``moves``
        accepted in that iteration).
    move_stats : dict
        Move key (its ``name``, numbered if two moves share one) -> the
        split-merge ``stats`` of that move summed over the chain (counts and
        per-proposal arrays, layout in :mod:`ibp_lab.inference.split_merge`); moves that
        always move (Gibbs sweeps, singleton updates) are not listed.
    pointwise_log_likelihood : numpy.ndarray or None
        ``(kept draws, N)``: each row's :func:`pointwise_log_likelihood` at each kept
        draw, when :func:`run_chain` was asked for it (``pointwise=True``); else ``None``.
    """

    trace: xr.Dataset
    samples: list[np.ndarray]
    sample_draws: np.ndarray
    Z: np.ndarray
    alpha: float
    sigma_x: float
    sigma_a: float
    acceptance: dict = field(default_factory=dict)
    sample_stats: xr.Dataset = field(default_factory=xr.Dataset)
    move_stats: dict = field(default_factory=dict)
    pointwise_log_likelihood: np.ndarray | None = None

    @property
    def posterior_trace(self) -> xr.Dataset:
        """The trace at the kept draws only (after warm-up, thinned)."""
        return self.trace.sel(draw=self.sample_draws)

    @property
    def seconds(self) -> np.ndarray:
        """CPU seconds from the start of the chain to the end of each draw."""
        return self.sample_stats["seconds"].values


class ScaleWarning(UserWarning):
    """``X``'s scale is far from what ``sigma_x`` and ``sigma_a`` assume (:func:`run_chain`)."""


def _scale_mismatch(X: np.ndarray, sigma_x: float, sigma_a: float) -> str | None:
    """What is wrong with ``X``'s scale for ``(sigma_x, sigma_a)``, in words, or ``None``.

    The rule: under the model an entry of a row owning one feature has mean 0 and
    variance ``s^2 = sigma_x^2 + sigma_a^2``. Each column's mean square
    ``mean_n x_nd^2`` (not its variance: the model has no mean, so an uncentred column
    is as far off as a wide one) is compared with ``s^2``: the largest more than
    ``SCALE_FACTOR`` (10) times ``s^2`` means the sampler must pile up features to explain
    it (on unscaled wine, hundreds in the first sweep); the largest below ``s^2 / 10``
    means the model reads all of ``X`` as noise and finds next to no features.
    """
    mean_square = np.mean(X * X, axis=0)
    widest, s2 = float(mean_square.max()), sigma_x**2 + sigma_a**2
    advice = ("standardise X (subtract each column's mean and divide by its standard "
              "deviation; then the defaults sigma_x=1, sigma_a=1 fit) or pass sigma_x and "
              "sigma_a of the data's scale")
    if widest > SCALE_FACTOR * s2:
        column = int(mean_square.argmax())
        return (f"X's column {column} has mean square {widest:.4g}, more than {SCALE_FACTOR:g} "
                f"times sigma_x^2 + sigma_a^2 = {s2:.4g}: the sampler would add features to "
                f"explain its scale; {advice}")
    if widest < s2 / SCALE_FACTOR:
        return (f"every column of X has mean square at most {widest:.4g}, less than 1/"
                f"{SCALE_FACTOR:g} of sigma_x^2 + sigma_a^2 = {s2:.4g}: the model would read X "
                f"as noise and find few features; {advice}")
    return None


def _check_scales(X: np.ndarray, sigma_x, sigma_a) -> tuple[float, float]:
    """``sigma_x`` and ``sigma_a`` through the samplers' door (alpha and beta at 1)."""
    hyper = check_hyperparameters(X, 1.0, sigma_x, sigma_a, 1.0)
    return hyper.sigma_x, hyper.sigma_a


@validated(X=DataMatrix(), Z=Checked(check_feature_matrix, rows_of="X"),  # empty columns dropped
           scales=Joint(_check_scales, "X", "sigma_x", "sigma_a", sets=("sigma_x", "sigma_a")))
def pointwise_log_likelihood(X, Z, *, sigma_x: float, sigma_a: float) -> np.ndarray:
    """``log p(x_n | Z, sigma_x, sigma_a, X_{-n})`` for every row ``n``: the collapsed
    conditional of a row given the others, the feature images ``A`` integrated out.

    Given ``Z`` the rows other than ``n`` put ``A`` in ``Normal(Abar_{-n}, sigma_x^2
    P_{-n})`` (per dimension), so ``x_n ~ Normal(z_n Abar_{-n}, sigma_x^2 (1 + z_n P_{-n}
    z_n^T) I)``. Taking a row out is a rank-one downdate of ``M = Z^T Z + (sigma_x /
    sigma_a)^2 I``: with ``q_n = z_n M^{-1} z_n^T`` and the full-data residual
    ``r_n = x_n - z_n Abar``, the leave-one-out residual is ``r_n / (1 - q_n)`` and the
    variance ``sigma_x^2 / (1 - q_n)``, so every row costs one ``K x K`` factorisation in
    all. These are the terms of the ``log_likelihood`` group of :func:`run_chains`
    (module docstring: why this term makes PSIS-LOO estimate ``log p(x_n | X_{-n})``).

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix (empty columns are allowed: they change nothing).
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.

    Returns
    -------
    numpy.ndarray
        ``(N,)``; ``collapsed_loglik(X, Z) - collapsed_loglik(X_{-n}, Z_{-n})`` for row ``n``.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import collapsed_loglik
    >>> X = np.array([[1.0, 0.5], [0.9, 0.4], [-0.2, 1.1]])
    >>> Z = np.array([[1, 0], [1, 1], [0, 1]])
    >>> terms = pointwise_log_likelihood(X, Z, sigma_x=0.5, sigma_a=1.0)
    >>> direct = collapsed_loglik(X, Z, 0.5, 1.0) - collapsed_loglik(X[1:], Z[1:], 0.5, 1.0)
    >>> bool(np.isclose(terms[0], direct))
    True
    """
    return _pointwise_terms(X, Z, sigma_x, sigma_a)


def _pointwise_terms(X: np.ndarray, Z: np.ndarray, sigma_x: float, sigma_a: float) -> np.ndarray:
    """:func:`pointwise_log_likelihood` on checked arguments."""
    from scipy.linalg import cho_factor, cho_solve, solve_triangular

    D, sx2 = X.shape[1], sigma_x**2
    if Z.shape[1] == 0:
        q, residual_sq = np.zeros(X.shape[0]), np.einsum("nd,nd->n", X, X)
    else:
        Zf = Z.astype(np.float64)
        M = Zf.T @ Zf + (sigma_x / sigma_a) ** 2 * np.eye(Z.shape[1])
        factor = cho_factor(M, lower=True)
        residual = X - Zf @ cho_solve(factor, Zf.T @ X)
        q = np.einsum("kn,kn->n", *[solve_triangular(factor[0], Zf.T, lower=True)] * 2)
        residual_sq = np.einsum("nd,nd->n", residual, residual)
    # 1 - q_n >= (sigma_x/sigma_a)^2 / (m + (sigma_x/sigma_a)^2) > 0: never 0 in the accepted range
    keep = 1.0 - q
    return (-0.5 * D * (_LOG_2PI + math.log(sx2)) + 0.5 * D * np.log(keep)
            - residual_sq / (2.0 * sx2 * keep))


def _log_prior_class(Z, hyper: Hyperparameters, h_n: float) -> float:
    """``log P([Z] | alpha, beta, d)`` of a checked ``Z`` without empty columns (0 without rows);
    ``h_n = H_N(beta, d)``, which the chain has at hand.

    The compiled class prior of the kernel (:func:`ibp_lab._kernel.class_log_prior`): one
    pass over ``Z``, about 4 microseconds on the digits where
    :func:`ibp_lab.models.prior.log_prior` (``np.unique`` over columns) took 0.8 ms, as
    long as a sweep; the tests check both agree to 1e-10.
    """
    if Z.shape[0] == 0:
        return 0.0
    constants = _kernel.class_prior_constants(Z.shape[0], hyper.alpha, hyper.beta,
                                              hyper.discount, harmonic_sum=h_n)
    return float(_kernel.class_log_prior(np.ascontiguousarray(Z, dtype=np.int8), *constants,
                                         hyper.beta, hyper.discount))


def _check_gamma_prior(name: str, prior) -> tuple[float, float]:
    """``(shape, rate)`` of a Gamma prior, each a positive number."""
    if isinstance(prior, (str, bytes)) or not isinstance(prior, (Sequence, np.ndarray)) \
            or len(prior) != 2:
        raise ValueError(f"{name} must be a (shape, rate) pair, got {prior!r}")
    return (check_positive(f"{name}[0] (shape)", prior[0]),
            check_positive(f"{name}[1] (rate)", prior[1]))


def _truncated_gamma(u: float, shape: float, rate: float, lower: float, upper: float) -> float:
    """The ``u``-quantile of Gamma(shape, rate) truncated to ``[lower, upper]``.

    Inverts the regularised incomplete gamma function on whichever tail keeps
    its digits: the lower one (``P``) when little mass lies below ``lower``, the
    upper one (``Q``) otherwise, so that a posterior with almost all its mass
    below ``lower`` (a tiny shape) is still resolved. If the range holds no mass
    at all in double precision, the truncated density is monotone on the range
    and falls off within a tiny fraction of it from the boundary next to the
    mass: that boundary is returned.
    """
    x_lo, x_hi = rate * lower, rate * upper
    p_lo = float(gammainc(shape, x_lo))
    if p_lo < 0.5:
        p_hi = float(gammainc(shape, x_hi))
        x = gammaincinv(shape, p_lo + u * (p_hi - p_lo)) if p_hi > p_lo else x_hi
    else:
        q_lo, q_hi = float(gammaincc(shape, x_lo)), float(gammaincc(shape, x_hi))
        # Q falls as x grows: the u-quantile leaves a share u of the range's mass below it
        x = gammainccinv(shape, q_lo - u * (q_lo - q_hi)) if q_lo > q_hi else x_lo
    x = float(x) / rate
    return min(max(x, lower), upper) if math.isfinite(x) else (lower if p_lo >= 0.5 else upper)


def _draw_alpha(rng: np.random.Generator, shape: float, rate: float, upper: float) -> float:
    """A draw of alpha from Gamma(shape, rate) truncated to ``[MIN_PARAMETER, upper]``.

    The accepted range of :func:`ibp_lab._hyper.check_hyperparameters`: below
    ``MIN_PARAMETER`` alpha underflows (a Gamma prior with a tiny shape puts most
    of its mass there while ``K+ = 0``), above ``upper`` the prior expects more
    features than the sampler holds. First an ordinary Gamma draw, kept if it is
    in range (always, at the book's settings); otherwise an exact draw from the
    truncated law by inversion. Both branches give the truncated law, so their
    mixture does too (a rejection sampler with one try, then inversion).
    """
    alpha = float(rng.gamma(shape, 1.0 / rate))
    if MIN_PARAMETER <= alpha <= upper:
        return alpha
    return _truncated_gamma(float(rng.random()), shape, rate, MIN_PARAMETER, upper)


def _metropolis_scale(rng, value, log_step, log_lik_now, log_lik_at):
    """One log-scale random-walk step for a HalfNormal(1) scale.

    Returns ``(value, log_likelihood, accepted)``.
    """
    proposal = value * math.exp(log_step * rng.standard_normal())
    log_lik_prop = log_lik_at(proposal)
    # target in log(sigma): likelihood x HalfNormal(1) density x Jacobian sigma
    log_ratio = (log_lik_prop - log_lik_now - 0.5 * (proposal**2 - value**2)
                 + math.log(proposal / value))
    if math.log(rng.random()) < log_ratio:
        return proposal, log_lik_prop, True
    return value, log_lik_now, False


# --------------------------------------------------------------------------------------
# hyperparameter moves: what one iteration of a chain does to the hyperparameters given Z
# --------------------------------------------------------------------------------------

#: The scales :class:`ScaleUpdate` moves.
SCALES = ("sigma_a", "sigma_x")


class AlphaUpdate(HyperparameterMove):
    """A conjugate draw of ``alpha`` given ``Z``: a move of :func:`run_chain`.

    ``P([Z] | alpha)`` is proportional to ``alpha^K+ exp(-alpha H_N)``, ``H_N`` the
    harmonic sum of the (three-parameter) IBP's prior, so with a Gamma(a, b) prior (shape,
    rate) the conditional is Gamma(a + K+, b + H_N), truncated to the alphas a call accepts
    (module docstring). One object may serve many chains: it holds only its prior.

    Parameters
    ----------
    prior : (float, float), optional
        Shape and rate of the Gamma prior, each in ``[1e-100, 1e6]``; default (1, 1).

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, _, _ = simulate(20, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=4)
    >>> chain = run_chain(X, 20, np.random.default_rng(1), sigma_x=0.3,
    ...                   moves=[GibbsSweep(), AlphaUpdate(prior=(2.0, 1.0))])
    >>> bool(chain.trace["alpha"].std() > 0), chain.sigma_a
    (True, 1.0)
    """

    name = "alpha_update"
    targets = ("alpha",)

    @validated(prior=Checked(_check_gamma_prior))
    def __init__(self, prior=(1.0, 1.0)) -> None:
        self.prior = prior

    def __repr__(self) -> str:
        return f"AlphaUpdate(prior={self.prior})"

    def _start(self, chain: _Chain):
        shape, rate = self.prior

        def step(t, Z, hyper, rng):
            h_n, alpha_max = chain.harmonic_and_alpha_upper(hyper)
            alpha = _draw_alpha(rng, shape + Z.shape[1], rate + h_n, alpha_max)
            return dataclasses.replace(hyper, alpha=alpha), None

        return step


class DiscountUpdate(HyperparameterMove):
    """One slice step on the three-parameter IBP's discount ``d`` given ``Z``, ``alpha`` and
    ``beta``: a move of :func:`run_chain`.

    The step of :func:`ibp_lab.inference.hyperposterior.discount_step`, on the exact
    conditional ``p(d | Z, alpha, beta)`` under a Beta prior. With it in ``moves`` the
    chain's ``discount`` is a starting value (0, the default, starts at the prior's mean)
    and the trace records ``discount``; ``alpha``'s update then uses ``H_N(beta, d)``.

    Parameters
    ----------
    prior : (float, float), optional
        ``(a, b)`` of the Beta prior on ``d``, each > 0; default (1, 1), uniform.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, _, _ = simulate(20, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=4)
    >>> chain = run_chain(X, 10, np.random.default_rng(1), sigma_x=0.3, discount=0.2,
    ...                   moves=[GibbsSweep(), AlphaUpdate(), DiscountUpdate(prior=(2.0, 5.0))])
    >>> bool(((chain.trace["discount"] > 0) & (chain.trace["discount"] < 1)).all())
    True
    """

    name = "discount_update"
    targets = ("discount",)

    @validated(prior=Checked(check_positive_pair))
    def __init__(self, prior=(1.0, 1.0)) -> None:
        self.prior = prior

    def __repr__(self) -> str:
        return f"DiscountUpdate(prior={self.prior})"

    def _start(self, chain: _Chain):
        from ibp_lab.inference import hyperposterior  # imported on use, like every sibling module

        def step(t, Z, hyper, rng):
            discount = hyperposterior.discount_step(Z, rng, discount=hyper.discount,
                                                    alpha=hyper.alpha, beta=hyper.beta,
                                                    discount_prior=self.prior)
            return dataclasses.replace(hyper, discount=discount), None

        return step


def _check_scale_names(name: str, names) -> tuple[str, ...]:
    """``*names`` of :class:`ScaleUpdate`: one or both scales, none twice."""
    if not names:
        raise ValueError("names must hold 'sigma_a', 'sigma_x' or both, as in "
                         "ScaleUpdate('sigma_a'); got none")
    for position, scale in enumerate(names):
        if not isinstance(scale, str) or scale not in SCALES:
            raise ValueError(f"names[{position}] must be 'sigma_a' or 'sigma_x', got {scale!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"names must not repeat a scale, got {names!r}")
    return tuple(names)


class ScaleUpdate(HyperparameterMove):
    """Log-scale random-walk Metropolis steps on ``sigma_a`` and/or ``sigma_x`` given ``Z``:
    a move of :func:`run_chain`.

    Each scale has a HalfNormal(1) prior; ``A`` is integrated out, so a step costs one
    ``K x K`` factorisation. Each chain's step sizes start at 0.1 and adapt towards 44%
    acceptance during its ``burn`` warm-up iterations only (so the kernel is fixed while
    samples are kept); :attr:`ChainResult.acceptance` reports the rate after warm-up and
    the final step size. The object holds only its settings: every chain that uses it
    (:func:`run_chains`) adapts its own step sizes.

    Parameters
    ----------
    *names : str
        The scales moved, ``"sigma_a"``, ``"sigma_x"`` or both. With both, each of the
        ``n_steps`` rounds steps them in the order given: ``ScaleUpdate("sigma_a",
        "sigma_x")`` interleaves them, where the two moves ``ScaleUpdate("sigma_a"),
        ScaleUpdate("sigma_x")`` take all of ``sigma_a``'s steps first (two kernels with
        the same target, and different draws).
    n_steps : int, optional
        Metropolis steps per iteration for each scale, in ``[1, 10000]``; default 3.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, _, _ = simulate(20, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=4)
    >>> chain = run_chain(X, 30, np.random.default_rng(1), sigma_x=0.3, burn=10,
    ...                   moves=[GibbsSweep(), ScaleUpdate("sigma_a", "sigma_x", n_steps=2)])
    >>> sorted(chain.acceptance)
    ['sigma_a', 'sigma_a_step', 'sigma_x', 'sigma_x_step']
    >>> chain.alpha  # no AlphaUpdate: alpha held fixed
    1.0
    """

    name = "scale_update"

    @validated(names=Checked(_check_scale_names),
               n_steps=Count(minimum=1, maximum=_MAX_SCALE_STEPS))
    def __init__(self, *names: str, n_steps: int = 3) -> None:
        self.targets = names
        self.n_steps = n_steps

    def __repr__(self) -> str:
        return f"ScaleUpdate({', '.join(map(repr, self.targets))}, n_steps={self.n_steps})"

    def _start(self, chain: _Chain) -> _ScaleSteps:
        return _ScaleSteps(chain, self.targets, self.n_steps)


class _ScaleSteps:
    """One chain's :class:`ScaleUpdate`: its step sizes and acceptance counts.

    ``n_steps`` rounds per iteration, each one step of every scale in ``names``' order.
    Returns the new hyperparameters and ``log p(X | Z, sigma_x, sigma_a)`` at them.
    """

    def __init__(self, chain: _Chain, names: tuple[str, ...], n_steps: int) -> None:
        self.chain, self.names, self.n_steps = chain, names, n_steps
        self.log_steps = {name: math.log(0.1) for name in names}
        self.accepted = {name: 0 for name in names}
        self.tried = {name: 0 for name in names}

    def __call__(self, t: int, Z: np.ndarray, hyper: Hyperparameters, rng):
        stats = self.chain.stats(Z)  # computed once per iteration
        scale = {"sigma_x": hyper.sigma_x, "sigma_a": hyper.sigma_a}
        log_lik = _kernel.checked_loglik_from_stats(*stats, scale["sigma_x"], scale["sigma_a"])
        data_scale = self.chain.data_scale
        for _ in range(self.n_steps):
            for name in self.names:
                def log_lik_at(value, name=name):
                    sx, sa = (value if name == "sigma_x" else scale["sigma_x"],
                              value if name == "sigma_a" else scale["sigma_a"])
                    # a proposal outside the sampler's accurate range has zero density
                    if not scales_allowed(data_scale, sx, sa):
                        return -math.inf
                    return _kernel.checked_loglik_from_stats(*stats, sx, sa)

                scale[name], log_lik, ok = _metropolis_scale(
                    rng, scale[name], math.exp(self.log_steps[name]), log_lik, log_lik_at)
                self._adapt(t, name, ok)
        hyper = dataclasses.replace(hyper, sigma_x=scale["sigma_x"], sigma_a=scale["sigma_a"])
        return hyper, log_lik

    def _adapt(self, t: int, name: str, ok: bool) -> None:
        if t < self.chain.burn:
            # Robbins-Monro: diminishing adaptation towards 44% acceptance, warm-up only
            self.log_steps[name] += (float(ok) - 0.44) / math.sqrt(t + 1.0)
        else:
            self.accepted[name] += ok
            self.tried[name] += 1

    def acceptance(self) -> dict:
        """Acceptance rate after warm-up and final step size of each scale."""
        # tried > 0: n_steps >= 1 (ScaleUpdate's door) and burn < n_sweeps (run_chain's)
        out = {}
        for name in self.names:
            out[name] = self.accepted[name] / self.tried[name]
            out[f"{name}_step"] = math.exp(self.log_steps[name])
        return out


class _Chain:
    """What a hyperparameter move sees of its chain: the data, ``burn``, and the constants
    of alpha's update, ``H_N(beta, d)`` and the largest alpha accepted."""

    def __init__(self, X: np.ndarray, burn: int) -> None:
        self.X, self.burn, self.n_rows = X, burn, X.shape[0]
        self.sum_sq = float(np.sum(X * X))
        self.data_scale = DataScale.of(X)
        self._last_key, self._last = None, None

    def stats(self, Z: np.ndarray) -> tuple:
        """The sufficient statistics of ``log p(X | Z, sigma_x, sigma_a)``."""
        Zf = Z.astype(np.float64)
        return Zf.T @ Zf, Zf.T @ self.X, self.sum_sq, *self.X.shape

    def log_likelihood(self, Z: np.ndarray, hyper: Hyperparameters) -> float:
        return _kernel.checked_loglik_from_stats(*self.stats(Z), hyper.sigma_x, hyper.sigma_a)

    def harmonic_and_alpha_upper(self, hyper: Hyperparameters) -> tuple[float, float]:
        """``H_N(beta, d)`` and the largest alpha whose prior expects at most
        ``MAX_EXPECTED_FEATURES`` features (:func:`ibp_lab._hyper.alpha_upper` at d = 0).

        Kept for the last ``(beta, d)``: a chain asks three times an iteration, and ``beta``
        never changes (nor ``d`` unless a :class:`DiscountUpdate` moves it)."""
        key = (hyper.beta, hyper.discount)
        if key != self._last_key:
            self._last_key, self._last = key, self._harmonic_and_alpha_upper(hyper)
        return self._last

    def _harmonic_and_alpha_upper(self, hyper: Hyperparameters) -> tuple[float, float]:
        if hyper.discount == 0.0:
            return harmonic(self.n_rows, hyper.beta), alpha_upper(self.n_rows, hyper.beta)
        h_n = stable_harmonic(self.n_rows, hyper.beta, hyper.discount)
        return h_n, min(MAX_PARAMETER, MAX_EXPECTED_FEATURES / h_n)


#: What one iteration of :func:`run_chain` does by default: one Gibbs sweep, alpha's
#: conjugate draw, three Metropolis steps on ``sigma_a`` (the objects hold no chain state).
DEFAULT_MOVES = (GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a"))


def _check_chain_moves(moves, n_sweeps: int) -> tuple:
    """``moves=`` of :func:`run_chain`: at least one move on ``Z``, each hyperparameter
    updated by one move at most, and the split-merge proposals within budget."""
    moves = DEFAULT_MOVES if moves is None else check_moves(moves, MOVES, hyperparameters=True)
    if not any(isinstance(move, Move) for move in moves):
        raise ValueError(f"moves must include a move on Z (for example GibbsSweep()), got "
                         f"{list(moves)!r}")
    updated_by = {}
    for move in moves:
        for target in getattr(move, "targets", ()):
            if target in updated_by:
                raise ValueError(f"moves update {target} twice ({updated_by[target]!r} and "
                                 f"{move!r}): keep one move for each hyperparameter")
            updated_by[target] = move
    _check_proposal_budget(tuple(move for move in moves if isinstance(move, Move)), n_sweeps)
    return moves


def _discount_update(moves: tuple) -> DiscountUpdate | None:
    """The :class:`DiscountUpdate` among the (checked) ``moves``, if any."""
    return next((move for move in moves if isinstance(move, DiscountUpdate)), None)


def _starting_discount(n_rows: int, alpha: float, beta: float, discount, moves: tuple) -> float:
    """The chain's first ``d``: ``discount`` itself if held fixed; if a
    :class:`DiscountUpdate` moves it, inside the Beta prior's support (0 starts at the
    prior's mean)."""
    update = _discount_update(moves)
    if update is None:
        return check_discount(n_rows, alpha, beta, discount)
    if check_positive("discount", discount, allow_zero=True, upper=None) == 0:
        a, b = update.prior
        return check_discount_in_support(min(max(a / (a + b), MIN_DISCOUNT), MAX_DISCOUNT))
    return check_discount_in_support(discount)


def _plan(moves: tuple) -> list:
    """The loop's stages: each run of moves on ``Z`` as a ``slice`` of the moves on ``Z``
    (``K+`` is checked after it), each hyperparameter move as itself."""
    stages, z_index = [], 0
    for move in moves:
        if isinstance(move, Move):
            if stages and isinstance(stages[-1], slice):
                stages[-1] = slice(stages[-1].start, z_index + 1)
            else:
                stages.append(slice(z_index, z_index + 1))
            z_index += 1
        else:
            stages.append(move)
    return stages


def _check_burn(burn, n_sweeps: int) -> int:
    return check_count("burn", burn, maximum=n_sweeps - 1)


@single_blas_thread  # small linear algebra: one BLAS thread (ibp_lab._threads)
@validated(
    X=DataMatrix(),
    n_sweeps=Sweeps(),
    rng=Generator(),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    progress=Flag(),
    pointwise=Flag(),
    thin=Count(minimum=1),
    burn=Joint(_check_burn, "burn", "n_sweeps", sets="burn"),
    moves=Joint(_check_chain_moves, "moves", "n_sweeps", sets="moves"),
    Z0=Optional(Checked(check_feature_matrix, rows_of="X")),
    discount=Joint(_starting_discount, Rows("X"), "alpha", "beta", "discount", "moves",
                   sets="discount"),
)
def run_chain(
    X,
    n_sweeps: int,
    rng: np.random.Generator,
    *,
    moves=None,
    Z0=None,
    alpha: float = 1.0,
    sigma_x: float = 1.0,
    sigma_a: float = 1.0,
    beta: float = 1.0,
    discount: float = 0.0,
    thin: int = 1,
    burn: int = 0,
    pointwise: bool = False,
    progress: bool = False,
) -> ChainResult:
    """Run one chain: each iteration applies the ``moves`` in turn, on ``Z`` and on the
    hyperparameters given ``Z``.

    The default, :data:`DEFAULT_MOVES`, is one :func:`gibbs_sweep`, then a conjugate draw
    of ``alpha`` (:class:`AlphaUpdate`: Gamma(1 + K+, 1 + sum_i beta / (beta + i - 1))),
    then three log-scale random-walk Metropolis steps on ``sigma_a`` (:class:`ScaleUpdate`,
    HalfNormal(1) prior; step sizes start at 0.1 and adapt towards an acceptance rate of
    0.44 during the ``burn`` warm-up sweeps only). A hyperparameter with no move in
    ``moves`` stays fixed at its starting value: ``moves=[GibbsSweep()]`` holds them all.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data, on the scale ``sigma_x`` and ``sigma_a`` assume: standardised
        for the defaults (a :class:`ScaleWarning` before any sweep says when it is far
        off; module docstring).
    n_sweeps : int
        Number of iterations, >= 1.
    rng : numpy.random.Generator
    moves : Move, str or list of them, optional
        What one iteration does, in order. Moves on ``Z`` (:class:`Move` objects:
        :class:`GibbsSweep`, :class:`SequentialSplitMerge`, ``n_proposals=...``,
        :class:`RandomSplitMerge`, :class:`SingletonUpdate`, or their names,
        ``"gibbs_sweep"``, ``"sequential_split_merge"``, ..., with default settings) and
        moves on the hyperparameters (:class:`AlphaUpdate`, :class:`DiscountUpdate`,
        :class:`ScaleUpdate`), at least one on ``Z`` and at most one for each
        hyperparameter; for example ``[GibbsSweep(), SequentialSplitMerge(n_proposals=10),
        AlphaUpdate(prior=(1, 1)), ScaleUpdate("sigma_a", "sigma_x")]``. Default
        :data:`DEFAULT_MOVES`. At most ``10**7`` split-merge proposals per chain.
    Z0 : array_like, optional
        Starting ``Z``; default a single feature owned by every row.
    alpha, sigma_x, sigma_a : float, optional
        Starting (or fixed) hyperparameters, > 0. The defaults, 1, 1 and 1, are those of
        every estimator of the package: ``sigma_x`` and ``sigma_a`` of 1 fit standardised
        data (columns with mean 0 and variance 1). The book's centred digits take
        ``sigma_x=0.25, sigma_a=0.3``.
    beta : float, optional
        IBP concentration, > 0, held fixed.
    discount : float, optional
        The three-parameter IBP's ``d`` in ``[0, 1)`` (default 0, the two-parameter
        IBP): every move then targets the three-parameter posterior, and ``alpha``'s
        conjugate update uses that prior's ``H_N(beta, d)``. Its starting value when a
        :class:`DiscountUpdate` moves it (then in ``[1e-8, 1 - 1e-9]``; 0, the default,
        starts at the mean of that move's prior).
    thin, burn : int, optional
        Keep ``Z`` every ``thin`` iterations after the first ``burn``.
    pointwise : bool, optional
        Keep, for every kept draw, each row's :func:`pointwise_log_likelihood` in
        :attr:`ChainResult.pointwise_log_likelihood` (what ``az.loo`` reads;
        :func:`run_chains` asks for it by default). Its CPU time is left out of
        ``seconds``, which time the sampler alone.
    progress : bool, optional
        Show a tqdm progress bar.

    Returns
    -------
    ChainResult

    Raises
    ------
    ValueError
        Besides bad arguments: when ``K+`` runs away after the moves on ``Z`` (more
        features than ``max(N, 50)`` and than the prior's mean plus ten standard
        deviations), the mark of data on another scale than ``sigma_x`` and ``sigma_a``;
        it names what to do.

    Warns
    -----
    ScaleWarning
        Before any sweep, when ``X``'s scale is far from what ``sigma_x`` and ``sigma_a``
        assume: a column's mean square more than 10 times ``sigma_x^2 + sigma_a^2``, or
        every column's below a tenth of it.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, _, _ = simulate(30, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=6)
    >>> chain = run_chain(X, 50, np.random.default_rng(1), sigma_x=0.3, sigma_a=1.0,
    ...                   burn=20, thin=5)
    >>> sorted(chain.trace.data_vars)
    ['alpha', 'k_plus', 'log_joint', 'log_likelihood', 'sigma_a', 'sigma_x']
    >>> chain.trace.sizes["draw"], len(chain.samples), chain.sample_draws[:3]
    (50, 6, array([20, 25, 30]))

    The same chain with its moves written out, and one that learns ``sigma_x`` too:

    >>> same = run_chain(X, 50, np.random.default_rng(1), sigma_x=0.3, sigma_a=1.0,
    ...                  burn=20, thin=5,
    ...                  moves=[GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a")])
    >>> bool((same.trace["k_plus"] == chain.trace["k_plus"]).all())
    True
    >>> both = run_chain(X, 50, np.random.default_rng(1), sigma_x=0.3, burn=20,
    ...                  moves=[GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a", "sigma_x")])
    >>> sorted(both.acceptance)
    ['sigma_a', 'sigma_a_step', 'sigma_x', 'sigma_x_step']
    """
    Z = np.ones((X.shape[0], 1), np.int8) if Z0 is None else Z0
    discount_update = _discount_update(moves)
    hyper = Hyperparameters(alpha, sigma_x, sigma_a, beta, discount)

    chain = _Chain(X, burn)
    stages = [stage if isinstance(stage, slice) else stage._start(chain) for stage in _plan(moves)]
    record = _Record(n_sweeps, burn, thin, moves, with_discount=(discount_update is not None
                                                                 or hyper.discount > 0),
                     X=X if pointwise else None)
    mismatch = _scale_mismatch(X, hyper.sigma_x, hyper.sigma_a)
    if mismatch:  # every argument has passed its door: warn once, before any sweep
        warnings.warn(mismatch, ScaleWarning, stacklevel=_caller_level())
    iterator = range(n_sweeps)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="iterations")
    record.recorder.start()
    for t in iterator:
        Z, hyper, log_lik = _iteration(t, stages, chain, record, X, Z, hyper, rng)
        record.draw(t, Z, hyper, log_lik, chain.harmonic_and_alpha_upper(hyper)[0])
    acceptance = {}
    for stage in stages:
        acceptance.update(stage.acceptance() if hasattr(stage, "acceptance") else {})
    return record.result(Z, hyper, acceptance)


def _iteration(t: int, stages: list, chain: _Chain, record: _Record, X, Z, hyper, rng):
    """One iteration's stages in turn: ``(Z, hyper, log p(X | Z, sigma_x, sigma_a))``.

    ``K+`` is checked after each run of moves on ``Z``, before any hyperparameter move;
    the log-likelihood a :class:`ScaleUpdate` computed is kept unless ``Z`` or the scales
    change after it."""
    log_lik = None
    for stage in stages:
        if isinstance(stage, slice):
            Z = record.apply_moves(t, X, Z, rng, hyper, stage)
            prior_mean = chain.harmonic_and_alpha_upper(hyper)[0] * hyper.alpha
            _refuse_runaway(t, Z.shape[1], X.shape[0], prior_mean, hyper)
            log_lik = None
        else:
            scales = hyper.sigma_x, hyper.sigma_a
            hyper, computed = stage(t, Z, hyper, rng)
            if computed is not None:
                log_lik = computed
            elif (hyper.sigma_x, hyper.sigma_a) != scales:
                log_lik = None
    if log_lik is None:
        log_lik = chain.log_likelihood(Z, hyper)
    return Z, hyper, log_lik


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the user's call of :func:`run_chain`,
    :func:`run_chains` or an estimator's ``fit``, past this module and the wrappers."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_globals.get("__name__", "").startswith("ibp_lab")
                                 or frame.f_code.co_name == "wrapper"):
        frame, level = frame.f_back, level + 1
    return level


def _refuse_runaway(t: int, k_plus: int, n_rows: int, prior_mean: float, hyper) -> None:
    """A ``ValueError`` when ``K+`` has run away: above ``max(N, 50)`` and above the prior's
    mean plus ten standard deviations (``K+`` is Poisson under the prior). No posterior of
    data on the model's scale needs more features than rows, nor that far into the prior's
    tail; data on a larger scale than ``sigma_x`` and ``sigma_a`` add hundreds per sweep."""
    limit = max(n_rows, 50, prior_mean + 10.0 * math.sqrt(prior_mean))
    if k_plus > limit:
        raise ValueError(
            f"the chain ran away: K+ = {k_plus} features after iteration {t + 1} on "
            f"N = {n_rows} rows (more than {limit:.0f}) at sigma_x = {hyper.sigma_x:.4g}, "
            f"sigma_a = {hyper.sigma_a:.4g}: X is on another scale than these; standardise X "
            "(subtract each column's mean and divide by its standard deviation) or pass "
            "sigma_x and sigma_a of the data's scale")


class _Record:
    """What a chain keeps: a :class:`~ibp_lab.inference._trace.Recorder` of its label-free
    trace, kept ``Z`` and CPU times, plus what only a chain has: the proposals its moves
    accepted, their split-merge stats and the pointwise log-likelihood of kept draws."""

    NAMES = ("k_plus", "alpha", "sigma_x", "sigma_a", "log_likelihood", "log_joint")

    def __init__(self, n_sweeps: int, burn: int, thin: int, moves: tuple, *,
                 with_discount: bool = False, X: np.ndarray | None = None):
        self.all_moves = moves
        self.moves = tuple(move for move in moves if isinstance(move, Move))  # the moves on Z
        self.X, self.pointwise = X, []  # X when the pointwise log-likelihood is kept
        self.keys = move_keys(self.moves)
        names = self.NAMES + (("discount",) if with_discount else ())
        self.recorder = Recorder(n_sweeps, {name: np.int64 if name == "k_plus" else np.float64
                                            for name in names},
                                 {"accepted_moves": np.int64}, burn=burn, thin=thin)
        self.move_stats = {key: [] for key, move in zip(self.keys, self.moves) if move.n_proposals}

    def apply_moves(self, t: int, X, Z, rng, hyper, which: slice):
        """The moves on ``Z`` of the slice ``which``, in turn, keeping the split-merge stats."""
        accepted = self.recorder.values["accepted_moves"]
        for key, move in zip(self.keys[which], self.moves[which]):
            Z, stats = move(X, Z, rng, hyper)
            if key in self.move_stats:
                self.move_stats[key].append(stats)
                accepted[t] += stats["accepted_splits"] + stats["accepted_merges"]
        return Z

    def draw(self, t: int, Z, hyper, log_lik: float, h_n: float) -> None:
        self.recorder.clock(t)
        log_joint = log_lik + _log_prior_class(Z, hyper, h_n)
        values = (Z.shape[1], hyper.alpha, hyper.sigma_x, hyper.sigma_a, log_lik, log_joint,
                  hyper.discount)
        self.recorder.draw(t, Z, **dict(zip(self.recorder.trace_names, values)))
        if self.X is not None and self.recorder.keeps(t):
            with self.recorder.untimed():  # seconds time the sampler alone
                self.pointwise.append(_pointwise_terms(self.X, Z, hyper.sigma_x, hyper.sigma_a))

    def result(self, Z, hyper, acceptance: dict) -> ChainResult:
        record = self.recorder
        trace, sample_stats = record.datasets(
            {"burn": record.burn, "thin": record.thin, "beta": hyper.beta},
            {"moves": ", ".join(map(repr, self.all_moves))})
        pointwise = (np.array(self.pointwise).reshape(len(record.samples), self.X.shape[0])
                     if self.X is not None else None)
        return ChainResult(trace, record.samples, record.kept_draws(), Z, hyper.alpha,
                           hyper.sigma_x, hyper.sigma_a, acceptance, sample_stats,
                           {key: combine_stats(stats) for key, stats in self.move_stats.items()},
                           pointwise)


def _check_proposal_budget(moves: tuple[Move, ...], n_sweeps: int) -> None:
    """Refuse chains whose split-merge stats would hold more than ``MAX_PROPOSALS`` entries."""
    per_iteration = sum(move.n_proposals for move in moves)
    if n_sweeps * per_iteration > MAX_PROPOSALS:
        raise ValueError(
            f"n_sweeps * (split-merge proposals per iteration of moves) must be <= "
            f"{MAX_PROPOSALS:g} per chain, got {n_sweeps} * {per_iteration}")


def _chain_starts(Z0, n_chains: int) -> list:
    """``Z0`` of :func:`run_chains` as one start per chain (each checked by :func:`run_chain`)."""
    one_start = (Z0 is None or not isinstance(Z0, (list, tuple))
                 or (len(Z0) > 0 and np.ndim(Z0[0]) != 2))  # a matrix written as nested lists
    if one_start:
        return [Z0] * n_chains
    starts = list(Z0)
    if len(starts) != n_chains:
        raise ValueError(
            f"Z0 must be one matrix or a list of n_chains = {n_chains} matrices, "
            f"got a list of {len(starts)}"
        )
    return starts


# X and the chain's options: run_chain's door, for each chain
@validated(n_chains=Count(minimum=1, maximum=MAX_CHAINS), pointwise=Flag(), rng=Generator(),
           Z0=Joint(_chain_starts, "Z0", "n_chains", sets="Z0"))
def run_chains(X, n_chains: int, n_sweeps: int, rng: np.random.Generator, *, Z0=None,
               pointwise: bool = True, **options):
    """Run independent chains and collect their traces for ArviZ.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_chains : int
        Number of chains, >= 1.
    n_sweeps : int
        Sweeps per chain.
    rng : numpy.random.Generator
        Parent generator: chain ``c`` uses ``rng.spawn(n_chains)[c]``, so the
        chains are independent and the whole run is reproducible from one seed.
    Z0 : array_like or list of array_like, optional
        One starting ``Z`` for every chain, or a list (or tuple) of matrices,
        one per chain (useful to start chains far apart).
    pointwise : bool, optional
        Add the ``log_likelihood`` group (default), so that ``az.loo``, ``az.waic`` and
        ``az.compare`` take the result: at every kept draw, each row's
        :func:`pointwise_log_likelihood` (module docstring: what the term is). About 5-8%
        of a sweep per kept draw (measured on the digits, wine and breast cancer), left
        out of ``seconds``; ``False`` skips it.
    **options
        Passed to :func:`run_chain`, keyword-only: ``moves`` (what one
        iteration does, default :data:`DEFAULT_MOVES`; for example
        ``moves=[GibbsSweep(), SequentialSplitMerge(n_proposals=10), AlphaUpdate()]``;
        every chain adapts its own step sizes), ``alpha``, ``sigma_x``, ``sigma_a``,
        ``beta``, ``discount``, ``burn``, ``thin``, ``progress`` (defaults and the scale
        warning as there).

    Returns
    -------
    idata : arviz.InferenceData
        ``posterior``: the kept draws of every chain, dims ``(chain, draw)``;
        ``warmup_posterior``: the first ``burn`` draws. Variables as in
        :class:`ChainResult`'s ``trace``. ``sample_stats`` and
        ``warmup_sample_stats``: the same draws of
        :attr:`ChainResult.sample_stats` (``seconds``, ``accepted_moves``).
        ``log_likelihood`` (with ``pointwise``): variable ``x``, dims
        ``(chain, draw, row)``; ``observed_data``: ``x``, dims ``(row, column)``.
    chains : list of ChainResult
        Everything else (full traces, kept ``Z``, final states, move stats).

    Examples
    --------
    >>> import arviz as az
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, _, _ = simulate(30, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=6)
    >>> idata, chains = run_chains(X, 2, 40, np.random.default_rng(1), sigma_x=0.3,
    ...                            sigma_a=1.0, burn=10)
    >>> dict(idata.posterior.sizes)
    {'chain': 2, 'draw': 30}
    >>> rhat = az.rhat(idata, var_names=["k_plus", "log_joint"])

    With split-merge proposals after each sweep, at fixed hyperparameters (no move on
    them):

    >>> idata, chains = run_chains(X, 2, 20, np.random.default_rng(1), sigma_x=0.3,
    ...                            sigma_a=1.0,
    ...                            moves=[GibbsSweep(), SequentialSplitMerge(n_proposals=5)])
    >>> stats = chains[0].move_stats["sequential_split_merge"]
    >>> stats["proposed_splits"] + stats["proposed_merges"] + stats["void"]
    100
    >>> sorted(idata.sample_stats.data_vars)
    ['accepted_moves', 'seconds']

    Leave-one-out cross-validation by ArviZ (PSIS-LOO):

    >>> loo = az.loo(idata, pointwise=True)
    >>> loo.loo_i.shape
    (30,)
    """
    chains = [run_chain(X, n_sweeps, child, Z0=start, pointwise=pointwise, **options)
              for child, start in zip(rng.spawn(n_chains), Z0)]  # Z0: one start per chain
    groups = _log_likelihood_groups(chains, check_data_matrix("X", X)) if pointwise else {}
    idata = collect_runs([(c.trace, c.sample_stats, c.sample_draws) for c in chains],
                         warmup=chains[0].trace.attrs["burn"], **groups)
    return idata, chains


def _log_likelihood_groups(chains: list[ChainResult], X: np.ndarray) -> dict:
    """The ``log_likelihood`` and ``observed_data`` groups: ArviZ's layout for ``az.loo``."""
    terms = np.stack([chain.pointwise_log_likelihood for chain in chains])  # (chain, draw, row)
    coords = {"chain": np.arange(terms.shape[0]), "draw": np.arange(terms.shape[1]),
              "row": np.arange(X.shape[0])}
    return {"log_likelihood": xr.Dataset({"x": (("chain", "draw", "row"), terms)}, coords=coords),
            "observed_data": xr.Dataset({"x": (("row", "column"), X)},
                                        coords={"row": coords["row"],
                                                "column": np.arange(X.shape[1])})}
