"""The truncated stick-breaking IBP in PyMC, with every row's binary features summed out.

NUTS moves continuous parameters only, so the binary matrix ``Z`` cannot be one
of its variables. With the stick-breaking construction (Teh, Gorur & Ghahramani
2007) truncated at ``K`` features, each row has only ``2^K`` possible binary
vectors ("patterns") ``c``, and its ``z`` can be summed out exactly::

    v_j ~ Beta(alpha, 1),   pi_k = v_1 ... v_k,   A_kd ~ Normal(0, sigma_A^2)
    p(x_n | pi, A) = sum_c  prod_k pi_k^c_k (1 - pi_k)^(1 - c_k)  Normal(x_n | c A, sigma_X^2 I)

The features ``A`` are explicit parameters here: ``A`` can be integrated out
given ``Z`` (:mod:`ibp_lab.models.linear_gaussian`) and ``Z`` summed out given ``A``,
but not both, because ``p(X | Z)`` does not factorise over rows. After
sampling, ``Z`` is recovered draw by draw from the closed-form posterior over
each row's patterns.

- :func:`pattern_matrix`: the ``2^K x K`` table of patterns.
- :func:`build_model`: the PyMC model (``sigma_x`` fixed or free).
- :func:`initial_point_from_data`: a start with the features set to scaled
  data rows and every stick well above zero, which keeps NUTS out of the
  "every feature off" trap.
- :func:`sample_posterior`: ``pm.sample`` from that start, chains in sequence.
- :func:`row_log_likelihood`, :func:`pattern_log_posteriors`,
  :func:`pattern_posterior`: per-row quantities at given parameter values.
- :func:`recover_z`, :func:`sample_z`: ``Z`` from a posterior sample.
- :func:`numpy_logp`: the model's log density (untransformed parameters, no
  Jacobian) written independently of PyTensor, for tests.
- :func:`feature_gradient`: the push the data give each feature image.
- :func:`time_gradient`: seconds per log-density-and-gradient evaluation.

Parameter names in the model and in its traces: ``alpha``, ``v`` (the
sticks' fractions), ``sigma_A``, ``A`` (``feature x pixel``), ``sigma_X`` (a
free variable, or a constant stored in the ``constant_data`` group), and the
deterministic ``log_pi`` and ``pi``. Patterns are ordered as binary numbers
with feature 1 as the most significant bit: row 0 of :func:`pattern_matrix` is
"no feature", the last row "every feature".

PyMC is imported inside the functions that need it, so ``import ibp_lab`` and
``import ibp_lab.inference.pymc_models`` stay fast.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from collections.abc import Mapping

from ibp_lab._checks import (
    MAX_PARAMETER,
    Checked,
    DataMatrix,
    Joint,
    Positive,
    check_count,
    check_data_matrix,
    check_flag,
    check_positive,
    check_real_array,
    check_rng,
    validated,
)
from ibp_lab._threads import single_blas_thread

__all__ = [
    "MAX_FEATURES",
    "ZRecovery",
    "pattern_matrix",
    "build_model",
    "initial_point_from_data",
    "sample_posterior",
    "row_log_likelihood",
    "pattern_log_posteriors",
    "pattern_posterior",
    "recover_z",
    "sample_z",
    "numpy_logp",
    "feature_gradient",
    "time_gradient",
]

#: Largest truncation accepted: every row carries ``2^K`` patterns (4096 at 12).
MAX_FEATURES = 12

# Hyperpriors, shared by build_model and numpy_logp (the Gibbs chapters use the same).
ALPHA_SHAPE, ALPHA_RATE = 1.0, 1.0  # alpha ~ Gamma(shape, rate)
SIGMA_A_SCALE = 1.0  # sigma_A ~ HalfNormal(scale)
SIGMA_X_SCALE = 1.0  # sigma_X ~ HalfNormal(scale), when free
# Largest sum over a row of (residual / sigma_x)^2 accepted: beyond it the pattern sums
# overflow to -inf for every pattern and the posteriors become NaN.
_MAX_SCALED_SUM_SQ = 1e250
# Most draws + tune steps per chain, and most chains, that sample_posterior runs.
_MAX_STEPS_PER_CHAIN = 10**6
_MAX_CHAINS = 64
# Most timed evaluations in time_gradient.
_MAX_REPEATS = 10_000


def _check_n_features(n_features) -> int:
    n_features = check_count("n_features", n_features, minimum=1)
    if n_features > MAX_FEATURES:
        # the count of patterns is given as a float power of ten: the exact integer
        # 2**n_features has n_features bits, and for n_features = 10**12 computing it
        # for the message alone would run for hours
        digits = n_features * math.log10(2.0)
        raise ValueError(
            f"n_features must be <= {MAX_FEATURES}: every row sums over 2^n_features patterns "
            f"(about 10^{digits:.0f} for n_features = {n_features}), too many to enumerate; "
            f"got {n_features}"
        )
    return n_features


def _check_n_features_named(name: str, n_features) -> int:
    """:func:`_check_n_features` as a constraint (its messages say ``n_features``)."""
    return _check_n_features(n_features)


def _check_sigma_x_named(name: str, sigma_x) -> float | None:
    return _check_sigma_x_option(sigma_x)


def _check_reach_at_option(X: np.ndarray, sigma_x: float | None) -> None:
    # with a free sigma_X, the data must at least be resolvable at sigma_X = 1
    _check_reach(X, None, 1.0 if sigma_x is None else sigma_x)


@validated(n_features=Checked(_check_n_features_named))
def pattern_matrix(n_features: int) -> np.ndarray:
    """Every binary vector of length ``n_features``, one per row.

    Parameters
    ----------
    n_features : int
        Truncation level ``K``, 1 to :data:`MAX_FEATURES`.

    Returns
    -------
    numpy.ndarray
        ``(2^K, K)`` ``int8``; row ``r`` is ``r`` written in binary with feature
        1 as the most significant bit.

    Examples
    --------
    >>> pattern_matrix(2)
    array([[0, 0],
           [0, 1],
           [1, 0],
           [1, 1]], dtype=int8)
    """
    shifts = np.arange(n_features - 1, -1, -1)
    return ((np.arange(2**n_features)[:, None] >> shifts) & 1).astype(np.int8)


def _check_sigma_x_option(sigma_x) -> float | None:
    return None if sigma_x is None else check_positive("sigma_x", sigma_x)


def _check_reach(X: np.ndarray, A: np.ndarray | None, sigma_x: float) -> None:
    """Refuse data (and features) so large for ``sigma_x`` that every pattern's density overflows.

    Every residual ``x - c A`` is at most ``max|x| + sum_k |A_k|`` per pixel, so
    ``D (reach / sigma_x)^2`` bounds the quadratic form of any row and pattern.
    """
    with np.errstate(over="ignore"):
        reach = float(np.abs(X).max())
        if A is not None and A.size:
            reach += float(np.abs(A).sum(axis=0).max())
    if not reach / sigma_x <= np.sqrt(_MAX_SCALED_SUM_SQ / X.shape[1]):
        raise ValueError(
            f"X (or A) is too large for sigma_x = {sigma_x:g}: the squared residuals over "
            "sigma_x^2 overflow; rescale the data (for example divide X by its standard deviation)"
        )


@validated(X=DataMatrix(), n_features=Checked(_check_n_features_named),
           sigma_x=Checked(_check_sigma_x_named),
           reach=Joint(_check_reach_at_option, "X", "sigma_x"),
           alpha_shape=Positive(), alpha_rate=Positive(), sigma_a_scale=Positive(),
           sigma_x_scale=Positive())
def build_model(
    X,
    n_features: int,
    *,
    sigma_x: float | None = None,
    alpha_shape: float = ALPHA_SHAPE,
    alpha_rate: float = ALPHA_RATE,
    sigma_a_scale: float = SIGMA_A_SCALE,
    sigma_x_scale: float = SIGMA_X_SCALE,
):
    """The truncated stick-breaking IBP with linear-Gaussian rows, ``Z`` summed out.

    ::

        alpha ~ Gamma(alpha_shape, alpha_rate)
        v_j ~ Beta(alpha, 1),  log pi_k = sum_{j <= k} log v_j
        sigma_A ~ HalfNormal(sigma_a_scale),  A_kd ~ Normal(0, sigma_A^2)
        sigma_X = sigma_x, or sigma_X ~ HalfNormal(sigma_x_scale) if sigma_x is None
        log p(x_n | ...) = logsumexp_c [ log p(c | pi) + log Normal(x_n | c A, sigma_X^2 I) ]

    The likelihood enters as a ``pm.Potential`` named ``"loglik"``.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data, finite.
    n_features : int
        Truncation level ``K``, 1 to :data:`MAX_FEATURES`.
    sigma_x : float or None, optional
        Noise standard deviation, > 0; ``None`` makes it a free parameter.
    alpha_shape, alpha_rate, sigma_a_scale, sigma_x_scale : float, optional
        Hyperprior parameters, > 0.

    Returns
    -------
    pymc.Model
        With coordinates ``feature`` (1..K) and ``pixel`` (0..D-1).

    Examples
    --------
    >>> model = build_model(np.zeros((4, 3)), 2, sigma_x=0.5)
    >>> sorted(rv.name for rv in model.free_RVs)
    ['A', 'alpha', 'sigma_A', 'v']
    """

    import pymc as pm
    import pytensor.tensor as pt

    n_dims = X.shape[1]
    patterns = pattern_matrix(n_features).astype(np.float64)
    coords = {"feature": np.arange(1, n_features + 1), "pixel": np.arange(n_dims)}
    with pm.Model(coords=coords) as model:
        alpha = pm.Gamma("alpha", alpha=alpha_shape, beta=alpha_rate)
        v = pm.Beta("v", alpha=alpha, beta=1.0, dims="feature")
        log_pi = pm.Deterministic("log_pi", pt.cumsum(pt.log(v)), dims="feature")
        pm.Deterministic("pi", pt.exp(log_pi), dims="feature")
        sigma_a = pm.HalfNormal("sigma_A", sigma=sigma_a_scale)
        A = pm.Normal("A", mu=0.0, sigma=sigma_a, dims=("feature", "pixel"))
        if sigma_x is None:
            sx = pm.HalfNormal("sigma_X", sigma=sigma_x_scale)
        else:
            sx = pm.Data("sigma_X", sigma_x)
        C = pt.constant(patterns)
        # log p(c | pi) for every pattern: sum_k c_k log pi_k + (1 - c_k) log(1 - pi_k)
        log_prior_c = pt.dot(C, log_pi) + pt.dot(1.0 - C, pt.log1mexp(log_pi))
        means = pt.dot(C, A)  # (2^K, D): the image each pattern predicts
        Xc = pt.constant(X)
        sq_dist = (
            pt.constant(np.sum(X * X, axis=1))[:, None]
            - 2.0 * pt.dot(Xc, means.T)
            + pt.sum(means**2, axis=1)[None, :]
        )
        log_joint = log_prior_c[None, :] - sq_dist / (2.0 * sx**2)
        row_loglik = pt.logsumexp(log_joint, axis=1) - n_dims * pt.log(sx) \
            - 0.5 * n_dims * np.log(2.0 * np.pi)
        pm.Potential("loglik", pt.sum(row_loglik))
    return model


def initial_point_from_data(
    X,
    n_features: int,
    rng: np.random.Generator,
    *,
    sigma_x: float | None = None,
    scale: float = 0.5,
    v: float = 0.8,
    alpha: float = 2.0,
) -> dict[str, np.ndarray | float]:
    """A starting point inside the data's basin: features are scaled data rows.

    Feature ``k`` starts at ``scale`` times a data row chosen at random without
    replacement, every stick fraction ``v_j`` at ``v`` (so ``pi_k = v^k``,
    0.8 to 0.17 for eight features at the default) and ``sigma_A`` at the spread
    of those starting features. From such a start every row already has a
    pattern that explains part of it. From PyMC's default start (features near
    zero, then jittered) the likelihood may instead push every ``pi_k`` to zero
    first, and once no row uses a feature its image gets no gradient from the
    data: the sampler is stuck with every feature switched off.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data with ``N >= n_features``.
    n_features : int
        Truncation level ``K``.
    rng : numpy.random.Generator
        Chooses the rows.
    sigma_x : float or None, optional
        As in :func:`build_model`: ``None`` (free noise) adds a start for
        ``sigma_X`` (half the data's standard deviation).
    scale : float, optional
        Factor applied to the chosen rows, > 0.
    v : float, optional
        Starting stick fraction, in (0, 1).
    alpha : float, optional
        Starting mass parameter, > 0.

    Returns
    -------
    dict
        Values on the untransformed scale for ``pm.sample(initvals=...)``.

    Examples
    --------
    >>> X = np.arange(12.0).reshape(4, 3)
    >>> start = initial_point_from_data(X, 2, np.random.default_rng(0), sigma_x=1.0)
    >>> sorted(start), start["A"].shape, start["v"].tolist()
    (['A', 'alpha', 'sigma_A', 'v'], (2, 3), [0.8, 0.8])
    """
    X = check_data_matrix("X", X)
    n_features = _check_n_features(n_features)
    rng = check_rng(rng)
    sigma_x = _check_sigma_x_option(sigma_x)
    scale = check_positive("scale", scale)
    v = check_positive("v", v)
    if v >= 1.0:
        raise ValueError(f"v must be in (0, 1), got {v}")
    alpha = check_positive("alpha", alpha)
    if X.shape[0] < n_features:
        raise ValueError(
            f"X must have at least n_features = {n_features} rows to start from, got {X.shape[0]}"
        )
    A = scale * X[rng.choice(X.shape[0], n_features, replace=False)]
    # the starting scales must be scales the model can hold: numpy_logp accepts sigma_A
    # (and sigma_X) up to MAX_PARAMETER, and far beyond it the HalfNormal log densities
    # overflow, so that NUTS fails with "bad initial energy"
    sigma_A = max(_spread(A), 1e-3)
    if not sigma_A <= MAX_PARAMETER:
        raise ValueError(
            f"X is too large to start from: scale * (rows of X) spread about {sigma_A:.3g}, "
            f"so the start's sigma_A would exceed {MAX_PARAMETER:g}; rescale the data "
            "(for example divide X by its standard deviation) or lower scale"
        )
    start: dict[str, np.ndarray | float] = {
        "A": A,
        "v": np.full(n_features, v),
        "alpha": alpha,
        "sigma_A": sigma_A,
    }
    if sigma_x is None:
        sigma_X = max(0.5 * _spread(X), 1e-3)
        if not sigma_X <= MAX_PARAMETER:
            raise ValueError(
                f"X is too large to start from: half its spread, {sigma_X:.3g}, the start of "
                f"sigma_X, exceeds {MAX_PARAMETER:g}; rescale the data")
        start["sigma_X"] = sigma_X
    return start


def _spread(values: np.ndarray) -> float:
    """``values.std()`` without overflow: divided by the largest magnitude first.

    The plain ``std`` squares the entries, which overflows to inf beyond about 1e154.
    """
    top = float(np.max(np.abs(values)))
    if top == 0.0:
        return 0.0
    return top * float((values / top).std())


def _model_layout(model) -> tuple[int, bool]:
    """Truncation level of a model made by :func:`build_model`, and whether sigma_X is free."""
    if not hasattr(model, "coords") or not hasattr(model, "named_vars") \
            or "feature" not in model.coords or "A" not in model.named_vars:
        raise ValueError("model must be made by ibp_lab.inference.pymc_models.build_model")
    free = {rv.name for rv in model.free_RVs}
    return len(model.coords["feature"]), "sigma_X" in free


def sample_posterior(
    model,
    X,
    rng: np.random.Generator,
    *,
    draws: int = 300,
    tune: int = 500,
    chains: int = 2,
    start: str = "data",
    target_accept: float = 0.8,
    cores: int = 1,
    keep_warmup: bool = False,
    quiet: bool = False,
):
    """Run PyMC's NUTS on a :func:`build_model` model from a chosen start.

    Parameters
    ----------
    model : pymc.Model
        From :func:`build_model` on the same ``X``.
    X : array_like
        The data the model was built on (used for the start).
    rng : numpy.random.Generator
        Seeds the starts and the sampler.
    draws, tune : int, optional
        Kept draws and warm-up steps per chain, >= 1 and >= 0.
    chains : int, optional
        Number of chains, >= 1.
    start : {"data", "default"}, optional
        ``"data"``: each chain starts from its own :func:`initial_point_from_data`
        with PyMC's start jitter switched off (``init="adapt_diag"``).
        ``"default"``: PyMC's own start (``init="jitter+adapt_diag"``).
    target_accept : float, optional
        NUTS's target acceptance rate, in (0, 1).
    cores : int, optional
        Chains run at the same time, >= 1 (1: one after another). Each chain
        uses one BLAS thread.
    keep_warmup : bool, optional
        Keep the warm-up draws too (groups ``warmup_posterior`` and
        ``warmup_sample_stats``), to see where the chains went early on.
    quiet : bool, optional
        Silence PyMC's log messages (start, timing, convergence warnings);
        compute the diagnostics with ArviZ instead.

    Returns
    -------
    arviz.InferenceData

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> idata = sample_posterior(build_model(X, 1, sigma_x=1.0), X, np.random.default_rng(1),
    ...                          draws=5, tune=5, chains=1)
    >>> idata.posterior["A"].shape  # chain, draw, feature, pixel
    (1, 5, 1, 2)
    """
    X = check_data_matrix("X", X)
    rng = check_rng(rng)
    draws = check_count("draws", draws, minimum=1, maximum=_MAX_STEPS_PER_CHAIN)
    tune = check_count("tune", tune, maximum=_MAX_STEPS_PER_CHAIN - draws)
    chains = check_count("chains", chains, minimum=1, maximum=_MAX_CHAINS)
    cores = check_count("cores", cores, minimum=1, maximum=_MAX_CHAINS)
    target_accept = check_positive("target_accept", target_accept, upper=1.0)
    if target_accept >= 1.0:
        # NUTS would shrink its step size towards 0 and never finish a tree
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    keep_warmup = check_flag("keep_warmup", keep_warmup)
    quiet = check_flag("quiet", quiet)
    if not isinstance(start, str) or start not in ("data", "default"):
        raise ValueError(f"start must be 'data' or 'default', got {start!r}")
    n_features, free_sigma_x = _model_layout(model)

    import pymc as pm

    kwargs = {}
    if start == "data":
        sigma_x = None if free_sigma_x else 1.0  # only decides whether sigma_X gets a start
        kwargs["initvals"] = [
            initial_point_from_data(X, n_features, rng, sigma_x=sigma_x) for _ in range(chains)
        ]
        kwargs["init"] = "adapt_diag"
    seed = int(rng.integers(2**31 - 1))  # PyMC derives one seed per chain from it
    # One BLAS thread per chain: PyMC does not limit BLAS threads when it forks or runs
    # chains in sequence, and on a busy 2-core machine oversubscribed BLAS threads made
    # each gradient about six times slower.
    with model, single_blas_thread(refresh=True):  # refresh: PyTensor may load a BLAS
        return pm.sample(
            draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
            target_accept=target_accept, progressbar=False,
            discard_tuned_samples=not keep_warmup, quiet=quiet, **kwargs,
        )


def _check_parameters(X, pi, A, sigma_x):
    X = check_data_matrix("X", X)
    pi = check_real_array("pi", pi)
    if pi.ndim != 1 or pi.size == 0:
        raise ValueError(
            f"pi must be a non-empty 1-D array (one probability per feature), got shape {pi.shape}"
        )
    if pi.size > MAX_FEATURES:
        raise ValueError(f"pi must have at most MAX_FEATURES = {MAX_FEATURES} entries "
                         f"(2^K patterns per row), got {pi.size}")
    n_features = pi.size
    if not np.all((pi >= 0) & (pi <= 1)):
        raise ValueError(f"pi must lie in [0, 1], got values from {pi.min()} to {pi.max()}")
    A = check_real_array("A", A)
    if A.shape != (n_features, X.shape[1]):
        raise ValueError(
            f"A must have shape (n_features, D) = ({n_features}, {X.shape[1]}), got {A.shape}"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError("A must be finite")
    sigma_x = check_positive("sigma_x", sigma_x)
    _check_reach(X, A, sigma_x)
    return X, pi, A, sigma_x


#: X, pi, A and sigma_x, checked together (pi's features set A's shape).
_PARAMETERS = Joint(_check_parameters, "X", "pi", "A", "sigma_x", sets=("X", "pi", "A", "sigma_x"))


def _pattern_log_joint(X, log_pi, log1m_pi, A, sigma_x) -> np.ndarray:
    """``(N, 2^K)`` log p(c) + log Normal(x_n | c A, sigma_x^2 I); inputs already checked."""
    patterns = pattern_matrix(log_pi.size).astype(np.float64)
    with np.errstate(invalid="ignore"):  # 0 * -inf for a stick exactly at 0 or 1
        log_prior_c = np.where(patterns > 0, log_pi, 0.0).sum(1) + np.where(
            patterns > 0, 0.0, log1m_pi
        ).sum(1)
    means = patterns @ A
    sq_dist = (
        np.sum(X * X, axis=1)[:, None] - 2.0 * X @ means.T + np.sum(means * means, axis=1)[None, :]
    )
    n_dims = X.shape[1]
    return (
        log_prior_c[None, :]
        - sq_dist / (2.0 * sigma_x**2)
        - n_dims * np.log(sigma_x)
        - 0.5 * n_dims * np.log(2.0 * np.pi)
    )


def _log1mexp(log_p):
    """``log(1 - exp(log_p))`` for ``log_p <= 0``; ``-inf`` at ``log_p = 0``."""
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(log_p))


def _logs_of_pi(pi):
    with np.errstate(divide="ignore"):
        return np.log(pi), np.log1p(-pi)


@validated(parameters=_PARAMETERS)
def row_log_likelihood(X, pi, A, sigma_x: float) -> np.ndarray:
    """``log p(x_n | pi, A, sigma_x)`` for every row, its pattern summed out.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    pi : array_like
        ``(K,)`` feature probabilities in [0, 1].
    A : array_like
        ``(K, D)`` feature images.
    sigma_x : float
        Noise standard deviation, > 0.

    Returns
    -------
    numpy.ndarray
        ``(N,)``.

    Examples
    --------
    With ``pi = 0`` no row owns the feature, so each row is pure noise:

    >>> from scipy.stats import norm
    >>> X = np.array([[0.3, -0.2]])
    >>> bool(np.isclose(row_log_likelihood(X, [0.0], [[5.0, 5.0]], 0.5)[0],
    ...                 norm(0, 0.5).logpdf(X).sum()))
    True
    """
    return logsumexp(_pattern_log_joint(X, *_logs_of_pi(pi), A, sigma_x), axis=1)


@validated(parameters=_PARAMETERS)
def pattern_log_posteriors(X, pi, A, sigma_x: float) -> np.ndarray:
    """Log posterior probability of each pattern for each row, given the parameters.

    ``log p(c | x_n, pi, A, sigma_x)``: the prior of pattern ``c`` times the
    Gaussian likelihood of row ``n``, normalised over the ``2^K`` patterns of
    :func:`pattern_matrix`.

    Parameters
    ----------
    X, pi, A, sigma_x
        As in :func:`row_log_likelihood`.

    Returns
    -------
    numpy.ndarray
        ``(N, 2^K)``; ``exp`` of each row sums to one.

    Examples
    --------
    >>> lp = pattern_log_posteriors([[1.0, 1.0]], [0.5], [[1.0, 1.0]], 0.3)
    >>> np.exp(lp).round(4).tolist()  # the row looks like the feature
    [[0.0, 1.0]]
    """
    joint = _pattern_log_joint(X, *_logs_of_pi(pi), A, sigma_x)
    # normalise after shifting by the row maximum: ``joint - logsumexp(joint)`` adds
    # log(number of tied patterns) to a value that may be ~1e200 (at a tiny sigma_x),
    # where it rounds away, so that two tied patterns both got probability 1
    shifted = joint - joint.max(axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def pattern_posterior(X, pi, A, sigma_x: float) -> np.ndarray:
    """Posterior probability of each pattern for each row, summing to one over patterns.

    This is ``exp`` of :func:`pattern_log_posteriors`.

    Examples
    --------
    >>> p = pattern_posterior(np.zeros((3, 2)), [0.6, 0.3], np.eye(2), 1.0)
    >>> p.shape, np.allclose(p.sum(axis=1), 1.0)
    ((3, 4), True)
    """
    return np.exp(pattern_log_posteriors(X, pi, A, sigma_x))


@dataclass(frozen=True)
class ZRecovery:
    """``Z`` recovered from a posterior sample (see :func:`recover_z`).

    Attributes
    ----------
    probabilities : numpy.ndarray
        ``(N, K)`` posterior probability that row ``n`` owns feature ``k``,
        averaged over draws.
    pattern_probabilities : numpy.ndarray
        ``(N, 2^K)`` posterior probability of each pattern, averaged over draws.
    map_z : numpy.ndarray
        ``(N, K)`` ``int8``: each row's most probable pattern.
    n_draws : int
        Number of posterior draws averaged.
    """

    probabilities: np.ndarray
    pattern_probabilities: np.ndarray
    map_z: np.ndarray
    n_draws: int


def _posterior_draws(idata, chain, n_draws):
    """log_pi (S, K), A (S, K, D), sigma_x (S,) from evenly spaced draws of the chosen chain(s)."""
    posterior = getattr(idata, "posterior", None)
    if posterior is None or "A" not in posterior or "log_pi" not in posterior:
        raise ValueError("idata must hold a posterior sample of a build_model model (A and log_pi)")
    post = idata.posterior
    n_chains = post.sizes["chain"]
    if chain is not None:
        chain = check_count("chain", chain, maximum=n_chains - 1)
        post = post.isel(chain=[chain])
    stacked = post.stack(sample=("chain", "draw"))
    total = stacked.sizes["sample"]
    if n_draws is None:
        index = np.arange(total)
    else:
        n_draws = check_count("n_draws", n_draws, minimum=1)
        index = np.unique(np.linspace(0, total - 1, min(n_draws, total)).round().astype(int))
    stacked = stacked.isel(sample=index)
    log_pi = stacked["log_pi"].transpose("sample", "feature").to_numpy()
    A = stacked["A"].transpose("sample", "feature", "pixel").to_numpy()
    if "sigma_X" in stacked:
        sigma_x = stacked["sigma_X"].to_numpy()
    elif hasattr(idata, "constant_data") and "sigma_X" in idata.constant_data:
        sigma_x = np.full(index.size, float(idata.constant_data["sigma_X"]))
    else:
        raise ValueError("idata holds no sigma_X (neither a posterior nor constant_data variable)")
    return _check_draws(log_pi, A, sigma_x)


def _check_draws(log_pi, A, sigma_x):
    """Posterior draws read from ``idata``: a file or a hand-made sample may hold anything."""
    log_pi = check_real_array("idata log_pi", log_pi)
    A = check_real_array("idata A", A)
    sigma_x = np.atleast_1d(check_real_array("idata sigma_X", sigma_x))
    if log_pi.ndim != 2 or A.ndim != 3 or A.shape[:2] != log_pi.shape \
            or sigma_x.shape != (log_pi.shape[0],):
        raise ValueError(
            f"idata must hold log_pi (draws, K), A (draws, K, D) and sigma_X (draws,), got "
            f"shapes {log_pi.shape}, {A.shape} and {sigma_x.shape}"
        )
    if log_pi.shape[1] == 0 or log_pi.shape[1] > MAX_FEATURES:
        raise ValueError(f"idata must have 1 to {MAX_FEATURES} features, got {log_pi.shape[1]}")
    if np.isnan(log_pi).any() or (log_pi > 0).any():
        raise ValueError("idata log_pi must be log probabilities: <= 0 and not NaN")
    if not np.all(np.isfinite(A)):
        raise ValueError("idata A must be finite")
    for s, value in enumerate(sigma_x):
        check_positive(f"idata sigma_X[{s}]", float(value))
    return log_pi, A, sigma_x


def _check_rows(X, A, sigma_x):
    X = check_data_matrix("X", X)
    if X.shape[1] != A.shape[2]:
        raise ValueError(
            f"X must have {A.shape[2]} columns (pixels) like the model's A, got {X.shape[1]}"
        )
    for s in range(A.shape[0]):
        _check_reach(X, A[s], float(sigma_x[s]))
    return X


def recover_z(idata, X, *, chain: int | None = None, n_draws: int | None = None) -> ZRecovery:
    """Posterior probabilities of ``z_nk`` and the most probable ``Z``, averaged over draws.

    For each posterior draw the pattern posterior of every row is exact
    (:func:`pattern_log_posteriors`); those are averaged over draws. Features
    are only comparable within a chain (two chains may label the same feature
    differently, or find different features), so average over several chains
    only if they agree.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of a :func:`build_model` model.
    X : array_like
        ``(N, D)`` rows to explain: the training data or new rows.
    chain : int or None, optional
        Use this chain only; ``None`` pools all chains.
    n_draws : int or None, optional
        Use this many evenly spaced draws; ``None`` uses all.

    Returns
    -------
    ZRecovery

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"log_pi": np.log([[[0.5]]]), "A": [[[[1.0, 1.0]]]],
    ...                                 "sigma_X": [[0.3]]},
    ...                      dims={"log_pi": ["feature"], "A": ["feature", "pixel"]})
    >>> recover_z(idata, [[1.0, 1.0], [0.0, 0.0]]).map_z.ravel().tolist()
    [1, 0]
    """
    log_pi, A, sigma_x = _posterior_draws(idata, chain, n_draws)
    X = _check_rows(X, A, sigma_x)
    n_features = log_pi.shape[1]
    pattern_probs = np.zeros((X.shape[0], 2**n_features))
    for s in range(log_pi.shape[0]):
        joint = _pattern_log_joint(X, log_pi[s], _log1mexp(log_pi[s]), A[s], sigma_x[s])
        pattern_probs += np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    pattern_probs /= log_pi.shape[0]
    patterns = pattern_matrix(n_features)
    return ZRecovery(
        probabilities=pattern_probs @ patterns,
        pattern_probabilities=pattern_probs,
        map_z=patterns[pattern_probs.argmax(axis=1)].copy(),
        n_draws=int(log_pi.shape[0]),
    )


def sample_z(idata, X, rng: np.random.Generator, *, chain: int | None = None,
             n_draws: int | None = 100) -> np.ndarray:
    """Draw one ``Z`` per posterior draw from the rows' pattern posteriors.

    Parameters
    ----------
    idata, X, chain, n_draws
        As in :func:`recover_z` (``n_draws`` defaults to 100 evenly spaced draws).
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        ``(S, N, K)`` ``int8``: ``S`` draws of ``Z``. The number of occupied
        features of draw ``s`` is ``Z[s].any(axis=0).sum()``.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"log_pi": np.log([[[0.5]]]), "A": [[[[1.0, 1.0]]]],
    ...                                 "sigma_X": [[0.3]]},
    ...                      dims={"log_pi": ["feature"], "A": ["feature", "pixel"]})
    >>> sample_z(idata, [[1.0, 1.0], [0.0, 0.0]], np.random.default_rng(0)).shape
    (1, 2, 1)
    """
    rng = check_rng(rng)
    log_pi, A, sigma_x = _posterior_draws(idata, chain, n_draws)
    X = _check_rows(X, A, sigma_x)
    patterns = pattern_matrix(log_pi.shape[1])
    out = np.empty((log_pi.shape[0], X.shape[0], log_pi.shape[1]), dtype=np.int8)
    for s in range(log_pi.shape[0]):
        joint = _pattern_log_joint(X, log_pi[s], _log1mexp(log_pi[s]), A[s], sigma_x[s])
        cdf = np.cumsum(np.exp(joint - logsumexp(joint, axis=1, keepdims=True)), axis=1)
        picks = (cdf < rng.random((X.shape[0], 1))).sum(axis=1)
        out[s] = patterns[np.minimum(picks, patterns.shape[0] - 1)]
    return out


def _check_values(values, *, free_sigma_x: bool, n_features: int | None = None) -> dict:
    """The untransformed parameter values of a :func:`build_model` model, checked.

    ``alpha``, ``sigma_A`` (and ``sigma_X`` when free) positive numbers, ``v`` a
    1-D array in (0, 1), ``A`` a finite ``(K, D)`` array with ``K = len(v)``.
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a dict of parameter values, got {type(values).__name__}")
    needed = ["alpha", "v", "sigma_A", "A"] + (["sigma_X"] if free_sigma_x else [])
    missing = [name for name in needed if name not in values]
    if missing:
        raise ValueError(f"values must contain {needed}; missing {missing}")
    out = {name: check_positive(name, values[name])
           for name in ("alpha", "sigma_A", "sigma_X") if name in needed}
    v = check_real_array("v", values["v"])
    if v.ndim != 1 or v.size == 0 or not np.all((v > 0) & (v < 1)):
        raise ValueError("v must be a non-empty 1-D array of values in (0, 1)")
    if v.size > MAX_FEATURES or (n_features is not None and v.size != n_features):
        raise ValueError(f"v must have one entry per feature "
                         f"({n_features if n_features is not None else f'at most {MAX_FEATURES}'}), "
                         f"got {v.size}")
    A = check_real_array("A", values["A"])
    if A.ndim != 2 or A.shape[0] != v.size or not np.all(np.isfinite(A)):
        raise ValueError(f"A must be a finite ({v.size}, D) array (one image per feature), "
                         f"got shape {A.shape}")
    out.update(v=v, A=A)
    return out


