"""Tests of ibp_lab.inference.hyperposterior: the buffet's parameters given a binary matrix.

The exact answers: the class law against ibp_lab.models.prior.log_prior; alpha integrated out
against numerical quadrature; the posteriors of d (and of beta and d together) against
quadrature over a grid, binned, with the chains' frequencies tested by exact binomial
tails at the chain's ESS, Bonferroni over the bins (tests/stats_checks.py); the latent-Z
chain (discounted Gibbs sweep + discount_step) against enumeration of p(d | X).
"""

import itertools

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from ibp_lab.inference import exact
from ibp_lab.inference.chains import DiscountUpdate, GibbsSweep, run_chain
from ibp_lab.inference import hyperposterior as hp
from ibp_lab._hyper import stable_harmonic
from ibp_lab.models.prior import log_prior, sample_ibp
from tests.seeds import stat_rng
from tests.stats_checks import assert_chain_frequencies

Z_SMALL = np.array([[1, 1, 0, 0, 1], [1, 0, 1, 0, 0], [0, 0, 0, 1, 0], [1, 1, 0, 0, 1]])
BIN_EDGES = np.array([1e-8, 0.2, 0.4, 0.6, 0.8, 1 - 1e-9])


def _binned(log_density, edges, n_nodes=40):
    """Probabilities of the bins of a density on [edges[0], edges[-1]] (Gauss-Legendre)."""
    nodes, weights = np.polynomial.legendre.leggauss(n_nodes)
    logs = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        x = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
        logs.append(logsumexp([log_density(v) for v in x], b=0.5 * (hi - lo) * weights))
    logs = np.array(logs)
    return np.exp(logs - logsumexp(logs))


@pytest.mark.parametrize("alpha, beta, discount", [(1.5, 0.8, 0.3), (2.0, 1.0, 0.0),
                                                   (0.4, 3.0, 0.9)])
def test_class_law_from_feature_counts_is_log_prior(alpha, beta, discount):
    # the samplers of this module evaluate the law from FeatureCounts: the same number
    Z = sample_ibp(3.0, 30, np.random.default_rng(3), discount=0.4)
    Z = np.hstack([Z, Z[:, :2]])  # duplicated columns: the K_h! term
    assert hp._log_law(hp.FeatureCounts.of(Z), alpha, beta, discount) == pytest.approx(
        log_prior(Z, alpha, beta=beta, discount=discount), rel=1e-12)


@pytest.mark.parametrize("alpha_prior", [(1.0, 1.0), (2.5, 0.3)])
def test_alpha_integrated_law_matches_quadrature(alpha_prior):
    counts = hp.FeatureCounts.of(Z_SMALL)
    shape, rate = alpha_prior

    def integrand(alpha):
        return np.exp(hp._log_law(counts, alpha, 1.3, 0.4)) * stats.gamma(shape, scale=1 / rate).pdf(alpha)

    value, error = integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-11)
    assert hp._log_law_alpha_integrated(counts, 1.3, 0.4, alpha_prior) == pytest.approx(
        np.log(value), abs=1e-8)


@pytest.mark.statistical(rate=1e-3)
def test_discount_step_targets_the_exact_conditional():
    """A chain of discount_step alone, on an observed Z, against p(d | Z, alpha, beta)
    binned by quadrature: five bins, Bonferroni, false alarm <= 1e-3."""
    alpha, beta, prior = 2.0, 1.3, (2.0, 1.5)
    counts = hp.FeatureCounts.of(Z_SMALL)
    p = _binned(lambda d: stats.beta(*prior).logpdf(d) + hp._log_law(counts, alpha, beta, d),
                BIN_EDGES)
    rng, d, draws = stat_rng(41), 0.5, []
    for _ in range(20_000):
        d = hp.discount_step(Z_SMALL, rng, discount=d, alpha=alpha, beta=beta,
                             discount_prior=prior)
        draws.append(d)
    assert_chain_frequencies(np.digitize(draws, BIN_EDGES[1:-1]), p, what="discount bins")


