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

The births from the data (``births="data"``) go through the same two checks, and two planted
bugs of their own must be caught: the reverse death's choice among ``k + 1`` forgotten in the
ratio, and the new links drawn from their prior while the ratio assumes their conditional.
Their ratio is checked, link row by link row, against the full Metropolis-Hastings ratio
written out; and the default sampler against numbers pinned before the option existed.
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
from tests.stats_checks import (TEST_LEVEL, assert_binomial_counts, chain_ess,
                                chain_frequency_pvalues)

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


def run_sampler(X, params, n_steps, rng, burn=100, births="prior"):
    """The sampler's ``Z`` states and link totals after ``burn`` sweeps."""
    Z, W = np.ones((X.shape[0], 1), np.int8), np.ones((1, X.shape[1]), np.int64)
    states, totals = [], []
    for t in range(burn + n_steps):
        Z, W, _ = noisy_or._sweep(X, Z, W, params, rng, births)
        if t >= burn:
            states.append(Z)
            totals.append(int((Z.astype(np.int64) @ W).sum()))
    return states, np.array(totals)


def assert_sampler_exact(X, params, k_max, rng, n_steps=40_000, births="prior"):
    """Both checks at level / 2: the class law of Z and the law of the link total.

    The tolerance is the chain's Monte Carlo error: each bin's visits are judged against
    an exact binomial tail with the chain's effective sample size (``chain_ess``) in place
    of its length, at ``TEST_LEVEL`` shared among the bins and the two checks (Bonferroni).
    """
    law, post = exact_link_total_pmf(X, params, k_max)
    states, totals = run_sampler(X, params, n_steps, rng, births=births)
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


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("X, alpha, beta, k_max", EXACT_CASES)
@pytest.mark.slow  # 20-40 s each on the shared 2-core machine (make test only; see README)
def test_data_births_match_the_enumeration(X, alpha, beta, k_max):
    """``births="data"``: the class law of ``Z`` and the link total's law, as above."""
    params = NoisyOrParameters.checked(alpha, **MODEL, beta=beta)
    assert_sampler_exact(X, params, k_max, stat_rng(53), births="data")


def test_data_birth_ratio_is_the_full_ratio_for_every_link_row():
    """The closed form against ``L(new) lambda P(y) / (L(old) q(y) (k + 1))`` written out
    for each of the 2^D link rows ``y`` (it must not depend on ``y``), and ``q`` a law."""
    params = NoisyOrParameters.checked(1.0, **MODEL)
    x_row, c_row = np.array([1, 0, 1, 0], np.int8), np.array([0, 2, 1, 0])
    log_rate, k, p = math.log(0.3), 2, MODEL["weight_prob"]

    def row_log_likelihood(counts):
        p_off = (1 - MODEL["leak"]) * (1 - MODEL["strength"]) ** counts
        return float(np.sum(np.log(np.where(x_row == 1, 1 - p_off, p_off))))

    def link_probability(d):  # q(y_d = 1): prior times the pixel's likelihood, normalised
        on = p * math.exp(row_log_likelihood(c_row + np.eye(4, dtype=int)[d]))
        return on / (on + (1 - p) * math.exp(row_log_likelihood(c_row)))

    gains = noisy_or._link_gains(x_row, c_row, params)
    closed = noisy_or._data_birth_log_ratio(gains, k, log_rate, params)
    q_on = np.array([link_probability(d) for d in range(4)])
    total_q = 0.0
    for bits in itertools.product((0, 1), repeat=4):
        y = np.array(bits)
        log_prior = float(np.sum(np.where(y == 1, math.log(p), math.log(1 - p))))
        log_q = float(np.sum(np.log(np.where(y == 1, q_on, 1 - q_on))))
        total_q += math.exp(log_q)
        full = (row_log_likelihood(c_row + y) - row_log_likelihood(c_row) + log_rate + log_prior
                - log_q - math.log(k + 1))
        assert full == pytest.approx(closed, rel=1e-12, abs=1e-12)
    assert total_q == pytest.approx(1.0, rel=1e-12)


