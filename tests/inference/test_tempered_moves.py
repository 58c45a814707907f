"""Moves at an inverse temperature (issue 49): split-merge, the singleton update and the
Gibbs sweep on the tempered posterior ``p(X | Z)^b P([Z])``, and replica exchange and SMC
running them.

Exactness, on data small enough to enumerate the tempered posterior
(:func:`ibp_lab.inference.tempering.tempered_class_posterior`):

1. detailed balance of each split-merge move at ``b = 0.5``, exactly: every path of a
   proposal enumerated with its probability (the path enumerators of
   ``tests/inference/test_split_merge.py``), its acceptance ``min(1, exp(b dlog p(X | Z) +
   dlog P([Z]) + log q ratio))`` computed from :func:`collapsed_loglik` and
   :func:`log_prior`, and ``pi_b(Z) T(Z -> Z') = pi_b(Z') T(Z' -> Z)`` to relative 1e-10;
2. chains of the moves (split-merge with the singleton update alone, or with Gibbs) at
   ``b = 0.5`` through the shared check of ``tests/exactness.py``: every class above 0.3%
   against the enumeration by exact binomial tails at the chain's ESS, Bonferroni over the
   bins, false alarm at most TEST_LEVEL per test; a planted bug (the ratio left untempered)
   must fail it;
3. replica exchange whose replicas move by split-merge and singleton updates only: every
   rung's ``K+`` law against its tempered posterior (the same binomial tails);
4. SMC whose particles move by split-merge and singleton updates: the evidence estimate's
   mean ratio to ``p(X)`` and the weighted ``K+`` law within z standard errors (CLT over
   independent runs, z two-sided at TEST_LEVEL, Bonferroni over ``K+``), as in
   ``tests/inference/test_smc.py``.

The Monte Carlo error behind every tolerance is estimated from the runs themselves
(the chain's ESS, or the spread over independent runs): no tolerance is a guess.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibp_lab._hyper import Hyperparameters
from ibp_lab.inference import chains, exact, smc
from ibp_lab.inference import split_merge as sm
from ibp_lab.inference.split_merge import _target
from ibp_lab.inference.tempering import (
    run_tempered,
    tempered_class_posterior,
    tempered_k_plus_posterior,
)
from ibp_lab.models.linear_gaussian import collapsed_loglik
from ibp_lab.models.prior import log_prior
from tests.exactness import assert_leaves_posterior_invariant
from tests.inference.test_split_merge import (
    balance_errors,
    random_move_paths,
    sequential_move_paths,
)
from tests.seeds import stat_rng
from tests.stats_checks import TEST_LEVEL, chain_ess, chain_frequency_pvalues, normal_two_sided_z

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
X4 = np.array([[1.1, -0.2], [0.9, 0.3], [-0.5, 0.9], [0.2, 1.1]])
HYPER = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)
#: Four rows: a smaller alpha keeps the enumeration's tail (K+ > 8) below 1e-3.
HYPER4 = dict(alpha=0.7, sigma_x=0.5, sigma_a=1.2)
K_MAX = {3: 12, 4: 8}
B = 0.5
RELATIVE_BALANCE = 1e-10


def tempered_posterior(X, b, hyper):
    post = tempered_class_posterior(X, b, **hyper, k_max=K_MAX[len(X)])
    assert post.tail_bound < 1e-3
    return post


def step_of(moves, X, hyper, b, rng):
    """One application of ``moves`` at inverse temperature ``b``: a kernel ``Z -> Z``."""
    checked = Hyperparameters(hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"], 1.0)
    X = np.ascontiguousarray(X, dtype=np.float64)

    def step(Z):
        Z = np.ascontiguousarray(Z, dtype=np.int8)
        for move in moves:
            Z, _ = move(X, Z, rng, checked, inverse_temperature=b)
        return Z

    return step


# --------------------------------------------------------------------------------------
# the tempered ratio, directly and by enumeration
# --------------------------------------------------------------------------------------


def test_the_tempered_ratio_scales_the_likelihoods_change_only():
    """One random proposal from the same state and seed at b = 1 and b = 0.3 (the random
    proposal does not look at b): the recorded likelihood change scales by b, the prior's
    change and the proposal ratio do not, and the log ratio is their sum."""
    Z = np.array([[1, 0], [1, 1], [0, 1]], np.int8)
    at = {b: sm.random_split_merge(X3, Z, 1.3, 0.6, 1.2, np.random.default_rng(4), 1,
                                   inverse_temperature=b)[1] for b in (1.0, 0.3)}
    assert at[1.0]["kind"].size == at[0.3]["kind"].size == 1
    cold, warm = at[1.0], at[0.3]
    assert warm["delta_log_likelihood"][0] == pytest.approx(0.3 * cold["delta_log_likelihood"][0],
                                                            rel=1e-12)
    for name in ("delta_log_prior", "log_proposal_ratio"):
        assert warm[name][0] == cold[name][0]
    assert warm["log_ratio"][0] == pytest.approx(
        warm["delta_log_likelihood"][0] + warm["delta_log_prior"][0]
        + warm["log_proposal_ratio"][0], rel=1e-12, abs=1e-12)


def test_at_inverse_temperature_one_the_moves_are_the_untempered_moves_bit_for_bit():
    X = np.random.default_rng(0).normal(size=(10, 3))
    Z = (np.random.default_rng(1).random((10, 4)) < 0.4).astype(np.int8)
    for move in (sm.random_split_merge, sm.sequential_split_merge):
        plain = move(X, Z, 1.3, 0.5, 1.0, np.random.default_rng(2), 20)
        tempered = move(X, Z, 1.3, 0.5, 1.0, np.random.default_rng(2), 20,
                        inverse_temperature=1.0)
        np.testing.assert_array_equal(plain[0], tempered[0])
        np.testing.assert_array_equal(plain[1]["log_ratio"], tempered[1]["log_ratio"])
    np.testing.assert_array_equal(
        sm.singleton_update(X, Z, 1.3, 0.5, 1.0, np.random.default_rng(3)),
        sm.singleton_update(X, Z, 1.3, 0.5, 1.0, np.random.default_rng(3), inverse_temperature=1.0))


def tempered_transitions(move, X, b, hyper, k_max, ratio_b=None):
    """``(log pi_b, T)`` of one tempered proposal, every path enumerated.

    ``pi_b`` from the tempered enumeration; each path's acceptance from
    :func:`collapsed_loglik` and :func:`log_prior` (not the move's own target), the
    likelihood's change times ``b`` (times ``ratio_b`` to plant a bug). The sequential
    paths' allocation probabilities come from the move at ``b`` (its allocation weighs the
    predictive densities by ``b``).
    """
    alpha, sigma_x, sigma_a = hyper["alpha"], hyper["sigma_x"], hyper["sigma_a"]
    post = tempered_class_posterior(X, b, **hyper, k_max=k_max)
    target = _target.LogJoint(X, alpha, sigma_x, sigma_a, 1.0, inverse_temperature=b)

    def log_tempered(Z):
        power = b if ratio_b is None else ratio_b
        return power * collapsed_loglik(X, Z, sigma_x, sigma_a) + log_prior(Z, alpha)

    log_pi, T = {}, {}
    for counts, log_weight, Z in zip(post.counts, post.log_weights, post.classes()):
        key = tuple(counts)
        log_pi[key] = log_weight
        row = T.setdefault(key, {})
        current = log_tempered(Z)
        paths = random_move_paths(Z) if move == "random" else sequential_move_paths(target, Z)
        for prob, proposal in paths:
            if proposal is None:
                continue
            log_ratio = log_tempered(proposal.Z) - current + proposal.log_proposal_ratio
            new = tuple(exact.class_counts(proposal.Z))
            row[new] = row.get(new, 0.0) + prob * math.exp(min(0.0, log_ratio))
    return log_pi, T


@pytest.mark.parametrize("move, X, hyper, k_max", [
    pytest.param("random", X3, HYPER, 4, id="random"),
    pytest.param("sequential", X3, HYPER, 4, id="sequential"),
    pytest.param("sequential", X4, HYPER4, 3, id="sequential-4rows",
                 marks=pytest.mark.slow),  # about 24 s
])
def test_tempered_moves_satisfy_detailed_balance_for_every_pair_of_classes(move, X, hyper,
                                                                           k_max):
    log_pi, T = tempered_transitions(move, X, B, hyper, k_max)
    errors, n_duplicates = balance_errors(log_pi, T)
    assert errors.size > 100 and n_duplicates > 10  # the check has something to check
    assert errors.max() < RELATIVE_BALANCE, f"worst relative imbalance {errors.max():.2e}"


@pytest.mark.parametrize("move", ["random", "sequential"])
def test_the_balance_check_catches_a_ratio_left_untempered(move):
    """Planted bug: acceptance with the likelihood's whole change (b = 1 in the ratio)
    while the target is tempered; the imbalance is of order one, not 1e-10."""
    log_pi, T = tempered_transitions(move, X3, B, HYPER, 3, ratio_b=1.0)
    errors, _ = balance_errors(log_pi, T)
    assert errors.max() > 1e-2


# --------------------------------------------------------------------------------------
# chains of tempered moves against the tempered enumeration
# --------------------------------------------------------------------------------------


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.slow  # 10-20 s each on a busy 2-core machine
@pytest.mark.parametrize("moves, X, hyper, seed", [
    pytest.param([chains.SingletonUpdate(), chains.RandomSplitMerge(n_proposals=1)], X3, HYPER,
                 4901, id="singletons+random"),
    pytest.param([chains.SingletonUpdate(), chains.SequentialSplitMerge(n_proposals=1)], X3,
                 HYPER, 4902, id="singletons+sequential"),
    pytest.param([chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=1)], X4, HYPER4,
                 4903, id="gibbs+sequential-4rows"),
])
def test_tempered_moves_leave_the_tempered_posterior_invariant(moves, X, hyper, seed):
    post = tempered_posterior(X, B, hyper)
    assert_leaves_posterior_invariant(step_of(moves, X, hyper, B, stat_rng(seed)), X, **hyper,
                                      n_steps=30_000, posterior=post,
                                      what=f"{moves} at b = {B}")


class _UntemperedRandomSplitMerge(chains.RandomSplitMerge):
    """Planted bug: the Metropolis-Hastings ratio at b = 1 whatever the inverse temperature."""

    def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
        return super().__call__(X, Z, rng, hyper)


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.slow  # about 9 s on a busy 2-core machine
def test_the_chain_check_catches_a_split_merge_ratio_left_untempered():
    """Total variation 0.17 between the posteriors at b = 0.5 and b = 1 on these rows: the
    mixture of a tempered singleton update with an untempered split-merge sits between
    them, far outside the binomial tails of 30,000 steps."""
    moves = [chains.SingletonUpdate(), _UntemperedRandomSplitMerge(n_proposals=1)]
    with pytest.raises(AssertionError, match="does not leave the posterior invariant"):
        assert_leaves_posterior_invariant(step_of(moves, X3, HYPER, B, stat_rng(4904)), X3,
                                          **HYPER, n_steps=30_000,
                                          posterior=tempered_posterior(X3, B, HYPER))


# --------------------------------------------------------------------------------------
# replica exchange and SMC running split-merge moves
# --------------------------------------------------------------------------------------

SPLIT_MERGE_ONLY = [chains.SingletonUpdate(), chains.RandomSplitMerge(n_proposals=1)]


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.slow  # about 23 s on a busy 2-core machine
def test_every_rung_of_a_split_merge_replica_exchange_has_its_exact_k_plus_law():
    """No Gibbs sweep at all: the replicas move by the singleton update and random
    split-merge at their rung's b. Each rung's K+ frequencies against its tempered law,
    exact binomial tails at the rung's ESS, Bonferroni over K+ bins and the 3 rungs."""
    n_rounds, burn = 20_000, 500
    run = run_tempered(X3, n_rounds + burn, stat_rng(4905), **HYPER, n_temperatures=3,
                       min_inverse_temperature=0.2, burn=burn, tune=False,
                       moves=SPLIT_MERGE_ONLY)
    k_levels = run.replica_trace["k_plus"].values[burn:]
    for level, b in enumerate(run.inverse_temperatures):
        p_k = tempered_k_plus_posterior(X3, b, **HYPER, k_max=K_MAX[3])
        own = np.flatnonzero(p_k >= 0.003)
        position = np.full(int(max(k_levels.max(), p_k.size)) + 1, own.size)
        position[own] = np.arange(own.size)
        labels = position[k_levels[:, level]]
        p = np.append(p_k[own], max(1.0 - p_k[own].sum(), 0.0))
        n_eff = chain_ess(labels, len(p))
        pvalues, _, _ = chain_frequency_pvalues(labels, p * (1 - 1e-3),
                                                p + np.append(np.zeros(own.size), 1e-3),
                                                n_eff=n_eff)
        limit = TEST_LEVEL / (len(p) * 3)
        assert (pvalues >= limit).all(), (
            f"rung {level} (b = {b:.2f}): visited "
            f"{(np.bincount(labels, minlength=len(p)) / len(labels)).round(4)}, exact "
            f"{p.round(4)} (ESS {n_eff:.0f})")
    assert np.all(run.swap_acceptance > 0.1)  # the rungs exchange states: a real ladder


