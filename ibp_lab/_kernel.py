"""The linear-Gaussian IBP algebra, in one place, for every sampler that needs it.

Private: no argument checks (the public doors of :mod:`ibp_lab.inference.gibbs`,
:mod:`ibp_lab.inference.split_merge`, :mod:`ibp_lab.inference.heldout` and :mod:`ibp_lab.inference.chains`
validate first). Hot steps are compiled with numba (``cache=True``); each
compiled function keeps its plain-Python body as ``.py_func``, which the tests
and the readable sweep :func:`ibp_lab.inference.gibbs.gibbs_sweep_numpy` call.

Notation: ``Zb`` is an ``(N, cap)`` ``int8`` column buffer of which the first
``K`` columns are used; ``r = (sigma_x / sigma_a)^2``, ``sx2 = sigma_x^2``,
``sa2 = sigma_a^2``; ``M = Z^T Z + r I``; ``Minv`` holds ``M^-1`` (or, while a
row is out, ``P = M_-i^-1``), ``Abar`` the posterior mean of the features
``M^-1 Z^T X`` and ``m`` the counts of owners; ``zf`` is row ``i`` as floats,
``Pz = P z``, ``resid = x_i - z Abar_-i`` over the shared features and
``rr = ||resid||^2``. Buffers are modified in place; functions that may need
bigger buffers return them.

The Gibbs row update (:func:`update_row`) is the composition::

    row_out -> shuffle + flip_shared (flip_log_odds, prior_log_odds)
            -> sample_new_dishes (new_dish_rate) -> resize_columns -> row_in

Tempering: every step that weighs the likelihood (the flips and the new dishes) takes a
last argument ``inverse_temperature`` (default 1.0): the likelihood terms are multiplied
by it, so the step targets ``p(X | Z)^b P([Z])`` (:mod:`ibp_lab.inference.tempering`). At 1.0 the
arithmetic is the untempered one operation for operation (a product with 1.0 is exact),
so the default chain is bit-for-bit the one without the argument.

Functions (all names and arguments are stable; add, do not rename)
------------------------------------------------------------------
Feature posterior
    - ``refresh(X, Zb, K, r, Minv, Abar, m)``: ``M^-1``, ``Abar``, ``m`` from scratch.
    - ``row_out(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y)
      -> (q, rr, extra)``: take row ``i`` out; ``q = z P z`` over the shared
      features, ``extra = n_singletons * sa2``. ``w``, ``y`` are scratch.
    - ``row_out_listing(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y, on)
      -> (q, rr, extra)``: the same, with an ``int64`` scratch ``on`` (``>= K``) for
      the row's shared features (the sweep lends ``order``: no allocation per row).
    - ``row_in(i, Zb, K, D, Minv, Abar, m, zf, Pz, resid)``: put row ``i`` back.
    - ``grow(Zb, Minv, Abar, m, zf, w, Pz, order, needed)`` -> the buffers with
      at least ``needed`` columns; ``drop_columns(Zb, K, keep, Minv, Abar, m, zf,
      Pz) -> K``.
    - ``resize_columns(i, Zb, K, n_new, r, D, random_scan, Minv, Abar, m, zf, w,
      Pz, order) -> (Zb, K, Minv, Abar, m, zf, w, Pz, order)``: keep or drop row
      ``i``'s singletons and append new ones so that it owns ``n_new``.
    - ``append_singletons_in_place(Zb, K, n_add, r, D, Minv, Abar, m, zf, Pz) -> K``:
      ``append_singletons`` into buffers that have the room.
Single flips
    - ``prior_log_odds(m, n_others, beta)``: ``log m - log((n_others - m) + beta)``.
    - ``prior_log_odds_table(n_rows, beta)``: that for ``m = 1 .. n_rows - 1``
      (entry 0 unused).
    - ``flip_log_odds(rr, rr_flip, q, q_flip, extra, sx2, D, prior_flip,
      inverse_temperature=1.0)``: log-odds of flipping one entry; works
      elementwise on arrays via ``.py_func``.
    - ``flip_log_odds_from(var_now, fit_now, rr_flip, q_flip, extra, sx2, D,
      prior_flip, inverse_temperature=1.0)``: the same from ``var_now = sx2 (1 + q) +
      extra`` and ``fit_now = rr / var_now`` (formed once per accepted flip).
    - ``flip_log_odds_bounds(var_now, fit_now, rr_flip, q_flip, extra, sx2, D, prior_flip,
      inverse_temperature=1.0) -> (low, high)``: bounds on that, without ``log``.
    - ``flip_accepted(u, var_now, fit_now, rr_flip, q_flip, extra, sx2, D, prior_flip,
      inverse_temperature=1.0)``: ``u < 1 / (1 + exp(-log_odds))``, decided on the
      bounds when they suffice (the same decision); ``exp_at_least(y)`` its bound on
      ``e^y``.
    - ``flip_changes(k, sign, D, Minv, Abar, Pz, resid, rr, q) -> (rr_flip,
      q_flip)``; ``accept_flip(k, sign, K, D, Minv, Abar, Pz, resid)``.
    - ``flipped(rr, q, sign, a_dot, a_sq, pz_k, p_kk) -> (rr_flip, q_flip)``: the
      formula of ``flip_changes`` from its dot products.
    - ``flip_dots(order, start, stop, D, Abar, resid, dots, squares)``: those dot
      products, ``Abar_k.resid`` and ``||Abar_k||^2``, for ``k = order[start:stop]``.
    - ``shuffle(order, n, rng)``: Fisher-Yates on ``order[:n]`` (``n - 1`` uniforms).
    - ``flip_shared(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz, resid,
      rr, q, extra, sx2, log_odds_prior, inverse_temperature=1.0) -> (rr, q)``:
      one Gibbs update of each listed feature, one uniform each.
    - ``flip_shared_buffered(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz,
      resid, rr, q, extra, sx2, log_odds_prior, dots, squares,
      inverse_temperature=1.0) -> (rr, q)``: the same with scratch (``>= n_shared``).
New dishes
    - ``new_dish_rate(alpha, beta, n_others)``: ``alpha beta / (beta + n_others)``.
    - ``new_dish_log_weights(rate, v0, sa2, rr, D, inverse_temperature=1.0)``:
      log weights of 0, 1, ... new dishes up to the tail bound (an array).
    - ``new_dish_log_weights_into(rate, v0, sa2, rr, D, buf,
      inverse_temperature=1.0) -> (n_terms, lw_max, buf)``: the same, into a buffer.
    - ``sample_new_dishes(u, rate, v0, sa2, rr, D, buf, inverse_temperature=1.0)
      -> (s, buf)``: the number of new dishes from one uniform ``u``.
The whole row
    - ``at_least(buf, n)``: ``buf``, or a fresh one if it is shorter than ``n``.
    - ``update_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng,
      sx2, sa2, r, log_odds_prior, rate, random_scan, buf, inverse_temperature=1.0)
      -> (Zb, K, Minv, Abar, m, zf, w, Pz, order, buf)``.
    - its two halves, as the sweep's loop calls them (so that buffers are passed back
      only when they grow): ``draw_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order,
      resid, y, rng, sx2, sa2, r, log_odds_prior, rate, random_scan, buf,
      inverse_temperature=1.0) -> (n_new, n_single)`` (every random number of the
      row; ``buf`` holds ``max(MAX_FEATURES + 1, K)``), then :func:`grow` to ``K -
      n_single + n_new`` columns, then ``place_row(i, Zb, K, n_new, n_single, r, D,
      random_scan, Minv, Abar, m, zf, Pz, resid) -> K`` (columns, row in).
    - ``rows_in_room(first, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng, sx2,
      sa2, r, log_odds_prior, rate, random_scan, buf, inverse_temperature) -> (i, K, n_new,
      n_single)``: those halves for rows ``first, ...`` until a row needs more columns.
Target density (split-merge, traces)
    - ``loglik_from_stats(ztz, ztx, sum_sq, n_rows, n_dims, sigma_x, sigma_a)``:
      ``log p(X | Z)`` from ``Z^T Z``, ``Z^T X`` and ``||X||^2`` (NaN if ``M`` is
      numerically singular).
    - ``class_log_prior(Z, log_alpha_beta, prior_rate, beta, discount=0.0)``: ``log P([Z])``;
      ``class_prior_constants(n_rows, alpha, beta, discount=0.0, *, harmonic_sum=None) ->
      (log_alpha_beta, prior_rate)`` its constants (plain Python).
    - ``log_joint(X, Z, sum_sq, sigma_x, sigma_a, log_alpha_beta, prior_rate,
      beta) -> (log_lik, log_prior)`` for ``Z`` without empty columns;
      ``prior_rate = alpha * sum_i beta / (beta + i - 1)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.linalg import cho_solve, solve_triangular

from ibp_lab import _hyper
from ibp_lab._hyper import MAX_FEATURES

#: Stop summing the new-dish law once a bound on the rest is below e^-40 of its largest term.
LOG_TAIL_TOLERANCE = -40.0
#: Below this denominator the rank-one removal of a row would amplify rounding errors by
#: more than 1e3; the row's ``M_-i^-1`` is then recomputed from scratch.
MIN_DOWNDATE_DENOMINATOR = 1e-3
TOO_MANY_FEATURES = (
    "the sampler would need more than MAX_FEATURES = 2500 features: the data are far "
    "larger than sigma_a and sigma_x; rescale X or use larger scales"
)
_LOG_2 = 0.6931471805599453
#: :func:`flip_accepted` settles a flip on bounds only with this relative margin: the exact
#: probability rounds within about 1e-15 of its value, the bounds' arithmetic as closely.
DECISION_MARGIN = 1.0 + 1e-12


# --------------------------------------------------------------------------------------
# the feature posterior: from scratch, row out, row in, column bookkeeping
# --------------------------------------------------------------------------------------


@njit(cache=True)
def refresh(X, Zb, K, r, Minv, Abar, m):
    """Recompute ``M^-1``, the posterior mean ``Abar = M^-1 Z^T X`` and the counts ``m``.

    Stable: ``M`` is symmetric positive definite (``r > 0``), factorised by
    Cholesky, and ``M^-1 = L^-T L^-1`` from the triangular inverse. Hand-written
    loops: for the small ``K`` of this model they beat LAPACK's per-call overhead.
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


