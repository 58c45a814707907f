"""Collapsed Gibbs sampling for the linear-Gaussian IBP model.

The feature images ``A`` are integrated out (:mod:`ibp_lab.linear_gaussian`),
so the sampler only moves the binary matrix ``Z``, plus, if asked, the
hyperparameters ``alpha``, ``sigma_a`` and ``sigma_x``.

Public functions:

- :func:`gibbs_sweep` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0) -> Z``:
  one sweep over the rows; returns a new ``int8`` matrix without empty columns.
- :func:`run_chain` ``(X, n_sweeps, rng, *, Z0=None, alpha=1.0, sigma_x=0.25,
  sigma_a=0.3, beta=1.0, update_alpha=True, update_sigma_a=True,
  update_sigma_x=False, alpha_prior=(1.0, 1.0), thin=1, burn=0, n_scale_steps=3,
  progress=False) -> ChainResult``: sweeps plus hyperparameter updates. ``result.trace`` is an
  ``xarray.Dataset`` over ``draw`` (one entry per sweep, warm-up included) with
  ``k_plus``, ``alpha``, ``sigma_x``, ``sigma_a``, ``log_likelihood`` and
  ``log_joint``; ``result.samples`` holds the kept ``Z`` (after ``burn``, every
  ``thin``-th sweep), ``result.sample_draws`` their draw numbers and
  ``result.posterior_trace`` the trace at those draws; ``result.Z`` and the
  final hyperparameters let a chain be continued.
- :func:`run_chains` ``(X, n_chains, n_sweeps, rng, *, Z0=None, **run_chain_options)
  -> (InferenceData, list[ChainResult])``: independent chains (child generators
  from ``rng.spawn``); the ``InferenceData`` has a ``posterior`` group over
  ``(chain, draw)`` with the kept sweeps and a ``warmup_posterior`` group with the
  first ``burn`` sweeps, ready for ``az.rhat`` and ``az.ess``.
- :func:`k_plus_trace` ``(X, n_sweeps, rng, *, alpha, sigma_x, sigma_a, beta=1.0,
  Z0=None, scan_order="random", return_types=False)``: many sweeps at fixed
  hyperparameters entirely in compiled code, recording only ``K+`` (and, for
  ``N <= 6`` rows, the class of every state): what a comparison with
  :mod:`ibp_lab.exact` needs.

The sweep
---------
Rows are visited in order ``0, ..., N-1``. For row ``i``, with the other rows
given (Griffiths & Ghahramani 2011; two-parameter prior of Ghahramani,
Griffiths & Sollich 2007):

1. Take row ``i`` out: a Sherman-Morrison downdate of ``M^-1``
   (``M = Z^T Z + (sigma_x / sigma_a)^2 I``) and of the posterior mean of the
   features, done on the shared features only, the row's singletons being set
   to their exact values (this avoids dividing by a number of order
   ``(sigma_x / sigma_a)^2``; see the comment in ``_update_row``). Given the
   other rows, ``x_i ~ Normal(z_i Abar, sigma_x^2 (1 + z_i P z_i^T) I)``
   with ``P = M_-i^-1``. Flipping one entry changes the residual and the
   quadratic form by rank-one amounts, so each flip costs ``O(K + D)``.
2. Visit the features that other rows own (``m_-i,k > 0``) **in a fresh random
   order** and resample each ``z_ik`` from its conditional, with prior
   ``P(z_ik = 1) = m_-i,k / (beta + N - 1)``. Row ``i``'s singletons (features
   no other row owns) stay in the model meanwhile, each adding ``sigma_a^2``
   to the predictive variance.
3. Resample the number of singletons from its exact conditional: prior
   Poisson(``alpha beta / (beta + N - 1)``) times the predictive likelihood,
   summed until a bound on the rest is below ``e^-40`` of the largest term.
   Kept singletons stay in their columns; extra ones are appended.
4. Put row ``i`` back with a Sherman-Morrison update.

Why the random order: each single-site update leaves the posterior invariant,
but visiting the features in *column order* makes the choice of which feature
is updated depend on the state, because new features are appended at the end
and so their position carries information about the chain's history
(Griffiths & Ghahramani 2011, footnote 5). That sampler is not a valid MCMC
kernel and its bias is measurable on three rows (``scan_order="fixed"`` in
:func:`k_plus_trace` reproduces it for teaching). With a fresh uniformly random
order, which feature comes when no longer depends on the state: the flips are
Gibbs updates of the posterior over matrices whose columns are in random order,
the singleton step is an exact conditional on the equivalence classes, and the
sweep, a composition of such kernels, leaves the posterior over classes
invariant. The tests check it against exact enumeration.

Implementation: the sweep is compiled with numba (``cache=True``: the first call
in a fresh environment compiles for 15-25 seconds, later processes load the
compiled code from numba's cache in well under a second). About 1 ms per sweep on
the book's 300 digits with 16 features; about 2 microseconds on three rows.
``M^-1`` and the posterior mean are recomputed from scratch at the start of
each sweep so rounding errors cannot accumulate (and for a single row whenever
removing it leaves nearly dependent columns). Limits that keep the sweep accurate
and bounded: ``sigma_x / sigma_a >= MIN_NOISE_RATIO``, a prior expected number of
features ``alpha * H_N <= MAX_EXPECTED_FEATURES`` and at most ``MAX_FEATURES``
features at any time; beyond them a ``ValueError`` says which. The same algorithm written
plainly in NumPy, recomputing everything for each row, is
:func:`_gibbs_sweep_reference`; the tests check that both give identical chains
from the same seed.

The chain runner with hyperparameter updates is :mod:`ibp_lab.chains`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ibp_lab._checks import check_count, check_data_matrix, check_flag, check_rng
from ibp_lab._hyper import (
    MAX_EXPECTED_FEATURES,
    MAX_FEATURES,
    MIN_NOISE_RATIO,
    check_feature_matrix,
    check_hyperparameters,
)

__all__ = ["gibbs_sweep", "k_plus_trace"]

# Stop summing the singleton distribution once the rest is below e^-40 of its largest term.
_LOG_TAIL_TOLERANCE = -40.0
# Largest number of rows for which k_plus_trace can record the class of each state.
_MAX_ROWS_FOR_TYPES = 6
# MAX_FEATURES (most features the sampler will hold: a row whose data lie far beyond the
# scales can ask for millions of new features), MIN_NOISE_RATIO and MAX_EXPECTED_FEATURES
# live in ibp_lab._hyper, shared with every sampler; they stay importable from here.
_TOO_MANY_FEATURES = (
    "the sampler would need more than MAX_FEATURES = 2500 features: the data are far "
    "larger than sigma_a and sigma_x; rescale X or use larger scales"
)
#: Most sweeps one call runs: every sweep adds entries to the traces kept in memory.
MAX_SWEEPS = 10**8
#: Most entries of the per-sweep class record of :func:`k_plus_trace` (4 bytes each).
_MAX_TYPE_ENTRIES = 10**8
# Below this denominator the rank-one removal of a row would amplify rounding errors by
# more than 1e3; the row's M_-i^-1 is then recomputed from scratch.
_MIN_DOWNDATE_DENOMINATOR = 1e-3


# --------------------------------------------------------------------------------------
# compiled kernel
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _grow(Zb, Minv, Abar, m, zf, v, Pz, order, needed):
    """Reallocate the column buffers so that they hold at least ``needed`` columns."""
    cap = Zb.shape[1]
    if needed <= cap:
        return Zb, Minv, Abar, m, zf, v, Pz, order
    new = max(2 * cap, needed)
    Zb2 = np.zeros((Zb.shape[0], new), np.int8)
    Zb2[:, :cap] = Zb
    Minv2 = np.zeros((new, new))
    Minv2[:cap, :cap] = Minv
    Abar2 = np.zeros((new, Abar.shape[1]))
    Abar2[:cap] = Abar
    m2 = np.zeros(new)
    m2[:cap] = m
    zf2 = np.zeros(new)
    zf2[:cap] = zf
    Pz2 = np.zeros(new)
    Pz2[:cap] = Pz
    return Zb2, Minv2, Abar2, m2, zf2, np.zeros(new), Pz2, np.zeros(new, np.int64)


@njit(cache=True)
def _refresh(X, Zb, K, r, Minv, Abar, m):
    """Recompute ``M^-1``, the posterior mean ``Abar = M^-1 Z^T X`` and the counts ``m``.

    Hand-written loops (a Cholesky factorisation, then ``M^-1 = L^-T L^-1``):
    for the small ``K`` of this model they beat LAPACK's per-call overhead.
    """
    N, D = X.shape
    W = np.zeros((K, K))  # M, then its Cholesky factor L, then L^-1 (lower triangles)
    ZtX = np.zeros((K, D))
    active = np.empty(K, np.int64)
    for a in range(K):
        m[a] = 0.0
    for i in range(N):
        n_active = 0
        for a in range(K):
            if Zb[i, a]:
                active[n_active] = a
                n_active += 1
        for p in range(n_active):
            a = active[p]
            m[a] += 1.0
            for d in range(D):
                ZtX[a, d] += X[i, d]
            for s in range(p + 1):
                W[a, active[s]] += 1.0  # lower triangle: active is increasing
    for a in range(K):
        W[a, a] += r
    for j in range(K):  # Cholesky, M = L L^T
        acc = W[j, j]
        for p in range(j):
            acc -= W[j, p] * W[j, p]
        W[j, j] = math.sqrt(acc)
        for i in range(j + 1, K):
            acc = W[i, j]
            for p in range(j):
                acc -= W[i, p] * W[j, p]
            W[i, j] = acc / W[j, j]
    for j in range(K):  # invert L in place, column by column
        W[j, j] = 1.0 / W[j, j]
        for i in range(j + 1, K):
            acc = 0.0
            for p in range(j, i):
                acc -= W[i, p] * W[p, j]
            W[i, j] = acc / W[i, i]
    for a in range(K):  # M^-1 = L^-T L^-1
        for b in range(a + 1):
            acc = 0.0
            for p in range(a, K):
                acc += W[p, a] * W[p, b]
            Minv[a, b] = acc
            Minv[b, a] = acc
    for a in range(K):
        for d in range(D):
            Abar[a, d] = 0.0
        for b in range(K):
            mab = Minv[a, b]
            for d in range(D):
                Abar[a, d] += mab * ZtX[b, d]


@njit(cache=True)
def _drop_columns(Zb, K, keep, Minv, Abar, m, zf, Pz):
    """Remove the columns with ``keep[a] == False`` from every buffer, in one pass.

    The kept columns move left and keep their order. Returns the new ``K``.
    """
    n_kept = 0
    for a in range(K):
        if keep[a]:
            if n_kept != a:
                Zb[:, n_kept] = Zb[:, a]
                for d in range(Abar.shape[1]):
                    Abar[n_kept, d] = Abar[a, d]
                m[n_kept] = m[a]
                zf[n_kept] = zf[a]
                Pz[n_kept] = Pz[a]
            keep[n_kept] = a  # reuse the mask as the list of kept indices
            n_kept += 1
    # In place is safe: entry (p, q) reads (kept[p], kept[q]) with kept[p] >= p and
    # kept[q] >= q, which row-by-row writing has not yet overwritten.
    for p in range(n_kept):
        for q in range(n_kept):
            Minv[p, q] = Minv[keep[p], keep[q]]
    return n_kept


@njit(cache=True)
def _sample_new_dishes(u, rate, v0, sa2, rr, D, buf):
    """Draw the number of row-``i`` singletons from its exact conditional.

    Weight of ``s`` singletons: ``rate^s / s!`` (the Poisson prior) times the
    predictive density with variance ``v_s = v0 + s sa2`` and squared residual
    ``rr``, ``f(v) = -D/2 log v - rr / (2 v)``. ``f`` rises up to ``v* = rr / D``
    and falls after it, so for ``t > s`` it is at most ``f(max(v_{s+1}, v*))``;
    once ``s + 2 >= 2 rate`` the Poisson weights beyond ``s`` sum to less than
    ``2 rate^(s+1) / (s+1)!``. Summing stops when that bound on the rest is below
    ``e^-40`` of the largest weight. Returns ``(s, buf)`` (``buf`` may grow).
    """
    half_D = 0.5 * D
    log_rate = math.log(rate)
    v_star = rr / D
    f_star = -half_D * math.log(v_star) - rr / (2.0 * v_star) if v_star > v0 else -np.inf
    v = v0
    log_v = math.log(v)
    log_fact = 0.0  # log s!
    lw_max = -np.inf
    s = 0
    while True:
        if s > MAX_FEATURES:
            raise ValueError(_TOO_MANY_FEATURES)
        if s == buf.shape[0]:
            bigger = np.empty(2 * s)
            bigger[:s] = buf
            buf = bigger
        lw = s * log_rate - log_fact - half_D * log_v - rr / (2.0 * v)
        buf[s] = lw
        lw_max = max(lw_max, lw)
        v_next = v + sa2
        log_v_next = math.log(v_next)
        log_fact_next = log_fact + math.log(s + 1.0)
        if s + 2 >= 2.0 * rate:
            f_bound = f_star if v_next < v_star else -half_D * log_v_next - rr / (2.0 * v_next)
            rest = (s + 1) * log_rate - log_fact_next + 0.6931471805599453 + f_bound
            if rest < lw_max + _LOG_TAIL_TOLERANCE:
                break
        s += 1
        v = v_next
        log_v = log_v_next
        log_fact = log_fact_next
    total = 0.0
    for t in range(s + 1):
        buf[t] = math.exp(buf[t] - lw_max)
        total += buf[t]
    target = u * total
    cumulative = 0.0
    for t in range(s + 1):
        cumulative += buf[t]
        if target < cumulative:
            return t, buf
    return s, buf


@njit(cache=True)
def _update_row(i, X, Zb, K, Minv, Abar, m, zf, v, Pz, order, resid, y, rng,
                sx2, sa2, r, log_odds_prior, rate, random_scan, buf):
    """Resample row ``i`` of ``Z``: shared features, then the number of singletons."""
    D = X.shape[1]
    half_D = 0.5 * D
    x = X[i]

    # 1. Take row i out. Its singletons (columns only row i owns) get their exact values
    #    without row i: P = M_-i^-1 is 1 / r on their diagonal and 0 elsewhere in their
    #    rows and columns, and their posterior mean is 0. The shared block then follows
    #    from M^-1 by one well-conditioned rank-one step. Eliminating the n singletons
    #    from M Abar = Z^T X shows that the shared block B of M^-1 is the inverse of
    #    S + rho z z^T, with S = Z_-i^T Z_-i + r I (shared part), z = z_i (shared part)
    #    and rho = r / (n + r), and that B^-1 Abar_s = b_-i + rho z x. With w = B z and
    #    zw = z.w, Sherman-Morrison gives P_ss = B + rho w w^T / (1 - rho zw) and
    #    Abar_-i = Y + rho w (z^T Y) / (1 - rho zw) with Y = Abar_s - rho w x. (With no
    #    singletons, rho = 1 and this is the usual downdate.) The usual downdate divides
    #    by c = 1 - z M^-1 z, about r / n when the row has singletons: for a small
    #    sigma_x / sigma_a that would amplify rounding errors beyond repair.
    n_own = 0
    for a in range(K):
        zf[a] = Zb[i, a]
        m[a] -= zf[a]  # owners other than row i
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
        v[a] = acc  # w, zero on the singletons
        zw += zf[a] * acc
    denom = 1.0 - rho * zw
    if denom < _MIN_DOWNDATE_DENOMINATOR:
        # Removing row i leaves nearly dependent columns (two features that only row i
        # tells apart, say): the rank-one step would lose too many digits. Rare; recompute
        # M_-i^-1 and the posterior mean without row i from scratch instead.
        for a in range(K):
            Zb[i, a] = 0
        _refresh(X, Zb, K, r, Minv, Abar, m)
        q = 0.0
        for a in range(K):
            Zb[i, a] = np.int8(zf[a])
            acc = 1.0 / r
            if m[a] > 0.0:
                acc = 0.0
                for b in range(K):
                    if zf[b] != 0.0 and m[b] > 0.0:
                        acc += Minv[a, b]
                q += zf[a] * acc
            Pz[a] = acc
    else:
        for d in range(D):
            y[d] = 0.0  # z^T Y
        for a in range(K):
            if m[a] > 0.0:
                for d in range(D):
                    Abar[a, d] -= rho * v[a] * x[d]
                    if zf[a] != 0.0:
                        y[d] += Abar[a, d]
        for a in range(K):
            if m[a] > 0.0:
                coef = rho * v[a] / denom
                for b in range(K):
                    if m[b] > 0.0:
                        Minv[a, b] += coef * v[b]
                for d in range(D):
                    Abar[a, d] += coef * y[d]  # posterior mean without row i
                Pz[a] = v[a] / denom  # (P z)_a = (P_ss z)_a
            else:
                for b in range(K):
                    Minv[a, b] = 0.0
                    Minv[b, a] = 0.0
                Minv[a, a] = 1.0 / r
                for d in range(D):
                    Abar[a, d] = 0.0
                Pz[a] = 1.0 / r
        q = zw / denom  # z P z^T over the shared features only
    rr = 0.0
    for d in range(D):
        acc = x[d]
        for a in range(K):
            if zf[a] != 0.0 and m[a] > 0.0:
                acc -= Abar[a, d]
        resid[d] = acc  # x_i minus its predictive mean given the other rows
        rr += acc * acc
    # each singleton adds 1 / r to z P z^T, that is sigma_a^2 to the predictive variance
    extra = n_own * sa2

    # 2. Shared features, in a fresh uniformly random order (Fisher-Yates).
    n_shared = 0
    n_single = 0
    for a in range(K):
        if m[a] > 0.0:
            order[n_shared] = a
            n_shared += 1
        else:
            n_single += 1
    if random_scan:
        for j in range(n_shared - 1, 0, -1):
            t = int(rng.random() * (j + 1))
            tmp = order[j]
            order[j] = order[t]
            order[t] = tmp
    for j in range(n_shared):
        k = order[j]
        sign = 1.0 - 2.0 * zf[k]  # +1 switches feature k on, -1 off
        a_dot = 0.0
        a_sq = 0.0
        for d in range(D):
            a_dot += Abar[k, d] * resid[d]
            a_sq += Abar[k, d] * Abar[k, d]
        rr_flip = rr - 2.0 * sign * a_dot + a_sq
        q_flip = q + 2.0 * sign * Pz[k] + Minv[k, k]
        var_now = sx2 * (1.0 + q) + extra
        var_flip = sx2 * (1.0 + q_flip) + extra
        log_odds = (
            -half_D * math.log(var_flip / var_now)
            - 0.5 * (rr_flip / var_flip - rr / var_now)
            + sign * log_odds_prior[int(m[k])]
        )
        if rng.random() < 1.0 / (1.0 + math.exp(-log_odds)):
            zf[k] = 1.0 - zf[k]
            for b in range(K):
                Pz[b] += sign * Minv[k, b]  # P is symmetric
            for d in range(D):
                resid[d] -= sign * Abar[k, d]
            rr = rr_flip
            q = q_flip

    # 3. Singletons: q holds the shared features only; each singleton would add
    #    sigma_a^2 to the predictive variance (its posterior mean row is zero).
    var_shared = sx2 * (1.0 + q)
    n_new, buf = _sample_new_dishes(rng.random(), rate, var_shared, sa2, rr, D, buf)
    if K - n_single + n_new > MAX_FEATURES:
        raise ValueError(_TOO_MANY_FEATURES)

    # 4. Update the columns. Random scan: keep the first n_new old singletons in
    #    place (stable labels) and append any extra. Fixed scan (the heuristic):
    #    drop them all and append n_new at the end, as Griffiths & Ghahramani do.
    n_keep = min(n_new, n_single) if random_scan else 0
    if n_single > n_keep:
        keep = np.ones(K, np.int64)
        rank = 0
        for a in range(K):
            if m[a] == 0.0:
                keep[a] = 1 if rank < n_keep else 0
                rank += 1
        K = _drop_columns(Zb, K, keep, Minv, Abar, m, zf, Pz)
    n_add = n_new - n_keep
    if n_add > 0:
        Zb, Minv, Abar, m, zf, v, Pz, order = _grow(Zb, Minv, Abar, m, zf, v, Pz, order, K + n_add)
        for _ in range(n_add):
            Zb[:, K] = 0
            for b in range(K + 1):
                Minv[K, b] = 0.0
                Minv[b, K] = 0.0
            Minv[K, K] = 1.0 / r
            for d in range(D):
                Abar[K, d] = 0.0
            m[K] = 0.0
            zf[K] = 1.0
            Pz[K] = 1.0 / r
            K += 1

    # 5. Put row i back: w = P z, M^-1 = P - w w^T / (1 + z.w), and the posterior
    #    mean moves by w (x - z Abar_-i) / (1 + z.w).
    qf = 0.0
    for a in range(K):
        qf += zf[a] * Pz[a]
    c2 = 1.0 + qf
    for a in range(K):
        wa = Pz[a]
        for b in range(K):
            Minv[a, b] -= wa * Pz[b] / c2
        for d in range(D):
            Abar[a, d] += wa * resid[d] / c2
        m[a] += zf[a]
        Zb[i, a] = np.int8(zf[a])
    return Zb, K, Minv, Abar, m, zf, v, Pz, order, buf


@njit(cache=True)
def _run_sweeps(X, Zb, K, alpha, sigma_x, sigma_a, beta, n_sweeps, rng, random_scan,
                k_trace, type_trace):
    """Run ``n_sweeps`` sweeps on the column buffer ``Zb`` (first ``K`` columns used)."""
    N, D = X.shape
    sx2 = sigma_x * sigma_x
    sa2 = sigma_a * sigma_a
    r = sx2 / sa2
    # beta + (N - 1), never (beta + N) - 1: with one row and a tiny beta the latter is 0
    prior_denominator = beta + (N - 1.0)
    rate = alpha * beta / prior_denominator
    # prior log-odds of z_ik = 1 when m other rows own feature k: log m / (beta + N - 1 - m)
    log_odds_prior = np.zeros(N)
    for count in range(1, N):
        log_odds_prior[count] = math.log(count) - math.log((N - 1.0 - count) + beta)
    buf = np.empty(64)
    cap = Zb.shape[1]
    Minv = np.zeros((cap, cap))
    Abar = np.zeros((cap, D))
    m = np.zeros(cap)
    zf = np.zeros(cap)
    v = np.zeros(cap)
    Pz = np.zeros(cap)
    order = np.zeros(cap, np.int64)
    resid = np.zeros(D)
    y = np.zeros(D)
    record_types = type_trace.shape[0] > 0
    for t in range(n_sweeps):
        _refresh(X, Zb, K, r, Minv, Abar, m)
        for i in range(N):
            Zb, K, Minv, Abar, m, zf, v, Pz, order, buf = _update_row(
                i, X, Zb, K, Minv, Abar, m, zf, v, Pz, order, resid, y, rng,
                sx2, sa2, r, log_odds_prior, rate, random_scan, buf,
            )
        k_trace[t] = K
        if record_types:
            for a in range(K):
                value = 0
                for i in range(N):
                    value = 2 * value + Zb[i, a]
                type_trace[t, (1 << N) - 1 - value] += 1
    return Zb, K


def _to_buffer(Z: np.ndarray) -> tuple[np.ndarray, int]:
    """Copy ``Z`` (empty columns dropped) into a buffer with spare columns."""
    Z = Z[:, Z.any(axis=0)]
    K = Z.shape[1]
    Zb = np.zeros((Z.shape[0], max(2 * K, 8)), np.int8)
    Zb[:, :K] = Z
    return Zb, K


def _sweeps(X, Z, alpha, sigma_x, sigma_a, beta, n_sweeps, rng, *, random_scan=True,
            record_types=False):
    """Run validated inputs through the compiled kernel; return (Z, k_trace, type_trace)."""
    Zb, K = _to_buffer(Z)
    k_trace = np.zeros(n_sweeps, np.int64)
    n_types = 2 ** X.shape[0] - 1 if record_types else 1
    type_trace = np.zeros((n_sweeps if record_types else 0, n_types), np.int32)
    # C-contiguous float64 always: another memory layout would trigger a fresh compilation
    X = np.ascontiguousarray(X, dtype=np.float64)
    Zb, K = _run_sweeps(X, Zb, K, float(alpha), float(sigma_x), float(sigma_a), float(beta),
                        n_sweeps, rng, random_scan, k_trace, type_trace)
    return np.ascontiguousarray(Zb[:, :K]), k_trace, type_trace


# --------------------------------------------------------------------------------------
# the same sweep, written for reading
# --------------------------------------------------------------------------------------


def _new_dish_log_weights(rate, var_shared, sa2, rr, D):
    """Log weights of 0, 1, 2, ... singletons, up to where the rest is negligible.

    Same stopping rule as the compiled :func:`_sample_new_dishes`.
    """

    def f(var):  # log predictive density, up to a constant
        return -0.5 * D * math.log(var) - rr / (2 * var)

    v_star = rr / D  # f rises up to v_star and falls after it
    weights = []
    s = 0
    while True:
        weights.append(s * math.log(rate) - math.lgamma(s + 1) + f(var_shared + s * sa2))
        v_next = var_shared + (s + 1) * sa2
        f_bound = f(v_star) if v_next < v_star else f(v_next)
        rest = (s + 1) * math.log(rate) - math.lgamma(s + 2) + math.log(2.0) + f_bound
        if s + 2 >= 2 * rate and rest < max(weights) + _LOG_TAIL_TOLERANCE:
            return np.array(weights)
        s += 1


def _gibbs_sweep_reference(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0, random_scan=True):
    """The sweep in plain NumPy, recomputing the predictive distribution for every row.

    Slow (``O(K^3 + N K D)`` per row) but easy to read, and it draws exactly the
    same random numbers in the same order as the compiled kernel, so the two
    give the same chain from the same seed (the tests check this).
    """
    X = np.asarray(X, float)
    Z = np.asarray(Z, np.int8)
    Z = Z[:, Z.any(axis=0)].copy()
    N, D = X.shape
    sx2, sa2 = sigma_x**2, sigma_a**2
    rate = alpha * beta / (beta + (N - 1))
    for i in range(N):
        others = np.arange(N) != i
        Z_others = Z[others].astype(float)
        m = Z_others.sum(axis=0)
        # Posterior of the features given the other rows: mean Abar, covariance sx2 * P.
        P = np.linalg.inv(Z_others.T @ Z_others + (sx2 / sa2) * np.eye(Z.shape[1]))
        Abar = P @ Z_others.T @ X[others]

        def log_predictive(z, extra_var=0.0):
            var = sx2 * (1.0 + z @ P @ z) + extra_var
            resid = X[i] - z @ Abar
            return -0.5 * D * math.log(var) - resid @ resid / (2 * var)

        z = Z[i].astype(float)
        shared = np.flatnonzero(m > 0)
        singles = np.flatnonzero(m == 0)  # row i owns all of these
        order = shared.copy()
        if random_scan:
            for j in range(len(order) - 1, 0, -1):
                t = int(rng.random() * (j + 1))
                order[j], order[t] = order[t], order[j]
        for k in order:
            z_on, z_off = z.copy(), z.copy()
            z_on[k], z_off[k] = 1.0, 0.0
            log_odds_on = (math.log(m[k]) - math.log((N - 1 - m[k]) + beta)
                           + log_predictive(z_on) - log_predictive(z_off))
            # clipped: beyond it exp overflows, where the compiled kernel's value is 0
            p_flip = 1 / (1 + math.exp(min(-log_odds_on if z[k] == 0 else log_odds_on, 700.0)))
            if rng.random() < p_flip:
                z[k] = 1.0 - z[k]

        z_shared = z.copy()
        z_shared[singles] = 0.0
        resid = X[i] - z_shared @ Abar
        log_w = _new_dish_log_weights(rate, sx2 * (1 + z_shared @ P @ z_shared), sa2,
                                      float(resid @ resid), D)
        cumulative = np.cumsum(np.exp(log_w - np.logaddexp.reduce(log_w)))
        n_new = min(int(np.searchsorted(cumulative, rng.random(), side="right")), len(log_w) - 1)

        n_keep = min(n_new, len(singles)) if random_scan else 0
        keep = np.ones(Z.shape[1], bool)
        keep[singles[n_keep:]] = False
        Z[i] = z.astype(np.int8)
        Z = Z[:, keep]
        new_columns = np.zeros((N, n_new - n_keep), np.int8)
        new_columns[i] = 1
        Z = np.hstack([Z, new_columns])
    return Z


# --------------------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------------------


def _check_hyper(X, alpha, sigma_x, sigma_a, beta):
    """The shared door (:func:`ibp_lab._hyper.check_hyperparameters`), unpacked."""
    return tuple(check_hyperparameters(X, alpha, sigma_x, sigma_a, beta))


def _check_sweeps(name: str, n_sweeps) -> int:
    return check_count(name, n_sweeps, minimum=1, maximum=MAX_SWEEPS)


def gibbs_sweep(X, Z, alpha: float, sigma_x: float, sigma_a: float, rng: np.random.Generator,
                *, beta: float = 1.0) -> np.ndarray:
    """One collapsed Gibbs sweep over the rows of ``Z``.

    See the module docstring for the algorithm. Features keep their column
    positions from one sweep to the next, except that features nobody owns any
    more disappear and new features are appended on the right.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data, finite.
    Z : array_like
        ``(N, K)`` current binary feature matrix; all-zero columns are dropped.
    alpha : float
        IBP mass parameter, > 0.
    sigma_x, sigma_a : float
        Noise and feature standard deviations, > 0.
    rng : numpy.random.Generator
        Source of randomness.
    beta : float, optional
        IBP concentration, > 0 (1 is the one-parameter IBP).

    Returns
    -------
    numpy.ndarray
        ``(N, K+)`` ``int8`` with no empty columns.

    Examples
    --------
    >>> from ibp_lab.linear_gaussian import simulate
    >>> X, Z_true, _ = simulate(20, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                         sigma_a=1.0, d=5)
    >>> Z = gibbs_sweep(X, np.ones((20, 1)), 2.0, 0.3, 1.0, np.random.default_rng(1))
    >>> Z.dtype, Z.shape[0], bool(Z.any(axis=0).all())
    (dtype('int8'), 20, True)
    """
    X = check_data_matrix("X", X)
    Z = check_feature_matrix("Z", Z, n_rows=X.shape[0])
    alpha, sigma_x, sigma_a, beta = _check_hyper(X, alpha, sigma_x, sigma_a, beta)
    rng = check_rng(rng)
    Z_new, _, _ = _sweeps(X, Z, alpha, sigma_x, sigma_a, beta, 1, rng)
    return Z_new


def k_plus_trace(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                 sigma_a: float, beta: float = 1.0, Z0=None, scan_order: str = "random",
                 return_types: bool = False):
    """Run many sweeps at fixed hyperparameters and record ``K+`` after each.

    Everything runs in compiled code (a few microseconds per sweep on three
    rows), which is what long comparisons with :func:`ibp_lab.exact.k_plus_posterior`
    need.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_sweeps : int
        Number of sweeps, >= 1.
    rng : numpy.random.Generator
    alpha, sigma_x, sigma_a, beta : float
        Hyperparameters, all > 0.
    Z0 : array_like, optional
        Starting state; default one feature owned by every row.
    scan_order : {"random", "fixed"}, optional
        ``"random"`` (the valid sampler) visits each row's shared features in a
        fresh random order. ``"fixed"`` visits them in column order and moves
        singletons to the end: Griffiths & Ghahramani's heuristic, which is
        *biased*; it is here so the book can show the bias.
    return_types : bool, optional
        Also return, for each sweep, how many columns of each type the state
        has (the class as a count vector over
        :func:`ibp_lab.exact.column_types`). Only for ``N <= 6``.

    Returns
    -------
    k_plus : numpy.ndarray
        ``(n_sweeps,)`` number of features after each sweep.
    types : numpy.ndarray
        Only if ``return_types``: ``(n_sweeps, 2^N - 1)`` ``int32``.

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> k = k_plus_trace(X, 20_000, np.random.default_rng(0), alpha=1.3, sigma_x=0.6,
    ...                  sigma_a=1.2)
    >>> from ibp_lab.exact import k_plus_posterior
    >>> p_exact = k_plus_posterior(X, 1.3, 0.6, 1.2)  # 0.21 0.36 0.25 0.12 ...
    >>> freq = np.bincount(k, minlength=len(p_exact))[:len(p_exact)] / len(k)
    >>> # ESS of this trace is about 8600, so each frequency's Monte Carlo sd is at most
    >>> # 0.0054; 0.03 is more than 5 sd (in 30 seeds the largest miss was 0.0094)
    >>> bool(np.abs(freq - p_exact).max() < 0.03)
    True
    """
    X = check_data_matrix("X", X)
    n_sweeps = _check_sweeps("n_sweeps", n_sweeps)
    rng = check_rng(rng)
    alpha, sigma_x, sigma_a, beta = _check_hyper(X, alpha, sigma_x, sigma_a, beta)
    if not isinstance(scan_order, str) or scan_order not in ("random", "fixed"):
        raise ValueError(f"scan_order must be 'random' or 'fixed', got {scan_order!r}")
    return_types = check_flag("return_types", return_types)
    if return_types and X.shape[0] > _MAX_ROWS_FOR_TYPES:
        raise ValueError(
            f"return_types needs X with at most {_MAX_ROWS_FOR_TYPES} rows "
            f"(2^N - 1 column types), got {X.shape[0]}"
        )
    if return_types and n_sweeps * (2 ** X.shape[0] - 1) > _MAX_TYPE_ENTRIES:
        raise ValueError(
            f"return_types records 2^N - 1 = {2 ** X.shape[0] - 1} counts per sweep: "
            f"n_sweeps must be <= {_MAX_TYPE_ENTRIES // (2 ** X.shape[0] - 1)}, got {n_sweeps}"
        )
    Z0 = np.ones((X.shape[0], 1), np.int8) if Z0 is None else check_feature_matrix(
        "Z0", Z0, n_rows=X.shape[0])
    _, k_plus, types = _sweeps(X, Z0, alpha, sigma_x, sigma_a, beta, n_sweeps, rng,
                               random_scan=scan_order == "random", record_types=return_types)
    return (k_plus, types) if return_types else k_plus


def __getattr__(name: str):
    """The chain runner moved to :mod:`ibp_lab.chains`; the old names still resolve there."""
    if name in ("ChainResult", "run_chain", "run_chains"):
        from ibp_lab import chains

        return getattr(chains, name)
    raise AttributeError(f"module 'ibp_lab.gibbs' has no attribute {name!r}")
