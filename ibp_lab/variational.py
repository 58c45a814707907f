"""Mean-field variational inference for the linear-Gaussian IBP (Doshi-Velez et al. 2009).

The model is the one of :mod:`ibp_lab.linear_gaussian`: ``X = Z A + E`` with
``A_k ~ Normal(0, sigma_a^2 I)`` and ``E ~ Normal(0, sigma_x^2 I)``, and ``Z``
drawn from the one-parameter IBP (``beta = 1``) through one of two finite
families with ``K = n_features`` columns:

- ``"stick_breaking"``: the IBP's stick-breaking construction truncated at
  ``K``: ``v_k ~ Beta(alpha, 1)``, ``pi_k = prod_{m <= k} v_m``;
- ``"finite"``: the finite beta-Bernoulli model, ``pi_k ~ Beta(alpha / K, 1)``.

In both, ``z_nk ~ Bernoulli(pi_k)``. The variational posterior factorises as
``q(v or pi) q(A) q(Z)``: ``q(v_k) = Beta(tau_k1, tau_k2)``,
``q(A_k) = Normal(phi_k, Phi_k I)`` and ``q(z_nk) = Bernoulli(nu_nk)``.
Coordinate ascent updates one block at a time to its exact maximiser:
``q(A_k)`` and the column ``nu_{., k}`` in closed form, and the Beta
parameters in closed form (for the stick-breaking family, at fixed auxiliary
weights ``y`` of the lower bound on ``E[log(1 - prod_m v_m)]``, which are then
re-optimised; both steps raise the bound). The book's chapter "Variational
inference" (``book/11_variational.md``) derives every update and every term
of the evidence lower bound (ELBO).

- :class:`VariationalIBP`: the estimator (scikit-learn conventions: ``fit``
  returns the estimator, fitted attributes end in ``_``).
- :func:`finite_log_evidence`: the exact log evidence of the finite model with
  ``K`` columns on tiny data (the number the finite family's ELBO bounds);
  :func:`ibp_lab.exact.log_evidence` is the IBP's.
- :data:`FAMILIES`: the two family names.

The stick-breaking family's ELBO bounds the truncated model's evidence.
:attr:`VariationalIBP.ibp_elbo_` adds the exact cost of the columns beyond
``K`` (kept empty by ``q``), so that it bounds the untruncated IBP's
``log p(X)``, the number :func:`ibp_lab.exact.log_evidence` computes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, digamma, expit, logsumexp, xlogy
from sklearn.base import BaseEstimator, TransformerMixin

from ibp_lab._checks import (
    NotFittedError,
    check_count,
    check_data_matrix,
    check_positive,
    check_rng,
    check_size,
)
from ibp_lab._estimator import DEFAULT_RNG, estimator_generator, estimator_rows
from ibp_lab._hyper import MAX_FEATURES, check_hyperparameters

__all__ = ["FAMILIES", "VariationalIBP", "finite_log_evidence"]

#: The variational families: truncated stick-breaking and finite beta-Bernoulli.
FAMILIES = ("stick_breaking", "finite")
_LOG_2PI = float(np.log(2 * np.pi))
# Terms of the series for the columns beyond the truncation (ibp_elbo_): the remainder
# after M terms is at most alpha E[pi_K^(M+1)] / M, added as a bound, not dropped.
_SERIES_TERMS = 2000
# Coordinate-ascent passes over the features of a new row in transform and score.
_ROW_PASSES = 50


# --------------------------------------------------------------------------------------
# The state and the problem
# --------------------------------------------------------------------------------------

#: Relative size of a fall of the ELBO still put down to rounding.
_ROUNDING = 1e-9

@dataclass
class _Base:
    """Factors ``q0(A_k) = Normal(mean_k, variance_k I)`` and ``q0(v_k) = Beta(tau_k)``.

    Streaming variational Bayes (Broderick et al. 2013) puts the posterior after the
    rows seen so far where batch inference puts the prior; every block update below
    reads its starting factor from here, so one set of updates serves both.
    """

    mean: np.ndarray  # (K, D)
    variance: np.ndarray  # (K,)
    tau: np.ndarray  # (K, 2)


@dataclass
class _Problem:
    X: np.ndarray
    alpha: float
    sx2: float
    sa2: float
    n_features: int
    family: str
    #: The factors each block update starts from: None for the prior (batch inference);
    #: the last posterior in streaming inference (:mod:`ibp_lab.streaming_variational`).
    base: _Base | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


@dataclass
class _State:
    nu: np.ndarray  # (N, K) q(z_nk = 1)
    phi: np.ndarray  # (K, D) means of q(A_k)
    Phi: np.ndarray  # (K,) variance of each coordinate of A_k under q
    tau: np.ndarray  # (K, 2) Beta parameters of q(v_k) or q(pi_k)
    resid: np.ndarray  # (N, D) X - nu @ phi, kept up to date


def _prior_tau(problem: _Problem) -> np.ndarray:
    a = problem.alpha / problem.n_features if problem.family == "finite" else problem.alpha
    return np.tile([a, 1.0], (problem.n_features, 1))


def _initial_state(problem: _Problem, rng: np.random.Generator) -> _State:
    N, D = problem.shape
    K = problem.n_features
    # Random responsibilities break the symmetry between the K columns; phi = 0, so the
    # first block update of q(A_k) starts from the data.
    nu = rng.random((N, K))
    state = _State(nu, np.zeros((K, D)), np.full(K, problem.sa2), _prior_tau(problem),
                   problem.X.copy())
    if problem.family == "finite":
        # q(pi) from the random start, not the prior: at Beta(alpha / K, 1) the first
        # update of q(Z) would switch off nearly every feature at once (E log pi_k is
        # about -K / alpha); the sticks' prior Beta(alpha, 1) has no such pull
        _update_sticks(state, problem)
    return state


# --------------------------------------------------------------------------------------
# The two families: expectations of log pi and their Beta updates
# --------------------------------------------------------------------------------------


def _log_beta_moments(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``E[log v]`` and ``E[log(1 - v)]`` under ``Beta(tau[:, 0], tau[:, 1])``."""
    total = digamma(tau.sum(axis=1))
    return digamma(tau[:, 0]) - total, digamma(tau[:, 1]) - total


