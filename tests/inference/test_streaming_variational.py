"""Streaming variational inference: its bound, its block updates and its bookkeeping.

Exact answers: the evidence by enumeration on tiny data (every ELBO bounds it); each block
update's optimality (no perturbation of its block raises the step's bound); the
conjugate sums of the finite family (``tau`` and the features' precisions are the prior's
plus every row's expected counts, whatever the batches); one batch of all the rows is
batch variational inference, number for number.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaln

from ibp_lab.inference import exact
from ibp_lab.inference._mean_field import (
    Base,
    Problem,
    State,
    elbo,
    prior_log_odds,
    stick_terms,
    update_column,
    update_feature,
    update_sticks,
)
from ibp_lab.inference.streaming_variational import stream_variational
from ibp_lab.inference.variational import VariationalIBP, finite_log_evidence

HYPER = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.1)


def _tiny(seed: int, n_rows: int = 4, n_dims: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n_rows, n_dims))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("batch_size", [1, 3])
def test_finite_bound_sits_below_the_exact_evidence(seed, batch_size):
    X = _tiny(seed)
    res = stream_variational(X, **HYPER, family="finite", n_features=3, batch_size=batch_size,
                             rng=np.random.default_rng(seed))
    evidence = finite_log_evidence(X, **HYPER, n_features=3)
    assert np.isfinite(res.elbo())
    assert res.elbo() <= evidence + 1e-9


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("batch_size", [1, 2])
def test_infinite_bound_sits_below_the_ibp_evidence(seed, batch_size):
    X = _tiny(seed)
    res = stream_variational(X, **HYPER, family="stick_breaking", n_features=4,
                             batch_size=batch_size, rng=np.random.default_rng(seed))
    evidence = exact.log_evidence(X, **HYPER)
    assert res.ibp_elbo() <= evidence + 1e-9


def _cost_beyond_truncation_directly(tau: np.ndarray, alpha: float, n_rows: int,
                                     n_terms: int = 20_000) -> tuple[float, float]:
    """``N sum_{k > K} E log(1 - pi_k)``, ``v_k ~ Beta(alpha, 1)`` beyond ``K``, by its series
    ``-N alpha sum_j E_q[pi_K^j] / j^2`` (``E log(1 - pi) = -sum_j E[pi^j] / j``, and the
    columns beyond K sum ``E[pi_k^j]`` to ``E_q[pi_K^j] alpha / j``) summed term by term to
    ``n_terms``; ``E_q[pi_K^j] = prod_k B(a_k + j, b_k) / B(a_k, b_k)``. Returns the sum and
    a bound on what the terms after ``n_terms`` add."""
    j = np.arange(1, n_terms + 2, dtype=float)
    moments = np.exp(sum(betaln(a + j, b) - betaln(a, b) for a, b in tau))
    series = -n_rows * alpha * float(np.sum(moments[:-1] / j[:-1] ** 2))
    return series, n_rows * alpha * float(moments[-1]) / n_terms


@pytest.mark.parametrize("seed", range(3))
def test_ibp_elbo_adds_the_cost_of_the_columns_beyond_the_truncation(seed):
    """ibp_elbo() - elbo() is N times the expected log-probability that each row leaves
    every column beyond K empty: a direct sum of its series on six rows of two dimensions
    (N != D, so a term scaled by D is 3x off). The package sums 2,000 terms and bounds the
    rest, so the two differ by at most the package's remainder bound."""
    X = _tiny(seed, n_rows=6, n_dims=2)
    res = stream_variational(X, **HYPER, family="stick_breaking", n_features=4,
                             batch_size=2, rng=np.random.default_rng(seed))
    direct, tail = _cost_beyond_truncation_directly(res.tau, HYPER["alpha"], X.shape[0])
    _, remainder = _cost_beyond_truncation_directly(res.tau, HYPER["alpha"], X.shape[0],
                                                    n_terms=2_000)
    assert direct < -1e-3  # the term is not negligible here: a wrong scale would show
    assert res.ibp_elbo() - res.elbo() == pytest.approx(direct, abs=remainder + tail + 1e-9)


def test_the_bound_is_not_vacuous_on_tiny_data():
    """A bound far below the evidence would pass the tests above for a broken q: the
    finite stream's final ELBO is within a few nats of log p(X) on four rows."""
    X = _tiny(0)
    evidence = finite_log_evidence(X, **HYPER, n_features=3)
    gaps = [evidence - stream_variational(X, **HYPER, family="finite", n_features=3,
                                          batch_size=1, rng=np.random.default_rng(s)).elbo()
            for s in range(5)]
    assert 0 <= min(gaps) < 3.0


