"""Hostile input to the inference modules: one door for the hyperparameters, and no crash,
NaN, hang or huge allocation behind it.

Each test pins a failure class found by a hostile-input campaign, with the exact inputs
that used to fail: the split-merge moves ending in numba ``ZeroDivisionError`` at settings
``gibbs_sweep`` refuses, ``run_chain`` dying when alpha underflowed under a legal prior,
complex and numeric-string arrays accepted as data, string flags taken as true, silent
NaN, and requests that allocate terabytes or run for hours inside the documented bounds.
Every refusal is checked to name the argument, and every test also checks that a valid
input next to the refused one still works, so that a function refusing everything fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaincc
from scipy.stats import binom
from seeds import stat_rng

from ibp_lab import _hyper
from ibp_lab.inference import chains, exact, gibbs, heldout, pymc_models
from ibp_lab.models import linear_gaussian
from ibp_lab.teaching import reports
from ibp_lab.evaluation import summaries
from ibp_lab.inference.chains import run_chain, run_chains
from ibp_lab.inference import split_merge as sm

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
Z3 = np.ones((3, 1))


def rng():
    return np.random.default_rng(0)


# --------------------------------------------------------------------------------------
# one rule, every door
# --------------------------------------------------------------------------------------

#: Every public function that takes the model's hyperparameters, called on X3.
ENTRY_POINTS = {
    "gibbs_sweep": lambda a, sx, sa, b, X=X3: gibbs.gibbs_sweep(X, Z3, a, sx, sa, rng(), beta=b),
    "k_plus_trace": lambda a, sx, sa, b, X=X3: gibbs.k_plus_trace(
        X, 2, rng(), alpha=a, sigma_x=sx, sigma_a=sa, beta=b),
    "run_chain": lambda a, sx, sa, b, X=X3: run_chain(
        X, 2, rng(), alpha=a, sigma_x=sx, sigma_a=sa, beta=b),
    "random_split_merge": lambda a, sx, sa, b, X=X3: sm.random_split_merge(
        X, Z3, a, sx, sa, rng(), 3, beta=b),
    "sequential_split_merge": lambda a, sx, sa, b, X=X3: sm.sequential_split_merge(
        X, Z3, a, sx, sa, rng(), 3, beta=b),
    "singleton_update": lambda a, sx, sa, b, X=X3: sm.singleton_update(
        X, Z3, a, sx, sa, rng(), beta=b),
    "run_chains with moves": lambda a, sx, sa, b, X=X3: chains.run_chains(
        X, 1, 1, rng(), Z0=Z3, alpha=a, sigma_x=sx, sigma_a=sa, beta=b,
        moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=2)]),
    "seconds_per_step": lambda a, sx, sa, b, X=X3: reports.seconds_per_step(
        X, Z3, rng(), alpha=a, sigma_x=sx, sigma_a=sa, beta=b, n_rounds=1, n_sweeps=1, n_proposals=1),
    "k_plus_posterior": lambda a, sx, sa, b, X=X3: exact.k_plus_posterior(
        X, a, sx, sa, beta=b, k_max=3),
    "class_posterior": lambda a, sx, sa, b, X=X3: exact.class_posterior(
        X, a, sx, sa, beta=b, k_max=3),
    "ibp_gibbs_heldout": lambda a, sx, sa, b, X=X3: heldout.ibp_gibbs_heldout(
        X, [(Z3, sx, sa, a)], X, [0], [1], rng(), beta=b, n_sweeps=2, burn=0),
}

GOOD = dict(a=1.3, sx=0.6, sa=1.2, b=1.0)

#: Bad settings that some doors used to let through: (change, error type, message start).
BAD_SETTINGS = [
    # sigma_x / sigma_a = 1e-4: the moves ended in numba ZeroDivisionError
    ({"sx": 1e-4, "sa": 1.0}, ValueError, "sigma_x / sigma_a must be >= 0.001"),
    ({"sa": 1e5}, ValueError, "sigma_x / sigma_a must be >= 0.001"),
    # alpha * H_3 = 9167 expected features: singleton_update asked for 2500+ features
    ({"a": 5000.0}, ValueError, "alpha = 5000 makes the prior expect"),
    ({"a": 0.0}, ValueError, "alpha must be > 0"),
    ({"a": math.nan}, ValueError, "alpha must be finite"),
    ({"a": True}, TypeError, "alpha must be a real number"),
    ({"sx": 1e-300}, ValueError, "sigma_x must be >= 1e-100"),
    ({"sx": -1.0}, ValueError, "sigma_x must be > 0"),
    ({"sa": math.inf}, ValueError, "sigma_a must be finite"),
    ({"sa": "1.2"}, TypeError, "sigma_a must be a real number"),
    ({"b": 1e7}, ValueError, "beta must be <= 1e+06"),
    ({"b": 1j}, TypeError, "beta must be a real number"),
]


@pytest.mark.parametrize("change, error, message", BAD_SETTINGS)
def test_every_entry_point_refuses_the_same_hyperparameters_with_the_same_message(
        change, error, message):
    messages = {}
    for name, call in ENTRY_POINTS.items():
        with pytest.raises(error) as info:
            call(**{**GOOD, **change})
        messages[name] = str(info.value)
    assert len(set(messages.values())) == 1, messages
    assert next(iter(messages.values())).startswith(message)


def test_every_entry_point_refuses_data_too_large_for_sigma_x_with_the_same_message():
    X = X3 * 1e130  # sum((X / 0.6)^2) is about 1e260: the quadratic forms would overflow
    messages = set()
    for name, call in ENTRY_POINTS.items():
        with pytest.raises(ValueError) as info:
            call(**GOOD, X=X)
        message = str(info.value)
        # one rule, so one message; each names its own data argument (the held-out scorer's
        # training data is X_train)
        if name == "ibp_gibbs_heldout":
            assert message.startswith("X_train is too large"), message
            message = message.replace("X_train", "X")
        messages.add(message)
    assert len(messages) == 1 and messages.pop().startswith("X is too large for sigma_x = 0.6")


def test_every_entry_point_accepts_the_limits_it_states():
    """The door's own limits are accepted everywhere: sigma_x / sigma_a = 1e-3 and alpha at
    MAX_EXPECTED_FEATURES / H_N (a door that refused everything would fail here)."""
    alpha_max = _hyper.alpha_upper(3, 1.0)
    assert alpha_max * _hyper.harmonic(3, 1.0) == pytest.approx(_hyper.MAX_EXPECTED_FEATURES)
    for setting in (GOOD, dict(GOOD, sx=1.2e-3), dict(GOOD, a=alpha_max * (1 - 1e-12))):
        for name, call in ENTRY_POINTS.items():
            if name in ("k_plus_posterior", "class_posterior") and setting["a"] > 100:
                continue  # k_max = 3 would leave almost all the mass out; still accepted below
            call(**setting)
    exact.k_plus_posterior(X3, alpha_max * (1 - 1e-12), 0.6, 1.2, k_max=3)


def test_moves_at_the_smallest_accepted_noise_ratio_have_finite_log_ratios():
    """At sigma_x / sigma_a = 1e-4 the sequential move used to raise ZeroDivisionError
    (a downdate dividing by 1 - z M^-1 z = 0); at the door's 1e-3 every term is finite."""
    X = np.random.default_rng(0).normal(size=(8, 2))
    Z = np.eye(8, dtype=np.int8)[:, :4] | np.ones((8, 1), np.int8)
    with pytest.raises(ValueError, match="sigma_x / sigma_a must be >= 0.001"):
        sm.sequential_split_merge(X, Z, 1.0, 1e-4, 1.0, rng(), 50)
    for move in (sm.sequential_split_merge, sm.random_split_merge):
        Z_new, stats = move(X, Z, 1.0, 1e-3, 1.0, rng(), 50)
        assert len(stats["log_ratio"]) > 0
        for name in ("delta_log_likelihood", "delta_log_prior", "log_proposal_ratio"):
            assert np.all(np.isfinite(stats[name])), name
        assert set(np.unique(Z_new)) <= {0, 1}


