"""A model whose features cannot be integrated out: binary data through a noisy-OR.

Wood, Griffiths & Ghahramani (2006) explain binary effects by binary hidden causes. Here the
rows are the data points (images) and the causes their features, so that the IBP sits where
it sits in the rest of the book:

- ``Z ~ IBP(alpha, beta)``: ``z_nk = 1`` if cause ``k`` is active in image ``n``;
- ``W``: ``w_kd ~ Bernoulli(weight_prob)`` independently, ``w_kd = 1`` if cause ``k`` can
  turn pixel ``d`` on;
- each active cause linked to a pixel turns it on with probability ``strength``, and a leak
  turns it on with probability ``leak`` whatever the causes; so with ``c_nd = (Z W)_nd``
  active linked causes::

      P(x_nd = 0 | Z, W) = (1 - leak) (1 - strength)^(c_nd)

No conjugate prior integrates ``W`` out, so a sampler keeps it. One sweep of
:func:`noisy_or_sweep` (a kernel leaving ``p(Z, W | X)`` invariant) is built from the
pieces of :mod:`ibp_lab.inference.uncollapsed`:

1. **Shared entries** ``z_nk`` by Gibbs given ``W``: prior log-odds ``log m - log(N - 1 - m +
   beta)`` plus, over the pixels that ``k`` links, the change of ``log P(x_nd | c_nd)``
   when ``c_nd`` moves by one. Counts ``c`` are kept, so each entry costs ``O(D)``.
2. **Births and deaths** of row ``n``'s singletons by Metropolis-Hastings
   (:func:`ibp_lab.inference.uncollapsed.births_and_deaths`): new features' links from their prior,
   accepted by the likelihood ratio of row ``n``. Compiled, with the draws of that
   Python loop, kept as the reference the tests hold it to (it took about 97% of a
   sweep's time).
3. **Links** ``w_kd`` by Gibbs: prior log-odds ``log(weight_prob / (1 - weight_prob))``
   plus the change of ``log P(x_nd | c_nd)`` over the rows where ``k`` is active.

With ``births="data"`` step 2 is instead the birth-death move of chapter 9's exercise
``ex-nc-data-births``, written for binary links: per row, with probability 1/2 each, the
birth of one cause owned by the row alone, its links ``y`` drawn from their exact
conditional given the row's data and the other causes, or the death of one of the row's
``k`` singletons chosen uniformly. Given the row's other counts ``c_d``, the likelihood
factorises over pixels, so the links are independent with::

    q(y_d = 1) = p g_d / ((1 - p) + p g_d),   g_d = P(x_nd | c_d + 1) / P(x_nd | c_d)

(``p`` is ``weight_prob``), and everything that depends on ``y`` cancels from the
Metropolis-Hastings ratio of the birth (``lambda`` the new-dish rate of step 2)::

    r = lambda / (k + 1) * prod_d ((1 - p) + p g_d)

the row's likelihood with one more cause whose links are summed out, over its likelihood
now; a death's ratio is ``1 / r`` at the counts without the
dying cause and ``k - 1`` singletons.

:func:`run_noisy_or` learns the noisy-OR's parameters by default (``learn=("strength",
"leak", "weight_prob")``; ``learn=()`` holds them fixed), a fourth step after the links,
each given ``(Z, W)`` under a Beta prior truncated to ``[MIN_PROBABILITY, 1 -
MIN_PROBABILITY]``:

4. ``strength``, then ``leak``: one slice-sampling step each (Neal 2003; the interval starts
   as the whole support and shrinks) on the exact conditional, the Beta prior times
   ``p(X | Z, W)``; the likelihood depends on ``(Z, W)`` only through how many pixels are
   on and off at each count ``c_nd``, so each evaluation costs one sum over the distinct
   counts. Then ``weight_prob`` from its conjugate conditional ``Beta(a + sum W, b + K D -
   sum W)``, truncated, by inverse CDF.

:func:`class_posterior` gives the exact posterior of the classes of ``Z`` on tiny data, with
``W`` summed out column by column (features of one column type are exchangeable, so only
how many of them link a pixel matters); the tests compare the sampler's class frequencies
with it. :func:`run_noisy_or` runs a chain; :func:`log_likelihood` and :func:`simulate` serve
the posterior predictive check.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from dataclasses import dataclass, replace

import numpy as np
from numba import njit
from scipy.special import betainc, betaincinv, betaln, expit, logsumexp
from scipy.stats import binom, poisson

from ibp_lab import _kernel
from ibp_lab.inference import exact
from ibp_lab._checks import (BinaryMatrix, Checked, Count, Generator, Joint, Rows,
                             check_binary_matrix, check_positive_pair, validated)
from ibp_lab._hyper import (alpha_upper, check_feature_matrix, check_positive, harmonic,
                            new_dish_rate)
from ibp_lab.inference._enumeration import check_enumeration, class_table
from ibp_lab.inference.uncollapsed import (BIRTHS, MAX_SWEEPS, UncollapsedResult,
                                           births_and_deaths, check_burn, run_kernel)
from ibp_lab.models.prior import log_prior

__all__ = ["NoisyOrParameters", "log_likelihood", "simulate", "noisy_or_sweep", "run_noisy_or",
           "class_posterior"]

#: Probabilities (strength, leak, weight_prob) are kept this far from 0 and 1: beyond, a
#: pixel's log-probability is -inf for some counts and the sampler would stall there.
MIN_PROBABILITY = 1e-9


@dataclass(frozen=True)
class NoisyOrParameters:
    """The noisy-OR model's checked parameters (see the module docstring).

    Examples
    --------
    >>> NoisyOrParameters.checked(1.0, 0.2, 0.9, 0.05)
    NoisyOrParameters(alpha=1.0, weight_prob=0.2, strength=0.9, leak=0.05, beta=1.0)
    """

    alpha: float
    weight_prob: float
    strength: float
    leak: float
    beta: float = 1.0

    @classmethod
    def checked(cls, alpha, weight_prob, strength, leak, beta=1.0, *, n_rows: int = 1):
        """The one door of the module's parameters; ``alpha`` is limited as for the other
        samplers (at most :func:`ibp_lab._hyper.alpha_upper` for ``n_rows`` rows)."""
        beta = check_positive("beta", beta)
        alpha = check_positive("alpha", alpha, upper=alpha_upper(max(n_rows, 1), beta))
        probabilities = [_check_open_probability(name, value) for name, value in
                         (("weight_prob", weight_prob), ("strength", strength), ("leak", leak))]
        return cls(alpha, *probabilities, beta)


def _check_open_probability(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {type(value).__name__}")
    value = float(value)
    if not MIN_PROBABILITY <= value <= 1.0 - MIN_PROBABILITY:
        raise ValueError(f"{name} must lie in [{MIN_PROBABILITY:g}, 1 - {MIN_PROBABILITY:g}], "
                         f"got {value}")
    return value


# --------------------------------------------------------------------------------------
# the likelihood
# --------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def pixel_log_prob(x, c, log1m_leak, log1m_strength):
    """``log P(x | c active linked causes)``: ``log(1 - leak) + c log(1 - strength)`` for
    ``x = 0``, ``log(1 - exp(that))`` for ``x = 1``."""
    off = log1m_leak + c * log1m_strength
    return math.log(-math.expm1(off)) if x else off


def _log_probs(X, counts, params: NoisyOrParameters) -> np.ndarray:
    """Elementwise ``log P(x | c)`` for arrays (the enumeration's and the trace's form)."""
    off = math.log1p(-params.leak) + counts * math.log1p(-params.strength)
    return np.where(X == 1, np.log(-np.expm1(off)), off)


def _check_links(W: np.ndarray, Z: np.ndarray, X: np.ndarray) -> None:
    if W.shape != (Z.shape[1], X.shape[1]):
        raise ValueError(f"W must have shape (K, D) = {(Z.shape[1], X.shape[1])} for this Z "
                         f"and X, got {W.shape}")


def _check_link_rows(W: np.ndarray, Z: np.ndarray) -> None:
    if W.shape[0] != Z.shape[1]:
        raise ValueError(f"W must have as many rows as Z has columns ({Z.shape[1]}), "
                         f"got {W.shape[0]}")


def _strength_and_leak(strength, leak) -> tuple[float, float]:
    """``strength`` and ``leak`` through the parameters' one door."""
    params = NoisyOrParameters.checked(1.0, 0.5, strength, leak)
    return params.strength, params.leak


