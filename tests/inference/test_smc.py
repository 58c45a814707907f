"""Tests of ibp_lab.inference.smc: sequential Monte Carlo and annealed importance sampling.

Exactness, on data small enough to enumerate (:mod:`ibp_lab.inference.exact`):

- the evidence: ``Z_hat / p(X)`` has mean 1 when the resampling times are fixed
  (never: AIS; always), so the mean of ``R`` independent runs' ratios lies within
  ``z`` standard errors of 1, the standard error estimated from the same runs and
  ``z`` the two-sided normal quantile at TEST_LEVEL (CLT over independent runs;
  the ratio is bounded, since ``p(X | Z)`` is, so its variance is finite);
- the adaptive rule (resample when the ESS halves) is consistent, not unbiased:
  the same check, which says that its bias is below what ``R`` runs resolve;
- the K+ law: ``sum_r Z_hat_r sum_i W_ri 1[K_ri = k] / sum_r Z_hat_r`` is a ratio
  of unbiased estimates of ``p(X) P(K+ = k | X)`` and ``p(X)``; its standard error is
  the delta method's from the same runs; each k with exact probability above
  MIN_PROBABILITY is checked at TEST_LEVEL / (number of k) (Bonferroni).

The exact evidence is enumerated to K_MAX features; the mass beyond (the
enumeration's tail bound, asserted below 1e-3 of the total) moves the exact values
by less than a tenth of the smallest tolerance here (about 3 x 0.01).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from ibp_lab.inference import exact, smc
from ibp_lab._kernel import loglik_from_stats, sufficient_stats
from ibp_lab.models.prior import sample_ibp
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, normal_two_sided_z

#: The variational chapter's tiny rows, and three rows in three dimensions with beta != 1
#: and a sharper likelihood (the adaptive rule resamples there).
DATA = {
    "tiny": (np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]),
             dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2, beta=1.0)),
    "beta 0.6": (np.array([[1.1, -0.6, 0.3], [0.9, -0.4, 0.4], [0.2, 1.0, -0.8]]),
                 dict(alpha=1.0, sigma_x=0.3, sigma_a=1.0, beta=0.6)),
}
K_MAX = 12
MIN_PROBABILITY = 0.01
N_RUNS, N_PARTICLES, N_STEPS = 200, 30, 10
#: Thresholds: never (AIS), always (fixed times: unbiased), adaptive (the default).
THRESHOLDS = (0.0, 1.0, 0.5)
#: Every data set with every threshold; make check (not slow) keeps the tiny rows, always
#: resampling (each case's 200 runs take about 3 s).
CASES = [pytest.param(name, t, marks=() if (name, t) == ("tiny", 1.0) else pytest.mark.slow,
                      id=f"{name}-{t}") for name in DATA for t in THRESHOLDS]


@functools.cache
def _exact(name):
    X, hyper = DATA[name]
    post = exact.class_posterior(X, **hyper, k_max=K_MAX)
    assert post.tail_bound < 1e-3
    return (exact.log_evidence(X, **hyper, k_max=K_MAX),
            exact.k_plus_posterior(X, **hyper, k_max=K_MAX))


@functools.cache
def _runs(name, threshold):
    X, hyper = DATA[name]
    rng = stat_rng(2800 + 10 * list(DATA).index(name) + int(10 * threshold))
    return tuple(smc.run_smc(X, N_PARTICLES, rng, **hyper, n_temperatures=N_STEPS,
                             ess_threshold=threshold) for _ in range(N_RUNS))


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.parametrize("name, threshold", CASES)
def test_the_evidence_estimate_has_mean_p_of_x(name, threshold):
    log_p, _ = _exact(name)
    ratio = np.exp([run.log_evidence - log_p for run in _runs(name, threshold)])
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    z = normal_two_sided_z(TEST_LEVEL)
    assert abs(ratio.mean() - 1.0) <= z * se, (
        f"mean Z_hat / p(X) = {ratio.mean():.4f} +- {se:.4f} over {ratio.size} runs")


@pytest.mark.slow
def test_the_adaptive_rule_does_resample_on_the_sharper_data():
    """Otherwise the adaptive case above would only repeat the AIS one."""
    assert np.mean([run.resampled.any() for run in _runs("beta 0.6", 0.5)]) > 0.5


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.parametrize("name, threshold", CASES)
def test_the_weighted_particles_have_the_exact_k_plus_law(name, threshold):
    _, p_k = _exact(name)
    runs = _runs(name, threshold)
    log_z = np.array([run.log_evidence for run in runs])
    z = np.exp(log_z - log_z.max())  # a common factor: the ratio does not see it
    pmf = np.array([run.k_plus_pmf(K_MAX) for run in runs])  # (runs, k)
    estimate = z @ pmf / z.sum()
    # delta method for the ratio of means A / B: var = var(A - est B) / (R mean(B)^2)
    residual = z[:, None] * (pmf - estimate)
    se = residual.std(axis=0, ddof=1) / (np.sqrt(len(runs)) * z.mean())
    checked = np.flatnonzero(p_k[: K_MAX + 1] > MIN_PROBABILITY)
    limit = normal_two_sided_z(TEST_LEVEL, checked.size)
    off = np.abs(estimate[checked] - p_k[checked]) > limit * se[checked]
    assert not off.any(), (f"K+ = {checked[off]}: estimated {estimate[checked].round(4)}, "
                           f"exact {p_k[checked].round(4)}, se {se[checked].round(4)}")


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.parametrize("name, threshold", [c for c in CASES if c.values[1] != 0.5])
def test_a_regions_evidence_estimate_has_mean_p_of_x_and_region(name, threshold):
    """With fixed resampling times, exp(region_log_evidence()[k]) is unbiased for
    p(X, K+ = k): over the same runs, each k with exact probability above
    MIN_PROBABILITY has mean ratio to the exact value within z standard errors of 1
    (CLT over runs; a run with no particle at k contributes 0), Bonferroni over k."""
    log_p, p_k = _exact(name)
    runs = _runs(name, threshold)
    checked = np.flatnonzero(p_k[: K_MAX + 1] > MIN_PROBABILITY)
    limit = normal_two_sided_z(TEST_LEVEL, checked.size)
    for k in checked:
        exact_log = log_p + np.log(p_k[k])
        ratio = np.array([np.exp(run.region_log_evidence(run.k_plus).get(int(k), -np.inf)
                                 - exact_log) for run in runs])
        se = ratio.std(ddof=1) / np.sqrt(ratio.size)
        assert abs(ratio.mean() - 1.0) <= limit * se, (k, ratio.mean(), se)


def test_the_regions_evidence_adds_up_and_refuses_bad_labels():
    X, hyper = DATA["beta 0.6"]
    run = smc.run_smc(X, 25, np.random.default_rng(9), **hyper, n_temperatures=8)
    by_k = run.region_log_evidence(run.k_plus)
    assert list(by_k) == sorted(set(run.k_plus.tolist()))
    assert np.isclose(logsumexp(list(by_k.values())), run.log_evidence)
    with pytest.raises(ValueError, match="labels"):
        run.region_log_evidence(run.k_plus[:-1])
    with pytest.raises(TypeError, match="labels must be integers"):
        run.region_log_evidence(run.k_plus + 0.5)
    with pytest.raises(TypeError, match="labels"):
        run.region_log_evidence(["a"] * run.k_plus.size)


@pytest.mark.parametrize("dtype, big", [
    (np.int64, [2**53, 2**53 + 1]),  # one apart, the same float64
    (np.uint64, [2**63, 2**64 - 1]),  # beyond int64
    (np.int8, [-128, 127]),
])
def test_region_labels_of_any_integer_dtype_are_kept_exact(dtype, big):
    X, hyper = DATA["tiny"]
    run = smc.run_smc(X, 6, np.random.default_rng(4), **hyper, n_temperatures=3)
    labels = np.array([big[0]] * 3 + [big[1]] * 3, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from a lossy conversion
        by_label = run.region_log_evidence(labels)
    assert list(by_label) == big and all(type(k) is int for k in by_label)
    for value, rows in ((big[0], slice(0, 3)), (big[1], slice(3, 6))):
        assert np.isclose(by_label[value], run.log_evidence + logsumexp(run.log_weights[rows]))
    # a list of Python ints beyond any NumPy integer still names its regions
    huge = [2**70] * 3 + [2**70 + 1] * 3
    assert list(run.region_log_evidence(huge)) == [2**70, 2**70 + 1]


@pytest.mark.parametrize("labels, message", [
    (np.zeros(6), "labels must be integers"),  # floats: 2**53 + 1 has no float
    ([0.0, 1.0, 0.0, 1.0, 0.0, 1.0], "labels must be integers"),
    (np.array([True, False] * 3), "labels must be integers"),
    ([1, 2, 3, None, 5, 6], "labels must be integers"),
])
def test_non_integer_region_labels_are_refused_by_name(labels, message):
    X, hyper = DATA["tiny"]
    run = smc.run_smc(X, 6, np.random.default_rng(4), **hyper, n_temperatures=3)
    with pytest.raises((TypeError, ValueError), match=message):
        run.region_log_evidence(labels)


def test_one_step_is_importance_sampling_from_the_prior():
    """T = 1: Z_hat is the mean likelihood of n prior draws (the same draws, same seed)."""
    X, hyper = DATA["tiny"]
    run = smc.run_smc(X, 40, np.random.default_rng(5), **hyper,
                      inverse_temperatures=[0.0, 1.0], ess_threshold=0.0)
    rng = np.random.default_rng(5)
    draws = [sample_ibp(hyper["alpha"], 3, rng, beta=hyper["beta"]) for _ in range(40)]
    log_lik = np.array([loglik_from_stats(*sufficient_stats(X, Z.astype(np.int8)),
                                          float(np.sum(X * X)), 3, 2, hyper["sigma_x"],
                                          hyper["sigma_a"]) for Z in draws])
    assert np.isclose(run.log_evidence, logsumexp(log_lik) - np.log(40))
    assert np.allclose(run.log_weights, log_lik - logsumexp(log_lik))


@pytest.mark.statistical(rate=1e-5)
def test_the_spread_of_the_estimate_falls_with_the_particles():
    """sd(log Z_hat) falls like n^-1/2: 8 times the particles, about 2.8 times less spread.

    The rate: with R = 200 runs at each n, log(sd) has standard deviation about
    sqrt((1 + kurtosis / 2) / (2 (R - 1))), 0.054 at the measured excess kurtosis
    (at most 0.34), so the log of the ratio has about 0.077. The expected ratio,
    sqrt(8) = 2.83 (2.81 measured over these runs), is 0.35 above log 2, 4.5 of those
    standard deviations: a normal tail of 3e-6, stated as 1e-5. (With 40 runs the
    same bound gave a 1.6% false-alarm rate by bootstrap.)
    """
    X, hyper = DATA["beta 0.6"]
    rng = stat_rng(2850)
    sd = [np.std([smc.run_smc(X, n, rng, **hyper, n_temperatures=N_STEPS).log_evidence
                  for _ in range(200)], ddof=1) for n in (8, 64)]
    assert sd[0] / sd[1] > 2.0, sd


def test_runs_are_reproducible_and_ais_is_smc_without_resampling():
    X, hyper = DATA["beta 0.6"]
    a = smc.run_ais(X, 20, np.random.default_rng(3), **hyper, n_temperatures=6)
    b = smc.run_smc(X, 20, np.random.default_rng(3), **hyper, n_temperatures=6,
                    ess_threshold=0.0)
    c = smc.run_smc(X, 20, np.random.default_rng(3), **hyper, n_temperatures=6,
                    ess_threshold=0.0)
    assert a.log_evidence == b.log_evidence == c.log_evidence
    assert np.array_equal(a.k_plus, b.k_plus) and not a.resampled.any()


def test_the_particles_carry_their_own_likelihoods_and_weights():
    # The run keeps each particle's log p(X | Z) up to date through its moves (the weights
    # of every step are computed from it): recomputed from the final states it must agree.
    # With ess_threshold=1 every step resamples, so the final weights are uniform.
    from ibp_lab.models.linear_gaussian import collapsed_loglik

    X, hyper = DATA["beta 0.6"]
    run = smc.run_smc(X, 25, np.random.default_rng(9), **hyper, n_temperatures=8,
                      ess_threshold=1.0)
    fresh = [collapsed_loglik(X, Z, hyper["sigma_x"], hyper["sigma_a"]) for Z in run.states]
    assert np.allclose(run.log_likelihood, fresh, rtol=1e-10, atol=1e-8)
    assert np.allclose(run.log_weights, -np.log(25))
    assert run.resampled.all() and np.all((run.ess > 0) & (run.ess <= 25 + 1e-9))
    assert [Z.shape[1] for Z in run.states] == list(run.k_plus)
    assert np.all(run.k_plus_pmf(K_MAX) >= 0) and np.isclose(run.k_plus_pmf(K_MAX).sum(), 1)
    assert run.inverse_temperatures[0] == 0 and run.inverse_temperatures[-1] == 1


@pytest.mark.statistical(rate=TEST_LEVEL)
def test_one_over_the_harmonic_mean_is_unbiased_for_one_over_the_evidence():
    """The identity the estimator rests on, E_post[1 / p(X | Z)] = 1 / p(X), checked with
    draws from the exact class posterior: 400 sets of 20 draws, the mean of 1 / HM
    within z standard errors of 1 / p(X)."""
    X, hyper = DATA["tiny"]
    post = exact.class_posterior(X, **hyper, k_max=K_MAX)
    log_p, _ = _exact("tiny")
    sum_sq = float(np.sum(X * X))
    class_loglik = np.array([loglik_from_stats(*sufficient_stats(X, Z), sum_sq, 3, 2,
                                               hyper["sigma_x"], hyper["sigma_a"])
                             for Z in post.classes()])
    draws = stat_rng(2860).choice(class_loglik.size, size=(400, 20), p=post.probabilities)
    scaled = np.exp(log_p - np.array([smc.harmonic_mean_log_evidence(class_loglik[d])
                                      for d in draws]))  # p(X) / HM, mean 1
    se = scaled.std(ddof=1) / np.sqrt(scaled.size)
    assert abs(scaled.mean() - 1.0) <= normal_two_sided_z(TEST_LEVEL) * se, scaled.mean()


@pytest.mark.parametrize("options, message", [
    (dict(inverse_temperatures=[0.0, 0.5, 0.4, 1.0]), "increase strictly"),
    (dict(inverse_temperatures=[0.2, 1.0]), "from 0 to 1"),
    (dict(ess_threshold=1.5), "ess_threshold"),
    (dict(n_particles=0), "n_particles"),
    (dict(n_sweeps=0), "n_sweeps"),
    (dict(n_particles=10**5, n_temperatures=10**4), "n_particles, n_temperatures and n_sweeps"),
])
def test_bad_options_are_refused_with_a_message_naming_them(options, message):
    X, hyper = DATA["tiny"]
    kwargs = dict(n_particles=5, n_temperatures=3) | options
    with pytest.raises(ValueError, match=message):
        smc.run_smc(X, kwargs.pop("n_particles"), np.random.default_rng(0), **hyper, **kwargs)


def test_half_mean_abs_difference_is_the_pairwise_sum():
    rng = np.random.default_rng(4)
    values, w = rng.normal(size=7), rng.random(7)
    log_w = np.log(w / w.sum())
    direct = 0.5 * np.sum(np.outer(w, w) * np.abs(values[:, None] - values[None, :])) / w.sum() ** 2
    assert np.isclose(smc._half_mean_abs_difference(values, log_w), direct)


@pytest.mark.statistical(rate=1e-3)
def test_the_local_barrier_matches_the_exact_tempered_posterior():
    """lambda(b) = E|l(Z) - l(Z')| / 2 under pi_b, from enumeration, against the mean of
    20 runs' particle estimates at b = 1/16 and b = 1 (the V-statistic's bias, a factor
    1 - 1/n = 0.997 at n = 300, is far below the tolerance: about 3 SE of a few %)."""
    from ibp_lab.inference import tempering
    X, hyper = DATA["beta 0.6"]
    ladder = np.array([0.0, 1 / 64, 1 / 16, 1 / 4, 1.0])
    rng = stat_rng(2870)
    runs = [smc.run_smc(X, 300, rng, **hyper, inverse_temperatures=ladder, ess_threshold=1.0)
            for _ in range(20)]
    estimates = np.array([run.local_barrier for run in runs])
    # the SE comes from 20 runs: Student's t with 19 degrees of freedom, not the normal z
    from scipy import stats
    z = float(stats.t.isf(TEST_LEVEL / 4, df=19))  # two-sided, Bonferroni over 2 rungs
    for position in (2, 4):
        b = ladder[position]
        post = tempering.tempered_class_posterior(X, b, **hyper, k_max=K_MAX)
        loglik = tempering._class_logliks(X, post, hyper["sigma_x"], hyper["sigma_a"])
        # the pairwise sum over the 50,388 classes by the sorted form (checked above)
        with np.errstate(divide="ignore"):
            exact_lambda = smc._half_mean_abs_difference(loglik, np.log(post.probabilities))
        column = estimates[:, position]
        se = column.std(ddof=1) / np.sqrt(column.size)
        assert abs(column.mean() - exact_lambda) <= z * se, (b, column.mean(), exact_lambda, se)
    assert np.isclose(runs[0].communication_barrier(0.25),
                      (1 - 0.25) * (runs[0].local_barrier[3] + runs[0].local_barrier[4]) / 2)
