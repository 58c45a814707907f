"""The explorers' computations (ibp_lab.teaching.explorers) against direct computations.

Each explorer's result is what the package's own functions give for the same setting
(same seed, same order of draws), and its statistics agree with the laws the chapters
state, within Monte Carlo error.
"""

from __future__ import annotations

import numpy as np
import pytest

from ibp_lab.teaching import explorers
from ibp_lab.models import prior, recursive
from seeds import stat_seed


def test_buffet_repeats_the_prior_samplers_draws_in_order():
    draws = explorers.buffet(alpha=2.5, beta=0.7, n=9, n_draws=40, seed=11)
    rng = np.random.default_rng(11)
    Z = prior.sample_ibp(2.5, 9, rng, beta=0.7)
    k_plus, per_row = prior.simulate_feature_counts(2.5, 9, 40, rng, beta=0.7)
    np.testing.assert_array_equal(draws.Z, Z)
    np.testing.assert_array_equal(draws.k_plus, k_plus)
    np.testing.assert_array_equal(draws.dishes_per_customer, per_row)
    assert draws.Z.dtype == np.int8 and (draws.Z.sum(axis=0) > 0).all()  # no empty column
    assert draws.expected_k_plus == prior.expected_num_features(2.5, 9, beta=0.7)


@pytest.mark.parametrize("alpha, beta", [(2.0, 1.0), (4.0, 0.3), (1.0, 5.0)])
def test_buffet_counts_follow_their_laws(alpha, beta):
    n, n_draws = 20, 4000
    draws = explorers.buffet(alpha=alpha, beta=beta, n=n, n_draws=n_draws, seed=stat_seed(3))
    # K+ is Poisson(E[K+]) and the draws are independent: the standard error of the
    # mean is sqrt(E[K+] / n_draws); 4 of them leave a false alarm rate below 1e-4.
    mean = prior.expected_num_features(alpha, n, beta=beta)
    assert abs(draws.k_plus.mean() - mean) < 4 * np.sqrt(mean / n_draws)
    # Each customer takes Poisson(alpha) dishes, but the customers of one buffet are
    # dependent: the standard error comes from the per-buffet means, which are independent.
    per_buffet = draws.dishes_per_customer.mean(axis=1)
    se = per_buffet.std(ddof=1) / np.sqrt(n_draws)
    assert abs(per_buffet.mean() - alpha) < 4 * se


def test_marginals_table_is_the_recursions_table():
    result = explorers.marginals_table(alpha=3.0, beta=2.0, n=12, k_max=15)
    np.testing.assert_array_equal(result.table, recursive.marginals(3.0, 2.0, 12, 15))
    # E[number of dishes after n customers] = E[K+] of the two-parameter prior
    expected = [prior.expected_num_features(3.0, i, beta=2.0) for i in range(1, 13)]
    np.testing.assert_allclose(result.expected_dishes, expected, rtol=1e-12)
    default = explorers.marginals_table(alpha=3.0, beta=2.0, n=12)
    assert default.k_max == recursive.columns_needed(3.0, 2.0, 12, tail=1e-3)


