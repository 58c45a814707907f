"""The self-checks of ibp_lab.teaching.exercises pass correct functions and fail each named mistake.

The faulty student versions are written here, as short plain-NumPy functions with a flag
for each mistake, so that every verdict is shown to be reachable and worded for that
mistake. Statistical checks use fixed seeds (tests/seeds.py); their false-alarm rate is
stated where they run.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.special import gammaln
from seeds import stat_rng

from ibp_lab.inference import gibbs
from ibp_lab.teaching.exercises import (
    ExerciseResult,
    Measurement,
    check_birth_step,
    check_class_probability,
    check_gibbs_sweep,
    check_recursive_step,
    check_split_merge_ratio,
    check_ais,
    check_smc_weight,
    check_noisy_or_link,
    check_stick_update,
    check_slice_conditional,
)

# --------------------------------------------------------------------------------------
# a student's collapsed Gibbs sweep, with the usual mistakes behind flags
# --------------------------------------------------------------------------------------


def _log_predictive(x, z, P, A_mean, sigma_x, extra_var=0.0):
    """log Normal(x; z A_mean, (sigma_x^2 (1 + z P z) + extra_var) I), up to a constant."""
    var = sigma_x**2 * (1.0 + z @ P @ z) + extra_var
    resid = x - z @ A_mean
    return -0.5 * len(x) * math.log(var) - resid @ resid / (2 * var)


def _new_dish_count(x, z, P, A_mean, alpha, n_rows, sigma_x, sigma_a, rng, new_dishes):
    """Draw a row's number of new dishes; ``new_dishes`` names the law (one of the mistakes)."""
    k = np.arange(2 if new_dishes == "at most one" else 25)
    var = sigma_x**2 * (1.0 + z @ P @ z) + k * sigma_a**2  # k new features, each sigma_a^2
    resid = x - z @ A_mean
    log_lik = -0.5 * len(x) * np.log(var) - resid @ resid / (2 * var)
    log_fact = 0.0 if new_dishes == "no factorial" else gammaln(k + 1)
    log_w = k * math.log(alpha / n_rows) - log_fact
    if new_dishes != "prior only":
        log_w = log_w + log_lik
    w = np.exp(log_w - log_w.max())
    return int(np.searchsorted(np.cumsum(w / w.sum()), rng.random(), side="right"))


def student_sweep(X, Z, alpha, sigma_x, sigma_a, rng, *, scan="random", new_dishes="exact"):
    """The plain sweep a student writes (beta = 1): correct with the default flags.

    scan="fixed" visits the shared features in column order and moves every singleton
    to the end (new columns appended); new_dishes is "exact", "prior only", "no
    factorial" or "at most one".
    """
    X = np.asarray(X, float)
    Z = np.array(Z, dtype=np.int8)
    n_rows = X.shape[0]
    for i in range(n_rows):
        others = np.arange(n_rows) != i
        m = Z[others].sum(axis=0)
        Z_o = Z[others].astype(float)
        P = np.linalg.inv(Z_o.T @ Z_o + (sigma_x / sigma_a) ** 2 * np.eye(Z.shape[1]))
        A_mean = P @ Z_o.T @ X[others]
        z = Z[i].astype(float)
        singles = np.flatnonzero(m == 0)
        n_single_var = len(singles) * sigma_a**2  # singletons stay in while shared ones flip
        z_shared = z.copy()
        z_shared[singles] = 0.0
        shared = np.flatnonzero(m > 0)
        order = shared if scan == "fixed" else rng.permutation(shared)
        for k in order:
            on, off = z_shared.copy(), z_shared.copy()
            on[k], off[k] = 1.0, 0.0
            log_odds = (math.log(m[k] / (n_rows - m[k]))
                        + _log_predictive(X[i], on, P, A_mean, sigma_x, n_single_var)
                        - _log_predictive(X[i], off, P, A_mean, sigma_x, n_single_var))
            z_shared[k] = float(rng.random() < 1.0 / (1.0 + math.exp(-log_odds)))
        n_new = _new_dish_count(X[i], z_shared, P, A_mean, alpha, n_rows, sigma_x, sigma_a,
                                rng, new_dishes)
        n_keep = 0 if scan == "fixed" else min(n_new, len(singles))
        Z[i] = z_shared.astype(np.int8)
        Z[i, singles[:n_keep]] = 1
        Z = Z[:, Z.any(axis=0)]
        new = np.zeros((n_rows, n_new - n_keep), np.int8)
        new[i] = 1
        Z = np.hstack([Z, new])
    return Z


def with_flags(**flags):
    def sweep(X, Z, alpha, sigma_x, sigma_a, rng):
        return student_sweep(X, Z, alpha, sigma_x, sigma_a, rng, **flags)
    return sweep


# --------------------------------------------------------------------------------------
# check_gibbs_sweep
# --------------------------------------------------------------------------------------
#
# False alarms: every frequency is tested at z sqrt(p (1 - p) / ESS) with z the normal
# quantile of 1e-3 split (Bonferroni) over all bins of the check, so a correct sweep fails
# with probability about 1e-3 at most (the normal approximation is fair: every bin has
# p >= 0.01 and ESS p >= 20). Measured once: the check run on 200 seeds
# (default_rng(10_000 + i), i < 200) with the compiled sweep (_kernel.sweeps, one sweep per
# call) failed 0 times, as a rate of at most 1e-3 predicts (probability 0.82 of no failure).


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("name", ["gibbs_sweep", "gibbs_sweep_numpy"])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_check_gibbs_sweep_passes_the_package_sweeps(name):
    result = check_gibbs_sweep(getattr(gibbs, name), stat_rng(140))
    assert result.passed, str(result)
    assert "agrees with exact enumeration" in result.verdict
    assert all(m.ok for m in result.measurements)


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_check_gibbs_sweep_passes_a_plain_student_sweep():
    result = check_gibbs_sweep(with_flags(), stat_rng(141))
    assert result.passed, str(result)