@pytest.mark.statistical(rate=1e-3)
def test_discount_step_check_sees_a_wrong_prior():
    """Power: the same chain run with a uniform prior is refused against the Beta(2, 1.5)
    answer (the bins' probabilities move by 20-60% of themselves)."""
    alpha, beta = 2.0, 1.3
    counts = hp.FeatureCounts.of(Z_SMALL)
    p = _binned(lambda d: stats.beta(2.0, 1.5).logpdf(d) + hp._log_law(counts, alpha, beta, d),
                BIN_EDGES)
    rng, d, draws = stat_rng(42), 0.5, []
    for _ in range(20_000):
        d = hp.discount_step(Z_SMALL, rng, discount=d, alpha=alpha, beta=beta)
        draws.append(d)
    with pytest.raises(AssertionError):
        assert_chain_frequencies(np.digitize(draws, BIN_EDGES[1:-1]), p, what="discount bins")


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured 17 s (make test only; see README)
def test_sampler_targets_the_joint_posterior_of_beta_and_discount():
    """sample_hyperparameters on an observed Z: the marginals of d (five bins) and of beta
    (four bins) against quadrature of p(beta, d | Z) over a grid (alpha integrated out
    exactly), and the mean of alpha against E[(a + K+) / (b + H)]; Bonferroni over the
    nine bins, false alarm <= 1e-3 (the alpha check is a 6-sd band on 40 batch means)."""
    priors = dict(alpha_prior=(1.0, 1.0), beta_prior=(2.0, 1.0), discount_prior=(1.0, 1.0))
    counts = hp.FeatureCounts.of(Z_SMALL)
    log_b = np.linspace(np.log(1e-4), np.log(60.0), 400)
    d = np.linspace(1e-8, 1 - 1e-9, 401)[1:-1]
    grid = np.array([[hp._log_law_alpha_integrated(counts, np.exp(u), v, priors["alpha_prior"])
                      + 2.0 * u - np.exp(u) for v in d] for u in log_b])  # Gamma(2, 1), Jacobian
    weight = np.exp(grid - grid.max())
    weight /= weight.sum()
    draws = hp.sample_hyperparameters(Z_SMALL, 40_000, stat_rng(43), **priors)
    d_draws, b_draws = draws["discount"].values, draws["beta"].values
    p_d = np.array([weight[:, (d >= lo) & (d < hi)].sum() for lo, hi in
                    zip(BIN_EDGES[:-1], BIN_EDGES[1:])])
    beta_edges = np.array([0.0, 0.8, 1.6, 3.0, np.inf])
    p_b = np.array([weight[(np.exp(log_b) >= lo) & (np.exp(log_b) < hi)].sum() for lo, hi in
                    zip(beta_edges[:-1], beta_edges[1:])])
    # the grid's own error (bin edges between grid points) is below 1e-3 of each bin
    assert_chain_frequencies(np.digitize(d_draws, BIN_EDGES[1:-1]), p_d, n_tests=9,
                             what="discount bins")
    assert_chain_frequencies(np.digitize(b_draws, beta_edges[1:-1]), p_b, n_tests=9,
                             what="beta bins")
    harmonic = np.array([[stable_harmonic(4, np.exp(u), v) for v in d] for u in log_b])
    alpha_mean = float(np.sum(weight * (1.0 + counts.n_features) / (1.0 + harmonic)))
    batches = draws["alpha"].values.reshape(40, -1).mean(axis=1)
    assert abs(batches.mean() - alpha_mean) < 6 * batches.std(ddof=1) / np.sqrt(40)


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured 14 s (make test only; see README)
def test_gibbs_with_discount_steps_matches_enumeration_of_the_discount():
    """Latent Z: the discounted Gibbs sweep alternated with discount_step (run_chain's moves
    GibbsSweep and DiscountUpdate) targets
    p(Z, d | X); its marginal of d must be p(d | X), proportional to the Beta prior times
    the evidence, enumerated at every quadrature node (exact.log_evidence). Five bins,
    Bonferroni, false alarm <= 1e-3; the enumeration's tail is below 1e-4."""
    X = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
    alpha, sigma_x, sigma_a, beta, prior = 0.5, 0.5, 1.3, 1.7, (1.5, 1.5)
    post = exact.class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=10,
                                 discount=0.99)
    assert post.tail_bound < 1e-4  # the largest d has the heaviest tail

    def log_density(d):
        return stats.beta(*prior).logpdf(d) + exact.log_evidence(
            X, alpha, sigma_x, sigma_a, beta=beta, k_max=10, discount=d)

    p = _binned(log_density, BIN_EDGES, n_nodes=8)
    # the chain runner composes them: one sweep, then one discount step, per iteration
    chain = run_chain(X, 30_000, stat_rng(44), alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a,
                      beta=beta, discount=0.5,
                      moves=[GibbsSweep(), DiscountUpdate(prior=prior)])
    draws = chain.trace["discount"].values
    assert_chain_frequencies(np.digitize(draws, BIN_EDGES[1:-1]), p, what="discount bins")


