"""Coordinate-ascent updates of one observation for the factor-analysis model.

Model: ``x_n = sum_k z_nk w_nk A_k + e_n`` with weights ``w_n ~ N(0, sigma_w^2 I)`` and
``e_n ~ N(0, sigma_x^2 I)``. Variational family (Schaeffer et al. 2022, supplement B.3):
``q(z_nk) = Bernoulli(b_k)``, ``q(w_n) = N(phi, Phi)`` (full ``K x K``) and
``q(A_k) = N(mu_k, s_k I)``.

The updates below use ``W = E[w w^T] = phi phi^T + Phi``. The supplement writes the
cross-feature second moment as ``phi_l phi_k``; the expectation of ``w_l w_k`` under a
Gaussian with covariance ``Phi`` is ``phi_l phi_k + Phi_lk``, which is what is used here
(derivation in chapter 12). With ``G = mu mu^T + diag(D s)``:

- weights: ``Phi^-1 = I / sigma_w^2 + C o G / sigma^2`` with ``C = b b^T`` off the diagonal
  and ``b`` on it (``o``: elementwise product), ``phi = Phi diag(b) mu o / sigma^2``;
- indicator: ``logit b_l = logit q_l + (phi_l mu_l . o - sum_{k != l} b_k W_lk mu_l . mu_k)
  / sigma^2 - W_ll (D s_l + |mu_l|^2) / (2 sigma^2)``;
- feature: precision ``1/s0_l + b_l W_ll / sigma^2``, mean pulled from ``mu0_l`` towards
  ``y_l = (phi_l o - sum_{k != l} b_k W_lk mu_k) / W_ll`` with gain
  ``b_l W_ll s0_l / (sigma^2 + b_l W_ll s0_l)``; then the same usage-weighted average
  ("ossify") as the linear-Gaussian model.

A step costs ``O(K^2 D)`` for the Gram matrix of the features, more than the
linear-Gaussian ``O(K D)``, plus ``O(K_a^3)`` for the weight covariance of the ``K_a``
slots that the observation may own.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, special

from ibp_lab.inference.streaming._linear_gaussian import bernoulli_kl, blend_variance, gaussian_gain


# Slots whose probability of being owned by this observation is below this keep the prior
# weight N(0, sigma_w^2): they enter the weights' precision through b_k b_j and b_k, so
# leaving them out changes the other weights' covariance by a relative amount of this order.
_ACTIVE = 1e-12


def update_weights(o, mu, s, b, sigma2, sigma_w2):
    """Optimal ``q(w) = N(phi, Phi)`` given the indicators and the features.

    Only the slots that this observation may own (``b_k > 1e-12``) are solved for; the
    others keep the prior, so the cost is ``O(K_active^3 + K_active^2 D)``.
    """
    K, D = mu.shape
    phi = np.zeros(K)
    Phi = np.eye(K) * sigma_w2
    active = np.flatnonzero(b > _ACTIVE)
    if active.size == 0:
        return phi, Phi
    m, ba = mu[active], b[active]
    gram = m @ m.T
    gram[np.diag_indices(active.size)] += D * s[active]
    pair = np.outer(ba, ba)
    pair[np.diag_indices(active.size)] = ba
    precision = np.eye(active.size) / sigma_w2 + pair * gram / sigma2
    factor = linalg.cho_factor(precision, lower=True)
    block = linalg.cho_solve(factor, np.eye(active.size))
    Phi[np.ix_(active, active)] = 0.5 * (block + block.T)
    phi[active] = Phi[np.ix_(active, active)] @ (ba * (m @ o)) / sigma2
    return phi, Phi


def _update_indicator(l, o_proj, gram, s, b, W, logit_q, phi, D, sigma2):
    """Coordinate update of ``b_l``; ``o_proj = mu o``, ``gram = mu mu^T``."""
    cross = np.dot(b * W[l], gram[l]) - b[l] * W[l, l] * gram[l, l]
    t = logit_q[l] + (phi[l] * o_proj[l] - cross) / sigma2
    t -= W[l, l] * (D * s[l] + gram[l, l]) / (2 * sigma2)
    b[l] = special.expit(t)


def _update_feature(l, o, mu, s, b, phi, W, mu0, s0, usage, sigma2, ossify):
    """Coordinate update of ``q(A_l)`` from the previous posterior ``(mu0_l, s0_l)``."""
    h = b[l] * W[l, l]  # precision added by this observation, times sigma^2
    weight = 1.0
    if ossify:
        total = b[l] + usage[l]
        weight = b[l] / total if total > 0 else 0.0
    if h > 0:
        others = (b * W[l]) @ mu - b[l] * W[l, l] * mu[l]
        _, s_star = gaussian_gain(h, s0[l], sigma2)
        # gain * (target - mu0) with target = pull_numerator / h, written without dividing
        # by h (a tiny b_l would make the target overflow while the gain vanishes)
        pull = (b[l] * phi[l] * o - b[l] * others) - h * mu0[l]
        mu[l] = mu0[l] + weight * (s_star / sigma2) * pull
    else:
        s_star = s0[l]
        mu[l] = mu0[l]
    s[l] = blend_variance(s0[l], s_star, weight)


def _indicator_sweep(o, mu, s, b, phi, Phi, logit_q, sigma2, only=None):
    W = np.outer(phi, phi) + Phi
    gram = mu @ mu.T
    o_proj = mu @ o
    for l in range(b.size) if only is None else (only,):
        _update_indicator(l, o_proj, gram, s, b, W, logit_q, phi, o.size, sigma2)


def _feature_sweep(o, mu, s, b, phi, Phi, mu0, s0, usage, sigma2, ossify, only=None):
    W = np.outer(phi, phi) + Phi
    for l in range(b.size) if only is None else (only,):
        _update_feature(l, o, mu, s, b, phi, W, mu0, s0, usage, sigma2, ossify)


def local_fit(o, mu, s, b, logit_q, mu0, s0, usage, sigma2, sigma_w2, n_steps, ossify):
    """``n_steps`` steps of (weights, all indicators, all features), in place.

    The caller starts the existing features switched on (``b_k = 1``). Started at their
    prior probabilities instead, rarely used features could never come back: a feature that
    is barely on gets the prior weight ``E[w_k] = 0``, and a feature whose weight is
    expected to be 0 while ``E[w_k^2] = sigma_w^2`` only adds variance, so it is switched
    off. With every feature on, the first weight update is a regression of the observation
    on all the features, and the indicator updates then switch off those that do not help.
    Fresh slots start switched off: their mean is the prior mean 0 and their weight's mean
    is 0, a saddle point that coordinate ascent cannot leave (a slot started half on there
    would stay half on with an all-zero feature); the birth proposal creates features.

    Returns the weight posterior ``(phi, Phi)``.
    """
    phi, Phi = None, None
    for _ in range(n_steps):
        phi, Phi = update_weights(o, mu, s, b, sigma2, sigma_w2)
        _indicator_sweep(o, mu, s, b, phi, Phi, logit_q, sigma2)
        _feature_sweep(o, mu, s, b, phi, Phi, mu0, s0, usage, sigma2, ossify)
    return phi, Phi


def propose_birth(f, o, mu, s, b, phi, Phi, logit_q, mu0, s0, usage, sigma2, sigma_w2,
                  n_steps, ossify):
    """Switch slot ``f`` on with weight ``sigma_w`` and fit it; then ``n_steps`` steps.

    The weight prior is symmetric, so a feature that nobody owns has ``E[w_f] = 0`` and
    would learn nothing; starting ``w_f`` at one prior standard deviation breaks the
    symmetry (the sign is a convention: ``(w, A)`` and ``(-w, -A)`` are the same model).
    Each step refits the weights jointly, then slot ``f``'s indicator and feature.
    In place; returns the new ``(phi, Phi)``.
    """
    b[f] = 1.0
    phi = phi.copy()
    Phi = Phi.copy()
    phi[f] = np.sqrt(sigma_w2)
    Phi[f, :] = 0.0
    Phi[:, f] = 0.0
    _feature_sweep(o, mu, s, b, phi, Phi, mu0, s0, usage, sigma2, ossify, only=f)
    for _ in range(n_steps):
        phi, Phi = update_weights(o, mu, s, b, sigma2, sigma_w2)
        _indicator_sweep(o, mu, s, b, phi, Phi, logit_q, sigma2, only=f)
        _feature_sweep(o, mu, s, b, phi, Phi, mu0, s0, usage, sigma2, ossify, only=f)
    return phi, Phi


def objective(o, mu, s, b, phi, Phi, log_q, log_1mq, mu0, s0, sigma2, sigma_w2) -> float:
    """The local objective of one observation: expected log-likelihood minus three KLs.

    ``E|o - sum_k z_k w_k A_k|^2 = |o|^2 - 2 sum_k b_k phi_k mu_k . o
    + sum_{k,j} C_kj W_kj G_kj`` with ``C``, ``W``, ``G`` as in the module docstring.
    """
    K, D = mu.shape
    W = np.outer(phi, phi) + Phi
    gram = mu @ mu.T
    gram[np.diag_indices(K)] += D * s
    pair = np.outer(b, b)
    pair[np.diag_indices(K)] = b
    misfit = o @ o - 2 * np.sum(b * phi * (mu @ o)) + np.sum(pair * W * gram)
    expected_loglik = -0.5 * D * np.log(2 * np.pi * sigma2) - misfit / (2 * sigma2)
    diff = mu - mu0
    kl_features = 0.5 * np.sum(
        D * s / s0 + np.einsum("kd,kd->k", diff, diff) / s0 - D + D * np.log(s0 / s)
    )
    _, logdet = np.linalg.slogdet(Phi)
    kl_weights = 0.5 * (np.trace(Phi) / sigma_w2 + phi @ phi / sigma_w2 - K
                        + K * np.log(sigma_w2) - logdet)
    return expected_loglik - kl_features - kl_weights - bernoulli_kl(b, log_q, log_1mq)


class FactorAnalysisLocal:
    """One observation's coordinate ascent and birth proposal for the factor-analysis model.

    Implements :class:`ibp_lab.inference.streaming.model.LocalModel` (see :class:`LinearGaussianLocal
    <ibp_lab.inference.streaming._linear_gaussian.LinearGaussianLocal>`).
    """

    def __init__(self, sigma_x: float, sigma_w: float, n_steps: int, ossify: bool) -> None:
        self.sigma2 = sigma_x**2
        self.sigma_w = sigma_w
        self.sigma_w2 = sigma_w**2
        self.n_steps = n_steps
        self.ossify = ossify

    def fit_observation(self, o, n_old, mu, s, b, log_q, log_1mq, mu0, s0, usage):
        """Posteriors ``(mu, s, b)`` of one observation; slots from ``n_old`` on are fresh."""
        logit_q = log_q - log_1mq
        sigma2, sigma_w2 = self.sigma2, self.sigma_w2
        # Start every existing feature switched on and every fresh slot off (see
        # local_fit): only the birth proposal can create a feature.
        b[:n_old] = 1.0
        b[n_old:] = 0.0
        phi, Phi = local_fit(o, mu, s, b, logit_q, mu0, s0, usage, sigma2, sigma_w2,
                             self.n_steps, self.ossify)
        unclaimed = np.arange(n_old, b.size)
        unclaimed = unclaimed[b[unclaimed] < 0.5]
        if unclaimed.size:
            f = int(unclaimed[0])
            before = objective(o, mu, s, b, phi, Phi, log_q, log_1mq, mu0, s0, sigma2, sigma_w2)
            saved = (mu.copy(), s.copy(), b.copy())
            phi1, Phi1 = propose_birth(f, o, mu, s, b, phi, Phi, logit_q, mu0, s0, usage,
                                       sigma2, sigma_w2, self.n_steps, self.ossify)
            after = objective(o, mu, s, b, phi1, Phi1, log_q, log_1mq, mu0, s0, sigma2,
                              sigma_w2)
            if not (after > before and b[f] >= 0.5):
                mu, s, b = saved
        return mu, s, b

    def predictive_weights(self, z, rng):
        """Coefficients ``z w`` and ``z w^2`` of a predictive draw, ``w ~ N(0, sigma_w^2)``."""
        w = self.sigma_w * rng.standard_normal(z.shape)
        return z * w, z * w * w
