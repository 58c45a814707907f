"""The buffet's own parameters given a binary matrix: ``alpha``, ``beta`` and the discount ``d``.

Given a binary matrix ``Z`` with ``N`` rows (the features a sampler holds, or features
observed directly, such as the words of documents), the three-parameter IBP's class law
``P([Z] | alpha, beta, d)`` (:func:`ibp_lab.models.prior.log_prior`, Teh & Gorur 2009) depends on
``Z`` only through ``N``, ``K+``, the features' numbers of owners ``m_k`` and the
duplicated columns::

    log P([Z]) = K+ log alpha - alpha H_N(beta, d) - sum_h log K_h!
                 + sum_k [log Gamma(1 + beta) - log Gamma(1 - d) - log Gamma(beta + d)
                          + log Gamma(m_k - d) + log Gamma(N - m_k + beta + d)
                          - log Gamma(N + beta)]

with ``H_N(beta, d)`` the sum of the buffet's new-dish rates over ``N`` customers at
``alpha = 1`` (:func:`ibp_lab._hyper.stable_harmonic`). :class:`FeatureCounts` keeps those
statistics, so that a matrix of thousands of features costs one sum over its distinct
counts per evaluation.

**alpha** enters as ``alpha^K+ exp(-alpha H)``: with a Gamma(a, b) prior (shape, rate) its
conditional is Gamma(a + K+, b + H) and it integrates out, leaving::

    p(Z | beta, d) proportional to Gamma(a + K+) b^a / (Gamma(a) (b + H)^(a + K+)) x (the rest)

**The sampler** (:func:`sample_hyperparameters`): each iteration draws

1. ``beta`` given ``d`` and ``Z``, ``alpha`` integrated out: one slice-sampling step
   (Neal 2003, stepping out and shrinkage) on ``log beta``, target the Gamma prior on
   ``beta`` times the Jacobian ``beta`` times ``p(Z | beta, d)``;
2. ``d`` given ``beta`` and ``Z``, ``alpha`` integrated out: one slice step on
   ``[MIN_DISCOUNT, 1)`` (the interval starts as the whole range and shrinks), target the
   Beta prior on ``d`` times ``p(Z | beta, d)``;
3. ``alpha`` from its Gamma conditional.

Steps 1 and 2 leave ``p(beta, d | Z)`` invariant; step 3 then completes a draw of
``p(alpha, beta, d | Z)``. The prior on ``d`` is truncated below at ``MIN_DISCOUNT``
(1e-8), where the samplers' door starts accepting a positive discount; a fit without a
discount holds ``d = 0``.

:func:`discount_step` is step 2 with ``alpha`` and ``beta`` held fixed: one slice step on the
exact conditional ``p(d | Z, alpha, beta)``, the step a sampler of a latent ``Z`` (the
discounted Gibbs sweep, :func:`ibp_lab.inference.gibbs.gibbs_sweep`) alternates with its sweeps.

:func:`heldout_log_score` scores held-out rows: ``log P(Z_test | Z_train)``, each test row
the buffet's next customer (which of the known features it takes, and how many new ones).

Examples
--------
>>> from ibp_lab.models.prior import sample_ibp
>>> rng = np.random.default_rng(0)
>>> Z = sample_ibp(3.0, 200, rng, beta=1.0, discount=0.5)
>>> draws = sample_hyperparameters(Z, 400, rng)
>>> bool(0.3 < float(draws["discount"][100:].mean()) < 0.7)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import gammaln

from ibp_lab._checks import (
    MAX_PARAMETER,
    MIN_PARAMETER,
    BinaryMatrix,
    Checked,
    Count,
    Flag,
    Generator,
    Joint,
    Positive,
    check_binary_matrix,
    check_count,
    check_positive_pair,
    validated,
)
from ibp_lab._hyper import (
    MAX_DISCOUNT,
    MIN_DISCOUNT,
    check_beta_discount,
    check_discount_in_support,
    log_stable_class_law,
    stable_harmonic,
    stable_new_dish_rate,
)
from ibp_lab.models.prior import sample_ibp

__all__ = ["FeatureCounts", "discount_step", "sample_hyperparameters",
           "heldout_log_score", "heaps_curve", "zipf_curve", "PredictiveCurves",
           "predictive_curves", "MAX_DRAWS", "MAX_SIMULATIONS"]

#: Most draws one call of :func:`sample_hyperparameters` keeps.
MAX_DRAWS = 10**6
#: Most buffets one call of :func:`predictive_curves` simulates.
MAX_SIMULATIONS = 1000
# Most doublings of the stepping-out and halvings of the shrinkage of one slice step:
# beyond them the step keeps its current value (a valid, if lazy, move).
_MAX_SLICE_STEPS = 200


@dataclass(frozen=True)
class FeatureCounts:
    """What the class law needs of ``Z``: ``N``, ``K+``, the distinct numbers of owners.

    Attributes
    ----------
    n_rows : int
        ``N``.
    owners : numpy.ndarray
        Distinct numbers of owners ``m`` (``float``).
    n_with : numpy.ndarray
        How many features have each of them.
    n_features : int
        ``K+``, the number of non-empty columns.
    log_duplicates : float
        ``sum_h log K_h!`` over groups of equal columns.

    Examples
    --------
    >>> FeatureCounts.of(np.array([[1, 1, 0], [1, 1, 1]])).n_with.tolist()
    [1.0, 2.0]
    """

    n_rows: int
    owners: np.ndarray
    n_with: np.ndarray
    n_features: int
    log_duplicates: float

    @classmethod
    def of(cls, Z) -> FeatureCounts:
        """The statistics of a binary matrix (all-zero columns are dropped)."""
        Z = check_binary_matrix("Z", Z)
        if Z.shape[0] == 0:
            raise ValueError("Z must have at least one row, got 0")
        Z = Z[:, Z.any(axis=0)]
        owners, n_with = np.unique(Z.sum(axis=0), return_counts=True)
        log_duplicates = 0.0
        if Z.shape[1]:
            _, groups = np.unique(Z, axis=1, return_counts=True)
            log_duplicates = float(np.sum(gammaln(groups + 1.0)))
        return cls(Z.shape[0], owners.astype(np.float64), n_with.astype(np.float64),
                   int(Z.shape[1]), log_duplicates)


def _feature_counts(name: str, Z) -> FeatureCounts:
    """``Z``'s :class:`FeatureCounts`: the doors that only need the counts check ``Z`` so."""
    return FeatureCounts.of(Z)