@njit(cache=True, inline="always")
def _row_out_from_scratch(i, X, Zb, K, r, Minv, Abar, m, zf, Pz):
    """``P``, ``Abar_-i`` and ``m_-i`` recomputed without row ``i``; returns ``q``.

    The fallback of :func:`row_out` when the rank-one step would lose too many
    digits (two features that only row ``i`` tells apart, say).
    """
    for a in range(K):
        Zb[i, a] = 0
    refresh(X, Zb, K, r, Minv, Abar, m)
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
    return q


@njit(cache=True, inline="always")
def _downdate(X, i, K, D, r, rho, denom, Minv, Abar, m, zf, w, Pz, y):
    """The singleton-aware rank-one downdate of :func:`row_out` (``x = X[i]``); returns nothing.

    ``Abar_-i = Y + rho w (z^T Y) / denom`` with ``Y = Abar_s - rho w x``: row ``i``'s
    own shared features first (``z^T Y`` sums their ``Y``, in increasing order), then
    every shared feature; for the others both steps go in one pass, ``(Abar - rho w x)
    + coef y`` rounded twice as before. ``rho * w[a]`` is formed once per feature, as
    ``rho * w[a] * x[d]`` and ``rho * w[a] / denom`` would (left to right). The same
    operations on every entry, so the same bits.
    """
    for d in range(D):
        y[d] = 0.0  # z^T Y
    for a in range(K):
        if m[a] > 0.0 and zf[a] != 0.0:
            rho_w = rho * w[a]
            for d in range(D):
                Abar[a, d] -= rho_w * X[i, d]
            for d in range(D):
                y[d] += Abar[a, d]
    for a in range(K):
        if m[a] > 0.0:
            rho_w = rho * w[a]
            coef = rho_w / denom
            # all b, singletons included: there w[b] = 0 adds a zero, and the
            # singletons' rows and columns are overwritten below anyway; without
            # the test the loop vectorises
            for b in range(K):
                Minv[a, b] += coef * w[b]
            if zf[a] != 0.0:  # posterior mean without row i
                for d in range(D):
                    Abar[a, d] += coef * y[d]
            else:
                for d in range(D):
                    Abar[a, d] = (Abar[a, d] - rho_w * X[i, d]) + coef * y[d]
            Pz[a] = w[a] / denom  # (P z)_a = (P_ss z)_a
        else:  # a singleton of row i: its exact values without row i
            for b in range(K):
                Minv[a, b] = 0.0
                Minv[b, a] = 0.0
            Minv[a, a] = 1.0 / r
            for d in range(D):
                Abar[a, d] = 0.0
            Pz[a] = 1.0 / r


@njit(cache=True, inline="always")
def _take_row_counts(i, Zb, K, m, zf, on):
    """``zf = z_i``, ``m -= z_i``; list row ``i``'s shared features in ``on``.

    Returns ``(n_on, n_own)``: how many shared features row ``i`` has (in ``on[:n_on]``,
    increasing) and how many columns no other row owns.
    """
    n_own = 0
    n_on = 0
    for a in range(K):
        zf[a] = Zb[i, a]
        m[a] -= zf[a]  # owners other than row i
        if m[a] == 0.0:
            n_own += 1
        if zf[a] != 0.0 and m[a] > 0.0:
            on[n_on] = a
            n_on += 1
    return n_on, n_own


@njit(cache=True, inline="always")
def _residual(X, i, D, Abar, on, n_on, resid):
    """``resid = x_i - sum of Abar[a]`` over the listed ``a``, in increasing order; ``||resid||^2``.

    ``x_i = X[i]``. Per pixel the same subtractions in the same order as a loop over all features
    that skips the others, so the same bits; feature by feature, the loop vectorises.
    """
    for d in range(D):
        resid[d] = X[i, d]
    for p in range(n_on):
        a = on[p]
        for d in range(D):
            resid[d] -= Abar[a, d]
    rr = 0.0
    for d in range(D):
        rr += resid[d] * resid[d]
    return rr


