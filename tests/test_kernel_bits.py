"""The compiled sweep's faster paths give the same bits as the plain loops (issue 54).

The sweep was restructured for speed (row ``i``'s shared features listed once, the
flips' dot products computed four features at a time and only recomputed after an
accepted flip, loop invariants hoisted). Every such change must leave each seeded
chain draw for draw the same, so the book's numbers do not move. Checked here:

* whole trajectories of :func:`ibp_lab._kernel.run_sweeps` against SHA-256 digests
  recorded with the kernel before the restructuring (digits, tempered, fixed scan,
  three-parameter, tiny and large scales, one row, one pixel);
* each restructured step against the plain loop it replaces, bit for bit
  (``assert_array_equal``, never a tolerance).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from ibp_lab import _hyper, _kernel
from ibp_lab.datasets import load_digit_sets


def trajectory_digest(X, Z0, alpha, sigma_x, sigma_a, n_sweeps, seed, random_scan=True,
                      inverse_temperature=1.0, beta=1.0, discount=0.0):
    """SHA-256 (16 hex digits) of every sweep's ``Z`` and ``K+``, then two more uniforms."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    N = X.shape[0]
    rate = float(_hyper.stable_new_dish_rate(alpha, beta, discount, N - 1.0))
    log_odds_prior = _kernel.prior_log_odds_table(N, beta, discount)
    Zb, K = _kernel.to_buffer(Z0)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    for _ in range(n_sweeps):
        k_trace, type_trace = np.zeros(1, np.int64), np.zeros((0, 1), np.int32)
        Zb, K = _kernel.run_sweeps(X, Zb, K, rate, log_odds_prior, sigma_x, sigma_a, 1, rng,
                                   random_scan, k_trace, type_trace, inverse_temperature)
        digest.update(np.ascontiguousarray(Zb[:, :K]).tobytes())
        digest.update(str(K).encode())
    digest.update(rng.random(2).tobytes())  # the chain drew exactly as many uniforms
    return digest.hexdigest()[:16]


def problems():
    """(name, X, Z0, alpha, sigma_x, sigma_a, n_sweeps, options), in a fixed order."""
    g = np.random.default_rng(2026)

    def start(n_rows, n_features):
        return (g.random((n_rows, n_features)) < 0.5).astype(np.int8)

    digits = load_digit_sets().train
    return [
        ("digits", digits, np.ones((300, 1), np.int8), 2.5, 0.25, 0.3, 12, {}),
        ("digits tempered", digits, np.ones((300, 1), np.int8), 2.5, 0.25, 0.3, 6,
         {"inverse_temperature": 0.4}),
        ("digits fixed scan", digits[:60], np.ones((60, 2), np.int8), 1.0, 0.3, 0.5, 10,
         {"random_scan": False}),
        ("three-parameter", g.normal(size=(30, 6)), start(30, 3), 2.0, 0.7, 1.0, 40,
         {"beta": 2.5, "discount": 0.3}),
        ("tiny sigma_x", g.normal(size=(15, 4)), start(15, 3), 2.0, 1e-3, 1.0, 30, {}),
        ("tiny sigma_a", g.normal(size=(15, 4)), start(15, 3), 2.0, 0.5, 1e-3, 30, {}),
        ("large scales", 50 * g.normal(size=(15, 4)), start(15, 3), 2.0, 30.0, 40.0, 30, {}),
        ("one row", g.normal(size=(1, 3)), np.ones((1, 2), np.int8), 2.0, 0.5, 1.0, 200, {}),
        ("one pixel", g.normal(size=(25, 1)), start(25, 3), 3.0, 0.4, 1.0, 60, {}),
    ]


#: Recorded with the kernel of commit 6e2080e (before issue 54's restructuring).
RECORDED = {
    "digits": "6e2280bbdfb99b51",
    "digits tempered": "a1b9fe9bb533a3c4",
    "digits fixed scan": "e112e22fe6993e2a",
    "three-parameter": "752217ef03766b98",
    "tiny sigma_x": "8adb3f0c560c0c01",
    "tiny sigma_a": "dd1056e4216945d3",
    "large scales": "c5d348f3d79651c0",
    "one row": "cc5a80da9074cd49",
    "one pixel": "0c0071cef9f20628",
}


def test_seeded_trajectories_are_those_recorded_before_the_restructuring():
    found = {name: trajectory_digest(X, Z0, alpha, sx, sa, n, 7, **options)
             for name, X, Z0, alpha, sx, sa, n, options in problems()}
    assert found == RECORDED


