"""The filtering prior of streaming R-IBP inference, computed in log space.

After ``n - 1`` observations the Recursive IBP keeps, for every feature slot ``k``,

- the running sum ``M_k = sum_{n' < n} b_{n'k}`` of earlier posterior probabilities
  ``b_{n'k} = q(z_{n'k} = 1 | x_{<=n'})`` (the feature's *usage*), and
- the running product ``Pi_k = prod_{n' < n} (1 - b_{n'k})``, the probability that no
  earlier observation owned the feature (kept as ``log Pi_k``).

Feature ``k`` exists exactly when some earlier observation owned it, which under the frozen,
independent beliefs happens with probability ``1 - Pi_k``, independently across slots. The
number of features ``Lambda_{n-1}`` is therefore a sum of independent Bernoulli variables:
its law is the *Poisson-binomial* law of the ``1 - Pi_k``
(:func:`log_feature_count_pmf`, an ``O(K^2)`` recursion in log space). Schaeffer et al.
(2022, supplement A) replace it by a Poisson law of the same mean ``rho_{n-1} = sum_k (1 -
Pi_k)`` (Le Cam). That step is wrong where features are established: Le Cam's bound on the
total variation, ``sum_k (1 - Pi_k)^2``, exceeds 1 as soon as two features are nearly
certain, and a sum of Bernoullis with probabilities near 1 is nearly constant while the
Poisson law spreads over ``rho +- sqrt(rho)``. This module uses the exact law.

The prior of observation ``n`` for the slot that holds dish number ``d`` is

.. math::

    q(z_{nk} = 1 \\mid x_{<n}) = \\frac{M_k}{\\beta + n - 1} + \\Pi_k\\, c_d,
    \\qquad
    c_d = P(\\Lambda_{n-1} + \\lambda_n \\ge d \\mid \\Lambda_{n-1} \\le e_d),

with ``Lambda_{n-1}`` Poisson-binomial as above, the number of new features
``lambda_n ~ Poisson(alpha beta / (beta + n - 1))`` (independent of the past), and ``e_d``
what is known about the number of features when dish ``d`` is empty: ``e_d = d - 1`` for a
slot that some earlier observation may own, and ``e_d = e`` (the last dish number anyone
may own) for the fresh slots beyond it, which are all empty together (``Pi = 1``). Where
the condition has probability 0 (more than ``e_d`` features exist for sure, which the
mean-field posterior allows for a slot that is itself uncertain), ``Lambda_{n-1} = e_d``,
the value nearest to the condition, is used.

Why ``Pi_k c_d`` and not the paper's ``P(Lambda_{n-1} <= d - 1 < Lambda_n)``: that term
factors as ``P(Lambda_{n-1} <= d - 1) * c_d``, and the first factor is the probability that
dish ``d`` does not exist yet. In the exact IBP a dish exists exactly when someone took it,
so this factor *is* ``P(m_k = 0)``, which the mean-field posterior gives slot by slot as
``Pi_k``. Using ``Pi_k`` keeps the two terms consistent: since
``M_k / (n - 1) <= max_n' b_{n'k} <= 1 - Pi_k``, the prior is at most
``(1 - Pi_k)(n - 1)/(beta + n - 1) + Pi_k <= 1``. The paper's literal form, with a Poisson
factor that does not know that slot ``k`` is occupied, can exceed 1 (see
:func:`paper_prior` and the tests). Both ``q`` and ``1 - q`` are assembled from sums of
non-negative terms, so neither is ever negative and nothing is clipped; ``q`` is
formed as ``on / (on + off)`` from the two non-negative parts, so ``0 <= q <= 1`` holds in
floating point too (``c_d`` likewise).

Everything is in log space because in the zero-noise limit (``alpha = exp(-gamma^2 /
(2 sigma_x^2))``, chapter 12) the new-feature rate is far below the smallest float, and
because the count law has probabilities ``prod_k (1 - Pi_k)`` far below it too.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import special

from ibp_lab._checks import check_count, check_positive, check_real_array
from ibp_lab._hyper import new_dish_rate

#: Largest dish number the checked front ends accept: the work and memory of the prior
#: grow with it (one Poisson tail per dish number).
MAX_DISH = 10**6

__all__ = ["log_filtering_prior", "filtering_prior", "log_new_feature_fraction",
           "log_feature_count_pmf", "paper_prior"]


@njit(cache=True)
def _add_bernoullis(base, log_exist, log_unowned):
    """Log pmf of ``C + sum_k B_k``: ``C`` has log pmf ``base``, ``B_k ~ Bernoulli(p_k)``
    independent, ``log_exist = log p_k`` and ``log_unowned = log(1 - p_k)``.

    One Bernoulli at a time, ``P(S + B = j) = P(S = j)(1 - p) + P(S = j - 1) p``: each entry
    is a log-sum-exp of two non-negative terms, never a difference, so probabilities near 0
    and near 1 (``log_unowned = -inf`` or ``log_exist = -inf``) are exact.
    """
    size = base.shape[0]
    out = np.full(size + log_exist.shape[0], -np.inf)
    out[:size] = base
    for k in range(log_exist.shape[0]):
        lp, lq = log_exist[k], log_unowned[k]
        for j in range(size, -1, -1):
            stay = out[j] + lq
            move = out[j - 1] + lp if j > 0 else -np.inf
            hi = max(stay, move)
            lo = min(stay, move)
            if lo == -np.inf:  # one term (or none): exactly hi, without exp and log1p
                out[j] = hi
            else:
                out[j] = hi + math.log1p(math.exp(lo - hi))
        size += 1
    return out


@njit(cache=True)
def count_law(log_unowned, base):
    """Compiled core of the count law (:func:`log_feature_count_pmf`), unchecked.

    ``log_unowned`` and ``base`` are contiguous float64 arrays. Slots with ``Pi = 1``
    (``log_unowned = 0``) add 0 for sure and are skipped; ``log(1 - Pi)`` is formed as
    ``log(-expm1(log Pi))``, accurate as ``Pi -> 1``. The estimator's Python path and its
    compiled fast path (``ibp_lab.inference.streaming._fast``) both call this function, so they
    compute the same law by the same code.
    """
    n = 0
    for v in log_unowned:
        if v < 0.0:
            n += 1
    kept = np.empty(n)
    log_exist = np.empty(n)
    i = 0
    for v in log_unowned:
        if v < 0.0:
            kept[i] = v
            log_exist[i] = math.log(-math.expm1(v))  # log(1 - Pi); 0 for Pi = 0
            i += 1
    return _add_bernoullis(base, log_exist, kept)


def trusted_count_log_pmf(log_unowned: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Unchecked core of :func:`log_feature_count_pmf` (:func:`count_law`)."""
    return count_law(np.ascontiguousarray(log_unowned, dtype=np.float64),
                     np.ascontiguousarray(base, dtype=np.float64))


