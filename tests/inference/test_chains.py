"""Tests of ibp_lab.inference.chains: one runner for every combination of moves.

The moves themselves are checked against exact enumeration in
``tests/inference/test_split_merge.py`` and ``tests/inference/test_gibbs.py``; here the runner is
checked to compose them faithfully (the same draws as a loop written by hand),
to record what it did (log joint of its states, per-draw CPU time, move
statistics), to refuse bad ``moves``, and, on three rows, to sample the exact
posterior with split-merge moves in the loop.
"""

import numpy as np
import pytest

from ibp_lab.inference import chains, gibbs
from ibp_lab.teaching import reports
from ibp_lab.inference import split_merge as sm
from ibp_lab.models.linear_gaussian import collapsed_loglik
from ibp_lab.models.prior import log_prior
from ibp_lab.inference.split_merge._metropolis import combine_stats
from tests.exactness import assert_leaves_posterior_invariant
from tests.seeds import stat_rng

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
#: A chain at fixed hyperparameters: one Gibbs sweep, no move on the hyperparameters.
FIXED = dict(moves=[chains.GibbsSweep()])


def data(n=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), [np.ones((n, 1)), (rng.random((n, 6)) < 0.4)]


@pytest.mark.parametrize("move_class, move_function", [
    (chains.SequentialSplitMerge, sm.sequential_split_merge),
    (chains.RandomSplitMerge, sm.random_split_merge),
])
def test_runner_draws_what_a_hand_written_loop_draws(move_class, move_function):
    X, starts = data()
    hyper = dict(alpha=1.5, sigma_x=0.5, sigma_a=1.0, beta=1.2)
    _, runs = chains.run_chains(X, 2, 10, np.random.default_rng(1), Z0=starts, **hyper,
                                moves=[chains.GibbsSweep(), move_class(n_proposals=3)])
    for child, start, run in zip(np.random.default_rng(1).spawn(2), starts, runs):
        Z = start.astype(np.int8)
        all_stats = []
        for _ in range(10):
            Z = gibbs.gibbs_sweep(X, Z, 1.5, 0.5, 1.0, child, beta=1.2)
            Z, stats = move_function(X, Z, 1.5, 0.5, 1.0, child, 3, beta=1.2)
            all_stats.append(stats)
        np.testing.assert_array_equal(run.Z, Z)
        expected = combine_stats(all_stats)
        got = run.move_stats[move_class.name]
        for name in ("proposed_splits", "accepted_splits", "proposed_merges", "accepted_merges",
                     "void"):
            assert got[name] == expected[name]
        np.testing.assert_array_equal(got["log_ratio"], expected["log_ratio"])


def test_runner_records_the_log_joint_seconds_and_acceptances_of_its_states():
    X, starts = data()
    idata, runs = chains.run_chains(
        X, 2, 15, np.random.default_rng(1), Z0=starts, alpha=1.5, sigma_x=0.5, sigma_a=1.0,
        beta=1.2, burn=5, moves=["gibbs_sweep", chains.SequentialSplitMerge(n_proposals=4)])
    assert dict(idata.posterior.sizes) == {"chain": 2, "draw": 10}
    assert dict(idata.warmup_sample_stats.sizes) == {"chain": 2, "draw": 5}
    for run in runs:
        expected = collapsed_loglik(X, run.Z, 0.5, 1.0) + log_prior(run.Z, 1.5, beta=1.2)
        assert float(run.trace.log_joint[-1]) == pytest.approx(expected, rel=1e-10)
        assert int(run.trace.k_plus[-1]) == run.Z.shape[1]
        stats = run.move_stats["sequential_split_merge"]
        assert stats["proposed_splits"] + stats["proposed_merges"] + stats["void"] == 60
        assert int(run.sample_stats.accepted_moves.sum()) == (stats["accepted_splits"]
                                                               + stats["accepted_merges"])
        assert (np.diff(run.seconds) >= 0).all() and run.seconds[-1] > 0
    summary = reports.summarize_run(runs, warmup_fraction=0.0)
    assert summary["iterations"] == 15
    assert summary["accepted moves"] == sum(int(r.sample_stats.accepted_moves.sum()) for r in runs)
    assert summary["CPU seconds"] == pytest.approx(sum(r.seconds[-1] for r in runs))
    combined = combine_stats([r.move_stats["sequential_split_merge"] for r in runs])
    parts = reports.log_ratio_parts(combined)
    for kind in ("split", "merge"):
        chosen = combined["kind"] == kind
        assert chosen.any()
        assert parts.loc["log acceptance ratio", kind] == pytest.approx(
            np.median(combined["log_ratio"][chosen]))
    _, again = chains.run_chains(
        X, 2, 15, np.random.default_rng(1), Z0=starts, alpha=1.5, sigma_x=0.5, sigma_a=1.0,
        beta=1.2, burn=5, moves=["gibbs_sweep", chains.SequentialSplitMerge(n_proposals=4)])
    assert all(a.trace.identical(b.trace) for a, b in zip(runs, again))