N_RUNS, N_PARTICLES, N_STEPS = 200, 30, 10


@pytest.mark.statistical(rate=TEST_LEVEL)
@pytest.mark.slow  # about 21 s on a busy 2-core machine
def test_smc_with_split_merge_moves_estimates_the_evidence_and_the_k_plus_law():
    """Resampling at every step (fixed times: the estimate is unbiased). Over 200
    independent runs: the mean of Z_hat / p(X) within z standard errors of 1, and the
    ratio estimate of P(K+ = k | X) within z delta-method standard errors of the exact
    value for every k above 1%; z two-sided at TEST_LEVEL / 2 for the two checks (and
    Bonferroni over k), the standard errors from the runs' own spread (CLT)."""
    log_p = exact.log_evidence(X3, **HYPER, k_max=K_MAX[3])
    p_k = exact.k_plus_posterior(X3, **HYPER, k_max=K_MAX[3])
    rng = stat_rng(4906)
    runs = [smc.run_smc(X3, N_PARTICLES, rng, **HYPER, n_temperatures=N_STEPS,
                        ess_threshold=1.0, moves=SPLIT_MERGE_ONLY) for _ in range(N_RUNS)]
    ratio = np.exp([run.log_evidence - log_p for run in runs])
    se = ratio.std(ddof=1) / np.sqrt(N_RUNS)
    assert abs(ratio.mean() - 1.0) <= normal_two_sided_z(TEST_LEVEL / 2) * se, (
        f"mean Z_hat / p(X) = {ratio.mean():.4f} +- {se:.4f}")
    z = ratio / ratio.max()
    pmf = np.array([run.k_plus_pmf(K_MAX[3]) for run in runs])
    estimate = z @ pmf / z.sum()
    residual = z[:, None] * (pmf - estimate)
    se_k = residual.std(axis=0, ddof=1) / (np.sqrt(N_RUNS) * z.mean())
    checked = np.flatnonzero(p_k > 0.01)
    limit = normal_two_sided_z(TEST_LEVEL / 2, checked.size)
    off = np.abs(estimate[checked] - p_k[checked]) > limit * se_k[checked]
    assert not off.any(), (f"K+ = {checked[off]}: estimated {estimate[checked].round(4)}, "
                           f"exact {p_k[checked].round(4)}, se {se_k[checked].round(4)}")


def test_the_wrappers_refuse_bad_moves_by_name():
    with pytest.raises(ValueError, match=r"moves\[0\] must be one of"):
        run_tempered(X3, 5, np.random.default_rng(0), **HYPER, moves=["sideways"])
    with pytest.raises(TypeError, match="moves must be a Move"):
        smc.run_smc(X3, 5, np.random.default_rng(0), **HYPER, n_temperatures=3, moves=[])
    with pytest.raises(ValueError, match="inverse_temperature must be <= 1"):
        sm.sequential_split_merge(X3, np.ones((3, 1)), 1.3, 0.6, 1.2, np.random.default_rng(0),
                                  1, inverse_temperature=1.5)
