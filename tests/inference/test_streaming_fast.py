"""The compiled fast path of RecursiveIBP (ibp_lab.inference.streaming._fast) against the Python path.

What is checked, and against what:

- the fast path (the default for the linear-Gaussian model) and the Python reference path
  (forced with the private switch ``_fast_path = False``) end in the same state on streams
  that exercise single and buffer births, ``beta != 1``, retirement, many features, the
  zero-noise (BP-means) limit and batches split into halves; and the fast path really
  carries most rows (the reference sees only the events);
- an event row (a birth) is left untouched by the kernel, which returns its index;
- the compiled primitives of the filtering prior, which both paths call, against SciPy's
  Poisson tails and against an independent NumPy/SciPy implementation of the prior (the
  one the package used before the primitives were compiled).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special
from scipy.special import logsumexp

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.streaming import RecursiveIBP, bp_means_one_pass
from ibp_lab.inference.streaming import _fast
from ibp_lab.inference.streaming._stream import StreamState
from ibp_lab.inference.streaming.filtering import (
    _add_bernoullis,
    count_law,
    filtering_prior_core,
    log_poisson_tails,
)

# The two paths compute the same numbers by the same compiled code, except that the
# Python path's vectorised NumPy exp and log1p and its BLAS dot products round differently
# (in the last bit) from the kernel's scalar ones. On the streams below the states then
# differ by at most 1e-15 relative (measured: 2e-16 to 1.0e-15, on every float of the
# state); 1e-10 leaves room and is still far below any modelling difference (a different
# decision moves features by 1e-3 or more).
RTOL = 1e-10
# Streams are chosen well conditioned. Where single births fuse many features (30 features
# each in 10% of the rows: over a hundred near-duplicate slots) the reference itself
# amplifies rounding by about e every ten rows: the Python path run on data changed by one
# ulp drifts from itself exactly as the fast path drifts from it (measured: 1e-12 by row
# 200, 1e-10 by row 260, different births later). No path can agree there to rounding.


def linear_gaussian_stream(seed, n, *, k=5, d=55, p_on=0.3, noise=0.1):
    """Rows from ``k`` fixed Gaussian features, each on with probability ``p_on``."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, d))
    Z = (rng.random((n, k)) < p_on).astype(float)
    return Z @ A + noise * rng.normal(size=(n, d))


def counting_observe(monkeypatch, model):
    """Count the rows the Python path (``StreamState.observe``) handles for ``model`` (the
    events); its stream starts at fit, so the count is kept on the class, for it only."""
    calls = []
    original = StreamState.observe

    def observe(stream, o):
        if stream is model.__dict__.get("_stream"):
            calls.append(1)
        original(stream, o)

    monkeypatch.setattr(StreamState, "observe", observe)
    return calls


def state_of(model):
    """Everything the stream carries, as arrays (get_state without the generator)."""
    state = model.get_state()
    return {key: np.asarray(value) for key, value in state.items()
            if key not in ("rng_state", "rng_kind")}


def assert_same_state(fast, slow):
    a, b = state_of(fast), state_of(slow)
    assert a.keys() == b.keys()
    for key in a:
        if a[key].dtype.kind in "fc":
            assert np.allclose(a[key], b[key], rtol=RTOL, atol=RTOL, equal_nan=True), key
        else:
            assert np.array_equal(a[key], b[key]), key