@pytest.mark.statistical(rate=1e-3)
def test_new_links_follow_their_conditional():
    """20,000 link rows of a born cause: each pixel's frequency against ``q(y_d = 1) = p g_d
    / ((1 - p) + p g_d)`` by exact binomial tails, 1e-3 shared by the pixels."""
    params = NoisyOrParameters.checked(1.0, **MODEL)
    x_row, c_row = np.array([1, 0, 1, 0], np.int8), np.array([0, 2, 1, 0])
    gains = noisy_or._link_gains(x_row, c_row, params)
    p = MODEL["weight_prob"]
    q_on = p * np.exp(gains) / (1 - p + p * np.exp(gains))
    rng, n = stat_rng(55), 20_000
    counts = sum(noisy_or._draw_new_links(gains, params, rng) for _ in range(n))
    assert_binomial_counts(counts, n, q_on, what="pixels")


def test_data_births_change_one_singleton_per_row_and_keep_the_counts():
    """Each row gains one singleton (a birth), loses one (a death) or neither; the shared
    causes stay with their links; the counts ``C`` kept in place stay ``Z W``."""
    rng = np.random.default_rng(8)
    X = (rng.random((6, 5)) < 0.5).astype(np.int8)
    params = NoisyOrParameters.checked(2.0, **MODEL)
    moves = 0
    for _ in range(50):
        Z = np.hstack([np.eye(6, dtype=np.int8), np.ones((6, 2), np.int8)])
        W = (rng.random((8, 5)) < 0.5).astype(np.int64)
        C = Z.astype(np.int64) @ W
        new_Z, new_W, accepted = noisy_or._data_births(X, Z, W, C, params, rng)
        np.testing.assert_array_equal(C, new_Z.astype(np.int64) @ new_W)
        shared = np.flatnonzero(new_Z.sum(axis=0) == 6)
        assert shared.size == 2 and np.all(new_Z[:, :shared[0]].sum(axis=0) == 1)
        np.testing.assert_array_equal(new_W[shared], W[6:])
        assert np.all(new_Z[:, shared[1] + 1:].sum(axis=0) == 1)  # the born, one owner each
        change = np.abs(new_Z.sum(axis=1) - Z.sum(axis=1))
        assert change.max() <= 1 and change.sum() == accepted
        moves += accepted
    assert moves > 0


def test_the_default_run_is_bit_for_bit_the_one_before_the_options():
    # pinned with the sampler as it was before births="data" and the learned parameters
    X = (np.random.default_rng(3).random((12, 5)) < 0.4).astype(np.int8)
    run = noisy_or.run_noisy_or(X, 30, np.random.default_rng(4), alpha=1.2, **MODEL, burn=5,
                                thin=5, learn=())
    assert float(run.trace["log_joint"].values.sum()) == -2325.46804916912
    assert run.trace["k_plus"].values.tolist() == [5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 5, 5, 6, 6, 6,
                                                   5, 8, 5, 5, 5, 5, 5, 7, 6, 8, 8, 5, 5, 6, 6]
    assert sorted(run.trace.data_vars) == ["k_plus", "log_joint", "log_likelihood"]
    Z, W = noisy_or.noisy_or_sweep(X, np.ones((12, 1)), np.ones((1, 5)), np.random.default_rng(7),
                                   alpha=1.0, weight_prob=0.3, strength=0.9, leak=0.05)
    assert Z.sum(axis=0).tolist() == [5, 1] and W.tolist() == [[1, 1, 0, 0, 1], [1, 0, 1, 1, 0]]


def test_data_births_runner_is_reproducible_and_labels_its_sampler():
    X = (np.random.default_rng(3).random((12, 5)) < 0.4).astype(np.int8)
    runs = [noisy_or.run_noisy_or(X, 20, np.random.default_rng(4), alpha=1.2, **MODEL,
                                  births="data", learn=()) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].trace["log_joint"], runs[1].trace["log_joint"])
    assert "from the data" in runs[0].trace.attrs["sampler"]
    assert runs[0].trace["log_likelihood"].values[-1] == pytest.approx(
        noisy_or.log_likelihood(X, runs[0].Z, runs[0].A, strength=0.8, leak=0.1), rel=1e-12)


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