def test_default_moves_are_a_gibbs_sweep_then_alpha_then_sigma_a():
    X, starts = data()
    by_default = chains.run_chain(X, 8, np.random.default_rng(3), Z0=starts[1], sigma_x=0.5)
    for moves in ([chains.GibbsSweep(), chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a")],
                  ["gibbs_sweep", chains.AlphaUpdate(prior=(1.0, 1.0)),
                   chains.ScaleUpdate("sigma_a", n_steps=3)], chains.DEFAULT_MOVES):
        explicit = chains.run_chain(X, 8, np.random.default_rng(3), Z0=starts[1], sigma_x=0.5,
                                    moves=moves)
        assert by_default.trace.identical(explicit.trace)
        assert by_default.acceptance == explicit.acceptance
    assert by_default.move_stats == {}


def test_repeated_moves_get_numbered_keys():
    X, starts = data()
    run = chains.run_chain(X, 3, np.random.default_rng(3), sigma_x=0.5,
                           moves=["gibbs_sweep", "random_split_merge", "random_split_merge"])
    assert sorted(run.move_stats) == ["random_split_merge_1", "random_split_merge_2"]


@pytest.mark.parametrize("moves, error, message", [
    ([], TypeError, "moves must be a Move, a move name or a non-empty list"),
    (["sideways"], ValueError, r"moves\[0\] must be one of"),
    ([chains.GibbsSweep(), 3], TypeError, r"moves\[1\] must be a Move"),
])
def test_bad_moves_are_reported_by_name(moves, error, message):
    with pytest.raises(error, match=message):
        chains.run_chain(X3, 2, np.random.default_rng(0), moves=moves)


def test_bad_inputs_of_the_move_objects_and_reports():
    with pytest.raises(ValueError, match="n_proposals must be an integer >= 0"):
        chains.SequentialSplitMerge(n_proposals=-1)
    with pytest.raises(ValueError, match=r"n_sweeps \* \(split-merge proposals per iteration of moves\)"):
        chains.run_chain(X3, 10**4, np.random.default_rng(0),
                         moves=[chains.RandomSplitMerge(n_proposals=10**4)])
    with pytest.raises(TypeError, match="wrap one chain in a list"):
        reports.summarize_run(chains.run_chain(X3, 6, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="warmup_fraction must be in"):
        reports.summarize_run([chains.run_chain(X3, 6, np.random.default_rng(0))],
                              warmup_fraction=1.0)


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.parametrize("moves", [
    pytest.param([chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=1)],
                 id="gibbs+sequential"),
    pytest.param([chains.SingletonUpdate(), chains.RandomSplitMerge(n_proposals=1)],
                 id="singletons+random"),
])
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_run_chains_at_fixed_hyperparameters_leaves_the_exact_posterior_invariant(moves):
    """The kept states of one run_chains chain through the shared check (tests/exactness.py).

    False alarm <= TEST_LEVEL: exact binomial tails at the chain's ESS, Bonferroni
    over the class bins. The check's ``step`` replays the chain's states in order.
    """
    alpha, sigma_x, sigma_a, beta, n_steps, burn = 1.3, 0.6, 1.2, 1.0, 30_000, 100
    _, runs = chains.run_chains(X3, 1, n_steps + burn, stat_rng(23), Z0=np.ones((3, 1)),
                                alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a, beta=beta,
                                moves=moves)
    states = iter(runs[0].samples)
    assert_leaves_posterior_invariant(lambda Z: next(states), X3, alpha, sigma_x, sigma_a,
                                      beta=beta, n_steps=n_steps, burn=burn, k_max=12,
                                      what=f"run_chains with {moves}")


# --------------------------------------------------------------------------------------
# Issue 52: the pointwise log-likelihood, the scale warning and the run-away guard
# --------------------------------------------------------------------------------------


def test_pointwise_log_likelihood_is_the_collapsed_conditional_of_each_row():
    # log p(x_n | Z, X_{-n}) = log p(X | Z) - log p(X_{-n} | Z_{-n}), A integrated out
    rng = np.random.default_rng(4)
    X = rng.normal(size=(7, 3))
    Z = (rng.random((7, 4)) < 0.5).astype(np.int8)
    Z[:, 3], Z[2, 3] = 0, 1  # a singleton column: the row's own feature, 1 - q_n small
    terms = chains.pointwise_log_likelihood(X, Z, sigma_x=0.4, sigma_a=1.3)
    direct = [collapsed_loglik(X, Z, 0.4, 1.3)
              - collapsed_loglik(np.delete(X, n, 0), np.delete(Z, n, 0), 0.4, 1.3)
              for n in range(7)]
    np.testing.assert_allclose(terms, direct, rtol=1e-10, atol=1e-10)
    no_features = chains.pointwise_log_likelihood(X, np.zeros((7, 0)), sigma_x=0.4, sigma_a=1.3)
    np.testing.assert_allclose(no_features, [collapsed_loglik(X[[n]], np.zeros((1, 0)), 0.4, 1.3)
                                             for n in range(7)], rtol=1e-12)


@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # about 20 s: four chains of 2,500 sweeps and PSIS
def test_psis_loo_of_run_chains_matches_the_exact_leave_one_out_density():
    """az.loo on run_chains' log_likelihood group against log p(x_n | X_{-n}) by enumeration.

    Exact: ``log_evidence(X) - log_evidence(X_{-n})`` (the IBP is exchangeable, so the
    rows left are an IBP of N - 1 rows). PSIS estimates ``1 / p(x_n | X_{-n})`` by the
    posterior mean of ``w = 1 / p(x_n | Z, X_{-n})``; its Monte Carlo standard error is
    ``sd(w) / sqrt(ESS(w))`` (ESS by ArviZ over the four chains), and the log's error is
    that over the mean (the delta method). Tolerance: z at a two-sided 1e-3 / N
    (Bonferroni over the N rows) times that error, plus the Pareto smoothing's own change
    to the plain importance-sampling estimate, which the test measures and adds.
    """
    import arviz as az
    from scipy.special import logsumexp
    from scipy.stats import norm

    from ibp_lab.inference.exact import log_evidence

    hyper = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2, beta=1.0)
    exact = np.array([
        log_evidence(X3, 1.3, 0.6, 1.2, k_max=12)
        - log_evidence(np.delete(X3, n, 0), 1.3, 0.6, 1.2, k_max=12) for n in range(3)])
    idata, _ = chains.run_chains(X3, 4, 2_500, stat_rng(52), Z0=np.ones((3, 1)), burn=100,
                                 **FIXED, **hyper)
    loo = az.loo(idata, pointwise=True)
    terms = idata.log_likelihood["x"].values  # (chain, draw, row)
    weights = np.exp(-terms)
    ess = np.array([float(az.ess(weights[:, :, n])) for n in range(3)])
    relative_se = weights.std(axis=(0, 1)) / weights.mean(axis=(0, 1)) / np.sqrt(ess)
    plain = -(logsumexp(-terms.reshape(-1, 3), axis=0) - np.log(terms.shape[0] * terms.shape[1]))
    smoothing = np.abs(loo.loo_i.values - plain)
    tolerance = norm.isf(1e-3 / (2 * 3)) * relative_se + smoothing
    assert np.all(relative_se < 0.05)  # the check has power: errors of a few percent
    np.testing.assert_array_less(np.abs(loo.loo_i.values - exact), tolerance)
    waic = az.waic(idata)
    compared = az.compare({"a": idata, "b": idata})
    assert np.isfinite(waic.elpd_waic) and len(compared) == 2


