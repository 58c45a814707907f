"""Collapsed Gibbs sampling for the linear-Gaussian IBP model.

The feature images ``A`` are integrated out (:mod:`ibp_lab.models.linear_gaussian`),
so the sampler only moves the binary matrix ``Z``. The chain runner with
hyperparameter updates (``run_chain``, ``run_chains``, ``ChainResult``) is
:mod:`ibp_lab.inference.chains`; the old names still resolve from here.

Public functions:

- :func:`gibbs_sweep` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0,
  inverse_temperature=1.0) -> Z``: one sweep over the rows, compiled; returns a new
  ``int8`` matrix without empty columns. With ``inverse_temperature = b < 1`` it
  targets the tempered posterior ``p(X | Z)^b P([Z])`` (:mod:`ibp_lab.inference.tempering`).
- :func:`gibbs_sweep_numpy` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0) -> Z``:
  the same sweep written plainly in NumPy, for reading; the same chain from the
  same seed, about a hundred times slower.
- :func:`k_plus_trace` ``(X, n_sweeps, rng, *, alpha, sigma_x, sigma_a, beta=1.0,
  Z0=None, scan_order="random", return_types=False, inverse_temperature=1.0)``:
  many sweeps at fixed
  hyperparameters entirely in compiled code, recording only ``K+`` (and, for
  ``N <= 6`` rows, the class of every state): what a comparison with
  :mod:`ibp_lab.inference.exact` needs.

The sweep as a composition of the kernel's steps
------------------------------------------------
The algebra lives in :mod:`ibp_lab._kernel`, shared with the split-merge moves
and the held-out scorer; a sweep is :func:`ibp_lab._kernel.refresh` (``M^-1``,
the posterior mean ``Abar`` and the counts from scratch, so rounding cannot
accumulate from sweep to sweep) followed, for each row ``i``, by
:func:`ibp_lab._kernel.update_row`::

    row_out                 take row i out of M^-1 and Abar
    shuffle                 the shared features in a fresh random order
    flip_shared             one Gibbs update per shared feature
        flip_changes, flip_log_odds, prior_log_odds, accept_flip
    sample_new_dishes       the number of singletons, exact law (new_dish_rate)
    resize_columns          keep, drop or append row i's singletons
        n_kept_singletons, drop_singletons, append_singletons
    row_in                  put row i back

What each step computes
-----------------------
Rows are visited in order ``0, ..., N-1``. For row ``i``, with the other rows
given (Griffiths & Ghahramani 2011; two-parameter prior of Ghahramani,
Griffiths & Sollich 2007):

1. Take row ``i`` out: a Sherman-Morrison downdate of ``M^-1``
   (``M = Z^T Z + (sigma_x / sigma_a)^2 I``) and of the posterior mean of the
   features, done on the shared features only, the row's singletons being set
   to their exact values (this avoids dividing by a number of order
   ``(sigma_x / sigma_a)^2``; see :func:`ibp_lab._kernel.row_out`). Given the
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
invariant.

Implementation: the steps are compiled with numba (``cache=True``: the first call
in a fresh environment compiles for 15-25 seconds, later processes load the
compiled code from numba's cache in well under a second) and the small ones are
inlined into ``update_row``. About 0.5 ms per sweep on the book's 300 digits with
16 features (``benchmarks/gibbs.py``: the compiled sweep; a call of
:func:`gibbs_sweep` adds its doors' checks); about 2.5 microseconds on three rows. ``M^-1`` is recomputed from
scratch for a single row whenever removing it leaves nearly dependent columns.
Limits that keep the sweep accurate and bounded: ``sigma_x / sigma_a >=
MIN_NOISE_RATIO``, a prior expected number of features ``alpha * H_N <=
MAX_EXPECTED_FEATURES`` and at most ``MAX_FEATURES`` features at any time;
beyond them a ``ValueError`` says which. The tests check both sweeps against
exact enumeration (``tests/exactness.py``) and against each other.

The chain runner with hyperparameter updates is :mod:`ibp_lab.inference.chains`.
"""

from __future__ import annotations

import math

import numpy as np