DATA_BIRTH_BUGS = {
    # the Poisson pmf's 1 / (k + 1) kept while the death also chooses among k + 1: counted
    # twice (chapter 9's solution of ex-nc-data-births warns of it), here forgotten once
    "the death's choice forgotten": lambda gains, k, log_rate, params: (
        log_rate + np.logaddexp(math.log1p(-params.weight_prob),
                                math.log(params.weight_prob) + gains).sum()),
    # the proposal's normaliser without the term of an unlinked pixel
    "the normaliser's y = 0 term forgotten": lambda gains, k, log_rate, params: (
        log_rate - math.log(k + 1) + (math.log(params.weight_prob) + gains).sum()),
}
# (Links drawn from their prior while the ratio assumes their conditional leave the law of
# Z nearly intact: the sweep's link step redraws the new cause's links, owned by its row
# alone, from that same conditional at once. test_new_links_follow_their_conditional
# checks the draw itself.)


def _plant_data_birth_bug(monkeypatch, bug):
    monkeypatch.setattr(noisy_or, "_data_birth_log_ratio", DATA_BIRTH_BUGS[bug])


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("bug", list(DATA_BIRTH_BUGS))
@pytest.mark.slow  # 15-25 s each on the shared 2-core machine (make test only; see README)
def test_the_checks_catch_a_planted_data_birth_bug(monkeypatch, bug):
    """Each bug moves a class's or a link total's probability by many Monte Carlo standard
    errors at this size, so a check must fail."""
    _plant_data_birth_bug(monkeypatch, bug)
    params = NoisyOrParameters.checked(0.5, **MODEL, beta=2.0)
    with pytest.raises(AssertionError):
        assert_sampler_exact(X_TWO, params, 8, stat_rng(54), births="data")


def test_run_is_reproducible_and_traces_the_joint():
    X = (np.random.default_rng(3).random((12, 5)) < 0.4).astype(np.int8)
    runs = [noisy_or.run_noisy_or(X, 25, np.random.default_rng(4), alpha=1.2, **MODEL,
                                  burn=5, thin=5, learn=()) for _ in range(2)]
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
    (lambda: noisy_or.noisy_or_sweep([[1, 0]], [[1]], [[1, 0]], np.random.default_rng(0),
                                     alpha=1.0, **MODEL, births="sideways"),
     "births must be one of"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), alpha=1.0, **MODEL,
                                   births="Data"), "births must be one of"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), alpha=1.0, **MODEL,
                                   learn=["leak"], priors={"leak": (0.001, 1.0)}),
     r"priors\['leak'\] must be a pair of Beta shapes, each >= 0.01"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), alpha=1.0, **MODEL,
                                   priors={"strength": (1.0,)}), r"priors\['strength'\]"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), alpha=1.0, **MODEL,
                                   learn=(), priors={"weight_prob": (1.0, -2.0)}),
     r"priors\['weight_prob'\]\[1\]"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), learn=["alpha"]),
     r"learn must name parameters among \('strength', 'leak', 'weight_prob'\), got 'alpha'"),
    (lambda: noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0),
                                   priors={"Leak": (1.0, 9.0)}), "priors must be keyed by names"),
])
def test_doors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("learn, priors, match", [
    (1, None, "learn must be a list of parameter names"),
    (None, None, "learn must be a list of parameter names"),
    ((), [(1.0, 1.0)], "priors must be a dict of Beta shapes"),
])
def test_learn_and_priors_of_the_wrong_type_are_refused(learn, priors, match):
    with pytest.raises(TypeError, match=match):
        noisy_or.run_noisy_or([[1, 0]], 2, np.random.default_rng(0), learn=learn, priors=priors)


# --------------------------------------------------------------------------------------
# the compiled births against their Python references, draw for draw
# --------------------------------------------------------------------------------------

BIRTH_STEPS = {"prior": (noisy_or._prior_births_reference, noisy_or._prior_births),
               "data": (noisy_or._data_births_reference, noisy_or._data_births)}
EDGE_PROBABILITIES = (1e-9, 0.05, 0.5, 1 - 1e-9)


