"""The target of the split-merge moves: the log joint of a class ``[Z]``.

``pi([Z])`` is proportional to ``P([Z] | alpha, beta) p(X | Z, sigma_x, sigma_a)^b``
(see :mod:`ibp_lab.inference.split_merge`), or the three-parameter law's with a discount ``d``;
``b``, the inverse temperature, is 1 outside tempering.
:class:`LogJoint` evaluates its two terms for one data set and fixed hyperparameters; :class:`Proposal` is what a move
proposes; :func:`n_equal` counts columns by value, which is how the moves'
proposal probabilities are written.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibp_lab._hyper import stable_new_dish_rate
from ibp_lab._kernel import class_prior_constants, log_joint


class LogJoint:
    """``(log p(X | Z), log P([Z]))`` for one data set and fixed hyperparameters.

    ``inverse_temperature`` (``b``, default 1) is the power of the likelihood in the
    target ``p(X | Z)^b P([Z])``: the call still returns the untempered pair, and the
    moves scale the likelihood's part by ``b`` (the Metropolis-Hastings driver, the
    sequential allocation's weights, the singleton count's law).

    Calls the kernel's :func:`ibp_lab._kernel.log_joint` (collapsed likelihood
    from sufficient statistics plus the class prior, compiled, without argument
    checks; the tests check both terms against
    :func:`ibp_lab.models.linear_gaussian.collapsed_loglik` and
    :func:`ibp_lab.models.prior.log_prior`).
    """

    def __init__(self, X, alpha, sigma_x, sigma_a, beta, discount=0.0, inverse_temperature=1.0):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.alpha, self.sigma_x, self.sigma_a, self.beta = alpha, sigma_x, sigma_a, beta
        self.discount, self.inverse_temperature = discount, float(inverse_temperature)
        self.n_rows, self.n_dims = X.shape
        #: Poisson rate of one row's singletons (the buffet's last customer's new dishes).
        self.singleton_rate = float(stable_new_dish_rate(alpha, beta, discount, self.n_rows - 1))
        self._constants = (
            float(np.sum(X * X)), sigma_x, sigma_a,
            *class_prior_constants(self.n_rows, alpha, beta, discount), beta, discount,
        )

    def __call__(self, Z: np.ndarray) -> tuple[float, float]:
        return log_joint(self.X, np.ascontiguousarray(Z, dtype=np.int8), *self._constants)


def n_equal(Z: np.ndarray, column: np.ndarray) -> int:
    """How many columns of ``Z`` equal ``column``."""
    return int(np.count_nonzero((Z == column[:, None]).all(axis=0)))


@dataclass
class Proposal:
    """A formed proposal: the new state and the pieces of its log MH ratio."""

    kind: str
    Z: np.ndarray
    log_proposal_ratio: float  # log q(reverse path) - log q(path)
