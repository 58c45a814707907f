"""Tests of ibp_lab.inference.noisy_or: the noisy-OR model, its enumeration and its sampler.

The likelihood is checked against the formula written out pixel by pixel; the enumeration's
sum over the links ``W`` (by exchangeable column types) against a brute-force sum over every
``W``; the simulator against the likelihood by Monte Carlo.

The sampler is a kernel on ``(Z, W)``. Its ``Z`` marginal is compared with
:func:`ibp_lab.inference.noisy_or.class_posterior` by the shared check of ``tests/exactness.py``; and
since a bug confined to ``W``'s update can leave the law of ``Z`` nearly intact, the law of a
label-free statistic of the links, the total ``sum(Z W)`` of active links, is compared with
its exact law too (:func:`exact_link_total_pmf`, from the same enumeration). Each check runs
at half the test's false-alarm rate of 1e-3 (Bonferroni). Planted one-line bugs (the links'
prior log-odds, the birth rate, the causes' prior ignoring ``beta``) must be caught.
"""

import itertools
import math
import time

import numpy as np
import pytest
from scipy.special import logsumexp

from ibp_lab import _kernel
from ibp_lab.inference import exact, noisy_or
from ibp_lab.inference.noisy_or import NoisyOrParameters
from tests.exactness import assert_leaves_posterior_invariant
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, chain_ess, chain_frequency_pvalues

X_TWO = np.array([[1, 0], [1, 1], [0, 1]], np.int8)
X_THREE = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1]], np.int8)
MODEL = dict(weight_prob=0.4, strength=0.8, leak=0.1)


def direct_log_likelihood(X, Z, W, strength, leak):
    total = 0.0
    for n, d in itertools.product(*map(range, X.shape)):
        active = sum(Z[n, k] * W[k, d] for k in range(Z.shape[1]))
        p_off = (1 - leak) * (1 - strength) ** active
        total += math.log(1 - p_off if X[n, d] else p_off)
    return total


def test_log_likelihood_is_the_product_over_pixels():
    rng = np.random.default_rng(0)
    X = (rng.random((5, 4)) < 0.5).astype(int)
    Z = (rng.random((5, 3)) < 0.5).astype(int)
    W = (rng.random((3, 4)) < 0.5).astype(int)
    assert noisy_or.log_likelihood(X, Z, W, strength=0.7, leak=0.05) == pytest.approx(
        direct_log_likelihood(X, Z, W, 0.7, 0.05), rel=1e-12)


@pytest.mark.statistical(rate=1e-3)
def test_simulate_turns_pixels_on_with_the_model_probability():
    """20,000 draws of a 2 x 3 image: each pixel's frequency within a two-sided normal
    bound at 1e-3 / 6 (Bonferroni over the pixels)."""
    Z, W = np.array([[1, 1], [0, 1]]), np.array([[1, 0, 1], [1, 1, 0]])
    rng, n = stat_rng(50), 20_000
    on = np.mean([noisy_or.simulate(Z, W, rng, strength=0.6, leak=0.1) for _ in range(n)], axis=0)
    p_on = 1 - 0.9 * 0.4 ** (Z @ W)
    from tests.stats_checks import normal_two_sided_z
    assert np.all(np.abs(on - p_on) < normal_two_sided_z(TEST_LEVEL, 6) * np.sqrt(p_on * (1 - p_on) / n))


def test_class_likelihood_sums_the_links_out_exactly():
    """The exchangeable-type sum of the enumeration against every ``W`` summed one by one."""
    params = NoisyOrParameters.checked(1.0, **MODEL)
    types = exact.column_types(3)
    for counts in ([0, 0, 0, 0, 0, 0, 0], [2, 0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 1, 0, 1],
                   [0, 0, 0, 2, 0, 0, 1]):
        counts = np.array(counts)
        Z = np.repeat(types, counts, axis=1)
        K, D = Z.shape[1], X_THREE.shape[1]
        terms = []
        for bits in itertools.product((0, 1), repeat=K * D):
            W = np.array(bits).reshape(K, D)
            log_prior = W.sum() * math.log(0.4) + (W.size - W.sum()) * math.log(0.6)
            terms.append(log_prior + direct_log_likelihood(X_THREE, Z, W, 0.8, 0.1))
        assert noisy_or._class_log_likelihood(X_THREE, types, counts, params) == \
            pytest.approx(logsumexp(terms), rel=1e-11)