@njit(cache=True, inline="always")
def row_out(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y):
    """Take row ``i`` out of ``M^-1``, ``Abar`` and ``m``; return ``(q, rr, extra)``.

    Afterwards ``Minv`` holds ``P = M_-i^-1``, ``Abar`` the posterior mean given
    the other rows, ``m`` the other rows' counts, ``zf`` row ``i``, ``Pz = P z``,
    ``resid = x_i - z Abar_-i`` and ``rr = ||resid||^2`` over the shared features,
    ``q = z P z^T`` over the shared features, ``extra = n_singletons * sa2``.

    Why it is stable: row ``i``'s singletons (columns only row ``i`` owns) get
    their exact values without row ``i``: ``P`` is ``1 / r`` on their diagonal and
    0 elsewhere in their rows and columns, and their posterior mean is 0. The
    shared block then follows from ``M^-1`` by one well-conditioned rank-one step.
    Eliminating the ``n`` singletons from ``M Abar = Z^T X`` shows that the shared
    block ``B`` of ``M^-1`` is the inverse of ``S + rho z z^T``, with ``S =
    Z_-i^T Z_-i + r I`` (shared part), ``z = z_i`` (shared part) and ``rho = r / (n
    + r)``, and that ``B^-1 Abar_s = b_-i + rho z x``. With ``w = B z`` and ``zw =
    z.w``, Sherman-Morrison gives ``P_ss = B + rho w w^T / (1 - rho zw)`` and
    ``Abar_-i = Y + rho w (z^T Y) / (1 - rho zw)`` with ``Y = Abar_s - rho w x``.
    (With no singletons, ``rho = 1`` and this is the usual downdate.) The usual
    downdate divides by ``c = 1 - z M^-1 z``, about ``r / n`` when the row has
    singletons: for a small ``sigma_x / sigma_a`` that would amplify rounding
    errors beyond repair. When even ``1 - rho zw`` is below
    ``MIN_DOWNDATE_DENOMINATOR`` (nearly dependent columns without row ``i``),
    everything is recomputed from scratch instead.
    """
    return row_out_listing(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y,
                           np.empty(K, np.int64))


@njit(cache=True, inline="always")
def row_out_listing(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y, on):
    """:func:`row_out`, with an ``int64`` scratch ``on`` (at least ``K`` long) for the list
    of row ``i``'s shared features: the sweep lends its ``order`` buffer, so no row allocates.

    The sums run over that list instead of testing every feature; they add the same
    terms in the same order (a skipped term is a product with ``zf[a] = 0``, an exact
    zero), so the results are those of the loops over all features, bit for bit.
    """
    D = X.shape[1]  # X[i] is indexed, not sliced: a view would cost reference counting
    n_on, n_own = _take_row_counts(i, Zb, K, m, zf, on)
    rho = r / (n_own + r)
    for a in range(K):
        acc = 0.0
        if m[a] > 0.0:
            for p in range(n_on):
                acc += Minv[a, on[p]]
        w[a] = acc  # w, zero on the singletons
    zw = 0.0
    for p in range(n_on):
        zw += w[on[p]]
    denom = 1.0 - rho * zw
    if denom < MIN_DOWNDATE_DENOMINATOR:
        q = _row_out_from_scratch(i, X, Zb, K, r, Minv, Abar, m, zf, Pz)
    else:
        _downdate(X, i, K, D, r, rho, denom, Minv, Abar, m, zf, w, Pz, y)
        q = zw / denom  # z P z^T over the shared features only
    # x_i minus its predictive mean given the other rows
    rr = _residual(X, i, D, Abar, on, n_on, resid)
    # each singleton adds 1 / r to z P z^T, that is sigma_a^2 to the predictive variance
    return q, rr, n_own * sa2


@njit(cache=True, inline="always")
def row_in(i, Zb, K, D, Minv, Abar, m, zf, Pz, resid):
    """Put row ``i`` (now ``zf``) back: the rank-one Sherman-Morrison update.

    With ``w = P z``: ``M^-1 = P - w w^T / (1 + z.w)`` and the posterior mean
    moves by ``w (x - z Abar_-i) / (1 + z.w)``. Stable: the denominator is at
    least 1, so nothing is amplified. ``resid`` and ``Pz`` must describe the
    current ``zf`` (including its singletons, whose ``Pz`` is ``1 / r``).
    """
    qf = 0.0
    for a in range(K):
        qf += zf[a] * Pz[a]
    c2 = 1.0 + qf
    for a in range(K):
        # one division per feature, not one per entry: the entries' products then
        # round differently (last bit) from (wa * Pz[b]) / c2; refreshed every sweep
        wa = Pz[a] / c2
        for b in range(K):
            Minv[a, b] -= wa * Pz[b]
        for d in range(D):
            Abar[a, d] += wa * resid[d]
        m[a] += zf[a]
        Zb[i, a] = np.int8(zf[a])


@njit(cache=True)
def grow(Zb, Minv, Abar, m, zf, w, Pz, order, needed):
    """Reallocate the column buffers so that they hold at least ``needed`` columns.

    Capacity doubles, so a long run of births costs amortised ``O(1)`` copies per
    column. The scratch buffers ``w`` and ``order`` come back zeroed.
    """
    cap = Zb.shape[1]
    if needed <= cap:
        return Zb, Minv, Abar, m, zf, w, Pz, order
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