def test_run_chain_warns_before_any_sweep_when_the_scale_is_far_off():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.warns(chains.ScaleWarning, match=r"column 1 has mean square .* standardise X"):
        chains.run_chain(X * np.array([1.0, 10.0, 1.0]), 1, np.random.default_rng(0), **FIXED,
                         sigma_x=1.0, sigma_a=1.0)
    with pytest.warns(chains.ScaleWarning, match="read X as noise"):
        chains.run_chain(X / 100.0, 1, np.random.default_rng(0), **FIXED)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # on its own scale: no warning
        chains.run_chain(X, 1, np.random.default_rng(0), **FIXED)


@pytest.mark.parametrize("loader", ["load_wine", "load_breast_cancer"])
def test_defaults_on_bundled_data_give_few_features_standardised_and_stop_at_once_raw(loader):
    import time

    import sklearn.datasets

    raw = getattr(sklearn.datasets, loader)().data
    standardised = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    run = chains.run_chain(standardised, 10, np.random.default_rng(0))
    assert 1 <= int(run.trace.k_plus[-1]) <= raw.shape[1]  # at most one per dimension
    started = time.process_time()
    with pytest.warns(chains.ScaleWarning, match="standardise X"):
        with pytest.raises(ValueError, match="the chain ran away.*standardise X"):
            chains.run_chain(raw, 20, np.random.default_rng(0))
    assert time.process_time() - started < 30  # stopped after one sweep, not minutes