def exact_link_total_pmf(X, params, k_max):
    """The exact posterior law of ``sum(Z W)`` (labels-free), and the enumeration's tail.

    For each class and pixel, :func:`ibp_lab.inference.noisy_or.link_combinations` lists the ways the
    pixel can be linked with their prior weights; times the pixel's likelihood and
    normalised, that is the law of the pixel's active links given the class; the pixels are
    independent given the class, so their laws convolve; the classes mix by their posterior.
    """
    post = noisy_or.class_posterior(X, alpha=params.alpha, weight_prob=params.weight_prob,
                                    strength=params.strength, leak=params.leak,
                                    beta=params.beta, k_max=k_max)
    types = exact.column_types(X.shape[0])
    total = np.zeros(k_max * X.size + 1)
    for counts, p_class in zip(post.counts, post.probabilities):
        log_w, row_counts = noisy_or.link_combinations(types, counts, params.weight_prob)
        law = np.array([1.0])
        for d in range(X.shape[1]):
            log_p = log_w + noisy_or._log_probs(X[:, d][None, :], row_counts, params).sum(axis=1)
            law = np.convolve(law, np.bincount(row_counts.sum(axis=1),
                                               weights=np.exp(log_p - logsumexp(log_p))))
        total[:law.size] += p_class * law
    return total, post


def run_sampler(X, params, n_steps, rng, burn=100):
    """The sampler's ``Z`` states and link totals after ``burn`` sweeps."""
    Z, W = np.ones((X.shape[0], 1), np.int8), np.ones((1, X.shape[1]), np.int64)
    states, totals = [], []
    for t in range(burn + n_steps):
        Z, W, _ = noisy_or._sweep(X, Z, W, params, rng)
        if t >= burn:
            states.append(Z)
            totals.append(int((Z.astype(np.int64) @ W).sum()))
    return states, np.array(totals)


def assert_sampler_exact(X, params, k_max, rng, n_steps=40_000):
    """Both checks at level / 2: the class law of Z and the law of the link total."""
    law, post = exact_link_total_pmf(X, params, k_max)
    states, totals = run_sampler(X, params, n_steps, rng)
    replay = iter(states[1:])
    assert_leaves_posterior_invariant(lambda Z: next(replay), X, params.alpha, 1.0, 1.0,
                                      n_steps=n_steps - 1, burn=0, Z0=states[0], posterior=post,
                                      n_tests=2, what="noisy-OR sampler")
    bins = np.flatnonzero(law >= 0.003)
    labels = np.where(np.isin(totals, bins), np.searchsorted(bins, totals), len(bins))
    p = np.append(law[bins], max(1.0 - law[bins].sum(), 0.0))
    tail = post.tail_bound
    pvalues, *_ = chain_frequency_pvalues(labels, p * (1 - tail),
                                          p + np.append(np.zeros(len(bins)), tail),
                                          n_eff=chain_ess(labels, len(p)))
    limit = TEST_LEVEL / (2 * len(p))
    assert pvalues.min() >= limit, (
        f"the link total's law is off: visited {np.bincount(labels, minlength=len(p)) / len(labels)}"
        f", exact {p}, smallest p-value {pvalues.min():.1e} (limit {limit:.1e})")


EXACT_CASES = [
    pytest.param(X_TWO, 0.5, 1.0, 8, id="2-pixels"),
    pytest.param(X_THREE, 0.5, 2.0, 9, id="3-pixels-beta2"),
]


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("X, alpha, beta, k_max", EXACT_CASES)
@pytest.mark.slow  # 10-15 s each (make test only; see README)
def test_sampler_matches_the_enumeration(X, alpha, beta, k_max):
    params = NoisyOrParameters.checked(alpha, **MODEL, beta=beta)
    assert exact_link_total_pmf(X, params, k_max)[1].tail_bound < 1e-3
    assert_sampler_exact(X, params, k_max, stat_rng(51))


def _plant(monkeypatch, bug):
    if bug == "links' prior log-odds":  # log p in place of log(p / (1 - p))
        right = noisy_or._flip_links
        monkeypatch.setattr(noisy_or, "_flip_links", lambda X, Z, W, C, log_odds, *rest:
                            right(X, Z, W, C, math.log(MODEL["weight_prob"]), *rest))
    elif bug == "birth rate with N rows":
        monkeypatch.setattr(noisy_or, "new_dish_rate",
                            lambda alpha, beta, n: alpha * beta / (beta + n + 1))
    elif bug == "causes' prior without beta":
        right = _kernel.prior_log_odds_table
        monkeypatch.setattr(_kernel, "prior_log_odds_table", lambda n, beta: right(n, 1.0))


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("bug", ["links' prior log-odds", "birth rate with N rows",
                                 "causes' prior without beta"])