from ibp_lab import _kernel
from ibp_lab._checks import MAX_SWEEPS  # noqa: F401  (gibbs.MAX_SWEEPS, as before)
from ibp_lab._checks import (HYPERPARAMETERS, Checked, DataMatrix, Flag, Generator,
                             InverseTemperature, Joint, OneOf, Optional, Rows, Sweeps, validated)
from ibp_lab._hyper import check_discount, check_feature_matrix, check_hyperparameters
from ibp_lab.inference._moves import Move

__all__ = ["gibbs_sweep", "gibbs_sweep_numpy", "k_plus_trace", "GibbsSweep"]

# Largest number of rows for which k_plus_trace can record the class of each state.
_MAX_ROWS_FOR_TYPES = 6
#: Most entries of the per-sweep class record of :func:`k_plus_trace` (4 bytes each).
_MAX_TYPE_ENTRIES = 10**8


# --------------------------------------------------------------------------------------
# the compiled sweep: a loop over rows of the kernel's update_row
# --------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------
# the same sweep, written for reading
# --------------------------------------------------------------------------------------


def _sweep_numpy(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0,
                 random_scan=True):
    """:func:`gibbs_sweep_numpy` without argument checks (or fixed scan).

    Chapter 5 shows this source: keep its lines within 75 characters.
    """
    X = np.asarray(X, float)
    Z = np.asarray(Z, np.int8)
    Z = Z[:, Z.any(axis=0)].copy()
    N, D = X.shape
    sx2, sa2 = sigma_x**2, sigma_a**2
    rate = _kernel.new_dish_rate.py_func(alpha, beta, N - 1.0)
    for i in range(N):
        # 1. Row i out: the features' posterior given the other rows, mean
        #    Abar and covariance sx2 P (recomputed from scratch here; the
        #    compiled kernel downdates instead).
        Z_others = np.delete(Z, i, axis=0).astype(float)
        m = Z_others.sum(axis=0)
        ridge = (sx2 / sa2) * np.eye(Z.shape[1])
        P = np.linalg.inv(Z_others.T @ Z_others + ridge)
        Abar = P @ Z_others.T @ np.delete(X, i, axis=0)
        shared = m > 0
        # the shared part of row i; its singletons stay in meanwhile, each
        # adding sa2 to the predictive variance
        z = Z[i] * shared
        extra = sa2 * np.count_nonzero(~shared)

        def residual_and_quadratic(z):
            resid = X[i] - z @ Abar
            return resid @ resid, z @ P @ z

        # 2. Shared features in a fresh random order, one update each.
        order = np.flatnonzero(shared)
        if random_scan:
            _kernel.shuffle.py_func(order, len(order), rng)
        rr, q = residual_and_quadratic(z)
        for k in order:
            sign = 1 - 2 * z[k]  # +1 switches feature k on, -1 off
            z_flip = z.copy()
            z_flip[k] += sign
            rr_flip, q_flip = residual_and_quadratic(z_flip)
            prior = sign * _kernel.prior_log_odds.py_func(
                m[k], N - 1.0, beta)
            log_odds = _kernel.flip_log_odds.py_func(
                rr, rr_flip, q, q_flip, extra, sx2, D, prior)
            # clipped: beyond 700 exp overflows, where the probability is 0
            p_flip = 1.0 / (1.0 + math.exp(min(-log_odds, 700.0)))
            if rng.random() < p_flip:
                z, rr, q = z_flip, rr_flip, q_flip

        # 3. The number of singletons, from its exact conditional (no
        #    truncation).
        log_w = _kernel.new_dish_log_weights(
            rate, sx2 * (1.0 + q), sa2, rr, D)
        weights = np.exp(log_w - log_w.max())
        u = rng.random()
        cumulative = np.cumsum(weights)
        n_new = int(np.searchsorted(cumulative, u * weights.sum(),
                                    side="right"))
        n_new = min(n_new, len(weights) - 1)

        # 4. Columns: keep the first n_new old singletons in place, drop
        #    the others, append the missing ones (fixed scan: drop all,
        #    append n_new).
        singles = np.flatnonzero(~shared)
        n_keep = min(n_new, len(singles)) if random_scan else 0
        z[singles[:n_keep]] = 1
        keep = shared.copy()
        keep[singles[:n_keep]] = True
        new_columns = np.zeros((N, n_new - n_keep), np.int8)
        new_columns[i] = 1
        Z[i] = z
        Z = np.hstack([Z[:, keep], new_columns])
        # 5. Row i back in: nothing to do, the next row recomputes the
        #    posterior from scratch.
    return Z