@njit(cache=True, inline="always")
def drop_columns(Zb, K, keep, Minv, Abar, m, zf, Pz):
    """Remove the columns with ``keep[a] == 0`` from every buffer, in one pass.

    The kept columns move left and keep their order. Returns the new ``K``.
    Exact: entries are only moved, never recomputed.
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


@njit(cache=True, inline="always")
def n_kept_singletons(n_new, n_single, random_scan):
    """How many of row ``i``'s ``n_single`` old singletons stay when it is to own ``n_new``.

    Random scan: the first ``min(n_new, n_single)`` stay in place (stable labels).
    Fixed scan (Griffiths & Ghahramani's heuristic): none; all ``n_new`` go to the end.
    """
    return min(n_new, n_single) if random_scan else 0


@njit(cache=True, inline="always")
def drop_singletons(Zb, K, n_keep, Minv, Abar, m, zf, Pz):
    """Drop row ``i``'s singletons (``m == 0``, row out) beyond the first ``n_keep``; new ``K``."""
    keep = np.ones(K, np.int64)
    rank = 0
    for a in range(K):
        if m[a] == 0.0:
            keep[a] = 1 if rank < n_keep else 0
            rank += 1
    return drop_columns(Zb, K, keep, Minv, Abar, m, zf, Pz)


@njit(cache=True, inline="always")
def append_singletons(Zb, K, n_add, r, D, Minv, Abar, m, zf, w, Pz, order):
    """Append ``n_add`` columns owned by row ``i`` alone (row out), with their exact values.

    Without row ``i`` a new feature has ``P`` entry ``1 / r`` (uncorrelated with the
    rest) and posterior mean 0. Returns ``(Zb, K, Minv, Abar, m, zf, w, Pz, order)``
    (buffers may grow).
    """
    Zb, Minv, Abar, m, zf, w, Pz, order = grow(Zb, Minv, Abar, m, zf, w, Pz, order, K + n_add)
    K = append_singletons_in_place(Zb, K, n_add, r, D, Minv, Abar, m, zf, Pz)
    return Zb, K, Minv, Abar, m, zf, w, Pz, order


@njit(cache=True, inline="always")
def append_singletons_in_place(Zb, K, n_add, r, D, Minv, Abar, m, zf, Pz):
    """:func:`append_singletons` into buffers with room for ``K + n_add`` columns; new ``K``."""
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
    return K


@njit(cache=True)
def resize_columns(i, Zb, K, n_new, r, D, random_scan, Minv, Abar, m, zf, w, Pz, order):
    """Give row ``i`` (taken out) exactly ``n_new`` singletons.

    :func:`n_kept_singletons` of the old ones stay, the rest are dropped
    (:func:`drop_singletons`) and the missing ones appended
    (:func:`append_singletons`). Returns ``(Zb, K, Minv, Abar, m, zf, w, Pz,
    order)`` (buffers may grow). ``i`` is unused (row ``i`` is already out);
    it names whose singletons these are.
    """
    n_single = 0
    for a in range(K):
        if m[a] == 0.0:
            n_single += 1
    n_keep = n_kept_singletons(n_new, n_single, random_scan)
    if n_single > n_keep:
        K = drop_singletons(Zb, K, n_keep, Minv, Abar, m, zf, Pz)
    if n_new > n_keep:
        return append_singletons(Zb, K, n_new - n_keep, r, D, Minv, Abar, m, zf, w, Pz, order)
    return Zb, K, Minv, Abar, m, zf, w, Pz, order


# --------------------------------------------------------------------------------------
# single flips
# --------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def prior_log_odds(m, n_others, beta, discount=0.0):
    """Prior log-odds of ``z_ik = 1`` when ``m`` of the ``n_others`` other rows own ``k``.

    ``log(m - d) - log((n_others - m) + beta + d)``: row ``i`` taken as the last
    customer of the (three-parameter) buffet takes an old dish with probability
    ``(m - d) / (n_others + beta)``. The count difference is formed first, exactly
    (both are whole numbers), so a tiny ``beta`` keeps its digits; with ``d = 0``
    adding it changes no bit.
    """
    return math.log(m - discount) - math.log((n_others - m) + beta + discount)


@njit(cache=True)
def prior_log_odds_table(n_rows, beta, discount=0.0):
    """:func:`prior_log_odds` for ``m = 1, ..., n_rows - 1`` other owners (entry 0 is 0)."""
    table = np.zeros(n_rows)
    for count in range(1, n_rows):
        table[count] = prior_log_odds(count, n_rows - 1.0, beta, discount)
    return table


@njit(cache=True, inline="always")
def flip_log_odds(rr, rr_flip, q, q_flip, extra, sx2, D, prior_flip, inverse_temperature=1.0):
    """Log-odds of flipping one entry of row ``i`` against keeping it.

    Given the other rows, ``x_i ~ Normal(z Abar, (sx2 (1 + z P z) + extra) I)``;
    ``rr``, ``q`` describe the current row and ``rr_flip``, ``q_flip`` the row with
    the entry flipped; ``prior_flip`` is the prior log-odds of the flipped value
    (``sign * prior_log_odds``). The likelihood enters as a log of the *ratio*
    of variances and a difference of quadratic terms, never as two large
    log-densities subtracted. Plain arithmetic and ``np.log``, so ``.py_func``
    also works elementwise on NumPy arrays. The likelihood part is multiplied
    by ``inverse_temperature`` (tempered target ``p(X | Z)^b P([Z])``).
    """
    var_now = sx2 * (1.0 + q) + extra
    var_flip = sx2 * (1.0 + q_flip) + extra
    return (inverse_temperature * (-(0.5 * D) * np.log(var_flip / var_now)
                                   - 0.5 * (rr_flip / var_flip - rr / var_now))
            + prior_flip)


@njit(cache=True, inline="always")
def flip_log_odds_from(var_now, fit_now, rr_flip, q_flip, extra, sx2, D, prior_flip,
                       inverse_temperature=1.0):
    """:func:`flip_log_odds` from the current row's variance and ``fit_now = rr / var_now``.

    Those two stay put from flip to flip until one is accepted, so the sweep forms
    them once per accepted flip; the same operations, so the same bits (the formula
    is written twice so that ``flip_log_odds.py_func`` stays plain NumPy; the tests
    check that the two agree bit for bit).
    """
    var_flip = sx2 * (1.0 + q_flip) + extra
    return (inverse_temperature * (-(0.5 * D) * np.log(var_flip / var_now)
                                   - 0.5 * (rr_flip / var_flip - fit_now))
            + prior_flip)


@njit(cache=True, inline="always")
def flip_log_odds_bounds(var_now, fit_now, rr_flip, q_flip, extra, sx2, D, prior_flip,
                         inverse_temperature=1.0):
    """``(low, high)`` around :func:`flip_log_odds_from` as it rounds, without its ``log``.

    ``1 - 1/x <= log x <= x - 1`` for the ratio ``x`` of the variances; a slack of
    ``1e-9`` of the terms' size (rounding is about ``1e-16`` of it) covers the rounding
    of both the bounds and the exact formula, so ``low <= log_odds <= high`` for the
    number the exact formula gives. ``(nan, nan)`` unless both variances are positive.
    """
    var_flip = sx2 * (1.0 + q_flip) + extra
    if not (var_flip > 0.0 and var_now > 0.0):
        return np.nan, np.nan
    # two divisions, not the three of x - 1, 1 - 1/x and rr_flip / var_flip
    inv_flip = 1.0 / var_flip
    change = var_flip - var_now
    log_high = change / var_now  # x - 1
    log_low = change * inv_flip  # 1 - 1/x
    fit_flip = rr_flip * inv_flip
    fit = -0.5 * (fit_flip - fit_now)
    half_D = 0.5 * D
    b = inverse_temperature
    # the fits' own size, not their difference's: that is what their rounding scales with
    size = 0.5 * (abs(fit_flip) + abs(fit_now)) + half_D * (1.0 + abs(log_high) + abs(log_low))
    slack = 1e-9 * (1.0 + abs(prior_flip) + abs(b) * size)
    return (b * (fit - half_D * log_high) + prior_flip - slack,
            b * (fit - half_D * log_low) + prior_flip + slack)


@njit(cache=True, inline="always")
def exp_at_least(y):
    """``1 + y + y^2/2 + y^3/6 + y^4/24``, at most ``e^y`` for ``y >= 0`` (no ``exp``)."""
    return 1.0 + y * (1.0 + y * (0.5 + y * (1.0 / 6.0 + y * (1.0 / 24.0))))


@njit(cache=True, inline="always")
def flip_accepted(u, var_now, fit_now, rr_flip, q_flip, extra, sx2, D, prior_flip,
                  inverse_temperature=1.0):
    """``u < 1 / (1 + exp(-log_odds))`` for the log-odds of :func:`flip_log_odds_from`.

    Settled on :func:`flip_log_odds_bounds` when they suffice, without ``exp`` or ``log``:
    if ``low > 0`` the probability is at least ``E / (1 + E)`` with ``E =``
    :func:`exp_at_least` ``(low) <= e^low``; if ``high < 0`` it is at most ``1 / (1 + E)``
    with ``E <= e^-high``; each compared with ``u`` by ``DECISION_MARGIN``. Otherwise (the
    bounds straddle 0, or ``u`` lies near the probability, or on its unlikely side: a few
    flips in a hundred on the digits) the exact formula decides, as before. The same
    decision either way.
    """
    low, high = flip_log_odds_bounds(var_now, fit_now, rr_flip, q_flip, extra, sx2, D,
                                     prior_flip, inverse_temperature)
    if low > 0.0:
        e_low = exp_at_least(low)
        if u * (1.0 + e_low) * DECISION_MARGIN < e_low:
            return True
    elif high < 0.0:
        if u * (1.0 + exp_at_least(-high)) >= DECISION_MARGIN:
            return False
    log_odds = flip_log_odds_from(var_now, fit_now, rr_flip, q_flip, extra, sx2, D,
                                  prior_flip, inverse_temperature)
    return u < 1.0 / (1.0 + math.exp(-log_odds))


@njit(cache=True, inline="always")
def flipped(rr, q, sign, a_dot, a_sq, pz_k, p_kk):
    """``(rr_flip, q_flip)`` from ``a_dot = Abar_k.resid``, ``a_sq = ||Abar_k||^2``, ``(P z)_k``
    and ``P_kk``: the formula of :func:`flip_changes`."""
    return rr - 2.0 * sign * a_dot + a_sq, q + 2.0 * sign * pz_k + p_kk


@njit(cache=True, inline="always")
def flip_changes(k, sign, D, Minv, Abar, Pz, resid, rr, q):
    """``(rr_flip, q_flip)`` after flipping entry ``k`` (``sign = +1`` on, ``-1`` off).

    Rank-one: ``||resid - s a_k||^2 = rr - 2 s a_k.resid + ||a_k||^2`` and
    ``(z + s e_k) P (z + s e_k) = q + 2 s (P z)_k + P_kk``; ``O(D)``.
    """
    a_dot = 0.0
    a_sq = 0.0
    for d in range(D):
        a_dot += Abar[k, d] * resid[d]
        a_sq += Abar[k, d] * Abar[k, d]
    return flipped(rr, q, sign, a_dot, a_sq, Pz[k], Minv[k, k])


@njit(cache=True, inline="always")
def flip_dots(order, start, stop, D, Abar, resid, dots, squares):
    """``dots[j] = Abar_k.resid`` and ``squares[j] = ||Abar_k||^2``, ``k = order[j]``, for
    ``start <= j < stop``.

    Each sum runs over ``d`` in order, as in :func:`flip_changes` (the same bits);
    four features at a time, so that eight independent sums keep the processor
    busy instead of waiting on one chain of additions.
    """
    j = start
    while j + 4 <= stop:
        k0, k1, k2, k3 = order[j], order[j + 1], order[j + 2], order[j + 3]
        dot0 = dot1 = dot2 = dot3 = 0.0
        sq0 = sq1 = sq2 = sq3 = 0.0
        for d in range(D):
            e = resid[d]
            a0, a1, a2, a3 = Abar[k0, d], Abar[k1, d], Abar[k2, d], Abar[k3, d]
            dot0 += a0 * e
            dot1 += a1 * e
            dot2 += a2 * e
            dot3 += a3 * e
            sq0 += a0 * a0
            sq1 += a1 * a1
            sq2 += a2 * a2
            sq3 += a3 * a3
        dots[j], dots[j + 1], dots[j + 2], dots[j + 3] = dot0, dot1, dot2, dot3
        squares[j], squares[j + 1], squares[j + 2], squares[j + 3] = sq0, sq1, sq2, sq3
        j += 4
    for j in range(j, stop):
        k = order[j]
        dot = 0.0
        sq = 0.0
        for d in range(D):
            dot += Abar[k, d] * resid[d]
            sq += Abar[k, d] * Abar[k, d]
        dots[j] = dot
        squares[j] = sq


@njit(cache=True, inline="always")
def accept_flip(k, sign, K, D, Minv, Abar, Pz, resid):
    """Update ``Pz`` and ``resid`` for an accepted flip of entry ``k``: ``O(K + D)``."""
    for b in range(K):
        Pz[b] += sign * Minv[k, b]  # P is symmetric
    for d in range(D):
        resid[d] -= sign * Abar[k, d]


@njit(cache=True, inline="always")
def shuffle(order, n, rng):
    """Fisher-Yates shuffle of ``order[:n]`` in place, with ``n - 1`` uniforms."""
    for j in range(n - 1, 0, -1):
        t = int(rng.random() * (j + 1))
        tmp = order[j]
        order[j] = order[t]
        order[t] = tmp


@njit(cache=True, inline="always")
def flip_shared(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz, resid, rr, q, extra, sx2,
                log_odds_prior, inverse_temperature=1.0):
    """Gibbs-update ``z_ik`` for ``k = order[0], ..., order[n_shared - 1]``; return ``(rr, q)``.

    One uniform per feature, compared with the flip probability
    ``1 / (1 + exp(-log_odds))``: a Gibbs update written as a flip, so that the
    chain draws the same numbers whichever value the entry has.
    """
    return flip_shared_buffered(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz, resid, rr,
                                q, extra, sx2, log_odds_prior, np.empty(n_shared),
                                np.empty(n_shared), inverse_temperature)


@njit(cache=True, inline="always")
def flip_shared_buffered(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz, resid, rr, q,
                         extra, sx2, log_odds_prior, dots, squares, inverse_temperature=1.0):
    """:func:`flip_shared` with scratch ``dots``, ``squares`` (at least ``n_shared`` long).

    The ``O(D)`` sums of :func:`flip_changes` for all the listed features at once
    (:func:`flip_dots`); ``Abar`` does not move during the flips and ``resid`` only
    when one is accepted (rarely), so the dot products are recomputed only then,
    for the features still to come. The same sums, so the same bits.
    """
    flip_dots(order, 0, n_shared, D, Abar, resid, dots, squares)
    var_now = sx2 * (1.0 + q) + extra
    fit_now = rr / var_now
    for j in range(n_shared):
        k = order[j]
        sign = 1.0 - 2.0 * zf[k]  # +1 switches feature k on, -1 off
        rr_flip, q_flip = flipped(rr, q, sign, dots[j], squares[j], Pz[k], Minv[k, k])
        if flip_accepted(rng.random(), var_now, fit_now, rr_flip, q_flip, extra, sx2, D,
                         sign * log_odds_prior[int(m[k])], inverse_temperature):
            zf[k] = 1.0 - zf[k]
            accept_flip(k, sign, K, D, Minv, Abar, Pz, resid)
            rr = rr_flip
            q = q_flip
            var_now = sx2 * (1.0 + q) + extra
            fit_now = rr / var_now
            flip_dots(order, j + 1, n_shared, D, Abar, resid, dots, squares)
    return rr, q


# --------------------------------------------------------------------------------------
# new dishes
# --------------------------------------------------------------------------------------


#: Poisson rate of new dishes for a row after ``n_others`` others, ``alpha beta / (beta +
#: n_others)``: the one definition (:func:`ibp_lab._hyper.new_dish_rate`), compiled. It adds
#: ``beta + n_others``, never ``(beta + N) - 1``, which is 0 for one row and a tiny ``beta``.
new_dish_rate = njit(cache=True)(_hyper.new_dish_rate)


@njit(cache=True, inline="always")
def new_dish_log_weights_into(rate, v0, sa2, rr, D, buf, inverse_temperature=1.0):
    """Log weights of 0, 1, 2, ... new dishes, into ``buf``; ``(n_terms, lw_max, buf)``.

    Weight of ``s`` new dishes: ``rate^s / s!`` (the Poisson prior) times the
    predictive density with variance ``v_s = v0 + s sa2`` and squared residual
    ``rr``, ``f(v) = -D/2 log v - rr / (2 v)``. ``f`` rises up to ``v* = rr / D``
    and falls after it, so for ``t > s`` it is at most ``f(max(v_{s+1}, v*))``;
    once ``s + 2 >= 2 rate`` the Poisson weights beyond ``s`` sum to less than
    ``2 rate^(s+1) / (s+1)!``. Summing stops when that bound on the rest is below
    ``e^LOG_TAIL_TOLERANCE`` of the largest weight: an exact law up to a mass
    below ``e^-40``, never a fixed truncation. More than ``MAX_FEATURES`` terms
    raise ``ValueError``. Tempered (``inverse_temperature = b``): ``f`` becomes
    ``b f``, which rises and falls at the same ``v*``, so the same bound holds.
    """
    half_D = inverse_temperature * (0.5 * D)  # exact at b = 1: a product with 1.0
    log_rate = math.log(rate)
    v_star = rr / D
    rr = inverse_temperature * rr  # only the tempered f uses rr from here on
    f_star = -half_D * math.log(v_star) - rr / (2.0 * v_star) if v_star > v0 else -np.inf
    v = v0
    log_v = math.log(v)
    log_fact = 0.0  # log s!
    lw_max = -np.inf
    s = 0
    while True:
        if s > MAX_FEATURES:
            raise ValueError(TOO_MANY_FEATURES)
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
            rest = (s + 1) * log_rate - log_fact_next + _LOG_2 + f_bound
            if rest < lw_max + LOG_TAIL_TOLERANCE:
                break
        s += 1
        v = v_next
        log_v = log_v_next
        log_fact = log_fact_next
    return s + 1, lw_max, buf


@njit(cache=True)
def new_dish_log_weights(rate, v0, sa2, rr, D, inverse_temperature=1.0):
    """Log weights of 0, 1, 2, ... new dishes, as an array (see :func:`new_dish_log_weights_into`)."""
    n_terms, _, buf = new_dish_log_weights_into(rate, v0, sa2, rr, D, np.empty(16),
                                                inverse_temperature)
    return buf[:n_terms].copy()


@njit(cache=True, inline="always")
def sample_new_dishes(u, rate, v0, sa2, rr, D, buf, inverse_temperature=1.0):
    """Draw the number of new dishes from its exact conditional, by inversion of ``u``.

    The weights of :func:`new_dish_log_weights_into`, shifted by their maximum
    before ``exp`` (no overflow), summed in order; returns ``(s, buf)``.
    """
    n_terms, lw_max, buf = new_dish_log_weights_into(rate, v0, sa2, rr, D, buf,
                                                     inverse_temperature)
    total = 0.0
    for t in range(n_terms):
        buf[t] = math.exp(buf[t] - lw_max)
        total += buf[t]
    target = u * total
    cumulative = 0.0
    for t in range(n_terms):
        cumulative += buf[t]
        if target < cumulative:
            return t, buf
    return n_terms - 1, buf


# --------------------------------------------------------------------------------------
# one row of the collapsed Gibbs sweep
# --------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def at_least(buf, n):
    """``buf``, or a fresh buffer twice ``n`` long if ``buf`` is shorter than ``n``."""
    return buf if buf.shape[0] >= n else np.empty(2 * n)


@njit(cache=True, inline="always")
def _list_shared(K, m, order):
    """Write the shared features (``m > 0``) into ``order``; return ``(n_shared, n_single)``."""
    n_shared = 0
    for a in range(K):
        if m[a] > 0.0:
            order[n_shared] = a
            n_shared += 1
    return n_shared, K - n_shared


@njit(cache=True)
def update_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng,
               sx2, sa2, r, log_odds_prior, rate, random_scan, buf, inverse_temperature=1.0):
    """Resample row ``i`` of ``Z``: row out, shared flips, new dishes, columns, row in.

    Random numbers, in order: ``n_shared - 1`` for the shuffle (random scan),
    one per shared feature, one for the number of new dishes. The likelihood
    terms of the flips and of the new dishes are scaled by ``inverse_temperature``.
    The composition of :func:`draw_row`, :func:`grow` and :func:`place_row`.
    """
    buf = at_least(buf, max(MAX_FEATURES + 1, K))
    n_new, n_single = draw_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng,
                               sx2, sa2, r, log_odds_prior, rate, random_scan, buf,
                               inverse_temperature)
    Zb, Minv, Abar, m, zf, w, Pz, order = grow(Zb, Minv, Abar, m, zf, w, Pz, order,
                                               K - n_single + n_new)
    K = place_row(i, Zb, K, n_new, n_single, r, X.shape[1], random_scan, Minv, Abar, m, zf,
                  Pz, resid)
    return Zb, K, Minv, Abar, m, zf, w, Pz, order, buf