def _stick_terms(tau: np.ndarray, y: np.ndarray | None = None):
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


def _finite_log_pi(tau: np.ndarray, problem: _Problem, y=None):
    return _log_beta_moments(tau)


def _stick_log_pi(tau: np.ndarray, problem: _Problem, y=None):
    e_log_pi, bound, _ = _stick_terms(tau, y)
    return e_log_pi, bound


def _start_tau(problem: _Problem) -> np.ndarray:
    """The Beta parameters the update adds the rows' counts to: prior or ``q0``."""
    return _prior_tau(problem) if problem.base is None else problem.base.tau


def _finite_tau(state: _State, problem: _Problem) -> np.ndarray:
    on = state.nu.sum(axis=0)
    off = problem.shape[0] - on
    return _start_tau(problem) + np.column_stack([on, off])


def _stick_tau(state: _State, problem: _Problem) -> np.ndarray:
    """Doshi-Velez et al.'s update: the exact maximiser at the current weights ``y``."""
    _, _, y = _stick_terms(state.tau)
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


def _sample_probabilities(tau: np.ndarray, family: str, n_draws: int,
                          rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, K)`` draws of ``(pi_1, ..., pi_K)`` from ``q(v)`` or ``q(pi)``."""
    v = rng.beta(tau[:, 0], tau[:, 1], size=(n_draws, tau.shape[0]))
    return np.cumprod(v, axis=1) if family == "stick_breaking" else v


def _prior_log_odds(tau: np.ndarray, problem: _Problem) -> np.ndarray:
    e_on, e_off = _FAMILY[problem.family][0](tau, problem)
    return e_on - e_off


# --------------------------------------------------------------------------------------
# Block updates (each the exact maximiser of the ELBO in its block)
# --------------------------------------------------------------------------------------


def _update_feature(k: int, state: _State, problem: _Problem) -> None:
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


def _update_column(k: int, state: _State, problem: _Problem, log_odds: np.ndarray) -> None:
    """``nu_{., k}``: the rows are independent given everything else."""
    others = state.resid + np.outer(state.nu[:, k], state.phi[k])
    D = problem.shape[1]
    fit = (others @ state.phi[k]
           - 0.5 * (D * state.Phi[k] + state.phi[k] @ state.phi[k])) / problem.sx2
    state.nu[:, k] = expit(log_odds[k] + fit)
    state.resid = others - np.outer(state.nu[:, k], state.phi[k])


def _update_sticks(state: _State, problem: _Problem) -> None:
    state.tau = _FAMILY[problem.family][1](state, problem)


def _iterate(state: _State, problem: _Problem, on_block=None) -> None:
    """One iteration: for each feature ``q(A_k)`` then ``nu_{., k}``; then the Betas."""
    log_odds = _prior_log_odds(state.tau, problem)
    for k in range(problem.n_features):
        _update_feature(k, state, problem)
        if on_block:
            on_block(f"A_{k}")
        _update_column(k, state, problem, log_odds)
        if on_block:
            on_block(f"z_{k}")
    _update_sticks(state, problem)
    if on_block:
        on_block("pi")


# --------------------------------------------------------------------------------------
# The ELBO
# --------------------------------------------------------------------------------------


def _bernoulli_entropy(p: np.ndarray) -> float:
    return float(-(xlogy(p, p) + xlogy(1 - p, 1 - p)).sum())


def _expected_loglik(state: _State, problem: _Problem) -> float:
    """``E_q log p(X | Z, A)``: the residual plus the variance of ``sum_k z_k A_k``."""
    N, D = problem.shape
    sq_phi = (state.phi**2).sum(axis=1)
    spread = (state.nu * (1 - state.nu)) @ sq_phi + D * state.nu @ state.Phi
    return float(-0.5 * N * D * (_LOG_2PI + np.log(problem.sx2))
                 - 0.5 * ((state.resid**2).sum() + spread.sum()) / problem.sx2)


def _feature_terms(state: _State, problem: _Problem) -> float:
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


def _stick_prior_terms(state: _State, problem: _Problem, y=None) -> float:
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


def _elbo(state: _State, problem: _Problem, y=None) -> float:
    """The ELBO; for the stick-breaking family at the best ``y`` unless ``y`` is given."""
    return (_expected_loglik(state, problem) + _feature_terms(state, problem)
            + _stick_prior_terms(state, problem, y))


def _beyond_truncation(tau: np.ndarray, alpha: float, n_rows: int) -> float:
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


def _rows_fit(X_new: np.ndarray, state: _State, problem: _Problem) -> np.ndarray:
    """``nu`` of new rows given ``q(A)`` and ``q(pi)``, by passes over the features."""
    log_odds = _prior_log_odds(state.tau, problem)
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


def _rows_elbo(X_new: np.ndarray, nu: np.ndarray, state: _State, problem: _Problem) -> np.ndarray:
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


# --------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------


class VariationalIBP(TransformerMixin, BaseEstimator):
    """Mean-field variational inference for the linear-Gaussian IBP (``beta = 1``).

    A scikit-learn transformer: the parameters are keyword-only, each with a default;
    ``__init__`` only stores them and :meth:`fit` checks them. It passes scikit-learn's
    ``check_estimator``.

    Parameters
    ----------
    alpha : float, optional
        IBP mass, > 0 (default 1).
    sigma_x, sigma_a : float, optional
        Noise and feature standard deviations, > 0 (default 1).
    n_features : int, optional
        Truncation ``K``: columns of the variational family, 1 to 2500.
    family : {"stick_breaking", "finite"}, optional
        Truncated stick-breaking prior (``v_k ~ Beta(alpha, 1)``) or finite
        beta-Bernoulli prior (``pi_k ~ Beta(alpha / K, 1)``).
    max_iter : int, optional
        Most iterations (each updates every block once), >= 1.
    tol : float, optional
        Stop when an iteration raises the ELBO by less than ``tol`` nats, >= 0.
    rng : numpy.random.Generator, int or None, optional
        Draws the random start of ``q(Z)``, read by
        :func:`ibp_lab._estimator.estimator_generator` as in
        :class:`~ibp_lab.streaming.RecursiveIBP`: default ``0``
        (:data:`ibp_lab._estimator.DEFAULT_RNG`, so that a default fit is reproducible),
        an ``int`` seeds a new generator, a Generator is copied (the parameter itself never
        advances, so the same parameters give the same fit), ``None`` takes fresh entropy.

    Attributes
    ----------
    elbo_ : numpy.ndarray
        ELBO after each iteration (non-decreasing).
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the last increase was below ``tol``. A fall of the ELBO beyond rounding
        stops the fit with a ``RuntimeWarning`` and ``converged_ = False``.
    features_ : numpy.ndarray
        ``(K, D)`` means ``phi_k`` of ``q(A_k)``.
    feature_variances_ : numpy.ndarray
        ``(K,)`` variance ``Phi_k`` of every coordinate of ``A_k`` under ``q``.
    feature_probabilities_ : numpy.ndarray
        ``(N, K)`` ``q(z_nk = 1)``.
    tau_ : numpy.ndarray
        ``(K, 2)`` Beta parameters of ``q(v_k)`` (stick-breaking) or ``q(pi_k)``.
    prior_probabilities_ : numpy.ndarray
        ``(K,)`` ``E_q[pi_k]``: the probability that a new row owns feature ``k``.
    ibp_elbo_ : float
        Stick-breaking family only: the last ELBO plus a lower bound on the cost of
        the columns beyond ``K`` (which ``q`` keeps empty), a lower bound on the
        untruncated IBP's ``log p(X)``.
    n_features_in_ : int
        ``D``.

    Examples
    --------
    >>> from ibp_lab.datasets import simulate_four_feature_data
    >>> from ibp_lab.summaries import match_features
    >>> X, Z, A = simulate_four_feature_data(np.random.default_rng(0), sigma_x=0.2)
    >>> vi = VariationalIBP(alpha=1.0, sigma_x=0.2, sigma_a=1.0, n_features=6,
    ...                     rng=np.random.default_rng(1))
    >>> vi = vi.fit(X)
    >>> vi.features_.shape, vi.feature_probabilities_.shape
    ((6, 36), (100, 6))
    >>> bool(np.all(np.diff(vi.elbo_) >= 0))  # coordinate ascent never goes down
    True
    >>> vi.prior_probabilities_.shape  # E_q[pi_k]: a new row's chance of each feature
    (6,)
    """

    def __init__(self, *, alpha: float = 1.0, sigma_x: float = 1.0, sigma_a: float = 1.0,
                 n_features: int = 10, family: str = "stick_breaking", max_iter: int = 200,
                 tol: float = 1e-6, rng: np.random.Generator | int | None = DEFAULT_RNG) -> None:
        self.alpha = alpha
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.n_features = n_features
        self.family = family
        self.max_iter = max_iter
        self.tol = tol
        self.rng = rng

    # ------------------------------------------------------------------ the one door

    def _problem(self, X) -> _Problem:
        X = estimator_rows(self, X)
        hyper = check_hyperparameters(X, self.alpha, self.sigma_x, self.sigma_a)
        n_features = check_count("n_features", self.n_features, minimum=1,
                                 maximum=MAX_FEATURES)
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        check_size("q(Z) and the residuals", float(X.shape[0]) * (n_features + X.shape[1]),
                   names=("X", "n_features"))
        return _Problem(X, hyper.alpha, hyper.sigma_x**2, hyper.sigma_a**2, n_features,
                        self.family)

    def _generator(self) -> np.random.Generator:
        return estimator_generator(self.rng)

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y=None) -> VariationalIBP:
        """Run coordinate ascent from a random start; ``y`` is ignored.

        Parameters
        ----------
        X : array_like
            ``(N, D)`` data.

        Returns
        -------
        VariationalIBP
            ``self``, fitted.
        """
        problem = self._problem(X)
        max_iter = check_count("max_iter", self.max_iter, minimum=1, maximum=10**6)
        tol = check_positive("tol", self.tol, allow_zero=True)
        state = _initial_state(problem, self._generator())
        elbo = []
        self.converged_ = False
        for _ in range(max_iter):
            _iterate(state, problem)
            elbo.append(_elbo(state, problem))
            if len(elbo) > 1:
                change = elbo[-1] - elbo[-2]
                if change < -_ROUNDING * (1.0 + abs(elbo[-2])):
                    # each block update maximises the ELBO: a fall is a numerical failure,
                    # not convergence (third audit: a 0.26-nat fall reported as converged)
                    warnings.warn(f"the ELBO fell by {-change:.3g} nats at iteration "
                                  f"{len(elbo)}: stopped, converged_ is False",
                                  RuntimeWarning, stacklevel=2)
                    break
                if change < tol:
                    self.converged_ = True
                    break
        self._state, self._fitted = state, problem
        self.elbo_ = np.array(elbo)
        self.n_iter_ = len(elbo)
        self.n_features_in_ = problem.shape[1]
        return self

    def _check_fitted(self, name: str) -> None:
        if not hasattr(self, "_state"):
            raise NotFittedError(f"{name} needs a fitted VariationalIBP: call fit(X) first")

    # ------------------------------------------------------------------ fitted results

    @property
    def features_(self) -> np.ndarray:
        self._check_fitted("features_")
        return self._state.phi.copy()

    @property
    def feature_variances_(self) -> np.ndarray:
        self._check_fitted("feature_variances_")
        return self._state.Phi.copy()

    @property
    def feature_probabilities_(self) -> np.ndarray:
        self._check_fitted("feature_probabilities_")
        return self._state.nu.copy()

    @property
    def tau_(self) -> np.ndarray:
        self._check_fitted("tau_")
        return self._state.tau.copy()

    @property
    def prior_probabilities_(self) -> np.ndarray:
        self._check_fitted("prior_probabilities_")
        mean_v = self._state.tau[:, 0] / self._state.tau.sum(axis=1)
        return np.cumprod(mean_v) if self._fitted.family == "stick_breaking" else mean_v

    @property
    def ibp_elbo_(self) -> float:
        self._check_fitted("ibp_elbo_")
        if self._fitted.family != "stick_breaking":
            raise ValueError(
                "ibp_elbo_ needs family='stick_breaking': the finite family approximates "
                "the finite model, whose evidence is finite_log_evidence, not the IBP's")
        return float(self.elbo_[-1] + _beyond_truncation(
            self._state.tau, self._fitted.alpha, self._fitted.shape[0]))

    def k_plus_distribution(self) -> np.ndarray:
        """The law of ``K+`` under ``q``: column ``k`` is non-empty with probability
        ``1 - prod_n (1 - nu_nk)``, independently of the others (Poisson-binomial).

        Returns
        -------
        numpy.ndarray
            ``(K + 1,)`` with entry ``k`` the probability that ``K+ = k``.

        Examples
        --------
        >>> vi = VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=3,
        ...                     rng=np.random.default_rng(0))
        >>> p = vi.fit([[1.0, 0.0], [0.0, 1.0]]).k_plus_distribution()
        >>> p.shape, bool(np.isclose(p.sum(), 1.0))
        ((4,), True)
        """
        self._check_fitted("k_plus_distribution")
        used = -np.expm1(np.log1p(-np.minimum(self._state.nu, 1.0)).sum(axis=0))
        pmf = np.array([1.0])
        for p in used:
            pmf = np.convolve(pmf, [1.0 - p, p])
        return pmf

    def stick_bound_slack(self, n_draws: int, rng: np.random.Generator) -> tuple[float, float]:
        """How much the ELBO loses to the stick bound, by Monte Carlo, with its standard error.

        The stick-breaking ELBO replaces each ``E_q log(1 - pi_k)`` by the lower bound
        ``L_k`` of the chapter's stick bound, and weighs it by ``sum_n (1 - nu_nk)``.
        The slack is ``sum_k sum_n (1 - nu_nk) (E_q log(1 - pi_k) - L_k) >= 0``: the
        expectation is estimated from ``n_draws`` draws of :meth:`sample_feature_probabilities`,
        the standard error from the same draws. The finite family's expectation is exact,
        so its slack is 0.

        Parameters
        ----------
        n_draws : int
            Monte Carlo draws of the sticks, >= 2.
        rng : numpy.random.Generator

        Returns
        -------
        (float, float)
            The slack in nats and its Monte Carlo standard error.

        Examples
        --------
        >>> vi = VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=3,
        ...                     rng=np.random.default_rng(0)).fit([[1.0, 0.0], [0.0, 1.0]])
        >>> slack, se = vi.stick_bound_slack(20_000, np.random.default_rng(1))
        >>> bool(slack > -3 * se)
        True
        """
        self._check_fitted("stick_bound_slack")
        n_draws = check_count("n_draws", n_draws, minimum=2)
        rng = check_rng(rng)
        if self._fitted.family != "stick_breaking":
            return 0.0, 0.0
        pi = self.sample_feature_probabilities(n_draws, rng)
        # pi < 1 in exact arithmetic; a Beta draw can round to 1, whose log(1 - pi) is -inf
        log_off = np.log1p(-np.minimum(pi, np.nextafter(1.0, 0.0)))
        _, bound, _ = _stick_terms(self._state.tau)
        weight = (1.0 - self._state.nu).sum(axis=0)
        per_draw = (log_off - bound) @ weight
        return float(per_draw.mean()), float(per_draw.std(ddof=1) / np.sqrt(n_draws))

    def sample_feature_probabilities(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of ``(pi_1, ..., pi_K)`` from ``q``.

        Under the stick-breaking family the ``pi_k`` share their sticks, so a new
        row's features are dependent under ``q``; averaging over these draws keeps
        that dependence (the finite family's ``pi_k`` are independent, and
        :attr:`prior_probabilities_` alone gives a new row's law exactly).

        Parameters
        ----------
        n_draws : int
            Number of draws, >= 1.
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray
            ``(n_draws, K)``.
        """
        self._check_fitted("sample_feature_probabilities")
        n_draws = check_count("n_draws", n_draws, minimum=1)
        rng = check_rng(rng)
        check_size("the draws", float(n_draws) * self._fitted.n_features, names="n_draws")
        return _sample_probabilities(self._state.tau, self._fitted.family, n_draws, rng)

    def predictive_draws(self, n_draws: int, rng: np.random.Generator):
        """The arguments of :func:`ibp_lab.heldout.finite_feature_heldout` for ``q``.

        Under ``q`` a new row owns feature ``k`` with probability ``pi_k`` (drawn by
        :meth:`sample_feature_probabilities`) and, given its pattern ``z``, is
        ``Normal(z phi, (sigma_x^2 + sum_k z_k Phi_k) I)`` exactly, because the
        ``A_k`` are independent Gaussians under ``q``.

        Returns
        -------
        probabilities : numpy.ndarray
            ``(n_draws, K)``.
        features : numpy.ndarray
            ``(n_draws, K, D)``, the same means in every draw.
        feature_variances : numpy.ndarray
            ``(n_draws, K)``.

        Examples
        --------
        >>> vi = VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2,
        ...                     rng=np.random.default_rng(0))
        >>> p, A, v = vi.fit(np.eye(3)).predictive_draws(5, np.random.default_rng(1))
        >>> p.shape, A.shape, v.shape
        ((5, 2), (5, 2, 3), (5, 2))
        """
        probabilities = self.sample_feature_probabilities(n_draws, rng)
        shape = (probabilities.shape[0],)
        return (probabilities, np.broadcast_to(self._state.phi, shape + self._state.phi.shape),
                np.broadcast_to(self._state.Phi, shape + self._state.Phi.shape))

    def _new_rows(self, X) -> np.ndarray:
        X = estimator_rows(self, X, n_features=self.n_features_in_)
        check_hyperparameters(X, self._fitted.alpha, np.sqrt(self._fitted.sx2),
                              np.sqrt(self._fitted.sa2), name="X")
        return X

    def transform(self, X) -> np.ndarray:
        """``q(z_nk = 1)`` of new rows, the fitted ``q(A)`` and ``q(pi)`` held fixed.

        Parameters
        ----------
        X : array_like
            ``(m, D)`` rows.

        Returns
        -------
        numpy.ndarray
            ``(m, K)``.

        Examples
        --------
        A training row gets back (nearly) its fitted probabilities:

        >>> X = np.random.default_rng(0).normal(size=(20, 3))
        >>> vi = VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=3,
        ...                     rng=np.random.default_rng(0))
        >>> nu = vi.fit(X).transform(X[:2])
        >>> bool(np.allclose(nu, vi.feature_probabilities_[:2], atol=0.05))
        True
        """
        self._check_fitted("transform")
        return _rows_fit(self._new_rows(X), self._state, self._fitted)

    def score(self, X, y=None) -> float:
        """Mean over rows of each row's local ELBO, given the fitted ``q(A)`` and ``q(pi)``.

        Each term bounds ``log E_q[p(x_new | pi, A)]``, the row's log predictive
        density under ``q``, from below. ``y`` is ignored.

        Returns
        -------
        float
        """
        self._check_fitted("score")
        X = self._new_rows(X)
        nu = _rows_fit(X, self._state, self._fitted)
        return float(np.mean(_rows_elbo(X, nu, self._state, self._fitted)))