# --------------------------------------------------------------------------------------
# Issue 54: the recorded log prior through the compiled class prior
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("discount", [0.0, 0.3, 0.8])
@pytest.mark.parametrize("beta", [0.4, 1.0, 2.3])
def test_compiled_class_prior_equals_log_prior(beta, discount):
    """The kernel's class prior with its constants against models.prior.log_prior, to 1e-10,
    on random matrices: no features, one row, duplicated columns, every column owned by all."""
    from ibp_lab import _kernel

    rng = np.random.default_rng(54)
    matrices = [np.zeros((n, 0), np.int8) for n in (1, 3, 7)]
    matrices += [np.ones((1, k), np.int8) for k in (1, 4)]
    for _ in range(40):
        n, k = int(rng.integers(1, 9)), int(rng.integers(1, 12))
        Z = (rng.random((n, k)) < rng.uniform(0.2, 0.9)).astype(np.int8)
        Z = np.hstack([Z, Z[:, : int(rng.integers(0, 3))]])  # identical columns: 1 / K_h!
        matrices.append(Z[:, Z.any(axis=0)])
    for Z in matrices:
        alpha = float(rng.uniform(0.1, 5.0))
        constants = _kernel.class_prior_constants(Z.shape[0], alpha, beta, discount)
        compiled = _kernel.class_log_prior(np.ascontiguousarray(Z), *constants, beta, discount)
        expected = log_prior(Z, alpha, beta=beta, discount=discount)
        assert compiled == pytest.approx(expected, rel=1e-10, abs=1e-10), Z