def log_feature_count_pmf(log_unowned, *, base_log_pmf=None) -> np.ndarray:
    """Log of the Poisson-binomial pmf of the number of existing features.

    Slot ``k`` exists with probability ``1 - Pi_k``, independently of the others, so the
    number of features is ``sum_k Bernoulli(1 - Pi_k)`` (plus an independent count with
    log pmf ``base_log_pmf``, the retired slots of a stream). Computed by adding one
    Bernoulli at a time in log space (``O(K^2)``); exact for ``Pi_k`` equal to or near 0
    and 1.

    Parameters
    ----------
    log_unowned : array_like
        ``log Pi_k`` per slot, each <= 0 (``-inf`` for a feature that exists for sure).
    base_log_pmf : array_like, optional
        Log pmf on ``0, 1, ...`` of an independent count added to the sum (its entries'
        exponentials must sum to 1); default: the count 0.

    Returns
    -------
    numpy.ndarray
        ``log P(count = j)`` for ``j = 0 .. len(base_log_pmf) - 1 + (number of slots
        with Pi_k < 1)``.

    Examples
    --------
    Two features that exist for sure and one with probability 1/2: the count is 2 or 3.

    >>> pmf = np.exp(log_feature_count_pmf([-np.inf, -np.inf, np.log(0.5)]))
    >>> pmf.round(12)
    array([0. , 0. , 0.5, 0.5])
    """
    log_unowned = check_real_array("log_unowned", log_unowned)
    if log_unowned.ndim != 1:
        raise ValueError(f"log_unowned must be 1-D, got shape {log_unowned.shape}")
    if np.any(np.isnan(log_unowned)) or np.any(log_unowned > 0):
        raise ValueError("log_unowned entries must be <= 0 (logs of probabilities)")
    if base_log_pmf is None:
        base = np.zeros(1)
    else:
        base = _check_log_pmf("base_log_pmf", base_log_pmf)
    return trusted_count_log_pmf(log_unowned.astype(np.float64), base)


