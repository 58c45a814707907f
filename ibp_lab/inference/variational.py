"""Mean-field variational inference for the linear-Gaussian IBP (Doshi-Velez et al. 2009).

The model is the one of :mod:`ibp_lab.models.linear_gaussian`: ``X = Z A + E`` with
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
of the evidence lower bound (ELBO). The updates and the ELBO live in the private
module ``ibp_lab.inference._mean_field``, shared with
:mod:`ibp_lab.inference.streaming_variational`.

- :class:`VariationalIBP`: the estimator (scikit-learn conventions: ``fit``
  returns the estimator, fitted attributes end in ``_``).
- :func:`finite_log_evidence`: the exact log evidence of the finite model with
  ``K`` columns on tiny data (the number the finite family's ELBO bounds);
  :func:`ibp_lab.inference.exact.log_evidence` is the IBP's.
- :data:`FAMILIES`: the two family names.

The stick-breaking family's ELBO bounds the truncated model's evidence.
:attr:`VariationalIBP.ibp_elbo_` adds the exact cost of the columns beyond
``K`` (kept empty by ``q``), so that it bounds the untruncated IBP's
``log p(X)``, the number :func:`ibp_lab.inference.exact.log_evidence` computes.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, TransformerMixin

from ibp_lab._checks import (
    Checked,
    Count,
    DataMatrix,
    Joint,
    NotFittedError,
    Positive,
    Rows,
    check_count,
    check_rng,
    check_size,
    validated,
)
from ibp_lab._estimator import DEFAULT_RNG, Seed, checked_parameters, estimator_rows
from ibp_lab._hyper import MAX_FEATURES, check_hyperparameters
from ibp_lab.inference._enumeration import (check_enumeration, class_table, column_types,
                                             gaussian_loglik)
from ibp_lab.inference._mean_field import FAMILIES as FAMILY_NAMES
from ibp_lab.inference._mean_field import (
    ROUNDING,
    Problem,
    State,
    beyond_truncation,
    check_family,
    check_q_size,
    elbo,
    iterate,
    one_parameter_hyperparameters,
    prior_tau,
    rows_elbo,
    rows_fit,
    sample_probabilities,
    stick_terms,
    update_sticks,
)
from ibp_lab.models.finite import log_class_probabilities

__all__ = ["FAMILIES", "VariationalIBP", "finite_log_evidence"]

#: The variational families: truncated stick-breaking and finite beta-Bernoulli (the
#: tuple the doors of this module and of streaming inference check ``family`` against).
FAMILIES = FAMILY_NAMES


def _initial_state(problem: Problem, rng: np.random.Generator) -> State:
    """Batch inference's start: a random ``q(Z)``, ``q(A)`` the prior, ``q(v)`` the prior
    (the finite family's ``q(pi)`` updated from the random ``q(Z)``)."""
    N, D = problem.shape
    K = problem.n_features
    # Random responsibilities break the symmetry between the K columns; phi = 0, so the
    # first block update of q(A_k) starts from the data.
    nu = rng.random((N, K))
    state = State(nu, np.zeros((K, D)), np.full(K, problem.sa2), prior_tau(problem),
                  problem.X.copy())
    if problem.family == "finite":
        # q(pi) from the random start, not the prior: at Beta(alpha / K, 1) the first
        # update of q(Z) would switch off nearly every feature at once (E log pi_k is
        # about -K / alpha); the sticks' prior Beta(alpha, 1) has no such pull
        update_sticks(state, problem)
    return state


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
        :class:`~ibp_lab.inference.streaming.RecursiveIBP`: default ``0``
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
    >>> from ibp_lab.evaluation.summaries import match_features
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

    #: What :meth:`fit` checks, in this order (after ``X``), by
    #: :func:`ibp_lab._estimator.checked_parameters`; the hyperparameters with ``X``, as the
    #: collapsed sampler's door (:func:`ibp_lab._hyper.check_hyperparameters`, ``beta = 1``).
    parameter_constraints = {
        "hyperparameters": Joint(one_parameter_hyperparameters, "X", "alpha", "sigma_x",
                                 "sigma_a", sets=("alpha", "sigma_x", "sigma_a")),
        "n_features": Count(minimum=1, maximum=MAX_FEATURES),
        "family": Checked(check_family),
        "size": Joint(check_q_size, "X", "n_features"),
        "max_iter": Count(minimum=1, maximum=10**6),
        "tol": Positive(allow_zero=True),
        "rng": Seed(),
    }

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
        p = checked_parameters(self, X=estimator_rows(self, X))
        problem = Problem(p["X"], p["alpha"], p["sigma_x"]**2, p["sigma_a"]**2,
                          p["n_features"], p["family"])
        state = _initial_state(problem, p["rng"])
        bounds = []
        self.converged_ = False
        tol = p["tol"]
        for _ in range(p["max_iter"]):
            iterate(state, problem)
            bounds.append(elbo(state, problem))
            if len(bounds) > 1:
                change = bounds[-1] - bounds[-2]
                if change < -ROUNDING * (1.0 + abs(bounds[-2])):
                    # each block update maximises the ELBO: a fall is a numerical failure,
                    # not convergence (third audit: a 0.26-nat fall reported as converged)
                    warnings.warn(f"the ELBO fell by {-change:.3g} nats at iteration "
                                  f"{len(bounds)}: stopped, converged_ is False",
                                  RuntimeWarning, stacklevel=2)
                    break
                if change < tol:
                    self.converged_ = True
                    break
        self._state, self._fitted = state, problem
        self.elbo_ = np.array(bounds)
        self.n_iter_ = len(bounds)
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
        return float(self.elbo_[-1] + beyond_truncation(
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
        _, bound, _ = stick_terms(self._state.tau)
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
        return sample_probabilities(self._state.tau, self._fitted.family, n_draws, rng)

    def predictive_draws(self, n_draws: int, rng: np.random.Generator):
        """The arguments of :func:`ibp_lab.inference.heldout.finite_feature_heldout` for ``q``.

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
        return rows_fit(self._new_rows(X), self._state, self._fitted)

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
        nu = rows_fit(X, self._state, self._fitted)
        return float(np.mean(rows_elbo(X, nu, self._state, self._fitted)))


# --------------------------------------------------------------------------------------
# The finite model's exact evidence
# --------------------------------------------------------------------------------------


@validated(X=DataMatrix(),
           hyperparameters=Joint(one_parameter_hyperparameters, "X", "alpha", "sigma_x",
                                 "sigma_a", sets=("alpha", "sigma_x", "sigma_a")),
           n_features=Count(minimum=1, maximum=8),
           # the rows and the number of classes, named
           size=Joint(check_enumeration, Rows("X"), "n_features"))
def finite_log_evidence(X, *, alpha: float, sigma_x: float, sigma_a: float,
                        n_features: int) -> float:
    """``log p(X)`` under the finite beta-Bernoulli model with ``K`` columns, by enumeration.

    Sums the finite model's class probability
    (:func:`ibp_lab.models.finite.log_class_probabilities`, ``beta = 1``) times the collapsed
    likelihood over every left-ordered class with at most ``K`` non-empty columns (the
    table of :func:`ibp_lab.inference.exact.class_posterior`, all classes at once): nothing is left
    out, so the number is exact. Sizes whose enumeration exceeds
    ``ibp_lab.inference.exact.MAX_CLASSES`` are refused; the largest allowed (four rows, ``K = 8``,
    490,314 classes) takes a few seconds.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N <= ibp_lab.inference.exact.MAX_ROWS``.
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
    n_rows = X.shape[0]
    # every class at once (the enumeration's table), not one Python call per class: the
    # 490,314 classes of four rows and K = 8 take a second, not minutes
    counts, _, _, grams, gram_index = class_table(n_rows, n_features, 1.0)
    owners = column_types(n_rows).sum(axis=0)
    log_prior = log_class_probabilities(counts, owners, n_rows, alpha=alpha, beta=1.0,
                                        n_features=n_features)
    log_lik = gaussian_loglik(X, grams, sigma_x, sigma_a)[gram_index]
    return float(logsumexp(log_prior + log_lik))