def numpy_logp(
    X,
    values: dict,
    *,
    sigma_x: float | None = None,
    alpha_shape: float = ALPHA_SHAPE,
    alpha_rate: float = ALPHA_RATE,
    sigma_a_scale: float = SIGMA_A_SCALE,
    sigma_x_scale: float = SIGMA_X_SCALE,
) -> float:
    """The log density of :func:`build_model` at ``values``, computed without PyTensor.

    The density is that of the untransformed parameters (no Jacobian):
    SciPy's log densities of the priors plus, for each row, the sum over
    patterns written as a plain loop with ``np.logaddexp``. It shares no code
    with the PyMC model, which makes it a check of it.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    values : dict
        ``alpha``, ``v`` (``(K,)`` in (0, 1)), ``sigma_A``, ``A`` (``(K, D)``) and,
        if ``sigma_x`` is None, ``sigma_X``.
    sigma_x : float or None, optional
        As in :func:`build_model`.
    alpha_shape, alpha_rate, sigma_a_scale, sigma_x_scale : float, optional
        As in :func:`build_model`.

    Returns
    -------
    float

    Examples
    --------
    >>> values = {"alpha": 1.0, "v": [0.5], "sigma_A": 1.0, "A": [[0.0]]}
    >>> round(numpy_logp([[0.0]], values, sigma_x=1.0), 4)  # five log densities at 0 or 1
    -3.5637
    """
    X = check_data_matrix("X", X)
    sigma_x = _check_sigma_x_option(sigma_x)
    alpha_shape = check_positive("alpha_shape", alpha_shape)
    alpha_rate = check_positive("alpha_rate", alpha_rate)
    sigma_a_scale = check_positive("sigma_a_scale", sigma_a_scale)
    sigma_x_scale = check_positive("sigma_x_scale", sigma_x_scale)
    checked = _check_values(values, free_sigma_x=sigma_x is None)
    alpha, v, sigma_a = checked["alpha"], checked["v"], checked["sigma_A"]
    noise = checked["sigma_X"] if sigma_x is None else sigma_x
    pi = np.cumprod(v)
    X, pi, A, noise = _check_parameters(X, pi, checked["A"], noise)

    log_density = stats.gamma(alpha_shape, scale=1.0 / alpha_rate).logpdf(alpha)
    log_density += stats.beta(alpha, 1.0).logpdf(v).sum()
    log_density += stats.halfnorm(scale=sigma_a_scale).logpdf(sigma_a)
    log_density += stats.norm(0.0, sigma_a).logpdf(A).sum()
    if sigma_x is None:
        log_density += stats.halfnorm(scale=sigma_x_scale).logpdf(noise)
    row_terms = np.full(X.shape[0], -np.inf)
    for pattern in pattern_matrix(v.size):
        on = pattern.astype(bool)
        log_prior = np.log(pi[on]).sum() + np.log1p(-pi[~on]).sum()
        log_lik = stats.norm(pattern @ A, noise).logpdf(X).sum(axis=1)
        row_terms = np.logaddexp(row_terms, log_prior + log_lik)
    return float(log_density + row_terms.sum())