# --------------------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------------------


def _types_fit(X, n_sweeps, return_types):
    """Refuse a class record :func:`k_plus_trace` cannot keep (too many rows or entries)."""
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


#: The data, the state and the four hyperparameters, checked as every sweep checks them:
#: ``Z`` has ``X``'s rows, the hyperparameters fit ``X`` (``check_hyperparameters``).
_HYPERPARAMETERS = Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS)
_DISCOUNT = Joint(check_discount, Rows("X"), "alpha", "beta", "discount", sets="discount")
_SWEEP_CONSTRAINTS = dict(X=DataMatrix(), Z=Checked(check_feature_matrix, rows_of="X"),
                          hyperparameters=_HYPERPARAMETERS, rng=Generator())


@validated(**_SWEEP_CONSTRAINTS, inverse_temperature=InverseTemperature(),
           discount=_DISCOUNT)
def gibbs_sweep(X, Z, alpha: float, sigma_x: float, sigma_a: float, rng: np.random.Generator,
                *, beta: float = 1.0, inverse_temperature: float = 1.0,
                discount: float = 0.0) -> np.ndarray:
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
    inverse_temperature : float, optional
        ``b`` in ``[0, 1]``: the sweep targets ``p(X | Z)^b P([Z])`` (the flips'
        and new dishes' likelihood terms scaled by ``b``); 1 (the default) is the
        posterior, bit-for-bit the untempered sweep, and 0 the prior.
    discount : float, optional
        ``d`` in ``[0, 1)``: the prior is the three-parameter (stable) IBP of Teh &
        Gorur (2009), whose ``K+`` grows like ``N^d``. An old dish owned by ``m``
        others has prior probability ``(m - d) / (N - 1 + beta)`` and a row's
        singletons are Poisson with the rate of the buffet's ``N``-th customer.
        0 (the default) is the two-parameter sweep, draw for draw.

    Returns
    -------
    numpy.ndarray
        ``(N, K+)`` ``int8`` with no empty columns.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, Z_true, _ = simulate(20, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                         sigma_a=1.0, d=5)
    >>> Z = gibbs_sweep(X, np.ones((20, 1)), 2.0, 0.3, 1.0, np.random.default_rng(1))
    >>> Z.dtype, Z.shape[0], bool(Z.any(axis=0).all())
    (dtype('int8'), 20, True)
    """
    Z_new, _, _ = _kernel.sweeps(X, Z, alpha, sigma_x, sigma_a, beta, 1, rng,
                          inverse_temperature=inverse_temperature, discount=discount)
    return Z_new


@validated(**_SWEEP_CONSTRAINTS)
def gibbs_sweep_numpy(X, Z, alpha: float, sigma_x: float, sigma_a: float,
                      rng: np.random.Generator, *, beta: float = 1.0) -> np.ndarray:
    """The same sweep as :func:`gibbs_sweep`, written plainly in NumPy for reading.

    For each row: the features' posterior given the other rows (from scratch),
    then the shared features in a random order (:func:`ibp_lab._kernel.shuffle`),
    each flipped with the log-odds of :func:`ibp_lab._kernel.flip_log_odds`, then
    the number of singletons from :func:`ibp_lab._kernel.new_dish_log_weights`.
    It draws the same random numbers in the same order as the compiled sweep, so
    both give the same chain from the same seed; it is about a hundred times
    slower (``O(K^3 + N K D)`` per row instead of ``O(K^2 + K D)``). Same
    arguments, checks and result as :func:`gibbs_sweep`.

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> Z_plain = gibbs_sweep_numpy(X, np.ones((3, 1)), 1.3, 0.6, 1.2, np.random.default_rng(5))
    >>> Z_fast = gibbs_sweep(X, np.ones((3, 1)), 1.3, 0.6, 1.2, np.random.default_rng(5))
    >>> bool(np.array_equal(Z_plain, Z_fast))
    True
    """
    return _sweep_numpy(X, Z, alpha, sigma_x, sigma_a, rng, beta=beta)


@validated(
    X=DataMatrix(),
    n_sweeps=Sweeps(),
    rng=Generator(),
    hyperparameters=_HYPERPARAMETERS,
    scan_order=OneOf("random", "fixed"),
    return_types=Flag(),
    inverse_temperature=InverseTemperature(),
    discount=_DISCOUNT,
    types_fit=Joint(_types_fit, "X", "n_sweeps", "return_types"),
    Z0=Optional(Checked(check_feature_matrix, rows_of="X")),
)
def k_plus_trace(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                 sigma_a: float, beta: float = 1.0, Z0=None, scan_order: str = "random",
                 return_types: bool = False, inverse_temperature: float = 1.0,
                 discount: float = 0.0):
    """Run many sweeps at fixed hyperparameters and record ``K+`` after each.

    Everything runs in compiled code (a few microseconds per sweep on three
    rows), which is what long comparisons with :func:`ibp_lab.inference.exact.k_plus_posterior`
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
        :func:`ibp_lab.inference.exact.column_types`). Only for ``N <= 6``.
    inverse_temperature : float, optional
        ``b`` in ``[0, 1]``: sweeps of the tempered posterior ``p(X | Z)^b P([Z])``
        (see :func:`gibbs_sweep`); default 1.
    discount : float, optional
        ``d`` in ``[0, 1)``: sweeps under the three-parameter IBP (see
        :func:`gibbs_sweep`); default 0.

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
    >>> from ibp_lab.inference.exact import k_plus_posterior
    >>> p_exact = k_plus_posterior(X, 1.3, 0.6, 1.2)  # 0.21 0.36 0.25 0.12 ...
    >>> freq = np.bincount(k, minlength=len(p_exact))[:len(p_exact)] / len(k)
    >>> # ESS of this trace is about 8600, so each frequency's Monte Carlo sd is at most
    >>> # 0.0054; 0.03 is more than 5 sd (in 30 seeds the largest miss was 0.0094)
    >>> bool(np.abs(freq - p_exact).max() < 0.03)
    True
    """
    if Z0 is None:
        Z0 = np.ones((X.shape[0], 1), np.int8)
    _, k_plus, types = _kernel.sweeps(X, Z0, alpha, sigma_x, sigma_a, beta, n_sweeps, rng,
                               random_scan=scan_order == "random", record_types=return_types,
                               inverse_temperature=inverse_temperature, discount=discount)
    return (k_plus, types) if return_types else k_plus


class GibbsSweep(Move):
    """One collapsed Gibbs sweep as a move of the samplers that take ``moves=``.

    ``move(X, Z, rng, hyper, inverse_temperature=1.0) -> (Z, {})``: :func:`gibbs_sweep`
    on checked arguments (the move protocol of :class:`ibp_lab.inference.chains.Move`),
    tempered below ``inverse_temperature = 1``. The default move of
    :func:`ibp_lab.inference.chains.run_chain`, :func:`ibp_lab.inference.tempering.run_tempered`
    and :func:`ibp_lab.inference.smc.run_smc`; named ``"gibbs_sweep"`` there.

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chain
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> chain = run_chain(X, 5, np.random.default_rng(0), sigma_x=0.6, sigma_a=1.2,
    ...                   moves=[GibbsSweep()])  # no hyperparameter move: all held fixed
    >>> int(chain.trace.sizes["draw"])
    5
    """

    name = "gibbs_sweep"

    def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
        alpha, sigma_x, sigma_a, beta = hyper
        Z, _, _ = _kernel.sweeps(X, Z, alpha, sigma_x, sigma_a, beta, 1, rng,
                                 inverse_temperature=inverse_temperature, discount=hyper.discount)
        return Z, {}
