"""The fast path's table of ``log j!`` gives the filtering prior the same numbers (issue 54).

``ibp_lab.inference.streaming._fast`` computes the fresh slots' Poisson tails with a table of
log factorials (``filtering.log_factorials``) instead of one ``lgamma`` per term. What is
checked, bit for bit: the tails, the new-feature fractions and the whole filtering prior
with a table of any length (empty, shorter than the terms reach, longer) equal those without
one, for tiny, moderate and huge rates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibp_lab.inference.streaming.filtering import (
    count_law,
    filtering_prior_core,
    filtering_prior_with,
    log_factorials,
    log_poisson_tails,
    new_feature_fraction,
    new_feature_fraction_with,
    poisson_tails,
)

TABLES = [0, 1, 5, 40, 1000]


def same(a, b) -> bool:
    return all(x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def test_the_table_holds_lgamma_of_j_plus_one():
    table = log_factorials(30)
    assert table.shape == (30,) and table[0] == 0.0 and table[1] == 0.0
    assert np.allclose(table, [math.lgamma(j + 1.0) for j in range(30)], rtol=1e-15, atol=0)


@pytest.mark.parametrize("log_rate", [-5e5, -40.0, -8.7, 0.0, math.log(50.0),
                                      math.log(3e4), -np.inf])
@pytest.mark.parametrize("m_max", [1, 9, 60])
def test_tails_with_any_table_are_the_tails_without(m_max, log_rate):
    expected = log_poisson_tails(m_max, log_rate)
    for size in TABLES:
        assert same(poisson_tails(m_max, log_rate, log_factorials(size)), expected)


def test_the_filtering_prior_with_a_table_is_the_prior_without():
    rng = np.random.default_rng(54)
    for _ in range(40):
        k, n_fresh = int(rng.integers(0, 12)), int(rng.choice([1, 4, 8, 16]))
        n = int(rng.integers(k + 1, 5000))
        usage = np.r_[rng.random(k) * (n - 1) * 0.5, np.zeros(n_fresh)]
        # established (Pi = 0), uncertain and fresh (Pi = 1) slots
        log_unowned = np.r_[np.where(rng.random(k) < 0.5, -np.inf, -rng.exponential(3.0, k)),
                            np.zeros(n_fresh)]
        next_dish = k + int(rng.integers(1, 30))
        dish = np.r_[np.sort(rng.choice(np.arange(1, next_dish), k, replace=False)),
                     next_dish + np.arange(n_fresh)].astype(np.int64)
        log_count = count_law(np.ascontiguousarray(log_unowned[:k]), np.zeros(1))
        log_alpha, beta = float(rng.normal()), float(rng.choice([0.5, 1.0, 5.0]))
        expected = filtering_prior_core(usage, log_unowned, dish, n, log_count, log_alpha,
                                        beta, next_dish - 1)
        need = np.flatnonzero(log_unowned > -np.inf)
        bound = np.minimum(dish[need] - 1, next_dish - 1)
        fraction = new_feature_fraction(dish[need], bound, log_count, log_alpha - 3.0)
        for size in TABLES:
            table = log_factorials(size)
            assert same(filtering_prior_with(usage, log_unowned, dish, n, log_count, log_alpha,
                                             beta, next_dish - 1, table), expected)
            assert same(new_feature_fraction_with(dish[need], bound, log_count,
                                                  log_alpha - 3.0, table), fraction)
