"""The compiled fast path of :class:`~ibp_lab.inference.streaming.RecursiveIBP` (linear-Gaussian model).

One observation of the linear-Gaussian R-IBP costs ``O(S K D)`` arithmetic, a few thousand
flops at ``K = 5``, ``D = 55``, ``S = 3``: about a microsecond. Done row by row in Python
(``StreamState.observe``, ``ibp_lab.inference.streaming._stream``) it costs nearly a hundred times that, almost all of it the
overhead of Python and NumPy calls. :func:`observe_rows` does the same work for a run of
rows in one compiled call, on the stream's running arrays in place.

It covers the steady state only. A row is an *event*, left to the Python path
(``StreamState.observe``, the reference), when anything but the usual update would
happen:

- a fresh slot would be kept (its posterior probability exceeds ``tol``, or the birth
  proposal would be accepted), or a kept slot would be retired;
- the row is admitted to the birth buffer (``births="buffer"``: its expected misfit
  exceeds the threshold);
- any of these decisions is within a relative ``_TIE`` of its threshold: the two paths
  compute the same numbers to rounding, and a near tie is left to the reference so that
  both paths always take the same decisions.

:func:`observe_rows` leaves the state exactly as it was before an event row and returns
that row's index; the caller hands the row to the Python path and calls again after it.
Since the estimator's state changes at an event (a birth, a retirement, the buffer), the
fast path never needs to know how; it only has to recognise one. ``record_posteriors`` and
the factor-analysis model never use it.

The mathematics is not repeated here: the filtering prior is the compiled core that the
Python path also calls (:func:`ibp_lab.inference.streaming.filtering.filtering_prior_core`,
called here as ``filtering_prior_with`` with a table of ``log j!``, which gives the same
numbers for fewer calls of ``lgamma``; and
:func:`~ibp_lab.inference.streaming.filtering.count_law`), and the local fit and the birth proposal
are the compiled functions of ``ibp_lab.inference.streaming._linear_gaussian``. What this module
repeats is bookkeeping: the choice of fresh slots (``StreamState.prior_with_fresh``) and
the update of the running sums (``StreamState.store`` without births or retirements, the
only case it meets), checked against the Python path
in ``tests/inference/test_streaming_fast.py``. The results of the two paths agree to rounding, not
bit for bit: the Python path's NumPy ``exp`` and ``log1p`` (vectorised) and BLAS dot
products round differently, in the last bit, from their scalar counterparts here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

from ibp_lab.inference.streaming import _linear_gaussian as lg
from ibp_lab.inference.streaming.filtering import count_law, filtering_prior_with, log_factorials

__all__ = ["observe_rows", "BIRTHS_SINGLE", "BIRTHS_BUFFER"]

#: Birth modes of :func:`observe_rows` (``RecursiveIBP(births=...)``).
BIRTHS_SINGLE, BIRTHS_BUFFER = 0, 1

# A decision whose deciding quantity lies within this relative distance of its threshold
# is an event: the two paths' numbers differ by rounding (at most 1e-15 relative on the
# streams of tests/inference/test_streaming_fast.py), far inside this margin.
_TIE = 1e-9

# The birth proposal's gain, the same code as the Python path's (compiled here if the
# local model's module leaves it a Python function).
_birth_gain = (lg.birth_gain if isinstance(lg.birth_gain, CPUDispatcher)
               else njit(cache=True)(lg.birth_gain))


@njit(cache=True)
def _fresh_prior(usage, log_unowned, dish, k, n, log_count, log_alpha, beta, next_dish,
                 log_tol, fresh_block, max_fresh, log_fact, slots):
    """``StreamState.prior_with_fresh``: kept slots, then fresh ones while their prior
    exceeds ``tol`` (at least one), in blocks that double. Returns ``log_q``, ``log_1mq``
    (all slots examined), the number of fresh slots kept and the arrays of the slots
    examined (``use, unowned, dishes``: ``slots`` again if it had their size, to be passed
    back at the next row)."""
    n_fresh = fresh_block
    while True:
        total = k + n_fresh
        if slots[0].shape[0] != total:  # made anew only when the number of slots changes
            slots = (np.empty(total), np.empty(total), np.empty(total, dtype=np.int64))
        use, unowned, dishes = slots
        use[:k] = usage[:k]
        use[k:] = 0.0
        unowned[:k] = log_unowned[:k]
        unowned[k:] = 0.0
        dishes[:k] = dish[:k]
        for j in range(n_fresh):
            dishes[k + j] = next_dish + j
        log_q, log_1mq = filtering_prior_with(use, unowned, dishes, n, log_count, log_alpha,
                                              beta, next_dish - 1, log_fact)
        if log_q[total - 1] <= log_tol or n_fresh >= max_fresh:
            break
        n_fresh *= 2
    kept = 0
    for j in range(k, total):
        if log_q[j] > log_tol:
            kept += 1
    return log_q, log_1mq, max(1, kept), slots


@njit(cache=True)
def _near(value, threshold):
    """``value`` within a relative :data:`_TIE` of ``threshold`` (a near tie)."""
    if not math.isfinite(threshold):  # an infinite threshold (no admission) has no ties
        return value == threshold
    return abs(value - threshold) <= _TIE * max(abs(threshold), abs(value), 1e-300)


@njit(cache=True)
def _birth_would_be_kept(o, k, mu, s, b, logit_q, log_q, log_1mq, mu0, s0, usage, R, sigma2,
                         n_steps, ossify):
    """Would ``LinearGaussianLocal.fit_observation`` accept its birth proposal (or nearly)?

    Slot ``k``, the first fresh one, is proposed (every fresh slot is below ``tol``, hence
    below 1/2, when this is asked); ``mu``, ``s``, ``b`` and ``R`` are left as they were.
    """
    saved_mu = mu[k].copy()
    saved_s, saved_b = s[k], b[k]
    terms = lg.slot_terms(k, mu, s, b, mu0, s0, log_q, log_1mq)
    after = lg.propose_birth(k, o, mu, s, b, logit_q, mu0, s0, usage, R.copy(), sigma2,
                             n_steps, ossify)
    gain = _birth_gain(k, R, terms, after, mu, s, b, mu0, s0, log_q, log_1mq, sigma2)
    # the gain is a difference of terms of the size of |R|^2 / (2 sigma^2): its rounding
    # scale
    scale = (np.dot(R, R) + np.dot(after, after)) / (2 * sigma2) + abs(terms[0]) + 1.0
    accepted = (gain > -_TIE * scale) and (b[k] >= 0.5 or _near(b[k], 0.5))
    mu[k] = saved_mu
    s[k], b[k] = saved_s, saved_b
    return accepted


@njit(cache=True)
def _workspace(total, D):
    """Arrays for :func:`_row_posterior` on ``total`` slots: ``mu0, m1`` (``total x D``),
    then ``s0, s1, use, lq, l1q, b, logit_q``. :func:`observe_rows` makes them anew only
    when the number of slots changes (rarely): a row's fit then allocates nothing."""
    return (np.empty((total, D)), np.empty((total, D)), np.empty(total), np.empty(total),
            np.empty(total), np.empty(total), np.empty(total), np.empty(total),
            np.empty(total))