def _check_log_pmf(name: str, log_pmf, *, normalised: bool = True) -> np.ndarray:
    """A log pmf on ``0, 1, ...``: 1-D, non-empty, entries <= 0 (no NaN; ``-inf`` allowed),
    and, if ``normalised``, exponentials summing to 1."""
    arr = check_real_array(name, log_pmf)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if np.any(np.isnan(arr)) or np.any(arr > 0):
        raise ValueError(f"{name} entries must be <= 0 (logs of probabilities)")
    if not normalised:
        return arr
    total = float(special.logsumexp(arr))
    if not abs(total) <= 1e-9:
        raise ValueError(f"{name} must be a log pmf (its exponentials sum to "
                         f"{np.exp(total):.12g}, not 1)")
    return arr.astype(np.float64)


# A tail sum stops where the terms left out total less than e^-40 (4e-18, a fiftieth of
# the float64 epsilon) of the smallest tail it returns.
_LOG_TAIL_CUTOFF = 40.0
_LOG_HALF = math.log(0.5)


@njit(cache=True)
def _log_sum_step(mx, s, x):
    """One step of an online log-sum-exp: the sum is ``exp(mx) * s``; add ``exp(x)``."""
    if x > mx:
        return x, (s * math.exp(mx - x) if mx > -np.inf else 0.0) + 1.0
    if x > -np.inf:
        return mx, s + math.exp(x - mx)
    return mx, s


@njit(cache=True)
def log_factorials(size):
    """``log j!`` for ``j = 0 .. size - 1``, each ``math.lgamma(j + 1.0)`` as the compiled
    code computes it: a table that gives the Poisson terms the same numbers for less."""
    table = np.empty(size)
    for j in range(size):
        table[j] = math.lgamma(j + 1.0)
    return table


@njit(cache=True, inline="always")
def _log_factorial(j, table):
    """``math.lgamma(j + 1.0)``, from ``table`` (:func:`log_factorials`) where it reaches."""
    return table[j] if j < table.shape[0] else math.lgamma(j + 1.0)


@njit(cache=True)
def log_poisson_tails(m_max, log_rate):
    """:func:`poisson_tails` without a table of log factorials."""
    return poisson_tails(m_max, log_rate, np.empty(0))


@njit(cache=True)
def poisson_tails(m_max, log_rate, log_fact):
    """``log P(X >= m)`` and ``log P(X <= m - 1)``, ``X ~ Poisson(exp(log_rate))``, at index
    ``m - 1`` for ``m = 1 .. m_max`` (compiled, no SciPy). ``log_fact``: ``log j!`` for the
    first ``j`` (:func:`log_factorials`; any length, even 0: the same numbers, for fewer
    calls of ``lgamma``).

    Each pmf term ``log P(X = j) = j log_rate - rate - lgamma(j + 1)`` is computed directly,
    in logs, so the rate may be far below the smallest float (the zero-noise limit,
    ``log_rate`` like ``-5e5``). The lower tails are running log-sum-exps of the terms from
    ``j = 0`` up: sums of non-negative terms, accurate however small. The upper tail is
    ``log(1 - P(X <= m - 1))`` while that lower tail is below 1/2 (no cancellation: the
    upper tail is then above 1/2), and beyond it a log-sum-exp of the terms from a top
    ``J`` down. ``J`` is the first index above both ``m_max`` and the rate at which the
    geometric bound on what is left out, ``P(X = J) r / (1 - r)`` with ``r = rate / (J + 1)``
    the largest ratio of consecutive later terms, falls ``_LOG_TAIL_CUTOFF`` nats below
    ``P(X = m_max) <= P(X >= m_max)``: the truncation changes no tail by more than a
    fiftieth of the float64 epsilon, relatively. Work: ``O(m_max + sqrt(rate))`` terms
    (beyond ``m_max`` the terms fall like a Gaussian of width ``sqrt(rate)``).

    Examples
    --------
    >>> from scipy import stats
    >>> log_sf, log_cdf = log_poisson_tails(3, np.log(2.0))
    >>> bool(np.allclose(np.exp(log_sf), stats.poisson.sf([0, 1, 2], 2.0), rtol=1e-13))
    True
    >>> bool(np.allclose(np.exp(log_cdf), stats.poisson.cdf([0, 1, 2], 2.0), rtol=1e-13))
    True
    """
    log_sf = np.empty(m_max)
    log_cdf = np.empty(m_max)
    if log_rate == -np.inf:  # X = 0 for sure
        log_sf[:] = -np.inf
        log_cdf[:] = 0.0
        return log_sf, log_cdf
    rate = math.exp(log_rate)
    terms = np.empty(m_max + 1)  # log P(X = j); 0 * log_rate is 0 even for huge rates
    for j in range(m_max + 1):
        terms[j] = (j * log_rate if j else 0.0) - rate - _log_factorial(j, log_fact)
    # lower tails from j = 0 up; upper tails by complement while the lower one is < 1/2
    mx, s = -np.inf, 0.0
    first_direct = m_max + 1  # the first m whose upper tail is summed directly
    for m in range(1, m_max + 1):
        mx, s = _log_sum_step(mx, s, terms[m - 1])
        log_cdf[m - 1] = mx + math.log(s) if mx > -np.inf else -np.inf
        if first_direct > m_max and log_cdf[m - 1] >= _LOG_HALF:
            first_direct = m
        if first_direct > m:
            log_sf[m - 1] = math.log(-math.expm1(log_cdf[m - 1]))
    if first_direct > m_max:
        return log_sf, log_cdf
    # the rest directly, from the top J down (J: the truncation bound of the docstring)
    floor = terms[m_max] - _LOG_TAIL_CUTOFF
    top, last = m_max, terms[m_max]
    while True:
        ratio = rate / (top + 1.0)
        if ratio < 1.0 and last + math.log(ratio) - math.log1p(-ratio) < floor:
            break
        top += 1
        last = top * log_rate - rate - _log_factorial(top, log_fact)
    mx, s = -np.inf, 0.0
    for j in range(top, m_max, -1):
        mx, s = _log_sum_step(mx, s, j * log_rate - rate - _log_factorial(j, log_fact))
    for j in range(m_max, first_direct - 1, -1):
        mx, s = _log_sum_step(mx, s, terms[j])
        log_sf[j - 1] = mx + math.log(s) if mx > -np.inf else -np.inf
    return log_sf, log_cdf