def test_run_chain_keeps_proposed_scales_inside_the_door():
    """Free scales on featureless data drift towards 0; every recorded setting is one that
    a fresh call accepts (the Metropolis steps use the door's own rule)."""
    X = np.zeros((4, 3))
    chain = run_chain(X, 300, np.random.default_rng(5), sigma_x=1.0, sigma_a=1.0, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a", "sigma_x")])
    scale = _hyper.DataScale.of(X)
    trace = chain.trace
    for sx, sa in zip(trace.sigma_x.values, trace.sigma_a.values):
        assert _hyper.scales_allowed(scale, float(sx), float(sa))
    assert np.all(np.isfinite(trace.log_joint.values))


# --------------------------------------------------------------------------------------
# crashes at valid settings: alpha under a legal prior
# --------------------------------------------------------------------------------------


def test_alpha_does_not_underflow_under_a_gamma_prior_with_a_tiny_shape():
    """AlphaUpdate(prior=(1e-100, 1)) is legal; with K+ = 0 its conjugate draw underflowed to 0
    and the next sweep died on log(0). Alpha now stays in [1e-100, MAX_EXPECTED / H]."""
    X = np.random.default_rng(0).normal(size=(5, 2))
    chain = run_chain(X, 200, np.random.default_rng(0), sigma_x=0.5, sigma_a=1.0, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(prior=(1e-100, 1.0)), chains.ScaleUpdate("sigma_a")])
    alpha = chain.trace.alpha.values
    assert (chain.trace.k_plus.values == 0).any()  # the regime where the underflow happened
    assert alpha.min() >= 1e-100 and alpha.max() <= _hyper.alpha_upper(5, 1.0)
    assert np.all(np.isfinite(chain.trace.log_joint.values))
    # the final state continues the chain through the same door
    run_chain(X, 2, np.random.default_rng(1), Z0=chain.Z, alpha=chain.alpha,
                    sigma_x=chain.sigma_x, sigma_a=chain.sigma_a)