_COUNTS = Checked(_feature_counts)


def _starting_discount(beta: float, discount, update_discount: bool) -> float:
    """The starting ``d``: in its prior's support if it moves, else any ``0 <= d < 1``."""
    if update_discount:
        return check_discount_in_support(discount)
    return check_beta_discount(beta, discount)[1]


def _check_train_test(Z_train: np.ndarray, Z_test: np.ndarray) -> None:
    if Z_train.shape[0] == 0 or Z_test.shape[0] == 0:
        raise ValueError("Z_train and Z_test must each have at least one row")
    if Z_train.shape[1] != Z_test.shape[1]:
        raise ValueError(f"Z_train and Z_test must have the same columns, got "
                         f"{Z_train.shape[1]} and {Z_test.shape[1]}")


def _check_draws(name: str, draws) -> xr.Dataset:
    if not isinstance(draws, xr.Dataset) or not {"alpha", "beta", "discount"} <= set(draws):
        raise TypeError("draws must be the xarray.Dataset of sample_hyperparameters")
    return draws


def _check_burn(draws: xr.Dataset, burn) -> int:
    return check_count("burn", burn, maximum=draws.sizes["draw"] - 1)


def _log_law(counts: FeatureCounts, alpha: float, beta: float, discount: float) -> float:
    return log_stable_class_law(counts.owners, counts.n_rows, counts.n_features,
                             counts.log_duplicates, alpha, beta, discount, weights=counts.n_with)


def _log_law_alpha_integrated(counts: FeatureCounts, beta: float, discount: float,
                              alpha_prior: tuple[float, float]) -> float:
    """``log p([Z] | beta, d)`` with ``alpha ~ Gamma(a, b)`` integrated out (module docstring)."""
    shape, rate = alpha_prior
    harmonic = stable_harmonic(counts.n_rows, beta, discount)
    k_plus = counts.n_features
    # the class law at alpha = 1 without its alpha terms: K+ log 1 - 1 * H, so add H back
    rest = _log_law(counts, 1.0, beta, discount) + harmonic
    return float(rest + gammaln(shape + k_plus) - gammaln(shape) + shape * math.log(rate)
                 - (shape + k_plus) * math.log(rate + harmonic))