@pytest.mark.slow  # about 10 s each (make test only; see README)
def test_the_checks_catch_a_planted_bug(monkeypatch, bug):
    """Each bug moves a class's or a link total's probability by many Monte Carlo standard
    errors at this size (measured p-values 1e-16 and below), so a check must fail."""
    _plant(monkeypatch, bug)
    params = NoisyOrParameters.checked(0.5, **MODEL, beta=2.0)
    with pytest.raises(AssertionError):
        assert_sampler_exact(X_TWO, params, 8, stat_rng(52))


def test_run_is_reproducible_and_traces_the_joint():
    X = (np.random.default_rng(3).random((12, 5)) < 0.4).astype(np.int8)
    runs = [noisy_or.run_noisy_or(X, 25, np.random.default_rng(4), alpha=1.2, **MODEL,
                                  burn=5, thin=5) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].trace["log_joint"], runs[1].trace["log_joint"])
    run = runs[0]
    assert run.trace["log_likelihood"].values[-1] == pytest.approx(
        noisy_or.log_likelihood(X, run.Z, run.A, strength=0.8, leak=0.1), rel=1e-12)
    assert list(run.sample_draws) == [5, 10, 15, 20] and run.A.shape == (run.Z.shape[1], 5)
    assert run.trace.attrs["weight_prob"] == 0.4


def test_four_rows_at_the_default_k_max_are_refused_at_once_with_the_k_max_that_fits():
    # 4 x 2 at the default k_max = 8 (490,314 classes) gave no answer in 60 s; now refused
    # before any work, naming the size and the largest k_max that finishes in seconds
    X = [[1, 0], [1, 1], [0, 1], [1, 0]]
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"k_max = 8 with 4 rows would enumerate 490314 "
                                         r"classes for the noisy-OR .* at most 5 with 4 rows"):
        noisy_or.class_posterior(X, alpha=1.0, **MODEL)
    assert time.perf_counter() - start < 1.0
    # the k_max it names is accepted, and finishes in seconds (measured 2.6 s of CPU)
    post = noisy_or.class_posterior(X, alpha=1.0, **MODEL, k_max=5)
    assert np.isclose(post.probabilities.sum(), 1.0)


def test_link_terms_count_every_link_combination_summed():
    types = exact.column_types(2)
    for k_max in range(5):
        direct = sum(noisy_or.link_combinations(types, exact.class_counts(Z), 0.5)[0].size
                     for Z in exact.enumerate_classes(2, k_max))
        assert noisy_or.link_terms(2, 3, k_max) == 3 * direct


def test_the_book_s_three_by_three_example_stays_within_the_bounds():
    # three images of three pixels at k_max = 9 (chapter 09): 11,440 classes, 2.45 million
    # link terms
    assert exact.count_classes(3, 9) <= noisy_or.MAX_ENUMERATED_CLASSES
    assert noisy_or.link_terms(3, 3, 9) <= noisy_or.MAX_LINK_TERMS


@pytest.mark.parametrize("call, match", [
    (lambda: noisy_or.log_likelihood([[1, 0]], [[1]], [[1, 0, 1]], strength=0.5, leak=0.1),
     "W must have shape"),
    (lambda: noisy_or.log_likelihood([[2, 0]], [[1]], [[1, 0]], strength=0.5, leak=0.1), "X"),
    (lambda: noisy_or.log_likelihood([[1, 0]], [[1]], [[1, 0]], strength=1.0, leak=0.1),
     "strength"),
    (lambda: noisy_or.simulate([[1]], [[1]], np.random.default_rng(0), strength=0.5, leak=0.0),
     "leak"),
    (lambda: noisy_or.class_posterior(np.ones((5, 2)), alpha=1.0, **MODEL), "rows"),
    (lambda: noisy_or.noisy_or_sweep([[1, 0]], [[1, 1]], [[1, 0]], np.random.default_rng(0),
                                     alpha=1.0, **MODEL), "W must have shape"),
])
def test_doors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