@njit(cache=True)
def draw_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng,
             sx2, sa2, r, log_odds_prior, rate, random_scan, buf, inverse_temperature=1.0):
    """The draws of :func:`update_row`: row out, shared flips, the number of new dishes.

    Returns ``(n_new, n_single)``: row ``i`` (out) is to own ``n_new`` singletons and
    owns ``n_single`` now. ``buf`` must hold ``max(MAX_FEATURES + 1, K)`` numbers
    (the flips' scratch and the new dishes' weights; so it never grows: the sweep's loop
    then passes only scalars back, no buffers to count references of). All the row's
    random numbers are drawn here.
    """
    D = X.shape[1]
    # order is free until the shared features are listed: it holds row i's list meanwhile
    q, rr, extra = row_out_listing(i, X, Zb, K, r, sa2, Minv, Abar, m, zf, w, Pz, resid, y,
                                   order)
    n_shared, n_single = _list_shared(K, m, order)
    if random_scan:
        shuffle(order, n_shared, rng)
    # w is free once the row is out, buf until the new dishes: the flips' scratch
    rr, q = flip_shared_buffered(rng, order, n_shared, zf, m, K, D, Minv, Abar, Pz, resid,
                                 rr, q, extra, sx2, log_odds_prior, w, buf,
                                 inverse_temperature)
    # q holds the shared features only; each new dish adds sa2 to the predictive variance
    n_new, _ = sample_new_dishes(rng.random(), rate, sx2 * (1.0 + q), sa2, rr, D, buf,
                                 inverse_temperature)
    if K - n_single + n_new > MAX_FEATURES:
        raise ValueError(TOO_MANY_FEATURES)
    return n_new, n_single