def _slice_step(x: float, log_density: Callable[[float], float], lower: float, upper: float,
                width: float, rng: np.random.Generator) -> float:
    """One slice-sampling step (Neal 2003) for a density on ``(lower, upper)``.

    The slice level is ``log f(x) - Exponential(1)``; an interval of ``width`` placed at
    random around ``x`` steps out by doubling its width on each side while its end is
    in the slice (clipped to the range), then shrinks towards ``x`` until a point in the
    slice is drawn. With ``width`` at least the range the interval is the whole range
    and only shrinks. Leaves the density invariant.
    """
    level = log_density(x) - rng.exponential()
    left = max(lower, x - width * rng.random())
    right = min(upper, left + width)
    for _ in range(_MAX_SLICE_STEPS):
        if left <= lower or log_density(left) < level:
            break
        left = max(lower, left - (right - left))
    for _ in range(_MAX_SLICE_STEPS):
        if right >= upper or log_density(right) < level:
            break
        right = min(upper, right + (right - left))
    for _ in range(_MAX_SLICE_STEPS):
        proposal = left + (right - left) * rng.random()
        if log_density(proposal) >= level:
            return proposal
        if proposal < x:
            left = proposal
        else:
            right = proposal
    return x


def _log_beta_density(a: float, b: float) -> Callable[[float], float]:
    """Log density of Beta(a, b) on ``(0, 1)``, up to a constant."""
    return lambda d: (a - 1.0) * math.log(d) + (b - 1.0) * math.log1p(-d)


@validated(Z=_COUNTS, discount=Joint(check_discount_in_support, "discount", sets="discount"),
           rng=Generator(), alpha=Positive(), beta=Positive(),
           discount_prior=Checked(check_positive_pair))
def discount_step(Z, rng: np.random.Generator, *, discount: float, alpha: float,
                  beta: float = 1.0, discount_prior=(1.0, 1.0)) -> float:
    """One slice step on ``p(d | Z, alpha, beta)``, proportional to Beta prior x class law.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary matrix (all-zero columns are ignored).
    rng : numpy.random.Generator
    discount : float
        Current ``d``, in ``[MIN_DISCOUNT, 1 - 1e-9]`` (the prior's support).
    alpha, beta : float
        Mass (> 0) and concentration (> 0), held fixed.
    discount_prior : pair of float, optional
        ``(a, b)`` of the Beta prior on ``d``; default uniform.

    Returns
    -------
    float
        The next ``d``.

    Examples
    --------
    >>> Z = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]])
    >>> d = discount_step(Z, np.random.default_rng(0), discount=0.5, alpha=2.0)
    >>> bool(0.0 < d < 1.0)
    True
    """
    log_prior = _log_beta_density(*discount_prior)
    counts = Z  # the constraint turned Z into its FeatureCounts
    return _slice_step(discount, lambda d: log_prior(d) + _log_law(counts, alpha, beta, d),
                       MIN_DISCOUNT, MAX_DISCOUNT, 1.0, rng)


@validated(Z=_COUNTS, n_draws=Count(minimum=1, maximum=MAX_DRAWS), rng=Generator(),
           update_beta=Flag(), update_discount=Flag(), beta=Positive(),
           start=Joint(_starting_discount, "beta", "discount", "update_discount",
                       sets="discount"),
           alpha_prior=Checked(check_positive_pair), beta_prior=Checked(check_positive_pair),
           discount_prior=Checked(check_positive_pair))
