"""Coordinate-ascent updates of one observation for the linear-Gaussian model (compiled).

Model: ``x_n = sum_k z_nk A_k + e_n`` with ``e_n ~ N(0, sigma_x^2 I)``. Variational family
(Schaeffer et al. 2022, supplement B.2): ``q(z_nk) = Bernoulli(b_k)`` and
``q(A_k) = N(mu_k, s_k I)``. Every covariance starts isotropic (the prior
``sigma_a^2 I``) and every update below keeps it isotropic, so a feature's covariance is one
number ``s_k`` and an update costs ``O(D)``.

The updates (derived in the book's chapter 12; ``r_l = o - sum_{k != l} b_k mu_k`` is the
residual that feature ``l`` is asked to explain, ``(mu0_l, s0_l)`` its posterior after the
previous observation, ``M_l`` its usage before this observation):

- indicator: ``logit b_l = logit q_l + (mu_l . r_l - (D s_l + |mu_l|^2) / 2) / sigma^2``;
- feature: ``1/s*_l = 1/s0_l + b_l / sigma^2`` and ``mu*_l = mu0_l + g (r_l - mu0_l)`` with
  gain ``g = b_l s0_l / (sigma^2 + b_l s0_l)`` (the same as ``s*_l (mu0_l/s0_l +
  b_l r_l/sigma^2)``, but stable when ``s0_l >> sigma^2``); both through the ratio
  ``t = b_l s0_l / sigma^2`` (:func:`gaussian_gain`), so that no product underflows;
- "ossify": the stored posterior is the usage-weighted average
  ``(b_l mu*_l + M_l mu0_l) / (b_l + M_l)``, likewise for ``s``, as a sum of two
  non-negative terms (:func:`blend_variance`: a difference would cancel to 0).

Each step starts from ``(mu0, s0)``: the previous observation's posterior, never from the
previous step's values. A running residual ``R = o - sum_k b_k mu_k`` makes every update
``O(D)``, so a step costs ``O(K D)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _expit(t):
    if t >= 0.0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


@njit(cache=True)
def gaussian_gain(h, s0, sigma2):
    """Gain ``h s0 / (sigma^2 + h s0)`` and variance ``s0 sigma^2 / (sigma^2 + h s0)``.

    Both are written through the ratio ``t = h s0 / sigma^2`` so that neither the product
    ``s0 sigma^2`` (which underflows to 0 for a tiny noise and a tiny previous variance)
    nor a sum that rounds to ``h s0`` appears: ``s0 / (1 + t)`` is positive whenever
    ``s0`` is, whatever the ratio.
    """
    t = h * s0 / sigma2
    return t / (1.0 + t), s0 / (1.0 + t)


@njit(cache=True)
def blend_variance(s0, s_star, weight):
    """``(1 - weight) s0 + weight s_star``, positive when both variances are.

    The form ``s0 + weight (s_star - s0)`` cancels to exactly 0 when ``s_star << s0``
    and ``weight = 1`` (a noise of 1e-9 against a prior variance of 1), and a zero
    variance then divides by zero in the next update; a sum of two non-negative terms
    cannot.
    """
    if weight >= 1.0:
        return s_star
    return (1.0 - weight) * s0 + weight * s_star


@njit(cache=True)
def _update_indicator(l, o, mu, s, b, logit_q, R, sigma2):
    """Coordinate update of ``b_l``; keeps the running residual ``R`` in step."""
    D = o.shape[0]
    dot = 0.0
    norm2 = 0.0
    for d in range(D):
        m = mu[l, d]
        dot += m * (R[d] + b[l] * m)
        norm2 += m * m
    new = _expit(logit_q[l] + (dot - 0.5 * (D * s[l] + norm2)) / sigma2)
    change = b[l] - new
    if change != 0.0:
        for d in range(D):
            R[d] += change * mu[l, d]
    b[l] = new


@njit(cache=True)
def _update_feature(l, mu, s, b, mu0, s0, usage, R, sigma2, ossify):
    """Coordinate update of ``q(A_l)`` from the previous posterior; keeps ``R`` in step."""
    D = mu.shape[1]
    gain, s_star = gaussian_gain(b[l], s0[l], sigma2)
    weight = 1.0
    if ossify:
        total = b[l] + usage[l]
        weight = b[l] / total if total > 0.0 else 0.0
    for d in range(D):
        r = R[d] + b[l] * mu[l, d]  # residual left for feature l
        new = mu0[l, d] + weight * gain * (r - mu0[l, d])
        R[d] = r - b[l] * new
        mu[l, d] = new
    s[l] = blend_variance(s0[l], s_star, weight)


@njit(cache=True)
def local_fit(o, mu, s, b, logit_q, mu0, s0, usage, sigma2, n_steps, ossify):
    """``n_steps`` coordinate-ascent steps (all indicators, then all features), in place.

    Returns the residual ``o - sum_k b_k mu_k``.
    """
    K, D = mu.shape
    R = o.copy()
    for k in range(K):
        for d in range(D):
            R[d] -= b[k] * mu[k, d]
    for _ in range(n_steps):
        for l in range(K):
            _update_indicator(l, o, mu, s, b, logit_q, R, sigma2)
        for l in range(K):
            _update_feature(l, mu, s, b, mu0, s0, usage, R, sigma2, ossify)
    return R


@njit(cache=True)
def propose_birth(f, o, mu, s, b, logit_q, mu0, s0, usage, R, sigma2, n_steps, ossify):
    """Switch slot ``f`` on, fit it to the residual, then ``n_steps`` steps on slot ``f`` only.

    Coordinate ascent started from ``b_f = q_f`` (tiny for a feature nobody owns) can never
    create a feature: with ``b_f`` tiny the feature learns nothing, and an uninformed
    feature is never switched on. Starting instead from ``b_f = 1`` finds the other local
    optimum; the caller keeps whichever has the larger objective. In place; returns the
    new residual.
    """
    b_old = b[f]
    b[f] = 1.0
    for d in range(R.shape[0]):
        R[d] += (b_old - 1.0) * mu[f, d]
    _update_feature(f, mu, s, b, mu0, s0, usage, R, sigma2, ossify)
    for _ in range(n_steps):
        _update_indicator(f, o, mu, s, b, logit_q, R, sigma2)
        _update_feature(f, mu, s, b, mu0, s0, usage, R, sigma2, ossify)
    return R


@njit(cache=True)
def slot_terms(f, mu, s, b, mu0, s0, log_q, log_1mq):
    """Slot ``f``'s share of the objective: its variance term, feature KL and Bernoulli KL."""
    D = mu.shape[1]
    norm2 = 0.0
    dist2 = 0.0
    for d in range(D):
        norm2 += mu[f, d] * mu[f, d]
        dist2 += (mu[f, d] - mu0[f, d]) ** 2
    variance = b[f] * (norm2 + D * s[f]) - b[f] * b[f] * norm2
    kl_feature = 0.5 * (D * s[f] / s0[f] + dist2 / s0[f] - D + D * math.log(s0[f] / s[f]))
    kl_bern = 0.0
    if b[f] > 0.0:
        kl_bern += b[f] * (math.log(b[f]) - log_q[f])
    if b[f] < 1.0:
        kl_bern += (1.0 - b[f]) * (math.log1p(-b[f]) - log_1mq[f])
    return variance, kl_feature, kl_bern


