"""Tests of :mod:`ibp_lab.inference.variational`: coordinate ascent checked step by step and against
exact evidence. The block updates and the ELBO are those of the private
``ibp_lab.inference._mean_field`` (``mf`` here), which the estimator runs.

- every block update raises the ELBO (never lowers it), on tiny and on larger data;
- every block update is the exact maximiser of the ELBO in its block: a numerical optimiser
  started at the update finds nothing higher (the stick-breaking Betas at the fixed weights
  ``y`` of the bound, as the update is defined);
- the ELBO is below the exact log evidence: the finite family's below the finite model's
  (:func:`finite_log_evidence`), the stick-breaking family's ``ibp_elbo_`` below the IBP's
  (:func:`ibp_lab.inference.exact.log_evidence`, corrected for its own ``k_max`` tail);
- the cost of the columns beyond the truncation against Monte Carlo;
- the ELBO of the empty matrix with its exact posterior of ``pi`` and ``A`` equals the
  exact finite joint ``log p_K(X, Z = 0)`` (every term at once);
- the predictive draws against their law under ``q``;
- :func:`finite_log_evidence` against a direct sum over every binary matrix;
- recovery of the four features from the best of several starts;
- bad input refused with messages that name the argument.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import minimize
from scipy.special import betaln, logit
from scipy.stats import beta as beta_dist
from scipy.stats import multivariate_normal

from ibp_lab.inference import _mean_field as mf
from ibp_lab.inference import exact
from ibp_lab.inference import variational as vi
from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.evaluation.summaries import match_features
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, normal_two_sided_z

TINY = [
    (np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]), dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)),
    (np.array([[0.9, 0.8], [1.1, 0.7], [0.0, 0.1]]), dict(alpha=1.0, sigma_x=0.3, sigma_a=1.0)),
    (np.array([[2.0, 0.1, -1.0], [-1.5, 0.4, 0.2], [1.9, 0.3, -0.8]]),
     dict(alpha=0.8, sigma_x=0.5, sigma_a=1.0)),
]


def _problem(X, family, n_features, alpha, sigma_x, sigma_a):
    return mf.Problem(np.asarray(X, float), alpha, sigma_x**2, sigma_a**2, n_features, family)


def _fitted_state(X, family, n_features, seed, n_iter=3, **hyper):
    problem = _problem(X, family, n_features, **hyper)
    state = vi._initial_state(problem, np.random.default_rng(seed))
    for _ in range(n_iter):
        mf.iterate(state, problem)
    return problem, state


# --------------------------------------------------------------------------------------
# coordinate ascent
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", vi.FAMILIES)
def test_elbo_never_decreases_at_any_block(family):
    X_big, _, _ = simulate_four_feature_data(np.random.default_rng(5), n=40, sigma_x=0.5)
    cases = [(X, h, 4) for X, h in TINY] + [(X_big, dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0), 6)]
    for X, hyper, K in cases:
        problem = _problem(X, family, K, **hyper)
        for seed in range(3):
            state = vi._initial_state(problem, np.random.default_rng(seed))
            values = [mf.elbo(state, problem)]
            for _ in range(30):
                mf.iterate(state, problem,
                           on_block=lambda name: values.append(mf.elbo(state, problem)))
            steps = np.diff(values)
            # rounding only: a few ulps of the ELBO's size
            assert steps.min() > -1e-9 * max(1.0, abs(values[-1])), (family, seed, steps.min())


def _check_block_maximum(objective, start, label):
    """A numerical optimiser started at the update cannot go higher (beyond 1e-7 nats)."""
    best = minimize(lambda p: -objective(p), start, method="Nelder-Mead",
                    options=dict(xatol=1e-10, fatol=1e-12, maxiter=20_000))
    assert -best.fun <= objective(start) + 1e-7, label
    # and the objective is not flat there: moving away costs something
    assert objective(start + 0.05) < objective(start), label


@pytest.mark.parametrize("family", vi.FAMILIES)
def test_each_block_update_is_its_exact_maximiser(family):
    X, hyper = TINY[0]
    problem, state = _fitted_state(X, family, 3, seed=1, **hyper)
    k = 1
    # q(A_k): the mean and log variance
    mf.update_feature(k, state, problem)

    def feature_objective(p):
        trial = _copy(state)
        trial.phi[k], trial.Phi[k] = p[:-1], np.exp(p[-1])
        trial.resid = problem.X - trial.nu @ trial.phi
        return mf.elbo(trial, problem)

    _check_block_maximum(feature_objective, np.r_[state.phi[k], np.log(state.Phi[k])], "A_k")

    # q(z_{., k}): one column of logits
    mf.update_column(k, state, problem, mf.prior_log_odds(state.tau, problem))

    def column_objective(p):
        trial = _copy(state)
        trial.nu[:, k] = 1.0 / (1.0 + np.exp(-p))
        trial.resid = problem.X - trial.nu @ trial.phi
        return mf.elbo(trial, problem)

    _check_block_maximum(column_objective, logit(state.nu[:, k]), "z_k")

    # the Betas (all K: with y fixed the objective is a sum over k), log parameters
    y = mf.stick_terms(state.tau)[2] if family == "stick_breaking" else None
    mf.update_sticks(state, problem)

    def beta_objective(p):
        trial = _copy(state)
        trial.tau = np.exp(p).reshape(-1, 2)
        return mf.elbo(trial, problem, y)

    _check_block_maximum(beta_objective, np.log(state.tau).ravel(), "tau")


def _copy(state):
    return mf.State(*(np.array(getattr(state, f)) for f in ("nu", "phi", "Phi", "tau", "resid")))


def test_best_weights_make_the_bound_tightest():
    # the softmax y maximises the Jensen bound on E log(1 - prod v): any other y is lower
    tau = np.array([[2.0, 1.5], [3.0, 0.7], [1.2, 2.2]])
    e_log_pi, bound, y = mf.stick_terms(tau)
    rng = np.random.default_rng(0)
    for _ in range(20):
        other = np.tril(rng.random((3, 3)))
        other /= other.sum(axis=1, keepdims=True)
        assert np.all(mf.stick_terms(tau, other)[1] <= bound + 1e-12)
    assert np.allclose(mf.stick_terms(tau, y)[1], bound)


@pytest.mark.statistical(rate=2e-4)  # 3 one-sided and 1 two-sided 4-SE tests
def test_stick_bound_is_below_monte_carlo_expectation():
    # E log(1 - v1 v2 v3) by Monte Carlo (200,000 draws: standard error below 0.003);
    # the bound must not exceed it by more than 4 standard errors
    tau = np.array([[2.0, 1.5], [3.0, 0.7], [1.2, 2.2]])
    rng = stat_rng(11)
    v = rng.beta(tau[:, 0], tau[:, 1], size=(200_000, 3))
    values = np.log1p(-np.cumprod(v, axis=1))
    mean, se = values.mean(axis=0), values.std(axis=0) / np.sqrt(values.shape[0])
    bound = mf.stick_terms(tau)[1]
    assert np.all(bound <= mean + 4 * se)
    assert bound[0] == pytest.approx(mean[0], abs=4 * se[0])  # exact for one stick



@pytest.mark.statistical(rate=TEST_LEVEL)
def test_stick_bound_slack_matches_quadrature():
    """The slack of a fitted two-column q against a deterministic answer.

    ``E log(1 - v1 v2)`` under the fitted Betas by nested quadrature (to 1e-8), so the
    exact slack is ``sum_k w_k (E log(1 - pi_k) - L_k)``; the Monte Carlo estimate
    must lie within ``z`` of its own standard errors (``z`` the two-sided normal
    quantile at TEST_LEVEL; CLT over 50,000 independent draws).
    """
    X, hyper = TINY[0]
    fit = vi.VariationalIBP(**hyper, n_features=2, rng=np.random.default_rng(3)).fit(X)
    tau, nu = fit.tau_, fit.feature_probabilities_
    first, second = (beta_dist(*row) for row in tau)
    inner = lambda v1: integrate.quad(lambda v2: np.log1p(-v1 * v2) * second.pdf(v2),
                                      0, 1, epsabs=1e-10)[0]
    e_log_off = np.array([first.expect(lambda v1: np.log1p(-v1)),
                          integrate.quad(lambda v1: inner(v1) * first.pdf(v1), 0, 1,
                                         epsabs=1e-10)[0]])
    exact_slack = ((e_log_off - mf.stick_terms(tau)[1]) * (1 - nu).sum(axis=0)).sum()
    slack, se = fit.stick_bound_slack(50_000, stat_rng(12))
    assert exact_slack >= -1e-8  # the bound is a bound
    assert abs(slack - exact_slack) <= normal_two_sided_z(TEST_LEVEL) * se, (slack, se,
                                                                           exact_slack)
    assert fit.stick_bound_slack(10, np.random.default_rng(0)) == fit.stick_bound_slack(
        10, np.random.default_rng(0))


def test_the_finite_family_has_no_stick_slack():
    X, hyper = TINY[0]
    fit = vi.VariationalIBP(**hyper, n_features=2, family="finite",
                            rng=np.random.default_rng(3)).fit(X)
    assert fit.stick_bound_slack(10, np.random.default_rng(0)) == (0.0, 0.0)

# --------------------------------------------------------------------------------------
# against the exact evidence
# --------------------------------------------------------------------------------------


def test_finite_log_evidence_matches_a_direct_sum_over_matrices():
    # every binary N x K matrix, with its beta-Bernoulli probability and the N x N Gaussian
    X = np.array([[1.0, -0.2], [0.4, 0.9]])
    alpha, sigma_x, sigma_a, K = 1.5, 0.5, 1.1, 3
    N, D = X.shape
    terms = []
    for bits in itertools.product([0, 1], repeat=N * K):
        Z = np.array(bits).reshape(N, K)
        m = Z.sum(axis=0)
        log_prior = np.sum(betaln(alpha / K + m, N - m + 1) - betaln(alpha / K, 1))
        cov = sigma_a**2 * Z @ Z.T + sigma_x**2 * np.eye(N)
        log_lik = sum(multivariate_normal(np.zeros(N), cov).logpdf(X[:, d]) for d in range(D))
        terms.append(log_prior + log_lik)
    direct = np.logaddexp.reduce(terms)
    found = vi.finite_log_evidence(X, alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a,
                                   n_features=K)
    assert found == pytest.approx(direct, abs=1e-10)


def test_finite_log_evidence_is_the_sum_over_every_class_one_by_one():
    # the evidence sums all classes at once; here each class is scored by the public
    # one-class functions and the terms added in Python (an independent path)
    from ibp_lab.models.finite import finite_log_class_probability
    from ibp_lab.models.linear_gaussian import collapsed_loglik

    X = np.array([[0.3, -1.0], [1.2, 0.1], [-0.4, 0.8]])
    hyper = dict(alpha=0.8, sigma_x=0.6, sigma_a=1.3)
    for K in (1, 4):
        terms = [finite_log_class_probability(Z, alpha=hyper["alpha"], n_features=K)
                 + collapsed_loglik(X, Z, hyper["sigma_x"], hyper["sigma_a"])
                 for Z in exact.enumerate_classes(X.shape[0], K)]
        found = vi.finite_log_evidence(X, **hyper, n_features=K)
        assert found == pytest.approx(np.logaddexp.reduce(terms), abs=1e-10), K


def test_finite_log_evidence_refuses_an_enumeration_too_large_by_its_size():
    # K = 9 with four rows would be 1,307,504 classes, over exact.MAX_CLASSES
    with pytest.raises(ValueError, match="n_features"):
        vi.finite_log_evidence(np.ones((4, 1)), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                               n_features=9)
    with pytest.raises(ValueError, match="X must have at most 4 rows"):
        vi.finite_log_evidence(np.ones((5, 1)), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                               n_features=2)


@pytest.mark.parametrize("case", range(len(TINY)))
def test_elbo_is_below_the_exact_log_evidence(case):
    X, hyper = TINY[case]
    post = exact.class_posterior(X, **hyper, k_max=14)
    # exact.log_evidence omits the classes beyond k_max; tail_bound bounds their share, so
    # the true log p(X) is at most this (an allowance below 1e-3 nats here)
    assert post.tail_bound < 1e-3
    log_p = np.logaddexp.reduce(post.log_weights) - np.log1p(-post.tail_bound)
    gaps = []
    for K in (2, 4):
        finite_p = vi.finite_log_evidence(X, **hyper, n_features=K)
        for seed in range(4):
            sb = vi.VariationalIBP(**hyper, n_features=K, rng=np.random.default_rng(seed),
                                   max_iter=500).fit(X)
            fin = vi.VariationalIBP(**hyper, n_features=K, family="finite", max_iter=500,
                                    rng=np.random.default_rng(seed)).fit(X)
            assert sb.ibp_elbo_ <= log_p, (K, seed)
            assert sb.ibp_elbo_ <= sb.elbo_[-1]
            assert fin.elbo_[-1] <= finite_p, (K, seed)
            gaps.append(log_p - sb.ibp_elbo_)
    # and the bound is not vacuous: the best fit comes within 3 nats (measured: 1.0 to 2.2
    # on these data sets; a wrong ELBO term would typically move it by far more)
    assert min(gaps) < 3.0


def test_elbo_at_the_empty_matrix_is_the_exact_joint():
    # finite family, q(Z = 0) = 1 and q(pi) q(A) = p(pi, A | Z = 0, X): the ELBO is exactly
    # log p_K(X, Z = 0) (the chapter's exercise ex-vi-empty derives it), a check of every
    # ELBO term at once against the enumeration's ingredients
    from ibp_lab.models.finite import finite_log_class_probability
    from ibp_lab.models.linear_gaussian import collapsed_loglik

    X, hyper = TINY[2]
    N, D = X.shape
    K = 3
    problem = _problem(X, "finite", K, **hyper)
    tau = np.tile([hyper["alpha"] / K, N + 1.0], (K, 1))
    state = mf.State(np.zeros((N, K)), np.zeros((K, D)), np.full(K, hyper["sigma_a"] ** 2),
                     tau, X.copy())
    empty = np.zeros((N, 0))
    joint = (finite_log_class_probability(empty, alpha=hyper["alpha"], n_features=K)
             + collapsed_loglik(X, empty, hyper["sigma_x"], hyper["sigma_a"]))
    assert mf.elbo(state, problem) == pytest.approx(joint, abs=1e-10)


@pytest.mark.statistical(rate=3e-4)  # 4 two-sided 4-SE tests of means
def test_predictive_draws_follow_q():
    # stick-breaking: pi_k = prod_{m<=k} v_m with independent Beta sticks, so the mean of
    # the draws is prior_probabilities_ (the product of the means); 40,000 draws, each
    # mean within 4 Monte Carlo standard errors. Features and variances are q's.
    X, hyper = TINY[0]
    fit = vi.VariationalIBP(**hyper, n_features=4, rng=np.random.default_rng(0)).fit(X)
    p, A, v = fit.predictive_draws(40_000, stat_rng(14))
    se = p.std(axis=0) / np.sqrt(p.shape[0])
    assert np.all(np.abs(p.mean(axis=0) - fit.prior_probabilities_) <= 4 * se)
    assert np.all(np.diff(p, axis=1) <= 0)  # a product of sticks only shrinks
    assert np.array_equal(A[7], fit.features_) and np.array_equal(v[7], fit.feature_variances_)


@pytest.mark.statistical(rate=1e-4)  # one one-sided, one two-sided 4-SE test
def test_cost_beyond_truncation_matches_monte_carlo():
    # N sum_{k>K} log(1 - pi_K w_k), w_k products of Beta(alpha, 1) sticks: 100,000 draws
    # with 200 extra sticks (the rest is below 1e-30); the series is a lower bound that
    # should equal the mean within 4 standard errors
    tau = np.array([[3.0, 1.0], [2.5, 1.2]])
    alpha, N = 1.5, 3
    rng = stat_rng(12)
    n = 100_000
    pi_K = np.prod(rng.beta(tau[:, 0], tau[:, 1], size=(n, 2)), axis=1)
    w = np.cumprod(rng.beta(alpha, 1.0, size=(n, 200)), axis=1)
    values = N * np.log1p(-pi_K[:, None] * w).sum(axis=1)
    mean, se = values.mean(), values.std() / np.sqrt(n)
    series = mf.beyond_truncation(tau, alpha, N)
    assert series <= mean + 4 * se
    assert series == pytest.approx(mean, abs=4 * se)


@pytest.mark.statistical(rate=1e-3)
def test_k_plus_law_under_q_sums_to_one_and_matches_simulation():
    X, hyper = TINY[0]
    fit = vi.VariationalIBP(**hyper, n_features=4, rng=np.random.default_rng(0)).fit(X)
    p = fit.k_plus_distribution()
    rng = stat_rng(13)
    draws = rng.random((50_000,) + fit.feature_probabilities_.shape) < fit.feature_probabilities_
    k_plus = draws.any(axis=1).sum(axis=1)
    counts = np.bincount(k_plus, minlength=p.size)
    # the draws are independent, so each count is exactly Binomial(50,000, p_k): an exact
    # two-sided binomial test per bin at 1e-3 / bins (Bonferroni). The normal interval of
    # 4 standard errors used before had a true rate of 3.1e-3 (bins with n p of 1.6 and
    # 0.0016), ten times the 3e-4 it seemed to claim (third audit).
    from scipy.stats import binomtest

    level = 1e-3 / p.size
    pvalues = [binomtest(int(c), k_plus.size, float(q)).pvalue if 0 < q < 1 else float(c == 0)
               for c, q in zip(counts, p)]
    assert min(pvalues) >= level, (counts / k_plus.size, p, pvalues)


# --------------------------------------------------------------------------------------
# recovery, new rows, doors
# --------------------------------------------------------------------------------------


def test_best_of_several_starts_recovers_the_four_features():
    """A regression check on one fixed data set, not a statistical claim (so its seed is a
    literal, not stat_rng). Measured on 20 fresh data sets of the same kind (seeds
    21 + k * 1,000,003): a single random start recovers all four features with probability
    about 0.13 (32 of 240 starts); when any of the 12 starts recovered (14 data sets), the
    largest ELBO picked a recovering start every time; on 6 data sets none of 12 starts
    recovered, and on one of them none of 60 (best correlation 0.81). So "the best of 12
    recovers" holds for about 70% of data sets, too often false for a test of a stated
    rate."""
    X, _, A = simulate_four_feature_data(np.random.default_rng(21), n=100, sigma_x=0.5,
                                         p_on=0.5)
    fits = [vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=8, max_iter=1000,
                              tol=1e-8,
                              rng=np.random.default_rng(s)).fit(X) for s in range(12)]
    best = max(fits, key=lambda f: f.elbo_[-1])
    # each feature pools about 50 images with noise 0.5 (a pixel's error about 0.07):
    # a matched feature of the right shape correlates above 0.9 with the truth
    assert match_features(A, best.features_).ref_correlation().min() > 0.9


def test_transform_and_score_on_new_rows():
    X, _, A = simulate_four_feature_data(np.random.default_rng(3), n=80, sigma_x=0.3)
    fit = vi.VariationalIBP(alpha=1.0, sigma_x=0.3, sigma_a=1.0, n_features=5,
                            rng=np.random.default_rng(0)).fit(X)
    nu = fit.transform(X[:5])
    assert nu.shape == (5, 5) and np.all((nu >= 0) & (nu <= 1))
    assert np.allclose(nu, fit.feature_probabilities_[:5], atol=0.05)
    assert fit.score(X[:10]) > fit.score(X[:10] + 3.0)  # shifted rows fit worse


def test_fit_is_reproducible_and_leaves_rng_alone():
    X, hyper = TINY[0]
    rng = np.random.default_rng(4)
    state = rng.bit_generator.state
    a = vi.VariationalIBP(**hyper, n_features=3, rng=rng).fit(X)
    b = vi.VariationalIBP(**hyper, n_features=3, rng=rng).fit(X)
    assert rng.bit_generator.state == state
    assert np.array_equal(a.elbo_, b.elbo_)


@pytest.mark.parametrize("change, message", [
    (dict(alpha=-1.0), "alpha must be > 0"),
    (dict(sigma_x=0.0), "sigma_x must be > 0"),
    (dict(n_features=0), "n_features must be an integer >= 1"),
    (dict(family="beta"), "family must be one of"),
    (dict(max_iter=0), "max_iter must be an integer >= 1"),
    (dict(tol=-1.0), "tol must be >= 0"),
])
def test_bad_parameters_are_refused_by_fit(change, message):
    params = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0) | change
    with pytest.raises(ValueError, match=message):
        vi.VariationalIBP(**params).fit(np.eye(3))


def test_bad_data_and_unfitted_use_are_refused():
    with pytest.raises(ValueError, match="X must be finite"):
        vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0).fit([[np.nan, 1.0]])
    with pytest.raises(TypeError, match="rng must be None, a non-negative int seed or a numpy"):
        vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, rng=3.0).fit(np.eye(2))
    with pytest.raises(ValueError, match="call fit"):
        vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0).features_
    fit = vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2,
                            family="finite").fit(np.eye(3))
    with pytest.raises(ValueError, match="X has 2 features, but VariationalIBP is expecting 3"):
        fit.transform(np.eye(2))
    with pytest.raises(ValueError, match="ibp_elbo_ needs family='stick_breaking'"):
        fit.ibp_elbo_
    with pytest.raises(ValueError, match="at most 4 rows"):
        vi.finite_log_evidence(np.eye(5), alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2)


@pytest.mark.parametrize("family", ["finite", "stick_breaking"])
@pytest.mark.parametrize("alpha", [1e-10, 1e-30, 1e-100])
def test_the_elbo_never_falls_even_with_a_vanishing_alpha(family, alpha):
    """Each block update is an exact maximiser, so the ELBO may only rise (to rounding).
    With alpha / K below about 1e-15 the prior's expectation and q's entropy each held a
    term of order K / alpha that the other cancelled, and the sum fell by up to 0.47 nats
    while ``converged_`` said True (third audit); the KL form keeps every term small."""
    X = np.random.default_rng(0).normal(size=(6, 3))
    fit = vi.VariationalIBP(alpha=alpha, sigma_x=0.5, sigma_a=1.0, family=family,
                            n_features=4, rng=np.random.default_rng(1)).fit(X)
    assert np.diff(fit.elbo_).min() >= -1e-9 * (1 + np.abs(fit.elbo_[:-1]).max())
    assert fit.converged_


def test_a_falling_elbo_is_reported_not_called_convergence(monkeypatch):
    X = np.random.default_rng(0).normal(size=(6, 3))
    real = vi.elbo  # the mean-field ELBO, as fit calls it
    calls = []

    def falling_on_the_third(state, problem, y=None):
        calls.append(1)
        return real(state, problem, y) - (1e3 if len(calls) == 3 else 0.0)

    monkeypatch.setattr(vi, "elbo", falling_on_the_third)
    with pytest.warns(RuntimeWarning, match="the ELBO fell by"):
        fit = vi.VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=3,
                                rng=np.random.default_rng(1)).fit(X)
    assert not fit.converged_ and fit.n_iter_ == 3