def sample_hyperparameters(Z, n_draws: int, rng: np.random.Generator, *, beta: float = 1.0,
                           discount: float = 0.5, alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0),
                           discount_prior=(1.0, 1.0), update_beta: bool = True,
                           update_discount: bool = True) -> xr.Dataset:
    """Draws of ``p(alpha, beta, d | Z)`` by the three steps of the module docstring.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary matrix (all-zero columns are ignored).
    n_draws : int
        Iterations, each one draw of all three (1 to ``MAX_DRAWS``).
    rng : numpy.random.Generator
    beta, discount : float, optional
        Starting values (held there if not updated). ``discount`` in ``[1e-8, 1 - 1e-9]``
        when updated; with ``update_discount=False`` it may be 0, the two-parameter IBP.
    alpha_prior, beta_prior : pair of float, optional
        ``(shape, rate)`` of the Gamma priors on ``alpha`` and ``beta``.
    discount_prior : pair of float, optional
        ``(a, b)`` of the Beta prior on ``d``.
    update_beta, update_discount : bool, optional
        Whether ``beta`` and ``d`` move.

    Returns
    -------
    xarray.Dataset
        ``alpha``, ``beta``, ``discount`` over the dimension ``draw``; ``attrs`` hold
        the priors.

    Examples
    --------
    >>> from ibp_lab.models.prior import sample_ibp
    >>> Z = sample_ibp(2.0, 100, np.random.default_rng(1))
    >>> draws = sample_hyperparameters(Z, 50, np.random.default_rng(2), update_discount=False,
    ...                                discount=0.0)
    >>> float(draws["discount"].max())
    0.0
    """
    priors = dict(alpha_prior=alpha_prior, beta_prior=beta_prior, discount_prior=discount_prior)
    counts = Z  # the constraint turned Z into its FeatureCounts
    trace = {name: np.empty(n_draws) for name in ("alpha", "beta", "discount")}
    log_beta_prior = _gamma_log_density_of_log(*priors["beta_prior"])
    log_discount_prior = _log_beta_density(*priors["discount_prior"])
    for t in range(n_draws):
        if update_beta:
            beta = math.exp(_slice_step(
                math.log(beta), lambda u: log_beta_prior(u) + _log_law_alpha_integrated(
                    counts, math.exp(u), discount, priors["alpha_prior"]),
                math.log(MIN_PARAMETER), math.log(MAX_PARAMETER), 1.0, rng))
        if update_discount:
            discount = _slice_step(discount, lambda d: log_discount_prior(d)
                                   + _log_law_alpha_integrated(counts, beta, d,
                                                               priors["alpha_prior"]),
                                   MIN_DISCOUNT, MAX_DISCOUNT, 1.0, rng)
        shape, rate = priors["alpha_prior"]
        harmonic = stable_harmonic(counts.n_rows, beta, discount)
        trace["alpha"][t] = rng.gamma(shape + counts.n_features, 1.0 / (rate + harmonic))
        trace["beta"][t], trace["discount"][t] = beta, discount
    return xr.Dataset({name: ("draw", values) for name, values in trace.items()},
                      coords={"draw": np.arange(n_draws)},
                      attrs={name: list(value) for name, value in priors.items()})


def _gamma_log_density_of_log(shape: float, rate: float) -> Callable[[float], float]:
    """Log density of ``u = log beta`` when ``beta ~ Gamma(shape, rate)``: Jacobian included."""
    return lambda u: shape * u - rate * math.exp(u)


@validated(Z_train=BinaryMatrix(), Z_test=BinaryMatrix(),
           same_columns=Joint(_check_train_test, "Z_train", "Z_test"),
           alpha=Positive(), beta=Positive(),
           discount=Joint(check_beta_discount, "beta", "discount", sets=("beta", "discount")))
def heldout_log_score(Z_train, Z_test, *, alpha: float, beta: float = 1.0,
                      discount: float = 0.0) -> float:
    """``log P(Z_test | Z_train)``: each test row the buffet's next customer, in order.

    Row ``n + 1`` (``n`` rows seen) takes a seen feature with ``m`` owners with
    probability ``(m - d) / (n + beta)`` and ``Poisson(rate_n)`` new ones
    (:func:`ibp_lab._hyper.stable_new_dish_rate`). The columns of ``Z_train`` and
    ``Z_test`` are the same features (a feature new to the test rows is a column that is
    zero in ``Z_train``).

    Parameters
    ----------
    Z_train, Z_test : array_like
        ``(N, K)`` and ``(M, K)`` binary matrices with the same columns.
    alpha, beta, discount : float
        The buffet's parameters (``beta > 0``, ``0 <= d < 1``).

    Returns
    -------
    float

    Examples
    --------
    One seen feature owned by the one training row; the test row takes it and one new:
    ``log((1 - 0) / (1 + 1)) + log Poisson(1; 2 / 2)``.

    >>> score = heldout_log_score([[1, 0]], [[1, 1]], alpha=2.0)
    >>> bool(np.isclose(score, np.log(0.5) + np.log(np.exp(-1.0))))
    True
    """
    owners = Z_train.sum(axis=0).astype(np.float64)
    n_seen, total = Z_train.shape[0], 0.0
    for row in Z_test.astype(bool):
        seen = owners > 0
        p_take = (owners[seen] - discount) / (n_seen + beta)
        total += float(np.sum(np.where(row[seen], np.log(p_take), np.log1p(-p_take))))
        n_new = int(np.count_nonzero(row & ~seen))
        rate = float(stable_new_dish_rate(alpha, beta, discount, n_seen))
        total += n_new * math.log(rate) - rate - float(gammaln(n_new + 1.0))
        owners += row
        n_seen += 1
    return total