_STRENGTH_AND_LEAK = Joint(_strength_and_leak, "strength", "leak", sets=("strength", "leak"))


@validated(X=BinaryMatrix(), Z=BinaryMatrix(rows_of="X"), W=BinaryMatrix(),
           links=Joint(_check_links, "W", "Z", "X"), parameters=_STRENGTH_AND_LEAK)
def log_likelihood(X, Z, W, *, strength: float, leak: float) -> float:
    """``log p(X | Z, W)`` of the noisy-OR model.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` binary data.
    Z : array_like
        ``(N, K)`` binary causes.
    W : array_like
        ``(K, D)`` binary links.
    strength, leak : float
        In ``(0, 1)``.

    Returns
    -------
    float

    Examples
    --------
    One pixel, one active linked cause: on with probability ``1 - (1 - 0.1)(1 - 0.8)``:

    >>> round(math.exp(log_likelihood([[1]], [[1]], [[1]], strength=0.8, leak=0.1)), 6)
    0.82
    """
    X, Z, W = X.astype(np.int8), Z.astype(np.int8), W.astype(np.int64)
    params = NoisyOrParameters(1.0, 0.5, strength, leak)
    return float(_log_probs(X, Z.astype(np.int64) @ W, params).sum())


@validated(Z=BinaryMatrix(), W=BinaryMatrix(), links=Joint(_check_link_rows, "W", "Z"),
           parameters=_STRENGTH_AND_LEAK, rng=Generator())
def simulate(Z, W, rng: np.random.Generator, *, strength: float, leak: float) -> np.ndarray:
    """Binary data drawn from the noisy-OR given causes ``Z`` and links ``W``.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary causes.
    W : array_like
        ``(K, D)`` binary links.
    rng : numpy.random.Generator
    strength, leak : float
        In ``(0, 1)``.

    Returns
    -------
    numpy.ndarray
        ``(N, D)`` ``int8``.

    Examples
    --------
    >>> X = simulate([[1, 0], [0, 0]], [[1, 1, 0], [0, 0, 1]], np.random.default_rng(0),
    ...              strength=0.999, leak=1e-6)
    >>> X.tolist()
    [[1, 1, 0], [0, 0, 0]]
    """
    counts = Z.astype(np.int64) @ W.astype(np.int64)
    p_off = (1.0 - leak) * (1.0 - strength) ** counts
    return (rng.random(counts.shape) >= p_off).astype(np.int8)


# --------------------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _link_counts_kernel(Z, W):
    C = np.zeros((Z.shape[0], W.shape[1]), np.int64)
    for n in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            if Z[n, k]:
                for d in range(W.shape[1]):
                    C[n, d] += Z[n, k] * W[k, d]
    return C


def _link_counts(Z, W) -> np.ndarray:
    """``C = Z W``, the active linked causes of each pixel, as ``int64``: each row's
    active causes' links added, the same integers as numpy's product of integer matrices
    (which has no BLAS: 0.7 ms against 0.03 on the digits at K+ 40)."""
    return _link_counts_kernel(np.ascontiguousarray(Z, np.int8), np.ascontiguousarray(W, np.int64))


@njit(cache=True)
def _count_gains(n_counts, log1m_leak, log1m_strength):
    """``gains[x, c] = log P(x | c + 1) - log P(x | c)`` for ``c < n_counts``, by
    :func:`pixel_log_prob`: what one more active linked cause changes at a pixel. The Gibbs
    steps look their terms up here (the same values they computed term by term, about
    five times faster on the digits); with ``K`` causes a count without one of them is
    below ``K``."""
    gains = np.empty((2, n_counts))
    for x in range(2):
        for c in range(n_counts):
            gains[x, c] = (pixel_log_prob(x, c + 1, log1m_leak, log1m_strength)
                           - pixel_log_prob(x, c, log1m_leak, log1m_strength))
    return gains


@njit(cache=True)
def _flip_causes(X, Z, W, C, m, log_odds_prior, log1m_leak, log1m_strength, rng):
    """Step 1: every shared ``z_nk`` by Gibbs; ``C = Z W`` and ``m`` kept in step."""
    N, K = Z.shape
    D = X.shape[1]
    gains = _count_gains(K, log1m_leak, log1m_strength)
    for n in range(N):
        for k in range(K):
            others = m[k] - Z[n, k]
            if others == 0:
                continue  # a singleton of row n: step 2's business
            gain = 0.0
            for d in range(D):
                if W[k, d]:
                    gain += gains[X[n, d], C[n, d] - Z[n, k]]
            new = 1 if rng.random() * (1.0 + math.exp(-(log_odds_prior[others] + gain))) < 1.0 else 0
            if new != Z[n, k]:
                step = new - Z[n, k]
                for d in range(D):
                    C[n, d] += step * W[k, d]
                m[k] += step
                Z[n, k] = new


@njit(cache=True)
def _flip_links(X, Z, W, C, prior_log_odds, log1m_leak, log1m_strength, rng):
    """Step 3: every ``w_kd`` by Gibbs; only the rows where ``k`` is active see it."""
    N, K = Z.shape
    D = X.shape[1]
    gains = _count_gains(K, log1m_leak, log1m_strength)
    for k in range(K):
        for d in range(D):
            gain = 0.0
            for n in range(N):
                if Z[n, k]:
                    gain += gains[X[n, d], C[n, d] - W[k, d]]
            new = 1 if rng.random() * (1.0 + math.exp(-(prior_log_odds + gain))) < 1.0 else 0
            if new != W[k, d]:
                for n in range(N):
                    if Z[n, k]:
                        C[n, d] += new - W[k, d]
                W[k, d] = new


def _link_gains(x_row, c_row, params: NoisyOrParameters) -> np.ndarray:
    """Per pixel, ``log P(x_d | c_d + 1) - log P(x_d | c_d)``: what one more active cause
    linked to pixel ``d`` changes in the row's log-likelihood."""
    return _log_probs(x_row, c_row + 1, params) - _log_probs(x_row, c_row, params)