@njit(cache=True)
def place_row(i, Zb, K, n_new, n_single, r, D, random_scan, Minv, Abar, m, zf, Pz, resid):
    """Row ``i``'s columns (:func:`resize_columns`) and the row back in (:func:`row_in`).

    The buffers must have room for ``K - n_single + n_new`` columns (:func:`grow`).
    Returns the new ``K``.
    """
    n_keep = n_kept_singletons(n_new, n_single, random_scan)
    if n_single > n_keep:
        K = drop_singletons(Zb, K, n_keep, Minv, Abar, m, zf, Pz)
    if n_new > n_keep:
        K = append_singletons_in_place(Zb, K, n_new - n_keep, r, D, Minv, Abar, m, zf, Pz)
    row_in(i, Zb, K, D, Minv, Abar, m, zf, Pz, resid)
    return K


# --------------------------------------------------------------------------------------
# the target density: collapsed likelihood from sufficient statistics, class prior
# --------------------------------------------------------------------------------------


@njit(cache=True)
def loglik_from_stats(ztz, ztx, sum_sq, n_rows, n_dims, sigma_x, sigma_a):
    """``log p(X | Z)`` from ``Z^T Z``, ``Z^T X`` and ``||X||^2``; NaN if ``M`` is singular.

    G & G (2011, eq. 26) with a Cholesky factor ``L`` of ``M = Z^T Z + r I``:
    ``log |M| = 2 sum log diag L`` and the trace term ``||X||^2 - ||L^-1 Z^T X||^2``,
    so no inverse is formed. The residual is clipped at 0 (``I - Z M^-1 Z^T`` is
    positive definite; only rounding can make it negative). A pivot ``<= 0``
    (numerically singular ``M``) returns NaN for the caller to report.
    """
    K = ztz.shape[0]
    D = n_dims
    ratio = (sigma_x / sigma_a) ** 2
    L = np.empty((K, K))
    log_det = 0.0
    for a in range(K):
        for b in range(a + 1):
            acc = ztz[a, b] + (ratio if a == b else 0.0)
            for p in range(b):
                acc -= L[a, p] * L[b, p]
            if a == b:
                if not acc > 0.0:
                    return np.nan
                L[a, a] = math.sqrt(acc)
                log_det += 2.0 * math.log(L[a, a])
            else:
                L[a, b] = acc / L[b, b]
    explained = 0.0  # ||L^-1 Z^T X||^2 = tr(X^T Z M^-1 Z^T X)
    W = np.empty(K)
    for d in range(D):
        for a in range(K):
            acc = ztx[a, d]
            for p in range(a):
                acc -= L[a, p] * W[p]
            W[a] = acc / L[a, a]
            explained += W[a] * W[a]
    residual = max(sum_sq - explained, 0.0)
    return (-0.5 * n_rows * D * math.log(2.0 * math.pi) - (n_rows - K) * D * math.log(sigma_x)
            - K * D * math.log(sigma_a) - 0.5 * D * log_det
            - residual / (2.0 * sigma_x * sigma_x))