@validated(Z=BinaryMatrix())
def heaps_curve(Z) -> np.ndarray:
    """Heaps' curve: how many distinct features the first ``1, ..., N`` rows own.

    Examples
    --------
    >>> heaps_curve([[1, 0, 0], [1, 1, 0], [0, 0, 1]]).tolist()
    [1, 2, 3]
    """
    if Z.shape[0] == 0:
        raise ValueError("Z must have at least one row, got 0")
    owned = Z.any(axis=0)
    first = np.argmax(Z[:, owned], axis=0)  # the row that brings each feature
    return np.cumsum(np.bincount(first, minlength=Z.shape[0]))


@validated(Z=BinaryMatrix())
def zipf_curve(Z) -> np.ndarray:
    """Zipf's curve: the features' numbers of owners, largest first (empty columns dropped).

    Examples
    --------
    >>> zipf_curve([[1, 0, 0], [1, 1, 0], [1, 0, 0]]).tolist()
    [3, 1]
    """
    owners = Z.sum(axis=0)
    return np.sort(owners[owners > 0])[::-1]


@dataclass(frozen=True)
class PredictiveCurves:
    """Heaps' and Zipf's curves of buffets drawn at posterior draws of the parameters.

    Attributes
    ----------
    heaps : numpy.ndarray
        ``(n_simulations, N)``: :func:`heaps_curve` of each simulated matrix.
    zipf : tuple of numpy.ndarray
        :func:`zipf_curve` of each simulated matrix (their lengths differ).
    parameters : numpy.ndarray
        ``(n_simulations, 3)``: the ``alpha, beta, d`` each matrix was drawn at.
    """

    heaps: np.ndarray
    zipf: tuple
    parameters: np.ndarray


@validated(draws=Checked(_check_draws), n_rows=Count(minimum=1, maximum=10**5), rng=Generator(),
           n_simulations=Count(minimum=1, maximum=MAX_SIMULATIONS),
           burn=Joint(_check_burn, "draws", "burn", sets="burn"))
def predictive_curves(draws: xr.Dataset, n_rows: int, rng: np.random.Generator, *,
                      n_simulations: int = 20, burn: int = 0) -> PredictiveCurves:
    """Posterior predictive Heaps' and Zipf's curves: buffets of ``n_rows`` customers.

    Draw ``j`` of ``n_simulations`` takes the parameters of a posterior draw (evenly
    spaced after ``burn``) and seats ``n_rows`` customers of the three-parameter buffet
    (:func:`ibp_lab.models.prior.sample_ibp`).

    Parameters
    ----------
    draws : xarray.Dataset
        Output of :func:`sample_hyperparameters`.
    n_rows : int
        Customers per buffet (the data's number of rows), >= 1.
    rng : numpy.random.Generator
    n_simulations : int, optional
        Buffets drawn (1 to ``MAX_SIMULATIONS``).
    burn : int, optional
        Posterior draws skipped at the start.

    Returns
    -------
    PredictiveCurves

    Examples
    --------
    >>> Z = sample_ibp(2.0, 40, np.random.default_rng(0))
    >>> draws = sample_hyperparameters(Z, 30, np.random.default_rng(1))
    >>> curves = predictive_curves(draws, 40, np.random.default_rng(2), n_simulations=3)
    >>> curves.heaps.shape
    (3, 40)
    """
    n_draws = draws.sizes["draw"]
    picks = np.linspace(burn, n_draws - 1, n_simulations).round().astype(int)
    parameters = np.column_stack([draws[name].values[picks]
                                  for name in ("alpha", "beta", "discount")])
    heaps, zipf = [], []
    for alpha, beta, discount in parameters:
        Z = sample_ibp(float(alpha), n_rows, rng, beta=float(beta), discount=float(discount))
        heaps.append(heaps_curve(Z))
        zipf.append(zipf_curve(Z))
    return PredictiveCurves(np.array(heaps), tuple(zipf), parameters)
