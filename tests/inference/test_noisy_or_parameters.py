"""Tests of the noisy-OR sampler's learned parameters (``run_noisy_or(learn=...,
priors=...)``): strength and leak by slice steps, the link
probability by its conjugate Beta draw.

Each update alone, with ``(Z, W)`` held fixed, against its exact conditional: the slice
steps' chains binned and compared with the Beta prior times ``p(X | Z, W)`` integrated
over each bin (:func:`scipy.integrate.quad`, the likelihood written out pixel by pixel); the
conjugate draws against the Beta CDF. Then the whole sampler, one parameter learned at a
time, against exact enumeration on three images of two pixels: the law of the classes of
``Z`` and the law of the learned parameter, both from the enumeration integrated over the
parameter (:func:`integrated_posterior`). Planted bugs (the slice's target without its
prior, the conjugate draw's shapes swapped) must be caught.

Every check's tolerance is the Monte Carlo error of the draws: bin counts against exact
binomial tails, for a chain with its effective sample size in place of its length
(``tests/stats_checks.py``), at a false-alarm rate of 1e-3 per test shared by its bins and
checks (Bonferroni).
"""

import math

import numpy as np
import pytest
from numpy.polynomial import chebyshev
from scipy import integrate, stats
from scipy.special import logsumexp

from ibp_lab.inference import exact, noisy_or
from ibp_lab.inference.noisy_or import NoisyOrParameters
from tests.exactness import assert_leaves_posterior_invariant
from tests.seeds import stat_rng
from tests.stats_checks import (TEST_LEVEL, assert_binomial_counts, chain_ess,
                                chain_frequency_pvalues)

MODEL = dict(weight_prob=0.4, strength=0.8, leak=0.1)
X_TWO = np.array([[1, 0], [1, 1], [0, 1]], np.int8)
# a fixed state for the conditional checks: 4 images of 3 pixels, 2 causes
X_FIXED = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]], np.int8)
Z_FIXED = np.array([[1, 0], [1, 0], [0, 1], [1, 1]], np.int8)
W_FIXED = np.array([[1, 1, 0], [0, 1, 1]], np.int64)


def direct_log_likelihood(X, Z, W, strength, leak):
    """``log p(X | Z, W)`` pixel by pixel, from the model's definition."""
    p_off = (1 - leak) * (1 - strength) ** (Z.astype(np.int64) @ W)
    return float(np.sum(np.log(np.where(X == 1, 1 - p_off, p_off))))


def assert_chain_follows(values, edges, p, *, n_tests=1, what):
    """The chain's visits to the bins ``edges`` against probabilities ``p``."""
    labels = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(p) - 1)
    pvalues, *_ = chain_frequency_pvalues(labels, p, n_eff=chain_ess(labels, len(p)))
    limit = TEST_LEVEL / (n_tests * len(p))
    assert pvalues.min() >= limit, (
        f"{what}: visited {np.bincount(labels, minlength=len(p)) / len(labels)}, exact {p}, "
        f"smallest p-value {pvalues.min():.1e} (limit {limit:.1e})")


# --------------------------------------------------------------------------------------
# each update given (Z, W)
# --------------------------------------------------------------------------------------


def test_the_count_table_keeps_the_likelihood():
    rng = np.random.default_rng(0)
    X = (rng.random((7, 5)) < 0.5).astype(np.int8)
    Z = (rng.random((7, 4)) < 0.5).astype(np.int8)
    W = (rng.random((4, 5)) < 0.5).astype(np.int64)
    n_off, n_on = noisy_or._count_table(X, Z, W)
    for strength, leak in ((0.8, 0.1), (0.3, 0.02), (0.999, 0.001)):
        assert noisy_or._log_likelihood_of_table(n_off, n_on, strength, leak) == pytest.approx(
            direct_log_likelihood(X, Z, W, strength, leak), rel=1e-12)


