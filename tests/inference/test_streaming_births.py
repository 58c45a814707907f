"""Births from a buffer (``RecursiveIBP(births="buffer")``, ``ibp_lab.inference.streaming.births``).

What is checked:

- the expected misfit that decides admission equals a Monte Carlo average of the squared
  error under the mean-field posterior; rows of pure noise are admitted at the stated rate;
- the buffer's mass ``alpha_B`` makes its IBP expect as many new features as the stream's
  prior expects of the buffered rows;
- the decomposition finds features that several rows share, and never one that a single
  row owns, nor any when ``alpha_B`` underflows; except that a row out of the joint
  decomposition's reach (its residual alone implies more features than the buffer's prior
  holds) owns one feature of its own, so that huge values and outliers cost a bounded time;
- one pass with a buffer recovers the four canonical features where single births do not
  (statistical, with the rate derived from the measurements in the docstring);
- a buffered stream is deterministic: halves plus ``flush`` give exactly ``fit``, and a
  checkpoint taken with residuals waiting resumes identically;
- the buffer's entries of a state are checked; ``births`` and ``buffer_size`` are refused
  with messages that name them.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.streaming import RecursiveIBP
from ibp_lab.inference.streaming import _linear_gaussian, births
from ibp_lab.evaluation.summaries import match_features
from seeds import stat_rng, stat_seed
from stats_checks import TEST_LEVEL, binomial_pvalue

INVALID = "state is not a valid RecursiveIBP state: "


def canonical(seed: int, n: int):
    """Griffiths and Ghahramani's setting: noise 0.5, each feature in half the images."""
    return simulate_four_feature_data(stat_rng(seed), n=n, sigma_x=0.5, p_on=0.5)


def recovered(model: RecursiveIBP, A: np.ndarray) -> bool:
    """Every true feature matched at correlation > 0.9, and 3 to 5 features expected."""
    if model.features_.shape[0] == 0:
        return False
    corr = match_features(A, model.features_).ref_correlation()
    return bool(np.all(corr > 0.9) and abs(model.n_features_expected_ - 4) <= 1)


# --- admission -----------------------------------------------------------------------------

@pytest.mark.statistical(rate=1e-3)
def test_expected_misfit_is_the_mean_squared_error_under_q():
    rng = stat_rng(40)
    K, D, draws = 3, 6, 200_000
    mu, s = rng.normal(size=(K, D)), rng.uniform(0.1, 0.5, size=K)
    b, o = rng.uniform(0.1, 0.9, size=K), rng.normal(size=D)
    R = o - b @ mu
    z = rng.random((draws, K)) < b
    A = mu[None] + np.sqrt(s)[None, :, None] * rng.normal(size=(draws, K, D))
    err = np.sum((o - np.einsum("nk,nkd->nd", z, A)) ** 2, axis=1)
    # the mean of 2e5 draws is within 3.3 standard errors with probability 1 - 1e-3
    bound = 3.3 * err.std() / np.sqrt(draws)
    assert abs(err.mean() - _linear_gaussian.expected_misfit(R, mu, s, b)) < bound


def test_admission_threshold_is_the_chi_square_quantile():
    for dim in (1, 36, 784):
        threshold = births.admission_threshold(dim)
        assert np.isclose(stats.chi2.sf(threshold, dim), births.ADMIT_LEVEL)


@pytest.mark.statistical(rate=1e-3)
def test_noise_rows_are_admitted_at_the_stated_rate():
    # With no features, a row's misfit over sigma_x^2 is exactly chi-square(D): rows of
    # pure noise are admitted with probability ADMIT_LEVEL each, independently.
    n_rows, dim, sigma_x = 5000, 20, 0.5
    X = sigma_x * stat_rng(41).normal(size=(n_rows, dim))
    model = RecursiveIBP(alpha=1e-12, beta=1.0, sigma_x=sigma_x, sigma_a=1.0,
                         buffer_size=n_rows).partial_fit(X)
    admitted = len(model._stream.buffer_rows)
    assert model.features_.shape[0] == 0
    assert binomial_pvalue(admitted, n_rows, births.ADMIT_LEVEL) > TEST_LEVEL


# --- the buffer's IBP ------------------------------------------------------------------------

