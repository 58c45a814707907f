"""Tests of ibp_lab.inference.exact: the enumeration of classes and the exact posteriors."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom, multivariate_normal, poisson

from ibp_lab.inference import exact
from ibp_lab.models.linear_gaussian import collapsed_loglik
from ibp_lab.models.prior import expected_num_features, left_ordered, log_prior

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])


def test_column_types_are_every_nonzero_column_in_left_order():
    types = exact.column_types(3)
    assert types.shape == (3, 7)
    assert len({tuple(col) for col in types.T}) == 7 and types.any(axis=0).all()
    np.testing.assert_array_equal(left_ordered(types), types)


@pytest.mark.parametrize("n_rows, k_max", [(1, 4), (2, 5), (3, 4), (4, 2)])
def test_enumeration_lists_each_class_once_in_left_ordered_form(n_rows, k_max):
    classes = list(exact.enumerate_classes(n_rows, k_max))
    assert len(classes) == exact.count_classes(n_rows, k_max)
    keys = {tuple(exact.class_counts(Z)) for Z in classes}
    assert len(keys) == len(classes)  # no class twice
    for Z in classes:
        np.testing.assert_array_equal(left_ordered(Z), Z)
        assert Z.shape[1] <= k_max and (Z.shape[1] == 0 or Z.any(axis=0).all())


@pytest.mark.parametrize("n_rows, k_max, alpha, beta", [(3, 8, 1.3, 1.0), (3, 8, 0.7, 2.5),
                                                        (4, 5, 1.0, 0.5), (2, 10, 2.0, 1.0)])
def test_class_priors_sum_to_the_poisson_law_of_k_plus(n_rows, k_max, alpha, beta):
    """Summed over every class with K+ = k, P([Z]) must be Poisson(alpha H_N(beta)) at k.

    This checks the enumeration (no class missing or repeated) and log_prior together.
    """
    totals = np.full(k_max + 1, -np.inf)
    for Z in exact.enumerate_classes(n_rows, k_max):
        k = Z.shape[1]
        totals[k] = np.logaddexp(totals[k], log_prior(Z, alpha, beta=beta))
    expected = poisson(expected_num_features(alpha, n_rows, beta=beta)).logpmf(np.arange(k_max + 1))
    np.testing.assert_allclose(totals, expected, rtol=1e-10)


@pytest.mark.parametrize("alpha, sigma_x, sigma_a, beta",
                         [(1.3, 0.6, 1.2, 1.0), (0.8, 0.4, 2.0, 3.0)])
def test_class_probabilities_sum_to_one_with_a_negligible_tail(alpha, sigma_x, sigma_a, beta):
    post = exact.class_posterior(X3, alpha, sigma_x, sigma_a, beta=beta, k_max=12)
    assert post.probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    assert post.tail_bound < 1e-4
    p, tail = exact.k_plus_posterior(X3, alpha, sigma_x, sigma_a, beta=beta, k_max=12,
                                     return_tail=True)
    assert tail == post.tail_bound
    np.testing.assert_allclose(p, np.bincount(post.k_plus, post.probabilities, minlength=13))


TAIL_CASES = [
    # X, alpha, sigma_x, sigma_a, beta, k_short, k_long
    pytest.param(X3, 1.3, 0.6, 1.2, 1.0, 6, 12, id="loose"),
    # data at the noise level and tiny features: every class has nearly the largest
    # likelihood, so the bound is within a small factor of the true tail
    pytest.param(0.01 * X3, 2.0, 1.0, 0.05, 1.0, 3, 12, id="near-tight"),
    pytest.param(0.01 * X3, 2.0, 1.0, 0.05, 3.0, 2, 12, id="near-tight-beta3"),
    pytest.param(X3, 0.7, 0.4, 2.0, 0.4, 2, 12, id="beta0.4-k2"),
    pytest.param(np.array([[0.3, -0.2, 0.1]]), 3.0, 0.5, 1.0, 1.0, 4, 40, id="one row"),
    pytest.param(np.array([[0.9, -1.4], [1.1, 0.2]]), 2.5, 0.3, 1.5, 2.0, 3, 20, id="two rows"),
    pytest.param(np.array([[0.1], [0.0], [-0.1], [0.05]]), 1.0, 1.0, 0.1, 0.7, 2, 6,
                 id="four rows"),
    # sigma_x != 1, near tight: the sigma_x^-(N-1)D factor matters (with N + 1 or N for
    # N - 1 the bound falls to 0.02 or 0.2 of the true tail)
    pytest.param(0.03 * X3, 2.0, 3.0, 0.15, 1.0, 3, 12, id="near-tight-sigma3"),
    # one row at x = 0: the likelihood bound is attained at K+ = k_max + 1, so the bound
    # is within 2% of the true tail (with k_max + 2 for k_max + 1 it falls to 0.93)
    pytest.param(np.zeros((1, 1)), 1.0, 1.0, 1.0, 1.0, 3, 40, id="one row at the sup"),
    pytest.param(np.zeros((1, 1)), 1.0, 1.0, 2.0, 1.0, 3, 40, id="one row at the sup, sigma_a 2"),
]


@pytest.mark.parametrize("sigma_a", [1.0, 2.0])
def test_tail_bound_is_tight_where_the_likelihood_bound_is_attained(sigma_a):
    """One row at x = 0: the likelihood of K+ = k_max + 1 features is the bound itself, so
    the bound exceeds the true tail (1.019 and 1.022 times here) only through the classes
    beyond k_max + 1. A looser bound (k_max - 1 for k_max + 1, say) is still a bound,
    but not this one."""
    X = np.zeros((1, 1))
    p_long, tail_long = exact.k_plus_posterior(X, 1.0, 1.0, sigma_a, k_max=40, return_tail=True)
    _, tail = exact.k_plus_posterior(X, 1.0, 1.0, sigma_a, k_max=3, return_tail=True)
    true_tail = p_long[4:].sum() * (1 - tail_long)
    assert true_tail <= tail < 1.05 * true_tail


@pytest.mark.parametrize("X, alpha, sigma_x, sigma_a, beta, k_short, k_long", TAIL_CASES)
def test_tail_bound_bounds_the_mass_beyond_k_max(X, alpha, sigma_x, sigma_a, beta, k_short,
                                                 k_long):
    """The true P(K+ > k_short), computed up to k_long, is below the bound reported at k_short.

    The long enumeration misses its own tail, at most ``tail_long``: the true tail
    beyond k_short is at least ``p_long[k_short + 1:].sum() * (1 - tail_long)``.
    """
    p_long, tail_long = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta,
                                               k_max=k_long, return_tail=True)
    p_short, tail = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta,
                                           k_max=k_short, return_tail=True)
    true_tail = p_long[k_short + 1:].sum() * (1 - tail_long)
    assert true_tail > 1e-4 and tail_long < 0.05 * true_tail  # a tail that matters
    assert true_tail <= tail < 1.0
    np.testing.assert_allclose(p_short, p_long[:k_short + 1] / p_long[:k_short + 1].sum(),
                               rtol=1e-10)


@pytest.mark.parametrize("X, alpha, sigma_x, sigma_a, beta, k_max, _", TAIL_CASES)
def test_tail_bound_holds_against_two_more_features(X, alpha, sigma_x, sigma_a, beta, k_max, _):
    """Enumerating to k_max + 2 finds at least the mass at K+ = k_max + 1, k_max + 2 (times
    1 - its own tail bound): the bound reported at k_max must cover it."""
    p_more, tail_more = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta,
                                               k_max=k_max + 2, return_tail=True)
    _, tail = exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max,
                                     return_tail=True)
    found = p_more[k_max + 1:].sum() * (1 - tail_more)
    assert found > 1e-4  # a tail that matters
    assert found <= tail < 1.0


def test_tail_bound_is_within_a_small_factor_where_the_likelihood_is_flat():
    """Flat likelihood: the bound is the prior's Poisson tail, up to the likelihood's spread.

    Here the true tail is 0.496 and the bound 0.500; a bound that used the wrong
    Poisson tail (k_max + 1 instead of k_max: 0.30) or dropped the likelihood's
    maximum would be off by far more than the 5% allowed.
    """
    X = 0.01 * X3
    p_long, tail_long = exact.k_plus_posterior(X, 2.0, 1.0, 0.05, k_max=12, return_tail=True)
    _, tail = exact.k_plus_posterior(X, 2.0, 1.0, 0.05, k_max=3, return_tail=True)
    true_low = p_long[4:].sum() * (1 - tail_long)
    true_high = p_long[4:].sum() + tail_long
    assert true_low <= tail < 1.05 * true_high


@pytest.mark.parametrize("n_rows, k_max, beta, discount",
                         [(3, 6, 1.0, 0.0), (3, 5, 2.5, 0.0), (4, 4, 0.7, 0.0), (1, 5, 1.0, 0.0),
                          (3, 6, 1.7, 0.35), (4, 4, 0.4, 0.6), (2, 6, 1.0, 0.9)])
def test_vectorised_prior_agrees_with_log_prior_on_every_class(n_rows, k_max, beta, discount):
    X = np.zeros((n_rows, 1))
    post = exact.class_posterior(X, 1.7, 0.5, 1.0, beta=beta, k_max=k_max, discount=discount)
    # the likelihood of X = 0 depends on the class; subtract it to isolate the prior
    for log_weight, Z in zip(post.log_weights, post.classes()):
        expected = (log_prior(Z, 1.7, beta=beta, discount=discount)
                    + collapsed_loglik(X, Z, 0.5, 1.0))
        assert log_weight == pytest.approx(expected, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("n_rows, k_max, alpha, beta, discount",
                         [(3, 10, 1.1, 1.7, 0.35), (4, 6, 0.5, 0.4, 0.6), (2, 12, 1.5, 1.0, 0.9)])
def test_three_parameter_class_law_sums_to_the_poisson_law_of_k_plus(n_rows, k_max, alpha,
                                                                     beta, discount):
    """Under the three-parameter IBP K+ is Poisson(alpha sum_i rate_i) (Teh & Gorur 2009):
    summing the enumerated class law by K+ must give it, which checks the discounted table
    (no class missing, no term wrong) independently of log_prior."""
    X = np.zeros((n_rows, 1))
    post = exact.class_posterior(X, alpha, 0.5, 1.0, beta=beta, k_max=k_max, discount=discount)
    log_prior_only = post.log_weights - np.array(
        [collapsed_loglik(X, Z, 0.5, 1.0) for Z in post.classes()])
    totals = np.array([logsumexp(log_prior_only[post.k_plus == k]) for k in range(k_max + 1)])
    rate = alpha * expected_num_features(1.0, n_rows, beta=beta, discount=discount)
    np.testing.assert_allclose(totals, poisson(rate).logpmf(np.arange(k_max + 1)), rtol=1e-10)


def test_weights_are_prior_times_collapsed_likelihood():
    post = exact.class_posterior(X3, 1.3, 0.6, 1.2, beta=1.5, k_max=5)
    for index in [0, 1, 17, 200, len(post.probabilities) - 1]:
        Z = list(post.classes())[index]
        expected = log_prior(Z, 1.3, beta=1.5) + collapsed_loglik(X3, Z, 0.6, 1.2)
        assert post.log_weights[index] == pytest.approx(expected, rel=1e-10)


def buffet_class_posterior_two_rows(X, alpha, sigma_x, sigma_a, beta, k_max):
    """Brute force for N = 2 from the buffet itself, without log_prior.

    Row 1 takes Poisson(alpha) dishes; row 2 shares each with probability
    1 / (1 + beta) and adds Poisson(alpha beta / (1 + beta)) new ones. A class is
    (n11, n10, n01): dishes of both rows, of row 1 only, of row 2 only.
    """
    out = {}
    for n11, n10, n01 in itertools.product(range(k_max + 1), repeat=3):
        if n11 + n10 + n01 > k_max:
            continue
        log_p = (poisson(alpha).logpmf(n11 + n10) + binom(n11 + n10, 1 / (1 + beta)).logpmf(n11)
                 + poisson(alpha * beta / (1 + beta)).logpmf(n01))
        Z = np.array([[1] * n11 + [1] * n10 + [0] * n01, [1] * n11 + [0] * n10 + [1] * n01])
        cov = sigma_a**2 * Z @ Z.T + sigma_x**2 * np.eye(2)
        log_p += sum(multivariate_normal(np.zeros(2), cov).logpdf(X[:, d])
                     for d in range(X.shape[1]))
        out[(n11, n10, n01)] = log_p
    keys = list(out)
    values = np.array([out[key] for key in keys])
    return dict(zip(keys, np.exp(values - logsumexp(values))))


@pytest.mark.parametrize("beta", [1.0, 0.4, 3.0])
def test_two_rows_agree_with_brute_force_from_the_buffet(beta):
    X2 = np.array([[0.9, -1.4, 0.3], [1.1, 0.2, -0.5]])
    k_max = 9
    brute = buffet_class_posterior_two_rows(X2, 1.7, 0.5, 1.1, beta, k_max)
    post = exact.class_posterior(X2, 1.7, 0.5, 1.1, beta=beta, k_max=k_max)
    assert len(brute) == len(post.probabilities)
    for counts, p in zip(post.counts, post.probabilities):
        # types for two rows: 11, 10, 01
        assert p == pytest.approx(brute[tuple(int(c) for c in counts)], rel=1e-9, abs=1e-15)


def test_probability_of_is_label_free():
    post = exact.class_posterior(X3, 1.0, 0.5, 1.0, k_max=6)
    Z = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 0]])
    p = post.probability_of(Z)
    assert p > 0
    assert post.probability_of(Z[:, [2, 0, 1]]) == p
    assert post.probability_of(np.hstack([Z, np.zeros((3, 1), int)])) == p
    assert post.probability_of(np.ones((3, 7), int)) == 0.0  # beyond k_max


def test_class_counts_reads_columns_as_types():
    np.testing.assert_array_equal(exact.class_counts([[1, 1, 0, 0], [1, 1, 1, 0]]), [2, 0, 1])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: exact.k_plus_posterior(np.ones((5, 2)), 1.0, 0.5, 1.0), ValueError,
         "at most 4 rows"),
        (lambda: exact.k_plus_posterior(np.ones((4, 2)), 1.0, 0.5, 1.0, k_max=9), ValueError,
         "would enumerate 1307504 classes, more than MAX_CLASSES = 500000 .* use a smaller "
         "k_max: at most 8 with 4 rows"),
        (lambda: list(exact.enumerate_classes(4, 9)), ValueError, "at most 8 with 4 rows"),
        (lambda: exact.log_evidence(np.ones((4, 2)), 1.0, 0.5, 1.0, k_max=10), ValueError,
         "at most 8 with 4 rows"),
        (lambda: exact.k_plus_posterior(X3, -1.0, 0.5, 1.0), ValueError, "alpha must be > 0"),
        (lambda: exact.k_plus_posterior(X3, 1.0, 0.5, 1.0, beta=0), ValueError, "beta must be > 0"),
        (lambda: exact.k_plus_posterior(X3, 1.0, 0.0, 1.0), ValueError, "sigma_x must be > 0"),
        (lambda: exact.k_plus_posterior(np.where(X3 > 1, np.nan, X3), 1.0, 0.5, 1.0), ValueError,
         "X must be finite"),
        (lambda: exact.k_plus_posterior(X3, 1.0, 0.5, 1.0, k_max=-1), ValueError,
         "k_max must be an integer >= 0"),
        (lambda: exact.class_counts([[2, 0]]), ValueError, "Z must contain only 0 and 1"),
        (lambda: exact.class_posterior(X3, 1.0, 0.5, 1.0, k_max=3).probability_of([[1], [0]]),
         ValueError, "Z must have 3 rows"),
        (lambda: list(exact.enumerate_classes(5, 2)), ValueError, "at most 4 rows"),
    ],
)
def test_bad_inputs_are_reported_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("beta", [1.0, 2.5, 0.4])
def test_log_evidence_of_two_rows_matches_the_buffet_sum(beta):
    """Two customers, summed by the buffet itself (independent of the class table).

    Customer 1 takes k1 ~ Poisson(alpha) dishes, customer 2 each of them with
    probability 1 / (1 + beta) (j ~ Binomial(k1, 1 / (1 + beta))) and k2 ~
    Poisson(alpha beta / (1 + beta)) new ones; then Z Z^T = [[k1, j], [j, j + k2]] and
    each column of X is Normal(0, sigma_a^2 Z Z^T + sigma_x^2 I). Summed to 22 dishes
    each and enumerated to K+ <= 25, where the Poisson tails are below 1e-15.
    """
    X = np.array([[0.9, -0.4, 0.3], [1.1, 0.2, -0.5]])
    alpha, sigma_x, sigma_a = 1.3, 0.6, 1.2
    k1, j, k2 = np.meshgrid(*[np.arange(23)] * 3, indexing="ij")
    possible = j <= k1
    k1, j, k2 = k1[possible], j[possible], k2[possible]
    log_p = (poisson(alpha).logpmf(k1) + binom(k1, 1 / (1 + beta)).logpmf(j)
             + poisson(alpha * beta / (1 + beta)).logpmf(k2))
    # the 2 x 2 covariance [[a, c], [c, b]] of each column of X, its density by hand
    a = sigma_a**2 * k1 + sigma_x**2
    b = sigma_a**2 * (j + k2) + sigma_x**2
    c = sigma_a**2 * j
    det = a * b - c**2
    quad = (b * (X[0] ** 2).sum() - 2 * c * (X[0] * X[1]).sum() + a * (X[1] ** 2).sum()) / det
    n_cols = X.shape[1]
    terms = log_p - 0.5 * (n_cols * (2 * np.log(2 * np.pi) + np.log(det)) + quad)
    direct = logsumexp(terms)
    enumerated = exact.log_evidence(X, alpha, sigma_x, sigma_a, beta=beta, k_max=25)
    assert enumerated == pytest.approx(direct, abs=1e-10)


def test_the_cached_class_table_cannot_be_changed_through_a_result():
    # class_posterior hands out arrays of a memoised table: a caller that wrote into
    # them would corrupt every later enumeration of the same size
    post = exact.class_posterior(X3, 1.0, 0.5, 1.0, k_max=3)
    for array in (post.counts, post.k_plus, post.log_weights, post.probabilities):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


def test_tail_bound_is_tight_on_flat_likelihoods_at_sigma_x_three():
    """The flat-likelihood case scaled by 3 (data, sigma_x and sigma_a): the bound is 1.009
    times the true tail, so each factor sigma_x^-(N-1)D of it must be right (with
    (N - 1) / D for (N - 1) D it would be 27 times larger)."""
    X = 0.03 * X3
    p_long, tail_long = exact.k_plus_posterior(X, 2.0, 3.0, 0.15, k_max=12, return_tail=True)
    _, tail = exact.k_plus_posterior(X, 2.0, 3.0, 0.15, k_max=3, return_tail=True)
    true_low = p_long[4:].sum() * (1 - tail_long)
    true_high = p_long[4:].sum() + tail_long
    assert true_low <= tail < 1.05 * true_high
