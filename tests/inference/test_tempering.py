"""Tests of ibp_lab.inference.tempering and of the tempered Gibbs sweep (inverse_temperature).

Exactness: on three rows every tempered sweep, and every rung of a replica-exchange
run, visits the classes (or the values of K+) with the probabilities of the exact
tempered posterior p(X | Z)^b P([Z]) / const, enumerated by
:func:`ibp_lab.inference.tempering.tempered_class_posterior`. The tolerances come from the
chain's own effective sample size (tests/stats_checks.py: exact binomial tails with
n = ESS, Bonferroni over bins, false-alarm rate TEST_LEVEL per test).
"""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab import _kernel
from ibp_lab.inference import exact, tempering
from ibp_lab.inference.gibbs import gibbs_sweep, k_plus_trace
from ibp_lab.inference.tempering import (
    run_tempered,
    run_tempered_chains,
    tempered_class_posterior,
    tempered_k_plus_posterior,
    tuned_ladder,
)
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, chain_ess, chain_frequency_pvalues

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
HYPER = {"alpha": 1.3, "sigma_x": 0.6, "sigma_a": 1.2}
K_MAX = 12
MIN_PROBABILITY = 0.003


def _assert_frequencies(labels, p, tail, *, what, n_tests=1):
    """Visit counts of bins 0..len(p)-1 (the last bin holds the rest) against ``p``.

    The exact probabilities are known up to the enumeration's tail bound, which
    widens each bin's interval; each bin is tested at TEST_LEVEL / (bins x tests).
    """
    p = np.asarray(p, float)
    p_low = p * (1 - tail)
    p_high = p + np.append(np.zeros(len(p) - 1), tail)
    n_eff = chain_ess(labels, len(p))
    pvalues, _, _ = chain_frequency_pvalues(labels, p_low, p_high, n_eff=n_eff)
    limit = TEST_LEVEL / (len(p) * n_tests)
    frequencies = np.bincount(labels, minlength=len(p)) / len(labels)
    assert (pvalues >= limit).all(), (
        f"{what}: bins {np.flatnonzero(pvalues < limit)} visited {frequencies.round(4)}, "
        f"exact {p.round(4)} (ESS {n_eff:.0f}, p-values {pvalues}, limit {limit:.1e})")


def _k_plus_bins(k_trace, p_k):
    """Labels and probabilities: each K+ with p >= MIN_PROBABILITY its bin, the rest one."""
    own = np.flatnonzero(p_k >= MIN_PROBABILITY)
    position = np.full(int(max(k_trace.max(), p_k.size)) + 1, own.size)
    position[own] = np.arange(own.size)
    return position[k_trace], np.append(p_k[own], max(1.0 - p_k[own].sum(), 0.0))