def birth_gain(f, R_before, terms_before, R_after, mu, s, b, mu0, s0, log_q, log_1mq, sigma2):
    """Change of :func:`objective` when only slot ``f`` (and so the residual) changed.

    ``terms_before`` is :func:`slot_terms` of slot ``f`` before the change. Computing the
    difference directly costs ``O(D)`` instead of ``O(K D)``.
    """
    var1, klf1, klb1 = slot_terms(f, mu, s, b, mu0, s0, log_q, log_1mq)
    var0, klf0, klb0 = terms_before
    misfit_change = R_after @ R_after - R_before @ R_before + var1 - var0
    return -misfit_change / (2 * sigma2) - (klf1 - klf0) - (klb1 - klb0)


@njit(cache=True)
def expected_misfit(R, mu, s, b):
    """``E_q |o - sum_k z_k A_k|^2 = |R|^2 + sum_k [b_k (|mu_k|^2 + D s_k) - b_k^2 |mu_k|^2]``.

    ``R = o - sum_k b_k mu_k`` is the residual of the posterior means; the sum adds the
    variance of each feature's contribution under ``q``. The birth buffer compares this
    with the noise (:mod:`ibp_lab.inference.streaming.births`); :func:`objective` uses it too.
    """
    K, D = mu.shape
    total = 0.0
    for d in range(D):
        total += R[d] * R[d]
    for k in range(K):
        norm2 = 0.0
        for d in range(D):
            norm2 += mu[k, d] * mu[k, d]
        total += b[k] * (norm2 + D * s[k]) - b[k] * b[k] * norm2
    return total