STREAMS = {
    # name: (estimator parameters, data); each exercises one part of the fast path
    "single births": (dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single"),
                      lambda: linear_gaussian_stream(0, 3000)),
    "buffer births": (dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="buffer"),
                      lambda: linear_gaussian_stream(1, 3000)),
    "beta 3, ossify": (dict(alpha=1.0, beta=3.0, sigma_x=0.5, sigma_a=1.0, births="single",
                            ossify=True), lambda: linear_gaussian_stream(2, 2000)),
    # a large tol retires the slots of spurious features soon after they stop being used
    "retirement": (dict(alpha=2.0, beta=1.0, sigma_x=0.3, sigma_a=1.0, births="single",
                        tol=1e-2), lambda: linear_gaussian_stream(3, 2000, noise=0.3)),
    "many features": (dict(alpha=1.0, beta=1.0, sigma_x=0.3, sigma_a=1.0, births="single"),
                      lambda: linear_gaussian_stream(4, 2000, k=30, p_on=0.02)),
    "G&G images": (dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0),
                   lambda: simulate_four_feature_data(np.random.default_rng(5), n=1000)[0]),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_fast_path_matches_the_python_path(name, monkeypatch):
    params, data = STREAMS[name]
    X = data()
    slow = RecursiveIBP(**params, rng=0)
    slow._fast_path = False
    slow.fit(X)
    fast = RecursiveIBP(**params, rng=0)
    events = counting_observe(monkeypatch, fast)
    fast.fit(X)
    assert_same_state(fast, slow)
    # the kernel carries the steady state: the reference sees only a small share of rows
    assert 0 < len(events) < 0.2 * X.shape[0], len(events)
    if name == "retirement":
        assert slow.dish_numbers_.size < slow._stream.next_dish - 1  # slots were retired
    if name == "many features":
        assert slow.features_.shape[0] >= 30


@pytest.mark.slow  # measured over 4 s (make test only; see README)
def test_halves_through_the_fast_path_equal_the_whole():
    X = linear_gaussian_stream(6, 2000)
    params = dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="buffer", rng=0)
    whole = RecursiveIBP(**params).fit(X)
    halves = RecursiveIBP(**params).partial_fit(X[:777]).partial_fit(X[777:]).flush()
    slow = RecursiveIBP(**params)
    slow._fast_path = False
    slow.partial_fit(X[:1000]).partial_fit(X[1000:]).flush()
    assert_same_state(halves, whole)
    assert_same_state(halves, slow)


@pytest.mark.parametrize("ossify", [False, True])
def test_zero_noise_limit_through_the_fast_path(ossify, monkeypatch):
    """BP-means (log_alpha = -5e5): the fast path takes the same 0/1 decisions."""
    X, _, _ = simulate_four_feature_data(np.random.default_rng(7), n=400, sigma_x=0.05,
                                         p_on=0.4)
    Z, A = bp_means_one_pass(X, 1.5, n_steps=3, ossify=ossify)
    fast = RecursiveIBP.bp_means_limit(1.5, 1e-3, ossify=ossify, record_posteriors=False)
    assert fast.log_alpha == -1.125e6
    events = counting_observe(monkeypatch, fast)
    fast.fit(X)
    slow = RecursiveIBP.bp_means_limit(1.5, 1e-3, ossify=ossify)  # records: Python path
    slow.fit(X)
    assert np.array_equal(slow.posterior_history_, Z)
    # record_posteriors differs between the two, so compare the stream itself
    assert np.array_equal(fast.dish_numbers_, slow.dish_numbers_)
    assert np.allclose(fast.features_, slow.features_, rtol=RTOL, atol=RTOL)
    assert np.array_equal(fast.feature_usage_, slow.feature_usage_)  # sums of 0s and 1s
    assert fast.n_features_expected_ == A.shape[0]
    # as in test_streaming: the first-order terms of the limit stay far below 1e-4
    assert np.max(np.abs(fast.features_ - A)) < 1e-4
    assert len(events) < 0.2 * X.shape[0]