LEARN = [chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a", "sigma_x")]


@pytest.mark.parametrize("options", [
    dict(moves=["gibbs_sweep", *LEARN]),
    dict(discount=0.3, moves=["gibbs_sweep", *LEARN]),
    dict(discount=0.2, moves=["gibbs_sweep", chains.AlphaUpdate(), chains.DiscountUpdate(),
                              chains.ScaleUpdate("sigma_a", "sigma_x")]),
    dict(moves=["gibbs_sweep", "random_split_merge", *LEARN], beta=1.7),
])
def test_recorded_log_joint_is_log_likelihood_plus_log_prior_at_every_draw(options):
    """Every draw's log_joint against collapsed_loglik + log_prior of its kept state."""
    X, starts = data(n=10, seed=3)
    run = chains.run_chain(X, 12, np.random.default_rng(5), Z0=starts[1], sigma_x=0.5,
                           **options)
    trace = run.trace
    discounts = trace["discount"].values if "discount" in trace else np.zeros(12)
    for draw, Z in zip(run.sample_draws, run.samples):
        t = trace.sel(draw=draw)
        log_lik = collapsed_loglik(X, Z, float(t.sigma_x), float(t.sigma_a))
        prior = log_prior(Z, float(t.alpha), beta=options.get("beta", 1.0),
                          discount=float(discounts[draw]))
        assert float(t.log_likelihood) == pytest.approx(log_lik, rel=1e-10)
        assert float(t.log_joint) == pytest.approx(log_lik + prior, rel=1e-10)


# --------------------------------------------------------------------------------------
# Issue 49: the hyperparameter updates as moves (their draws: test_saved_draws.py)
# --------------------------------------------------------------------------------------


def test_hyperparameter_moves_follow_their_order_in_the_list():
    """The moves apply in the order listed: sigma_a's and sigma_x's steps interleaved by one
    ScaleUpdate, one after the other by two (another kernel, other draws), and a
    hyperparameter move before the sweep is legal too."""
    X, starts = data(seed=4)
    runs = {name: chains.run_chain(X, 12, np.random.default_rng(8), Z0=starts[1], sigma_x=0.5,
                                   burn=4, moves=moves)
            for name, moves in {
                "one": ["gibbs_sweep", chains.ScaleUpdate("sigma_a", "sigma_x", n_steps=2)],
                "two": ["gibbs_sweep", chains.ScaleUpdate("sigma_a", n_steps=2),
                        chains.ScaleUpdate("sigma_x", n_steps=2)],
                "first": [chains.AlphaUpdate(), "gibbs_sweep"]}.items()}
    assert not np.array_equal(runs["one"].trace["sigma_x"], runs["two"].trace["sigma_x"])
    for run in runs.values():
        for draw, Z in zip(run.sample_draws, run.samples):
            t = run.trace.sel(draw=draw)
            assert float(t.log_likelihood) == pytest.approx(
                collapsed_loglik(X, Z, float(t.sigma_x), float(t.sigma_a)), rel=1e-10)
    assert sorted(runs["two"].acceptance) == ["sigma_a", "sigma_a_step", "sigma_x",
                                              "sigma_x_step"]
    assert runs["first"].acceptance == {} and runs["first"].sigma_a == 1.0


def test_a_move_list_shared_by_chains_gives_each_chain_fresh_step_sizes():
    """run_chains passes one list to every chain: each adapts its own step sizes, as if it
    had been given new objects, and the objects keep no state of any chain."""
    X, starts = data(seed=5)
    shared = [chains.GibbsSweep(), chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a", "sigma_x")]
    before = {name: dict(vars(move)) for name, move in zip("gas", shared)}
    _, runs = chains.run_chains(X, 3, 15, np.random.default_rng(6), sigma_x=0.5, burn=8,
                                moves=shared)
    assert {name: dict(vars(move)) for name, move in zip("gas", shared)} == before
    for child, run in zip(np.random.default_rng(6).spawn(3), runs):
        alone = chains.run_chain(X, 15, child, sigma_x=0.5, burn=8, moves=[
            chains.GibbsSweep(), chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a", "sigma_x")])
        assert alone.trace.identical(run.trace)
        assert alone.acceptance == run.acceptance
    assert runs[0].acceptance != runs[1].acceptance  # each chain's own adaptation


@pytest.mark.parametrize("make, error, message", [
    (lambda: chains.AlphaUpdate(prior=(1.0,)), ValueError, r"^prior must be a \(shape, rate\) pair"),
    (lambda: chains.AlphaUpdate(prior=(1.0, -1.0)), ValueError, r"^prior\[1\] \(rate\) must be > 0"),
    (lambda: chains.AlphaUpdate(prior="ab"), ValueError, "^prior must be a"),
    (lambda: chains.DiscountUpdate(prior=(0.0, 1.0)), ValueError, r"^prior\[0\] must be > 0"),
    (lambda: chains.DiscountUpdate(prior=None), ValueError, "^prior must be a pair"),
    (lambda: chains.ScaleUpdate(), ValueError, "^names must hold 'sigma_a', 'sigma_x' or both"),
    (lambda: chains.ScaleUpdate("sigma_b"), ValueError,
     r"^names\[0\] must be 'sigma_a' or 'sigma_x', got 'sigma_b'"),
    (lambda: chains.ScaleUpdate("sigma_a", 3), ValueError, r"^names\[1\] must be"),
    (lambda: chains.ScaleUpdate("sigma_a", "sigma_a"), ValueError, "^names must not repeat"),
    (lambda: chains.ScaleUpdate("sigma_a", n_steps=0), ValueError, "^n_steps must be an integer >= 1"),
    (lambda: chains.ScaleUpdate("sigma_a", n_steps=10_001), ValueError,
     "^n_steps must be an integer <= 10000"),
    (lambda: chains.ScaleUpdate("sigma_a", n_steps=2.5), TypeError, "^n_steps must be an integer"),
])
def test_hyperparameter_moves_refuse_bad_settings_when_made(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("moves, message", [
    ([chains.GibbsSweep(), chains.AlphaUpdate(), chains.AlphaUpdate(prior=(2.0, 1.0))],
     r"^moves update alpha twice \(AlphaUpdate\(prior=\(1.0, 1.0\)\) and AlphaUpdate"),
    ([chains.GibbsSweep(), chains.ScaleUpdate("sigma_a"), chains.ScaleUpdate("sigma_x", "sigma_a")],
     "^moves update sigma_a twice"),
    ([chains.GibbsSweep(), chains.DiscountUpdate(), chains.DiscountUpdate()],
     "^moves update discount twice"),
    ([chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a")], "^moves must include a move on Z"),
    (chains.AlphaUpdate(), "^moves must include a move on Z"),
])
def test_run_chain_refuses_move_lists_that_make_no_sense_before_any_sweep(moves, message):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=message):
        chains.run_chain(X3, 5, rng, moves=moves)
    assert rng.bit_generator.state == state  # refused at the door: no draw taken


def test_the_runners_at_fixed_hyperparameters_refuse_hyperparameter_moves():
    from ibp_lab.inference import smc, tempering

    hyper = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    message = (r"^moves\[1\] is ScaleUpdate\('sigma_a', n_steps=3\), a move on the "
               r"hyperparameters: only run_chain takes those")
    moves = [chains.GibbsSweep(), chains.ScaleUpdate("sigma_a")]
    with pytest.raises(TypeError, match=message):
        tempering.run_tempered(X3, 5, np.random.default_rng(0), **hyper, n_temperatures=2,
                               moves=moves)
    with pytest.raises(TypeError, match=message):
        smc.run_smc(X3, 5, np.random.default_rng(0), **hyper, n_temperatures=3, moves=moves)
    with pytest.raises(TypeError, match=r"^moves\[0\] is AlphaUpdate"):
        smc.run_smc(X3, 5, np.random.default_rng(0), **hyper, n_temperatures=3,
                    moves=chains.AlphaUpdate())