# Terms of a sum smaller than its largest term by this many nats are left out (their
# total is below e^-50 of the sum).
_LOG_NEGLIGIBLE = 50.0


@njit(cache=True)
def _log_fractions(dish, bound, log_pmf, log_sf, log_cdf, mode):
    """For each slot: ``log(A / (A + B))`` and ``log(B / (A + B))`` with
    ``A = sum_{j<=e} P(Lambda=j) P(lambda >= d-j)`` and ``B`` the same with
    ``P(lambda <= d-j-1)``.

    ``j`` runs down from ``e``; below the mode of ``Lambda`` every term of both sums shrinks
    as ``j`` decreases, so the loop stops once they are negligible: ``O(sqrt(rate))`` terms
    per slot instead of ``O(d)``. Both sums are accumulated as online log-sum-exps.
    """
    n = dish.shape[0]
    out_c = np.empty(n)
    out_not = np.empty(n)
    for a in range(n):
        d = dish[a]
        mx = -np.inf
        sx = 0.0
        my = -np.inf
        sy = 0.0
        for j in range(bound[a], -1, -1):
            lp = log_pmf[j]
            x = lp + log_sf[d - j - 1]
            y = lp + log_cdf[d - j - 1]
            if j <= mode and x < mx - _LOG_NEGLIGIBLE and lp < my - _LOG_NEGLIGIBLE:
                break
            if x > mx:
                sx = sx * math.exp(mx - x) + 1.0 if mx > -np.inf else 1.0
                mx = x
            elif x > -np.inf:
                sx += math.exp(x - mx)
            if y > my:
                sy = sy * math.exp(my - y) + 1.0 if my > -np.inf else 1.0
                my = y
            elif y > -np.inf:
                sy += math.exp(y - my)
        la = mx + math.log(sx) if mx > -np.inf else -np.inf
        lb = my + math.log(sy) if my > -np.inf else -np.inf
        if la == -np.inf and lb == -np.inf:
            # P(Lambda <= e) = 0: take Lambda = e, the value nearest to the condition
            la = log_sf[d - bound[a] - 1]
            lb = log_cdf[d - bound[a] - 1]
        # logaddexp(la, lb) >= max(la, lb), so both results are <= 0 in floating point
        hi = max(la, lb)
        total = hi + math.log1p(math.exp(-abs(la - lb))) if min(la, lb) > -np.inf else hi
        out_c[a] = la - total
        out_not[a] = lb - total
    return out_c, out_not