def test_alpha_is_capped_where_the_prior_would_ask_for_too_many_features():
    """AlphaUpdate(prior=(1e6, 1)) is legal too; alpha near 1e6 / (1 + H) would make the prior
    expect ~3e5 features. The draw is truncated at MAX_EXPECTED_FEATURES / H."""
    X = np.random.default_rng(0).normal(size=(5, 2))
    chain = run_chain(X, 3, np.random.default_rng(0), sigma_x=0.5, sigma_a=1.0, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(prior=(1e6, 1.0)), chains.ScaleUpdate("sigma_a")])
    assert chain.trace.alpha.values.max() <= _hyper.alpha_upper(5, 1.0)
    assert chain.trace.k_plus.values.max() <= _hyper.MAX_FEATURES


def truncated_cdf(x, shape, rate, lower, upper):
    """CDF of Gamma(shape, rate) truncated to [lower, upper], from the upper tail Q."""
    q = lambda t: gammaincc(shape, rate * t)  # noqa: E731
    return (q(lower) - q(x)) / (q(lower) - q(upper))


@pytest.mark.parametrize("shape, rate, upper", [
    (1e-100, 1.0, 600.0), (1e-3, 2.0, 5.0), (0.5, 1.0, 1e-3), (2500.0, 1.5, 600.0),
])
def test_truncated_gamma_quantile_inverts_the_truncated_cdf(shape, rate, upper):
    """Deterministic round trip: the u-quantile's CDF is u (the tail beyond where the range
    holds mass is tested by the last case, which must return the boundary)."""
    for u in (1e-6, 0.1, 0.5, 0.9, 1 - 1e-6):
        x = chains._truncated_gamma(u, shape, rate, 1e-100, upper)
        assert 1e-100 <= x <= upper
        if shape < 1000:
            assert truncated_cdf(x, shape, rate, 1e-100, upper) == pytest.approx(u, rel=1e-6)
        else:  # Gamma(2500, 1.5) has no mass below 600 in double precision: the boundary
            assert x == upper


def test_alpha_draws_follow_the_truncated_posterior():
    """Gamma(0.05, 2) truncated to [1e-100, 5]: most plain draws underflow below 1e-100, so
    both branches of _draw_alpha are used. 20,000 independent draws; at each of three
    quantiles of the exact truncated law the count below it is Binomial(20000, q), checked
    against its exact two-sided 1e-5 tail (false alarm <= 3e-5 by Bonferroni)."""
    shape, rate, upper = 0.05, 2.0, 5.0
    generator = stat_rng(2024)
    draws = np.array([chains._draw_alpha(generator, shape, rate, upper) for _ in range(20_000)])
    assert draws.min() >= 1e-100 and draws.max() <= upper
    for q in (0.1, 0.5, 0.9):
        x = chains._truncated_gamma(q, shape, rate, 1e-100, upper)
        count = int(np.count_nonzero(draws <= x))
        low, high = binom.ppf(0.5e-5, draws.size, q), binom.isf(0.5e-5, draws.size, q)
        assert low <= count <= high, (q, count, low, high)


# --------------------------------------------------------------------------------------
# nonsense accepted: string flags, complex and string arrays
# --------------------------------------------------------------------------------------