@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_buffer_alpha_expects_the_stream_s_new_features(beta):
    rows = np.array([3, 10, 11, 250, 4000])
    alpha = 1.7
    expected_new = sum(alpha * beta / (beta + n - 1) for n in rows)  # stream's prior
    harmonic = sum(1.0 / i for i in range(1, rows.size + 1))  # one-parameter IBP on B rows
    got = births.buffer_alpha(rows, log_alpha=np.log(alpha), beta=beta)
    assert np.isclose(got * harmonic, expected_new, rtol=1e-12)


def test_decomposition_needs_two_owners_and_a_positive_mass():
    rng = np.random.default_rng(3)
    R = 0.1 * rng.normal(size=(30, 8))
    R[7, :4] += 3.0  # one row shows a strong pattern nobody else shows
    assert births.decompose_buffer(R, np.random.default_rng(1), alpha=1.0, sigma_x=0.1,
                                   sigma_a=1.0).n_features == 0
    shared = R.copy()
    shared[::3, 4:] += 1.0  # ten rows share a second pattern
    found = births.decompose_buffer(shared, np.random.default_rng(1), alpha=1.0, sigma_x=0.1,
                                   sigma_a=1.0)
    assert found.n_features == 1 and np.all(found.owners.sum(axis=0) >= 2)
    assert np.allclose(found.means[0, 4:], 1.0, atol=0.1)
    assert births.decompose_buffer(shared, np.random.default_rng(1), alpha=0.0, sigma_x=0.1,
                                   sigma_a=1.0).n_features == 0
    # exactly two owners, the least that is born (no test had exactly two: a rule of
    # "more than two" passed the suite in the third audit)
    pair = R.copy()
    pair[[4, 19], 4:] += 1.0
    found = births.decompose_buffer(pair, np.random.default_rng(1), alpha=1.0, sigma_x=0.1,
                                    sigma_a=1.0)
    assert found.n_features == 1 and found.owners[:, 0].nonzero()[0].tolist() == [4, 19]


# --- recovery at the canonical setting -------------------------------------------------------

@pytest.mark.statistical(rate=1e-3)
@pytest.mark.slow  # measured over 8 s in all (make test only; see README)
def test_buffer_recovers_the_canonical_features_where_single_births_do_not():
    # Measured on 30 streams of 100, 1000 and 10000 images (seeds 0-9 each): buffer births
    # recovered 30 of 30, single births 0 of 30, so each recovers with probability >= 0.9
    # (buffer) or <= 0.1 (single) at 95% confidence. On 10 data sets, at most 4 buffer
    # recoveries at p = 0.9, or at least 6 single ones at p = 0.1, each has probability
    # below 1.5e-4 (stats.binom.cdf(4, 10, 0.9) = stats.binom.sf(5, 10, 0.1) = 1.47e-4):
    # the false-alarm rate stays below 1e-3.
    buffer_ok = single_ok = 0
    for seed in range(10):
        X, _, A = canonical(50 + seed, 300)
        buffer_ok += recovered(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0).fit(X),
                               A)
        single_ok += recovered(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                                            births="single").fit(X), A)
    assert buffer_ok >= 5 and single_ok <= 5 and buffer_ok > single_ok


# --- one pass, deterministic, resumable ------------------------------------------------------

@pytest.fixture(scope="module")
def stream():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(stat_seed(60)), n=260)
    return X


def states_equal(a: dict, b: dict) -> bool:
    keys = set(a) - {"rng_state"}
    return set(a) == set(b) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k]))
                                    for k in keys)


def test_halves_then_flush_give_fit(stream):
    whole = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=60,
                         rng=0).fit(stream)
    halves = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=60, rng=0)
    halves.partial_fit(stream[:131]).partial_fit(stream[131:])
    assert halves._stream.buffer_rows  # something waits, so flush has work to do
    assert states_equal(halves.flush().get_state(), whole.get_state())
    assert whole.features_.shape[0] >= 3


def test_checkpoint_with_residuals_waiting_resumes_identically(stream, tmp_path):
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=60,
                         rng=0).partial_fit(stream[:40])
    assert 0 < len(model._stream.buffer_rows) < 60
    path = tmp_path / "stream.npz"
    model.save(path)
    resumed = RecursiveIBP.load(path)
    assert resumed.get_params()["births"] == "buffer"
    for m in (model, resumed):
        m.partial_fit(stream[40:]).flush()
    assert states_equal(model.get_state(), resumed.get_state())