def _random_step(family: str, seed: int):
    """A batch, a non-trivial last posterior q0 and a random q: a step's problem and state."""
    rng = np.random.default_rng(seed)
    K, D = 3, 4
    X = rng.normal(size=(5, D))
    base = Base(rng.normal(size=(K, D)), rng.uniform(0.2, 2.0, K),
                rng.uniform(0.5, 4.0, (K, 2)))
    problem = Problem(X, 1.3, 0.36, 1.21, K, family, base)
    nu, phi = rng.random((5, K)), rng.normal(size=(K, D))
    state = State(nu, phi, rng.uniform(0.1, 1.0, K), rng.uniform(0.5, 4.0, (K, 2)),
                  X - nu @ phi)
    return problem, state, rng


def _perturbed(state: State, X: np.ndarray, **changes) -> State:
    new = State(state.nu.copy(), state.phi.copy(), state.Phi.copy(), state.tau.copy(), None)
    for name, value in changes.items():
        setattr(new, name, value)
    new.resid = X - new.nu @ new.phi
    return new


@pytest.mark.parametrize("family", ["finite", "stick_breaking"])
@pytest.mark.parametrize("seed", range(3))
def test_each_block_update_maximises_the_step_bound(family, seed):
    """After a block's update, 40 random perturbations of that block (and only it) each
    lower the step's bound: the update is the block's maximiser, from q0, not the prior.
    The stick-breaking Betas are checked at the weights y they were updated with."""
    problem, state, rng = _random_step(family, seed)
    X, k = problem.X, 1
    update_feature(k, state, problem)
    top = elbo(state, problem)
    for _ in range(40):
        phi, Phi = state.phi.copy(), state.Phi.copy()
        phi[k] += 0.05 * rng.normal(size=phi.shape[1])
        Phi[k] *= np.exp(0.1 * rng.normal())
        assert elbo(_perturbed(state, X, phi=phi, Phi=Phi), problem) < top
    log_odds = _log_odds(state, problem)
    update_column(k, state, problem, log_odds)
    top = elbo(state, problem)
    for _ in range(40):
        nu = state.nu.copy()
        nu[:, k] = np.clip(nu[:, k] + 0.05 * rng.normal(size=nu.shape[0]), 1e-6, 1 - 1e-6)
        assert elbo(_perturbed(state, X, nu=nu), problem) < top
    y = stick_terms(state.tau)[2] if family == "stick_breaking" else None
    update_sticks(state, problem)
    top = elbo(state, problem, y)
    for _ in range(40):
        tau = state.tau * np.exp(0.05 * rng.normal(size=state.tau.shape))
        assert elbo(_perturbed(state, X, tau=tau), problem, y) < top


def _log_odds(state, problem):
    return prior_log_odds(state.tau, problem)


def test_planted_bug_an_update_from_the_prior_is_caught():
    """The check above fails if the feature update forgets q0 and starts from the prior."""
    problem, state, rng = _random_step("finite", 0)
    prior_problem = Problem(problem.X, problem.alpha, problem.sx2, problem.sa2,
                            problem.n_features, problem.family)
    update_feature(1, state, prior_problem)  # the bug: the prior in place of q0
    top = elbo(state, problem)
    raised = 0
    for _ in range(40):
        phi = state.phi.copy()
        phi[1] += 0.05 * rng.normal(size=phi.shape[1])
        raised += elbo(_perturbed(state, problem.X, phi=phi), problem) > top
    assert raised > 0


@pytest.mark.parametrize("batch_size", [1, 4, 7])
def test_finite_stream_adds_every_rows_counts(batch_size):
    """Conjugate bookkeeping: q(pi_k) is the prior plus each row's frozen (nu, 1 - nu), and
    q(A_k)'s precision the prior's plus sum_n nu_nk / sigma_x^2, whatever the batches."""
    X = np.random.default_rng(5).normal(size=(13, 3))
    K = 3
    # each step run to a tight fixed point: within a pass q(A_k) is updated before
    # nu_{., k}, so they agree only at convergence
    res = stream_variational(X, **HYPER, family="finite", n_features=K,
                             batch_size=batch_size, max_iter=20000, tol=1e-13,
                             rng=np.random.default_rng(1))
    nu = res.feature_probabilities
    prior = np.array([HYPER["alpha"] / K, 1.0])
    np.testing.assert_allclose(res.tau, prior + np.column_stack([nu.sum(0), (1 - nu).sum(0)]),
                               rtol=1e-12)
    precision = 1 / HYPER["sigma_a"] ** 2 + nu.sum(0) / HYPER["sigma_x"] ** 2
    np.testing.assert_allclose(1 / res.feature_variances, precision, rtol=1e-6)


