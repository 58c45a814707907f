"""Streaming variational inference for the linear-Gaussian IBP, one batch of rows at a time.

The baseline the R-IBP paper (Schaeffer et al. 2022) sets against its own method is
Widjaja & Doshi-Velez's streaming variational inference (2017), in a finite and an
infinite variant. Their thesis is not bundled here, so this module builds the method
from the description in the R-IBP paper and from streaming variational Bayes (Broderick
et al. 2013): the posterior after the rows seen so far becomes the prior of the next
batch. The variational family is :mod:`ibp_lab.inference.variational`'s (Doshi-Velez et al. 2009):
``q(A_k) = Normal(phi_k, Phi_k I)``, ``q(v_k) = Beta(tau_k)`` and ``q(z_nk) =
Bernoulli(nu_nk)``; and so are the block updates, each the exact maximiser of the step's
bound in its block, read from the last posterior instead of the prior (both modules take
them from the private ``ibp_lab.inference._mean_field``).

For a batch ``X_b`` and the last posterior ``q0``, the step's bound is

``E_q log p(X_b | Z_b, A) + E_q log p(Z_b | pi) + H[q(Z_b)]
- KL(q(A) || q0(A)) - KL(q(v) || q0(v))``,

raised by coordinate ascent until it changes by less than ``tol``. The batch's
``q(Z_b)`` is then frozen: streaming never revisits a row.

Variants (``family``):

- ``"finite"``: ``K = n_features`` columns from the start, ``pi_k ~ Beta(alpha / K, 1)``.
- ``"stick_breaking"``, the *infinite* variant: the truncation grows. The stream starts
  with one column. Whenever a batch uses its last column (expected count above one
  half), a new column is appended from the prior and the batch is fitted again, until
  the last column is spare or ``n_features`` columns are open. A column opened after
  ``t`` rows starts from the prior, which ignores that those rows did not use it; this
  favours new columns. It does not spoil :meth:`StreamResult.elbo`, a lower bound on
  ``log p(X)`` for whatever ``q`` the stream ends with.

- :func:`stream_variational`: the stream; returns a :class:`StreamResult`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ibp_lab._checks import (Checked, Count, DataMatrix, Generator, Joint, Positive, check_size,
                             validated)
from ibp_lab._hyper import MAX_FEATURES
from ibp_lab.inference._mean_field import (
    ROUNDING,
    Base,
    Problem,
    State,
    beyond_truncation,
    check_family,
    check_q_size,
    elbo,
    iterate,
    one_parameter_hyperparameters,
    prior_tau,
    rows_fit,
    sample_probabilities,
    update_sticks,
)

__all__ = ["StreamResult", "stream_variational"]

#: Expected count of the last column above which the infinite variant opens another.
_OPEN_AT = 0.5


def _check_new_columns(result: "StreamResult", X_new: np.ndarray) -> None:
    if X_new.shape[1] != result.features.shape[1]:
        raise ValueError(f"X_new must have {result.features.shape[1]} columns, got "
                         f"{X_new.shape[1]}")


@dataclass
class StreamResult:
    """What a stream leaves: the global factors, every row's ``q(z)`` and the bounds.

    Attributes
    ----------
    family : str
    features : numpy.ndarray
        ``(K, D)`` means of ``q(A_k)``.
    feature_variances : numpy.ndarray
        ``(K,)`` variance of each coordinate of ``A_k`` under ``q``.
    tau : numpy.ndarray
        ``(K, 2)`` Beta parameters of ``q(v_k)`` (stick-breaking) or ``q(pi_k)``.
    feature_probabilities : numpy.ndarray
        ``(N, K)`` ``q(z_nk = 1)``, frozen when row ``n``'s batch was done (zero for a
        column opened later).
    step_bounds : numpy.ndarray
        The step's bound at the end of each batch.
    n_columns : numpy.ndarray
        Columns ``K`` at the end of each batch.
    cpu_seconds : float
        CPU time of the stream.
    """

    family: str
    features: np.ndarray
    feature_variances: np.ndarray
    tau: np.ndarray
    feature_probabilities: np.ndarray
    step_bounds: np.ndarray
    n_columns: np.ndarray
    cpu_seconds: float
    _problem: Problem = field(repr=False)

    def elbo(self) -> float:
        """The ELBO of the final ``q`` on all the rows streamed: at most ``log p(X)``.

        For ``"finite"``, of the finite model with ``K`` columns
        (:func:`ibp_lab.inference.variational.finite_log_evidence`); for ``"stick_breaking"``, of
        the model truncated at ``K`` (see :meth:`ibp_elbo` for the IBP's).
        """
        return elbo(self._state(), self._problem)

    def ibp_elbo(self) -> float:
        """Stick-breaking only: :meth:`elbo` plus a lower bound on the cost of the columns
        beyond ``K``, a lower bound on the untruncated IBP's ``log p(X)``
        (:func:`ibp_lab.inference.exact.log_evidence` on tiny data)."""
        if self.family != "stick_breaking":
            raise ValueError("ibp_elbo needs family='stick_breaking': the finite family "
                             "bounds the finite model's evidence (use elbo)")
        return self.elbo() + beyond_truncation(self.tau, self._problem.alpha,
                                               self._problem.shape[0])

    @validated(n_draws=Count(minimum=1), rng=Generator())
    def predictive_draws(self, n_draws: int, rng: np.random.Generator):
        """The arguments of :func:`ibp_lab.inference.heldout.finite_feature_heldout` for ``q``.

        As :meth:`ibp_lab.inference.variational.VariationalIBP.predictive_draws`: feature
        probabilities drawn from ``q(v)`` (keeping the sticks' coupling), the means and
        variances of ``q(A)``.

        Returns
        -------
        probabilities, features, feature_variances : numpy.ndarray
            ``(n_draws, K)``, ``(n_draws, K, D)`` and ``(n_draws, K)``.
        """
        check_size("the draws", float(n_draws) * self.tau.shape[0], names="n_draws")
        probabilities = sample_probabilities(self.tau, self.family, n_draws, rng)
        shape = (n_draws,)
        return (probabilities, np.broadcast_to(self.features, shape + self.features.shape),
                np.broadcast_to(self.feature_variances, shape + self.feature_variances.shape))

    @validated(X_new=DataMatrix(), columns=Joint(_check_new_columns, "self", "X_new"))
    def transform(self, X_new) -> np.ndarray:
        """``q(z = 1)`` of new rows, the global factors held fixed (nothing is learned).

        Returns
        -------
        numpy.ndarray
            ``(m, K)``.
        """
        return rows_fit(X_new, self._state(), self._problem)

    def _state(self) -> State:
        X, nu, phi = self._problem.X, self.feature_probabilities, self.features
        return State(nu, phi, self.feature_variances, self.tau, X - nu @ phi)


def _prior_columns(problem: Problem, n_columns: int) -> Base:
    D = problem.shape[1]
    tau = prior_tau(Problem(problem.X, problem.alpha, problem.sx2, problem.sa2,
                            n_columns, problem.family))
    return Base(np.zeros((n_columns, D)), np.full(n_columns, problem.sa2), tau)


def _with_fresh_column(base: Base, problem: Problem) -> Base:
    fresh = _prior_columns(problem, 1)
    return Base(np.vstack([base.mean, fresh.mean]),
                np.concatenate([base.variance, fresh.variance]),
                np.vstack([base.tau, fresh.tau]))


def _step(X_b: np.ndarray, base: Base, whole: Problem, max_iter: int, tol: float,
          rng: np.random.Generator) -> tuple[State, float]:
    """One batch: coordinate ascent on the step's bound from a random ``q(Z_b)``.

    The start mirrors :class:`ibp_lab.inference.variational.VariationalIBP`'s, so that one batch
    holding every row is batch variational inference.
    """
    K = base.tau.shape[0]
    problem = Problem(X_b, whole.alpha, whole.sx2, whole.sa2, K, whole.family, base)
    nu = rng.random((X_b.shape[0], K))
    state = State(nu, base.mean.copy(), base.variance.copy(), base.tau.copy(),
                  X_b - nu @ base.mean)
    if problem.family == "finite":
        # as in batch VI: q(pi) from the random start first (at the prior Beta(alpha/K, 1)
        # the first update of q(Z) would switch every feature off)
        update_sticks(state, problem)
    bound = -np.inf
    for _ in range(max_iter):
        iterate(state, problem)
        new = elbo(state, problem)
        if new < bound - ROUNDING * (1.0 + abs(bound)):
            warnings.warn(f"a streaming step's bound fell by {bound - new:.3g} nats: the "
                          "step stopped there", RuntimeWarning,
                          stacklevel=4)  # _step, the door, its @validated wrapper, the caller
            break
        done, bound = new - bound < tol, new
        if done:
            break
    return state, bound


@validated(X=DataMatrix(),
           hyperparameters=Joint(one_parameter_hyperparameters, "X", "alpha", "sigma_x",
                                 "sigma_a", sets=("alpha", "sigma_x", "sigma_a")),
           family=Checked(check_family),
           n_features=Count(minimum=1, maximum=MAX_FEATURES),
           batch_size=Count(minimum=1, maximum=10**7),
           max_iter=Count(minimum=1, maximum=10**6),
           tol=Positive(allow_zero=True),
           size=Joint(check_q_size, "X", "n_features"),
           rng=Generator())
def stream_variational(X, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                       sigma_a: float, family: str = "stick_breaking", n_features: int = 20,
                       batch_size: int = 10, max_iter: int = 100,
                       tol: float = 1e-6) -> StreamResult:
    """Streaming variational inference: the rows of ``X`` in batches, each seen once.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` rows, streamed in order.
    rng : numpy.random.Generator
        Draws each batch's random start of ``q(Z_b)``.
    alpha, sigma_x, sigma_a : float
        IBP mass (``beta = 1``), noise and feature standard deviations, > 0.
    family : {"stick_breaking", "finite"}, optional
        The infinite variant (truncation growing to ``n_features``) or the finite one
        (``n_features`` columns throughout).
    n_features : int, optional
        Columns of the finite variant; the most the infinite variant opens.
    batch_size : int, optional
        Rows per step (the last batch may be shorter), >= 1.
    max_iter, tol : optional
        Coordinate-ascent passes per step at most; stop when a pass raises the step's
        bound by less than ``tol`` nats.

    Returns
    -------
    StreamResult

    Examples
    --------
    >>> from ibp_lab.datasets import simulate_four_feature_data
    >>> X, _, _ = simulate_four_feature_data(np.random.default_rng(0), sigma_x=0.2)
    >>> res = stream_variational(X, np.random.default_rng(1), alpha=1.0, sigma_x=0.2,
    ...                          sigma_a=1.0, n_features=8)
    >>> res.features.shape[1], res.feature_probabilities.shape[0]
    (36, 100)
    >>> bool(res.n_columns[-1] <= 8)  # the infinite variant opens columns as rows use them
    True
    """
    problem = Problem(X, alpha, sigma_x**2, sigma_a**2, n_features, family)
    start = time.process_time()
    grows = family == "stick_breaking"
    base = _prior_columns(problem, 1 if grows else problem.n_features)
    rows, bounds, columns = [], [], []
    for first in range(0, problem.shape[0], batch_size):
        X_b = problem.X[first:first + batch_size]
        state, bound = _step(X_b, base, problem, max_iter, tol, rng)
        # the infinite variant: while the batch uses its last column, fit the batch again
        # with one more column from the prior, so a spare column is always left
        while (grows and state.tau.shape[0] < problem.n_features
               and state.nu[:, -1].sum() > _OPEN_AT):
            base = _with_fresh_column(base, problem)
            state, bound = _step(X_b, base, problem, max_iter, tol, rng)
        rows.append(state.nu)
        bounds.append(bound)
        columns.append(state.tau.shape[0])
        base = Base(state.phi, state.Phi, state.tau)
    K = columns[-1]
    nu_all = np.zeros((problem.shape[0], K))
    first = 0
    for nu in rows:
        nu_all[first:first + nu.shape[0], :nu.shape[1]] = nu
        first += nu.shape[0]
    final = Problem(problem.X, problem.alpha, problem.sx2, problem.sa2, K, family)
    return StreamResult(family, state.phi, state.Phi, state.tau, nu_all, np.array(bounds),
                        np.array(columns), time.process_time() - start, final)
