"""The mean-field machinery that batch and streaming variational inference share.

The variational family of :mod:`ibp_lab.inference.variational` (Doshi-Velez et al. 2009)
for the linear-Gaussian IBP: ``q(v_k)`` or ``q(pi_k) = Beta(tau_k)``,
``q(A_k) = Normal(phi_k, Phi_k I)`` and ``q(z_nk) = Bernoulli(nu_nk)``. Each block update
is the exact maximiser of the ELBO in its block, read from the prior (batch inference,
:class:`~ibp_lab.inference.variational.VariationalIBP`) or from the last posterior
(:class:`Base`, streaming inference, :func:`ibp_lab.inference.streaming_variational.stream_variational`),
so that one set of updates serves both. The book's chapter "Variational inference"
(``book/11_variational.md``) derives every update and every term of the ELBO.

- :class:`Problem`, :class:`State`, :class:`Base`: the data and settings, ``q``'s
  parameters, and the factors the updates start from.
- :func:`iterate` (the block updates :func:`update_feature`, :func:`update_column`,
  :func:`update_sticks`), :func:`elbo` and :data:`ROUNDING`, the fall of the ELBO
  still put down to rounding.
- :func:`stick_terms`, :func:`prior_log_odds`, :func:`prior_tau`,
  :func:`sample_probabilities`: the two families' expectations, start and draws.
- :func:`beyond_truncation`: the cost of the columns beyond the truncation.
- :func:`rows_fit`, :func:`rows_elbo`: new rows, the global factors held fixed.
- :data:`FAMILIES`, :func:`one_parameter_hyperparameters`, :func:`check_family`,
  :func:`check_q_size`: the checks the two modules' doors share, declared there.

The functions above check no argument: the public doors of the two modules that import
this one check them, with the last three checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, digamma, expit, xlogy

from ibp_lab._checks import check_size
from ibp_lab._hyper import check_hyperparameters

__all__ = [
    "FAMILIES",
    "one_parameter_hyperparameters",
    "check_family",
    "check_q_size",
    "ROUNDING",
    "Base",
    "Problem",
    "State",
    "prior_tau",
    "stick_terms",
    "sample_probabilities",
    "prior_log_odds",
    "update_feature",
    "update_column",
    "update_sticks",
    "iterate",
    "elbo",
    "beyond_truncation",
    "rows_fit",
    "rows_elbo",
]

_LOG_2PI = float(np.log(2 * np.pi))
# Terms of the series for the columns beyond the truncation (ibp_elbo_): the remainder
# after M terms is at most alpha E[pi_K^(M+1)] / M, added as a bound, not dropped.
_SERIES_TERMS = 2000
# Coordinate-ascent passes over the features of a new row in transform and score.
_ROW_PASSES = 50


# --------------------------------------------------------------------------------------
# The checks both doors declare
# --------------------------------------------------------------------------------------

#: The variational families: truncated stick-breaking and finite beta-Bernoulli.
FAMILIES = ("stick_breaking", "finite")


def one_parameter_hyperparameters(X, alpha, sigma_x, sigma_a):
    """``check_hyperparameters`` at ``beta = 1``: the checked alpha, sigma_x and sigma_a."""
    return tuple(check_hyperparameters(X, alpha, sigma_x, sigma_a))[:3]


def check_family(name: str, family) -> str:
    """One of :data:`FAMILIES`, refused in the words of the argument ``name``."""
    if not isinstance(family, str) or family not in FAMILIES:
        raise ValueError(f"{name} must be one of {FAMILIES}, got {family!r}")
    return family


def check_q_size(X: np.ndarray, n_features: int) -> None:
    """Refuse a ``q(Z)`` and residuals too large to hold: ``N (K + D)`` numbers."""
    check_size("q(Z) and the residuals", float(X.shape[0]) * (n_features + X.shape[1]),
               names=("X", "n_features"))


# --------------------------------------------------------------------------------------
# The state and the problem
# --------------------------------------------------------------------------------------

#: Relative size of a fall of the ELBO still put down to rounding.
ROUNDING = 1e-9


@dataclass
class Base:
    """Factors ``q0(A_k) = Normal(mean_k, variance_k I)`` and ``q0(v_k) = Beta(tau_k)``.

    Streaming variational Bayes (Broderick et al. 2013) puts the posterior after the
    rows seen so far where batch inference puts the prior; every block update below
    reads its starting factor from here, so one set of updates serves both.
    """

    mean: np.ndarray  # (K, D)
    variance: np.ndarray  # (K,)
    tau: np.ndarray  # (K, 2)


@dataclass
class Problem:
    """The data, the hyperparameters (variances ``sx2``, ``sa2``), the truncation ``K`` and the
    family: everything the updates read and none of ``q``."""

    X: np.ndarray
    alpha: float
    sx2: float
    sa2: float
    n_features: int
    family: str
    #: The factors each block update starts from: None for the prior (batch inference);
    #: the last posterior in streaming inference (:mod:`ibp_lab.inference.streaming_variational`).
    base: Base | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


@dataclass
class State:
    """The parameters of ``q``, changed in place by the block updates."""

    nu: np.ndarray  # (N, K) q(z_nk = 1)
    phi: np.ndarray  # (K, D) means of q(A_k)
    Phi: np.ndarray  # (K,) variance of each coordinate of A_k under q
    tau: np.ndarray  # (K, 2) Beta parameters of q(v_k) or q(pi_k)
    resid: np.ndarray  # (N, D) X - nu @ phi, kept up to date


def prior_tau(problem: Problem) -> np.ndarray:
    """The prior's Beta parameters, ``(alpha / K, 1)`` (finite) or ``(alpha, 1)`` (sticks)."""
    a = problem.alpha / problem.n_features if problem.family == "finite" else problem.alpha
    return np.tile([a, 1.0], (problem.n_features, 1))