def log_new_feature_fraction(
    dish, log_count_pmf, log_rate_new: float, bound=None
) -> tuple[np.ndarray, np.ndarray]:
    """``log c_d`` and ``log (1 - c_d)`` for dish numbers ``d >= 1``.

    ``c_d = P(Lambda + lambda >= d | Lambda <= e)`` with ``Lambda`` the number of features
    before the observation (log pmf ``log_count_pmf``) and ``lambda ~
    Poisson(exp(log_rate_new))`` independent: the probability that the current observation
    creates dish ``d``, given that at most ``e`` features exist. By default ``e = d - 1``
    (all we know is that dish ``d`` is empty). Conditioning on ``Lambda = j`` gives
    ``c_d = A / (A + B)`` with ``A = sum_{j<=e} P(Lambda = j) P(lambda >= d - j)`` and
    ``B`` the same with ``P(lambda <= d - 1 - j)``: sums of non-negative terms, so that
    ``0 <= c_d <= 1`` holds exactly in floating point. Where ``P(Lambda <= e) = 0``,
    ``Lambda = e`` is used (module docstring).

    Parameters
    ----------
    dish : array_like
        Integer dish numbers, each >= 1.
    log_count_pmf : array_like
        ``log P(Lambda = j)`` for ``j = 0, 1, ...`` (beyond its end, probability 0); for a
        stream, :func:`log_feature_count_pmf`. The pmf must be log-concave, as every sum
        of independent Bernoullis is (the sums stop early below its mode).
    log_rate_new : float
        Log of the Poisson rate of new features (``-inf`` allowed).
    bound : array_like, optional
        ``e`` for each dish, in ``[0, d - 1]``; default ``d - 1``.

    Returns
    -------
    log_c, log_one_minus_c : numpy.ndarray
        Same shape as ``dish``.

    Raises
    ------
    ValueError, TypeError
        For dish numbers that are not integers >= 1, a ``log_count_pmf`` entry above 0 or
        NaN, a NaN or ``+inf`` rate, or a ``bound`` outside ``[0, d - 1]``.

    Examples
    --------
    Before any observation there are no features (``Lambda = 0``), so dish ``d`` is
    created exactly when at least ``d`` new features are:

    >>> from scipy import stats
    >>> log_c, _ = log_new_feature_fraction([1, 2, 3], [0.0], np.log(2.0))
    >>> bool(np.allclose(np.exp(log_c), stats.poisson.sf([0, 1, 2], 2.0)))
    True
    """
    dish = _check_dish(dish)
    if dish.ndim != 1:
        raise ValueError(f"dish must be 1-D, got shape {dish.shape}")
    log_count_pmf = _check_log_pmf("log_count_pmf", log_count_pmf, normalised=False)
    log_rate_new = _check_log_scalar("log_rate_new", log_rate_new)
    if bound is not None:
        bound = _check_bound(bound, dish)
    return _new_feature_fraction(dish, log_count_pmf, log_rate_new, bound)


