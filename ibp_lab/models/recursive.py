"""The Recursive IBP: marginal probabilities of the buffet from running sums.

In the two-parameter Indian buffet process a customer's dishes depend on the whole
history of earlier customers. Averaging that conditional over all histories gives the
marginal probability ``p(z_nk = 1 | alpha, beta)`` that customer ``n`` eats dish ``k``
(dishes numbered in order of creation), and Schaeffer et al. (2022, eq. 4) show that these
marginals obey a recursion that needs only a running sum per dish and one Poisson rate:

.. math::

    p(z_{nk} = 1) = \\frac{1}{\\beta + n - 1} \\sum_{n' < n} p(z_{n'k} = 1)
                    + P(\\Lambda_{n-1} \\le k - 1 < \\Lambda_n),

where :math:`\\Lambda_n \\sim \\mathrm{Poisson}(\\sum_{i \\le n} \\alpha\\beta/(\\beta + i - 1))`
is the number of dishes after ``n`` customers. The derivation is in the book's chapter
"The Recursive IBP" (``book/04_recursive_ibp.md``).

The second term, the probability that dish ``k`` is new to customer ``n``, is computed as
a sum of non-negative products (see :func:`new_dish_probabilities`) rather than as the
difference of two Poisson CDFs, so it is never negative and keeps its relative accuracy far
into both tails.

Public names
------------
- :func:`marginals`: the ``(n, k_max)`` table of marginals.
- :func:`monte_carlo_marginals`: the same table estimated by simulating the buffet.
- :func:`monte_carlo_agreement`: entry-by-entry test of a simulation against the recursion.
- :func:`monte_carlo_mse`: how far the simulation is from the recursion, per sample size.
- :func:`new_dish_probabilities`: ``P(Lambda_{n-1} <= k-1 < Lambda_n)`` for ``k = 1..k_max``.
- :func:`next_row_prior`: one step of the recursion from a running sum and a rate. The
  running sum may hold *posterior* probabilities and the rate a posterior rate: this is the
  filtering prior of streaming inference (chapter 12).
- :class:`RecursiveMarginals` and :func:`iter_marginals`: the recursion as a stream with
  ``O(k_max)`` state (a running sum per dish, the Poisson rate and the customer count).
- :func:`columns_needed`: how many columns cover all but a given tail of the number of
  dishes.

The Poisson rates themselves have one public face each, in :mod:`ibp_lab.models.prior`:
``Lambda_n`` has rate :func:`ibp_lab.models.prior.expected_num_features` ``(alpha, n,
beta=beta)`` and customer ``n`` adds :func:`ibp_lab.models.prior.new_dish_rate` ``(alpha,
n - 1, beta=beta)`` new dishes (it has ``n - 1`` customers before it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from scipy import special, stats

from ibp_lab._checks import (
    MAX_ENTRIES,
    Checked,
    Count,
    Generator,
    Joint,
    Optional,
    Positive,
    RealArray,
    check_count,
    check_positive,
    check_real_array,
    check_size,
    validated,
)
from ibp_lab._hyper import harmonic, new_dish_rate
from ibp_lab.models.prior import expected_num_features

__all__ = [
    "marginals",
    "monte_carlo_marginals",
    "monte_carlo_mse",
    "monte_carlo_agreement",
    "Agreement",
    "new_dish_probabilities",
    "next_row_prior",
    "RecursiveMarginals",
    "iter_marginals",
    "columns_needed",
]

# Uniform draws per block in the Monte Carlo simulation (about 16 MB of float64): large
# enough to amortise Python overhead, small enough for a laptop shared with a browser.
_MC_BLOCK = 2**21

#: Most multiply-adds one call may do (a few seconds at the 2e9 per second that
#: np.convolve reaches on one core on factors that fit in cache). Calls whose work, bounded before anything is computed, exceeds
#: it are refused with a ValueError: a tiny-looking request such as alpha = 1e5 with
#: k_max = 10**6 would otherwise run for hours.
MAX_WORK = 5 * 10**9
#: Fixed cost of one row of the recursion (Python overhead, about 10 microseconds), in
#: multiply-adds, so that a million cheap rows count as real work too.
_ROW_OVERHEAD = 2 * 10**4
#: Cost of one column of one row outside the convolution (a Poisson pmf and survival
#: function: about 0.3 microseconds), in multiply-adds.
_COLUMN_COST = 600
#: Length of the pieces of the pmf convolved at a time (32 kB: stays in cache).
_CONV_CHUNK = 4096
#: Fixed cost of one customer in one Monte Carlo block, in the same units.
_MC_ROW_OVERHEAD = 4 * 10**4
# log of the smallest subnormal double, rounded up: Poisson terms below exp(-_LOG_TINY)
# underflow to 0 and are dropped before convolving.
_LOG_TINY = 745.0


# --------------------------------------------------------------------------------------
# Columns for the number of dishes
# --------------------------------------------------------------------------------------


@validated(n=Count(minimum=1), alpha=Positive(), beta=Positive(), tail=Positive(upper=0.5))
def columns_needed(alpha: float, beta: float, n: int, *, tail: float = 1e-12) -> int:
    """Return how many dish columns cover the first ``n`` customers but for a tiny tail.

    This is the smallest ``K >= 1`` with ``P(Lambda_n > K) <= tail``: dishes beyond column
    ``K`` exist after ``n`` customers with probability at most ``tail``. It grows like the
    expected number of dishes, that is like ``alpha * beta * log(n)`` for large ``n``.

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    n : int
        Number of customers, >= 1.
    tail : float, optional
        Allowed probability of more dishes than columns, in (0, 0.5].

    Returns
    -------
    int
        The number of columns.

    Examples
    --------
    >>> columns_needed(2.0, 1.0, 1, tail=1e-3)  # P(Poisson(2) > 8) <= 1e-3 < P(Poisson(2) > 7)
    8
    """
    rate = expected_num_features(alpha, n, beta=beta)
    return max(1, int(stats.poisson.isf(tail, rate)))


# --------------------------------------------------------------------------------------
# One step of the recursion
# --------------------------------------------------------------------------------------


_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _stirling_error(j: np.ndarray) -> np.ndarray:
    """``log(j!) - (j + 1/2) log(j) + j - log(sqrt(2 pi))`` for integers ``j >= 1``.

    Below 15 from ``gammaln`` (the terms are small, so little cancels); above it from
    the Stirling series, whose first omitted term is below 2e-14 there.
    """
    out = np.empty(j.shape)
    small = j < 15
    js = j[small]
    out[small] = special.gammaln(js + 1.0) - (js + 0.5) * np.log(js) + js - _HALF_LOG_2PI
    jl = j[~small].astype(float)
    inv2 = 1.0 / (jl * jl)
    out[~small] = (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 / 1680))) / jl
    return out


def _deviance(x: np.ndarray, m: float) -> np.ndarray:
    """``x log(x / m) + m - x`` for ``x >= 1``, ``m > 0``, without cancellation near ``x = m``.

    Near ``m`` the expression is a small difference of large numbers; there it is summed as
    the series ``(x - m) v + 2 x sum_k v^(2k+1) / (2k+1)`` with ``v = (x - m) / (x + m)``,
    whose terms shrink by ``v^2 < 0.01`` (Loader 2000, "Fast and accurate computation of
    binomial probabilities").
    """
    x = x.astype(float)
    out = x * (np.log(x) - np.log(m)) + m - x  # not log(x / m): it overflows for subnormal m
    near = np.abs(x - m) < 0.1 * (x + m)
    xn = x[near]
    v = (xn - m) / (xn + m)
    total = (xn - m) * v
    power = 2 * xn * v
    for k in range(1, 10):  # v^2 < 0.01: nine terms reach 1e-18 of the first
        power = power * v * v
        total = total + power / (2 * k + 1)
    out[near] = total
    return out


def _poisson_pmf(j: np.ndarray, rate: float) -> np.ndarray:
    """Poisson(``rate``) probabilities of the integers ``j >= 0``, accurate to a few ulps.

    ``exp(j log(rate) - rate - log(j!))`` loses ``|log terms| * eps`` of relative accuracy,
    about 1e-11 at ``rate = 1e4``: enough for marginals to exceed 1. Loader's form
    ``exp(-deviance - stirling_error) / sqrt(2 pi j)`` keeps each piece small.
    """
    out = np.empty(j.shape)
    zero = j == 0
    out[zero] = np.exp(-rate)
    jp = j[~zero]
    out[~zero] = np.exp(-_deviance(jp, rate) - _stirling_error(jp) - _HALF_LOG_2PI) / np.sqrt(jp)
    return out


def _support(rate: float) -> tuple[float, float]:
    """Bounds ``(lo, hi)`` outside which Poisson(``rate``) probabilities underflow to 0.

    From the Chernoff-Bernstein bounds ``P(X <= rate - x) <= exp(-x^2 / (2 rate))`` and
    ``P(X >= rate + x) <= exp(-x^2 / (2 (rate + x / 3)))``: both tails are below
    ``exp(-745)``, the smallest subnormal, beyond these points.
    """
    left = np.sqrt(2 * _LOG_TINY * rate)
    right = _LOG_TINY / 3 + np.sqrt(_LOG_TINY**2 / 9 + 2 * _LOG_TINY * rate)
    return max(0.0, rate - left), rate + right + 1


def _row_work(rate_before: float, rate_new: float, k_max: int) -> float:
    """Upper bound on the multiply-adds of one :func:`_new_dish_probabilities` call."""
    lo, hi = _support(rate_before)
    width_before = min(float(k_max), hi - min(lo, k_max))
    width_new = min(float(k_max), _support(rate_new)[1])
    return width_before * width_new + _COLUMN_COST * k_max + _ROW_OVERHEAD


#: A Poisson rate: a float >= 0.
_RATE = Positive(allow_zero=True)


def _check_work(what: str, work: float, names: tuple[str, ...] = ()) -> None:
    """Refuse a call whose multiply-adds exceed :data:`MAX_WORK`, naming the arguments ``names``."""
    check_size(what, work, names=names, limit=MAX_WORK,
               hint="these are multiply-adds; use a smaller alpha, fewer rows or fewer columns")


def _check_table(n: int, k_max: int) -> None:
    """Refuse an ``(n, k_max)`` table of marginals beyond :data:`MAX_ENTRIES`."""
    check_size("the table of marginals", float(n) * k_max, names=("n", "k_max"),
               hint="use fewer rows or columns")


def _mc_work(n: int, k_max: int, n_samples: int) -> float:
    """Work of one :func:`monte_carlo_marginals` run, in the units of :data:`MAX_WORK`.

    Its samples are drawn in blocks of about ``_MC_BLOCK`` entries, each block costing a
    fixed overhead per row on top of one multiply-add per entry.
    """
    block = max(1, _MC_BLOCK // k_max)
    n_blocks = -(-n_samples // block)
    return float(n) * (float(n_samples) * k_max + n_blocks * _MC_ROW_OVERHEAD)


def _new_dish_probabilities(rate_before: float, rate_new: float, k_max: int) -> np.ndarray:
    """``P(A <= k-1 < A + B)`` for k = 1..k_max, A ~ Poisson(rate_before), B ~ Poisson(rate_new).

    Conditioning on A = j gives sum_{j<k} P(A = j) P(B >= k - j): a convolution of the
    pmf of A with the survival function of B. Every product is >= 0, so the result is too,
    and each factor is accurate to a few ulps even in the far tails, so the sum is accurate
    relative to its own size. Factors that underflow to 0 are dropped before convolving,
    which leaves the sum unchanged and bounds the work (see :func:`marginals`).
    """
    if rate_new == 0.0:
        return np.zeros(k_max)
    j = np.arange(k_max)
    if rate_before == 0.0:
        pmf_before = np.zeros(k_max)
        pmf_before[0] = 1.0
    else:
        pmf_before = _poisson_pmf(j, rate_before)
    # sf_new[i] = P(B >= i + 1) = P(B > i); decreasing, so its non-zero part is a prefix.
    sf_new = special.pdtrc(j, rate_new)
    nonzero_a = np.flatnonzero(pmf_before)
    n_b = int(np.count_nonzero(sf_new))
    out = np.zeros(k_max)
    if nonzero_a.size == 0 or n_b == 0:
        return out
    lo, hi = nonzero_a[0], nonzero_a[-1] + 1
    stop = min(k_max, hi + n_b - 1)
    # np.convolve is a direct (not FFT) sum, so no cancellation can enter here. It slows
    # down thirtyfold once the shorter factor leaves the cache, so the pmf goes in pieces.
    for start in range(lo, min(hi, stop), _CONV_CHUNK):
        piece = pmf_before[start : min(hi, start + _CONV_CHUNK)]
        conv = np.convolve(piece, sf_new[: min(n_b, stop - start)])
        end = min(stop, start + conv.size)
        out[start:end] += conv[: end - start]
    return out


@validated(rate_before=_RATE, rate_new=_RATE, k_max=Count(minimum=1, maximum=MAX_ENTRIES))
def new_dish_probabilities(rate_before: float, rate_new: float, k_max: int) -> np.ndarray:
    """Return the probability that dish ``k`` is created by the current customer.

    With ``Lambda_before ~ Poisson(rate_before)`` dishes before the customer and
    ``New ~ Poisson(rate_new)`` new dishes (independent), dish ``k`` is new exactly when
    ``Lambda_before <= k - 1 < Lambda_before + New``. Its probability equals the difference
    of Poisson CDFs ``P(Lambda_before <= k-1) - P(Lambda_before + New <= k-1)``, but is
    computed as ``sum_{j < k} P(Lambda_before = j) P(New >= k - j)``, a sum of non-negative
    terms: never negative, and accurate relative to its size where the CDF difference
    cancels to rounding noise.

    Parameters
    ----------
    rate_before : float
        Poisson rate of the number of dishes before the customer, >= 0.
    rate_new : float
        Poisson rate of the number of new dishes, >= 0.
    k_max : int
        Number of dishes (columns), >= 1.

    Returns
    -------
    numpy.ndarray
        Shape ``(k_max,)``; entry ``k - 1`` is the probability for dish ``k``.

    Examples
    --------
    Before the first customer there are no dishes, so dish ``k`` is new to customer 1
    exactly when customer 1 takes at least ``k`` dishes:

    >>> p = new_dish_probabilities(0.0, 2.0, 4)
    >>> bool(np.allclose(p, stats.poisson.sf(np.arange(4), 2.0)))
    True

    Far in the right tail both CDFs round to 1 and their difference to 0; the sum does not:

    >>> naive = stats.poisson.cdf(39, 5.0) - stats.poisson.cdf(39, 6.0)
    >>> float(naive), bool(new_dish_probabilities(5.0, 1.0, 40)[39] > 1e-20)
    (0.0, True)
    """
    _check_work("new_dish_probabilities", _row_work(rate_before, rate_new, k_max),
                ("rate_before", "rate_new", "k_max"))
    return _new_dish_probabilities(rate_before, rate_new, k_max)


def _next_row(
    running_sum: np.ndarray, n: int, rate_before: float, alpha: float, beta: float, k_max: int
) -> tuple[np.ndarray, float]:
    """Unchecked :func:`next_row_prior`; ``len(running_sum) <= k_max``."""
    rate_new = new_dish_rate(alpha, beta, n - 1)
    row = _new_dish_probabilities(rate_before, rate_new, k_max)
    row[: running_sum.size] += running_sum / (beta + (n - 1))
    # The exact value is at most P(Lambda_{n-1} >= k) + P(Lambda_{n-1} < k) = 1. With every
    # factor accurate to a few ulps (see _poisson_pmf) the computed sum of thousands of
    # terms can still round a few ulps above 1 (6.7e-16 at alpha = 1e5); rounding it back
    # keeps every row a valid input of RecursiveMarginals.update.
    np.minimum(row, 1.0, out=row)
    return row, rate_before + rate_new


def _check_running_sum(running_sum: np.ndarray, n: int) -> np.ndarray:
    if running_sum.ndim != 1:
        raise ValueError(f"running_sum must be 1-D (one entry per dish), got {running_sum.ndim}-D")
    if running_sum.size and not (
        np.all(np.isfinite(running_sum)) and running_sum.min() >= 0 and running_sum.max() <= n - 1
    ):
        raise ValueError(f"running_sum entries must be in [0, n - 1] = [0, {n - 1}]")
    return running_sum


def _check_k_max_covers(k_max, running_sum: np.ndarray) -> int:
    """``k_max`` (default: the dishes of ``running_sum``), at least those dishes."""
    if k_max is None:
        k_max = max(running_sum.size, 1)
    return check_count("k_max", k_max, minimum=max(running_sum.size, 1), maximum=MAX_ENTRIES)


@validated(n=Count(minimum=1), rate_before=_RATE, alpha=Positive(), beta=Positive(),
           running_sum=RealArray(),
           running_sum_fits=Joint(_check_running_sum, "running_sum", "n", sets="running_sum"),
           k_max=Joint(_check_k_max_covers, "k_max", "running_sum", sets="k_max"))
def next_row_prior(
    running_sum,
    n: int,
    rate_before: float,
    alpha: float,
    beta: float,
    *,
    k_max: int | None = None,
) -> tuple[np.ndarray, float]:
    """Return customer ``n``'s marginal dish probabilities from a running sum and a rate.

    One step of the Recursive IBP: ``row[k-1] = running_sum[k-1] / (beta + n - 1)
    + P(Lambda_{n-1} <= k-1 < Lambda_n)`` with ``Lambda_{n-1} ~ Poisson(rate_before)`` and
    ``Lambda_n = Lambda_{n-1} + Poisson(alpha * beta / (beta + n - 1))``.

    With prior marginals in ``running_sum`` and ``rate_before =``
    :func:`ibp_lab.models.prior.expected_num_features` ``(alpha, n - 1, beta=beta)`` this is
    exact. In streaming inference (chapter 12) the same step turns the running
    sum of earlier *posterior* probabilities ``q(z_{n'k} = 1 | x_{<=n'})`` and a posterior rate
    for the number of dishes into the filtering prior ``q(z_nk = 1 | x_{<n})``: nothing else
    of the history is needed.

    Parameters
    ----------
    running_sum : array_like
        Shape ``(k,)``: for each dish, the sum over customers ``1..n-1`` of the probability
        that they took it. Entries must be in ``[0, n - 1]``.
    n : int
        Index of the new customer, >= 1.
    rate_before : float
        Poisson rate of the number of dishes after ``n - 1`` customers, >= 0.
    alpha, beta : float
        IBP parameters, > 0.
    k_max : int, optional
        Length of the returned row, at least ``len(running_sum)``; dishes beyond the
        running sum have a running sum of 0. Default ``len(running_sum)``.

    Returns
    -------
    row : numpy.ndarray
        Shape ``(k_max,)``, the probabilities ``p(z_nk = 1)`` for ``k = 1..k_max``.
    rate : float
        The Poisson rate of the number of dishes after customer ``n``
        (``rate_before + alpha * beta / (beta + n - 1)``).

    Examples
    --------
    Two steps of the recursion reproduce the first two rows of :func:`marginals`:

    >>> row1, rate1 = next_row_prior(np.zeros(5), 1, 0.0, 2.0, 1.5)
    >>> row2, rate2 = next_row_prior(row1, 2, rate1, 2.0, 1.5)
    >>> bool(np.allclose(np.vstack([row1, row2]), marginals(2.0, 1.5, 2, 5)))
    True
    >>> rate2 == 2.0 + 2.0 * 1.5 / 2.5
    True
    """
    _check_work("next_row_prior", _row_work(rate_before, new_dish_rate(alpha, beta, n - 1), k_max),
                ("rate_before", "alpha", "k_max"))
    return _next_row(running_sum, n, rate_before, alpha, beta, k_max)


# --------------------------------------------------------------------------------------
# The recursion as a stream
# --------------------------------------------------------------------------------------


class RecursiveMarginals:
    """The Recursive IBP as a stream: what it remembers is a running sum per dish and a rate.

    The state after ``n_seen`` customers is

    - ``running_sum``: for each dish, the summed probability that customers ``1..n_seen``
      took it (length ``k_max``, or growing like the number of dishes if ``k_max=None``);
    - ``rate``: the Poisson rate of the number of dishes after ``n_seen`` customers;
    - ``n_seen``: the number of customers so far.

    :meth:`prior_next` turns this state into the next customer's marginals without changing
    it; :meth:`update` adds a row of probabilities to the state. :meth:`step` does both with
    the prior itself, which reproduces :func:`marginals` row by row. In streaming inference
    the row given to :meth:`update` is a posterior, and ``rate`` may be replaced by the
    posterior rate of the number of features (chapter 12).

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    k_max : int or None, optional
        Number of dish columns. ``None`` (the default) lets the state grow to
        :func:`columns_needed` for the next customer, so that memory tracks the number of
        dishes (logarithmic in the number of customers). Columns are appended with a running
        sum of 0; the sum they miss is at most ``n_seen * tail`` per column.
    tail : float, optional
        Tail probability used when ``k_max`` is None.

    Examples
    --------
    >>> stream = RecursiveMarginals(2.0, 1.5, k_max=5)
    >>> rows = np.vstack([stream.step() for _ in range(3)])
    >>> bool(np.allclose(rows, marginals(2.0, 1.5, 3, 5)))
    True
    >>> stream.n_seen, stream.running_sum.shape
    (3, (5,))
    >>> growing = RecursiveMarginals(2.0, 1.0)
    >>> sizes = [growing.step().size for _ in range(100)]
    >>> sizes[0] < sizes[9] < sizes[99] < 60
    True
    """

    @validated(alpha=Positive(), beta=Positive(),
               k_max=Optional(Count(minimum=1, maximum=MAX_ENTRIES)), tail=Positive(upper=0.5))
    def __init__(
        self, alpha: float, beta: float, k_max: int | None = None, *, tail: float = 1e-12
    ) -> None:
        self.alpha, self.beta, self.k_max, self.tail = alpha, beta, k_max, tail
        self.n_seen = 0
        self.rate = 0.0
        self.running_sum = np.zeros(0 if self.k_max is None else self.k_max)

    def _width(self) -> int:
        """Columns for the next customer."""
        if self.k_max is not None:
            return self.k_max
        rate = self.rate + new_dish_rate(self.alpha, self.beta, self.n_seen)
        needed = max(1, int(min(stats.poisson.isf(self.tail, rate), 2.0 * MAX_ENTRIES)))
        return max(needed, self.running_sum.size)

    def prior_next(self) -> np.ndarray:
        """Return the marginals ``p(z_nk = 1)`` of the next customer ``n = n_seen + 1``.

        Raises ``ValueError`` before computing if the row's work exceeds :data:`MAX_WORK`.
        """
        width = self._width()
        check_size("the next row", float(width), limit=MAX_ENTRIES)
        rate_new = new_dish_rate(self.alpha, self.beta, self.n_seen)
        _check_work("the next row", _row_work(self.rate, rate_new, width))
        row, _ = _next_row(
            self.running_sum, self.n_seen + 1, self.rate, self.alpha, self.beta, width
        )
        return row

    def update(self, probabilities, *, rate: float | None = None) -> None:
        """Add customer ``n_seen + 1``'s dish probabilities to the state.

        Parameters
        ----------
        probabilities : array_like
            Probabilities in ``[0, 1]`` that the customer took each dish: the prior row from
            :meth:`prior_next`, or a posterior. Its length may exceed the current state
            (new dishes); the running sum is extended with zeros.
        rate : float, optional
            Poisson rate of the number of dishes after this customer. Default: the prior
            update ``rate + alpha * beta / (beta + n_seen)``.
        """
        probabilities = check_real_array("probabilities", probabilities)
        if probabilities.ndim != 1:
            raise ValueError(
                f"probabilities must be 1-D (one entry per dish), got {probabilities.ndim}-D"
            )
        if probabilities.size and not (
            np.all(np.isfinite(probabilities))
            and probabilities.min() >= 0
            and probabilities.max() <= 1
        ):
            raise ValueError("probabilities must be in [0, 1]")
        if self.k_max is not None and probabilities.size != self.k_max:
            raise ValueError(
                f"probabilities must have k_max = {self.k_max} entries, got {probabilities.size}"
            )
        check_size("probabilities", float(probabilities.size), limit=MAX_ENTRIES)
        new_rate = None if rate is None else check_positive("rate", rate, allow_zero=True)
        if probabilities.size > self.running_sum.size:
            self.running_sum = np.pad(
                self.running_sum, (0, probabilities.size - self.running_sum.size)
            )
        self.running_sum[: probabilities.size] += probabilities
        if new_rate is None:
            self.rate += new_dish_rate(self.alpha, self.beta, self.n_seen)
        else:
            self.rate = new_rate
        self.n_seen += 1

    def step(self) -> np.ndarray:
        """Return the next customer's prior marginals and add them to the state."""
        row = self.prior_next()
        self.update(row)
        return row

    @property
    def state_nbytes(self) -> int:
        """Bytes of state: the running sum plus the rate and the customer count."""
        return int(self.running_sum.nbytes) + 2 * 8


def iter_marginals(
    alpha: float, beta: float, k_max: int | None = None, *, tail: float = 1e-12
) -> Iterator[np.ndarray]:
    """Yield the marginal rows ``p(z_nk = 1)`` for ``n = 1, 2, ...`` without end.

    A generator over :class:`RecursiveMarginals`: its state is ``O(k_max)`` numbers whatever
    the number of rows produced. With ``k_max=None`` the rows grow with the number of dishes.

    Examples
    --------
    >>> from itertools import islice
    >>> rows = np.vstack(list(islice(iter_marginals(1.0, 2.0, 3), 4)))
    >>> bool(np.allclose(rows, marginals(1.0, 2.0, 4, 3)))
    True
    """
    stream = RecursiveMarginals(alpha, beta, k_max, tail=tail)
    while True:
        yield stream.step()


# --------------------------------------------------------------------------------------
# The table of marginals, analytic and simulated
# --------------------------------------------------------------------------------------


@validated(alpha=Positive(), beta=Positive(), n=Count(minimum=1), k_max=Count(minimum=1))
def marginals(alpha: float, beta: float, n: int, k_max: int) -> np.ndarray:
    """Return the Recursive IBP marginals ``p(z_ik = 1 | alpha, beta)`` for the first customers.

    Dishes are numbered in order of creation (customer 1's dishes first, then customer 2's
    new dishes, ...). Row ``i - 1`` is :func:`next_row_prior` applied to the running sum of
    rows ``0..i-2`` (Schaeffer et al. 2022, eq. 4).

    Cost: each row computes a Poisson pmf and survival function of length ``k_max``
    (``O(k_max)``) and their convolution restricted to the entries that do not underflow.
    The survival function of the new-dish count, whose rate is at most ``alpha``, is non-zero
    for a number of entries ``w`` that depends on ``alpha`` only (about 120 for
    ``alpha = 1``, 250 for ``alpha = 15``), so a row costs ``O(k_max * min(w, k_max))`` and
    the table ``O(n * k_max * w)``: linear in ``n`` and in ``k_max`` (see
    ``benchmarks/recursive.py``). Memory beyond the output is ``O(k_max)``.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0 (expected number of dishes per customer).
    beta : float
        Concentration parameter, > 0 (``beta = 1`` is the one-parameter IBP).
    n : int
        Number of customers (rows), >= 1.
    k_max : int
        Number of dishes (columns), >= 1. Columns beyond ``k_max`` are not computed;
        truncating does not change the columns kept.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, k_max)``; entry ``[i, k]`` is ``p(z_{i+1, k+1} = 1 | alpha, beta)``.

    Examples
    --------
    >>> p = marginals(2.0, 1.0, 3, 4)
    >>> p.round(3)
    array([[0.865, 0.594, 0.323, 0.143],
           [0.518, 0.504, 0.415, 0.281],
           [0.485, 0.446, 0.378, 0.288]])
    >>> bool(np.allclose(p[0], stats.poisson.sf(np.arange(4), 2.0)))  # row 1: P(Poisson(2) >= k)
    True
    >>> round(float(marginals(2.0, 1.0, 3, 60)[2].sum()), 10)  # alpha dishes per customer
    2.0
    """
    _check_table(n, k_max)
    # Rates only grow along the rows, so the last row's Poisson law bounds every row's work.
    _check_work("marginals", n * _row_work(alpha * harmonic(n, beta), alpha, k_max),
                ("alpha", "n", "k_max"))
    out = np.empty((n, k_max))
    running_sum = np.zeros(k_max)
    rate = 0.0
    for i in range(1, n + 1):
        out[i - 1], rate = _next_row(running_sum, i, rate, alpha, beta, k_max)
        running_sum += out[i - 1]
    return out


def _simulate_counts(
    alpha: float, beta: float, n: int, k_max: int, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Run ``size`` buffets in parallel; return how many took each (customer, dish)."""
    column = np.arange(k_max)
    taken_by = np.zeros((size, k_max), dtype=np.int64)  # m_k for the first k_max dishes
    n_dishes = np.zeros(size, dtype=np.int64)  # Lambda_{i-1}, not truncated
    totals = np.zeros((n, k_max), dtype=np.int64)
    for i in range(1, n + 1):
        z = np.zeros((size, k_max), dtype=bool)
        width = int(min(k_max, n_dishes.max()))
        if width:
            # Existing dish k is taken with probability m_k / (beta + i - 1); dishes not yet
            # created have m_k = 0 and are never taken here.
            u = rng.random((size, width))
            z[:, :width] = u * (beta + (i - 1)) < taken_by[:, :width]
        after = n_dishes + rng.poisson(new_dish_rate(alpha, beta, i - 1), size)
        z |= (column >= n_dishes[:, None]) & (column < after[:, None])
        taken_by += z
        n_dishes = after
        totals[i - 1] = z.sum(axis=0)
    return totals


@validated(alpha=Positive(), beta=Positive(), n=Count(minimum=1), k_max=Count(minimum=1),
           n_samples=Count(minimum=1), rng=Generator())
def monte_carlo_marginals(
    alpha: float,
    beta: float,
    n: int,
    k_max: int,
    n_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Estimate the marginals ``p(z_ik = 1 | alpha, beta)`` by simulating the buffet.

    Each of ``n_samples`` independent buffets seats ``n`` customers: customer ``i`` takes
    each existing dish ``k`` with probability ``m_k / (beta + i - 1)`` (``m_k`` earlier
    customers took it), then creates ``Poisson(alpha * beta / (beta + i - 1))`` new dishes,
    numbered after the existing ones. The indicators are averaged over buffets, dishes in
    order of creation. Dishes beyond ``k_max`` never influence earlier dishes, so only the
    first ``k_max`` are tracked (their count is not truncated).

    Buffets are simulated in blocks of at most about two million uniform draws, so memory
    stays bounded; the blocks depend only on ``k_max``, so the same seed gives the same result.

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    n : int
        Number of customers, >= 1.
    k_max : int
        Number of dishes kept, >= 1.
    n_samples : int
        Number of simulated buffets, >= 1.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, k_max)``; entry ``[i, k]`` is the fraction of buffets in which customer
        ``i + 1`` took dish ``k + 1``. Multiplied by ``n_samples`` it is an integer count.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> estimate = monte_carlo_marginals(2.0, 1.0, 3, 4, 20_000, rng)
    >>> exact = marginals(2.0, 1.0, 3, 4)
    >>> bool(np.all(np.abs(estimate - exact) < 5 * np.sqrt(exact * (1 - exact) / 20_000)))
    True
    """
    _check_table(n, k_max)
    _check_work("monte_carlo_marginals", _mc_work(n, k_max, n_samples), ("n", "k_max", "n_samples"))
    block = max(1, _MC_BLOCK // k_max)
    totals = np.zeros((n, k_max), dtype=np.int64)
    for start in range(0, n_samples, block):
        totals += _simulate_counts(alpha, beta, n, k_max, min(block, n_samples - start), rng)
    return totals / n_samples


class Agreement(NamedTuple):
    """Outcome of :func:`monte_carlo_agreement`."""

    n_entries: int  #: entries tested
    n_normal: int  #: entries tested by their z score (the others by an exact binomial tail)
    worst_z: float  #: largest absolute z score (estimate minus p, over its SE) among the z-tested entries
    z_limit: float  #: Bonferroni limit on the absolute z score
    smallest_tail: float  #: smallest two-sided binomial tail among the other entries
    tail_limit: float  #: Bonferroni limit on that tail probability
    ok: bool  #: both within their limits


def _check_probability_tables(exact: np.ndarray, estimate: np.ndarray):
    """``exact`` and ``estimate`` flattened, once both are tables of probabilities alike."""
    # A vector of entries or a table of marginals (rows x dishes); more axes is a mistake,
    # for instance a stack of tables passed where one was meant.
    for name, values in (("exact", exact), ("estimate", estimate)):
        if values.ndim not in (1, 2):
            raise ValueError(
                f"{name} must be 1-D or 2-D (entries, or rows x dishes), got {values.ndim}-D"
            )
    if exact.shape != estimate.shape:
        raise ValueError(
            f"exact and estimate must have the same shape, got {exact.shape} and {estimate.shape}"
        )
    exact, estimate = exact.ravel(), estimate.ravel()
    if exact.size == 0:
        raise ValueError("exact and estimate must hold at least one entry, got none")
    for name, values in (("exact", exact), ("estimate", estimate)):
        if not np.all((values >= 0) & (values <= 1)):  # also refuses NaN
            raise ValueError(f"{name} must hold probabilities in [0, 1]")
    return exact, estimate


def _check_family_level_below_one(family_level: float) -> None:
    if family_level >= 1.0:
        raise ValueError(f"family_level must be < 1, got {family_level}")


@validated(exact=RealArray(), estimate=RealArray(),
           tables=Joint(_check_probability_tables, "exact", "estimate", sets=("exact", "estimate")),
           n_samples=Count(minimum=1), family_level=Positive(upper=1.0),
           min_variance=Positive(allow_zero=True, upper=None),
           family_level_below_one=Joint(_check_family_level_below_one, "family_level"))
def monte_carlo_agreement(
    exact, estimate, n_samples: int, *, family_level: float = 1e-3, min_variance: float = 50.0
) -> Agreement:
    """Test Monte Carlo proportions against exact probabilities, entry by entry.

    Each estimate is a binomial proportion out of ``n_samples``. Where
    ``n_samples * p * (1 - p) >= min_variance`` the binomial is close to normal even several
    standard errors out, and the entry's z score ``(estimate - p) / sqrt(p (1 - p) / N)`` is
    compared with a limit; elsewhere (rare dishes) the exact two-sided binomial tail is
    compared with a limit. Both limits are Bonferroni corrections over all entries, so that a
    correct implementation fails with probability at most ``family_level`` however the
    entries are correlated.

    Parameters
    ----------
    exact : array_like
        Probabilities in ``[0, 1]``.
    estimate : array_like
        Proportions of the same shape, each a count out of ``n_samples``.
    n_samples : int
        Number of simulated buffets, >= 1.
    family_level : float, optional
        Allowed probability of a false alarm over all entries, in (0, 1).
    min_variance : float, optional
        Binomial variance (in counts) above which the normal approximation is used.

    Returns
    -------
    Agreement
        The worst z score, the smallest tail probability, their limits and ``ok``.

    Examples
    --------
    >>> exact = marginals(2.0, 1.0, 10, 20)
    >>> estimate = monte_carlo_marginals(2.0, 1.0, 10, 20, 5000, np.random.default_rng(3))
    >>> report = monte_carlo_agreement(exact, estimate, 5000)
    >>> report.ok, report.n_entries, round(report.z_limit, 2)
    (True, 200, 4.56)
    """
    m = exact.size
    variance = exact * (1 - exact)
    normal = n_samples * variance >= min_variance
    z = np.abs(estimate[normal] - exact[normal]) / np.sqrt(variance[normal] / n_samples)
    counts = np.rint(estimate[~normal] * n_samples)
    p = exact[~normal]
    lower = stats.binom.cdf(counts, n_samples, p)
    upper = stats.binom.sf(counts - 1, n_samples, p)
    tails = np.minimum(1.0, 2 * np.minimum(lower, upper))
    worst_z = float(z.max()) if z.size else 0.0
    smallest_tail = float(tails.min()) if tails.size else 1.0
    z_limit = float(stats.norm.isf(family_level / (2 * m)))
    tail_limit = family_level / m
    return Agreement(
        m, int(normal.sum()), worst_z, z_limit, smallest_tail, tail_limit,
        bool(worst_z < z_limit and smallest_tail > tail_limit),
    )


def _check_sample_sizes(name: str, sample_sizes) -> list[int]:
    if isinstance(sample_sizes, (str, bytes)) or not hasattr(sample_sizes, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence of integers, got {type(sample_sizes).__name__}"
        )
    sizes = [check_count(name, size, minimum=1) for size in sample_sizes]
    if not sizes:
        raise ValueError(f"{name} must hold at least one sample size, got none")
    return sizes


@validated(sample_sizes=Checked(_check_sample_sizes), rng=Generator(), alpha=Positive(),
           beta=Positive(), n=Count(minimum=1), k_max=Count(minimum=1))
def monte_carlo_mse(
    alpha: float,
    beta: float,
    n: int,
    k_max: int,
    sample_sizes,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    """Return the mean squared error of Monte Carlo marginals for several sample sizes.

    For each size ``N`` an independent :func:`monte_carlo_marginals` run is compared with
    :func:`marginals`; the error is averaged over the ``n * k_max`` entries. Each estimate is
    a binomial proportion, so whatever the correlation between entries the expected error is
    ``mean(p * (1 - p)) / N``: it falls as ``N ** -1``.

    Parameters
    ----------
    alpha, beta : float
        IBP parameters, > 0.
    n, k_max : int
        Shape of the table, each >= 1.
    sample_sizes : sequence of int
        Numbers of simulated buffets, each >= 1.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    mse : numpy.ndarray
        One mean squared error per sample size.
    variance : float
        ``mean(p * (1 - p))`` over the table, so that ``variance / N`` is the expected error.

    Examples
    --------
    >>> mse, variance = monte_carlo_mse(2.0, 1.0, 10, 15, [200, 2000], np.random.default_rng(1))
    >>> mse.shape, bool(mse[1] < mse[0])
    ((2,), True)
    """
    sizes = sample_sizes  # a list of ints, by its constraint
    # Refuse up front, naming this function's arguments, rather than after the exact table
    # and some of the runs (whose own refusal would name n_samples, not an argument here).
    _check_table(n, k_max)
    _check_work("monte_carlo_mse", sum(_mc_work(n, k_max, size) for size in sizes),
                ("n", "k_max", "sample_sizes"))
    exact = marginals(alpha, beta, n, k_max)
    mse = np.array([
        np.mean((monte_carlo_marginals(alpha, beta, n, k_max, size, rng) - exact) ** 2)
        for size in sizes
    ])
    return mse, float(np.mean(exact * (1 - exact)))