def feature_gradient(model, values: dict) -> np.ndarray:
    """Gradient of the data's log-likelihood with respect to the features ``A``.

    Only the likelihood term (the ``"loglik"`` potential) is differentiated, not
    the prior: this is the push the data give each feature image. Its row ``k``
    is ``sum_n P(z_nk = 1 | x_n) (x_n - E[c A | x_n, z_nk = 1]) / sigma_X^2``, so it
    vanishes when no row is likely to own feature ``k``, as when ``pi_k`` is
    near zero: then nothing pulls the feature towards the data.

    Parameters
    ----------
    model : pymc.Model
        From :func:`build_model`.
    values : dict
        Untransformed values of the free variables (as for :func:`numpy_logp`).

    Returns
    -------
    numpy.ndarray
        ``(K, D)``.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> model = build_model(X, 1, sigma_x=0.5)
    >>> values = {"alpha": 1.0, "v": [1e-12], "sigma_A": 1.0, "A": [[0.3, 0.3]]}
    >>> bool(np.abs(feature_gradient(model, values)).max() < 1e-9)
    True
    """
    n_features, free_sigma_x = _model_layout(model)
    values = _check_values(values, free_sigma_x=free_sigma_x, n_features=n_features)
    n_pixels = len(model.coords["pixel"])
    if values["A"].shape[1] != n_pixels:
        raise ValueError(f"A must have {n_pixels} columns (the model's pixels), "
                         f"got {values['A'].shape[1]}")

    import pymc as pm

    loglik = model.logp(vars=model.potentials, jacobian=False)
    grad = pm.gradient(loglik, [model.rvs_to_values[model["A"]]])
    point = _transformed_point(model, values)
    function = model.compile_fn(grad, inputs=model.value_vars, on_unused_input="ignore")
    return np.asarray(function(point)).reshape(n_features, -1)