# --------------------------------------------------------------------------------------
# each step against the plain loop it replaces
# --------------------------------------------------------------------------------------


def row_out_over_all_features(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y):
    """:func:`ibp_lab._kernel.row_out` as plain loops over every feature (the kernel before
    issue 54), in plain Python: the reference for the bits. Rank-one branch only."""
    D = X.shape[1]
    x = X[i]
    n_own = 0
    for a in range(K):
        zf[a] = Zb[i, a]
        m[a] -= zf[a]
        if m[a] == 0.0:
            n_own += 1
    rho = r / (n_own + r)
    zw = 0.0
    for a in range(K):
        acc = 0.0
        if m[a] > 0.0:
            for b in range(K):
                if zf[b] != 0.0 and m[b] > 0.0:
                    acc += Minv[a, b]
        w[a] = acc
        zw += zf[a] * acc
    denom = 1.0 - rho * zw
    assert denom >= _kernel.MIN_DOWNDATE_DENOMINATOR
    y[:D] = 0.0
    for a in range(K):
        if m[a] > 0.0:
            for d in range(D):
                Abar[a, d] -= rho * w[a] * x[d]
                if zf[a] != 0.0:
                    y[d] += Abar[a, d]
    for a in range(K):
        if m[a] > 0.0:
            coef = rho * w[a] / denom
            for b in range(K):
                if m[b] > 0.0:
                    Minv[a, b] += coef * w[b]
            for d in range(D):
                Abar[a, d] += coef * y[d]
            Pz[a] = w[a] / denom
        else:
            for b in range(K):
                Minv[a, b] = 0.0
                Minv[b, a] = 0.0
            Minv[a, a] = 1.0 / r
            for d in range(D):
                Abar[a, d] = 0.0
            Pz[a] = 1.0 / r
    q = zw / denom
    rr = 0.0
    for d in range(D):
        acc = x[d]
        for a in range(K):
            if zf[a] != 0.0 and m[a] > 0.0:
                acc -= Abar[a, d]
        resid[d] = acc
        rr += acc * acc
    return q, rr, n_own * sa2


def sweep_buffers(X, Z, r):
    N, D = X.shape
    K = Z.shape[1]
    cap = K + 3
    Zb = np.zeros((N, cap), np.int8)
    Zb[:, :K] = Z
    b = dict(Zb=Zb, Minv=np.zeros((cap, cap)), Abar=np.zeros((cap, D)), m=np.zeros(cap),
             zf=np.zeros(cap), w=np.zeros(cap), Pz=np.zeros(cap), resid=np.zeros(D),
             y=np.zeros(D))
    _kernel.refresh(X, Zb, K, r, b["Minv"], b["Abar"], b["m"])
    return b


@pytest.mark.parametrize("seed", range(12))
def test_row_out_gives_the_bits_of_the_loops_over_all_features(seed):
    """Listed features, hoisted products, the unconditional ``Minv`` row update: same bits."""
    rng = np.random.default_rng(seed)
    N, K, D = 9, 6, 5
    Z = (rng.random((N, K)) < 0.45).astype(np.int8)
    Z[0, :2] = 1  # row 0 owns two singletons whenever no other row owns column 0 or 1
    Z[1:, 0] = 0
    X = rng.normal(size=(N, D))
    r = rng.choice([0.05, 0.3, 2.0])
    for i in range(N):
        fast, plain = sweep_buffers(X, Z, r), sweep_buffers(X, Z, r)
        on = np.zeros(K + 3, np.int64)
        got = _kernel.row_out_listing(i, X, fast["Zb"], K, r, 0.7, fast["Minv"], fast["Abar"],
                                      fast["m"], fast["zf"], fast["w"], fast["Pz"],
                                      fast["resid"], fast["y"], on)
        expected = row_out_over_all_features(i, X, plain["Zb"], K, r, 0.7, plain["Minv"],
                                             plain["Abar"], plain["m"], plain["zf"],
                                             plain["w"], plain["Pz"], plain["resid"],
                                             plain["y"])
        assert got == expected
        for name in ("Minv", "Abar", "m", "zf", "w", "Pz", "resid"):
            np.testing.assert_array_equal(fast[name], plain[name], err_msg=name)
        listed = [a for a in range(K) if Z[i, a] and plain["m"][a] > 0]
        np.testing.assert_array_equal(on[:len(listed)], listed)
        again = sweep_buffers(X, Z, r)
        assert _kernel.row_out(i, X, again["Zb"], K, r, 0.7, again["Minv"], again["Abar"],
                               again["m"], again["zf"], again["w"], again["Pz"],
                               again["resid"], again["y"]) == expected