# --------------------------------------------------------------------------------------
# the tempered steps and the tempered enumeration
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("b", [0.0, 0.37, 1.0])
def test_tempered_flip_log_odds_scales_the_likelihood_part_only(b):
    """Direct computation: log-odds(b) = b (log-odds(1) - prior) + prior."""
    args = (2.0, 1.4, 0.3, 0.5, 0.36, 0.36, 4)
    prior = -0.8
    untempered = _kernel.flip_log_odds(*args, prior)
    assert _kernel.flip_log_odds(*args, prior, b) == pytest.approx(b * (untempered - prior) + prior,
                                                                   rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("b", [0.0, 0.4])
def test_tempered_new_dish_weights_are_poisson_times_tempered_density(b):
    """Direct computation: log w_s = log Poisson(s; rate) + b log Normal(resid; 0, v_s I)."""
    rate, v0, sa2, rr, D = 1.7, 0.4, 0.9, 3.1, 3
    log_w = _kernel.new_dish_log_weights(rate, v0, sa2, rr, D, b)
    s = np.arange(log_w.size)
    v = v0 + s * sa2
    from scipy.special import gammaln
    direct = s * np.log(rate) - gammaln(s + 1) + b * (-0.5 * D * np.log(v) - rr / (2 * v))
    np.testing.assert_allclose(log_w, direct, rtol=1e-12, atol=1e-12)


def test_tempered_enumeration_at_one_is_the_posterior_and_at_zero_the_prior():
    """b = 1: exact.class_posterior; b = 0: the IBP prior (K+ ~ Poisson(alpha H_N))."""
    from scipy.stats import poisson

    cold = tempered_class_posterior(X3, 1.0, **HYPER, k_max=K_MAX)
    np.testing.assert_allclose(cold.probabilities,
                               exact.class_posterior(X3, 1.3, 0.6, 1.2, k_max=K_MAX).probabilities,
                               rtol=1e-9, atol=1e-15)
    prior_k = tempered_k_plus_posterior(X3, 0.0, **HYPER, k_max=K_MAX)
    prior_rate = 1.3 * (1 + 1 / 2 + 1 / 3)
    np.testing.assert_allclose(prior_k, poisson(prior_rate).pmf(np.arange(K_MAX + 1)),
                               atol=1e-5)  # renormalised over K+ <= 12: off by P(K+ > 12) < 2e-6


@pytest.mark.parametrize("b, seed", [(0.0, 191), (0.3, 192), (0.7, 193)])
@pytest.mark.statistical(rate=TEST_LEVEL)
def test_tempered_sweep_leaves_the_tempered_posterior_invariant(b, seed):
    """Every class's visit frequency in 150,000 tempered sweeps against the enumeration."""
    post = tempered_class_posterior(X3, b, **HYPER, k_max=K_MAX)
    assert post.tail_bound < 1e-3
    _, types = k_plus_trace(X3, 150_000, stat_rng(seed), **HYPER, inverse_temperature=b,
                            return_types=True)
    index = {row.tobytes(): c for c, row in enumerate(post.counts.astype(np.int32))}
    classes = np.array([index.get(row.tobytes(), -1) for row in types[100:]])
    own = np.flatnonzero(post.probabilities >= MIN_PROBABILITY)
    position = np.full(post.probabilities.size + 1, own.size)
    position[own] = np.arange(own.size)
    labels = position[classes]  # -1 (beyond k_max) lands on the last, "other", entry
    p = np.append(post.probabilities[own], max(1 - post.probabilities[own].sum(), 0.0))
    _assert_frequencies(labels, p, post.tail_bound, what=f"tempered sweep at b = {b}")


# --------------------------------------------------------------------------------------
# replica exchange
# --------------------------------------------------------------------------------------


def test_swap_log_ratio_is_the_product_targets_metropolis_ratio():
    """Direct computation from the tempered enumeration's unnormalised log weights."""
    post = exact.class_posterior(X3, 1.3, 0.6, 1.2, k_max=6)
    ladder = np.array([1.0, 0.45])
    Za, Zb = np.array([[1], [1], [0]]), np.array([[1, 0], [0, 1], [0, 1]])
    weights = [tempered_class_posterior(X3, b, **HYPER, k_max=6) for b in ladder]

    def log_target(b_index, Z):
        c = np.flatnonzero(np.all(post.counts == exact.class_counts(Z), axis=1))[0]
        return weights[b_index].log_weights[c]

    direct = log_target(0, Zb) + log_target(1, Za) - log_target(0, Za) - log_target(1, Zb)
    log_lik = [tempering._class_logliks(X3, exact.class_posterior(X3, 1.3, 0.6, 1.2, k_max=6),
                                        0.6, 1.2)[np.flatnonzero(np.all(
                                            post.counts == exact.class_counts(Z), axis=1))[0]]
               for Z in (Za, Zb)]
    assert tempering._swap_log_ratios(ladder, np.array(log_lik))[0] == pytest.approx(direct,
                                                                                   abs=1e-9)


@pytest.mark.parametrize("scheme, seed", [("deo", 194), ("seo", 195)])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
@pytest.mark.statistical(rate=TEST_LEVEL)
def test_every_rung_of_a_tempered_run_has_its_exact_k_plus_law(scheme, seed):
    """Cold chain: the posterior; each hotter rung: its tempered posterior (K+ laws)."""
    run = run_tempered(X3, 30_000, stat_rng(seed), **HYPER, n_temperatures=3,
                       min_inverse_temperature=0.0, burn=1000, swap_scheme=scheme)
    k_levels = run.replica_trace["k_plus"].values[1000:]
    for level, b in enumerate(run.inverse_temperatures):
        p_k = tempered_k_plus_posterior(X3, b, **HYPER, k_max=K_MAX)
        labels, p = _k_plus_bins(k_levels[:, level], p_k)
        _assert_frequencies(labels, p, 1e-3, what=f"{scheme} rung {level} (b = {b:.3f})",
                            n_tests=3)


def test_the_kept_draws_use_a_fixed_ladder_and_the_cold_trace_is_level_zero():
    run = run_tempered(X3, 300, stat_rng(196), **HYPER, n_temperatures=4, burn=150)
    assert run.inverse_temperatures[0] == 1.0
    assert np.all(np.diff(run.inverse_temperatures) < 0)
    np.testing.assert_array_equal(run.trace["k_plus"], run.replica_trace["k_plus"][:, 0])
    assert run.Z.shape[1] == run.trace["k_plus"].values[-1]
    log_joint = (_kernel.log_joint(X3, run.Z, float(np.sum(X3**2)), 0.6, 1.2,
                                   np.log(1.3), 1.3 * (1 + 1 / 2 + 1 / 3), 1.0))
    assert run.trace["log_joint"].values[-1] == pytest.approx(sum(log_joint), rel=1e-12)


@pytest.mark.parametrize("b", [0.0, 0.3, 1.0])
def test_the_tempered_tail_bound_holds_the_mass_beyond_k_max(b):
    """The bound at k_max = 4 against the mass that an enumeration to 12 finds beyond 4
    (a lower value for the true mass, so the check is one-sided the right way). At b = 0
    the tempered posterior is the prior and the mass is P(Poisson(alpha H) > 4), about
    0.09; a bound that forgot to raise the likelihood ceiling to the power b (the audit's
    planted bug) is 150 times smaller there."""
    small = tempered_class_posterior(X3, b, **HYPER, k_max=4)
    big = tempered_class_posterior(X3, b, **HYPER, k_max=12)
    beyond = float(big.probabilities[big.k_plus > 4].sum())
    assert beyond <= small.tail_bound <= 1.0


def test_tuned_ladder_equalises_a_known_barrier():
    """Rejection of a pair = the barrier's increment; after tuning the increments are equal."""
    def barrier(b):
        return 3.0 * np.sqrt(b)  # a known Lambda(b), rising fastest near b = 0

    ladder = np.linspace(1.0, 0.0, 9)
    for _ in range(30):  # the first-order rejection estimate is exact here: iterate to the fix
        ladder = tuned_ladder(ladder, -np.diff(barrier(ladder)))
    increments = -np.diff(barrier(ladder))
    np.testing.assert_allclose(increments, 3.0 / 8, rtol=1e-3)


def test_tuned_ladder_depends_on_the_barrier_shape_not_its_scale():
    ladder, rejection = np.array([1.0, 0.7, 0.3, 0.0]), np.array([0.2, 0.5, 0.9])
    expected = tuned_ladder(ladder, rejection)
    for scale in (1e-3, 1e6, 1e307):  # 1e307 * 1.6 is inf: summed unscaled, the end was NaN
        np.testing.assert_allclose(tuned_ladder(ladder, scale * rejection), expected,
                                   rtol=1e-12)


def test_workers_do_not_change_the_chain():
    one = run_tempered(X3, 200, np.random.default_rng(7), **HYPER, n_temperatures=4, burn=50)
    two = run_tempered(X3, 200, np.random.default_rng(7), **HYPER, n_temperatures=4, burn=50,
                       workers=2)
    np.testing.assert_array_equal(one.replica_trace["k_plus"], two.replica_trace["k_plus"])
    np.testing.assert_array_equal(one.inverse_temperatures, two.inverse_temperatures)


def test_tempered_chains_are_laid_out_like_run_chains():
    import arviz as az

    from ibp_lab.inference.chains import run_chains

    starts = [np.ones((3, 1)), np.eye(3)]
    idata, runs = run_tempered_chains(X3, 2, 120, np.random.default_rng(3), Z0=starts,
                                      **HYPER, n_temperatures=3, burn=20)
    plain, _ = run_chains(X3, 2, 120, np.random.default_rng(3), Z0=starts, burn=20,
                          moves=["gibbs_sweep"], **HYPER)
    assert dict(idata.posterior.sizes) == dict(plain.posterior.sizes)
    assert set(idata.posterior.data_vars) <= set(plain.posterior.data_vars)
    assert "seconds" in idata.sample_stats
    # each chain of the InferenceData is its run's cold chain after warm-up, draw for draw
    for c, run in enumerate(runs):
        burn = run.trace.attrs["burn"]
        for name in ("k_plus", "log_joint"):
            np.testing.assert_array_equal(idata.posterior[name].sel(chain=c).values,
                                          run.trace[name].values[burn:])
    # and ArviZ reads it: its R-hat of K+ is the rank-normalised split R-hat of those draws
    assert float(az.rhat(idata, var_names=["k_plus"])["k_plus"]) == pytest.approx(
        float(az.rhat(np.stack([r.trace["k_plus"].values[r.trace.attrs["burn"]:]
                                for r in runs]))), rel=1e-12)


@pytest.mark.parametrize("options, message", [
    ({"n_temperatures": 0}, "n_temperatures must be an integer >= 1"),
    ({"min_inverse_temperature": 1.5}, "min_inverse_temperature must be <= 1"),
    ({"min_inverse_temperature": 1.0}, "min_inverse_temperature must be < 1"),
    ({"swap_scheme": "random"}, "swap_scheme must be one of"),
    ({"burn": 50}, "burn must be an integer <= 9"),
    ({"workers": 0}, "workers must be an integer >= 1"),
    ({"alpha": -1.0}, "alpha must be > 0"),
    ({"Z0": [[2], [0], [1]]}, "Z0"),
])
def test_bad_input_is_refused_with_a_message_naming_it(options, message):
    kwargs = {**HYPER, **options}
    with pytest.raises((ValueError, TypeError), match=message):
        run_tempered(X3, 10, np.random.default_rng(0), **kwargs)


def test_bad_inverse_temperature_is_refused_by_the_sweeps():
    with pytest.raises(ValueError, match="inverse_temperature must be <= 1"):
        gibbs_sweep(X3, np.ones((3, 1)), 1.3, 0.6, 1.2, np.random.default_rng(0),
                    inverse_temperature=2.0)
    with pytest.raises(ValueError, match="inverse_temperature must be >= 0"):
        k_plus_trace(X3, 10, np.random.default_rng(0), **HYPER, inverse_temperature=-0.1)
    with pytest.raises(ValueError, match="inverse_temperature must be >= 0"):
        tempered_class_posterior(X3, -1.0, **HYPER)


def test_one_rung_is_the_plain_gibbs_chain():
    """With a single rung there are no swaps: the cold chain is k_plus_trace's, draw for draw."""
    parent = np.random.default_rng(11)
    run = run_tempered(X3, 500, parent, **HYPER, n_temperatures=1)
    k = k_plus_trace(X3, 500, np.random.default_rng(11).spawn(2)[0], **HYPER)
    np.testing.assert_array_equal(run.trace["k_plus"].values, k)


class _FixedLogLik:
    """Stand-in for the replicas: the log-likelihood at each level is held fixed."""

    def __init__(self, log_lik_by_level):
        self.by_level = np.asarray(log_lik_by_level, float)
        self.state_at = np.arange(self.by_level.size)
        self.log_lik = self.by_level.copy()

    def reset(self):
        """Give whichever state now sits at each level that level's log-likelihood."""
        self.log_lik[self.state_at] = self.by_level


@pytest.mark.parametrize("scheme, seed", [("deo", 197), ("seo", 198)])
@pytest.mark.statistical(rate=TEST_LEVEL)
def test_swap_statistics_with_a_known_acceptance_probability(scheme, seed):
    """Fixed log-likelihoods: the ratio is exp(-1) every round, so the rejection rate is
    exactly 1 - exp(-1), and accepted swaps and (seo) proposals are binomial counts."""
    from tests.stats_checks import binomial_pvalue

    n_rounds, accept_p = 4000, np.exp(-1.0)
    ladder = tempering._Ladder(np.array([1.0, 0.5]), scheme, 0, False, stat_rng(seed))
    replicas = _FixedLogLik([0.0, -2.0])  # log ratio (1 - 0.5) (-2 - 0) = -1
    for t in range(n_rounds):
        replicas.reset()
        ladder.swap(t, replicas)
    acceptance, rejection = ladder.summary(n_rounds)
    assert rejection[0] == pytest.approx(1 - accept_p, rel=1e-12)
    proposed = int(ladder.proposed[0])
    if scheme == "deo":
        assert proposed == n_rounds // 2  # pair 0 in the even rounds only
    else:
        assert binomial_pvalue(proposed, n_rounds, 0.5) >= TEST_LEVEL / 2
    assert binomial_pvalue(int(ladder.accepted[0]), proposed, accept_p) >= TEST_LEVEL / 2
    assert acceptance[0] == ladder.accepted[0] / proposed


def test_restarts_are_counted_from_the_hottest_to_the_cold_rung():
    """Every swap accepted, deo, three rungs: the states cycle with period 6 rounds, and
    from round 2 on a state arrives at the cold rung from the hot one every other round
    (traced by hand: restarts at rounds 2, 4, 6, ...), so rounds 0..T give T // 2."""
    ladder = tempering._Ladder(np.array([1.0, 0.5, 0.0]), "deo", 0, False, stat_rng(199))
    replicas = _FixedLogLik([0.0, 0.0, 0.0])  # log ratio 0: always accepted
    for t in range(101):
        ladder.swap(t, replicas)
    assert ladder.restarts == 50


def test_a_state_that_never_leaves_the_cold_rung_makes_no_restart():
    """A restart is an arrival at the cold rung *from the hot one* (a round trip, Syed et
    al. 2021). With every swap refused no state moves, so there is none; counting arrivals
    of states whose last end was the cold rung (the audit's planted bug) counts every round
    instead. On the symmetric cycle above both counts give 50, which is why that test
    could not tell them apart."""
    ladder = tempering._Ladder(np.array([1.0, 0.5, 0.0]), "deo", 0, False, stat_rng(199))
    # the cold state far better than the hotter ones: every swap's log ratio is -5e5
    replicas = _FixedLogLik([0.0, -1e6, -2e6])
    for t in range(101):
        ladder.swap(t, replicas)
    assert ladder.accepted.sum() == 0 and ladder.proposed.sum() > 0
    assert ladder.restarts == 0