def random_state(rng, n_rows, n_pixels, n_causes, on_prob):
    """``X``, and ``(Z, W)`` with every column owned, some by one row only."""
    X = (rng.random((n_rows, n_pixels)) < on_prob).astype(np.int8)
    Z = (rng.random((n_rows, n_causes)) < 0.3).astype(np.int8)
    Z[rng.integers(n_rows, size=n_causes), np.arange(n_causes)] = 1
    W = (rng.random((n_causes, n_pixels)) < 0.4).astype(np.int64)
    return X, Z, W


def assert_same_births(births, X, Z, W, params, seed, **options):
    """Both versions of step 2 from the same state and seed: the same ``(Z, W, accepted)``
    (values and dtypes), the same counts ``C`` left in place, the generator at the same
    point. Returns how many proposals were accepted."""
    reference, compiled = BIRTH_STEPS[births]
    C_ref, C = Z.astype(np.int64) @ W, Z.astype(np.int64) @ W
    rng_ref, rng = np.random.default_rng(seed), np.random.default_rng(seed)
    expected = reference(X, Z.copy(), W.copy(), C_ref, params, rng_ref)
    got = compiled(X, Z.copy(), W.copy(), C, params, rng, **options)
    for want, have in zip(expected[:2], got[:2]):
        assert have.dtype == want.dtype
        np.testing.assert_array_equal(have, want)
    assert got[2] == expected[2]
    np.testing.assert_array_equal(C, C_ref)
    np.testing.assert_array_equal(C, got[0].astype(np.int64) @ got[1])
    assert rng.bit_generator.state == rng_ref.bit_generator.state
    return expected[2]


@pytest.mark.parametrize("births", list(BIRTH_STEPS))
def test_compiled_births_make_the_reference_draws(births):
    """120 random states, shapes and parameters (probabilities up to 1e-9 from the edges,
    rows of more than 128 pixels, where numpy's sum splits in halves)."""
    accepted = 0
    for seed in range(120):
        rng = np.random.default_rng(900 + seed)
        n_rows, n_pixels = int(rng.integers(1, 25)), int(rng.integers(1, 160))
        X, Z, W = random_state(rng, n_rows, n_pixels, int(rng.integers(0, 10)), rng.random())
        params = NoisyOrParameters.checked(
            float(rng.choice([1e-3, 0.5, 2.0, 8.0])), *rng.choice(EDGE_PROBABILITIES, size=3),
            beta=float(rng.choice([0.3, 1.0, 4.0])), n_rows=n_rows)
        accepted += assert_same_births(births, X, Z, W, params, seed)
    assert accepted > 100  # the acceptances' branches were taken


EDGE_STATES = {
    "no singletons": lambda rng: (random_state(rng, 8, 20, 0, 0.5)[0],
                                  np.ones((8, 3), np.int8), np.ones((3, 20), np.int64)),
    "no causes": lambda rng: random_state(rng, 8, 20, 0, 0.5),
    "all pixels off": lambda rng: random_state(rng, 8, 20, 5, 0.0),
    "all pixels on": lambda rng: random_state(rng, 8, 20, 5, 1.0),
    "one row": lambda rng: random_state(rng, 1, 30, 3, 0.5),
    "one pixel": lambda rng: random_state(rng, 10, 1, 4, 0.5),
}


@pytest.mark.parametrize("births", list(BIRTH_STEPS))
@pytest.mark.parametrize("state", list(EDGE_STATES))
@pytest.mark.parametrize("alpha, strength, leak", [
    (1e-100, 0.9, 0.05), (1.0, 1e-9, 1e-9), (1.0, 1 - 1e-9, 1 - 1e-9), (1.0, 1 - 1e-9, 1e-9),
    (30.0, 0.9, 0.05)])
def test_compiled_births_make_the_reference_draws_at_the_edges(births, state, alpha, strength,
                                                               leak):
    for seed in range(5):
        X, Z, W = EDGE_STATES[state](np.random.default_rng(seed))
        params = NoisyOrParameters.checked(alpha, 0.3, strength, leak, n_rows=X.shape[0])
        assert_same_births(births, X, Z, W, params, seed)