@pytest.mark.parametrize("n_listed", [0, 1, 3, 4, 5, 8, 11])
def test_flip_dots_are_the_sums_of_flip_changes(n_listed):
    """Four at a time or one at a time, from any start: the sums of ``flip_changes``."""
    rng = np.random.default_rng(n_listed)
    K, D = 12, 7
    Abar, resid = rng.normal(size=(K, D)), rng.normal(size=D)
    Minv, Pz = rng.normal(size=(K, K)), rng.normal(size=K)
    order = rng.permutation(K)[:n_listed].astype(np.int64)
    for start in range(n_listed + 1):
        dots, squares = np.full(K, np.nan), np.full(K, np.nan)
        _kernel.flip_dots(order, start, n_listed, D, Abar, resid, dots, squares)
        assert np.isnan(dots[:start]).all() and np.isnan(dots[n_listed:]).all()
        for j in range(start, n_listed):
            k, sign = order[j], rng.choice([-1.0, 1.0])
            rr, q = rng.normal(), rng.normal()
            assert (_kernel.flipped(rr, q, sign, dots[j], squares[j], Pz[k], Minv[k, k])
                    == _kernel.flip_changes(k, sign, D, Minv, Abar, Pz, resid, rr, q))


def test_flip_log_odds_from_hoisted_terms_is_flip_log_odds():
    """Compiled against compiled (``.py_func`` takes NumPy's own ``log``, not libm's)."""
    rng = np.random.default_rng(5)
    for _ in range(500):
        rr, rr_flip = rng.exponential(3.0, size=2)
        q, q_flip = rng.exponential(0.5, size=2)
        extra, sx2 = rng.choice([0.0, 0.09, 1.7]), rng.exponential(0.3)
        D, prior, b = int(rng.integers(1, 60)), rng.normal(), rng.choice([1.0, 0.37])
        var_now = sx2 * (1.0 + q) + extra
        assert (_kernel.flip_log_odds_from(var_now, rr / var_now, rr_flip, q_flip, extra, sx2,
                                           D, prior, b)
                == _kernel.flip_log_odds(rr, rr_flip, q, q_flip, extra, sx2, D, prior, b))


def test_at_least_keeps_a_long_enough_buffer():
    buf = np.empty(8)
    assert _kernel.at_least(buf, 8) is buf
    bigger = _kernel.at_least(buf, 9)
    assert bigger.shape[0] >= 9


@pytest.mark.parametrize("random_scan", [True, False])
def test_update_row_row_by_row_is_the_compiled_sweep(random_scan):
    """The public composition (:func:`~ibp_lab._kernel.update_row`, from a short ``buf``
    and buffers that must grow) draws what the sweep's loop of ``draw_row``, ``grow``,
    ``place_row`` draws."""
    g = np.random.default_rng(11)
    X = g.normal(size=(12, 3))
    Z0 = (g.random((12, 2)) < 0.5).astype(np.int8)
    N, D = X.shape
    sigma_x, sigma_a, alpha = 0.5, 1.0, 3.0
    sx2, sa2 = sigma_x**2, sigma_a**2
    r = sx2 / sa2
    rate = float(_hyper.stable_new_dish_rate(alpha, 1.0, 0.0, N - 1.0))
    log_odds_prior = _kernel.prior_log_odds_table(N, 1.0, 0.0)
    expected, K = _kernel.to_buffer(Z0)
    rng = np.random.default_rng(3)
    for _ in range(5):
        k_trace, type_trace = np.zeros(1, np.int64), np.zeros((0, 1), np.int32)
        expected, K = _kernel.run_sweeps(X, expected, K, rate, log_odds_prior, sigma_x,
                                         sigma_a, 1, rng, random_scan, k_trace, type_trace)
    Zb, K_row = _kernel.to_buffer(Z0)
    Zb = np.ascontiguousarray(Zb[:, :max(K_row, 1)])  # no spare column: births must grow it
    rng_rows = np.random.default_rng(3)
    for _ in range(5):
        cap = Zb.shape[1]
        Minv, Abar, m = np.zeros((cap, cap)), np.zeros((cap, D)), np.zeros(cap)
        zf, w, Pz, order = np.zeros(cap), np.zeros(cap), np.zeros(cap), np.zeros(cap, np.int64)
        _kernel.refresh(X, Zb, K_row, r, Minv, Abar, m)
        buf = np.empty(4)
        for i in range(N):
            Zb, K_row, Minv, Abar, m, zf, w, Pz, order, buf = _kernel.update_row(
                i, X, Zb, K_row, Minv, Abar, m, zf, w, Pz, order, np.zeros(D), np.zeros(D),
                rng_rows, sx2, sa2, r, log_odds_prior, rate, random_scan, buf)
    np.testing.assert_array_equal(Zb[:, :K_row], expected[:, :K])
    assert rng_rows.random() == rng.random()