@njit(cache=True)
def class_log_prior(Z, log_alpha_beta, prior_rate, beta, discount=0.0):
    """``log P([Z])`` of the two-parameter IBP, for ``Z`` without empty columns.

    ``K+ log(alpha beta) - prior_rate - sum_h log K_h! + sum_k log B(m_k, N - m_k +
    beta)`` (:func:`ibp_lab.models.prior.log_prior`), with ``log_alpha_beta = log alpha +
    log beta`` and ``prior_rate = alpha sum_i beta / (beta + i - 1)``. Beta
    functions through ``lgamma``: no factorials overflow.

    With a discount ``d > 0`` (the three-parameter IBP) the caller passes the
    three-parameter constants, ``log_alpha_beta = log alpha + log Gamma(1 + beta) -
    log Gamma(1 - d) - log Gamma(beta + d)`` and ``prior_rate = alpha H_N(beta, d)``
    (:class:`ibp_lab.inference.split_merge._target.LogJoint`), and each feature's Beta function
    becomes ``Gamma(m_k - d) Gamma(N - m_k + beta + d) / Gamma(N + beta)``; with
    ``d = 0`` no bit changes.
    """
    N = Z.shape[0]
    K = Z.shape[1]
    log_prior = K * log_alpha_beta - prior_rate
    group_size = np.zeros(K, np.int64)
    for k in range(K):
        count = 0
        for n in range(N):
            count += Z[n, k]
        log_prior += (math.lgamma(count - discount) + math.lgamma(N - count + beta + discount)
                      - math.lgamma(N + beta))
        owner = k  # the first column equal to column k
        for first in range(k):
            if group_size[first] > 0:
                same = True
                for n in range(N):
                    if Z[n, k] != Z[n, first]:
                        same = False
                        break
                if same:
                    owner = first
                    break
        group_size[owner] += 1
    for k in range(K):
        log_prior -= math.lgamma(group_size[k] + 1.0)
    return log_prior


def class_prior_constants(n_rows: int, alpha: float, beta: float, discount: float = 0.0, *,
                          harmonic_sum: float | None = None) -> tuple[float, float]:
    """``(log_alpha_beta, prior_rate)``: the constants :func:`class_log_prior` takes.

    Two-parameter IBP (``discount = 0``): ``log alpha + log beta`` (summed as logs: the
    product can underflow) and ``alpha H_N(beta)``; three-parameter: ``log alpha + log
    Gamma(1 + beta) - log Gamma(1 - d) - log Gamma(beta + d)`` and ``alpha H_N(beta, d)``
    (:func:`ibp_lab._hyper.stable_harmonic`; ``harmonic_sum`` when the caller has it). A
    class prior then costs one compiled pass over ``Z``.
    """
    if discount == 0.0:
        per_feature = math.log(alpha) + math.log(beta)
    else:
        per_feature = (math.log(alpha) + math.lgamma(1.0 + beta) - math.lgamma(1.0 - discount)
                       - math.lgamma(beta + discount))
    if harmonic_sum is None:
        harmonic_sum = _hyper.stable_harmonic(n_rows, beta, discount)
    return per_feature, alpha * harmonic_sum


@njit(cache=True)
def sufficient_stats(X, Z):
    """``(Z^T Z, Z^T X)`` accumulated over the ones of ``Z`` only (``Z`` is sparse)."""
    N, D = X.shape
    K = Z.shape[1]
    ztz = np.zeros((K, K))
    ztx = np.zeros((K, D))
    owned = np.zeros(K, np.int64)
    for n in range(N):
        n_owned = 0
        for k in range(K):
            if Z[n, k] != 0:
                owned[n_owned] = k
                n_owned += 1
        for p in range(n_owned):
            a = owned[p]
            for q in range(n_owned):
                ztz[a, owned[q]] += 1.0
            for d in range(D):
                ztx[a, d] += X[n, d]
    return ztz, ztx


@njit(cache=True)
def log_joint(X, Z, sum_sq, sigma_x, sigma_a, log_alpha_beta, prior_rate, beta, discount=0.0):
    """``(log p(X | Z), log P([Z]))`` for ``int8`` ``Z`` without empty columns.

    The split-merge target: :func:`loglik_from_stats` of :func:`sufficient_stats`
    and :func:`class_log_prior`. ``sum_sq = ||X||^2``.
    """
    N, D = X.shape
    ztz, ztx = sufficient_stats(X, Z)
    log_lik = loglik_from_stats(ztz, ztx, sum_sq, N, D, sigma_x, sigma_a)
    return log_lik, class_log_prior(Z, log_alpha_beta, prior_rate, beta, discount)


# --------------------------------------------------------------------------------------
# whole sweeps: the compiled loop over rows of update_row, and its Python entry
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def run_sweeps(X, Zb, K, rate, log_odds_prior, sigma_x, sigma_a, n_sweeps, rng, random_scan,
               k_trace, type_trace, inverse_temperature=1.0):
    """Run ``n_sweeps`` sweeps on the column buffer ``Zb`` (first ``K`` columns used).

    The prior enters through two numbers computed once by :func:`sweeps`: ``rate``,
    the Poisson rate of a row's singletons, and ``log_odds_prior[m]``, the prior
    log-odds of owning a feature that ``m`` other rows own.

    Each sweep refreshes ``M^-1`` from scratch (so rounding cannot accumulate)
    and then updates the rows in order with :func:`update_row`, called as its halves
    :func:`draw_row` and :func:`place_row` by :func:`rows_in_room` until a row needs more
    columns; that row is placed here after :func:`grow`, and the rows go on (a loop that
    may rebind the buffers counts references of them on every row; both halves stay
    separate functions: inlined, LLVM no longer vectorises their loops).
    ``nogil``: the replicas of :mod:`ibp_lab.inference.tempering` may run it in threads
    (each with its own generator and buffers).
    """
    N, D = X.shape
    sx2 = sigma_x * sigma_x
    sa2 = sigma_a * sigma_a
    r = sx2 / sa2
    # never grows: the new dishes stop at MAX_FEATURES and K rises above it only if it
    # started there (so it holds the flips' scratch too)
    buf = np.empty(max(MAX_FEATURES + 1, Zb.shape[1]))
    cap = Zb.shape[1]
    Minv = np.zeros((cap, cap))
    Abar = np.zeros((cap, D))
    m = np.zeros(cap)
    zf = np.zeros(cap)
    w = np.zeros(cap)
    Pz = np.zeros(cap)
    order = np.zeros(cap, np.int64)
    resid = np.zeros(D)
    y = np.zeros(D)
    record_types = type_trace.shape[0] > 0
    for t in range(n_sweeps):
        refresh(X, Zb, K, r, Minv, Abar, m)
        i = 0
        while True:  # update_row row after row; the buffers grow between the runs of rows
            i, K, n_new, n_single = rows_in_room(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order,
                                                 resid, y, rng, sx2, sa2, r, log_odds_prior,
                                                 rate, random_scan, buf, inverse_temperature)
            if i == N:
                break
            Zb, Minv, Abar, m, zf, w, Pz, order = grow(Zb, Minv, Abar, m, zf, w, Pz, order,
                                                       K - n_single + n_new)
            K = place_row(i, Zb, K, n_new, n_single, r, D, random_scan, Minv, Abar, m, zf, Pz,
                          resid)
            i += 1
        k_trace[t] = K
        if record_types:
            record_class(Zb, K, N, type_trace[t])
    return Zb, K