# Each mistake with the words its verdict must contain. Power: on one row the wrong
# new-dish laws put 0.67 to 1.0 of their mass where the exact law has 0.008 (thousands of
# standard errors); the fixed scan misses the class [11, 10, 10] by about 10 standard
# errors in 10,000 sweeps (0.028 against 0.052, sd 0.0017), so it passes by chance with
# probability far below 1e-6.
MISTAKES = [
    (dict(scan="fixed"), ("fixed column order", "random order", "too many features")),
    (dict(new_dishes="prior only"), ("prior Poisson(alpha / N) alone", "likelihood")),
    (dict(new_dishes="no factorial"), ("1 / k!",)),
    (dict(new_dishes="at most one"), ("never takes more than one new dish",)),
]


@pytest.mark.statistical(rate=1e-6)
@pytest.mark.parametrize("flags, words", MISTAKES, ids=[str(m[0]) for m in MISTAKES])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_check_gibbs_sweep_fails_each_mistake_in_words(flags, words):
    result = check_gibbs_sweep(with_flags(**flags), stat_rng(142))
    assert not result.passed, str(result)
    for word in words:
        assert word in result.verdict, result.verdict
    assert any(not m.ok for m in result.measurements)


def _mirrored_rows(X, Z, alpha, sigma_x, sigma_a, rng):
    """Each row updated against the other row's data: on two rows the chain samples the
    posterior of the data with its rows swapped, whose law of K+ is the same (the IBP is
    exchangeable), so only the class frequencies can tell."""
    return gibbs.gibbs_sweep(np.asarray(X)[::-1], Z, alpha, sigma_x, sigma_a, rng)


# rate: the failure itself is certain (below); the verdict's words need the K+ bins, whose
# law is right, all to pass, which the check's own 1e-3 false-alarm level bounds
@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_check_gibbs_sweep_fails_a_sweep_with_the_right_k_plus_and_the_wrong_classes():
    """The audit's planted bug (the verdict judged on K+ alone) passed every mistake above,
    since each also gets K+ wrong. Power: the mirrored chain visits class [11, 10] with
    frequency near 0.001 against 0.104 (tolerance 0.012), some eight tolerances off."""
    result = check_gibbs_sweep(_mirrored_rows, stat_rng(143))
    assert not result.passed, str(result)
    assert any(not m.ok for m in result.measurements if m.quantity.startswith("class"))
    assert "which row owns which feature" in result.verdict, result.verdict


def _float_output(X, Z, alpha, sigma_x, sigma_a, rng):
    return gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng).astype(float)


def _empty_column(X, Z, alpha, sigma_x, sigma_a, rng):
    Z = gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng)
    return np.hstack([Z, np.zeros((Z.shape[0], 1), np.int8)])


def _in_place(X, Z, alpha, sigma_x, sigma_a, rng):
    Z_new = gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng)
    Z[:] = 0
    return Z_new


def _global_random(X, Z, alpha, sigma_x, sigma_a, rng):
    rng.random()  # touches rng, but the draws come from NumPy's global state
    return gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a,
                             np.random.default_rng(np.random.randint(2**31)))


def _fixed_seed(X, Z, alpha, sigma_x, sigma_a, rng):
    rng.random()  # touches rng, but the draws come from elsewhere
    return gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, np.random.default_rng(0))


def _no_draws(X, Z, alpha, sigma_x, sigma_a, rng):
    return np.asarray(Z, np.int8)


def _not_written(X, Z, alpha, sigma_x, sigma_a, rng):
    raise NotImplementedError


def _broken(X, Z, alpha, sigma_x, sigma_a, rng):
    raise ValueError("shapes (2,3) and (2,2) not aligned")


def _transposed(X, Z, alpha, sigma_x, sigma_a, rng):
    return gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng).T


def _fails_on_one_row(X, Z, alpha, sigma_x, sigma_a, rng):
    if len(X) == 1:
        raise ZeroDivisionError("division by zero")
    return gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng)


BASICS = [
    (_float_output, "not floats"),
    (_empty_column, "1 empty column(s)"),
    (_in_place, "changed the arrays it was given"),
    (_global_random, "same seed gave different results"),
    (_fixed_seed, "different seeds gave the same result"),
    (_no_draws, "drew nothing from the rng"),
    (_not_written, "not written yet"),
    (_broken, "it raised ValueError: shapes (2,3) and (2,2) not aligned"),
    (_transposed, "shape (3, 2)"),
    (_fails_on_one_row, "after 0 sweeps on 1 row(s)"),
]


@pytest.mark.parametrize("sweep, words", BASICS, ids=[b[0].__name__ for b in BASICS])
def test_check_gibbs_sweep_reports_broken_basics(sweep, words):
    result = check_gibbs_sweep(sweep)
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_gibbs_sweep_lets_an_interrupt_through():
    def interrupted(X, Z, alpha, sigma_x, sigma_a, rng):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_gibbs_sweep(interrupted)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(sweep="gibbs_sweep"), TypeError, "sweep must be a function"),
    (dict(sweep=None), TypeError, "sweep must be a function"),
    (dict(sweep=gibbs.gibbs_sweep, rng=0), TypeError, "rng must be a numpy.random.Generator"),
    (dict(sweep=gibbs.gibbs_sweep, n_sweeps=10), ValueError, "n_sweeps must be an integer >= 2000"),
    (dict(sweep=gibbs.gibbs_sweep, n_sweeps=2.5e4), TypeError, "n_sweeps must be an integer"),
    (dict(sweep=gibbs.gibbs_sweep, n_one_row=-1), ValueError, "n_one_row"),
])
def test_check_gibbs_sweep_refuses_bad_arguments_at_the_door(kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(".", r"\.")):
        check_gibbs_sweep(**kwargs)