# --------------------------------------------------------------------------------------
# The finite model's exact evidence
# --------------------------------------------------------------------------------------


def finite_log_evidence(X, *, alpha: float, sigma_x: float, sigma_a: float,
                        n_features: int) -> float:
    """``log p(X)`` under the finite beta-Bernoulli model with ``K`` columns, by enumeration.

    Sums the finite model's class probability
    (:func:`ibp_lab.finite.finite_log_class_probability`, ``beta = 1``) times the collapsed
    likelihood over every left-ordered class with at most ``K`` non-empty columns (the
    table of :func:`ibp_lab.exact.class_posterior`, all classes at once): nothing is left
    out, so the number is exact. Sizes whose enumeration exceeds
    ``ibp_lab.exact.MAX_CLASSES`` are refused; the largest allowed (four rows, ``K = 8``,
    490,314 classes) takes a few seconds.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N <= ibp_lab.exact.MAX_ROWS``.
    alpha, sigma_x, sigma_a : float
        > 0.
    n_features : int
        ``K``, 1 to 8.

    Returns
    -------
    float

    Examples
    --------
    >>> from scipy.stats import norm
    >>> # one row, one pixel, K = 1: the feature is on with probability alpha / (alpha + 1)
    >>> p_on = 2.0 / 3.0
    >>> direct = np.log((1 - p_on) * norm(0, 0.5).pdf(0.7)
    ...                 + p_on * norm(0, np.sqrt(1.25)).pdf(0.7))
    >>> bool(np.isclose(finite_log_evidence([[0.7]], alpha=2.0, sigma_x=0.5, sigma_a=1.0,
    ...                                     n_features=1), direct))
    True
    """
    from ibp_lab import exact
    from ibp_lab.finite import _log_class_probabilities

    X = check_data_matrix("X", X)
    hyper = check_hyperparameters(X, alpha, sigma_x, sigma_a)
    n_features = check_count("n_features", n_features, minimum=1, maximum=8)
    n_rows = X.shape[0]
    exact._check_size(n_rows, n_features)  # rows and the number of classes, named
    # every class at once (the enumeration's table), not one Python call per class: the
    # 490,314 classes of four rows and K = 8 take a second, not minutes
    counts, _, _, grams, gram_index = exact._class_table(n_rows, n_features, 1.0)
    owners = exact._column_types(n_rows).sum(axis=0)
    log_prior = _log_class_probabilities(counts, owners, n_rows, alpha=hyper.alpha, beta=1.0,
                                         n_features=n_features)
    log_lik = exact._gaussian_loglik(X, grams, hyper.sigma_x, hyper.sigma_a)[gram_index]
    return float(logsumexp(log_prior + log_lik))