def conditional_bins(name, prior, n_bins=8):
    """Edges of ``n_bins`` bins of about equal probability under the exact conditional of
    ``name`` given the fixed state, and their probabilities (each by ``quad``)."""
    def density(value):
        values = dict(MODEL, **{name: value})
        return stats.beta.pdf(value, *prior) * math.exp(direct_log_likelihood(
            X_FIXED, Z_FIXED, W_FIXED, values["strength"], values["leak"]))

    grid = np.linspace(0.0, 1.0, 401)
    pieces = [integrate.quad(density, lo, hi, epsabs=0, epsrel=1e-10)[0]
              for lo, hi in zip(grid[:-1], grid[1:])]
    cdf = np.concatenate([[0.0], np.cumsum(pieces)]) / np.sum(pieces)
    edges = np.interp(np.linspace(0, 1, n_bins + 1), cdf, grid)
    edges[0], edges[-1] = 0.0, 1.0
    mass = np.array([integrate.quad(density, lo, hi, epsabs=0, epsrel=1e-10)[0]
                     for lo, hi in zip(edges[:-1], edges[1:])])
    return edges, mass / mass.sum()


def slice_chain(name, prior, n_steps, rng):
    params = NoisyOrParameters.checked(1.0, **MODEL)
    values = np.empty(n_steps)
    for t in range(n_steps):
        params = noisy_or._update_parameters(X_FIXED, Z_FIXED, W_FIXED, params,
                                             {name: prior}, rng)
        values[t] = getattr(params, name)
    return values


SLICE_CASES = [pytest.param("strength", (2.0, 3.0), 60, id="strength"),
               pytest.param("leak", (1.5, 6.0), 61, id="leak")]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("name, prior, seed", SLICE_CASES)
def test_slice_step_leaves_the_exact_conditional_invariant(name, prior, seed):
    """5,000 slice steps with ``(Z, W)`` fixed: eight bins of the exact conditional."""
    edges, p = conditional_bins(name, prior)
    values = slice_chain(name, prior, 5_000, stat_rng(seed))
    assert np.all((values >= noisy_or.MIN_PROBABILITY) & (values <= 1 - noisy_or.MIN_PROBABILITY))
    assert_chain_follows(values, edges, p, what=f"{name} given (Z, W)")


def beta_bins(a, b, n_bins=8):
    edges = stats.beta.ppf(np.linspace(0, 1, n_bins + 1), a, b)
    edges[0], edges[-1] = 0.0, 1.0
    return edges, np.diff(stats.beta.cdf(edges, a, b))


def conjugate_draws(prior, W, n_draws, rng):
    params = NoisyOrParameters.checked(1.0, **MODEL)
    return np.array([noisy_or._update_parameters(X_FIXED, Z_FIXED, W, params,
                                                 {"weight_prob": prior}, rng).weight_prob
                     for _ in range(n_draws)])


# four links of six on: the conditional's mean below 1/2 under Beta(1, 5), above under
# Beta(5, 1), so both sides of the inverse CDF are drawn
CONJUGATE_CASES = [pytest.param((1.0, 5.0), 62, id="mean-below-half"),
                   pytest.param((5.0, 1.0), 63, id="mean-above-half")]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("prior, seed", CONJUGATE_CASES)
def test_link_probability_draw_is_its_beta_conditional(prior, seed):
    """20,000 independent draws: eight bins of Beta(a + 4, b + 2), exact binomial tails."""
    assert W_FIXED.sum() == 4 and W_FIXED.size == 6
    edges, p = beta_bins(prior[0] + 4, prior[1] + 2)
    draws = conjugate_draws(prior, W_FIXED, 20_000, stat_rng(seed))
    counts = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=8)
    assert_binomial_counts(counts, draws.size, p, what="link probability bins")


def test_the_truncated_beta_stays_in_the_support_for_extreme_shapes():
    rng = np.random.default_rng(1)
    for a, b in ((0.01, 0.01), (0.01, 1e6), (1e6, 0.01), (1e6, 1e6), (0.01, 1e8)):
        draws = [noisy_or._truncated_beta(a, b, rng) for _ in range(200)]
        assert all(noisy_or.MIN_PROBABILITY <= d <= 1 - noisy_or.MIN_PROBABILITY for d in draws)