def test_recorded_posteriors_include_the_buffer_s_births(stream):
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=60,
                         record_posteriors=True,
                         rng=0).fit(stream[:120])
    history = model.posterior_history_
    assert history.shape == (120, model._stream.next_dish - 1)
    # every owner of a buffer-born feature was patched into its row's record
    assert np.allclose(history.sum(axis=0)[model.dish_numbers_ - 1], model.feature_usage_)


# --- doors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"births": "many"}, "births must be 'buffer', 'single' or None"),
    ({"births": 1}, "births must be 'buffer', 'single' or None"),
    ({"births": "buffer", "model": "factor_analysis"}, "births='buffer' needs model="),
    ({"buffer_size": 1}, "buffer_size must be an integer >= 2"),
    ({"buffer_size": 10**5}, "buffer_size must be an integer <= 10000"),
    ({"buffer_size": 3.0}, "buffer_size must be an integer"),
])
def test_bad_birth_settings_are_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, **kwargs).fit(np.zeros((3, 2)))


def test_defaults_and_flush_doors():
    assert RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5,
                        sigma_a=1.0)._checked_settings().births == "buffer"
    fa = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, model="factor_analysis")
    assert fa._checked_settings().births == "single"
    assert RecursiveIBP.bp_means_limit(1.0, 1e-3).births == "single"
    with pytest.raises(ValueError, match="flush is not available before fitting"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0).flush()
    single = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                          births="single").partial_fit(np.ones((3, 2)))
    before = single.get_state()
    assert states_equal(single.flush().get_state(), before)


@pytest.fixture(scope="module")
def buffered_state(stream):
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=60,
                         rng=0).partial_fit(stream[:40])
    state = model.get_state()
    assert state["buffer_rows"].size >= 3
    return state


def _rows(change):
    return lambda s: change(s["buffer_rows"].copy())


@pytest.mark.parametrize("key, change, message", [
    ("buffer_rows", _rows(lambda r: r[::-1]), "buffer_rows must be strictly increasing"),
    ("buffer_rows", _rows(lambda r: r + 1000), "buffer_rows must be strictly increasing"),
    ("buffer_rows", _rows(lambda r: r - r[0]), "buffer_rows must be strictly increasing"),
    ("buffer_residuals", lambda s: np.where(np.arange(s["buffer_residuals"].shape[0])[:, None]
                                            == 0, np.nan, s["buffer_residuals"]),
     "buffer_residuals must be finite"),
    ("buffer_residuals", lambda s: s["buffer_residuals"][:, :-1], "buffer_residuals must have"),
    ("buffer_size", lambda s: int(s["buffer_rows"].size), "a full buffer"),
    ("births", "single", "must be empty with births='single'"),
])
def test_buffer_entries_of_a_state_are_checked(buffered_state, key, change, message):
    bad = dict(buffered_state)
    bad[key] = change(buffered_state) if callable(change) else change
    with pytest.raises(ValueError, match=INVALID + ".*" + message):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0).set_state(bad)


def test_version_two_state_is_refused_with_its_reason(buffered_state):
    old = {k: v for k, v in buffered_state.items()
           if k not in ("births", "buffer_size", "buffer_residuals", "buffer_rows")}
    old["version"] = 2
    with pytest.raises(ValueError, match=INVALID + "version must be 3, got 2 .*birth buffer"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0).set_state(old)