def test_an_event_row_is_left_to_the_python_path():
    X = linear_gaussian_stream(8, 600, k=4)
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single",
                         rng=0).fit(X[:500])
    stream = model._stream
    before = {name: getattr(stream, name).copy() for name in
              ("mu", "var", "usage", "log_unowned", "dish")}
    new_feature = 3.0 * np.random.default_rng(9).normal(size=X.shape[1])
    rows = np.ascontiguousarray(np.r_[X[500:510], (X[510] + new_feature)[None], X[511:]])
    rates = np.empty(rows.shape[0])
    slots = np.empty(rows.shape[0], dtype=np.int64)

    def run(start):
        return _fast.observe_rows(rows, start, *stream.kernel_view(), rates, slots)

    stop, _ = run(10)  # the row with a feature nobody has: a birth
    assert stop == 10
    for name, value in before.items():
        assert np.array_equal(getattr(stream, name), value), name
    stop, rate = run(0)  # ten ordinary rows, then that row again
    assert stop == 10 and rate == pytest.approx(stream.k)
    assert not np.array_equal(stream.mu, before["mu"])


# --- the compiled primitives of the filtering prior -----------------------------------------

def scipy_poisson_tails(m, log_rate):
    """``log P(X >= m)`` and ``log P(X <= m - 1)`` from SciPy's incomplete gamma functions,
    with the series ``P(X = m) 1F1(1; m + 1; rate)`` where the upper tail underflows."""
    rate = float(np.exp(log_rate))
    with np.errstate(divide="ignore"):
        log_sf = np.log(special.gammainc(m, rate)) if rate > 0 else np.full(m.shape, -np.inf)
        log_cdf = np.log(special.gammaincc(m, rate))
    small = log_sf < -600.0
    if log_rate > -np.inf and np.any(small):
        ms = m[small].astype(float)
        log_sf[small] = (ms * log_rate - rate - special.gammaln(ms + 1.0)
                         + np.log(special.hyp1f1(1.0, ms + 1.0, rate)))
    return log_sf, log_cdf


@pytest.mark.parametrize("seed", range(4))
def test_poisson_tails_equal_scipy(seed):
    rng = np.random.default_rng(seed)
    log_rates = np.r_[-5e5, -np.inf, rng.uniform(-40, 9.3, size=40)]
    for log_rate in log_rates:
        m_max = int(rng.integers(1, 400)) if seed < 3 else int(np.exp(min(log_rate, 9)) + 50)
        got = log_poisson_tails(m_max, log_rate)
        want = scipy_poisson_tails(np.arange(1, m_max + 1), log_rate)
        rate = np.exp(log_rate)
        for g, w in zip(got, want):
            # SciPy underflows to -inf below about e^-745 where the sums in logs do not
            finite = np.isfinite(w)
            assert np.all(g[~finite] < -700)
            # each log pmf term j log(rate) - rate - lgamma(j + 1) cancels terms of size up
            # to (rate + m) log(rate + m): rounding of a few 1e-16 of that, in logs
            tol = 1e-13 * (1 + np.abs(w[finite])) + 4e-16 * (rate + m_max) * np.log(
                2 + rate + m_max)
            assert np.all(np.abs(g[finite] - w[finite]) <= tol), (log_rate, m_max)


def test_poisson_tails_at_the_limits():
    log_sf, log_cdf = log_poisson_tails(5, -np.inf)  # rate 0: X = 0
    assert np.all(log_sf == -np.inf) and np.all(log_cdf == 0.0)
    log_sf, log_cdf = log_poisson_tails(3, -5e5)  # the BP-means limit: exact terms
    assert np.array_equal(log_sf, [-5e5, -1e6 - np.log(2.0), -1.5e6 - np.log(6.0)])
    assert np.all(log_cdf == 0.0)


def numpy_count_law(log_unowned, base):
    kept = log_unowned[log_unowned < 0]
    with np.errstate(divide="ignore"):
        log_exist = np.log(-np.expm1(kept))
    return _add_bernoullis(base, log_exist, kept)


@pytest.mark.parametrize("seed", range(5))
def test_count_law_equals_the_numpy_formula(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 40))
    log_unowned = np.log(rng.random(k)) * rng.uniform(0, 50, size=k)
    log_unowned[rng.random(k) < 0.3] = -np.inf  # established
    log_unowned[rng.random(k) < 0.2] = 0.0  # cannot exist
    base = np.log(np.r_[0.25, 0.5, 0.25])
    got = count_law(log_unowned, base)
    # the same recursion; only libm's and NumPy's log and expm1 may round apart
    assert np.allclose(got, numpy_count_law(log_unowned, base), rtol=1e-13, atol=1e-13)