@njit(cache=True)
def _row_posterior(o, mu, var, usage, k, log_q, log_1mq, s_prior, sigma2, n_steps, ossify,
                   work):
    """``StreamState.local_posterior`` without the birth proposal: the local fit on the
    kept slots and fresh ones, as many as ``work`` holds (:func:`_workspace`). Returns the
    posteriors, the residual and what the fit started from (arrays of ``work``, valid
    until the next row)."""
    mu0, m1, s0, s1, use, lq, l1q, b, logit_q = work
    total, D = mu0.shape
    for j in range(total):
        kept = j < k
        for d in range(D):
            mu0[j, d] = mu[j, d] if kept else 0.0
            m1[j, d] = mu0[j, d]
        s0[j] = var[j] if kept else s_prior
        s1[j] = s0[j]
        use[j] = usage[j] if kept else 0.0
        lq[j] = log_q[j]
        l1q[j] = log_1mq[j]
        b[j] = math.exp(lq[j])
        logit_q[j] = lq[j] - l1q[j]
    R = lg.local_fit(o, m1, s1, b, logit_q, mu0, s0, use, sigma2, n_steps, ossify)
    return m1, s1, b, R, mu0, s0, use, lq, l1q, logit_q


@njit(cache=True)
def _is_event(o, k, total, n_examined, log_q_all, post, tol, log_tol, sigma2, n_steps,
              ossify, births, threshold):
    """Whether the row is an event (module docstring), from its local fit ``post``."""
    m1, s1, b, R, mu0, s0, use, lq, l1q, logit_q = post
    for j in range(k, n_examined):  # the number of fresh slots is decided clearly
        if _near(log_q_all[j], log_tol):
            return True
    for j in range(k, total):  # a fresh slot that would be kept
        if b[j] > tol or _near(b[j], tol):
            return True
    for j in range(k):  # a kept slot that would be retired
        clearly_kept = (b[j] > tol and not _near(b[j], tol)) or \
            (lq[j] > log_tol and not _near(lq[j], log_tol))
        if not clearly_kept:
            return True
    if births == BIRTHS_BUFFER:
        ratio = lg.expected_misfit(R, m1, s1, b) / sigma2
        return ratio > threshold or _near(ratio, threshold)
    return _birth_would_be_kept(o, k, m1, s1, b, logit_q, lq, l1q, mu0, s0, use, R, sigma2,
                                n_steps, ossify)