FLAG_CALLS = [
    ("progress", lambda v: run_chain(X3, 2, rng(), progress=v)),
    ("pointwise", lambda v: run_chain(X3, 2, rng(), pointwise=v)),
    ("return_types", lambda v: gibbs.k_plus_trace(X3, 2, rng(), alpha=1.0, sigma_x=0.5,
                                                  sigma_a=1.0, return_types=v)),
    ("return_tail", lambda v: exact.k_plus_posterior(X3, 1.0, 0.5, 1.0, k_max=3,
                                                     return_tail=v)),
    # sample_posterior checks its flags before it looks at the model
    ("keep_warmup", lambda v: pymc_models.sample_posterior(None, X3, rng(), keep_warmup=v)),
    ("quiet", lambda v: pymc_models.sample_posterior(None, X3, rng(), quiet=v)),
]


@pytest.mark.parametrize("name, call", FLAG_CALLS, ids=[name for name, _ in FLAG_CALLS])
def test_string_and_number_flags_are_refused(name, call):
    for value in ("no", "False", 0, 1.0, None):
        with pytest.raises(TypeError, match=f"{name} must be True or False"):
            call(value)


def test_numpy_bool_flags_are_accepted():
    p, tail = exact.k_plus_posterior(X3, 1.0, 0.5, 1.0, k_max=3, return_tail=np.bool_(True))
    assert p.shape == (4,) and 0 <= tail <= 1
    chain = run_chain(X3, 2, rng(), progress=np.False_, pointwise=np.True_)
    assert chain.pointwise_log_likelihood.shape == (2, 3)


ARRAY_CALLS = [
    # (argument, call, a valid value of it)
    ("mean", lambda a: heldout.gaussian_conditional(a, np.eye(2), X3, [0], [1]), [0.0, 0.0]),
    ("cov", lambda a: heldout.gaussian_conditional([0.0, 0.0], a, X3, [0], [1]), np.eye(2)),
    ("probabilities", lambda a: heldout.finite_feature_heldout(
        X3, [0], [1], a, np.ones((1, 1, 2)), sigma_x=0.5), [[0.5]]),
    ("features", lambda a: heldout.finite_feature_heldout(X3, [0], [1], [[0.5]], a, sigma_x=0.5),
     np.ones((1, 1, 2))),
    ("sigma_x", lambda a: heldout.finite_feature_heldout(
        X3, [0], [1], [[0.5]], np.ones((1, 1, 2)), sigma_x=a), [0.5]),
    ("X_hidden", lambda a: heldout.HeldoutResult(np.zeros(3), np.zeros((3, 1))).rmse(a),
     np.ones((3, 1))),
    ("A", lambda a: summaries.feature_correlations(a, X3), X3),
    ("p", lambda a: summaries.total_variation(a, [1.0]), [0.5, 0.5]),
    ("values", lambda a: summaries.indicator_ess(a, [1.0]), np.arange(12) % 3),
    ("pi", lambda a: pymc_models.row_log_likelihood(X3, a, [[1.0, 1.0]], 0.5), [0.5]),
    ("A", lambda a: pymc_models.row_log_likelihood(X3, [0.5], a, 0.5), [[1.0, 1.0]]),
    ("v", lambda a: pymc_models.numpy_logp(
        X3, {"alpha": 1.0, "v": a, "sigma_A": 1.0, "A": [[0.0, 0.0]]}, sigma_x=1.0), [0.5]),
]


@pytest.mark.parametrize("name, call, valid", ARRAY_CALLS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(ARRAY_CALLS)])
def test_complex_and_string_arrays_are_refused_and_real_ones_accepted(name, call, valid):
    """NumPy turns 0.5+0j into 0.5 (dropping the imaginary part with a warning) and "0.5"
    into 0.5: both used to be scored as data. The real array itself must work."""
    valid = np.asarray(valid, dtype=float)
    for junk in (valid + 0j, valid.astype(str), valid.astype(object)):
        with pytest.raises(TypeError, match=f"{name} must hold real numbers"):
            call(junk)
    call(valid)


# --------------------------------------------------------------------------------------
# silent NaN and crashes behind the checks
# --------------------------------------------------------------------------------------


