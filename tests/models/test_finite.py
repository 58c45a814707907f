"""Finite-model class probabilities and buffet histories (ibp_lab.models.finite).

Exact checks enumerate every matrix of a tiny size. The one statistical test
compares frequencies of 20000 buffet draws with their probabilities within 4.5
standard errors of a binomial proportion (false alarm below 6.8e-6 per check by
the CLT, three checks: below 2.1e-5 in all).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import betaln

from ibp_lab.models.finite import (finite_log_class_probability, log_class_probabilities,
                                   log_history_probability)
from ibp_lab.models.prior import left_ordered, log_prior, sample_ibp
from tests.seeds import stat_rng


def _all_matrices(n_rows, n_cols):
    for bits in itertools.product((0, 1), repeat=n_rows * n_cols):
        yield np.array(bits, dtype=np.int8).reshape(n_rows, n_cols)


@pytest.mark.parametrize("beta", [1.0, 2.5])
def test_finite_class_probability_sums_its_matrices(beta):
    # Brute force: P(Z) of every 2 x 3 matrix of the finite model, from the
    # Beta-Bernoulli integral column by column, summed by left-ordered class.
    alpha, n_rows, n_cols = 1.3, 2, 3
    a = alpha * beta / n_cols
    by_class = {}
    for Z in _all_matrices(n_rows, n_cols):
        m = Z.sum(axis=0)
        p = np.exp(np.sum(betaln(m + a, n_rows - m + beta) - betaln(a, beta)))
        key = left_ordered(Z).tobytes()
        by_class[key] = by_class.get(key, 0.0) + p
    assert math.isclose(sum(by_class.values()), 1.0, rel_tol=1e-12)
    for key, total in by_class.items():
        Z = np.frombuffer(key, dtype=np.int8).reshape(n_rows, n_cols)
        got = finite_log_class_probability(Z, alpha=alpha, n_features=n_cols, beta=beta)
        assert math.isclose(np.exp(got), total, rel_tol=1e-10)


@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_finite_class_probability_tends_to_the_ibp(beta):
    # The error is O(1/K): each tenfold K divides it by about ten.
    Z = np.array([[1, 1, 1], [1, 1, 0], [0, 0, 1]])
    target = log_prior(Z, 1.5, beta=beta)
    errors = [abs(finite_log_class_probability(Z, alpha=1.5, n_features=k, beta=beta)
                  - target) for k in (10**4, 10**5, 10**6)]
    assert errors[2] < 1e-4
    assert 5 < errors[0] / errors[1] < 20 and 5 < errors[1] / errors[2] < 20



def _every_class(n_rows, k_max):
    """The non-zero column types of ``n_rows`` rows, and every class of at most ``k_max``
    columns as its count vector over them, built here from itertools alone."""
    types = np.array([bits for bits in itertools.product((1, 0), repeat=n_rows)
                      if any(bits)], dtype=np.int8).T
    counts = [np.bincount(np.array(combo, dtype=np.int64), minlength=types.shape[1])
              for k in range(k_max + 1)
              for combo in itertools.combinations_with_replacement(range(types.shape[1]), k)]
    return types, np.array(counts)


@pytest.mark.parametrize("beta", [1.0, 2.5])
def test_many_classes_at_once_are_each_class_alone_and_sum_to_one(beta):
    # every class of three rows with at most K = 4 columns: each term is the one-class
    # function's, and together the classes hold all of the finite model's mass
    alpha, K = 1.3, 4
    types, counts = _every_class(3, K)
    got = log_class_probabilities(counts, types.sum(axis=0), 3, alpha=alpha, n_features=K,
                                  beta=beta)
    one_by_one = [finite_log_class_probability(np.repeat(types, c, axis=1), alpha=alpha,
                                               n_features=K, beta=beta) for c in counts]
    np.testing.assert_allclose(got, one_by_one, rtol=1e-12, atol=1e-12)
    assert math.isclose(np.exp(got).sum(), 1.0, rel_tol=1e-12)


def test_many_classes_refuse_bad_input_naming_the_argument():
    types, counts = _every_class(2, 2)
    owners = types.sum(axis=0)
    good = dict(counts=counts, owners=owners, n_rows=2, alpha=1.0, n_features=2)
    cases = [
        (dict(counts=-counts), ValueError, "counts must hold whole numbers"),
        (dict(counts=counts + 0.5), ValueError, "counts must hold whole numbers"),
        (dict(counts=counts[0]), ValueError, "counts must be 2-D"),
        (dict(counts=counts.astype(str)), TypeError, "counts must hold integers"),
        (dict(owners=owners[:-1]), ValueError, "owners must have one entry per column"),
        (dict(owners=owners + 2), ValueError, "owners must lie between 1 and n_rows = 2"),
        (dict(n_rows=0), ValueError, "n_rows must be an integer >= 1"),
        (dict(n_features=1), ValueError, "n_features must be >= the 2 columns"),
        (dict(alpha=0.0), ValueError, "alpha must be > 0"),
    ]
    for change, error, message in cases:
        with pytest.raises(error, match=message):
            log_class_probabilities(**(good | change))


def _history_count_factor(Z):
    first_owner = Z.argmax(axis=0)
    new_counts = np.bincount(first_owner, minlength=Z.shape[0])
    multiplicities = np.unique(Z, axis=1, return_counts=True)[1]
    return (math.prod(math.factorial(int(c)) for c in new_counts)
            / math.prod(math.factorial(int(c)) for c in multiplicities))


@pytest.mark.parametrize("beta", [1.0, 3.0])
def test_histories_of_a_class_sum_to_its_probability(beta):
    # Enumerate the column orders of Z that are in creation order; each distinct
    # one is a history; their probabilities add up to the class probability,
    # and there are prod K1! / prod K_h! of them, all equally probable.
    Z = np.array([[1, 1, 1, 0], [1, 1, 0, 1], [0, 0, 1, 1]], dtype=np.int8)
    histories = set()
    for order in itertools.permutations(range(Z.shape[1])):
        candidate = Z[:, order]
        if np.all(np.diff(candidate.argmax(axis=0)) >= 0):
            histories.add(candidate.tobytes())
    logs = [log_history_probability(np.frombuffer(h, dtype=np.int8).reshape(Z.shape),
                                    alpha=0.8, beta=beta) for h in histories]
    assert len(histories) == _history_count_factor(Z) == 3  # 3! 1! / (2! 1! 1!)
    assert np.allclose(logs, logs[0], rtol=0, atol=1e-12)
    assert math.isclose(np.sum(np.exp(logs)), np.exp(log_prior(Z, 0.8, beta=beta)),
                        rel_tol=1e-12)


@pytest.mark.parametrize("beta", [1.0, 0.7])
def test_histories_with_given_new_dish_counts_sum_to_the_poisson_laws(beta):
    # Two customers: customer 1 tries K1 dishes, customer 2 decides on each and
    # tries K2 new ones. Summed over customer 2's 2^K1 decisions, the histories
    # have probability Poisson(K1; alpha) Poisson(K2; alpha beta / (beta + 1)).
    alpha = 1.7
    rates = (alpha, alpha * beta / (beta + 1.0))
    for k1, k2 in itertools.product(range(4), range(3)):
        total = 0.0
        for decisions in itertools.product((0, 1), repeat=k1):
            Z = np.zeros((2, k1 + k2), dtype=np.int8)
            Z[0, :k1] = 1
            Z[1, :k1] = decisions
            Z[1, k1:] = 1
            total += np.exp(log_history_probability(Z, alpha=alpha, beta=beta))
        expected = math.prod(math.exp(-r) * r**k / math.factorial(k)
                             for r, k in zip(rates, (k1, k2)))
        assert math.isclose(total, expected, rel_tol=1e-12)


def test_history_differs_from_class_by_the_counting_factor():
    rng = np.random.default_rng(0)  # any matrices will do: the identity is exact
    for beta in (1.0, 2.0):
        for _ in range(20):
            Z = sample_ibp(2.0, 5, rng, beta=beta)
            gap = log_prior(Z, 2.0, beta=beta) - log_history_probability(Z, alpha=2.0, beta=beta)
            assert math.isclose(gap, math.log(_history_count_factor(Z)), abs_tol=1e-10)


@pytest.mark.statistical
def test_buffet_draws_each_history_as_often_as_its_probability():
    rng = stat_rng(1401)
    alpha, n_draws = 1.0, 20000
    draws = [sample_ibp(alpha, 2, rng) for _ in range(n_draws)]
    targets = {"history 11/10": np.array([[1, 1], [1, 0]]),
               "history 11/01": np.array([[1, 1], [0, 1]])}
    for Z in targets.values():
        p = np.exp(log_history_probability(Z, alpha=alpha))
        count = sum(d.shape == Z.shape and np.array_equal(d, Z) for d in draws)
        assert abs(count / n_draws - p) < 4.5 * np.sqrt(p * (1 - p) / n_draws)
    # the class holds both histories: twice the probability of each
    p = np.exp(log_prior(targets["history 11/10"], alpha))
    count = sum(d.shape == (2, 2) and np.array_equal(left_ordered(d), [[1, 1], [1, 0]])
                for d in draws)
    assert abs(count / n_draws - p) < 4.5 * np.sqrt(p * (1 - p) / n_draws)


def test_bad_input_is_refused_at_the_door():
    with pytest.raises(ValueError, match="n_features must be >= the 2 non-empty"):
        finite_log_class_probability([[1, 1]], alpha=1.0, n_features=1)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        finite_log_class_probability([[1]], alpha=-1.0, n_features=3)
    with pytest.raises(ValueError, match="Z must contain only 0 and 1"):
        log_history_probability([[2]], alpha=1.0)
    with pytest.raises(ValueError, match="order of creation"):
        log_history_probability([[0, 1], [1, 0]], alpha=1.0)
    with pytest.raises(ValueError, match="no empty column"):
        log_history_probability([[1, 0], [1, 0]], alpha=1.0)
    with pytest.raises(ValueError, match="at least one row"):
        log_history_probability(np.zeros((0, 2)), alpha=1.0)
    with pytest.raises(TypeError, match="n_features must be an integer"):
        finite_log_class_probability([[1]], alpha=1.0, n_features=2.5)