def objective(o, R, mu, s, b, log_q, log_1mq, mu0, s0, sigma2) -> float:
    """The local objective ``L`` of one observation (the paper's approximate lower bound).

    ``E_q[log p(o | z, A)] - sum_k KL(q(A_k) || q_prev(A_k)) - sum_k KL(Bern(b_k) ||
    Bern(q_k))``, where ``E|o - sum_k z_k A_k|^2 = |R|^2 + sum_k [b_k (|mu_k|^2 + D s_k) -
    b_k^2 |mu_k|^2]``.
    """
    D = o.shape[0]
    misfit = expected_misfit(R, mu, s, b)
    expected_loglik = -0.5 * D * np.log(2 * np.pi * sigma2) - misfit / (2 * sigma2)
    diff = mu - mu0
    kl_features = 0.5 * np.sum(
        D * s / s0 + np.einsum("kd,kd->k", diff, diff) / s0 - D + D * np.log(s0 / s)
    )
    return expected_loglik - kl_features - bernoulli_kl(b, log_q, log_1mq)


def bernoulli_kl(b, log_q, log_1mq) -> float:
    """``sum_k KL(Bernoulli(b_k) || Bernoulli(q_k))`` with ``0 log 0 = 0``."""
    on = b > 0
    off = b < 1
    kl = np.sum(b[on] * (np.log(b[on]) - log_q[on]))
    kl += np.sum((1 - b[off]) * (np.log1p(-b[off]) - log_1mq[off]))
    return float(kl)


class LinearGaussianLocal:
    """One observation's coordinate ascent and birth proposal for the linear-Gaussian model.

    Implements :class:`ibp_lab.inference.streaming.model.LocalModel`: the estimator hands it the
    prior of every slot and the previous posteriors, and gets back this observation's
    posteriors; it never needs to know which model it holds.
    """

    def __init__(self, sigma_x: float, n_steps: int, ossify: bool) -> None:
        self.sigma2 = sigma_x**2
        self.n_steps = n_steps
        self.ossify = ossify

    def fit_without_birth(self, o, mu, s, b, log_q, log_1mq, mu0, s0, usage):
        """Coordinate ascent only (no birth proposal), in place: the buffer's step.

        Returns the posteriors ``(mu, s, b)``, the residual ``R`` and the expected misfit
        over ``sigma_x^2`` (:func:`expected_misfit`), which decides admission to the
        birth buffer.
        """
        R = local_fit(o, mu, s, b, log_q - log_1mq, mu0, s0, usage, self.sigma2,
                      self.n_steps, self.ossify)
        return mu, s, b, R, expected_misfit(R, mu, s, b) / self.sigma2

    def fit_observation(self, o, n_old, mu, s, b, log_q, log_1mq, mu0, s0, usage):
        """Posteriors ``(mu, s, b)`` of one observation; slots from ``n_old`` on are fresh."""
        logit_q = log_q - log_1mq
        R = local_fit(o, mu, s, b, logit_q, mu0, s0, usage, self.sigma2, self.n_steps,
                      self.ossify)
        unclaimed = np.arange(n_old, b.size)
        unclaimed = unclaimed[b[unclaimed] < 0.5]
        if unclaimed.size:
            f = int(unclaimed[0])
            saved = (mu[f].copy(), s[f], b[f], R.copy())
            terms = slot_terms(f, mu, s, b, mu0, s0, log_q, log_1mq)
            R = propose_birth(f, o, mu, s, b, logit_q, mu0, s0, usage, R.copy(), self.sigma2,
                              self.n_steps, self.ossify)
            gain = birth_gain(f, saved[3], terms, R, mu, s, b, mu0, s0, log_q, log_1mq,
                              self.sigma2)
            # a proposal that ends with the slot mostly off is not a birth
            if not (gain > 0 and b[f] >= 0.5):
                mu[f], s[f], b[f], R = saved
        return mu, s, b

    def predictive_weights(self, z, rng):
        """Coefficients of the feature means and variances in a predictive draw: ``z``."""
        return z, z
