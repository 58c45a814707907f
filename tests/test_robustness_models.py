"""Bad and extreme input to the model, the samplers, the enumeration and the summaries.

Property-based (hypothesis), like ``test_robustness.py``: for every public function of
``linear_gaussian``, ``gibbs``, ``exact`` and ``summaries``, arbitrary numbers, shapes
and types give either a ``ValueError``/``TypeError`` with a message, or a finite result
of the promised shape: never a NaN, an error from deep inside NumPy or numba, or a hang
(examples are bounded in size; no deadline, which flakes on a loaded machine). Below the properties,
regression tests for the cases that used to fail: one row with a tiny ``beta`` (the
``beta + N - 1`` cancellation), a tiny ``sigma_x``, a huge ``alpha``, huge data, a huge
``k_max``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibp_lab import _hyper
from ibp_lab.inference import exact, gibbs
from ibp_lab.models import linear_gaussian
from ibp_lab.evaluation import summaries
from ibp_lab.inference.chains import AlphaUpdate, GibbsSweep, ScaleUpdate, run_chain, run_chains
from robust_inputs import anything, clear_error_or, not_a_count

warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scale = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=50.0),
    st.sampled_from([0.0, -1.0, 1e-12, 1e-200, 1e-300, 1e6, 1e7]),
    st.integers(-3, 20),
)
alphas = st.one_of(scale, st.sampled_from([1e3, 1e5, 1e6]))
entries = st.one_of(
    st.floats(min_value=-5.0, max_value=5.0),
    st.sampled_from([0.0, np.nan, np.inf, -np.inf, 1e200, -1e-300]),
)


@pytest.fixture(scope="module", autouse=True)
def compiled_kernel():
    """Load the compiled sweep once, so that no example pays for it against the deadline."""
    gibbs.k_plus_trace(
        [[0.1, 0.2]], 2, np.random.default_rng(0), alpha=1.0, sigma_x=1.0, sigma_a=1.0
    )


def finite(value) -> bool:
    return bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


@st.composite
def data_and_z(draw, max_rows=5, max_dims=3, max_k=4):
    """A data matrix (sometimes with bad entries) and a Z (sometimes not binary or misshapen)."""
    n = draw(st.integers(0, max_rows))
    d = draw(st.integers(0, max_dims))
    k = draw(st.integers(0, max_k))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if draw(st.booleans()) and X.size:
        X.flat[draw(st.integers(0, X.size - 1))] = draw(entries)
    z_rows = draw(st.sampled_from([n, n, n, max(n - 1, 0), n + 1]))
    values = draw(
        st.sampled_from(
            [
                np.array([0, 1]),
                np.array([0, 1]),
                np.array([0, 1, 2]),
                np.array([0.0, 0.5, 1.0]),
                np.array([0.0, 1.0, np.nan]),
            ]
        )
    )
    Z = rng.choice(values, size=(z_rows, k))
    return X, Z


# --------------------------------------------------------------------------------------
# linear_gaussian
# --------------------------------------------------------------------------------------


@SETTINGS
@given(xz=data_and_z(), sigma_x=scale, sigma_a=scale)
def test_collapsed_loglik_is_finite_or_refuses(xz, sigma_x, sigma_a):
    X, Z = xz
    clear_error_or(
        lambda ll: isinstance(ll, float) and math.isfinite(ll),
        lambda: linear_gaussian.collapsed_loglik(X, Z, sigma_x, sigma_a),
        names=('X', 'Z', 'Z0', 'sigma_x', 'sigma_a'))


@SETTINGS
@given(xz=data_and_z(), sigma_x=scale, sigma_a=scale)
def test_feature_posterior_is_finite_or_refuses(xz, sigma_x, sigma_a):
    X, Z = xz

    def check(out):
        mean, cov = out
        assert mean.shape == (Z.shape[1], X.shape[1]) and cov.shape == (Z.shape[1],) * 2
        assert finite(mean) and finite(cov)

    clear_error_or(check, lambda: linear_gaussian.feature_posterior(X, Z, sigma_x, sigma_a),
                   names=('X', 'Z', 'Z0', 'sigma_x', 'sigma_a'))


@SETTINGS
@given(
    n=st.one_of(st.integers(-2, 30), not_a_count),
    d=st.one_of(st.integers(-2, 6), not_a_count),
    alpha=alphas,
    sigma_x=scale,
    sigma_a=scale,
    beta=scale,
)
def test_simulate_is_finite_or_refuses(n, d, alpha, sigma_x, sigma_a, beta):
    def check(out):
        X, Z, A = out
        assert X.shape == (n, d) and Z.shape[0] == n and A.shape == (Z.shape[1], d)
        assert finite(X) and finite(A)

    clear_error_or(
        check,
        lambda: linear_gaussian.simulate(
            n,
            np.random.default_rng(0),
            alpha=alpha,
            sigma_x=sigma_x,
            sigma_a=sigma_a,
            d=d,
            beta=beta,
        ), names=('n', 'n_proposals', 'd', 'alpha', 'sigma_x', 'sigma_a', 'beta'))


# --------------------------------------------------------------------------------------
# gibbs
# --------------------------------------------------------------------------------------


def valid_sweep_result(n_rows):
    def check(Z):
        assert Z.dtype == np.int8 and Z.ndim == 2 and Z.shape[0] == n_rows
        assert Z.shape[1] == 0 or Z.any(axis=0).all()

    return check


@SETTINGS
@given(xz=data_and_z(), alpha=alphas, sigma_x=scale, sigma_a=scale, beta=scale)
def test_gibbs_sweep_is_valid_or_refuses(xz, alpha, sigma_x, sigma_a, beta):
    X, Z = xz
    clear_error_or(
        valid_sweep_result(X.shape[0]),
        lambda: gibbs.gibbs_sweep(
            X, Z, alpha, sigma_x, sigma_a, np.random.default_rng(1), beta=beta
        ), names=('X', 'Z', 'Z0', 'alpha', 'sigma_x', 'sigma_a', 'beta'))


@SETTINGS
@given(
    xz=data_and_z(),
    n_sweeps=st.one_of(st.integers(-2, 30), not_a_count),
    alpha=alphas,
    sigma_x=scale,
    sigma_a=scale,
    beta=scale,
    scan_order=st.sampled_from(["random", "fixed", "other", 3]),
)
def test_k_plus_trace_is_valid_or_refuses(xz, n_sweeps, alpha, sigma_x, sigma_a, beta, scan_order):
    X, Z = xz

    def check(k):
        assert k.shape == (n_sweeps,) and np.all(k >= 0)

    clear_error_or(
        check,
        lambda: gibbs.k_plus_trace(
            X,
            n_sweeps,
            np.random.default_rng(2),
            alpha=alpha,
            sigma_x=sigma_x,
            sigma_a=sigma_a,
            beta=beta,
            Z0=Z if Z.size else None,
            scan_order=scan_order,
        ), names=('X', 'Z', 'Z0', 'n_sweeps', 'alpha', 'sigma_x', 'sigma_a', 'beta', 'scan_order'))


@SETTINGS
@given(
    xz=data_and_z(),
    n_sweeps=st.integers(-1, 12),
    burn=st.one_of(st.integers(-2, 14), not_a_count),
    thin=st.one_of(st.integers(-1, 4), not_a_count),
    alpha=alphas,
    sigma_x=scale,
    sigma_a=scale,
    update_sigma_x=st.booleans(),
    alpha_prior=st.one_of(st.tuples(scale, scale), anything),
)
def test_run_chain_traces_are_finite_or_refuse(
    xz, n_sweeps, burn, thin, alpha, sigma_x, sigma_a, update_sigma_x, alpha_prior
):
    X, _ = xz

    def check(chain):
        assert chain.trace.sizes["draw"] == n_sweeps
        for name in chain.trace.data_vars:
            assert finite(chain.trace[name].values), f"{name} is not finite"
        assert all(Z.shape[0] == X.shape[0] for Z in chain.samples)

    clear_error_or(
        check,
        lambda: run_chain(
            X,
            n_sweeps,
            np.random.default_rng(3),
            alpha=alpha,
            sigma_x=sigma_x,
            sigma_a=sigma_a,
            burn=burn,
            thin=thin,
            # alpha_prior junk is refused by AlphaUpdate's door, under the name prior
            moves=[GibbsSweep(), AlphaUpdate(prior=alpha_prior),
                   ScaleUpdate("sigma_a", "sigma_x") if update_sigma_x else ScaleUpdate("sigma_a")],
        ),
        names=('X', 'Z', 'Z0', 'n_sweeps', 'burn', 'thin', 'alpha', 'sigma_x', 'sigma_a', 'prior'))


@SETTINGS
@given(n_chains=st.one_of(st.integers(-1, 3), not_a_count), starts=st.integers(0, 4))
def test_run_chains_checks_its_starts(n_chains, starts):
    X = np.random.default_rng(0).normal(size=(4, 2))
    Z0 = [np.ones((4, 1))] * starts if starts != 4 else np.ones((4, 1))

    def check(out):
        idata, chains = out
        assert len(chains) == n_chains and idata.posterior.sizes["chain"] == n_chains

    clear_error_or(
        check,
        lambda: run_chains(
            X, n_chains, 5, np.random.default_rng(4), Z0=Z0, sigma_x=0.5, sigma_a=1.0
        ), names=('n_chains', 'Z0'))


# --------------------------------------------------------------------------------------
# exact
# --------------------------------------------------------------------------------------


@SETTINGS
@given(
    xz=data_and_z(max_rows=5),
    alpha=alphas,
    sigma_x=scale,
    sigma_a=scale,
    beta=scale,
    k_max=st.one_of(st.integers(-1, 10), st.sampled_from([10**6, 10**12]), anything),
)
def test_k_plus_posterior_is_a_distribution_or_refuses(xz, alpha, sigma_x, sigma_a, beta, k_max):
    X, _ = xz

    def check(p):
        assert p.shape == (k_max + 1,) and finite(p) and np.all(p >= 0)
        assert math.isclose(p.sum(), 1.0, rel_tol=1e-9)

    clear_error_or(
        check, lambda: exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k_max),
        names=('X', 'Z', 'Z0', 'alpha', 'sigma_x', 'sigma_a', 'beta', 'k_max'))


@SETTINGS
@given(
    n_rows=st.one_of(st.integers(-1, 6), anything),
    k_max=st.one_of(st.integers(-1, 10**15), anything),
)
def test_count_classes_is_quick_and_exact_or_refuses(n_rows, k_max):
    def check(count):
        assert isinstance(count, int) and count >= 1

    clear_error_or(check, lambda: exact.count_classes(n_rows, k_max), names=('n_rows', 'k_max'))


@SETTINGS
@given(
    Z=st.one_of(
        anything, st.sampled_from([np.ones((5, 2)), np.zeros((0, 3)), np.full((2, 2), 0.5)])
    )
)
def test_class_counts_rejects_what_it_cannot_count(Z):
    clear_error_or(lambda counts: finite(counts), lambda: exact.class_counts(Z), names=('Z',))


# --------------------------------------------------------------------------------------
# summaries
# --------------------------------------------------------------------------------------


@st.composite
def images(draw, max_k=4, dims=(3, 4)):
    k = draw(st.integers(0, max_k))
    d = draw(st.sampled_from(dims))
    A = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=(k, d))
    if draw(st.booleans()) and A.size:
        A.flat[draw(st.integers(0, A.size - 1))] = draw(entries)
    if draw(st.booleans()) and A.size:
        A[0] = draw(st.sampled_from([0.0, 1.0, 1e300]))  # a constant image
    return A


@SETTINGS
@given(draws=st.lists(st.one_of(data_and_z().map(lambda xz: xz[1]), anything), max_size=4))
def test_co_ownership_is_finite_or_refuses(draws):
    def check(M):
        assert M.ndim == 2 and M.shape[0] == M.shape[1] and finite(M) and np.all(M >= 0)

    clear_error_or(check, lambda: summaries.co_ownership(draws), names=('samples', 'draws', 'A'))


@SETTINGS
@given(A=images(), B=images())
def test_feature_matching_is_finite_or_refuses(A, B):
    def check(match):
        assert finite(match.correlation) and np.all(np.abs(match.correlation) <= 1)
        assert len(set(match.index.tolist())) == match.index.size  # one-to-one
        assert match.ref_index.size == min(A.shape[0], B.shape[0])

    clear_error_or(check, lambda: summaries.match_features(A, B), names=('A', 'A_ref', 'B'))


@SETTINGS
@given(A=images(), draws=st.lists(images(), max_size=4), threshold=st.one_of(scale, anything))
def test_reappearance_is_a_share_or_refuses(A, draws, threshold):
    def check(rates):
        assert rates.shape == (A.shape[0],) and np.all((rates >= 0) & (rates <= 1))

    clear_error_or(check, lambda: summaries.reappearance(A, draws, threshold=threshold),
                   names=('A', 'A_ref', 'samples', 'draws', 'threshold'))


@SETTINGS
@given(
    p=st.lists(st.one_of(st.floats(0, 1), entries), max_size=5),
    q=st.lists(st.floats(0, 1), max_size=5),
    n_eff=st.one_of(scale, anything),
    n_rep=st.one_of(st.integers(-1, 200), not_a_count),
)
def test_total_variation_helpers_are_finite_or_refuse(p, q, n_eff, n_rep):
    clear_error_or(lambda tv: 0 <= tv <= 1, lambda: summaries.total_variation(p, q),
                   names=('pi', 'p', 'probabilities', 'q', 'n_components', 'n_eff', 'n_rep'))
    clear_error_or(
        lambda tv: tv.shape == (n_rep,) and np.all((tv >= 0) & (tv <= 1)),
        lambda: summaries.total_variation_noise(p, n_eff, np.random.default_rng(0), n_rep=n_rep),
        names=('pi', 'p', 'probabilities', 'q', 'n_components', 'n_eff', 'n_rep'))


@SETTINGS
@given(
    k=st.one_of(st.lists(st.integers(-2, 30), max_size=6), st.lists(entries, max_size=4), anything),
    k_max=st.one_of(st.integers(-1, 40), anything),
)
def test_k_plus_frequencies_sum_to_one_or_refuse(k, k_max):
    def check(freq):
        assert freq.shape == (k_max + 1,) and math.isclose(freq.sum(), 1.0)

    clear_error_or(check, lambda: summaries.k_plus_frequencies(k, k_max),
                   names=('n_features', 'k_max', 'k_plus', 'k'))


@SETTINGS
@given(xz=data_and_z(), sigma_x=scale, sigma_a=scale)
def test_draw_feature_means_are_finite_or_refuse(xz, sigma_x, sigma_a):
    X, Z = xz

    def check(means):
        assert len(means) == 1 and means[0].shape == (Z.shape[1], X.shape[1]) and finite(means[0])

    clear_error_or(check, lambda: summaries.draw_feature_means(X, [Z], sigma_x=sigma_x, sigma_a=sigma_a),
                   names=('X', 'Z', 'Z0', 'sigma_x', 'sigma_a'))


# --------------------------------------------------------------------------------------
# regression tests: the cases that used to crash, hang or return NaN
# --------------------------------------------------------------------------------------


def test_one_row_with_a_tiny_beta_has_a_finite_new_dish_rate():
    """``(beta + N) - 1`` is 0 for N = 1, beta = 1e-20: the sampler used to divide by it."""
    X = [[0.3, 1.0]]
    Z = gibbs.gibbs_sweep(X, np.ones((1, 1)), 1.0, 0.5, 1.0, np.random.default_rng(0), beta=1e-20)
    assert Z.shape[0] == 1
    chain = run_chain(X, 20, np.random.default_rng(1), beta=1e-20)
    assert finite(chain.trace.log_joint.values)
    p = exact.k_plus_posterior(X, 1.0, 0.5, 1.0, beta=1e-20, k_max=6)
    assert finite(p) and math.isclose(p.sum(), 1.0)


def test_tiny_beta_with_a_feature_owned_by_all_other_rows():
    """log((N - 1 - m) + beta) with m = N - 1: finite, not log(0) after cancellation."""
    X = np.array([[1.0, 0.0], [1.1, 0.1], [0.9, -0.1]])
    k = gibbs.k_plus_trace(
        X,
        200,
        np.random.default_rng(2),
        alpha=1.0,
        sigma_x=0.5,
        sigma_a=1.0,
        beta=1e-20,
        Z0=np.ones((3, 1)),
    )
    assert np.all(k >= 0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: gibbs.gibbs_sweep(
            [[1.0, 2.0], [0.5, 0.1]], np.ones((2, 1)), 1.0, 1e-12, 1.0, np.random.default_rng(0)
        ),
        lambda: run_chain(
            [[1.0, 2.0], [0.5, 0.1]], 5, np.random.default_rng(0), sigma_x=1e-12
        ),
        lambda: gibbs.k_plus_trace(
            [[1.0, 2.0]], 5, np.random.default_rng(0), alpha=1.0, sigma_x=1e-12, sigma_a=1.0
        ),
    ],
)
def test_gibbs_refuses_a_noise_level_it_cannot_resolve(call):
    with pytest.raises(ValueError, match="sigma_x / sigma_a must be >= "):
        call()


def test_singular_m_is_reported_with_the_scales():
    """Two identical columns and sigma_x / sigma_a = 1e-12: M is singular in floating point."""
    X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    with pytest.raises(ValueError, match="sigma_x / sigma_a = 1e-12 is too small"):
        linear_gaussian.collapsed_loglik(X, np.ones((3, 2)), 1e-12, 1.0)
    with pytest.raises(ValueError, match="numerically singular"):
        linear_gaussian.feature_posterior(X, np.ones((3, 2)), 1e-12, 1.0)
    with pytest.raises(ValueError, match="sigma_x"):
        exact.k_plus_posterior(X, 1.0, 1e-12, 1.0, k_max=4)
    # a well-conditioned Z at the same tiny noise level is fine
    assert math.isfinite(linear_gaussian.collapsed_loglik(X, np.eye(3), 1e-12, 1.0))


def test_scales_whose_squares_underflow_are_refused():
    with pytest.raises(ValueError, match="sigma_x must be >= 1e-100"):
        linear_gaussian.collapsed_loglik([[1.0]], np.zeros((1, 0)), 1e-200, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda X: linear_gaussian.collapsed_loglik(X, np.ones((3, 1)), 1.0, 1.0),
        lambda X: gibbs.k_plus_trace(
            X, 5, np.random.default_rng(0), alpha=1.0, sigma_x=1.0, sigma_a=1.0
        ),
        lambda X: exact.k_plus_posterior(X, 1.0, 0.5, 1.0, k_max=4),
    ],
)
def test_data_that_overflow_are_refused(call):
    X = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]) * 1e160
    with pytest.raises(ValueError, match="X is too large"):
        call(X)


@pytest.mark.parametrize("alpha, n_rows", [(1e6, 1), (1e5, 3), (2000.0, 1)])
def test_gibbs_refuses_an_alpha_that_would_exhaust_memory(alpha, n_rows):
    X = np.random.default_rng(0).normal(size=(n_rows, 2))
    with pytest.raises(ValueError, match="limit of 1000"):
        gibbs.k_plus_trace(X, 2, np.random.default_rng(0), alpha=alpha, sigma_x=1.0, sigma_a=1.0)


def test_huge_k_max_is_refused_at_once():
    with pytest.raises(ValueError, match="MAX_CLASSES"):
        exact.k_plus_posterior([[1.0], [2.0]], 1.0, 0.5, 1.0, k_max=10**12)
    assert exact.count_classes(3, 8) == 6435  # the closed form agrees with the book's count
    assert exact.count_classes(2, 5) == sum(math.comb(3 + k - 1, k) for k in range(6))


def test_free_noise_on_featureless_data_stays_finite():
    """All-zero data pull sigma_x and sigma_a towards 0; proposals the sampler cannot resolve
    (sigma_x / sigma_a < MIN_NOISE_RATIO, or below MIN_SCALE) are rejected, so no hang, no NaN."""
    chain = run_chain(
        np.zeros((4, 3)),
        400,
        np.random.default_rng(5),
        sigma_x=1.0,
        sigma_a=1.0,
        moves=[GibbsSweep(), AlphaUpdate(), ScaleUpdate("sigma_a", "sigma_x")],
    )
    trace = chain.trace
    assert finite(trace.log_joint.values)
    ratio = trace.sigma_x.values / trace.sigma_a.values
    assert ratio.min() >= _hyper.MIN_NOISE_RATIO
    assert trace.sigma_x.values.min() >= linear_gaussian.MIN_SCALE


def test_small_noise_ratio_sampler_matches_enumeration():
    """At sigma_x / sigma_a = 1e-3 (the smallest accepted) the sampler is still exact.

    Removing a row that owns singletons used to divide by a number of order
    (sigma_x / sigma_a)^2 and drift into nonsense. On three rows, 100,000 sweeps:
    the total-variation distance from the exact posterior must stay below the 99.9%
    quantile of what Monte Carlo noise alone gives (about 0.007 here), while the
    broken update was 0.04 away already at sigma_x / sigma_a = 3e-3.
    """
    X = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
    p = exact.k_plus_posterior(X, 1.0, 1e-3, 1.0, k_max=12)
    k = gibbs.k_plus_trace(
        X, 100_000, np.random.default_rng(0), alpha=1.0, sigma_x=1e-3, sigma_a=1.0
    )
    freq = summaries.k_plus_frequencies(k, 12)
    ess = summaries.indicator_ess(k, np.arange(13))
    noise = summaries.total_variation_noise(p, np.nanmin(ess[p > 0.01]), np.random.default_rng(1))
    assert summaries.total_variation(freq, p) < np.quantile(noise, 0.999)


def test_many_singletons_at_a_small_noise_ratio_match_enumeration():
    """One row, about 100 singletons, sigma_x / sigma_a = 1e-3: the K+ distribution is exact.

    With one row every sweep redraws K+ from its conditional, so draws are independent;
    3,000 of them give a total-variation noise whose 99.9% quantile is about 0.075.
    """
    X = np.array([[3.5, -4.2]])
    p = exact.k_plus_posterior(X, 100.0, 1e-3, 1.0, k_max=200)
    k = gibbs.k_plus_trace(
        X, 3_000, np.random.default_rng(0), alpha=100.0, sigma_x=1e-3, sigma_a=1.0
    )
    noise = summaries.total_variation_noise(p, k.size, np.random.default_rng(1))
    assert summaries.total_variation(summaries.k_plus_frequencies(k, 200), p) < np.quantile(
        noise, 0.999
    )