def test_recursion_step_splits_the_next_row_of_marginals():
    alpha, beta, n, k_max = 3.0, 2.0, 6, 14
    step = explorers.recursion_step(alpha=alpha, beta=beta, n=n, k_max=k_max)
    table = recursive.marginals(alpha, beta, n, k_max)
    np.testing.assert_allclose(step.running_sum, table[:-1].sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(step.existing + step.created, table[-1], rtol=1e-10, atol=1e-15)
    assert step.rate_before == pytest.approx(prior.expected_num_features(alpha, n - 1, beta=beta))
    assert step.rate_after == pytest.approx(prior.expected_num_features(alpha, n, beta=beta))
    # the two laws are Poisson pmfs on 0..k_max: their means, over the whole support, are the rates
    for law, rate in ((step.law_before, step.rate_before), (step.law_after, step.rate_after)):
        assert law.sum() <= 1.0 + 1e-12
        assert law[0] == pytest.approx(np.exp(-rate))


def test_sigma_alpha_chain_is_the_chain_runners_chain():
    from ibp_lab.inference.chains import GibbsSweep, ScaleUpdate, run_chain
    from ibp_lab.datasets import load_digit_sets
    from ibp_lab.models.linear_gaussian import feature_posterior

    run = explorers.sigma_alpha_chain(sigma_x=0.4, alpha=1.5, n_sweeps=3, seed=7)
    X = load_digit_sets().train
    chain = run_chain(X, 3, np.random.default_rng(7), sigma_x=0.4, sigma_a=0.3, alpha=1.5,
                      moves=[GibbsSweep(), ScaleUpdate("sigma_a")])
    np.testing.assert_array_equal(run.k_plus, chain.trace.k_plus.values)
    owners = chain.Z.sum(axis=0)
    order = np.argsort(-owners, kind="stable")
    images, _ = feature_posterior(X, chain.Z, 0.4, chain.sigma_a)
    np.testing.assert_array_equal(run.owners, owners[order])
    np.testing.assert_allclose(run.features, images[order], rtol=1e-12)
    assert run.prior_mean_k_plus == pytest.approx(prior.expected_num_features(1.5, X.shape[0]))
    # memoised per setting, and shared safely: the arrays are read-only
    assert explorers.sigma_alpha_chain(sigma_x=0.4, alpha=1.5, n_sweeps=3, seed=7) is run
    with pytest.raises(ValueError, match="read-only"):
        run.features[0, 0] = 1.0


def test_results_are_frozen():
    draws = explorers.buffet(alpha=1.0, beta=1.0, n=3, n_draws=2)
    with pytest.raises(AttributeError):
        draws.alpha = 2.0
    with pytest.raises(ValueError, match="read-only"):
        draws.k_plus[0] = 99


@pytest.mark.parametrize("call, error, match", [
    (lambda: explorers.buffet(alpha=-1.0, beta=1.0), ValueError, r"^alpha must be > 0"),
    (lambda: explorers.buffet(alpha=1.0, beta=1.0, n=10**4, n_draws=10**3), ValueError, r"n x n_draws"),
    (lambda: explorers.buffet(alpha=1.0, beta=1.0, seed=-1), ValueError, r"^seed must be"),
    (lambda: explorers.buffet(2.0, 1.0), TypeError, r"positional"),  # hyperparameters are keyword-only
    (lambda: explorers.recursion_step(alpha=3.0, beta=2.0, n=1), ValueError, r"^n must be an integer >= 2"),
    (lambda: explorers.marginals_table(alpha=3.0, beta=0.0), ValueError, r"^beta must be > 0"),
    (lambda: explorers.marginals_table(alpha=3.0, beta=1.0, n=10**6, k_max=10**6), ValueError, r"n x k_max"),
    (lambda: explorers.sigma_alpha_chain(sigma_x="0.3", alpha=1.0), TypeError, r"^sigma_x must be a real"),
    (lambda: explorers.sigma_alpha_chain(sigma_x=0.3, alpha=1.0, n_sweeps=0), ValueError, r"^n_sweeps must be"),
])
def test_explorers_refuse_bad_settings_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_figures_refuse_anything_but_their_result():
    from ibp_lab.teaching.plotting import buffet_explorer_figure
    from ibp_lab.teaching.plotting.recursive import marginals_figure

    step = explorers.recursion_step(alpha=3.0, beta=2.0, n=4)
    with pytest.raises(TypeError, match=r"^draws must be a BuffetDraws \(from ibp_lab.teaching.explorers.buffet"):
        buffet_explorer_figure(2.0)
    with pytest.raises(TypeError, match=r"^result must be a MarginalsTable, |^result must be a MarginalsTable "):
        marginals_figure(step)


def test_a_quick_frame_is_a_short_chain_from_the_nearest_run_and_says_so():
    """Under QUICK_FRAMES, a setting not run yet is answered by WARM_SWEEPS sweeps started
    from the last draw of the nearest run (sigma_x first); it is not memoised, and an
    exact run already made is answered exactly."""
    from ibp_lab.inference.chains import GibbsSweep, ScaleUpdate, run_chain
    from ibp_lab.datasets import load_digit_sets

    near = explorers.sigma_alpha_chain(sigma_x=0.5, alpha=2.0, n_sweeps=20, seed=3)
    far = explorers.sigma_alpha_chain(sigma_x=0.9, alpha=2.5, n_sweeps=20, seed=3)
    token = explorers.QUICK_FRAMES.set([])
    try:
        quick = explorers.sigma_alpha_chain(sigma_x=0.45, alpha=4.0, n_sweeps=20, seed=3)
        notes = list(explorers.QUICK_FRAMES.get())
        again = explorers.sigma_alpha_chain(sigma_x=0.5, alpha=2.0, n_sweeps=20, seed=3)
        assert again is near and explorers.QUICK_FRAMES.get() == notes  # exact, no note
    finally:
        explorers.QUICK_FRAMES.reset(token)
    assert far.warm_from is None and near.warm_from is None
    assert quick.warm_from == (0.5, 2.0) and quick.n_sweeps == explorers.WARM_SWEEPS
    assert notes == [f"a quick frame: {explorers.WARM_SWEEPS} sweeps started from the last "
                     "draw at sigma_x = 0.5, alpha = 2"]
    # the same chain, by hand: the near run's last draw, then WARM_SWEEPS sweeps at the setting
    X = load_digit_sets().train
    start = run_chain(X, 20, np.random.default_rng(3), sigma_x=0.5, sigma_a=0.3, alpha=2.0,
                      moves=[GibbsSweep(), ScaleUpdate("sigma_a")])
    chain = run_chain(X, explorers.WARM_SWEEPS, np.random.default_rng(3), Z0=start.Z,
                      sigma_x=0.45, sigma_a=start.sigma_a, alpha=4.0,
                      moves=[GibbsSweep(), ScaleUpdate("sigma_a")])
    np.testing.assert_array_equal(quick.k_plus, chain.trace.k_plus.values)
    # outside the live explorer's leave, the frame is the exact, memoised one
    exact = explorers.sigma_alpha_chain(sigma_x=0.45, alpha=4.0, n_sweeps=20, seed=3)
    assert exact.warm_from is None and exact.n_sweeps == 20 and exact is not quick