def _data_birth_log_ratio(gains, n_singletons: int, log_rate: float,
                          params: NoisyOrParameters) -> float:
    """Log Metropolis-Hastings ratio of the birth of one cause whose links are drawn from
    their exact conditional (the module docstring's ``r``).

    Against the measure ``sum_k (1/k!) dy_1 ... dy_k`` on finite sets (counting measure on
    each link vector), the row's singletons have prior density proportional to
    ``lambda^k prod_j P(y_j)``; the birth proposes ``y`` with probability
    ``q(y) = prod_d P(y_d) exp(y_d g_d) / ((1 - p) + p exp(g_d))`` and its reverse death
    picks ``y`` among ``k + 1``, so::

        r = L(new) lambda P(y) / (L(old) q(y) (k + 1)),   L(new) / L(old) = prod_d exp(y_d g_d)

    and ``P(y)`` and ``exp(y_d g_d)`` cancel, leaving ``lambda / (k + 1) prod_d ((1 - p)
    + p exp(g_d))``, whatever ``y`` is drawn.

    The log is a part of ``k`` plus a sum of one term per pixel; the compiled step reads
    both off this function (:func:`_data_birth_ratio_parts`), so the ratio has this one
    definition.
    """
    log_p, log_1mp = math.log(params.weight_prob), math.log1p(-params.weight_prob)
    return float(log_rate - math.log(n_singletons + 1.0)
                 + np.logaddexp(log_1mp, log_p + gains).sum())


def _link_on_probabilities(gains, params: NoisyOrParameters) -> np.ndarray:
    """Per pixel, ``q(y_d = 1)`` of a born cause's link: the logistic of the prior's
    log-odds plus the pixel's gain."""
    return expit(math.log(params.weight_prob) - math.log1p(-params.weight_prob) + gains)


def _draw_new_links(gains, params: NoisyOrParameters, rng) -> np.ndarray:
    """The new cause's links, pixel by pixel from their exact conditional (one uniform per
    pixel)."""
    return (rng.random(gains.size) < _link_on_probabilities(gains, params)).astype(np.int64)


def _accepts(log_ratio: float, rng) -> bool:
    """Metropolis-Hastings: a uniform is drawn only when the ratio is below one."""
    return log_ratio >= 0 or rng.random() < math.exp(log_ratio)


def _with_births(Z, W, keep, born_rows, born_links):
    """``(Z, W)`` without the columns that ``keep`` marks False, and with one new column
    per entry of ``born_rows``, owned by that row alone, its links the matching row of
    ``born_links``."""
    Z, W = Z[:, keep], W[keep]
    if len(born_rows):
        born = np.zeros((Z.shape[0], len(born_rows)), np.int8)
        born[born_rows, np.arange(len(born_rows))] = 1
        Z, W = np.hstack([Z, born]), np.vstack([W, born_links])
    return Z, W


def _data_births_reference(X, Z, W, C, params: NoisyOrParameters, rng):
    """Step 2 with ``births="data"`` in Python (module docstring): per row one uniform
    chooses a birth (< 1/2) or a death; ``C`` is updated in place. Returns ``(Z, W,
    n_accepted)``, the born causes appended after the kept ones. The reference that the
    compiled :func:`_data_births` is tested against, draw for draw."""
    N = X.shape[0]
    log_rate = math.log(new_dish_rate(params.alpha, params.beta, N - 1))
    # singletons before the step: a row's move never changes another row's singletons
    singletons = (Z == 1) & (Z.sum(axis=0) == 1)
    keep = np.ones(Z.shape[1], bool)
    born_rows, born_links, accepted = [], [], 0
    for n in range(N):
        own = np.flatnonzero(singletons[n])
        if rng.random() < 0.5:  # a birth
            gains = _link_gains(X[n], C[n], params)
            if _accepts(_data_birth_log_ratio(gains, own.size, log_rate, params), rng):
                links = _draw_new_links(gains, params, rng)
                C[n] += links
                born_rows.append(n)
                born_links.append(links)
                accepted += 1
        elif own.size:  # a death: the reverse of a birth from the row without cause j
            j = own[min(int(rng.random() * own.size), own.size - 1)]
            without = C[n] - W[j]
            gains = _link_gains(X[n], without, params)
            if _accepts(-_data_birth_log_ratio(gains, own.size - 1, log_rate, params), rng):
                keep[j] = False
                C[n] = without
                accepted += 1
    return (*_with_births(Z, W, keep, born_rows, born_links), accepted)


def _prior_births_reference(X, Z, W, C, params: NoisyOrParameters, rng):
    """Step 2 with ``births="prior"`` in Python:
    :func:`ibp_lab.inference.uncollapsed.births_and_deaths` with the links proposed from
    their prior, accepted by the row's likelihood ratio. The reference that the compiled
    :func:`_prior_births` is tested against, draw for draw."""
    def log_ratio(n, change):
        return float(_log_probs(X[n], C[n] + change, params).sum()
                     - _log_probs(X[n], C[n], params).sum())

    def commit(n, change):
        C[n] += change

    draw_links = lambda k, g: (g.random((k, X.shape[1])) < params.weight_prob).astype(np.int64)  # noqa: E731
    return births_and_deaths(Z, W, new_dish_rate(params.alpha, params.beta, X.shape[0] - 1),
                             draw_links, log_ratio, commit, rng)


# The compiled births make the references' draws, bit for bit. numpy computes log, exp and
# expm1 of an array with vector code of its own whose last bit differs from the C
# library's, which numba calls, for a few values in a hundred (measured on AVX-512), and a
# last bit can move an acceptance. So the kernels compute none of these: every per-pixel
# value depends on the pixel's value x and count c only, and numpy tables it over (x, c)
# with the references' own expressions (a value does not depend on where it sits in the
# array); the kernels add a row's values in numpy's order (:func:`_pairwise_sum`) and
# draw in the references' order.


def _pixel_count_grid(n_counts: int):
    """Every ``(x, c)`` with ``c < n_counts``, flat: ``x = 0`` first, then ``x = 1``."""
    return (np.repeat(np.array([0, 1], np.int8), n_counts),
            np.tile(np.arange(n_counts, dtype=np.int64), 2))


def _data_birth_ratio_parts(log_ratio, gains, max_singletons: int, log_rate: float,
                            params: NoisyOrParameters):
    """``log_ratio`` (:func:`_data_birth_log_ratio`) as ``by_singletons[k] + sum_d
    by_pixel[d]``, read off the function: its value with no pixel, at each ``k <=
    max_singletons``, and its value for each gain alone at ``k = 0`` and log rate 0 (``0 -
    log 1`` adds nothing). The sum of the parts is the function's value bit for bit when
    added as numpy adds."""
    no_pixel = gains[:0]
    by_singletons = np.array([log_ratio(no_pixel, k, log_rate, params)
                              for k in range(max_singletons + 1)], float)
    by_pixel = np.array([log_ratio(gains[i:i + 1], 0, 0.0, params) for i in range(gains.size)],
                        float)
    return by_singletons, by_pixel


# The tables below depend only on their arguments and are kept (the kernels only read
# them): with the parameters held, the same few serve sweep after sweep, and on tiny data
# building them cost more than the births themselves.


@functools.lru_cache(maxsize=64)
def _log_prob_table(params: NoisyOrParameters, n_counts: int) -> np.ndarray:
    """``log P(x | c)`` by :func:`_log_probs`, shape ``(2, n_counts)``."""
    return _log_probs(*_pixel_count_grid(n_counts), params).reshape(2, n_counts)


@functools.lru_cache(maxsize=64)
def _data_birth_tables(log_ratio, params: NoisyOrParameters, log_rate: float, n_counts: int,
                       max_singletons: int):
    """The data births' tables: ``log_ratio``'s parts by singletons and by ``(x, c)``
    (:func:`_data_birth_ratio_parts`) and the links' probabilities ``q`` by ``(x, c)``."""
    gains = _link_gains(*_pixel_count_grid(n_counts), params)
    by_singletons, by_pixel = _data_birth_ratio_parts(log_ratio, gains, max_singletons,
                                                      log_rate, params)
    return (by_singletons, by_pixel.reshape(2, n_counts),
            _link_on_probabilities(gains, params).reshape(2, n_counts))