def numpy_filtering_prior(usage, log_unowned, dish, n, log_count, log_alpha, beta, last_used):
    """The filtering prior as the package computed it with NumPy and SciPy (module docstring
    of ibp_lab.inference.streaming.filtering), every slot's new-feature fraction included."""
    denominator = beta + n - 1
    log_rate_new = log_alpha + np.log(beta) - np.log(denominator)
    bound = np.minimum(dish - 1, last_used)
    log_pmf = np.full(int(bound.max()) + 1, -np.inf)
    top = min(log_count.size, log_pmf.size)
    log_pmf[:top] = log_count[:top]
    log_sf, log_cdf = scipy_poisson_tails(np.arange(1, int(dish.max()) + 1), log_rate_new)
    # every term of both sums, with no early stop (the package's _log_fractions stops once
    # the rest is negligible; this reference must not share that code)
    log_c, log_1mc = np.empty(dish.size), np.empty(dish.size)
    for a, (d, e) in enumerate(zip(dish, bound)):
        j = np.arange(int(e) + 1)
        log_a = logsumexp(log_pmf[j] + log_sf[d - j - 1])
        log_b = logsumexp(log_pmf[j] + log_cdf[d - j - 1])
        if log_a == log_b == -np.inf:  # P(Lambda <= e) = 0: the module's rule, Lambda = e
            log_a, log_b = log_sf[d - e - 1], log_cdf[d - e - 1]
        log_c[a], log_1mc[a] = log_a - np.logaddexp(log_a, log_b), log_b - np.logaddexp(log_a, log_b)
    owned = -np.expm1(log_unowned)
    share = usage / denominator
    with np.errstate(divide="ignore"):
        log_on = np.logaddexp(np.log(share), log_unowned + log_c)
        log_off = np.logaddexp(np.log(owned - share), log_unowned + log_1mc)
    log_total = np.logaddexp(log_on, log_off)
    return log_on - log_total, log_off - log_total


@pytest.mark.parametrize("seed", range(6))
def test_filtering_prior_core_equals_the_numpy_formula(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 25))
    n = int(rng.integers(k + 1, 5000))
    b = rng.random((n - 1, k)) ** rng.uniform(0.2, 20, size=k)  # earlier posteriors
    b[:, : k // 3] = np.where(b[:, : k // 3] > 0.5, 1.0, b[:, : k // 3])  # established
    b[:, -2:] = rng.random((n - 1, 2)) * 4 / n  # rarely used: Pi_k near e^-2, Pi_k c_d matters
    usage = b.sum(axis=0)
    with np.errstate(divide="ignore"):
        log_unowned = np.log1p(-b).sum(axis=0)
    n_fresh = int(rng.integers(1, 9))
    usage = np.r_[usage, np.zeros(n_fresh)]
    log_unowned = np.r_[log_unowned, np.zeros(n_fresh)]
    last_used = k + 3  # three slots were retired
    dish = np.r_[np.sort(rng.choice(np.arange(1, last_used + 1), size=k, replace=False)),
                 last_used + 1 + np.arange(n_fresh)].astype(np.int64)
    log_count = count_law(log_unowned[:k], np.log(np.r_[0.5, 0.5]))
    log_alpha, beta = float(rng.uniform(-3, 2)), float(rng.uniform(0.2, 5))
    got = filtering_prior_core(usage, log_unowned, dish, n, log_count, log_alpha, beta,
                               last_used)
    want = numpy_filtering_prior(usage, log_unowned, dish, n, log_count, log_alpha, beta,
                                 last_used)
    for g, w in zip(got, want):
        # the tails agree with SciPy to 1e-13 (above), the rest is the same arithmetic
        assert np.allclose(g, w, rtol=1e-11, atol=1e-12), (g, w)