def test_one_batch_of_every_row_is_batch_variational_inference():
    """Same start, same updates: equal to rounding. Eight passes, while each still raises
    the ELBO by nats (near convergence the two could stop a pass apart on a rounding-level
    change, which is not what this test is about)."""
    X = np.random.default_rng(2).normal(size=(12, 3))
    res = stream_variational(X, **HYPER, family="finite", n_features=4, batch_size=12,
                             max_iter=8, tol=0.0, rng=np.random.default_rng(7))
    vi = VariationalIBP(**HYPER, family="finite", n_features=4, max_iter=8, tol=0.0,
                        rng=7).fit(X)
    assert vi.n_iter_ == 8
    np.testing.assert_allclose(res.features, vi.features_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res.feature_probabilities, vi.feature_probabilities_,
                               rtol=1e-12, atol=1e-14)
    assert res.elbo() == pytest.approx(vi.elbo_[-1], rel=1e-12)


def test_the_infinite_variant_opens_columns_as_rows_use_them():
    """Several columns can open in one batch; a spare (unused) last column is left unless
    the cap is reached; a column opened later is empty in the rows streamed before it."""
    from ibp_lab.datasets import simulate_four_feature_data

    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), sigma_x=0.5)
    res = stream_variational(X, np.random.default_rng(1), alpha=1.0, sigma_x=0.5,
                             sigma_a=1.0, n_features=12, batch_size=10)
    assert res.n_columns[0] >= 2  # the first batch opened more than one
    assert np.all(np.diff(res.n_columns) >= 0)
    assert 4 <= res.n_columns[-1] <= 12
    last_batch = res.feature_probabilities[-10:]
    assert res.n_columns[-1] == 12 or last_batch[:, -1].sum() <= 0.5
    for b, k in enumerate(res.n_columns):
        rows = res.feature_probabilities[10 * b:10 * (b + 1)]
        assert np.all(rows[:, k:] == 0)


@pytest.mark.parametrize("seed", range(3))
def test_one_feature_opens_exactly_one_column_in_the_first_batch_and_none_after(seed):
    """Twelve rows, each one image plus small noise, in batches of three. The first batch
    uses its only column, so one column is opened and the batch refitted: the image then
    sits in one column and the new last one is spare. Later batches reuse that column and
    leave the last spare, so they open none: 2 columns after every batch, with room for 6.
    (A check of the wrong column, the first instead of the last, opens columns until the
    cap in every batch.) Measured on 50 seeds at alpha = 0.3: 2, 2, 2, 2 every time; a
    larger alpha lets a random start of q(Z_b) open a spare column now and then."""
    image = np.array([2.0, -1.0, 1.5])
    X = image + 0.1 * np.random.default_rng(seed).normal(size=(12, 3))
    res = stream_variational(X, np.random.default_rng(seed), alpha=0.3, sigma_x=0.1,
                             sigma_a=1.0, n_features=6, batch_size=3)
    assert res.n_columns.tolist() == [2, 2, 2, 2]
    used = res.feature_probabilities.sum(axis=0)
    assert used[0] == pytest.approx(12.0, abs=0.01) and used[1] < 0.01


def test_the_cap_binds_without_stopping_the_stream():
    from ibp_lab.datasets import simulate_four_feature_data

    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), sigma_x=0.5)
    res = stream_variational(X, np.random.default_rng(1), alpha=1.0, sigma_x=0.5,
                             sigma_a=1.0, n_features=2, batch_size=10)
    assert res.n_columns.max() == 2 and res.feature_probabilities.shape == (100, 2)


def test_same_seed_same_stream():
    X = _tiny(3, n_rows=9)
    a, b = (stream_variational(X, **HYPER, batch_size=2, rng=np.random.default_rng(4))
            for _ in range(2))
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.feature_probabilities, b.feature_probabilities)