def test_default_rng_gives_the_same_verdict_every_run():
    first, second = check_gibbs_sweep(_no_draws), check_gibbs_sweep(_no_draws)
    assert first == second


# --------------------------------------------------------------------------------------
# ExerciseResult
# --------------------------------------------------------------------------------------


def test_exercise_result_shows_its_numbers_in_text_and_markdown():
    result = ExerciseResult("demo", False, "K+ = 0 is visited 3x too rarely.",
                            (Measurement("P(K+ = 0)", 0.1, 0.3, 0.05),))
    assert not result
    assert "NOT YET" in str(result) and "observed 0.1, expected 0.3" in str(result)
    markdown = result._repr_markdown_()
    assert markdown.startswith("**demo: not yet.**")
    assert "| P(K+ = 0) | 0.1 | 0.3 | 0.05 (missed) |" in markdown
    with pytest.raises(AttributeError):
        result.passed = True  # frozen: a grade cannot be edited by accident


# --------------------------------------------------------------------------------------
# check_class_probability: a student's log P([Z]) with the usual mistakes behind flags
# --------------------------------------------------------------------------------------


def student_log_class_probability(Z, alpha, beta=1.0, *, mistake=None):
    """log P([Z] | alpha, beta) written plainly; ``mistake`` plants one error."""
    Z = np.asarray(Z)
    if mistake != "counts empty columns":
        Z = Z[:, Z.any(axis=0)]
    if mistake == "beta ignored":
        beta = 1.0
    n_rows, k_plus = Z.shape
    m = Z.sum(axis=0)
    log_p = k_plus * math.log(alpha if mistake == "alpha only" else alpha * beta)
    if mistake != "no exp":
        log_p -= alpha * sum(beta / (beta + i) for i in range(n_rows))
    log_p += sum(math.lgamma(mk) + math.lgamma(n_rows - mk + beta) - math.lgamma(n_rows + beta)
                 for mk in m)
    if mistake == "history":  # divide by prod_i K_1^(i)! instead of prod_h K_h!
        first = np.argmax(Z, axis=0) if k_plus else np.array([], int)
        log_p -= sum(math.lgamma(c + 1) for c in np.bincount(first, minlength=n_rows))
    elif mistake != "no K_h!":
        columns = [tuple(col) for col in Z.T]
        log_p -= sum(math.lgamma(columns.count(c) + 1) for c in set(columns))
    return math.exp(log_p) if mistake == "not log" else log_p


def class_probability_with(mistake):
    def fn(Z, alpha, beta=1.0):
        return student_log_class_probability(Z, alpha, beta, mistake=mistake)
    return fn


def test_check_class_probability_passes_correct_functions():
    from ibp_lab.models import prior

    for fn in (prior.log_prior, class_probability_with(None)):
        result = check_class_probability(fn)
        assert result.passed, str(result)
        assert "agrees with the exact one on all" in result.verdict


CLASS_MISTAKES = [
    ("no K_h!", "1 / prod_h K_h! is missing"),
    ("history", "probability of one buffet history"),
    ("beta ignored", "right at beta = 1 but not at beta = 2.5"),
    ("alpha only", "(alpha beta)^K+, not alpha^K+"),
    ("no exp", "exp(-alpha sum_{i=1}^N beta / (beta + i - 1))"),
    ("not log", "you returned the probability"),
    ("counts empty columns", "drop the empty columns first"),
]