def _plant(monkeypatch, bug):
    if bug == "slice target without its prior":
        monkeypatch.setattr(noisy_or, "_log_beta_prior", lambda value, prior: 0.0)
    elif bug == "conjugate shapes swapped":
        right = noisy_or._truncated_beta
        monkeypatch.setattr(noisy_or, "_truncated_beta", lambda a, b, rng: right(b, a, rng))


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("bug", ["slice target without its prior", "conjugate shapes swapped"])
def test_the_checks_catch_a_planted_bug(monkeypatch, bug):
    """Each bug moves a bin's probability by many Monte Carlo standard errors (the prior
    Beta(2, 3) against a uniform one on 12 pixels; Beta(5, 7) against Beta(7, 5))."""
    _plant(monkeypatch, bug)
    with pytest.raises(AssertionError):
        if bug == "slice target without its prior":
            test_slice_step_leaves_the_exact_conditional_invariant("strength", (2.0, 3.0), 64)
        else:
            test_link_probability_draw_is_its_beta_conditional((1.0, 5.0), 65)


# --------------------------------------------------------------------------------------
# the whole sampler against the enumeration, the learned parameter integrated out
# --------------------------------------------------------------------------------------


def polynomial_degree(name, X, k_max, prior):
    """The degree in the learned parameter of prior x ``p(X | class, parameter)``, ``W``
    summed out: a pixel's probability is ``(1 - leak)(1 - strength)^c`` or one minus it, of
    degree ``c <= k_max`` in the strength and 1 in the leak; a pixel's links weigh ``p^j (1 -
    p)^(K - j)``, degree ``K <= k_max``; a Beta prior with integer shapes adds ``a + b - 2``."""
    N, D = X.shape
    per_parameter = dict(strength=N * D * k_max, leak=N * D, weight_prob=D * k_max)
    return per_parameter[name] + int(prior[0] + prior[1] - 2)


def integrated_posterior(X, name, prior, alpha, k_max):
    """The exact class posterior and the learned parameter's density, the parameter
    integrated out under its Beta prior (integer shapes).

    For each class, prior times ``p(X, class | parameter)`` is a polynomial in the
    parameter (:func:`polynomial_degree`): interpolated exactly at that many Chebyshev
    points (checked at one more point), it integrates exactly. The prior's truncation to
    ``[1e-9, 1 - 1e-9]`` moves the integrals by about 1e-9 of their size. Returns the
    :class:`ibp_lab.inference.exact.ClassPosterior` and the parameter's normalised
    antiderivative (a function of the parameter).
    """
    degree = polynomial_degree(name, X, k_max, prior)
    n_nodes = degree + 1
    nodes = (np.cos(np.pi * (np.arange(n_nodes) + 0.5) / n_nodes) + 1) / 2

    def log_terms(value):
        post = noisy_or.class_posterior(X, alpha=alpha, **dict(MODEL, **{name: value}),
                                        k_max=k_max)
        return post, stats.beta.logpdf(value, *prior) + post.log_weights

    posts, logs = zip(*(log_terms(v) for v in nodes))
    logs = np.array(logs)
    shift = logs.max()
    coef = chebyshev.chebfit(2 * nodes - 1, np.exp(logs - shift), degree)
    # the interpolant is the polynomial: one more point, off the nodes, agrees
    _, check = log_terms(0.37)
    np.testing.assert_allclose(chebyshev.chebval(2 * 0.37 - 1, coef), np.exp(check - shift),
                               rtol=1e-7, atol=1e-9 * np.exp(check - shift).max())
    antiderivative = chebyshev.chebint(coef, lbnd=-1)
    class_mass = chebyshev.chebval(1.0, antiderivative) / 2  # d(value) = dt / 2
    total = class_mass.sum()
    # the tail beyond k_max: the prior's tail times the largest likelihood, (1 - leak) per
    # pixel that is off, the leak's power averaged over its prior when it is learned
    zeros = int(np.sum(X == 0))
    log_leak_term = (zeros * math.log1p(-MODEL["leak"]) if name != "leak" else
                     math.log(stats.beta.expect(lambda e: (1 - e) ** zeros, prior)))
    rate = alpha * sum(1.0 / i for i in range(1, X.shape[0] + 1))
    log_tail = stats.poisson(rate).logsf(k_max) + log_leak_term - shift
    tail_bound = float(1.0 / (1.0 + total * math.exp(-log_tail)))
    post = posts[0]
    probabilities = class_mass / total
    exact_post = exact.ClassPosterior(post.counts, post.k_plus, np.log(class_mass) + shift,
                                      probabilities, tail_bound)
    total_coef = antiderivative.sum(axis=1)

    def cdf(value):
        return chebyshev.chebval(2 * np.asarray(value) - 1, total_coef) / 2 / total
    return exact_post, cdf