def _check_log_scalar(name: str, value) -> float:
    """A real number or ``-inf`` (the log of a rate or parameter that may be 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if np.isnan(value) or value == np.inf:
        raise ValueError(f"{name} must be a finite real or -inf, got {value}")
    return value


def _check_bound(bound, dish: np.ndarray) -> np.ndarray:
    """``e`` per dish: integers in ``[0, d - 1]``, one per dish."""
    arr = check_real_array("bound", bound)
    raw = np.asarray(bound)
    if raw.dtype.kind not in "iu":
        raise TypeError(f"bound must hold integers, got dtype {raw.dtype}")
    if raw.shape != dish.shape:
        raise ValueError(f"bound must have the shape of dish {dish.shape}, got {raw.shape}")
    if arr.size and (raw.min() < 0 or np.any(raw > dish - 1)):
        raise ValueError("bound entries must be in [0, d - 1] for their dish number d")
    return raw.astype(np.int64)


@njit(cache=True)
def new_feature_fraction(dish, bound, log_count_pmf, log_rate_new):
    """Compiled core of :func:`log_new_feature_fraction`: ``(log c_d, log (1 - c_d))``.

    Unchecked: ``dish`` and ``bound`` int64 (``bound`` in ``[0, d - 1]``), ``log_count_pmf``
    float64, all contiguous.
    """
    return new_feature_fraction_with(dish, bound, log_count_pmf, log_rate_new, np.empty(0))


@njit(cache=True)
def new_feature_fraction_with(dish, bound, log_count_pmf, log_rate_new, log_fact):
    """:func:`new_feature_fraction` with a table of log factorials (:func:`log_factorials`,
    any length: the same numbers)."""
    if dish.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    d_max = dish.max()
    log_pmf = np.full(bound.max() + 1, -np.inf)
    top = min(log_count_pmf.shape[0], log_pmf.shape[0])
    log_pmf[:top] = log_count_pmf[:top]
    # index m - 1: log P(lambda >= m) and log P(lambda <= m - 1)
    log_sf, log_cdf = poisson_tails(d_max, log_rate_new, log_fact)
    mode = np.argmax(log_count_pmf)  # a log-concave pmf increases up to here
    return _log_fractions(dish, bound, log_pmf, log_sf, log_cdf, mode)


def _new_feature_fraction(dish, log_count_pmf, log_rate_new, bound=None):
    """Unchecked core of :func:`log_new_feature_fraction` (:func:`new_feature_fraction`)."""
    dish = np.ascontiguousarray(dish, dtype=np.int64)
    bound = dish - 1 if bound is None else np.ascontiguousarray(bound, dtype=np.int64)
    return new_feature_fraction(dish, bound, np.ascontiguousarray(log_count_pmf,
                                                                  dtype=np.float64),
                                float(log_rate_new))


def log_filtering_prior(
    usage,
    log_unowned,
    dish,
    n: int,
    log_count_pmf,
    log_alpha: float,
    beta: float,
    *,
    last_used: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``log q`` and ``log (1 - q)`` of the filtering prior of observation ``n``, per slot.

    Parameters
    ----------
    usage : array_like
        ``M_k``, running sums of earlier posterior probabilities, in ``[0, n - 1]``.
    log_unowned : array_like
        ``log Pi_k``, logs of the running products ``prod (1 - b_{n'k})`` (<= 0).
    dish : array_like
        Dish number of each slot (1-based, order of creation).
    n : int
        Index of the observation, >= 1.
    log_count_pmf : array_like
        Log pmf of the number of features ``Lambda_{n-1}`` before observation ``n``:
        :func:`log_feature_count_pmf` of every slot, retired ones included.
    log_alpha : float
        Log of the mass parameter.
    beta : float
        Concentration, > 0.
    last_used : int, optional
        Dishes numbered above ``last_used`` are fresh: nobody has owned them, so at most
        ``last_used`` features exist and their new-feature fraction is conditioned on
        ``Lambda_{n-1} <= last_used``. Default: each dish ``d`` is conditioned on
        ``Lambda_{n-1} <= d - 1`` only.

    Returns
    -------
    log_q, log_one_minus_q : numpy.ndarray
        One entry per slot.

    Raises
    ------
    ValueError, TypeError
        As :func:`filtering_prior`, and for a ``log_count_pmf`` entry above 0 or NaN.
    """
    n = check_count("n", n, minimum=1)
    beta = check_positive("beta", beta)
    log_alpha = _check_log_scalar("log_alpha", log_alpha)
    usage, log_unowned, dish = _check_slots(usage, log_unowned, dish, n)
    if last_used is not None:
        last_used = check_count("last_used", last_used)
    log_count_pmf = _check_log_pmf("log_count_pmf", log_count_pmf, normalised=False)
    return trusted_log_filtering_prior(usage, log_unowned, dish, n, log_count_pmf, log_alpha,
                                beta, last_used=last_used)


@njit(cache=True)
def _log_add(a, b):
    """``log(exp(a) + exp(b))`` of two logs of non-negative numbers (``-inf`` allowed)."""
    hi = max(a, b)
    lo = min(a, b)
    if lo == -np.inf:  # one term (or none): exactly hi, without exp and log1p
        return hi
    return hi + math.log1p(math.exp(lo - hi))


@njit(cache=True)
def filtering_prior_core(usage, log_unowned, dish, n, log_count_pmf, log_alpha, beta,
                         last_used):
    """Compiled core of :func:`log_filtering_prior`: ``(log q, log (1 - q))`` per slot.

    Unchecked: contiguous float64 ``usage``, ``log_unowned``, ``log_count_pmf``; int64
    ``dish``; ``last_used < 0`` stands for ``None``. The estimator's Python path and its
    compiled fast path (``ibp_lab.inference.streaming._fast``) both call it (the fast path
    as :func:`filtering_prior_with`, with a table of log factorials: the same numbers).
    """
    return filtering_prior_with(usage, log_unowned, dish, n, log_count_pmf, log_alpha, beta,
                                last_used, np.empty(0))