@pytest.mark.parametrize("discount", [0.0, 0.45])
def test_heldout_score_is_a_probability_over_next_rows(discount):
    """Summed over every pattern on the seen features and every number of new ones, the
    next row's probability is 1."""
    Z_train = np.array([[1, 1, 0], [0, 1, 1]])
    total = []
    for pattern in itertools.product([0, 1], repeat=3):
        for n_new in range(40):
            train = np.hstack([Z_train, np.zeros((2, n_new), np.int8)])
            test = np.r_[pattern, np.ones(n_new, np.int8)][None, :]
            total.append(hp.heldout_log_score(train, test, alpha=1.7, beta=0.9,
                                              discount=discount))
    assert logsumexp(total) == pytest.approx(0.0, abs=1e-12)


def _next_row_probabilities(n_seen: int, alpha: float, beta: float, discount: float):
    """The held-out score's take-probability of a feature with m = 1..n_seen owners, and its
    mean number of new features, read off heldout_log_score: with one seen feature,
    score(take) - score(leave) = log(p / (1 - p)); with none, score(one new) - score(none)
    = log(rate)."""
    kw = dict(alpha=alpha, beta=beta, discount=discount)
    take = {}
    for m in range(1, n_seen + 1):
        train = (np.arange(n_seen) < m).astype(np.int8)[:, None]
        log_odds = (hp.heldout_log_score(train, [[1]], **kw)
                    - hp.heldout_log_score(train, [[0]], **kw))
        take[m] = 1.0 / (1.0 + np.exp(-log_odds))
    none = np.zeros((n_seen, 1), np.int8)
    rate = np.exp(hp.heldout_log_score(none, [[1]], **kw) - hp.heldout_log_score(none, [[0]], **kw))
    return take, float(rate)


@pytest.mark.statistical(rate=3e-4)
@pytest.mark.parametrize("n_seen, beta", [(1, 1.0), (3, 1.5)])
def test_heldout_next_row_matches_the_priors_own_sampler_under_a_discount(n_seen, beta):
    """The held-out score's next customer is the prior's: in buffets of n_seen + 1 rows
    drawn by ibp_lab.models.prior.sample_ibp (discount 0.5), the last row takes a feature with m
    owners among the first n_seen as often as the score says, and opens as many new ones.

    Given the first n_seen rows, the last row's takes are independent Bernoulli(p_m), so
    the take count over the cells with m owners is Binomial(cells, p_m) exactly; the new
    count is Poisson(rate) per draw, its mean over R draws has sd sqrt(rate / R). Each of
    the n_seen + 1 comparisons at 4 sd fails a correct score with probability 6.3e-5, so
    at most 2.6e-4 over the four of the larger case. A formula off by as little as the
    (m - d) / (n + beta + d) in place of (m - d) / (n + beta) at n = 1, beta = 1 (0.20 for
    0.25) misses by over 15 sd at 20,000 draws (40,000 cells)."""
    alpha, discount, n_draws = 2.0, 0.5, 20_000
    take, rate = _next_row_probabilities(n_seen, alpha, beta, discount)
    rng = stat_rng(4_811)
    cells, takes, new = np.zeros(n_seen + 1), np.zeros(n_seen + 1), 0
    for _ in range(n_draws):
        Z = sample_ibp(alpha, n_seen + 1, rng, beta=beta, discount=discount)
        owners = Z[:n_seen].sum(axis=0)
        np.add.at(cells, owners, 1)
        np.add.at(takes, owners, Z[n_seen])
        new += int(np.count_nonzero(owners == 0))
    for m in range(1, n_seen + 1):
        p, n = take[m], cells[m]
        assert abs(takes[m] / n - p) < 4.0 * np.sqrt(p * (1 - p) / n), (m, takes[m] / n, p)
    assert abs(new / n_draws - rate) < 4.0 * np.sqrt(rate / n_draws), (new / n_draws, rate)