LEARNING_CASES = [
    pytest.param("strength", (2.0, 2.0), 70, id="strength"),
    pytest.param("leak", (1.0, 3.0), 71, id="leak"),
    pytest.param("weight_prob", (2.0, 1.0), 72, id="weight_prob"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("name, prior, seed", LEARNING_CASES)
@pytest.mark.slow  # 40-60 s each on the shared 2-core machine (make test only; see README)
def test_learning_matches_the_enumeration(name, prior, seed):
    """``run_noisy_or`` learning one parameter, 40,000 sweeps on three images of two pixels
    (alpha 0.25, k_max 6): the classes of ``Z`` and eight bins of the parameter against the
    enumeration integrated over the parameter, each check at 1e-3 / 2."""
    alpha, k_max, n_sweeps, burn = 0.25, 6, 40_000, 100
    post, cdf = integrated_posterior(X_TWO, name, prior, alpha, k_max)
    assert post.tail_bound < 1e-3
    assert np.isclose(float(cdf(1.0)), 1.0, rtol=1e-9)
    run = noisy_or.run_noisy_or(X_TWO, n_sweeps, stat_rng(seed), alpha=alpha, **MODEL,
                                burn=burn, learn=[name], priors={name: prior})
    states = run.samples
    replay = iter(states[1:])
    assert_leaves_posterior_invariant(lambda Z: next(replay), X_TWO, alpha, 1.0, 1.0,
                                      n_steps=len(states) - 1, burn=0, Z0=states[0],
                                      posterior=post, n_tests=2, what=f"learning {name}")
    grid = np.linspace(0.0, 1.0, 2001)
    edges = np.interp(np.linspace(0, 1, 9), cdf(grid), grid)
    edges[0], edges[-1] = 0.0, 1.0
    p = np.diff(cdf(edges))
    assert_chain_follows(run.trace[name].values[burn:], edges, p / p.sum(), n_tests=2,
                         what=f"the learned {name}")


# --------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------


def test_the_runner_traces_the_learned_parameters_and_their_prior():
    X = (np.random.default_rng(3).random((10, 4)) < 0.4).astype(np.int8)
    priors = dict(strength=(2.0, 2.0), leak=(1.0, 9.0))  # weight_prob's left uniform
    runs = [noisy_or.run_noisy_or(X, 15, np.random.default_rng(4), alpha=1.0, **MODEL,
                                  priors=priors) for _ in range(2)]
    run = runs[0]
    np.testing.assert_array_equal(run.trace["log_joint"], runs[1].trace["log_joint"])
    assert {"strength", "leak", "weight_prob"} <= set(run.trace.data_vars)
    assert run.trace.attrs["leak"] == 0.1 and run.trace.attrs["leak_prior"] == "Beta(1.0, 9.0)"
    last = {name: float(run.trace[name].values[-1]) for name in ("strength", "leak", "weight_prob")}
    assert len({run.trace["strength"].values[i] for i in range(15)}) > 1  # it moves
    log_lik = noisy_or.log_likelihood(X, run.Z, run.A, strength=last["strength"],
                                      leak=last["leak"])
    assert run.trace["log_likelihood"].values[-1] == pytest.approx(log_lik, rel=1e-12)
    # the joint: likelihood, links, classes and the three Beta priors
    from ibp_lab.models.prior import log_prior
    W = run.A
    log_links = W.sum() * math.log(last["weight_prob"]) + (W.size - W.sum()) * math.log1p(
        -last["weight_prob"])
    log_priors = sum(stats.beta.logpdf(last[name], *priors.get(name, (1.0, 1.0))) for name in last)
    assert run.trace["log_joint"].values[-1] == pytest.approx(
        log_lik + log_links + log_prior(run.Z, 1.0) + log_priors, rel=1e-12)
    assert "learned strength, leak, weight_prob" in run.trace.attrs["sampler"]


def test_a_parameter_not_learned_stays_put_and_out_of_the_trace():
    X = (np.random.default_rng(3).random((10, 4)) < 0.4).astype(np.int8)
    run = noisy_or.run_noisy_or(X, 10, np.random.default_rng(4), alpha=1.0, **MODEL,
                                learn="weight_prob")
    assert "weight_prob" in run.trace and "strength" not in run.trace and "leak" not in run.trace
    assert run.trace.attrs["strength"] == 0.8