def test_a_prior_proposal_past_the_table_replays_the_same_draws():
    """A table of one count is too short for any link born: the step replays with longer
    ones and still makes the reference's draws; so does one row at the largest alpha (a
    thousand new causes proposed at a time)."""
    params = NoisyOrParameters.checked(2.0, 0.3, 0.9, 0.05)
    for seed in range(10):
        X, Z, W = random_state(np.random.default_rng(seed), 6, 12, 4, 0.5)
        assert_same_births("prior", X, Z, W, params, seed, n_counts=1)
    X, Z, W = random_state(np.random.default_rng(0), 1, 5, 2, 0.5)
    params = NoisyOrParameters.checked(1000.0, 0.3, 0.9, 0.05, n_rows=1)
    assert_same_births("prior", X, Z, W, params, 3)


def test_the_compiled_sum_adds_as_numpy_does():
    rng = np.random.default_rng(5)
    for n in [*range(300), 511, 1000, 4097]:
        values = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, size=n)
        assert noisy_or._pairwise_sum(values, 0, n) == values.sum()


@pytest.mark.parametrize("births", list(BIRTH_STEPS))
def test_runs_with_compiled_births_are_the_runs_with_the_references(monkeypatch, births):
    """Whole runs, parameters learned: the trace bit for bit as with the Python births."""
    X = (np.random.default_rng(3).random((15, 7)) < 0.4).astype(np.int8)

    def run():
        return noisy_or.run_noisy_or(X, 25, np.random.default_rng(4), alpha=1.5, births=births)
    compiled = run()
    reference, _ = BIRTH_STEPS[births]
    monkeypatch.setattr(noisy_or, f"_{births}_births", reference)
    expected = run()
    for name in expected.trace.data_vars:
        np.testing.assert_array_equal(compiled.trace[name].values, expected.trace[name].values)
    np.testing.assert_array_equal(compiled.A, expected.A)


def reference_flips(X, Z, W, C, m, log_odds_prior, links_log_odds, log1m_leak, log1m_strength,
                    rng):
    """Steps 1 and 3 in Python, each entry's gain summed term by term from
    ``pixel_log_prob`` (as the compiled steps did before they looked the terms up)."""
    def log_p(x, c):
        return noisy_or.pixel_log_prob.py_func(x, c, log1m_leak, log1m_strength)

    def draw(log_odds):
        return 1 if rng.random() * (1.0 + math.exp(-log_odds)) < 1.0 else 0

    N, K = Z.shape
    for n, k in itertools.product(range(N), range(K)):
        others = m[k] - Z[n, k]
        if others:
            gain = 0.0
            for d in np.flatnonzero(W[k]):
                c0 = C[n, d] - Z[n, k]
                gain += log_p(X[n, d], c0 + 1) - log_p(X[n, d], c0)
            new = draw(log_odds_prior[others] + gain)
            C[n] += (new - Z[n, k]) * W[k]
            m[k] += new - Z[n, k]
            Z[n, k] = new
    for k, d in itertools.product(range(K), range(X.shape[1])):
        gain = 0.0
        for n in np.flatnonzero(Z[:, k]):
            c0 = C[n, d] - W[k, d]
            gain += log_p(X[n, d], c0 + 1) - log_p(X[n, d], c0)
        new = draw(links_log_odds + gain)
        C[Z[:, k] == 1, d] += new - W[k, d]
        W[k, d] = new


def test_the_gibbs_steps_look_up_the_terms_they_summed():
    """Steps 1 and 3 compiled, their gains from a table of ``pixel_log_prob``: the draws of
    the term-by-term sums, on 60 random states (probabilities near the edges included)."""
    for seed in range(60):
        rng = np.random.default_rng(seed)
        N, D, K = int(rng.integers(1, 12)), int(rng.integers(1, 20)), int(rng.integers(0, 8))
        X = (rng.random((N, D)) < rng.random()).astype(np.int8)
        Z = (rng.random((N, K)) < rng.random()).astype(np.int8)
        W = (rng.random((K, D)) < rng.random()).astype(np.int64)
        log1m_leak, log1m_strength = (math.log1p(-p) for p in rng.choice(EDGE_PROBABILITIES, 2))
        table = _kernel.prior_log_odds_table(N, 1.0)
        states = []
        for flips in ("compiled", "reference"):
            Zc, Wc = Z.copy(), W.copy()
            C, m = Zc.astype(np.int64) @ Wc, Zc.sum(axis=0).astype(np.int64)
            draws = np.random.default_rng(seed)
            if flips == "compiled":
                noisy_or._flip_causes(X, Zc, Wc, C, m, table, log1m_leak, log1m_strength, draws)
                noisy_or._flip_links(X, Zc, Wc, C, -1.3, log1m_leak, log1m_strength, draws)
            else:
                reference_flips(X, Zc, Wc, C, m, table, -1.3, log1m_leak, log1m_strength, draws)
            states.append((Zc, Wc, C, m, draws.random()))
        for compiled, reference in zip(*states):
            np.testing.assert_array_equal(compiled, reference)