def test_pattern_posteriors_refuse_a_noise_level_that_overflows_every_pattern():
    """x = 1e60 and sigma_x = 1e-100 each passed their checks, then every pattern's log
    density was -inf (x^2 / sigma_x^2 overflows) and the normalised posteriors NaN."""
    with pytest.raises(ValueError, match="too large for sigma_x = 1e-100"):
        pymc_models.pattern_log_posteriors([[1e60, 1e60]], [0.5], [[1.0, 1.0]], 1e-100)
    lp = pymc_models.pattern_log_posteriors([[1.0, 1.0]], [0.5], [[1.0, 1.0]], 1e-3)
    assert np.all(np.isfinite(np.logaddexp.reduce(lp, axis=1)))
    assert np.exp(lp).sum() == pytest.approx(1.0)


def test_finite_feature_heldout_refuses_tiny_or_bool_noise_instead_of_nan():
    """sigma_x = 1e-300 squared is 0: the log densities were NaN."""
    call = lambda sx: heldout.finite_feature_heldout(  # noqa: E731
        X3, [0], [1], [[0.5]], np.ones((1, 1, 2)), sigma_x=sx)
    with pytest.raises(ValueError, match="sigma_x must be >= 1e-100"):
        call(1e-300)
    with pytest.raises(TypeError, match="sigma_x must be a number"):
        call(True)
    with pytest.raises(ValueError, match="sigma_x must be one number or one per draw"):
        call([0.5, 0.5])
    assert np.all(np.isfinite(call(0.5).log_density))


def test_finite_feature_heldout_in_blocks_equals_one_block(monkeypatch):
    """The digits are scored in blocks to bound memory (K = 14 asked for n x 16384 x D
    residuals at once); the blocks must not change the answer."""
    generator = np.random.default_rng(3)
    X = generator.normal(size=(7, 4))
    args = ([0, 1], [2, 3], generator.random((2, 5)), generator.normal(size=(2, 5, 4)))
    whole = heldout.finite_feature_heldout(X, *args, sigma_x=0.7)
    monkeypatch.setattr(heldout, "_BLOCK_ENTRIES", 1)  # one digit per block
    blocks = heldout.finite_feature_heldout(X, *args, sigma_x=0.7)
    np.testing.assert_allclose(blocks.log_density, whole.log_density, rtol=1e-12)
    np.testing.assert_allclose(blocks.mean, whole.mean, rtol=1e-12)


def test_gaussian_baselines_take_index_lists_and_refuse_a_singular_fit():
    """FullGaussian.heldout with lists of indices raised AttributeError ('list' has no
    'size'); ridge = 0 with a constant pixel gave LinAlgError only when scoring."""
    X = np.random.default_rng(0).normal(size=(50, 3))
    result = heldout.FullGaussian().fit(X).heldout(X[:4], [0, 1], [2])
    assert np.all(np.isfinite(result.log_density))
    assert np.all(np.isfinite(heldout.PPCA(1).fit(X).heldout(X[:4], [0], [1, 2]).log_density))
    X[:, 2] = 1.0
    with pytest.raises(ValueError, match="ridge = 0"):
        heldout.FullGaussian(ridge=0.0).fit(X)
    with pytest.raises(ValueError, match="observed must not repeat"):
        heldout.FullGaussian().fit(X).heldout(X[:4], [0, 0], [2])


def test_class_ownership_refuses_float_labels_that_would_make_empty_classes():
    Z = np.array([[1, 0], [1, 1], [0, 1]])
    with pytest.raises(TypeError, match="labels must be integers or strings"):
        summaries.class_ownership(Z, [0.0, np.nan, 1.0])  # NaN made a class with no rows
    np.testing.assert_allclose(summaries.class_ownership(Z, ["a", "a", "b"]),
                               [[1.0, 0.0], [0.5, 1.0]])


def test_log_ratio_parts_and_summaries_check_what_they_read():
    _, stats = sm.random_split_merge(X3, Z3, 1.0, 0.5, 1.0, rng(), 20)
    broken = dict(stats, log_ratio=stats["log_ratio"][:-1])  # used to raise IndexError
    with pytest.raises(ValueError, match="stats\\['log_ratio'\\] must have one entry"):
        reports.log_ratio_parts(broken)
    assert reports.log_ratio_parts(stats).shape == (4, 2)
    _, run = chains.run_chains(X3, 2, 6, rng(), Z0=Z3, alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                               moves=["gibbs_sweep", chains.SequentialSplitMerge(n_proposals=1)])
    with pytest.raises(TypeError, match="warmup_fraction must be a real number"):
        reports.summarize_run(run, warmup_fraction=False)
    with pytest.raises(ValueError, match="at least 4 draws per chain"):
        reports.summarize_run(run, warmup_fraction=0.5)  # 3 draws: R-hat would be NaN
    assert reports.summarize_run(run, warmup_fraction=0.0)["iterations"] == 6
    chain = run_chain(X3, 6, rng())
    with pytest.raises(TypeError, match="labels must be a list of strings"):
        summaries.chain_summaries([chain], labels="a")