def time_gradient(X, n_features: int, *, sigma_x: float = 0.25, repeats: int = 20) -> float:
    """Seconds per evaluation of the model's log density and its gradient.

    The model is built and compiled (not timed), evaluated twice to warm up,
    then ``repeats`` times; the fastest evaluation is returned (the one least
    disturbed by other processes on a shared machine). The
    point is the one :func:`initial_point_from_data` gives with a fixed seed.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_features : int
        Truncation level ``K``.
    sigma_x : float, optional
        Fixed noise level of the model timed.
    repeats : int, optional
        Timed evaluations, >= 1.

    Returns
    -------
    float

    Examples
    --------
    >>> time_gradient(np.zeros((5, 2)), 2, repeats=3) > 0
    True
    """
    X = check_data_matrix("X", X)
    repeats = check_count("repeats", repeats, minimum=1, maximum=_MAX_REPEATS)
    if sigma_x is None:
        raise TypeError("sigma_x must be a number (time_gradient times the fixed-noise model)")
    model = build_model(X, n_features, sigma_x=sigma_x)
    start = initial_point_from_data(X, n_features, np.random.default_rng(0), sigma_x=sigma_x)
    point = _transformed_point(model, start)
    logp_and_grad = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars)
    times = []
    # one BLAS thread, as pm.sample uses with one core per chain
    with single_blas_thread(refresh=True):
        for _ in range(2):
            logp_and_grad(point)
        for _ in range(repeats):
            t0 = time.perf_counter()
            logp_and_grad(point)
            times.append(time.perf_counter() - t0)
    return float(np.min(times))


def _transformed_point(model, values: dict) -> dict[str, np.ndarray]:
    """Map untransformed ``values`` of the free variables to the model's value variables."""
    point = {}
    for rv in model.free_RVs:
        value_var = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        value = np.asarray(values[rv.name], dtype=np.float64)
        if transform is not None:
            value = transform.forward(value, *rv.owner.inputs).eval()
        point[value_var.name] = np.asarray(value, dtype=np.float64)
    return point