@pytest.mark.parametrize("mistake, words", CLASS_MISTAKES, ids=[m[0] for m in CLASS_MISTAKES])
@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_check_class_probability_names_each_mistake(mistake, words):
    result = check_class_probability(class_probability_with(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_class_probability_reports_order_dependence_and_errors():
    from ibp_lab.models import prior

    def order_dependent(Z, alpha, beta=1.0):
        Z = np.asarray(Z)
        return prior.log_prior(Z, alpha, beta=beta) + 0.1 * float(Z.shape[1] and Z[0, 0])

    assert "columns in another order" in check_class_probability(order_dependent).verdict

    def not_written(Z, alpha, beta=1.0):
        raise NotImplementedError

    assert "not written yet" in check_class_probability(not_written).verdict

    def returns_text(Z, alpha, beta=1.0):
        return "0.5"

    assert "it returned str, not a number" in check_class_probability(returns_text).verdict
    with pytest.raises(TypeError, match="fn must be a function"):
        check_class_probability(prior)


def test_check_class_probability_judges_the_empty_column_case():
    """A function right on every class but off (finitely) when Z has an all-zero column
    fails, by name. The mistakes above return -inf there (log Gamma(0)) and are caught
    before any value is compared; this one would pass if that case were not judged (the
    audit's planted bug)."""
    from ibp_lab.models import prior

    def off_with_an_empty_column(Z, alpha, beta=1.0):
        Z = np.asarray(Z)
        return prior.log_prior(Z, alpha, beta=beta) + (0.5 if (~Z.any(axis=0)).any() else 0.0)

    result = check_class_probability(off_with_an_empty_column)
    assert not result.passed
    assert "counts an all-zero column as a feature" in result.verdict, result.verdict


# --------------------------------------------------------------------------------------
# check_recursive_step: a student's step of eq. 4 with the usual mistakes behind flags
# --------------------------------------------------------------------------------------


def student_recursive_step(running_sum, n, alpha, beta, *, mistake=None):
    """Customer n's marginals from the running sum, with Poisson CDFs (scipy)."""
    from scipy.stats import poisson

    if mistake == "beta ignored":
        beta = 1.0
    rate_before = sum(alpha * beta / (beta + i - 1) for i in range(1, n))
    rate_after = rate_before + alpha * beta / (beta + n - 1)
    k = np.arange(1, len(running_sum) + 1) + (1 if mistake == "dish off by one" else 0)
    new = poisson.cdf(k - 1, rate_before) - poisson.cdf(k - 1, rate_after)
    if mistake == "no new dishes":
        new = 0.0
    denominator = beta + n - (0 if mistake == "denominator" else 1)
    return np.asarray(running_sum) / denominator + new


def recursive_step_with(mistake):
    def step(running_sum, n, alpha, beta):
        return student_recursive_step(running_sum, n, alpha, beta, mistake=mistake)
    return step


def test_check_recursive_step_passes_a_correct_step():
    result = check_recursive_step(recursive_step_with(None))
    assert result.passed, str(result)


RECURSIVE_MISTAKES = [
    ("denominator", "it is beta + n - 1"),
    ("no new dishes", "the second term is missing"),
    ("dish off by one", "shifted by one dish"),
    ("beta ignored", "right at beta = 1 but not otherwise"),
]


@pytest.mark.parametrize("mistake, words", RECURSIVE_MISTAKES,
                         ids=[m[0] for m in RECURSIVE_MISTAKES])
def test_check_recursive_step_names_each_mistake(mistake, words):
    result = check_recursive_step(recursive_step_with(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_recursive_step_reports_in_place_changes_shapes_and_errors():
    def in_place(running_sum, n, alpha, beta):
        running_sum /= beta + n - 1
        return running_sum

    assert "changed running_sum" in check_recursive_step(in_place).verdict

    def too_short(running_sum, n, alpha, beta):
        return running_sum[:-1]

    assert "one entry per dish" in check_recursive_step(too_short).verdict

    def not_written(running_sum, n, alpha, beta):
        raise NotImplementedError

    assert "not written yet" in check_recursive_step(not_written).verdict

    def other(running_sum, n, alpha, beta):
        return student_recursive_step(running_sum, n, alpha, beta) * (1 + 1e-3 * (n > 3))

    assert "first goes wrong for customer n = 4" in check_recursive_step(other).verdict
    with pytest.raises(TypeError, match="step must be a function"):
        check_recursive_step([1, 2])


def test_check_recursive_step_fails_a_step_wrong_on_one_dish_only():
    """Every dish of every row is judged: a step right on eleven of the twelve dishes
    fails (the audit's planted bug judged each row by its best dish, and passed it)."""
    def last_dish_wrong(running_sum, n, alpha, beta):
        row = student_recursive_step(running_sum, n, alpha, beta)
        row[-1] += 1e-3
        return row

    result = check_recursive_step(last_dish_wrong)
    assert not result.passed
    assert "k = 12" in result.measurements[0].quantity


# --------------------------------------------------------------------------------------
# check_split_merge_ratio: a student's log acceptance ratio with mistakes behind flags
# --------------------------------------------------------------------------------------


def student_split_ratio(X, Z, k, c1, c2, alpha, sigma_x, sigma_a, *, mistake=None):
    """log pi([Z']) q(merge) / (pi([Z]) q(split)) for a random split, written plainly."""
    from ibp_lab.models import linear_gaussian, prior

    def log_target(M):
        log_p = prior.log_prior(M, alpha) + linear_gaussian.collapsed_loglik(X, M, sigma_x, sigma_a)
        if mistake == "matrix target":  # P of the matrix: without 1 / prod_h K_h!
            log_p += sum(math.lgamma(c + 1) for c in np.unique(M, axis=1, return_counts=True)[1])
        return log_p

    def n_equal(M, column):
        return int(np.all(M == np.asarray(column)[:, None], axis=0).sum())

    K, u = Z.shape[1], Z[:, k]
    Z_new = np.column_stack([np.delete(Z, k, axis=1), c1, c2])
    same = np.array_equal(c1, c2)
    q_split = (1.0 if K == 1 and mistake != "p split" else 0.5) / 3 ** int(u.sum())
    q_split *= (1 if mistake == "pick u" else n_equal(Z, u)) / K
    q_split *= 1 if same or mistake == "orders" else 2
    n1 = n_equal(Z_new, c1)
    pairs = n1 * (n1 - 1) / 2 if same else n1 * n_equal(Z_new, c2)
    q_merge = 0.5 * (1 if mistake == "pairs" else pairs) / (K * (K + 1) / 2)
    if mistake == "reversed":
        q_split, q_merge = q_merge, q_split
    if mistake == "no proposal":
        q_split = q_merge = 1.0
    return log_target(Z_new) - log_target(Z) + math.log(q_merge) - math.log(q_split)


def split_ratio_with(mistake):
    def fn(X, Z, k, c1, c2, alpha, sigma_x, sigma_a):
        return student_split_ratio(X, Z, k, c1, c2, alpha, sigma_x, sigma_a, mistake=mistake)
    return fn


def test_split_merge_reference_is_the_package_move():
    # the check's exact ratio against the move the package runs (and tests by detailed
    # balance on every path): its proposal ratio plus the change of its target
    from ibp_lab.teaching.exercises import _split_merge as ex
    from ibp_lab.inference.split_merge import _random, _target

    target = _target.LogJoint(ex.X_TINY, ex.ALPHA, ex.SIGMA_X, ex.SIGMA_A, 1.0)
    cases = ex._cases()
    assert len(cases) > 1000
    for Z, k, c1, c2 in cases:
        owners = np.flatnonzero(Z[:, k])
        labels = np.array([0 if b == 0 else 1 if a == 0 else 2
                           for a, b in zip(c1[owners], c2[owners])])
        proposal = _random._random_split(Z, k, labels)
        old, new = target(Z), target(proposal.Z)
        package = new[0] - old[0] + new[1] - old[1] + proposal.log_proposal_ratio
        assert math.isclose(ex._ratio(ex._terms(Z, k, c1, c2)), package, abs_tol=1e-9)


def test_check_split_merge_ratio_passes_a_correct_ratio():
    result = check_split_merge_ratio(split_ratio_with(None))
    assert result.passed, str(result)


SPLIT_MISTAKES = [
    ("matrix target", "1 / prod_h K_h!"),
    ("pick u", "probability n(u) / K"),
    ("orders", "the factor 2 (and only then)"),
    ("pairs", "count the pairs of columns"),
    ("p split", "P(split) = 1 at K = 1"),
    ("reversed", "upside down"),
    ("no proposal", "only the target ratio"),
]


@pytest.mark.parametrize("mistake, words", SPLIT_MISTAKES, ids=[m[0] for m in SPLIT_MISTAKES])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_check_split_merge_ratio_names_each_mistake(mistake, words):
    result = check_split_merge_ratio(split_ratio_with(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_split_merge_ratio_reports_errors_and_refuses_non_functions():
    def not_written(X, Z, k, c1, c2, alpha, sigma_x, sigma_a):
        raise NotImplementedError

    assert "not written yet" in check_split_merge_ratio(not_written).verdict

    def nan(X, Z, k, c1, c2, alpha, sigma_x, sigma_a):
        return float("nan")

    assert "not a finite number" in check_split_merge_ratio(nan).verdict
    with pytest.raises(TypeError, match="fn must be a function"):
        check_split_merge_ratio(1.0)


# --------------------------------------------------------------------------------------
# check_ais: a student's annealed importance sampler, with mistakes behind flags
# --------------------------------------------------------------------------------------


def ais_with(mistake):
    """A plain AIS as a student writes it (the package's public pieces), or a mistake."""
    from scipy.special import logsumexp

    from ibp_lab.inference import gibbs
    from ibp_lab.models import linear_gaussian, prior

    def ais(X, n_particles, rng, alpha, sigma_x, sigma_a, ladder):
        log_w = np.zeros(n_particles)
        for i in range(n_particles):
            Z = prior.sample_ibp(alpha, X.shape[0], rng)
            for b_old, b_new in zip(ladder[:-1], ladder[1:]):
                if mistake == "move first":
                    Z = gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng,
                                          inverse_temperature=b_new)
                step = b_new if mistake == "b_t" else b_new - b_old
                log_w[i] += step * linear_gaussian.collapsed_loglik(X, Z, sigma_x, sigma_a)
                if mistake != "move first":
                    Z = gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng,
                                          inverse_temperature=b_new)
        if mistake == "mean of logs":
            return float(log_w.mean())
        return float(logsumexp(log_w) - np.log(n_particles))

    return ais


@pytest.mark.statistical(rate=1e-3)
def test_check_ais_passes_a_plain_student_sampler_and_the_package():
    assert check_ais(ais_with(None))
    from ibp_lab.inference import smc
    assert check_ais(lambda X, n, rng, alpha, sigma_x, sigma_a, ladder: smc.run_ais(
        X, n, rng, alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a,
        inverse_temperatures=ladder).log_evidence)


@pytest.mark.parametrize("mistake", ["b_t", "move first", "mean of logs"])
@pytest.mark.slow  # about 4 s each (make test only; see README)
def test_check_ais_fails_each_mistake_and_says_which_way(mistake):
    result = check_ais(ais_with(mistake))
    assert not result.passed
    assert "p(X | Z)^(b_t - b_{t-1})" in result.verdict
    assert ("mean of the log weights" in result.verdict) == (mistake != "move first" or
                                                             "below" in result.verdict)


def test_check_ais_fails_a_constant_and_reports_errors():
    from ibp_lab.inference import exact
    from ibp_lab.teaching.exercises._ais import HYPER, X_TINY
    value = exact.log_evidence(X_TINY, **HYPER, k_max=12)
    assert "same number on every run" in check_ais(lambda *a, **k: value).verdict

    def not_written(*args, **kwargs):
        raise NotImplementedError
    assert "not written yet" in check_ais(not_written).verdict
    with pytest.raises(TypeError, match="fn"):
        check_ais(1.0)


# --------------------------------------------------------------------------------------
# check_birth_step: Metropolis-Hastings births and deaths (the non-conjugate chapter)
# --------------------------------------------------------------------------------------


def _birth_step(mistake=None):
    """A plain student step; ``mistake`` plants one of the usual errors."""
    def step(residual, own, rate, sigma_x, sigma_a, rng):
        new = rng.normal(0.0, sigma_a, size=(rng.poisson(rate), residual.size))
        sign = -1.0 if mistake == "change reversed" else 1.0
        e_new = residual + sign * (own.sum(axis=0) - new.sum(axis=0))
        log_r = (residual @ residual - e_new @ e_new) / (2 * sigma_x**2)
        if mistake == "prior in the ratio":  # the images' prior counted although it cancels
            log_r += ((own**2).sum() - (new**2).sum()) / (2 * sigma_a**2)
        if mistake == "always accept":
            log_r = 0.0
        return new if np.log(rng.random()) < log_r else own
    return step


# Three frequency tests (K+ on one row; K+ and the class of Z on three rows), each failing
# a correct step with probability at most 1e-3 (ibp_lab.teaching.exercises._stats.FALSE_ALARM,
# Bonferroni over its bins): at most 3e-3 together. The basics and the same-seed replay
# are exact: a step that takes every number from rng never fails them.
@pytest.mark.statistical(rate=3e-3)
@pytest.mark.slow  # about 8 s (make test only; see README)
def test_check_birth_step_passes_a_plain_student_step():
    result = check_birth_step(_birth_step())
    assert result.passed, result.verdict
    assert "agrees with exact enumeration" in result.verdict


# Each mistake moves a K+ probability by 3 to 5 tolerances at the default seed (measured);
# a run that misses one would be a false negative, not a false alarm.
BIRTH_MISTAKES = [("always accept", "follows the prior"),
                  ("prior in the ratio", "the prior of the new features and the proposal cancel"),
                  ("change reversed", "the old singletons' images go back in")]


@pytest.mark.parametrize("mistake, words", BIRTH_MISTAKES, ids=[m[0] for m in BIRTH_MISTAKES])
@pytest.mark.slow  # 2 to 10 s each (make test only; see README)
def test_check_birth_step_fails_each_mistake_in_words(mistake, words):
    result = check_birth_step(_birth_step(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_birth_step_fails_a_step_that_draws_its_images_from_another_generator():
    """Same seed, same numbers: a step that takes the number of new features from rng but
    their images from a generator of its own passes a single same-seed call whenever that
    call's Poisson draw is 0 or it rejects (so at the default seed). The check replays
    100 sweeps of the three-row chain from one seed; about 10% of the calls return fresh
    images, so such a step repeats itself with probability about 0.9^300 = 2e-14."""
    images_rng = np.random.default_rng(3)

    def own_generator(residual, own, rate, sigma_x, sigma_a, rng):
        new = images_rng.normal(0.0, sigma_a, size=(rng.poisson(rate), residual.size))
        e_new = residual + own.sum(axis=0) - new.sum(axis=0)
        log_r = (residual @ residual - e_new @ e_new) / (2 * sigma_x**2)
        return new if np.log(rng.random()) < log_r else own

    result = check_birth_step(own_generator)
    assert not result.passed
    assert "the same seed gave different results" in result.verdict, result.verdict


def test_check_birth_step_reports_broken_basics():
    def not_written(residual, own, rate, sigma_x, sigma_a, rng):
        raise NotImplementedError

    def in_place(residual, own, rate, sigma_x, sigma_a, rng):
        residual += rng.normal()
        return own

    def no_rng(residual, own, rate, sigma_x, sigma_a, rng):
        return own

    def wrong_shape(residual, own, rate, sigma_x, sigma_a, rng):
        rng.random()
        return own.ravel()

    assert "not written yet" in check_birth_step(not_written).verdict
    assert "changed the arrays" in check_birth_step(in_place).verdict
    assert "drew nothing from the rng" in check_birth_step(no_rng).verdict
    assert "shape (k, D)" in check_birth_step(wrong_shape).verdict
    with pytest.raises(TypeError, match="step"):
        check_birth_step(1.0)
    with pytest.raises(ValueError, match="n_sweeps"):
        check_birth_step(no_rng, n_sweeps=10)


# --------------------------------------------------------------------------------------
# whatever the student's function does, the checker answers (third audit)
# --------------------------------------------------------------------------------------


# the hostile student functions are the campaign's own (tests/robust_inputs.py)
from robust_inputs import _never_return as _never_returns  # noqa: E402
from robust_inputs import _raise_unprintable as _raises_unprintable  # noqa: E402


def _exact_probability(*args, **kwargs):
    return math.factorial(400)  # an exact count, as a Python int beyond the float range


CHECKERS = [
    ("class probability", check_class_probability),
    ("split-merge ratio", check_split_merge_ratio),
    ("recursive step", check_recursive_step),
    ("gibbs sweep", check_gibbs_sweep),
    ("ais", check_ais),
    ("birth step", check_birth_step),
    ("stick update", check_stick_update),
    ("slice conditional", check_slice_conditional),
]


@pytest.mark.parametrize("name, checker", CHECKERS, ids=[c[0] for c in CHECKERS])
def test_a_checker_answers_whatever_the_student_function_does(name, checker):
    unprintable = checker(_raises_unprintable)
    assert not unprintable.passed
    assert "_Unprintable: (its message could not be turned into text)" in unprintable.verdict
    huge = checker(_exact_probability)
    assert not huge.passed
    # a number where a number is expected; a row or a matrix where one is expected
    expected = {"recursive step": "not an array of probabilities",
                "gibbs sweep": "it returned an array of shape ()",
                "birth step": "not an array of images",
                "stick update": "not a pair of numbers"}.get(
        name, "too large for a float: work in log space")
    assert expected in huge.verdict, huge.verdict
    start = time.monotonic()
    stuck = checker(_never_returns, time_limit=0.5)
    assert time.monotonic() - start < 5.0
    assert not stuck.passed
    assert "did not finish within its time limit of 0.5 s" in stuck.verdict, stuck.verdict


def test_the_time_limit_leaves_the_callers_alarm_as_it_was():
    import signal

    def callers_handler(signum, frame):
        raise AssertionError("the caller's alarm went off")

    previous = signal.signal(signal.SIGALRM, callers_handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        assert check_class_probability(_raises_unprintable, time_limit=10).verdict
        assert signal.getsignal(signal.SIGALRM) is callers_handler
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 20.0 < left <= 30.0  # still running, its remaining time kept
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("limit", [0, -1.0, float("inf"), 1e9, "60"])
def test_a_bad_time_limit_is_refused_by_name(limit):
    with pytest.raises((TypeError, ValueError), match="time_limit"):
        check_class_probability(_raises_unprintable, time_limit=limit)


# --------------------------------------------------------------------------------------
# check_smc_weight (deterministic: exact comparison, no false alarms)
# --------------------------------------------------------------------------------------


def _smc_weight(sign=1.0, use_step=True):
    from ibp_lab.models.linear_gaussian import collapsed_loglik

    def weight(X, Z, b_old, b_new, sigma_x, sigma_a):
        step = b_new - b_old if use_step else b_new
        return sign * step * collapsed_loglik(X, Z, sigma_x, sigma_a)
    return weight


def test_check_smc_weight_passes_the_exact_weight():
    result = check_smc_weight(_smc_weight())
    assert result.passed, str(result)


@pytest.mark.parametrize("weight, words", [
    (_smc_weight(sign=-1.0), "wrong sign"),
    (_smc_weight(use_step=False), "use the step b_new - b_old"),
], ids=["sign", "b_new only"])
def test_check_smc_weight_fails_each_mistake_in_words(weight, words):
    result = check_smc_weight(weight)
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_smc_weight_reports_an_unwritten_function():
    result = check_smc_weight(_not_written_weight)
    assert not result.passed and "not written yet" in result.verdict


def _not_written_weight(X, Z, b_old, b_new, sigma_x, sigma_a):
    raise NotImplementedError


# --------------------------------------------------------------------------------------
# check_noisy_or_link (deterministic: exact comparison, no false alarms)
# --------------------------------------------------------------------------------------


def _link(prior=True, swapped=False):
    """A student's P(w_kd = 1 | rest) in plain NumPy: only rows with z_nk = 1 see w_kd."""
    def update(X, Z, W, k, d, strength, leak, weight_prob):
        rows = np.flatnonzero(Z[:, k])
        others = Z[rows] @ W[:, d] - W[k, d]  # active causes of pixel d besides k
        off = np.log1p(-leak) + others * np.log1p(-strength)
        log_p = lambda c: np.where(X[rows, d] == 1, np.log(-np.expm1(c)), c)
        gain = float(np.sum(log_p(off + np.log1p(-strength)) - log_p(off)))
        log_odds = gain + (math.log(weight_prob / (1 - weight_prob)) if prior else 0.0)
        return 1.0 / (1.0 + math.exp(log_odds if swapped else -log_odds))
    return update


def test_check_noisy_or_link_passes_a_plain_student_update():
    result = check_noisy_or_link(_link())
    assert result.passed, str(result)


@pytest.mark.parametrize("update, words", [
    (_link(prior=False), "prior is missing"),
    (_link(swapped=True), "you returned P(w_kd = 0 | rest)"),
], ids=["no prior", "swapped"])
def test_check_noisy_or_link_fails_each_mistake_in_words(update, words):
    result = check_noisy_or_link(update)
    assert not result.passed
    assert words in result.verdict, result.verdict


# --------------------------------------------------------------------------------------
# check_stick_update (deterministic: exact comparison, no false alarms)
# --------------------------------------------------------------------------------------


def _stick(mistake=None):
    """A student's update of q(v_k) in plain NumPy, the weights y as a softmax of b."""
    from scipy.special import digamma

    def update(nu, tau, k, alpha):
        total = digamma(tau.sum(axis=1))
        e_log_v, e_log_1mv = digamma(tau[:, 0]) - total, digamma(tau[:, 1]) - total
        b = e_log_1mv + np.concatenate([[0.0], np.cumsum(e_log_v)[:-1]])
        on = nu.sum(axis=0)
        off = nu.shape[0] - on
        if mistake == "finite":
            return alpha + on[k], 1.0 + off[k]
        tau1, tau2 = (0.0, 0.0) if mistake == "no prior" else (alpha, 1.0)
        tau1 += on[k:].sum()
        for m in range(k, len(tau)):
            y = np.exp(b[:m + 1] - b[:m + 1].max())
            y = np.full(m + 1, 1.0) if mistake == "uniform" else y
            y /= y.sum()
            tau1 += off[m] * y[(k if mistake == "from k" else k + 1):].sum()
            if m > k or mistake != "m > k":
                tau2 += off[m] * y[k]
        return (tau2, tau1) if mistake == "swapped" else (tau1, tau2)
    return update


def test_check_stick_update_passes_a_plain_student_update():
    result = check_stick_update(_stick())
    assert result.passed, str(result)
    assert "package's own" in result.verdict and "chapter's formula" in result.verdict
    assert all(m.ok for m in result.measurements)


@pytest.mark.parametrize("mistake, words", [
    ("finite", "finite family's update"),
    ("no prior", "prior is missing"),
    ("from k", "starts at i = k + 1"),
    ("m > k", "it starts at m = k"),
    ("uniform", "not the best ones for the current q(v)"),
    ("swapped", "you returned (tau_k2, tau_k1)"),
])
def test_check_stick_update_fails_each_mistake_in_words(mistake, words):
    result = check_stick_update(_stick(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_check_stick_update_is_not_fooled_by_an_update_right_at_the_prior_only():
    # y from the prior Beta(alpha, 1) instead of the current tau: right on the cases of
    # the first iteration (tau is the prior there), wrong on the later ones
    right = _stick()

    def prior_weights(nu, tau, k, alpha):
        return right(nu, np.tile([alpha, 1.0], (len(tau), 1)), k, alpha)

    result = check_stick_update(prior_weights)
    assert not result.passed
    assert "none of the usual mistakes" in result.verdict, result.verdict
    assert not all(m.ok for m in result.measurements)


def test_check_stick_update_reports_shapes_errors_and_non_functions():
    assert "shape (3,)" in check_stick_update(lambda nu, tau, k, alpha: (1.0, 2.0, 3.0)).verdict
    assert "not written yet" in check_stick_update(_not_written_update).verdict
    with pytest.raises(TypeError, match="update"):
        check_stick_update("tau")
    with pytest.raises(ValueError, match="time_limit"):
        check_stick_update(_stick(), time_limit=-1.0)


def _not_written_update(nu, tau, k, alpha):
    raise NotImplementedError


def test_check_stick_update_says_when_the_package_disagrees_with_the_formula(monkeypatch):
    from ibp_lab.teaching.exercises import _stick_update

    cases = _stick_update._cases()
    cases[4]["package"] = cases[4]["package"] + [1e-6, 0.0]
    monkeypatch.setattr(_stick_update, "_cases", lambda: cases)
    result = check_stick_update(_stick())
    assert not result.passed and "bug of ibp_lab" in result.verdict


def test_the_stick_cases_are_the_package_update_of_q_v():
    # the cases pair each fit's nu with the tau it started from: the package's own block
    # update, run on them, gives the tau the check expects
    from ibp_lab.inference import _mean_field as mf
    from ibp_lab.teaching.exercises import _stick_update

    for case in _stick_update._cases():
        nu, tau = case["nu"], case["tau"]
        problem = mf.Problem(_stick_update.X_SMALL, case["alpha"], 0.25, 1.0, len(tau),
                             "stick_breaking")
        state = mf.State(nu.copy(), np.zeros((len(tau), 2)), np.ones(len(tau)), tau.copy(),
                         np.zeros_like(_stick_update.X_SMALL))
        mf.update_sticks(state, problem)
        np.testing.assert_allclose(state.tau[case["k"]], case["package"], rtol=1e-12)


# --------------------------------------------------------------------------------------
# check_slice_conditional (deterministic: exact comparison, no false alarms)
# --------------------------------------------------------------------------------------


def _slice_entry(mistake=None):
    """A student's log-odds of z_nk = 1 in the slice sampler, in plain NumPy."""
    def log_odds(X, Z, A, mu, n, k, sigma_x):
        others_own = Z[:, k].sum() - Z[n, k] > 0
        if mistake == "only if empty":
            others_own = Z[:, k].sum() > 0
        owned = [mu[j] for j in range(len(mu)) if j != k and Z[:, j].any()]
        star_off = min(owned, default=1.0)
        star_on = min(star_off, mu[k])
        slice_term = 0.0 if others_own else math.log(star_off / star_on)
        if mistake == "no slice":
            slice_term = 0.0
        elif mistake == "reversed":
            slice_term = -slice_term
        e_off = X[n] - Z[n] @ A + Z[n, k] * A[k]
        e_on = e_off - A[k]
        likelihood = (e_off @ e_off - e_on @ e_on) / (2 * sigma_x**2)
        return math.log(mu[k] / (1 - mu[k])) + slice_term + likelihood
    return log_odds


def test_check_slice_conditional_passes_a_plain_student_function():
    result = check_slice_conditional(_slice_entry())
    assert result.passed, str(result)


@pytest.mark.parametrize("mistake, words", [
    ("no slice", "slice's term is missing"),
    ("reversed", "slice's term has the wrong sign"),
    ("only if empty", "only when column k is empty"),
])
def test_check_slice_conditional_fails_each_mistake_in_words(mistake, words):
    result = check_slice_conditional(_slice_entry(mistake))
    assert not result.passed
    assert words in result.verdict, result.verdict


def test_the_slice_cases_need_the_slice_term_on_owned_and_empty_columns():
    # the cases must tell the mistakes apart: the term is non-zero on an entry whose row
    # owns its feature alone (z_nk = 1) and on an unowned stick below the smallest weight
    from ibp_lab.teaching.exercises import _slice_conditional as sc

    cases = sc._cases()
    nonzero = [c for c in cases if sc._terms(**c)[1] != 0.0]
    assert any(c["Z"][c["n"], c["k"]] == 1 for c in nonzero)
    assert any(c["Z"][:, c["k"]].sum() == 0 for c in nonzero)


def test_the_slice_exact_value_is_the_samplers_formula():
    # the check enumerates the joint density; the sampler adds the prior's log-odds, the
    # slice term and the likelihood kernel of ibp_lab.inference.uncollapsed
    from ibp_lab.inference.uncollapsed import likelihood_log_odds
    from ibp_lab.teaching.exercises import _slice_conditional as sc

    for case in sc._cases():
        X, Z, A, mu, n, k = (case[name] for name in ("X", "Z", "A", "mu", "n", "k"))
        resid = (X - Z @ A).astype(float)
        gain = likelihood_log_odds(resid, n, A.astype(float), k, Z[n, k],
                                   2.0 * case["sigma_x"]**2)
        prior, slice_term, _ = sc._terms(**case)
        assert abs(prior + slice_term + gain - sc._exact(**case)) < 1e-12