@pytest.mark.parametrize("call, message", [
    (lambda: births.admission_threshold(0), "dim must be an integer >= 1"),
    (lambda: births.buffer_alpha([0, 1], log_alpha=0.0, beta=1.0), "rows must be"),
    (lambda: births.buffer_alpha([1.5], log_alpha=0.0, beta=1.0), "rows must be"),
    (lambda: births.buffer_alpha([], log_alpha=0.0, beta=1.0), "rows must be"),
    (lambda: births.buffer_alpha([1], log_alpha=np.inf, beta=1.0), "log_alpha must be"),
    (lambda: births.buffer_alpha([1], log_alpha=0.0, beta=0.0), "beta must be > 0"),
    (lambda: births.decompose_buffer(np.full((3, 2), np.nan), np.random.default_rng(0),
                                     alpha=1.0, sigma_x=0.1, sigma_a=1.0), "residuals"),
    (lambda: births.decompose_buffer(np.zeros((3, 2)), 0, alpha=1.0, sigma_x=0.1,
                                     sigma_a=1.0), "rng"),
    (lambda: births.decompose_buffer(np.zeros((3, 2)), np.random.default_rng(0),
                                     alpha=-1.0, sigma_x=0.1, sigma_a=1.0), "alpha"),
    (lambda: births.decompose_buffer(np.zeros((3, 2)), np.random.default_rng(0),
                                     alpha=1.0, sigma_x=0.0, sigma_a=1.0), "sigma_x"),
])
def test_the_rule_s_functions_refuse_bad_arguments(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_pilot_skips_a_buffer_of_noise_and_leaves_real_buffers_alone():
    rng = np.random.default_rng(5)
    noise = 0.5 * rng.normal(size=(100, 36))
    # late in a stream (rows 9901-10000) the buffer's mass is small and noise shares nothing
    alpha = births.buffer_alpha(np.arange(9901, 10001), log_alpha=0.0, beta=1.0)
    assert not births._shares_a_feature(noise, np.random.default_rng(0), alpha, 0.5, 1.0)
    assert births.decompose_buffer(noise, np.random.default_rng(0), alpha=alpha,
                                   sigma_x=0.5, sigma_a=1.0).n_features == 0
    X, _, _ = simulate_four_feature_data(np.random.default_rng(6), n=100)
    assert births._shares_a_feature(X, np.random.default_rng(0), 1.0, 0.5, 1.0)
    assert births.decompose_buffer(X, np.random.default_rng(0), alpha=1.0, sigma_x=0.5,
                                   sigma_a=1.0).n_features >= 1


@pytest.mark.statistical(rate=1e-3)
def test_a_first_buffer_of_the_canonical_images_is_decomposed_into_the_four_features():
    # Measured (first buffers of 100 images, every row admitted, alpha_B = 1): 87 of 90
    # decompositions found the four features at correlation > 0.9 (data sets 1, 3 and 6
    # with 20 sampler seeds each, 10-15 with 5), so the rate is >= 0.9 at 95% confidence;
    # the schedule used before (4 empty starts of 250 sweeps) found them in 57 of the first
    # 60. At p = 0.9, 20 or fewer successes in 30 has probability
    # stats.binom.cdf(20, 30, 0.9) = 4.5e-4.
    found_four = 0
    for case in range(30):
        X, _, A = simulate_four_feature_data(stat_rng(700 + case // 5), n=100)
        found = births.decompose_buffer(X, stat_rng(800 + case), alpha=1.0, sigma_x=0.5,
                                        sigma_a=1.0)
        found_four += bool(found.n_features == 4 and
                           match_features(A, found.means).ref_correlation().min() > 0.9)
    assert found_four >= 21


# ---------------------------------------------------------------------------------------
# bounded cost: rows out of the joint decomposition's reach
# ---------------------------------------------------------------------------------------


@pytest.fixture
def deadline():
    """Fail (instead of hanging for minutes) if the block runs past the given seconds."""
    import signal

    def expired(*_):
        raise TimeoutError("the decomposition ran past its deadline: its cost is unbounded")

    previous = signal.signal(signal.SIGALRM, expired)

    def start(seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, seconds)

    yield start
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_implied_features_average_the_number_each_row_owns():
    # rows owning m features drawn N(0, sa^2 I) plus noise: the estimate averages m. Its
    # standard error over 2,000 rows of D = 20 is about sqrt(2 / D) (m + sx^2/sa^2) / sqrt(2000),
    # under 0.06 for m <= 8; the tolerance 0.3 is five of them. At m = 0 the floor at 0 lifts
    # the mean by about 0.4 times a row's spread, sqrt(2 / D) sx^2 / sa^2 = 0.02: far inside.
    rng = np.random.default_rng(5)
    sx, sa, dim = 0.5, 2.0, 20
    for m in (0, 3, 8):
        R = rng.normal(0, sa, size=(2000, m, dim)).sum(axis=1) + rng.normal(0, sx, (2000, dim))
        implied = births.implied_features(R, sigma_x=sx, sigma_a=sa)
        assert abs(implied.mean() - m) < 0.3


def test_feature_reach_is_the_poisson_quantile_of_the_buffer_prior():
    for alpha, rows in [(1.0, 100), (0.3, 2), (5.0, 50)]:
        expected = alpha * np.sum(1.0 / np.arange(1, rows + 1))
        reach = births.feature_reach(rows, alpha=alpha)
        assert stats.poisson.sf(reach, expected) <= births.OUT_OF_REACH_TAIL
        assert stats.poisson.sf(reach - 1, expected) > births.OUT_OF_REACH_TAIL


def test_a_buffer_of_huge_values_is_decomposed_in_bounded_time(deadline):
    # A 2 x 5 buffer of 1e3 with sigma_a = 1 used to settle near 600 features and take
    # minutes; each row is now out of reach and owns one feature, its posterior image.
    deadline(20)
    R = np.full((2, 5), 1e3)
    found = births.decompose_buffer(R, np.random.default_rng(0), alpha=1.0, sigma_x=1.0,
                                    sigma_a=1.0)
    assert found.n_features == 2
    assert np.array_equal(found.owners, np.eye(2))
    # one owner: mean r sa^2 / (sa^2 + sx^2), variance sa^2 sx^2 / (sa^2 + sx^2)
    assert np.allclose(found.means, 500.0) and np.allclose(found.variances, 0.5)


@pytest.mark.parametrize("sigma_x, sigma_a", [(0.5, 2.0), (2.0, 0.5)])
def test_a_row_alone_gets_its_posterior_at_unequal_scales(sigma_x, sigma_a):
    # At sigma_x = sigma_a the two scales enter symmetrically, and a planted swap of them
    # passed every test. One owner: mean r sa^2 / (sa^2 + sx^2), variance the same either
    # way (sa^2 sx^2 / (sa^2 + sx^2)), so the mean is what tells the scales apart.
    R = np.full((2, 5), 1e3)
    R[1] *= -1
    found = births.decompose_buffer(R, np.random.default_rng(0), alpha=1.0, sigma_x=sigma_x,
                                    sigma_a=sigma_a)
    assert np.array_equal(found.owners, np.eye(2))
    shrink = sigma_a**2 / (sigma_a**2 + sigma_x**2)
    assert np.allclose(found.means, R * shrink)
    assert np.allclose(found.variances, sigma_a**2 * sigma_x**2 / (sigma_a**2 + sigma_x**2))


def test_which_rows_are_out_of_reach_uses_each_scale_in_its_place():
    # Two rows of mean square 10 with sx = 2, sa = 0.5: each implies (10 - 4) / 0.25 = 24
    # features, beyond the reach of a two-row buffer (Poisson(1.5 alpha) quantile, 14 at
    # alpha = 1), so each is explained alone; the scales swapped would give (10 - 0.25) / 4
    # = 2.4, within reach, and the rows would go to the joint sampler (which never births
    # a feature that one row owns).
    R = np.sqrt(10.0) * np.array([[1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]])
    reach = births.feature_reach(2, alpha=1.0)
    assert 2.4 < reach < 24
    found = births.decompose_buffer(R, np.random.default_rng(0), alpha=1.0, sigma_x=2.0,
                                    sigma_a=0.5)
    assert np.array_equal(found.owners, np.eye(2))


def test_rows_within_reach_are_still_decomposed_jointly(deadline):
    deadline(60)
    rng = np.random.default_rng(0)
    A = np.zeros((2, 8))
    A[0, :4], A[1, 4:] = 1.0, 1.0
    R = (rng.random((30, 2)) < 0.6) @ A + 0.1 * rng.normal(size=(30, 8))
    R[[3, 17]] = 1e4  # two rows far out of reach
    found = births.decompose_buffer(R, np.random.default_rng(30), alpha=1.0, sigma_x=0.1,
                                    sigma_a=1.0)
    alone = found.owners[:, found.owners.sum(axis=0) == 1]
    assert sorted(np.flatnonzero(alone.any(axis=1))) == [3, 17]
    shared = found.means[found.owners.sum(axis=0) >= births.MIN_OWNERS]
    assert shared.shape[0] == 2
    assert np.allclose(np.sort(shared.round(0), axis=0), np.sort(A, axis=0))


def test_a_stream_with_outliers_costs_what_a_clean_one_does(deadline):
    # 200 x 5 rows with ten outliers scaled x1000 took over 120 s (3-5 s clean).
    from ibp_lab.models.linear_gaussian import simulate

    X, _, _ = simulate(200, np.random.default_rng(0), alpha=2.0, sigma_x=0.5, sigma_a=1.0, d=5)
    X[np.random.default_rng(1).choice(200, 10, replace=False)] *= 1000
    deadline(60)
    model = RecursiveIBP(sigma_x=0.5, rng=0).fit(X)
    assert model.n_seen_ == 200 and np.isfinite(model.features_).all()