# --------------------------------------------------------------------------------------
# The two families: expectations of log pi and their Beta updates
# --------------------------------------------------------------------------------------


def _log_beta_moments(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``E[log v]`` and ``E[log(1 - v)]`` under ``Beta(tau[:, 0], tau[:, 1])``."""
    total = digamma(tau.sum(axis=1))
    return digamma(tau[:, 0]) - total, digamma(tau[:, 1]) - total


def stick_terms(tau: np.ndarray, y: np.ndarray | None = None):
    """``E[log pi_k]``, the lower bound ``L_k`` on ``E[log(1 - pi_k)]`` and its weights ``y``.

    ``1 - prod_{m<=k} v_m = sum_{m<=k} (1 - v_m) prod_{i<m} v_i``; Jensen's inequality
    with weights ``y_km`` gives ``L_k = log sum_{m<=k} exp(b_m)`` with
    ``b_m = E log(1 - v_m) + sum_{i<m} E log v_i`` at the best ``y_km`` (a softmax of
    ``b_1..b_k``). The chapter derives it. Given weights ``y`` (the tests' fixed-``y``
    bound), ``L_k = sum_m y_km b_m + H(y_k)`` instead.
    """
    e_log_v, e_log_1mv = _log_beta_moments(tau)
    e_log_pi = np.cumsum(e_log_v)
    b = e_log_1mv + np.concatenate([[0.0], e_log_pi[:-1]])
    if y is not None:
        return e_log_pi, y @ b - xlogy(y, y).sum(axis=1), y
    bound = np.logaddexp.accumulate(b)
    K = tau.shape[0]
    lower = np.tril(np.ones((K, K), dtype=bool))
    y = np.where(lower, np.exp(b[None, :] - bound[:, None]), 0.0)  # y[k, m], m <= k
    return e_log_pi, bound, y


def _finite_log_pi(tau: np.ndarray, problem: Problem, y=None):
    return _log_beta_moments(tau)


def _stick_log_pi(tau: np.ndarray, problem: Problem, y=None):
    e_log_pi, bound, _ = stick_terms(tau, y)
    return e_log_pi, bound


def _start_tau(problem: Problem) -> np.ndarray:
    """The Beta parameters the update adds the rows' counts to: prior or ``q0``."""
    return prior_tau(problem) if problem.base is None else problem.base.tau


def _finite_tau(state: State, problem: Problem) -> np.ndarray:
    on = state.nu.sum(axis=0)
    off = problem.shape[0] - on
    return _start_tau(problem) + np.column_stack([on, off])


def _stick_tau(state: State, problem: Problem) -> np.ndarray:
    """Doshi-Velez et al.'s update: the exact maximiser at the current weights ``y``."""
    _, _, y = stick_terms(state.tau)
    on = state.nu.sum(axis=0)
    off = problem.shape[0] - on
    # tail[k] = sum_{m >= k} of a per-column quantity
    tail = lambda values: np.cumsum(values[::-1])[::-1]  # noqa: E731
    # sum_{m > k} off_m sum_{i = k+1}^{m} y_mi: y's columns summed from k + 1 up
    y_after = np.cumsum(y[:, ::-1], axis=1)[:, ::-1]  # y_after[m, k] = sum_{i >= k} y_mi
    shifted = np.concatenate([y_after[:, 1:], np.zeros((y.shape[0], 1))], axis=1)
    tau1 = tail(on) + (off[:, None] * np.tril(shifted)).sum(axis=0)
    tau2 = (off[:, None] * y).sum(axis=0)
    return _start_tau(problem) + np.column_stack([tau1, tau2])


#: family -> (E[log pi_k] and E[log(1 - pi_k)] or its bound; the Beta block update)
_FAMILY = {
    "finite": (_finite_log_pi, _finite_tau),
    "stick_breaking": (_stick_log_pi, _stick_tau),
}


def sample_probabilities(tau: np.ndarray, family: str, n_draws: int,
                         rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, K)`` draws of ``(pi_1, ..., pi_K)`` from ``q(v)`` or ``q(pi)``."""
    v = rng.beta(tau[:, 0], tau[:, 1], size=(n_draws, tau.shape[0]))
    return np.cumprod(v, axis=1) if family == "stick_breaking" else v


def prior_log_odds(tau: np.ndarray, problem: Problem) -> np.ndarray:
    e_on, e_off = _FAMILY[problem.family][0](tau, problem)
    return e_on - e_off


# --------------------------------------------------------------------------------------
# Block updates (each the exact maximiser of the ELBO in its block)
# --------------------------------------------------------------------------------------


def update_feature(k: int, state: State, problem: Problem) -> None:
    """``q(A_k)``: precision ``1/sigma_a^2 + sum_n nu_nk / sigma_x^2`` in every pixel."""
    nu_k = state.nu[:, k]
    others = state.resid + np.outer(nu_k, state.phi[k])  # x_n - sum_{l != k} nu_nl phi_l
    base = problem.base
    if base is None:
        state.Phi[k] = 1.0 / (1.0 / problem.sa2 + nu_k.sum() / problem.sx2)
        state.phi[k] = state.Phi[k] / problem.sx2 * (nu_k @ others)
    else:  # the same update, from q0(A_k) instead of the prior
        state.Phi[k] = 1.0 / (1.0 / base.variance[k] + nu_k.sum() / problem.sx2)
        state.phi[k] = state.Phi[k] * (base.mean[k] / base.variance[k]
                                       + (nu_k @ others) / problem.sx2)
    state.resid = others - np.outer(nu_k, state.phi[k])


def update_column(k: int, state: State, problem: Problem, log_odds: np.ndarray) -> None:
    """``nu_{., k}``: the rows are independent given everything else."""
    others = state.resid + np.outer(state.nu[:, k], state.phi[k])
    D = problem.shape[1]
    fit = (others @ state.phi[k]
           - 0.5 * (D * state.Phi[k] + state.phi[k] @ state.phi[k])) / problem.sx2
    state.nu[:, k] = expit(log_odds[k] + fit)
    state.resid = others - np.outer(state.nu[:, k], state.phi[k])


def update_sticks(state: State, problem: Problem) -> None:
    """The Beta parameters ``tau`` of every column, by the family's update."""
    state.tau = _FAMILY[problem.family][1](state, problem)


def iterate(state: State, problem: Problem, on_block=None) -> None:
    """One iteration: for each feature ``q(A_k)`` then ``nu_{., k}``; then the Betas."""
    log_odds = prior_log_odds(state.tau, problem)
    for k in range(problem.n_features):
        update_feature(k, state, problem)
        if on_block:
            on_block(f"A_{k}")
        update_column(k, state, problem, log_odds)
        if on_block:
            on_block(f"z_{k}")
    update_sticks(state, problem)
    if on_block:
        on_block("pi")


# --------------------------------------------------------------------------------------
# The ELBO
# --------------------------------------------------------------------------------------


def _bernoulli_entropy(p: np.ndarray) -> float:
    return float(-(xlogy(p, p) + xlogy(1 - p, 1 - p)).sum())


def _expected_loglik(state: State, problem: Problem) -> float:
    """``E_q log p(X | Z, A)``: the residual plus the variance of ``sum_k z_k A_k``."""
    N, D = problem.shape
    sq_phi = (state.phi**2).sum(axis=1)
    spread = (state.nu * (1 - state.nu)) @ sq_phi + D * state.nu @ state.Phi
    return float(-0.5 * N * D * (_LOG_2PI + np.log(problem.sx2))
                 - 0.5 * ((state.resid**2).sum() + spread.sum()) / problem.sx2)


def _feature_terms(state: State, problem: Problem) -> float:
    """``E_q log p(A) + H[q(A)]``, or ``-KL(q(A) || q0(A))`` from a streaming base."""
    D = problem.shape[1]
    if problem.base is not None:
        ratio = state.Phi / problem.base.variance
        shift = ((state.phi - problem.base.mean) ** 2).sum(axis=1) / problem.base.variance
        return float(-0.5 * (D * (ratio - 1.0 - np.log(ratio)) + shift).sum())
    sq_phi = (state.phi**2).sum(axis=1)
    log_prior = -0.5 * D * (_LOG_2PI + np.log(problem.sa2)) - 0.5 * (
        D * state.Phi + sq_phi) / problem.sa2
    entropy = 0.5 * D * (_LOG_2PI + 1.0 + np.log(state.Phi))
    return float((log_prior + entropy).sum())


def _stick_prior_terms(state: State, problem: Problem, y=None) -> float:
    """``E_q log p(pi) + E_q log p(Z | pi) + H[q(pi)] + H[q(Z)]``."""
    e_on, e_off = _FAMILY[problem.family][0](state.tau, problem, y)
    z_terms = state.nu @ e_on + (1 - state.nu) @ e_off
    return float(-_beta_kl(state.tau, _start_tau(problem)).sum() + z_terms.sum()
                 + _bernoulli_entropy(state.nu))


def _beta_kl(tau: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``KL(Beta(tau_k) || Beta(start_k))`` per row: ``-(E_q log p(v_k) + H[q(v_k)])``.

    Written as a KL rather than as the prior's expectation plus the entropy: with a tiny
    ``a = start_k0`` (``alpha / K`` below about 1e-15) each of those two holds a term near
    ``(1 - a) / tau_k0``, of order 1/a, that the other cancels, and the sum lost whole
    nats to rounding (the fit's ELBO then fell between iterations). Here the same
    quantity is ``(tau_k0 - a) psi(tau_k0)`` and the like, which stay of order one.
    """
    a1, b1 = tau[:, 0], tau[:, 1]
    a0, b0 = start[:, 0], start[:, 1]
    total = digamma(a1 + b1)
    return (betaln(a0, b0) - betaln(a1, b1) + (a1 - a0) * (digamma(a1) - total)
            + (b1 - b0) * (digamma(b1) - total))


def elbo(state: State, problem: Problem, y=None) -> float:
    """The ELBO; for the stick-breaking family at the best ``y`` unless ``y`` is given."""
    return (_expected_loglik(state, problem) + _feature_terms(state, problem)
            + _stick_prior_terms(state, problem, y))


def beyond_truncation(tau: np.ndarray, alpha: float, n_rows: int) -> float:
    """A lower bound on ``N sum_{k > K} E log(1 - pi_k)`` with ``v_k ~ Beta(alpha, 1)``.

    ``E log(1 - pi) = -sum_j E[pi^j] / j`` and ``sum_{k > K} E[pi_k^j] = E_q[pi_K^j]
    alpha / j``, so the sum is ``-N alpha sum_j E_q[pi_K^j] / j^2``; the terms after
    :data:`_SERIES_TERMS` are bounded by ``alpha E_q[pi_K^(M+1)] / M``.
    """
    j = np.arange(1, _SERIES_TERMS + 2, dtype=float)
    log_moments = (betaln(tau[:, 0][None] + j[:, None], tau[:, 1][None])
                   - betaln(tau[:, 0], tau[:, 1])[None]).sum(axis=1)
    moments = np.exp(log_moments)
    series = (moments[:-1] / j[:-1] ** 2).sum() + moments[-1] / _SERIES_TERMS
    return float(-n_rows * alpha * series)


# --------------------------------------------------------------------------------------
# New rows: their own coordinate ascent, the global factors fixed
# --------------------------------------------------------------------------------------


def rows_fit(X_new: np.ndarray, state: State, problem: Problem) -> np.ndarray:
    """``nu`` of new rows given ``q(A)`` and ``q(pi)``, by passes over the features."""
    log_odds = prior_log_odds(state.tau, problem)
    D = problem.shape[1]
    nu = np.full((X_new.shape[0], problem.n_features), 0.5)
    resid = X_new - nu @ state.phi
    cost = 0.5 * (D * state.Phi + (state.phi**2).sum(axis=1)) / problem.sx2
    for _ in range(_ROW_PASSES):
        before = nu.copy()
        for k in range(problem.n_features):
            others = resid + np.outer(nu[:, k], state.phi[k])
            nu[:, k] = expit(log_odds[k] + others @ state.phi[k] / problem.sx2 - cost[k])
            resid = others - np.outer(nu[:, k], state.phi[k])
        if np.max(np.abs(nu - before)) < 1e-10:
            break
    return nu


def rows_elbo(X_new: np.ndarray, nu: np.ndarray, state: State, problem: Problem) -> np.ndarray:
    """Each new row's local ELBO: a lower bound on its log predictive density under ``q``."""
    D = X_new.shape[1]
    e_on, e_off = _FAMILY[problem.family][0](state.tau, problem)
    resid = X_new - nu @ state.phi
    sq_phi = (state.phi**2).sum(axis=1)
    spread = (nu * (1 - nu)) @ sq_phi + D * nu @ state.Phi
    loglik = -0.5 * D * (_LOG_2PI + np.log(problem.sx2)) - 0.5 * (
        (resid**2).sum(axis=1) + spread) / problem.sx2
    prior = nu @ e_on + (1 - nu) @ e_off
    entropy = -(xlogy(nu, nu) + xlogy(1 - nu, 1 - nu)).sum(axis=1)
    return loglik + prior + entropy