# --------------------------------------------------------------------------------------
# hangs and huge allocations inside the documented bounds
# --------------------------------------------------------------------------------------

HUGE_CALLS = [
    # (call, message): each used to allocate terabytes, or run for hours, before failing
    (lambda: gibbs.k_plus_trace(X3, 10**12, rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0),
     "n_sweeps must be an integer <= 100000000"),
    (lambda: gibbs.k_plus_trace(X3, 10**8, rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                                return_types=True), "return_types records 2\\^N - 1 = 7"),
    (lambda: run_chains(X3, 10**9, 2, rng()), "n_chains must be an integer <= 1000"),
    (lambda: gibbs.gibbs_sweep(X3, np.eye(3, 3000, dtype=np.int8) | 1, 1.0, 0.5, 1.0, rng()),
     "Z must have at most MAX_FEATURES = 2500"),
    (lambda: linear_gaussian.collapsed_loglik(X3[:1], np.zeros((1, 10**5)), 0.5, 1.0),
     "Z must have at most MAX_FEATURES = 2500"),
    (lambda: linear_gaussian.simulate(10**6, rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                                      d=10**6), "n \\* d must be <= 1e\\+08"),
    (lambda: sm.random_split_merge(X3, Z3, 1.0, 0.5, 1.0, rng(), 10**12),
     "n_proposals must be an integer <= 10000000"),
    (lambda: chains.run_chain(X3, 10**4, rng(), moves=[chains.RandomSplitMerge(n_proposals=10**4)]),
     "n_sweeps \\* \\(split-merge proposals per iteration of moves\\) must be <= 1e\\+07"),
    (lambda: reports.seconds_per_step(X3, Z3, rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                                      n_sweeps=10**12),
     "n_sweeps must be an integer <= 100000"),
    (lambda: heldout.ibp_gibbs_heldout(X3, [(Z3, 0.5, 1.0, 1.0)], X3, [0], [1], rng(),
                                       max_new=10**12), "max_new must be an integer <= 2500"),
    (lambda: heldout.ibp_gibbs_heldout(X3, [(Z3, 0.5, 1.0, 1.0)] * 1000, X3, [0], [1], rng(),
                                       n_sweeps=10**5, burn=0), "draws x kept sweeps x digits"),
    (lambda: heldout.finite_feature_heldout(np.zeros((10**4, 2)), [0], [1], np.full((200, 14), 0.5),
                                            np.zeros((200, 14, 2)), sigma_x=0.5), "draws x digits x 2\\^K"),
    (lambda: summaries.k_plus_frequencies([0, 1], 10**12), "k_max must be an integer <= 1000000"),
    (lambda: summaries.co_ownership([np.zeros((10**5, 0))]), "at most 10000 rows"),
    (lambda: summaries.total_variation_noise(np.full(1000, 1e-3), 10, rng(), n_rep=10**6),
     "n_rep \\* len\\(p\\) must be <= 1e\\+08"),
    (lambda: summaries.match_features(X3, X3).matched_to(10**12),
     "n_ref must be an integer <= 1000000"),
    (lambda: pymc_models.sample_posterior(None, X3, rng(), target_accept=1.0),
     "target_accept must be in \\(0, 1\\)"),
    (lambda: pymc_models.sample_posterior(None, X3, rng(), chains=10**6), "chains must be"),
]


@pytest.mark.parametrize("call, message", HUGE_CALLS)
def test_work_and_memory_are_bounded_up_front(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bounded_calls_still_run_just_inside_their_bounds():
    """The bounds are not a refusal of everything: just inside them the calls work."""
    assert summaries.k_plus_frequencies([0, 1], 10**6).size == 10**6 + 1
    assert summaries.co_ownership([np.zeros((2000, 0))]).shape == (2000, 2000)
    k, types = gibbs.k_plus_trace(X3, 1000, rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                                  return_types=True)
    assert types.shape == (1000, 7) and np.array_equal(types.sum(axis=1), k)
    Z = np.eye(3, 2500, dtype=np.int8)
    Z[:, :3] = 1
    assert np.isfinite(linear_gaussian.collapsed_loglik(X3, Z[:, :3], 0.5, 1.0))