@njit(cache=True)
def filtering_prior_with(usage, log_unowned, dish, n, log_count_pmf, log_alpha, beta,
                         last_used, log_fact):
    """:func:`filtering_prior_core` with a table of log factorials (:func:`log_factorials`)."""
    size = dish.shape[0]
    # beta + (n - 1), not (beta + n) - 1: for n = 1 the latter rounds a tiny beta to 0
    denominator = beta + (n - 1)
    # log of the new-dish rate ibp_lab._hyper.new_dish_rate(alpha, beta, n - 1), taken in
    # log space because the stream's alpha lives there (it may underflow as a number)
    log_rate_new = log_alpha + math.log(beta) - math.log(denominator)
    # c_d enters only through Pi_k c_d: a slot that exists for sure (Pi_k = 0, an
    # established feature) needs none, which saves most of the work in a long stream
    need = np.flatnonzero(log_unowned > -np.inf)
    bound = dish[need] - 1
    if last_used >= 0:
        bound = np.minimum(bound, last_used)
    log_c = np.zeros(size)  # any value <= 0 gives Pi_k c_d = 0 where Pi_k = 0
    log_1mc = np.zeros(size)
    log_c[need], log_1mc[need] = new_feature_fraction_with(dish[need], bound, log_count_pmf,
                                                           log_rate_new, log_fact)
    log_q = np.empty(size)
    log_1mq = np.empty(size)
    for k in range(size):
        owned = -math.expm1(log_unowned[k])  # 1 - Pi_k
        share = usage[k] / denominator
        # 1 - q = (1 - Pi_k - M_k / (beta + n - 1)) + Pi_k (1 - c): the first bracket is at
        # least (1 - Pi_k) beta / (beta + n - 1) because M_k <= (n - 1)(1 - Pi_k) (module
        # docstring).
        spare = owned - share
        log_share = math.log(share) if share > 0.0 else -np.inf
        log_spare = math.log(spare) if spare > 0.0 else (-np.inf if spare == 0.0 else np.nan)
        log_on = _log_add(log_share, log_unowned[k] + log_c[k])
        log_off = _log_add(log_spare, log_unowned[k] + log_1mc[k])
        # q = on / (on + off): on + off = 1 mathematically; the ratio keeps 0 <= q <= 1
        # exactly.
        log_total = _log_add(log_on, log_off)
        log_q[k] = log_on - log_total
        log_1mq[k] = log_off - log_total
    return log_q, log_1mq


def trusted_log_filtering_prior(usage, log_unowned, dish, n, log_count_pmf, log_alpha, beta,
                                *, last_used=None):
    """Unchecked core of :func:`log_filtering_prior` (:func:`filtering_prior_core`)."""
    return filtering_prior_core(
        np.ascontiguousarray(usage, dtype=np.float64),
        np.ascontiguousarray(log_unowned, dtype=np.float64),
        np.ascontiguousarray(dish, dtype=np.int64), int(n),
        np.ascontiguousarray(log_count_pmf, dtype=np.float64), float(log_alpha), float(beta),
        -1 if last_used is None else int(last_used))


def filtering_prior(
    usage,
    log_unowned,
    dish,
    n: int,
    alpha: float,
    beta: float,
    *,
    last_used: int | None = None,
    retired_log_pmf=None,
) -> np.ndarray:
    """The filtering prior ``q(z_nk = 1 | x_{<n})`` of each slot (see the module docstring).

    A checked, probability-scale front end to :func:`log_filtering_prior`. The number of
    features before observation ``n`` has the Poisson-binomial law of the listed slots'
    existence probabilities ``1 - Pi_k`` (plus the retired slots' count, if given).

    Parameters
    ----------
    usage : array_like
        ``M_k`` per slot, each in ``[0, n - 1]``.
    log_unowned : array_like
        ``log prod_{n'<n} (1 - b_{n'k})`` per slot, each <= 0.
    dish : array_like
        Dish numbers, integers >= 1.
    n : int
        The observation, >= 1.
    alpha, beta : float
        IBP parameters, > 0.
    last_used : int, optional
        Largest dish number that anyone may own; see :func:`log_filtering_prior`.
    retired_log_pmf : array_like, optional
        Log pmf of the number of existing features among slots not listed (a stream's
        retired slots); default: there are none.

    Returns
    -------
    numpy.ndarray
        Probabilities in ``[0, 1]``, one per slot.

    Examples
    --------
    A feature owned for sure by the first of two observations (``M = 1``, ``Pi = 0``) and
    the next, still empty, dish:

    >>> q = filtering_prior([1.0, 0.0], [-np.inf, 0.0], [1, 2], 2, 2.0, 1.0)
    >>> q.round(4)  # 1 / (beta + 1) = 0.5 for the old feature; the new one as derived
    array([0.5   , 0.6321])

    Exactly one feature exists (``Lambda = 1``), so dish 2 is created when at least one new
    feature is, ``c_2 = P(new >= 1)`` with ``new ~ Poisson(1)``:

    >>> bool(np.isclose(q[1], 1 - np.exp(-1.0)))
    True
    """
    n = check_count("n", n, minimum=1)
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    usage, log_unowned, dish = _check_slots(usage, log_unowned, dish, n)
    if last_used is not None:
        last_used = check_count("last_used", last_used)
    base = np.zeros(1) if retired_log_pmf is None else _check_log_pmf(
        "retired_log_pmf", retired_log_pmf)
    log_count = trusted_count_log_pmf(log_unowned.astype(np.float64), base)
    log_q, _ = trusted_log_filtering_prior(
        usage, log_unowned, dish, n, log_count, np.log(alpha), beta, last_used=last_used
    )
    return np.exp(log_q)