@pytest.mark.parametrize("strength, leak", [(0.9, 0.05), (1e-9, 1 - 1e-9), (1 - 1e-9, 1e-9),
                                            (0.37, 0.61)])
def test_the_tables_hold_the_values_computed_pixel_by_pixel(strength, leak):
    """Bit for bit, the values the compiled steps look up and add against the ones the
    Python steps compute (draws alone would miss a last bit): the Gibbs gains against
    ``pixel_log_prob``'s differences; a row's ``log P(x | c)`` and both births' log ratios
    against numpy on the row (a value does not depend on where it sits in the array)."""
    params = NoisyOrParameters.checked(1.0, 0.3, strength, leak)
    log1m_leak, log1m_strength = math.log1p(-leak), math.log1p(-strength)
    n_counts = 40
    gains = noisy_or._count_gains(n_counts, log1m_leak, log1m_strength)
    for x, c in itertools.product((0, 1), range(n_counts)):
        assert gains[x, c] == (noisy_or.pixel_log_prob(x, c + 1, log1m_leak, log1m_strength)
                               - noisy_or.pixel_log_prob(x, c, log1m_leak, log1m_strength))
    grid = noisy_or._pixel_count_grid(n_counts)
    log_probs = noisy_or._log_probs(*grid, params).reshape(2, n_counts)
    link_gains = noisy_or._link_gains(*grid, params)
    log_rate = math.log(0.7)
    by_singletons, by_pixel = noisy_or._data_birth_ratio_parts(
        noisy_or._data_birth_log_ratio, link_gains, 5, log_rate, params)
    by_pixel = by_pixel.reshape(2, n_counts)
    link_on = noisy_or._link_on_probabilities(link_gains, params).reshape(2, n_counts)
    rng = np.random.default_rng(11)
    for n_pixels in (1, 7, 48, 300):
        x_row = (rng.random(n_pixels) < 0.5).astype(np.int8)
        c_row = rng.integers(0, n_counts - 1, size=n_pixels)
        np.testing.assert_array_equal(log_probs[x_row, c_row],
                                      noisy_or._log_probs(x_row, c_row, params))
        assert (noisy_or._pairwise_sum(log_probs[x_row, c_row], 0, n_pixels)
                == noisy_or._log_probs(x_row, c_row, params).sum())
        row_gains = noisy_or._link_gains(x_row, c_row, params)
        np.testing.assert_array_equal(link_on[x_row, c_row],
                                      noisy_or._link_on_probabilities(row_gains, params))
        for k in range(6):
            assert (by_singletons[k] + noisy_or._pairwise_sum(by_pixel[x_row, c_row], 0, n_pixels)
                    == noisy_or._data_birth_log_ratio(row_gains, k, log_rate, params))


def test_link_counts_are_the_integer_product():
    rng = np.random.default_rng(12)
    for N, K, D in [(1, 1, 1), (5, 0, 3), (7, 4, 1), (30, 12, 50), (300, 40, 48)]:
        Z = (rng.random((N, K)) < 0.4).astype(np.int8)
        W = (rng.random((K, D)) < 0.3).astype(np.int64)
        for z, w in ((Z, W), (Z.astype(float), W.astype(np.int8)), (Z[:, ::-1], W[::-1])):
            counts = noisy_or._link_counts(z, w)
            assert counts.dtype == np.int64
            np.testing.assert_array_equal(counts, z.astype(np.int64) @ w.astype(np.int64))