def test_heldout_score_obeys_the_chain_rule():
    Z = sample_ibp(2.0, 12, np.random.default_rng(5), discount=0.3)
    whole = hp.heldout_log_score(Z[:6], Z[6:], alpha=2.0, discount=0.3)
    steps = sum(hp.heldout_log_score(Z[:n], Z[n:n + 1], alpha=2.0, discount=0.3)
                for n in range(6, 12))
    assert whole == pytest.approx(steps, rel=1e-12)


def test_fixed_discount_stays_fixed_and_zero_is_allowed_then():
    draws = hp.sample_hyperparameters(Z_SMALL, 5, np.random.default_rng(0), discount=0.0,
                                      update_discount=False, update_beta=False, beta=2.0)
    assert (draws["discount"] == 0.0).all() and (draws["beta"] == 2.0).all()


@pytest.mark.parametrize("call, message", [
    (lambda: hp.discount_step(Z_SMALL, np.random.default_rng(0), discount=0.0, alpha=1.0),
     "discount must be in"),
    (lambda: hp.discount_step(Z_SMALL, np.random.default_rng(0), discount=0.5, alpha=1.0,
                              discount_prior=(1.0,)), "discount_prior must be a pair"),
    (lambda: hp.sample_hyperparameters(Z_SMALL, 0, np.random.default_rng(0)), "n_draws"),
    (lambda: hp.heldout_log_score(Z_SMALL, Z_SMALL[:, :2], alpha=1.0), "same columns"),
    (lambda: hp.FeatureCounts.of(np.zeros((0, 2))), "at least one row"),
])
def test_bad_inputs_are_reported_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_curves_of_a_small_matrix():
    Z = np.array([[0, 1, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0]])
    assert hp.heaps_curve(Z).tolist() == [1, 2, 3]
    assert hp.zipf_curve(Z).tolist() == [3, 1, 1]


def test_predictive_curves_are_those_of_buffets_at_the_posterior_draws():
    """Each simulated matrix is sample_ibp at the recorded draw, with the same generator."""
    Z = sample_ibp(2.0, 30, np.random.default_rng(0), discount=0.3)
    draws = hp.sample_hyperparameters(Z, 40, np.random.default_rng(1))
    curves = hp.predictive_curves(draws, 30, np.random.default_rng(2), n_simulations=3, burn=10)
    rng = np.random.default_rng(2)
    for j, (alpha, beta, discount) in enumerate(curves.parameters):
        again = sample_ibp(alpha, 30, rng, beta=beta, discount=discount)
        assert np.array_equal(curves.heaps[j], hp.heaps_curve(again))
        assert np.array_equal(curves.zipf[j], hp.zipf_curve(again))
    assert curves.parameters[0, 0] == float(draws.alpha[10])


def test_bundled_words_are_heavy_tailed_sets():
    """The docstring data load, are binary, and have the tail the chapter fits: more than
    a third of the words appear in one document only."""
    from ibp_lab.datasets import load_docstring_words

    words = load_docstring_words()
    owners = words.Z.sum(axis=0)
    assert words.Z.shape == (1000, len(words.vocabulary)) and owners.min() >= 1
    assert (owners == 1).mean() > 1 / 3
    assert words.Z.sum(axis=1).min() >= 8  # the corpus rule: at least eight distinct words