def _check_slots(usage, log_unowned, dish, n: int):
    """Per-slot arrays of one state: 1-D, one length, ``0 <= M_k <= (n - 1)(1 - Pi_k)``.

    The upper bound holds for any earlier posteriors (``M_k`` is at most ``n - 1`` times
    the largest ``b_{n'k}``, which is at most ``1 - Pi_k``); a state beyond it would make
    ``1 - q`` negative. The relative slack ``1e-9`` covers rounding in the running sums.
    """
    usage = check_real_array("usage", usage)
    log_unowned = check_real_array("log_unowned", log_unowned)
    dish = _check_dish(dish)
    if not (usage.shape == log_unowned.shape == dish.shape and usage.ndim == 1):
        raise ValueError("usage, log_unowned and dish must be 1-D arrays of the same length")
    if not np.all(np.isfinite(usage)):
        raise ValueError("usage entries must be finite")
    if usage.size and (usage.min() < 0 or usage.max() > n - 1):
        raise ValueError(f"usage entries must be in [0, n - 1] = [0, {n - 1}]")
    if np.any(np.isnan(log_unowned)) or np.any(log_unowned > 0):
        raise ValueError("log_unowned entries must be <= 0 (logs of probabilities)")
    owned = -np.expm1(log_unowned.astype(np.float64))
    if np.any(usage > (n - 1) * owned * (1 + 1e-9)):
        raise ValueError("usage entries must be at most (n - 1)(1 - Pi_k), Pi_k = "
                         "exp(log_unowned): no sequence of posteriors gives more")
    return usage.astype(np.float64), log_unowned.astype(np.float64), dish


def _check_dish(dish) -> np.ndarray:
    """Dish numbers: integers in ``[1, MAX_DISH]`` (no strings, floats or complex)."""
    arr = check_real_array("dish", dish)
    raw = np.asarray(dish)
    if raw.dtype.kind not in "iu":
        raise TypeError(f"dish must hold integer dish numbers, got dtype {raw.dtype}")
    if raw.size and (raw.min() < 1 or raw.max() > MAX_DISH):
        raise ValueError(f"dish must hold integer dish numbers in [1, {MAX_DISH}]")
    return raw.astype(np.int64) if arr.size else np.zeros(raw.shape, np.int64)


def paper_prior(usage, dish, n: int, rate_before: float, alpha: float, beta: float) -> np.ndarray:
    """The filtering prior as printed in Schaeffer et al. (2022, section 3.4), for comparison.

    ``M_k / (beta + n - 1) + P(Lambda_{n-1} <= d - 1 < Lambda_n)``, the new-dish term computed
    as a sum of non-negative products (never as a difference of CDFs). It is never negative,
    but it can exceed 1: its Poisson factor ``P(Lambda_{n-1} <= d - 1)`` ignores that the
    slot is already occupied. Used by the book and the tests to show why
    :func:`filtering_prior` replaces that factor by the slot's own ``Pi_k``.

    Examples
    --------
    Small ``beta``: the first observation owned feature 1 for sure; the second one's prior
    for it exceeds 1.

    >>> float(paper_prior([1.0], [1], 2, 1.0, 5.0, 0.1)[0]) > 1
    True
    """
    from ibp_lab.models.recursive import new_dish_probabilities

    n = check_count("n", n, minimum=1)
    rate_before = check_positive("rate_before", rate_before, allow_zero=True)
    alpha = check_positive("alpha", alpha)
    beta = check_positive("beta", beta)
    usage = check_real_array("usage", usage)
    dish = _check_dish(dish)
    if usage.shape != dish.shape or usage.ndim != 1 or usage.size == 0:
        raise ValueError("usage and dish must be non-empty 1-D arrays of the same length")
    if not np.all(np.isfinite(usage) & (usage >= 0)):
        raise ValueError("usage entries must be finite and >= 0")
    denominator = beta + (n - 1)  # not (beta + n) - 1, which rounds a tiny beta away
    new = new_dish_probabilities(rate_before, new_dish_rate(alpha, beta, n - 1), int(dish.max()))
    return usage / denominator + new[dish - 1]