@njit(cache=True, inline="always")
def _block_sum(values, start, n):
    """numpy's sum of at most 128 values: fewer than 8 in order, else eight interleaved
    partial sums, added in pairs, then the rest in order."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    i = start + 8
    stop = start + n - n % 8
    while i < stop:
        r0 += values[i]
        r1 += values[i + 1]
        r2 += values[i + 2]
        r3 += values[i + 3]
        r4 += values[i + 4]
        r5 += values[i + 5]
        r6 += values[i + 6]
        r7 += values[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < start + n:
        total += values[i]
        i += 1
    return total


@njit(cache=True)
def _pairwise_sum(values, start, n):
    """``values[start:start + n].sum()`` as numpy adds, bit for bit: blocks of at most 128
    (:func:`_block_sum`), longer runs split in two at a multiple of 8 below their half and
    the halves' sums added. Without recursion (numba's cache of a recursive function
    crashed on loading): a stack of pending splits (``n < 0`` marks "add the last two
    sums") and one of sums."""
    if n <= 128:
        return _block_sum(values, start, n)
    starts, lengths = np.empty(192, np.int64), np.empty(192, np.int64)
    sums = np.empty(64)
    starts[0], lengths[0] = start, n
    n_pending, n_sums = 1, 0
    while n_pending:
        n_pending -= 1
        first, length = starts[n_pending], lengths[n_pending]
        if length < 0:  # both halves summed: add them, left + right
            n_sums -= 1
            sums[n_sums - 1] = sums[n_sums - 1] + sums[n_sums]
        elif length <= 128:
            sums[n_sums] = _block_sum(values, first, length)
            n_sums += 1
        else:
            half = length // 2
            half -= half % 8
            # popped in the reverse order: the left half, the right half, then their sum
            starts[n_pending], lengths[n_pending] = 0, -1
            starts[n_pending + 1], lengths[n_pending + 1] = first + half, length - half
            starts[n_pending + 2], lengths[n_pending + 2] = first, half
            n_pending += 3
    return sums[0]


@njit(cache=True)
def _column_owners(Z):
    m = np.zeros(Z.shape[1], np.int64)
    for n in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            m[k] += Z[n, k]
    return m


@njit(cache=True)
def _prior_births_kernel(X, Z, W, C, rate, weight_prob, log_probs, rng):
    """Step 2 with ``births="prior"``, compiled: :func:`_prior_births_reference`'s draws in
    its order. Per row: the Poisson count, the new links entry by entry in row-major order,
    then a uniform unless the log ratio is >= 0. ``log_probs[x, c]`` is ``log P(x | c)``;
    ``C`` is updated in place. Returns ``(keep, born_rows, born_links, n_accepted,
    needed)``: ``needed > 0`` if a proposal's count reached past the table, which must
    then be ``needed`` long and the step replayed from its start."""
    N, K = Z.shape
    D = X.shape[1]
    n_counts = log_probs.shape[1]
    m = _column_owners(Z)  # owners before the step: a row's births never change another's
    keep = np.ones(K, np.bool_)
    born_rows = np.empty(8, np.int64)
    born_links = np.empty((8, D), np.int64)
    change = np.empty(D, np.int64)
    old, new = np.empty(D), np.empty(D)
    n_born, accepted = 0, 0
    for n in range(N):
        n_new = rng.poisson(rate)
        if n_born + n_new > born_rows.size:  # grow the buffers, at least doubling
            size = max(2 * born_rows.size, n_born + n_new)
            grown_rows = np.empty(size, np.int64)
            grown_rows[:n_born] = born_rows[:n_born]
            grown_links = np.empty((size, D), np.int64)
            grown_links[:n_born] = born_links[:n_born]
            born_rows, born_links = grown_rows, grown_links
        change[:] = 0
        for j in range(n_new):  # the proposed links, written past n_born until accepted
            for d in range(D):
                link = 1 if rng.random() < weight_prob else 0
                born_links[n_born + j, d] = link
                change[d] += link
        n_own = 0
        for k in range(K):
            if Z[n, k] == 1 and m[k] == 1:
                n_own += 1
                for d in range(D):
                    change[d] -= W[k, d]
        for d in range(D):
            count = C[n, d] + change[d]
            if count >= n_counts:
                return keep, born_rows[:0], born_links[:0], accepted, count + 1
            new[d] = log_probs[X[n, d], count]
            old[d] = log_probs[X[n, d], C[n, d]]
        log_r = _pairwise_sum(new, 0, D) - _pairwise_sum(old, 0, D)
        if log_r >= 0 or rng.random() < math.exp(log_r):
            if n_own or n_new:  # a proposal that changes nothing is no news
                accepted += 1
            for k in range(K):
                if Z[n, k] == 1 and m[k] == 1:
                    keep[k] = False
            for d in range(D):
                C[n, d] += change[d]
            born_rows[n_born:n_born + n_new] = n
            n_born += n_new
    return keep, born_rows[:n_born], born_links[:n_born], accepted, 0


@njit(cache=True)
def _data_births_kernel(X, Z, W, C, ratio_by_singletons, ratio_by_pixel, link_on, rng):
    """Step 2 with ``births="data"``, compiled: :func:`_data_births_reference`'s draws in
    its order. Per row: one uniform chooses a birth (< 1/2) or a death; a birth's ratio is
    ``ratio_by_singletons[k]`` plus the row's ``ratio_by_pixel[x, c]`` (a uniform unless
    its log is >= 0) and, if accepted, its links are drawn pixel by pixel with probability
    ``link_on[x, c]``; a death picks one singleton by a uniform and is accepted by the
    reverse ratio; a death with no singleton is rejected. ``C`` is updated in place;
    returns ``(keep, born_rows, born_links, n_accepted)``."""
    N, K = Z.shape
    D = X.shape[1]
    m = _column_owners(Z)  # owners before the step: a row's move never changes another's
    keep = np.ones(K, np.bool_)
    born_rows = np.empty(N, np.int64)
    born_links = np.empty((N, D), np.int64)
    own = np.empty(K, np.int64)
    terms = np.empty(D)
    n_born, accepted = 0, 0
    for n in range(N):
        n_own = 0
        for k in range(K):
            if Z[n, k] == 1 and m[k] == 1:
                own[n_own] = k
                n_own += 1
        if rng.random() < 0.5:  # a birth
            for d in range(D):
                terms[d] = ratio_by_pixel[X[n, d], C[n, d]]
            log_r = ratio_by_singletons[n_own] + _pairwise_sum(terms, 0, D)
            if log_r >= 0 or rng.random() < math.exp(log_r):
                for d in range(D):
                    link = 1 if rng.random() < link_on[X[n, d], C[n, d]] else 0
                    born_links[n_born, d] = link
                    C[n, d] += link
                born_rows[n_born] = n
                n_born += 1
                accepted += 1
        elif n_own:  # a death: the reverse of a birth from the row without cause j
            j = own[min(int(rng.random() * n_own), n_own - 1)]
            for d in range(D):
                terms[d] = ratio_by_pixel[X[n, d], C[n, d] - W[j, d]]
            log_r = -(ratio_by_singletons[n_own - 1] + _pairwise_sum(terms, 0, D))
            if log_r >= 0 or rng.random() < math.exp(log_r):
                keep[j] = False
                for d in range(D):
                    C[n, d] -= W[j, d]
                accepted += 1
    return keep, born_rows[:n_born], born_links[:n_born], accepted


def _prior_births(X, Z, W, C, params: NoisyOrParameters, rng, n_counts=None):
    """Step 2 with ``births="prior"``, compiled (:func:`_prior_births_kernel`): returns
    ``(Z, W, n_accepted)`` as :func:`_prior_births_reference`, with the same draws.

    A proposal's counts reach at most ``max C`` plus the row's new causes: the table of
    ``log P(x | c)`` is ``n_counts`` long (default: a margin well past the Poisson count's
    likely values), and a proposal past it replays the step, draw for draw, with a longer
    one."""
    rate = new_dish_rate(params.alpha, params.beta, X.shape[0] - 1)
    Z, W = np.ascontiguousarray(Z, np.int8), np.ascontiguousarray(W, np.int64)
    if n_counts is None:
        n_counts = int(C.max(initial=0)) + int(rate + 8.0 * math.sqrt(rate)) + 9
    state, C_before = rng.bit_generator.state, C.copy()
    while True:
        keep, born_rows, born_links, accepted, needed = _prior_births_kernel(
            X, Z, W, C, rate, params.weight_prob, _log_prob_table(params, n_counts), rng)
        if not needed:
            return (*_with_births(Z, W, keep, born_rows, born_links), accepted)
        rng.bit_generator.state = state  # the same draws again, up to the long proposal
        C[:] = C_before
        n_counts = max(needed, 2 * n_counts)


def _data_births(X, Z, W, C, params: NoisyOrParameters, rng):
    """Step 2 with ``births="data"``, compiled (:func:`_data_births_kernel`): returns
    ``(Z, W, n_accepted)`` as :func:`_data_births_reference`, with the same draws."""
    log_rate = math.log(new_dish_rate(params.alpha, params.beta, X.shape[0] - 1))
    Z, W = np.ascontiguousarray(Z, np.int8), np.ascontiguousarray(W, np.int64)
    singletons = (Z == 1) & (Z.sum(axis=0) == 1)
    n_counts = int(C.max(initial=0)) + 1  # a row's counts only fall before its own move
    # the ratio as _data_birth_log_ratio is now (the tests plant bugs in it)
    tables = _data_birth_tables(_data_birth_log_ratio, params, log_rate, n_counts,
                                int(singletons.sum(axis=1).max(initial=0)))
    keep, born_rows, born_links, accepted = _data_births_kernel(X, Z, W, C, *tables, rng)
    return (*_with_births(Z, W, keep, born_rows, born_links), accepted)


def _sweep(X, Z, W, params: NoisyOrParameters, rng, births: str = "prior"):
    """One sweep without checks: ``(Z, W, births_accepted)``."""
    N = X.shape[0]
    log1m_leak, log1m_strength = math.log1p(-params.leak), math.log1p(-params.strength)
    Z = np.ascontiguousarray(Z, np.int8)
    C = _link_counts(Z, W)
    m = Z.sum(axis=0).astype(np.int64)
    table = _kernel.prior_log_odds_table(N, params.beta)
    _flip_causes(X, Z, W, C, m, table, log1m_leak, log1m_strength, rng)
    step = _data_births if births == "data" else _prior_births
    Z, W, accepted = step(X, Z, W, C, params, rng)
    owned = Z.any(axis=0)
    Z, W = np.ascontiguousarray(Z[:, owned]), np.ascontiguousarray(W[owned])
    logit = math.log(params.weight_prob) - math.log1p(-params.weight_prob)
    _flip_links(X, Z, W, C, logit, log1m_leak, log1m_strength, rng)
    return Z, W, accepted


# --------------------------------------------------------------------------------------
# learning the parameters (run_noisy_or's step 4)
# --------------------------------------------------------------------------------------

#: The parameters :func:`run_noisy_or` can learn, in the order it updates them.
LEARNABLE = ("strength", "leak", "weight_prob")
#: Smallest shape of their Beta priors: below, the prior's mass piles up against the
#: truncation at :data:`MIN_PROBABILITY` and the inverse CDF of the conjugate draw loses
#: its precision (``betainc(1e-300, 1, 1e-9)`` is 1.0).
MIN_PRIOR_SHAPE = 0.01
#: Most shrinkages of one slice step: each at least halves the interval on average, so 200
#: reach the spacing of floats around the current value, where the step must end.
MAX_SLICE_SHRINKS = 200


def _check_beta_prior(name: str, prior) -> tuple[float, float]:
    a, b = check_positive_pair(name, prior)
    if min(a, b) < MIN_PRIOR_SHAPE:
        raise ValueError(f"{name} must be a pair of Beta shapes, each >= {MIN_PRIOR_SHAPE:g}, "
                         f"got {prior!r}")
    return a, b


def _count_table(X, Z, W) -> tuple[np.ndarray, np.ndarray]:
    """How many pixels are off and on at each count ``c`` of active linked causes: all
    that ``p(X | Z, W)`` keeps of ``(Z, W)`` as a function of ``strength`` and ``leak``."""
    counts = _link_counts(Z, W)
    n_counts = int(counts.max(initial=0)) + 1
    return (np.bincount(counts[X == 0], minlength=n_counts),
            np.bincount(counts[X == 1], minlength=n_counts))


def _log_likelihood_of_table(n_off, n_on, strength: float, leak: float) -> float:
    """``log p(X | Z, W)`` from :func:`_count_table`: a pixel with ``c`` active linked causes
    is off with probability ``(1 - leak) (1 - strength)^c``."""
    log_off = math.log1p(-leak) + np.arange(n_off.size) * math.log1p(-strength)
    return float(n_off @ log_off + n_on @ np.log(-np.expm1(log_off)))


def _log_beta_prior(value: float, prior) -> float:
    """Log Beta density up to its constant, ``log B(a, b)``."""
    a, b = prior
    return (a - 1.0) * math.log(value) + (b - 1.0) * math.log1p(-value)


def _slice_step(value: float, log_density, rng) -> float:
    """One slice-sampling step (Neal 2003) on ``[MIN_PROBABILITY, 1 - MIN_PROBABILITY]``:
    the level is ``log_density(value)`` minus an Exponential(1) draw; the interval starts as
    the whole support (no stepping out, no width to tune) and shrinks towards ``value``
    until a uniform point of it lies above the level. Leaves the density invariant."""
    level = log_density(value) - rng.exponential()
    left, right = MIN_PROBABILITY, 1.0 - MIN_PROBABILITY
    for _ in range(MAX_SLICE_SHRINKS):
        proposal = left + (right - left) * rng.random()
        if log_density(proposal) >= level:
            return proposal
        if proposal < value:
            left = proposal
        else:
            right = proposal
    return value


def _truncated_beta(a: float, b: float, rng) -> float:
    """A draw of Beta(a, b) truncated to ``[MIN_PROBABILITY, 1 - MIN_PROBABILITY]`` by
    inverse CDF (one uniform). Drawn on the side of its lighter tail (``1 - Beta(b, a)``
    when the mean is above 1/2), where the CDF keeps its relative precision."""
    mirrored = a > b
    if mirrored:  # the support is symmetric: draw 1 - value from Beta(b, a)
        a, b = b, a
    low, high = betainc(a, b, MIN_PROBABILITY), betainc(a, b, 1.0 - MIN_PROBABILITY)
    value = betaincinv(a, b, low + (high - low) * rng.random())
    value = 1.0 - value if mirrored else value
    return float(min(max(value, MIN_PROBABILITY), 1.0 - MIN_PROBABILITY))


def _update_parameters(X, Z, W, params: NoisyOrParameters, priors: dict,
                       rng) -> NoisyOrParameters:
    """Step 4 (module docstring): the parameters named in ``priors`` (name -> Beta
    shapes), given ``(Z, W)``, in the order of :data:`LEARNABLE`."""
    if "strength" in priors or "leak" in priors:
        n_off, n_on = _count_table(X, Z, W)
        for name in ("strength", "leak"):
            if name not in priors:
                continue

            def log_density(value, name=name):
                trial = replace(params, **{name: value})
                return (_log_beta_prior(value, priors[name])
                        + _log_likelihood_of_table(n_off, n_on, trial.strength, trial.leak))
            params = replace(params, **{name: _slice_step(getattr(params, name), log_density,
                                                          rng)})
    if "weight_prob" in priors:
        a, b = priors["weight_prob"]
        n_links = int(W.sum())
        params = replace(params, weight_prob=_truncated_beta(a + n_links, b + W.size - n_links,
                                                             rng))
    return params


def _check_data(name: str, X) -> np.ndarray:
    """``X`` of the sampler: binary, as ``int8``, with at least one row."""
    X = check_binary_matrix("X", X).astype(np.int8)
    if X.shape[0] == 0:
        raise ValueError("X must have at least one row")
    return X


def _parameters(n_rows: int, alpha, weight_prob, strength, leak, beta) -> tuple:
    """The five parameters through :meth:`NoisyOrParameters.checked`, in its field order."""
    params = NoisyOrParameters.checked(alpha, weight_prob, strength, leak, beta, n_rows=n_rows)
    return params.alpha, params.weight_prob, params.strength, params.leak, params.beta


_PARAMETER_NAMES = ("alpha", "weight_prob", "strength", "leak", "beta")
#: The model's parameters checked against ``X``'s rows (``alpha``'s upper limit).
_PARAMETERS = Joint(_parameters, Rows("X"), *_PARAMETER_NAMES, sets=_PARAMETER_NAMES)


def _checked_state(X: np.ndarray, Z, W) -> tuple[np.ndarray, np.ndarray]:
    """``Z`` and ``W`` of :func:`noisy_or_sweep`: ``Z``'s empty columns dropped with their
    links."""
    Z_all = check_binary_matrix("Z", Z, n_rows=X.shape[0])
    W = check_binary_matrix("W", W)
    if W.shape != (Z_all.shape[1], X.shape[1]):
        raise ValueError(f"W must have shape (K, D) = {(Z_all.shape[1], X.shape[1])} for this "
                         f"Z and X, got {W.shape}")
    owned = Z_all.astype(bool).any(axis=0)
    Z = check_feature_matrix("Z", Z_all, n_rows=X.shape[0])
    return Z, np.ascontiguousarray(W[owned], np.int64)


@validated(births=BIRTHS, X=Checked(_check_data), parameters=_PARAMETERS,
           state=Joint(_checked_state, "X", "Z", "W", sets=("Z", "W")), rng=Generator())
def noisy_or_sweep(X, Z, W, rng: np.random.Generator, *, alpha: float = 1.0,
                   weight_prob: float = 0.2, strength: float = 0.9, leak: float = 0.05,
                   beta: float = 1.0, births: str = "prior") -> tuple[np.ndarray, np.ndarray]:
    """One sweep of the noisy-OR sampler (the module docstring's three steps).

    Parameters
    ----------
    X : array_like
        ``(N, D)`` binary data.
    Z : array_like
        ``(N, K)`` binary causes (all-zero columns are dropped with their links).
    W : array_like
        ``(K, D)`` binary links of ``Z``'s columns.
    rng : numpy.random.Generator
    alpha, beta : float, optional
        The IBP's mass and concentration (default 1 and 1).
    weight_prob, strength, leak : float, optional
        The noisy-OR's parameters, each in ``(0, 1)``; the defaults (0.2, 0.9, 0.05: a
        cause links a fifth of the pixels, turns a linked pixel on nine times in ten, and
        one pixel in twenty leaks on) are those of every entry point of this module, and
        :func:`run_noisy_or` learns the three from them by default.
    births : {"prior", "data"}, optional
        Step 2's proposals: ``"prior"`` (default) replaces the row's singletons by new
        causes with links from their prior, accepted by the likelihood ratio; ``"data"``
        proposes the birth of one cause, its links from their exact conditional given the
        row's data and the other causes, or the death of one singleton, with the ratio of
        the module docstring (the links' proposal cancels their prior and likelihood).

    Returns
    -------
    Z, W : numpy.ndarray
        The new state: ``(N, K')`` ``int8`` without empty columns, ``(K', D)`` ``int64``.

    Examples
    --------
    >>> X = [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    >>> Z, W = noisy_or_sweep(X, np.ones((3, 1)), [[1, 1, 1]], np.random.default_rng(0),
    ...                       alpha=1.0, weight_prob=0.3, strength=0.9, leak=0.05)
    >>> Z.shape[0], W.shape == (Z.shape[1], 3)
    (3, True)

    With births from the data:

    >>> Z, W = noisy_or_sweep(X, Z, W, np.random.default_rng(1), alpha=1.0, weight_prob=0.3,
    ...                       strength=0.9, leak=0.05, births="data")
    >>> W.shape == (Z.shape[1], 3)
    True
    """
    params = NoisyOrParameters(alpha, weight_prob, strength, leak, beta)
    Z, W, _ = _sweep(X, Z, W, params, rng, births)
    return Z, W


def _checked_start(X, Z0, W0):
    """``(Z0, W0)`` of :func:`run_noisy_or`, empty columns dropped with their links."""
    if Z0 is None:
        if W0 is not None:
            raise ValueError("W0 needs Z0: the links belong to Z0's columns")
        return np.ones((X.shape[0], 1), np.int8), None
    Z_all = check_binary_matrix("Z0", Z0, n_rows=X.shape[0])
    Z0 = check_feature_matrix("Z0", Z_all, n_rows=X.shape[0])
    if W0 is None:
        return Z0, None
    W0 = check_binary_matrix("W0", W0)
    if W0.shape != (Z_all.shape[1], X.shape[1]):
        raise ValueError(f"W0 must have shape (K, D) = {(Z_all.shape[1], X.shape[1])} for this "
                         f"Z0 and X, got {W0.shape}")
    return Z0, np.ascontiguousarray(W0[Z_all.astype(bool).any(axis=0)], np.int64)


def _learned_priors(learn, priors) -> dict:
    """``{name: (a, b)}`` for each parameter to learn, in the order of :data:`LEARNABLE`;
    ``learn`` and every prior given checked first."""
    if isinstance(learn, str):  # one name, not its letters
        learn = (learn,)
    if not isinstance(learn, (list, tuple, set, frozenset)):
        raise TypeError(f"learn must be a list of parameter names among {LEARNABLE} (or () "
                        f"to hold them fixed), got {type(learn).__name__}")
    unknown = [name for name in learn if name not in LEARNABLE]
    if unknown:
        raise ValueError(f"learn must name parameters among {LEARNABLE}, got {unknown[0]!r}")
    if priors is None:
        priors = {}
    if not isinstance(priors, dict):
        raise TypeError(f"priors must be a dict of Beta shapes by parameter name, e.g. "
                        f"{{'leak': (1.0, 9.0)}}, got {type(priors).__name__}")
    unknown = [name for name in priors if name not in LEARNABLE]
    if unknown:
        raise ValueError(f"priors must be keyed by names among {LEARNABLE}, got {unknown[0]!r}")
    checked = {name: _check_beta_prior(f"priors[{name!r}]", prior)
               for name, prior in priors.items()}
    return {name: checked.get(name, (1.0, 1.0)) for name in LEARNABLE if name in learn}


@validated(
    X=Checked(_check_data),
    parameters=_PARAMETERS,
    n_sweeps=Count(minimum=1, maximum=MAX_SWEEPS),
    start=Joint(_checked_start, "X", "Z0", "W0", sets=("Z0", "W0")),
    burn=Joint(check_burn, "burn", "n_sweeps", sets="burn"),
    thin=Count(minimum=1, maximum=MAX_SWEEPS),
    births=BIRTHS,
    priors=Joint(_learned_priors, "learn", "priors", sets="priors"),  # the priors of learn
    rng=Generator(),
)
def run_noisy_or(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float = 1.0,
                 weight_prob: float = 0.2, strength: float = 0.9, leak: float = 0.05,
                 beta: float = 1.0, learn=LEARNABLE, priors=None, Z0=None, W0=None,
                 burn: int = 0, thin: int = 1, births: str = "prior") -> UncollapsedResult:
    """Run the noisy-OR sampler for ``n_sweeps`` sweeps, learning its parameters by default.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` binary data.
    n_sweeps : int
        Sweeps of :func:`noisy_or_sweep`, >= 1.
    rng : numpy.random.Generator
    alpha, weight_prob, strength, leak, beta : float, optional
        The model's parameters (as :func:`noisy_or_sweep`, with the same defaults); for
        those in ``learn``, the starting values.
    learn : sequence of str, optional
        Which of ``"strength"``, ``"leak"`` and ``"weight_prob"`` to learn (default all
        three; ``()`` holds them fixed). After each sweep, ``strength`` and then ``leak``
        move by one slice step on their exact conditional given ``(Z, W)``, then
        ``weight_prob`` is drawn from its Beta conditional given ``W`` (module docstring).
        Learned, the starting values matter little: on binarised data two starts far apart
        reach the same parameters and ``K+``, where fixed guesses give different ``K+``.
    priors : dict, optional
        Beta shapes ``(a, b)`` by name (e.g. ``{"leak": (1.0, 9.0)}``), each shape in
        ``[0.01, 1e6]``, the prior truncated to ``[MIN_PROBABILITY, 1 - MIN_PROBABILITY]``;
        a parameter not named has a uniform prior. Checked even for parameters held fixed.
    Z0 : array_like, optional
        Starting causes (default one cause active in every row).
    W0 : array_like, optional
        Starting links of ``Z0``'s columns, ``(K, D)`` binary (default drawn from their
        prior); only with ``Z0``. To run a chain on, pass its ``Z`` and ``A`` and its
        last parameter values.
    burn, thin : int, optional
        Warm-up sweeps not kept in ``samples`` (the trace keeps them) and the thinning.
    births : {"prior", "data"}, optional
        Step 2's proposals (:func:`noisy_or_sweep`); default ``"prior"``.

    Returns
    -------
    ibp_lab.inference.uncollapsed.UncollapsedResult
        ``trace``: ``k_plus``, ``log_likelihood`` (``log p(X | Z, W)``, given the links:
        not comparable with the Gaussian samplers' collapsed values) and ``log_joint`` (plus
        ``log P([Z]) + log P(W)`` and, for each learned parameter, its log Beta prior
        density); one variable per learned parameter (``strength``, ``leak``,
        ``weight_prob``), its value after each sweep, while ``attrs`` keep the starting
        values; ``A`` holds the final links ``W``; ``sample_stats["births_accepted"]`` as
        :func:`ibp_lab.inference.uncollapsed.run_uncollapsed`. ``samples`` holds the kept
        ``Z``; pair them with links by running on.

    Examples
    --------
    With the defaults, strength, leak and link probability are learned:

    >>> X = (np.random.default_rng(0).random((6, 4)) < 0.4).astype(int)
    >>> run = run_noisy_or(X, 10, np.random.default_rng(1))
    >>> sorted(run.trace.data_vars)
    ['k_plus', 'leak', 'log_joint', 'log_likelihood', 'strength', 'weight_prob']

    Only the leak learned, under a Beta(1, 9) prior (mean 0.1), with births from the data:

    >>> run = run_noisy_or(X, 10, np.random.default_rng(1), weight_prob=0.3, learn=["leak"],
    ...                    priors={"leak": (1.0, 9.0)}, births="data")
    >>> sorted(run.trace.data_vars)
    ['k_plus', 'leak', 'log_joint', 'log_likelihood']
    >>> bool(0.0 < run.trace["leak"].values.min() < 1.0)
    True

    All held fixed (the sampler checked against :func:`class_posterior`):

    >>> run = run_noisy_or(X, 10, np.random.default_rng(1), learn=())
    >>> run.trace["k_plus"].shape
    (10,)
    """
    params = NoisyOrParameters(alpha, weight_prob, strength, leak, beta)
    if births == "prior" and not priors:  # the fixed-parameter sampler, draw for draw
        return run_kernel(_sweep, X, n_sweeps, rng, params, Z0, burn, thin,
                          "births_accepted", "noisy-OR: Gibbs + Metropolis-Hastings births",
                          hooks=_start_and_measure(X, params, W0))
    chain = _LearningChain(X, params, births, priors, W0)
    run = run_kernel(chain.sweep, X, n_sweeps, rng, params, Z0, burn, thin, "births_accepted",
                     chain.sampler_name(), hooks=(chain.start, chain.measure), extra=tuple(priors))
    for name in priors:
        run.trace.attrs[f"{name}_prior"] = f"Beta{priors[name]}"
    return run


class _LearningChain:
    """:func:`run_noisy_or`'s sweep and measure when births come from the data or
    parameters are learned: the current parameters live here; :meth:`measure` gives the
    learned ones' values to the trace."""

    def __init__(self, X, params: NoisyOrParameters, births: str, priors: dict, W0=None):
        self.X, self.params, self.births, self.priors = X, params, births, priors
        self.start = _start_and_measure(X, params, W0)[0]

    def sampler_name(self) -> str:
        name = "noisy-OR: Gibbs + Metropolis-Hastings births"
        name += " from the data" if self.births == "data" else ""
        return name + (f"; learned {', '.join(self.priors)}" if self.priors else "")

    def sweep(self, X, Z, W, _, rng):
        Z, W, accepted = _sweep(X, Z, W, self.params, rng, self.births)
        self.params = _update_parameters(X, Z, W, self.params, self.priors, rng)
        return Z, W, accepted

    def measure(self, Z, W):
        """``(log_likelihood, log_joint, *learned values)`` after a sweep."""
        log_lik, log_joint = _start_and_measure(self.X, self.params)[1](Z, W)
        learned = [getattr(self.params, name) for name in self.priors]
        return log_lik, log_joint + sum(
            _log_beta_prior(value, prior) - betaln(*prior)
            for value, prior in zip(learned, self.priors.values())), *learned


def _start_and_measure(X, params: NoisyOrParameters, W0=None):
    log_p, log_1mp = math.log(params.weight_prob), math.log1p(-params.weight_prob)

    def start(Z, rng):
        if W0 is not None:  # a chain run on: no draw, so its generator continues unchanged
            return W0.copy()
        return (rng.random((Z.shape[1], X.shape[1])) < params.weight_prob).astype(np.int64)

    def measure(Z, W):
        log_lik = float(_log_probs(X, _link_counts(Z, W), params).sum())
        log_links = float(W.sum() * log_p + (W.size - W.sum()) * log_1mp)
        # log_prior refuses a matrix without rows: its one class has probability one
        log_class = log_prior(Z, params.alpha, beta=params.beta) if Z.shape[0] else 0.0
        return log_lik, log_lik + log_links + log_class
    return start, measure


# --------------------------------------------------------------------------------------
# exact enumeration on tiny data
# --------------------------------------------------------------------------------------


def link_combinations(types, counts, weight_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """For one pixel and the class with ``counts[t]`` columns of type ``t``: every way the
    class's features can link the pixel, up to exchangeability, with its prior log weight.

    Features of one type are exchangeable: only ``j_t``, how many of them link the pixel,
    matters, and ``j_t ~ Binomial(counts[t], weight_prob)`` independently. Returns
    ``log_w`` (one per combination of the ``j_t``) and ``row_counts``, the active linked
    causes of each row under it (``(n_combinations, N)``).
    """
    used = np.flatnonzero(counts)
    combos = list(itertools.product(*(range(counts[t] + 1) for t in used)))
    j = np.array(combos, np.int64).reshape(len(combos), used.size)  # one empty combo if K = 0
    log_w = binom.logpmf(j, counts[used], weight_prob).sum(axis=1)
    return log_w, j @ types[:, used].T.astype(np.int64)


def _class_log_likelihood(X, types, counts, params: NoisyOrParameters) -> float:
    """``log sum_W P(W) p(X | Z, W)`` for the class with ``counts[t]`` columns of type ``t``:
    the pixels' links are independent, so a product over pixels of sums over
    :func:`link_combinations`."""
    log_w, row_counts = link_combinations(types, counts, params.weight_prob)
    return float(sum(logsumexp(log_w + _log_probs(X[:, d][None, :], row_counts, params).sum(axis=1))
                     for d in range(X.shape[1])))


#: Most classes :func:`class_posterior` enumerates: each costs about 0.2 ms (its links summed
#: out pixel by pixel), so 20,000 take about 4 s (measured: 15,504 classes of four rows at
#: k_max = 5 in 2.6 s of CPU; the 490,314 of four rows at the default k_max = 8 would take
#: minutes).
MAX_ENUMERATED_CLASSES = 20_000
#: Most link terms (:func:`link_terms`) it sums: measured 2.45 million (three rows of three
#: pixels at k_max = 9, the book's example) in 2.8 s with its 11,440 classes.
MAX_LINK_TERMS = 5_000_000


@validated(n_rows=Count(minimum=1, maximum=exact.MAX_ROWS), n_pixels=Count(), k_max=Count())
def link_terms(n_rows: int, n_pixels: int, k_max: int) -> int:
    """How many link combinations :func:`class_posterior` sums over, all classes and pixels.

    A class with ``c_t`` columns of type ``t`` has ``prod_t (c_t + 1)`` combinations per
    pixel (:func:`link_combinations`). Summed over the classes with at most ``k_max``
    columns of ``T = 2^n_rows - 1`` types this is the coefficient of ``x^k_max`` in
    ``(1 - x)^-(2 T + 1)`` (each type contributes ``sum_c (c + 1) x^c = (1 - x)^-2``, and
    the factor ``(1 - x)^-1`` sums over ``K <= k_max``): ``C(2 T + k_max, k_max)``.

    Examples
    --------
    >>> link_terms(1, 1, 2)  # one type: classes of 0, 1, 2 columns with 1, 2, 3 combinations
    6
    """
    return n_pixels * math.comb(2 * (2**n_rows - 1) + k_max, k_max)


def _check_enumerable_data(name: str, X) -> np.ndarray:
    """``X`` of :func:`class_posterior`: binary, as ``int8``, with rows few enough to enumerate."""
    X = check_binary_matrix("X", X).astype(np.int8)
    if not 1 <= X.shape[0] <= exact.MAX_ROWS:
        raise ValueError(f"X must have 1 to {exact.MAX_ROWS} rows for enumeration, "
                         f"got {X.shape[0]}")
    return X


def _check_noisy_enumeration(X: np.ndarray, k_max: int) -> None:
    """The enumeration doors' one rule, with this door's costlier classes counted too."""
    n_rows = X.shape[0]
    check_enumeration(n_rows, k_max, limits=[
        ("classes for the noisy-OR (about 0.2 ms each)", lambda k: exact.count_classes(n_rows, k),
         MAX_ENUMERATED_CLASSES),
        ("link terms", lambda k: link_terms(n_rows, X.shape[1], k), MAX_LINK_TERMS)])


@validated(X=Checked(_check_enumerable_data), parameters=_PARAMETERS, k_max=Count(),
           size=Joint(_check_noisy_enumeration, "X", "k_max"))
def class_posterior(X, *, alpha: float = 1.0, weight_prob: float = 0.2, strength: float = 0.9,
                    leak: float = 0.05, beta: float = 1.0, k_max: int = 8) -> exact.ClassPosterior:
    """Exact posterior of the classes of ``Z`` with at most ``k_max`` causes, links summed out.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` binary data with ``N <= 4`` rows (:data:`ibp_lab.inference.exact.MAX_ROWS`).
    alpha, weight_prob, strength, leak, beta : float, optional
        The model's parameters (as :func:`noisy_or_sweep`, with the same defaults), fixed.
    k_max : int, optional
        Largest ``K+`` enumerated. Refused, before any work, where the enumeration would
        not finish in seconds (more than :data:`MAX_ENUMERATED_CLASSES` classes or
        :data:`MAX_LINK_TERMS` link terms; the message gives the largest ``k_max`` that
        would): the default 8 suits three rows; four rows need ``k_max <= 5``.

    Returns
    -------
    ibp_lab.inference.exact.ClassPosterior
        ``tail_bound`` bounds the mass beyond ``k_max``: the prior's tail times the
        largest likelihood any state can have (``(1 - leak)`` per pixel that is off, 1 per
        pixel that is on), over the enumerated evidence.

    Examples
    --------
    The most probable class explains the two patterns by one cause each:

    >>> post = class_posterior([[1, 0], [1, 0], [0, 1]], alpha=1.0, weight_prob=0.3,
    ...                        strength=0.9, leak=0.05, k_max=6)
    >>> list(post.classes())[post.probabilities.argmax()].tolist()
    [[1, 0], [1, 0], [0, 1]]

    Check ``tail_bound`` before trusting the numbers (here it is large: raise ``k_max`` or
    lower ``alpha``).
    """
    params = NoisyOrParameters(alpha, weight_prob, strength, leak, beta)
    n_rows = X.shape[0]
    counts, k_plus, log_prior_at_1, _, _ = class_table(n_rows, k_max, params.beta)
    rate = params.alpha * harmonic(n_rows, params.beta)
    log_prior = log_prior_at_1 + k_plus * math.log(params.alpha) - (rate - rate / params.alpha)
    types = exact.column_types(n_rows)
    log_lik = np.array([_class_log_likelihood(X, types, c, params) for c in counts])
    log_weights = log_prior + log_lik
    log_total = logsumexp(log_weights)
    # a pixel that is off has probability at most 1 - leak, one that is on at most 1
    log_tail = poisson(rate).logsf(k_max) + np.sum(X == 0) * math.log1p(-params.leak)
    tail_bound = float(np.exp(log_tail - np.logaddexp(log_total, log_tail)))
    probabilities = np.exp(log_weights - log_total)
    return exact.ClassPosterior(counts, k_plus, log_weights, probabilities, tail_bound)