@njit(cache=True)
def observe_rows(X, start, slots, counts, params, rate_out, slots_out):
    """Process rows ``X[start], X[start + 1], ...`` in place until the first event.

    Parameters
    ----------
    X : numpy.ndarray
        ``(N, D)`` C-contiguous float64 observations.
    start : int
        First row to process.
    slots : ibp_lab.inference.streaming._stream.KernelSlots
        The stream's slot arrays ``mu, var, usage, log_unowned, dish`` (capacity ``>= k``,
        changed in place) and the retired slots' count law
        (:meth:`~ibp_lab.inference.streaming._stream.StreamState.kernel_view`).
    counts : ibp_lab.inference.streaming._stream.KernelCounts
        ``k`` kept slots, ``n_seen`` observations before row ``start``, the next dish
        number, the retired slots' summed existence probability.
    params : ibp_lab.inference.streaming._stream.KernelParams
        ``log alpha``, ``beta``, ``sigma_a^2``, ``sigma_x^2``, the coordinate-ascent steps,
        the "ossify" average, ``tol`` and its logarithm (as the Python path computes it),
        the first block of fresh slots and the most examined, :data:`BIRTHS_SINGLE` or
        :data:`BIRTHS_BUFFER`, and the buffer's admission threshold on ``misfit /
        sigma_x^2``.
    rate_out, slots_out : numpy.ndarray
        ``(N,)`` float64 and int64: the expected number of features and the number of kept
        slots after row ``i`` go to index ``i``.

    Returns
    -------
    stop : int
        The first row not processed: ``N``, or an event row (the state is as before it).
    rate : float
        The expected number of features after row ``stop - 1`` (NaN if ``stop == start``).

    Examples
    --------
    Before any feature exists the first row is always an event (a birth or a fresh slot):

    >>> from ibp_lab.inference.streaming._stream import StreamState
    >>> from ibp_lab.inference.streaming._settings import check_settings
    >>> stream = StreamState(check_settings(
    ...     alpha=1.0, log_alpha=None, beta=1.0, sigma_x=0.5, sigma_a=1.0, sigma_w=1.0,
    ...     model="linear_gaussian", n_steps=3, tol=1e-6, ossify=False, keep_history=True,
    ...     record_posteriors=False, births="single"))
    >>> stream.begin(3)
    >>> stop, rate = observe_rows(np.ones((2, 3)), 0, *stream.kernel_view(), np.zeros(2),
    ...                           np.zeros(2, dtype=np.int64))
    >>> stop
    0
    """
    mu, var, usage, log_unowned, dish, retired_log_pmf = slots
    k, n_seen, next_dish, retired_rate = counts
    (log_alpha, beta, s_prior, sigma2, n_steps, ossify, tol, log_tol, fresh_block, max_fresh,
     births, threshold) = params
    N = X.shape[0]
    rate = np.nan
    # log j! for the dish numbers the fresh slots' tails reach as a rule (the Poisson terms
    # beyond come from lgamma, the same numbers)
    log_fact = log_factorials(next_dish + 2 * fresh_block + 8)
    work = _workspace(0, X.shape[1])
    slots_examined = (np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))
    for i in range(start, N):
        o = X[i]
        n = n_seen + (i - start) + 1
        log_count = count_law(log_unowned[:k], retired_log_pmf)
        log_q, log_1mq, n_fresh, slots_examined = _fresh_prior(
            usage, log_unowned, dish, k, n, log_count, log_alpha, beta, next_dish, log_tol,
            fresh_block, max_fresh, log_fact, slots_examined)
        total = k + n_fresh
        if work[2].shape[0] != total:
            work = _workspace(total, X.shape[1])
        post = _row_posterior(o, mu, var, usage, k, log_q, log_1mq, s_prior, sigma2, n_steps,
                              ossify, work)
        if _is_event(o, k, total, log_q.shape[0], log_q, post, tol, log_tol, sigma2,
                     n_steps, ossify, births, threshold):
            return i, rate
        m1, s1, b = post[0], post[1], post[2]
        rate = 0.0
        for j in range(k):  # StreamState.store without births or retirements
            mu[j] = m1[j]
            var[j] = s1[j]
            usage[j] += b[j]
            log_unowned[j] += math.log1p(-b[j])
            rate += -math.expm1(log_unowned[j])
        rate += retired_rate
        rate_out[i] = rate
        slots_out[i] = k
    return N, rate