@njit(cache=True, nogil=True)
def rows_in_room(first, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y, rng, sx2, sa2,
                 r, log_odds_prior, rate, random_scan, buf, inverse_temperature):
    """:func:`update_row` for rows ``first, first + 1, ...`` while the buffers have room.

    Returns ``(i, K, n_new, n_single)``: ``i = N`` when every row is done, else row ``i``
    has drawn (:func:`draw_row`) and needs more columns than the buffers hold (then
    :func:`grow`, :func:`place_row`). The buffers are never rebound here, so the loop
    counts no references of them (the sweep's loop, which may rebind them, did per row).
    """
    N, D = X.shape
    for i in range(first, N):
        n_new, n_single = draw_row(i, X, Zb, K, Minv, Abar, m, zf, w, Pz, order, resid, y,
                                   rng, sx2, sa2, r, log_odds_prior, rate, random_scan, buf,
                                   inverse_temperature)
        if K - n_single + n_new > Zb.shape[1]:
            return i, K, n_new, n_single
        K = place_row(i, Zb, K, n_new, n_single, r, D, random_scan, Minv, Abar, m, zf, Pz,
                      resid)
    return N, K, 0, 0


@njit(cache=True)
def record_class(Zb, K, N, counts):
    """Add the state's class (columns counted by type, left-ordered) to ``counts``."""
    for a in range(K):
        value = 0
        for i in range(N):
            value = 2 * value + Zb[i, a]
        counts[(1 << N) - 1 - value] += 1


def to_buffer(Z: np.ndarray) -> tuple[np.ndarray, int]:
    """Copy ``Z`` (empty columns dropped) into a buffer with spare columns."""
    Z = Z[:, Z.any(axis=0)]
    K = Z.shape[1]
    Zb = np.zeros((Z.shape[0], max(2 * K, 8)), np.int8)
    Zb[:, :K] = Z
    return Zb, K


def sweeps(X, Z, alpha, sigma_x, sigma_a, beta, n_sweeps, rng, *, random_scan=True,
           record_types=False, inverse_temperature=1.0, discount=0.0):
    """Run validated inputs through the compiled kernel; return (Z, k_trace, type_trace).

    Row ``i`` is the buffet's last customer: its singletons are Poisson with the
    (three-parameter) rate of customer ``N`` and an old dish owned by ``m`` others has
    prior log-odds ``log(m - d) - log(N - 1 - m + beta + d)``. With ``discount = 0``
    both are bit for bit the two-parameter numbers, so the chains do not change.
    """
    n_rows = X.shape[0]
    rate = float(_hyper.stable_new_dish_rate(float(alpha), float(beta), float(discount), n_rows - 1.0))
    log_odds_prior = prior_log_odds_table(n_rows, float(beta), float(discount))
    Zb, K = to_buffer(Z)
    k_trace = np.zeros(n_sweeps, np.int64)
    n_types = 2 ** X.shape[0] - 1 if record_types else 1
    type_trace = np.zeros((n_sweeps if record_types else 0, n_types), np.int32)
    # C-contiguous float64 always: another memory layout would trigger a fresh compilation
    X = np.ascontiguousarray(X, dtype=np.float64)
    Zb, K = run_sweeps(X, Zb, K, rate, log_odds_prior, float(sigma_x), float(sigma_a),
                       n_sweeps, rng, random_scan, k_trace, type_trace,
                       float(inverse_temperature))
    return np.ascontiguousarray(Zb[:, :K]), k_trace, type_trace


# --------------------------------------------------------------------------------------
# the feature posterior in NumPy: its Cholesky factor, a draw of the features, the
# collapsed likelihood with its error message (the samplers' trusted inner steps)
# --------------------------------------------------------------------------------------


def singular_m_error(sigma_x: float, sigma_a: float) -> ValueError:
    return ValueError(
        f"M = Z^T Z + (sigma_x / sigma_a)^2 I is numerically singular: sigma_x / sigma_a = "
        f"{sigma_x / sigma_a:.3g} is too small for a Z with identical or linearly dependent "
        "columns; use a larger sigma_x (or a smaller sigma_a)"
    )


def cholesky_of_m(Z: np.ndarray, sigma_x: float, sigma_a: float) -> np.ndarray:
    """Lower Cholesky factor of ``M = Z^T Z + (sigma_x / sigma_a)^2 I``."""
    Zf = Z.astype(np.float64)
    M = Zf.T @ Zf
    M[np.diag_indices_from(M)] += (sigma_x / sigma_a) ** 2
    try:
        return np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise singular_m_error(sigma_x, sigma_a) from None


def checked_loglik_from_stats(ztz, ztx, sum_sq, n_rows, n_dims, sigma_x, sigma_a) -> float:
    """``log p(X | Z)`` (:func:`ibp_lab.models.linear_gaussian.collapsed_loglik`) from ``Z^T Z``, ``Z^T X`` and ``||X||^2``.

    Samplers that try several ``sigma`` for the same ``Z`` compute the
    statistics once; each call then costs one ``K x K`` Cholesky factorisation.
    The formula lives in one place, :func:`loglik_from_stats` (compiled, shared with
    the split-merge target); this adds the error message.
    """
    value = loglik_from_stats(
        np.ascontiguousarray(ztz, dtype=np.float64), np.ascontiguousarray(ztx, dtype=np.float64),
        float(sum_sq), int(n_rows), int(n_dims), float(sigma_x), float(sigma_a))
    if np.isnan(value):
        raise singular_m_error(sigma_x, sigma_a)
    return float(value)


def draw_posterior_features(X, Z, sigma_x, sigma_a, rng) -> np.ndarray:
    """``ibp_lab.models.linear_gaussian.sample_features`` without the checks (the samplers' inner step)."""
    k = Z.shape[1]
    if k == 0:
        return np.zeros((0, X.shape[1]))
    L = cholesky_of_m(Z, sigma_x, sigma_a)
    mean = cho_solve((L, True), Z.T.astype(np.float64) @ X)
    noise = rng.standard_normal((k, X.shape[1]))
    return mean + sigma_x * solve_triangular(L, noise, lower=True, trans="T")
