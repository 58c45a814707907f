"""Samplers that keep the feature images: uncollapsed Gibbs with births by Metropolis-Hastings.

Every other sampler of the book integrates the feature images ``A`` out, which only the
linear-Gaussian model allows. A sampler that keeps ``A`` in its state works for any
likelihood; this module builds one for the linear-Gaussian model, where its answer can still
be checked against the collapsed enumeration (:mod:`ibp_lab.inference.exact`), and the pieces the
other uncollapsed samplers share (:mod:`ibp_lab.inference.slice_sampler`, :mod:`ibp_lab.inference.noisy_or`).

One sweep of :func:`uncollapsed_sweep` is a Markov kernel on ``(Z, A)`` that leaves
``p(Z, A | X)`` invariant, in three steps (Meeds, Ghahramani, Neal & Roweis 2007; Gorur,
Jakel & Rasmussen 2006):

1. **Shared features** (compiled): each ``z_nk`` of a feature that another row owns is drawn
   from its conditional given everything else, ``A`` included. With ``m`` the other owners
   and ``e_z = x_n - z_n A`` the residual of row ``n`` when ``z_nk = z``::

       log-odds(z_nk = 1) = log m - log(N - 1 - m + beta)
                            + (||e_0||^2 - ||e_1||^2) / (2 sigma_x^2)

   ``O(D)`` per entry: only row ``n`` sees ``z_nk`` once ``A`` is given.
2. **Births and deaths**: row ``n``'s singletons (the features only it owns) are replaced, as
   one block, by a proposal drawn from their conditional prior: ``k' ~ Poisson(alpha beta /
   (beta + N - 1))`` new features with images ``Normal(0, sigma_a^2)``. Prior and proposal
   cancel, so the Metropolis-Hastings acceptance is the likelihood ratio of row ``n``::

       min(1, exp((||e_old||^2 - ||e_new||^2) / (2 sigma_x^2)))

   With ``births="data"`` step 2 is instead the birth-death move of chapter 9's exercise
   ``ex-nc-data-births`` (:func:`_gaussian_data_births_kernel`): one new feature with its
   image drawn from its exact conditional given the row's residual, or the death of one of
   the row's ``k`` singletons, each proposed with probability 1/2. The image's proposal
   density enters the ratio and cancels against the prior and likelihood of the image,
   leaving ``r = lambda / (k + 1) * N(e; 0, (sigma_x^2 + sigma_a^2) I) / N(e; 0, sigma_x^2 I)``
   for a birth, ``e`` the row's residual (see :func:`data_birth_log_ratio`).
3. **Images**: ``A`` from its exact conditional given ``Z``
   (:func:`ibp_lab.models.linear_gaussian.sample_features`).

Because step 3 draws ``A`` afresh from a law that depends on ``Z`` alone, the chain on ``Z``
is Markov by itself; the tests compare its class frequencies with the enumeration.

:func:`run_uncollapsed` runs a chain and returns an :class:`UncollapsedResult`, whose
``trace`` holds the same label-free quantities as :func:`ibp_lab.inference.chains.run_chain`'s (``k_plus``,
``log_likelihood`` with ``A`` integrated out, ``log_joint``), so the samplers' effective
samples per CPU second compare directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import xarray as xr
from numba import njit

from ibp_lab import _kernel
from ibp_lab._checks import (HYPERPARAMETERS, Count, DataMatrix, Generator, Joint, check_count,
                             check_data_matrix, validated)
from ibp_lab._hyper import (Hyperparameters, check_feature_matrix, check_hyperparameters, harmonic,
                            new_dish_rate)
from ibp_lab._threads import single_blas_thread
from ibp_lab.inference._trace import Recorder

__all__ = ["UncollapsedResult", "uncollapsed_sweep", "run_uncollapsed"]

#: Most sweeps one call runs.
MAX_SWEEPS = 10**7
#: Largest magnitude of a feature image passed in (its square, summed, stays finite).
MAX_IMAGE = 1e100
#: The birth rules of step 2: from the conditional prior, or from the image's conditional.
BIRTH_RULES = ("prior", "data")


@njit(cache=True, inline="always")
def likelihood_log_odds(resid, n, A, k, z, two_sx2):
    """``log p(x_n | z_nk = 1, A) - log p(x_n | z_nk = 0, A)`` for the linear-Gaussian model.

    ``resid[n] = x_n - z_n A`` with the current ``z = z_nk``; the residual without
    feature ``k`` is ``e_0 = resid[n] + z a_k`` and ``||e_0||^2 - ||e_1||^2 = 2 e_0 . a_k -
    ||a_k||^2``: ``O(D)``.
    """
    dot = 0.0
    norm = 0.0
    for d in range(A.shape[1]):
        a = A[k, d]
        dot += resid[n, d] * a
        norm += a * a
    if z:
        dot += norm
    return (2.0 * dot - norm) / two_sx2


@njit(cache=True, inline="always")
def draw_entry(Z, m, resid, A, n, k, log_odds, rng):
    """Set ``z_nk`` to 1 with probability ``sigmoid(log_odds)``; keep ``m`` and ``resid`` right."""
    new = 1 if rng.random() * (1.0 + math.exp(-log_odds)) < 1.0 else 0
    if new != Z[n, k]:
        sign = 1.0 if new else -1.0
        for d in range(A.shape[1]):
            resid[n, d] -= sign * A[k, d]
        m[k] += new - Z[n, k]
        Z[n, k] = new


@njit(cache=True)
def flip_shared_features(Z, A, resid, m, log_odds_prior, two_sx2, rng):
    """Step 1 over all rows, features in column order: one uniform per entry updated."""
    N, K = Z.shape
    for n in range(N):
        for k in range(K):
            others = m[k] - Z[n, k]
            if others == 0:
                continue  # a singleton of row n: step 2's business
            gain = likelihood_log_odds(resid, n, A, k, Z[n, k], two_sx2)
            draw_entry(Z, m, resid, A, n, k, log_odds_prior[others] + gain, rng)


def births_and_deaths(Z, A, rate: float, draw_images: Callable, log_ratio: Callable,
                      commit: Callable, rng):
    """Step 2 for every row in turn, for any likelihood: returns ``(Z, A, n_accepted)``.

    Row ``n``'s singletons are proposed away and ``Poisson(rate)`` new features proposed
    in their place, with images ``draw_images(k, rng)`` (a ``(k, D)`` draw from their
    prior); ``change`` is the new images' sum minus the old singletons' sum, all that the
    row's likelihood sees. ``log_ratio(n, change)`` is ``log p(x_n | new) - log p(x_n |
    old)``, the whole Metropolis-Hastings log ratio (prior and proposal cancel); on
    acceptance ``commit(n, change)`` updates the caller's per-row state (residuals,
    counts). Rows' proposals are independent (a row's singletons are its own), so the
    rows are visited in order and the new columns appended once at the end. ``n_accepted``
    counts the accepted proposals that changed the row's singletons.

    The linear-Gaussian sampler runs a compiled copy of this loop,
    :func:`_gaussian_births_kernel`, which makes the same draws in the same order.
    """
    m = Z.sum(axis=0)
    keep = np.ones(Z.shape[1], bool)
    born_rows, born_images, accepted = [], [], 0
    for n in range(Z.shape[0]):
        own = np.flatnonzero((Z[n] == 1) & (m == 1))
        n_new = rng.poisson(rate)
        images = draw_images(n_new, rng)
        change = images.sum(axis=0) - A[own].sum(axis=0)
        log_r = log_ratio(n, change)
        if log_r >= 0 or rng.random() < math.exp(log_r):
            accepted += bool(own.size or n_new)  # a proposal that changes nothing is no news
            keep[own] = False
            commit(n, change)
            born_rows.extend([n] * n_new)
            born_images.append(images)
    images = np.vstack(born_images) if born_images else np.zeros((0, A.shape[1]), A.dtype)
    return (*_apply_births(Z, A, keep, np.array(born_rows, np.int64), images), accepted)


def _apply_births(Z, A, keep, born_rows, born_images):
    """``(Z, A)`` without the columns that ``keep`` marks False, and with one new column
    per entry of ``born_rows``, owned by that row alone, its image the matching row of
    ``born_images``."""
    Z, A = Z[:, keep], A[keep]
    if born_rows.size:
        born = np.zeros((Z.shape[0], born_rows.size), np.int8)
        born[born_rows, np.arange(born_rows.size)] = 1
        Z = np.hstack([Z, born])
        A = np.vstack([A, born_images]).astype(A.dtype)
    return Z, A


def _gaussian_births(Z, A, resid, sigma_x, sigma_a, rate, rng):
    """Step 2 for the linear-Gaussian model through the generic loop, the row's residual
    carrying its likelihood: the reference that :func:`_gaussian_births_kernel` is tested
    against, draw for draw."""
    def log_ratio(n, change):
        old = resid[n]
        new = old - change
        return (old @ old - new @ new) / (2.0 * sigma_x**2)

    def commit(n, change):
        resid[n] -= change

    return births_and_deaths(Z, A, rate, lambda k, g: g.normal(0.0, sigma_a, size=(k, A.shape[1])),
                             log_ratio, commit, rng)


@njit(cache=True)
def _gaussian_births_kernel(Z, A, resid, rate, sigma_a, two_sx2, rng):
    """Step 2 for the linear-Gaussian model, compiled (about 70% of a sweep's time in
    Python): :func:`_gaussian_births` with the same draws in the same order. Per row: the
    Poisson count, its images entry by entry in row-major order, then a uniform unless the
    log ratio is >= 0. ``resid`` is updated in place; returns ``(keep, born_rows,
    born_images, n_accepted)`` for :func:`_apply_births`."""
    N, K = Z.shape
    D = A.shape[1]
    m = np.zeros(K, np.int64)  # owners before the step: a row's births never change another's
    for n in range(N):
        for k in range(K):
            m[k] += Z[n, k]
    keep = np.ones(K, np.bool_)
    born_rows = np.empty(8, np.int64)
    born_images = np.empty((8, D))
    n_born, accepted = 0, 0
    change, own_sum = np.empty(D), np.empty(D)
    for n in range(N):
        n_new = rng.poisson(rate)
        if n_born + n_new > born_rows.size:  # grow the buffers, at least doubling
            size = max(2 * born_rows.size, n_born + n_new)
            grown_rows = np.empty(size, np.int64)
            grown_rows[:n_born] = born_rows[:n_born]
            grown_images = np.empty((size, D))
            grown_images[:n_born] = born_images[:n_born]
            born_rows, born_images = grown_rows, grown_images
        change[:] = 0.0
        for j in range(n_new):  # the proposed images, written past n_born until accepted
            for d in range(D):
                image = rng.normal(0.0, sigma_a)
                born_images[n_born + j, d] = image
                change[d] += image
        n_own = 0
        own_sum[:] = 0.0  # summed apart, then subtracted: the reference's rounding
        for k in range(K):
            if Z[n, k] == 1 and m[k] == 1:
                n_own += 1
                for d in range(D):
                    own_sum[d] += A[k, d]
        for d in range(D):
            change[d] -= own_sum[d]
        old_sq, new_sq = 0.0, 0.0
        for d in range(D):
            old_sq += resid[n, d] * resid[n, d]
            new_resid = resid[n, d] - change[d]
            new_sq += new_resid * new_resid
        log_r = (old_sq - new_sq) / two_sx2
        if log_r >= 0 or rng.random() < math.exp(log_r):
            if n_own or n_new:  # a proposal that changes nothing is no news
                accepted += 1
            for k in range(K):
                if Z[n, k] == 1 and m[k] == 1:
                    keep[k] = False
            for d in range(D):
                resid[n, d] -= change[d]
            born_rows[n_born:n_born + n_new] = n
            n_born += n_new
    return keep, born_rows[:n_born], born_images[:n_born], accepted


@njit(cache=True)
def data_birth_log_ratio(resid_sq, n_singletons, log_rate, sigma_x, sigma_a, D):
    """Log Metropolis-Hastings ratio of the data-driven birth of one feature.

    The row has ``n_singletons = k`` singletons and residual ``e`` with ``resid_sq =
    ||e||^2``; the new image ``a'`` is proposed from its exact conditional
    ``q(a') = N(a'; c e, tau^2 I)``, ``c = sigma_a^2 / (sigma_a^2 + sigma_x^2)``,
    ``tau^2 = sigma_a^2 sigma_x^2 / (sigma_a^2 + sigma_x^2)``; the reverse death picks
    ``a'`` among the ``k + 1`` singletons; births and deaths are proposed with probability
    1/2 each. Against the measure ``sum_k (1/k!) da_1 ... da_k`` on finite sets of
    images, the conditional prior of the row's singletons has density
    ``prop. to lambda^k prod_j N(a_j; 0, sigma_a^2 I)``, so::

        r = N(e - a'; 0, sx2 I) lambda N(a'; 0, sa2 I) / (N(e; 0, sx2 I) q(a') (k + 1))

    and, since ``q(a') = N(e - a'; 0, sx2 I) N(a'; 0, sa2 I) / N(e; 0, (sx2 + sa2) I)``
    (Bayes' rule), everything that depends on ``a'`` cancels::

        log r = log lambda - log(k + 1) + (D / 2) log(sx2 / (sx2 + sa2))
                + ||e||^2 (1 / sx2 - 1 / (sx2 + sa2)) / 2

    The ratio of the death of a singleton with image ``a_j`` is ``-log r`` evaluated at
    ``k - 1`` singletons and the residual without it, ``e + a_j``.

    Examples
    --------
    >>> round(data_birth_log_ratio(2.0, 0, math.log(0.5), 1.0, 1.0, 2), 4)
    -0.8863
    """
    sx2, sa2 = sigma_x * sigma_x, sigma_a * sigma_a
    return (log_rate - math.log(n_singletons + 1.0) + 0.5 * D * math.log(sx2 / (sx2 + sa2))
            + 0.5 * resid_sq * (1.0 / sx2 - 1.0 / (sx2 + sa2)))


@njit(cache=True)
def _gaussian_data_births_kernel(Z, A, resid, rate, sigma_x, sigma_a, rng):
    """Step 2 with data-driven births (``births="data"``), compiled: per row, one uniform
    chooses a birth (< 1/2) or a death; a birth is accepted or not by
    :func:`data_birth_log_ratio` (a uniform unless its log is >= 0) and, if accepted, its
    image is drawn from ``N(c e, tau^2 I)`` entry by entry; a death picks one singleton by
    a uniform and is accepted by the reverse ratio; a death with no singleton is rejected.
    The ratio does not depend on the image, so it is drawn only when the birth is
    accepted. ``resid`` is updated in place; returns ``(keep, born_rows, born_images,
    n_accepted)`` for :func:`_apply_births`, at most one birth per row."""
    N, K = Z.shape
    D = A.shape[1]
    m = np.zeros(K, np.int64)  # owners before the step: a row's move never changes another's
    for n in range(N):
        for k in range(K):
            m[k] += Z[n, k]
    sx2, sa2 = sigma_x * sigma_x, sigma_a * sigma_a
    shrink = sa2 / (sa2 + sx2)
    tau = math.sqrt(sa2 * sx2 / (sa2 + sx2))
    log_rate = np.log(rate)  # -inf at rate 0: births never accepted, deaths always
    keep = np.ones(K, np.bool_)
    born_rows = np.empty(N, np.int64)
    born_images = np.empty((N, D))
    own = np.empty(K, np.int64)
    n_born, accepted = 0, 0
    for n in range(N):
        n_own = 0
        for k in range(K):
            if Z[n, k] == 1 and m[k] == 1:
                own[n_own] = k
                n_own += 1
        if rng.random() < 0.5:  # a birth
            resid_sq = 0.0
            for d in range(D):
                resid_sq += resid[n, d] * resid[n, d]
            log_r = data_birth_log_ratio(resid_sq, n_own, log_rate, sigma_x, sigma_a, D)
            if log_r >= 0 or rng.random() < math.exp(log_r):
                for d in range(D):
                    image = rng.normal(shrink * resid[n, d], tau)
                    born_images[n_born, d] = image
                    resid[n, d] -= image
                born_rows[n_born] = n
                n_born += 1
                accepted += 1
        elif n_own:  # a death: the reverse of a birth from the row without singleton j
            j = own[min(int(rng.random() * n_own), n_own - 1)]
            resid_sq = 0.0
            for d in range(D):
                without = resid[n, d] + A[j, d]
                resid_sq += without * without
            log_r = -data_birth_log_ratio(resid_sq, n_own - 1, log_rate, sigma_x, sigma_a, D)
            if log_r >= 0 or rng.random() < math.exp(log_r):
                keep[j] = False
                for d in range(D):
                    resid[n, d] += A[j, d]
                accepted += 1
    return keep, born_rows[:n_born], born_images[:n_born], accepted


def _sweep(X, Z, A, hyper, rng, births="prior"):
    """One sweep without checks: ``(Z, A, births_accepted)``."""

    N = X.shape[0]
    Z = np.ascontiguousarray(Z, np.int8)
    resid = X - Z @ A
    m = Z.sum(axis=0).astype(np.int64)
    table = _kernel.prior_log_odds_table(N, hyper.beta)
    two_sx2 = 2.0 * hyper.sigma_x**2
    flip_shared_features(Z, A, resid, m, table, two_sx2, rng)
    rate = new_dish_rate(hyper.alpha, hyper.beta, N - 1)
    if births == "data":
        keep, born_rows, born_images, accepted = _gaussian_data_births_kernel(
            Z, A, resid, rate, hyper.sigma_x, hyper.sigma_a, rng)
    else:
        keep, born_rows, born_images, accepted = _gaussian_births_kernel(
            Z, A, resid, rate, hyper.sigma_a, two_sx2, rng)
    Z, A = _apply_births(Z, A, keep, born_rows, born_images)
    Z = Z[:, Z.any(axis=0)]
    return Z, _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng), accepted


def check_births(births):
    """The ``births`` argument, checked: one of :data:`BIRTH_RULES`."""
    if not isinstance(births, str) or births not in BIRTH_RULES:
        raise ValueError(f"births must be one of {', '.join(map(repr, BIRTH_RULES))}, "
                         f"got {births!r}")
    return births


def check_state(X: np.ndarray, Z, A) -> tuple[np.ndarray, np.ndarray]:
    """``Z`` and ``A`` of the one-sweep functions, checked against the (checked) ``X``: the
    images of ``Z``'s all-zero columns dropped with them."""
    Z_checked = check_feature_matrix("Z", Z, n_rows=X.shape[0])
    owned = np.asarray(Z, float).any(axis=0)  # Z passed its door: a binary (N, K) matrix
    A = check_data_matrix("A", A, min_rows=0)
    if A.shape != (owned.size, X.shape[1]):
        raise ValueError(f"A must have shape (K, D) = {(owned.size, X.shape[1])} for this Z "
                         f"and X, got {A.shape}")
    if A.size and np.abs(A).max() > MAX_IMAGE:  # squared norms must stay finite
        raise ValueError(f"A's entries must be at most {MAX_IMAGE:g} in magnitude, got "
                         f"{np.abs(A).max():g}")
    return Z_checked, np.ascontiguousarray(A[owned], float)


#: ``births=`` of the doors that take it: one of :data:`BIRTH_RULES`.
BIRTHS = Joint(check_births, "births", sets="births")
#: The door of the one-sweep functions (the linear-Gaussian model's), in its order.
STATE_CONSTRAINTS = dict(
    X=DataMatrix(),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    state=Joint(check_state, "X", "Z", "A", sets=("Z", "A")),
    rng=Generator(),
)


@single_blas_thread
@validated(births=BIRTHS, **STATE_CONSTRAINTS)
def uncollapsed_sweep(X, Z, A, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                      sigma_a: float, beta: float = 1.0,
                      births: str = "prior") -> tuple[np.ndarray, np.ndarray]:
    """One uncollapsed sweep: shared entries by Gibbs, births by Metropolis-Hastings, then ``A``.

    See the module docstring for the three steps and their targets.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    Z : array_like
        ``(N, K)`` binary feature matrix (all-zero columns are dropped with their images).
    A : array_like
        ``(K, D)`` feature images of ``Z``'s columns, all of them (before dropping).
    rng : numpy.random.Generator
    alpha, sigma_x, sigma_a, beta : float
        The model's hyperparameters (as :func:`ibp_lab.inference.gibbs.gibbs_sweep`).
    births : {"prior", "data"}, optional
        Step 2's proposals: ``"prior"`` (default) replaces the row's singletons by a
        draw from their conditional prior, accepted by the likelihood ratio; ``"data"``
        proposes one birth, its image from its exact conditional given the row's residual,
        or one death, and accepts by :func:`data_birth_log_ratio`, in which the image's
        proposal density cancels its prior and likelihood.

    Returns
    -------
    Z : numpy.ndarray
        ``(N, K')`` ``int8``, no empty columns; kept features first, born ones after.
    A : numpy.ndarray
        ``(K', D)`` a fresh draw from ``p(A | X, Z)``.

    Examples
    --------
    >>> X = [[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]]
    >>> Z, A = uncollapsed_sweep(X, np.ones((3, 1)), [[0.5, 0.5]], np.random.default_rng(1),
    ...                          alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    >>> Z.shape[0], A.shape == (Z.shape[1], 2)
    (3, True)
    """
    Z, A, _ = _sweep(X, Z, A, Hyperparameters(alpha, sigma_x, sigma_a, beta), rng, births)
    return Z, A


@dataclass
class UncollapsedResult:
    """What :func:`run_uncollapsed` and :func:`ibp_lab.inference.slice_sampler.run_slice` return.

    Attributes
    ----------
    trace : xarray.Dataset
        One entry per sweep along ``draw`` (warm-up included): ``k_plus``,
        ``log_likelihood`` (``log p(X | Z)``, ``A`` integrated out, so comparable with
        :func:`ibp_lab.inference.chains.run_chain`'s) and ``log_joint`` (plus ``log P([Z])``);
        ``attrs`` record ``burn``, ``thin``, ``sampler`` and the hyperparameters.
    samples : list of numpy.ndarray
        The kept ``Z`` (draws ``>= burn``, every ``thin``-th).
    sample_draws : numpy.ndarray
        The ``draw`` of each kept sample.
    Z, A : numpy.ndarray
        The final state, to continue the chain.
    sample_stats : xarray.Dataset
        Per draw: ``seconds`` (CPU time from the start, :func:`time.process_time`) and the
        sampler's own count (``births_accepted``: rows whose Metropolis-Hastings proposal
        changed their singletons and was accepted; ``features_instantiated``: the unowned
        sticks above the slice).
    """

    trace: xr.Dataset
    samples: list
    sample_draws: np.ndarray
    Z: np.ndarray
    A: np.ndarray
    sample_stats: xr.Dataset


def check_start(X: np.ndarray, Z0) -> np.ndarray:
    """A runner's ``Z0``, checked against the (checked) ``X``; default one feature owned by
    every row."""
    if Z0 is None:
        return np.ones((X.shape[0], 1), np.int8)
    return check_feature_matrix("Z0", Z0, n_rows=X.shape[0])


def check_burn(burn, n_sweeps: int) -> int:
    """A runner's ``burn``: at most ``n_sweeps`` (all of them warm-up)."""
    return check_count("burn", burn, maximum=n_sweeps)


#: The shared door of the uncollapsed runners, in its order (``X``, ``n_sweeps``, the
#: hyperparameters, ``Z0``, ``burn``, ``thin``, ``rng``).
RUN_CONSTRAINTS = dict(
    X=DataMatrix(),
    n_sweeps=Count(minimum=1, maximum=MAX_SWEEPS),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    Z0=Joint(check_start, "X", "Z0", sets="Z0"),
    burn=Joint(check_burn, "burn", "n_sweeps", sets="burn"),
    thin=Count(minimum=1, maximum=MAX_SWEEPS),
    rng=Generator(),
)


@validated(**RUN_CONSTRAINTS)
def check_run(X, n_sweeps, rng, alpha, sigma_x, sigma_a, beta, Z0, burn, thin):
    """The shared door of the uncollapsed runners (:data:`RUN_CONSTRAINTS`) as a function:
    checked ``X, n_sweeps, rng, hyper, Z0, burn, thin``."""
    return X, n_sweeps, rng, Hyperparameters(alpha, sigma_x, sigma_a, beta), Z0, burn, thin


def _gaussian_start_and_measure(X, hyper):
    """The linear-Gaussian runner's hooks: ``A`` drawn given ``Z0``, and the trace's
    ``(log p(X | Z), log p(X | Z) + log P([Z]))`` with ``A`` integrated out.

    The class prior is the kernel's compiled one (:func:`ibp_lab._kernel.class_log_prior`),
    its constants computed once per run: :func:`ibp_lab.models.prior.log_prior` groups
    equal columns with ``np.unique``, about 60% of a sweep's time on the digits. The two
    agree to about 1e-14 relative, not bit for bit (their sums run in another order); the
    chain's draws do not depend on the trace.
    """
    sum_sq = float(np.sum(X * X))
    log_alpha_beta, prior_rate = _kernel.class_prior_constants(
        X.shape[0], hyper.alpha, hyper.beta, harmonic_sum=harmonic(X.shape[0], hyper.beta))

    def start(Z, rng):
        return _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng)

    def measure(Z, A):
        ztz, ztx = _kernel.sufficient_stats(X, Z)
        log_lik = _kernel.checked_loglik_from_stats(ztz, ztx, sum_sq, *X.shape, hyper.sigma_x,
                                                    hyper.sigma_a)
        log_class = _kernel.class_log_prior(np.ascontiguousarray(Z, np.int8), log_alpha_beta,
                                            prior_rate, hyper.beta)
        return log_lik, log_lik + log_class
    return start, measure


def run_kernel(sweep: Callable, X, n_sweeps: int, rng, hyper, Z0, burn: int, thin: int,
               stat_name: str, sampler: str, hooks=None, extra: tuple = ()) -> UncollapsedResult:
    """Run ``sweep(X, Z, A, hyper, rng) -> (Z, A, count)`` from ``Z0`` and record the
    label-free trace. Arguments already checked (:func:`check_run`).

    ``hooks = (start, measure)``: ``start(Z0, rng)`` gives the first images and
    ``measure(Z, A)`` the trace's ``(log_likelihood, log_joint)``, followed by the values
    of the variables named in ``extra`` (traced after ``log_joint``, ``float64``); the
    default is the linear-Gaussian model's (:func:`_gaussian_start_and_measure`).
    """
    start_images, measure = hooks or _gaussian_start_and_measure(X, hyper)
    names = ("log_likelihood", "log_joint", *extra)
    record = Recorder(n_sweeps, {"k_plus": np.int64, **dict.fromkeys(names, np.float64)},
                      {stat_name: np.int64}, burn=burn, thin=thin)
    Z = Z0
    A = start_images(Z, rng)
    for t in range(n_sweeps):
        Z, A, count = sweep(X, Z, A, hyper, rng)
        # CPU seconds since the start, the trace's bookkeeping of earlier sweeps included
        # (as in chains.run_chain, so that the samplers' times compare)
        record.clock(t)
        record.draw(t, Z, k_plus=Z.shape[1], **dict(zip(names, measure(Z, A))),
                    **{stat_name: count})
    trace, stats = record.datasets(dict(burn=burn, thin=thin, sampler=sampler, **asdict(hyper)))
    return UncollapsedResult(trace, record.samples, record.kept_draws(), Z, A, stats)


@single_blas_thread
@validated(births=BIRTHS, **RUN_CONSTRAINTS)
def run_uncollapsed(X, n_sweeps: int, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                    sigma_a: float, beta: float = 1.0, Z0=None, burn: int = 0,
                    thin: int = 1, births: str = "prior") -> UncollapsedResult:
    """Run the uncollapsed sampler with Metropolis-Hastings births for ``n_sweeps`` sweeps.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_sweeps : int
        Sweeps of :func:`uncollapsed_sweep`, >= 1.
    rng : numpy.random.Generator
    alpha, sigma_x, sigma_a, beta : float
        Fixed hyperparameters.
    Z0 : array_like, optional
        Starting ``Z`` (default one feature owned by every row); ``A`` starts from its
        conditional given ``Z0``.
    burn, thin : int, optional
        Warm-up sweeps not kept in ``samples`` (the trace keeps them) and the thinning.
    births : {"prior", "data"}, optional
        The births' proposals (:func:`uncollapsed_sweep`): ``"prior"`` (default) replaces the row's singletons by a
        draw from their conditional prior, accepted by the likelihood ratio; ``"data"``
        proposes one birth, its image from its exact conditional given the row's residual,
        or one death, and accepts by :func:`data_birth_log_ratio`, in which the image's
        proposal density cancels its prior and likelihood.

    Returns
    -------
    UncollapsedResult
        ``sample_stats["births_accepted"]`` counts the rows whose proposal changed their
        singletons and was accepted.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 3))
    >>> run = run_uncollapsed(X, 20, np.random.default_rng(1), alpha=1.0, sigma_x=1.0,
    ...                       sigma_a=1.0, burn=10)
    >>> run.trace.sizes["draw"], len(run.samples)
    (20, 10)
    """
    hyper = Hyperparameters(alpha, sigma_x, sigma_a, beta)
    if births == "prior":
        return run_kernel(_sweep, X, n_sweeps, rng, hyper, Z0, burn, thin, "births_accepted",
                          "uncollapsed Gibbs + Metropolis-Hastings births")

    def data_sweep(*state):
        return _sweep(*state, "data")
    return run_kernel(data_sweep, X, n_sweeps, rng, hyper, Z0, burn, thin, "births_accepted",
                      "uncollapsed Gibbs + Metropolis-Hastings births from the data")