def flip_probability(log_odds):
    """``1 / (1 + exp(-log_odds))`` with libm's ``exp``, as compiled (0 where it overflows)."""
    try:
        return 1.0 / (1.0 + math.exp(-log_odds))
    except OverflowError:
        return 0.0


def test_flip_accepted_decides_as_the_exact_probability():
    """The shortcut (bounds on the log-odds, no ``exp`` or ``log``) takes the decision of
    ``u < 1 / (1 + exp(-log_odds))``, also for log-odds near 0 and uniforms next to the
    probability."""
    rng = np.random.default_rng(54)
    edges = np.array([0.0, 2.0 ** -9, np.nextafter(2.0 ** -9, 0.0), 1.0 - 2.0 ** -9,
                      np.nextafter(1.0 - 2.0 ** -9, 1.0), 1e-4, 0.5, 0.9995, 1.0 - 2.0 ** -53])
    n_shortcut = 0
    for _ in range(4000):
        rr, rr_flip = rng.exponential(rng.choice([0.1, 3.0, 1e4]), size=2)
        q, q_flip = rng.exponential(0.5, size=2)
        extra = rng.choice([0.0, 0.09, 1.7])
        sx2 = rng.choice([rng.exponential(0.3), 1e-6])  # 1e-6: fits of 1e9 that cancel
        D, b = int(rng.integers(1, 60)), rng.choice([1.0, 0.37])
        var_now = sx2 * (1.0 + q) + extra
        fit_now = rr / var_now
        exact = _kernel.flip_log_odds_from(var_now, fit_now, rr_flip, q_flip, extra, sx2, D,
                                           0.0, b)
        # priors that put the log-odds at, around and far from 0 and +-7
        for prior in (rng.normal(), 7.0 - exact, -7.0 - exact, 7.0 - exact + 1e-12,
                      -7.0 - exact - 1e-12, -exact, 1e-9 - exact, 30.0 * rng.normal()):
            low, high = _kernel.flip_log_odds_bounds(var_now, fit_now, rr_flip, q_flip, extra,
                                                     sx2, D, prior, b)
            log_odds = _kernel.flip_log_odds_from(var_now, fit_now, rr_flip, q_flip, extra,
                                                  sx2, D, prior, b)
            assert low <= log_odds <= high
            n_shortcut += abs(low) > 7.0 or abs(high) > 7.0
            p = flip_probability(log_odds)  # and uniforms next to the probability
            near = [p, np.nextafter(p, 0.0), np.nextafter(p, 1.0), p * (1 - 1e-9),
                    p * (1 + 1e-9), p * (1 - 1e-12)]
            for u in np.concatenate([edges, np.clip(near, 0.0, 1.0 - 2.0 ** -53),
                                     rng.random(3)]):
                assert (_kernel.flip_accepted(u, var_now, fit_now, rr_flip, q_flip, extra,
                                              sx2, D, prior, b)
                        == (u < flip_probability(log_odds)))
    assert n_shortcut > 1000  # the shortcut was exercised


def test_exp_at_least_is_below_exp():
    y = np.concatenate([[0.0, 1e-300, 1e-8], np.linspace(0.0, 700.0, 2001)])
    assert all(_kernel.exp_at_least(v) <= math.exp(v) for v in y)


def test_flip_accepted_falls_back_on_a_ratio_that_is_not_positive():
    """``(nan, nan)`` bounds, and the exact formula decides (as it always did)."""
    low, high = _kernel.flip_log_odds_bounds(1.0, 0.5, 0.3, -3.0, 0.0, 1.0, 4, 0.0, 1.0)
    assert np.isnan(low) and np.isnan(high)
    assert not _kernel.flip_accepted(0.5, 1.0, 0.5, 0.3, -3.0, 0.0, 1.0, 4, 0.0, 1.0)
