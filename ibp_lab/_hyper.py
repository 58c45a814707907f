"""The linear-Gaussian IBP's hyperparameters: one door for every sampler, move and scorer.

The collapsed Gibbs sweep, the split-merge moves, the singleton update, exact
enumeration and the held-out scorer all work with the same four numbers
``alpha``, ``sigma_x``, ``sigma_a`` and ``beta`` against the same data ``X``.
They accept and refuse exactly the same values because they all call
:func:`check_hyperparameters`, and the Metropolis updates of the scales in
:func:`ibp_lab.inference.chains.run_chain` use the same rule (:func:`scales_allowed`), so
a chain never wanders where a fresh call would be refused.

The limits, and why:

- every number finite, > 0 and within ``[MIN_PARAMETER, MAX_PARAMETER]``
  (:func:`ibp_lab._checks.check_positive`);
- ``sum((X / sigma_x)^2) <= 1e250``: beyond it the quadratic forms overflow;
- ``sigma_x / sigma_a >= MIN_NOISE_RATIO``: below it the rank-one updates of
  ``M^-1`` (``M = Z^T Z + (sigma_x / sigma_a)^2 I``) lose all their digits;
- ``alpha * sum_i beta / (beta + i - 1) <= MAX_EXPECTED_FEATURES``: the prior
  expected number of features, which sets the samplers' cost and memory.

Feature matrices are bounded too (:func:`check_feature_matrix`): at most
``MAX_FEATURES`` non-empty columns, since ``M`` is ``K x K``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import astuple, dataclass

import numpy as np

from scipy.special import digamma, gammaln, poch

from ibp_lab._checks import MAX_PARAMETER, MIN_PARAMETER, check_binary_matrix, check_positive

__all__ = [
    "MIN_DISCOUNT",
    "MAX_DISCOUNT",
    "check_discount_in_support",
    "log_stable_class_law",
    "check_beta_discount",
    "check_discount",
    "MIN_SCALE",
    "MIN_NOISE_RATIO",
    "MAX_EXPECTED_FEATURES",
    "MAX_FEATURES",
    "Hyperparameters",
    "DataScale",
    "harmonic",
    "new_dish_rate",
    "stable_new_dish_rate",
    "stable_harmonic",
    "alpha_upper",
    "check_scales",
    "scales_allowed",
    "check_hyperparameters",
    "check_feature_matrix",
]

#: Smallest ``sigma_x`` or ``sigma_a`` accepted: below about 1e-154 a square underflows to 0.
MIN_SCALE = MIN_PARAMETER
#: Smallest sigma_x / sigma_a accepted: below it M^-1 and the predictive variances, updated
#: by rank-one steps, cancel to nothing.
MIN_NOISE_RATIO = 1e-3
#: Largest prior expected number of features alpha * sum_i beta / (beta + i - 1) accepted:
#: the samplers' cost grows like K^3 per sweep and their memory like K^2.
MAX_EXPECTED_FEATURES = 1000
#: Most features a sampler will hold (and the most columns a feature matrix may bring).
MAX_FEATURES = 2500
# Largest sum((X / sigma_x)^2) accepted: beyond it the quadratic forms overflow.
_LOG_MAX_SCALED_SUM_SQ = math.log(1e250)


@dataclass(frozen=True)
class Hyperparameters:
    """Validated ``alpha``, ``sigma_x``, ``sigma_a`` and ``beta``; unpacks in that order.

    ``discount`` (the three-parameter IBP's ``d``, default 0) is read by name: it is
    not unpacked, so the many ``alpha, sigma_x, sigma_a, beta = hyper`` of the
    two-parameter code stay as they are.

    Examples
    --------
    >>> alpha, sigma_x, sigma_a, beta = Hyperparameters(1.0, 0.5, 1.0, 1.0)
    >>> sigma_x
    0.5
    """

    alpha: float
    sigma_x: float
    sigma_a: float
    beta: float
    discount: float = 0.0

    def __iter__(self):
        return iter(astuple(self)[:4])


@dataclass(frozen=True)
class DataScale:
    """``max |x|`` and ``sum((X / max |x|)^2)``: enough to bound ``sum((X / s)^2)`` for any ``s``.

    Scaling by the largest entry first means no square overflows, whatever ``X``.
    """

    max_abs: float
    unit_sum_sq: float

    @classmethod
    def of(cls, X: np.ndarray) -> "DataScale":
        max_abs = float(np.max(np.abs(X))) if X.size else 0.0
        if max_abs == 0.0:
            return cls(0.0, 0.0)
        return cls(max_abs, float(np.sum(np.square(X / max_abs))))

    def too_large_for(self, sigma_x: float) -> bool:
        """Whether ``sum((X / sigma_x)^2)`` exceeds 1e250 (or overflows)."""
        if self.max_abs == 0.0:
            return False
        log_scaled = math.log(self.unit_sum_sq) + 2.0 * (math.log(self.max_abs) - math.log(sigma_x))
        return log_scaled > _LOG_MAX_SCALED_SUM_SQ


#: Up to this many rows :func:`harmonic` is summed term by term (exact to rounding);
#: beyond it the digamma closed form costs O(1) whatever the number of rows.
_DIRECT_SUM_ROWS = 2**16


def harmonic(n_rows: int, beta: float) -> float:
    """``sum_{i=1}^N beta / (beta + i - 1)``: the prior's expected ``K+`` per unit of alpha.

    The one definition of this sum in the package: :func:`stable_harmonic` is it at
    ``discount = 0``, and the public face of ``E[K+]``,
    :func:`ibp_lab.models.prior.expected_num_features`, the samplers' doors, exact
    enumeration, the chain runner and the streaming limits call it. Arguments are trusted: ``n_rows >= 0`` an int, ``beta > 0`` a float. For more than
    ``2**16`` rows it is evaluated in closed form, ``beta * (digamma(beta + N) -
    digamma(beta))``, in constant time and memory.

    Examples
    --------
    >>> harmonic(2, 1.0)
    1.5
    >>> round(harmonic(10**12, 1.0), 4)  # log(1e12) + Euler's gamma
    28.2082
    """
    if n_rows <= _DIRECT_SUM_ROWS:
        return float(np.sum(beta / (beta + np.arange(n_rows))))
    # With N > 2**16 the two digammas differ by about log(1 + N / beta), far more than
    # their rounding: against the direct sum the relative difference is below 1e-13 for
    # every beta in [1e-100, 1e6].
    return float(beta * (digamma(beta + n_rows) - digamma(beta)))


def new_dish_rate(alpha: float, beta: float, n_seated):
    """``alpha beta / (beta + n)``: the Poisson rate of the new dishes of customer ``n + 1``.

    ``n_seated`` customers sit at the buffet already (an int, or an array of them: the
    rate is then computed elementwise). The one definition of this rate in the package:
    :func:`stable_new_dish_rate` is it at ``discount = 0``, its public face is
    :func:`ibp_lab.models.prior.new_dish_rate`, and ``ibp_lab._kernel.new_dish_rate`` is
    this very function compiled. Arguments are trusted.

    Examples
    --------
    >>> new_dish_rate(2.0, 1.0, 0), new_dish_rate(2.0, 1.0, 3)
    (2.0, 0.5)
    """
    return alpha * beta / (beta + n_seated)


def stable_new_dish_rate(alpha: float, beta: float, discount: float, n_seated):
    """The three-parameter (stable) IBP's rate of new dishes for customer ``n_seated + 1``.

    ``alpha Gamma(1 + beta) Gamma(n + beta + discount) / (Gamma(n + 1 + beta)
    Gamma(beta + discount))`` with ``n = n_seated`` (Teh & Gorur 2009). With
    ``discount = 0`` it is :func:`new_dish_rate` itself (the same floating-point
    result), which stays the one compiled definition; this function is plain NumPy
    (``gammaln``), so the compiled kernel is untouched. Arguments are trusted:
    ``0 <= discount < 1`` and ``beta > -discount``.

    Examples
    --------
    >>> stable_new_dish_rate(2.0, 1.0, 0.0, 3) == new_dish_rate(2.0, 1.0, 3)
    True
    >>> round(float(stable_new_dish_rate(2.0, 1.0, 0.5, 0)), 6)  # the first customer: alpha
    2.0
    """
    if discount == 0.0:
        return new_dish_rate(alpha, beta, n_seated)
    log_ratio = (gammaln(1.0 + beta) + gammaln(n_seated + beta + discount)
                 - gammaln(n_seated + 1.0 + beta) - gammaln(beta + discount))
    return alpha * np.exp(log_ratio)


def stable_harmonic(n_rows: int, beta: float, discount: float) -> float:
    """``E[K+] / alpha`` of the three-parameter IBP: the sum of its new-dish rates over ``N`` rows.

    With ``discount = 0`` it is :func:`harmonic`. Otherwise the rates telescope
    (the chapter on the beta process derives it)::

        sum_{i=1}^N rate_i / alpha
            = (Gamma(1 + beta) Gamma(N + beta + d) / (Gamma(beta + d) Gamma(N + beta)) - beta) / d

    which is used beyond ``2**16`` rows (``poch`` keeps ``Gamma(N + beta + d) /
    Gamma(N + beta)`` accurate for large ``N``); below, the rates are summed. It
    grows like ``N^d``. Arguments are trusted as in :func:`stable_new_dish_rate`.

    Examples
    --------
    >>> stable_harmonic(3, 1.0, 0.0) == harmonic(3, 1.0)
    True
    >>> round(stable_harmonic(2, 1.0, 0.5), 6)  # 1 + Gamma(2) Gamma(2.5) / (Gamma(3) Gamma(1.5))
    1.75
    """
    if discount == 0.0:
        return harmonic(n_rows, beta)
    if n_rows <= _DIRECT_SUM_ROWS:
        return float(np.sum(stable_new_dish_rate(1.0, beta, discount, np.arange(n_rows))))
    growth = np.exp(gammaln(1.0 + beta) - gammaln(beta + discount)) * poch(n_rows + beta, discount)
    return float((growth - beta) / discount)


#: Smallest positive discount accepted: below it ``(Gamma ratio - beta) / d`` in
#: :func:`ibp_lab._hyper.stable_harmonic` cancels to noise for very many rows.
MIN_DISCOUNT = 1e-8
#: Largest discount the slice steps propose: 1 - d must keep its digits in Gamma(1 - d).
MAX_DISCOUNT = 1.0 - 1e-9


def check_beta_discount(beta, discount) -> tuple[float, float]:
    """Validated ``(beta, discount)``: ``0 <= discount < 1`` and ``beta > -discount``.

    With ``discount = 0`` the check of ``beta`` is the two-parameter one
    (``beta must be > 0``), message included. Shared with
    :mod:`ibp_lab.models.beta_process`.

    Examples
    --------
    >>> check_beta_discount(-0.2, 0.5)
    (-0.2, 0.5)
    >>> check_beta_discount(-0.5, 0.5)
    Traceback (most recent call last):
    ...
    ValueError: beta must be > -discount = -0.5 when discount > 0, got -0.5
    """
    discount = check_positive("discount", discount, allow_zero=True, upper=None)
    if discount >= 1.0:
        raise ValueError(f"discount must be < 1 (0 <= discount < 1), got {discount}")
    if discount == 0.0:
        return check_positive("beta", beta), 0.0
    if discount < MIN_DISCOUNT:
        raise ValueError(f"discount must be 0 or >= {MIN_DISCOUNT:g}, got {discount:g}")
    if isinstance(beta, np.ndarray) and beta.ndim == 0:
        beta = beta[()]
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise TypeError(f"beta must be a real number, got {type(beta).__name__}")
    beta = float(beta)
    if not np.isfinite(beta):
        raise ValueError(f"beta must be finite, got {beta}")
    if beta <= -discount:
        raise ValueError(f"beta must be > -discount = {-discount:g} when discount > 0, got {beta:g}")
    if beta > MAX_PARAMETER:
        raise ValueError(f"beta must be <= {MAX_PARAMETER:g}, got {beta:g}")
    # beta + discount near 0 makes Gamma(beta + discount) overflow: keep it >= MIN_PARAMETER
    check_positive("beta + discount", beta + discount)
    return beta, discount


def check_discount(n_rows: int, alpha: float, beta: float, discount) -> float:
    """The samplers' door for ``discount``: ``0 <= d < 1`` (:func:`check_beta_discount`),
    with ``alpha`` and ``beta`` already validated, and the three-parameter prior's expected
    ``K+`` on ``n_rows`` rows within the samplers' limit ``MAX_EXPECTED_FEATURES``.

    Examples
    --------
    >>> check_discount(10, 1.0, 1.0, 0.5)
    0.5
    >>> check_discount(1000, 20.0, 1.0, 0.9)
    Traceback (most recent call last):
    ...
    ValueError: discount = 0.9 makes the prior expect 1.16e+04 features for 1000 rows (alpha = 20), more than the samplers' limit of 1000; use a smaller discount or alpha
    """
    _, discount = check_beta_discount(beta, discount)
    if discount == 0.0:
        return 0.0
    expected = alpha * stable_harmonic(n_rows, beta, discount)
    if expected > MAX_EXPECTED_FEATURES:
        raise ValueError(
            f"discount = {discount:g} makes the prior expect {expected:.3g} features for "
            f"{n_rows} rows (alpha = {alpha:g}), more than the samplers' limit of "
            f"{MAX_EXPECTED_FEATURES}; use a smaller discount or alpha")
    return discount


def check_discount_in_support(discount) -> float:
    discount = check_positive("discount", discount, allow_zero=True, upper=None)
    if not MIN_DISCOUNT <= discount <= MAX_DISCOUNT:
        raise ValueError(f"discount must be in [{MIN_DISCOUNT:g}, 1 - 1e-9] (the support of "
                         f"its prior), got {discount!r}")
    return discount


def log_stable_class_law(m: np.ndarray, n_rows: int, k_plus: int, log_duplicates: float,
                         alpha: float, beta: float, discount: float, weights=None) -> float:
    """``log P([Z])``, the IBP's class probability, from its statistics: the one formula.

    The three-parameter law (Teh & Gorur 2009), of which the two-parameter one is the
    ``discount = 0`` case::

        K+ log alpha - sum_h log K_h! - alpha H_N(beta, d)
            + sum_k log[Gamma(1 + beta) Gamma(m_k - d) Gamma(N - m_k + beta + d)
                        / (Gamma(1 - d) Gamma(beta + d) Gamma(N + beta))]

    with ``alpha H_N(beta, d)`` the prior's ``E[K+]`` (:func:`stable_harmonic`). At
    ``discount = 0`` each feature's factor is written ``beta B(m_k, N - m_k + beta)``
    (``Gamma(1 + beta) / Gamma(beta) = beta`` exactly, and ``log alpha + log beta``, not
    ``log(alpha beta)``, which can underflow). Its public face is
    :func:`ibp_lab.models.prior.log_prior`; :mod:`ibp_lab.inference.hyperposterior`
    evaluates it many times; ``ibp_lab._kernel.class_log_prior`` is its compiled mirror,
    which ``tests/models/test_prior.py`` checks against the public face.

    ``m`` holds the features' numbers of owners, or (with ``weights``) distinct numbers
    of owners, ``weights[j]`` features having ``m[j]`` owners: the sum over features is
    then a sum over distinct counts (thousands of features, a few distinct counts).
    ``log_duplicates = sum_h log K_h!``. Arguments are trusted.

    Examples
    --------
    One row owning two features: the class is fixed by ``K+ ~ Poisson(alpha)``.

    >>> from scipy.stats import poisson
    >>> m = np.array([1.0, 1.0])
    >>> law = log_stable_class_law(m, 1, 2, math.log(2.0), 1.5, 1.0, 0.0)
    >>> bool(np.isclose(law, poisson(1.5).logpmf(2)))
    True
    """
    if discount == 0.0:
        log_rate = np.log(alpha) + np.log(beta)
        per_feature = gammaln(m) + gammaln(n_rows - m + beta) - gammaln(n_rows + beta)
    else:
        log_rate = np.log(alpha)
        log_levy = gammaln(1.0 + beta) - gammaln(1.0 - discount) - gammaln(beta + discount)
        per_feature = (log_levy + gammaln(m - discount) + gammaln(n_rows - m + beta + discount)
                       - gammaln(n_rows + beta))
    total = np.sum(per_feature) if weights is None else float(weights @ per_feature)
    return float(k_plus * log_rate - log_duplicates
                 - alpha * stable_harmonic(n_rows, beta, discount) + total)


def alpha_upper(n_rows: int, beta: float) -> float:
    """Largest ``alpha`` accepted for ``n_rows`` rows: ``MAX_EXPECTED_FEATURES / H``, at most
    ``MAX_PARAMETER``.

    Examples
    --------
    >>> alpha_upper(1, 1.0)
    1000.0
    """
    return min(MAX_PARAMETER, MAX_EXPECTED_FEATURES / harmonic(n_rows, beta))


def _scale_problem(scale: DataScale, sigma_x: float, sigma_a: float, name: str = "X") -> str | None:
    """Why the (already positive, finite) scales are refused for these data, or None.

    ``name`` is the caller's name for the data (``X_train``, ``X_test``), so that the
    message points at the argument the caller actually passed.
    """
    for scale_name, value in (("sigma_x", sigma_x), ("sigma_a", sigma_a)):
        if value < MIN_SCALE:
            return f"{scale_name} must be >= {MIN_SCALE:g}, got {value:g}"
    if scale.too_large_for(sigma_x):
        return (
            f"{name} is too large for sigma_x = {sigma_x:g}: sum(({name} / sigma_x)^2) overflows; "
            "rescale the data (for example divide X by its standard deviation)"
        )
    return None


def check_scales(X: np.ndarray, sigma_x: float, sigma_a: float, *, name: str = "X") -> None:
    """Refuse scales whose squares underflow and data that overflow once divided by sigma_x.

    ``X``, ``sigma_x`` and ``sigma_a`` must already be validated arrays and floats;
    ``name`` is the caller's name for ``X``, used in the message.

    Examples
    --------
    >>> check_scales(np.array([[1e200]]), 1e-100, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: X is too large for sigma_x = 1e-100: sum((X / sigma_x)^2) overflows; rescale the data (for example divide X by its standard deviation)
    """
    problem = _scale_problem(DataScale.of(X), sigma_x, sigma_a, name)
    if problem:
        raise ValueError(problem)


def _ratio_problem(sigma_x: float, sigma_a: float) -> str | None:
    if sigma_x / sigma_a < MIN_NOISE_RATIO:
        return (
            f"sigma_x / sigma_a must be >= {MIN_NOISE_RATIO:g}, got {sigma_x / sigma_a:.3g}: "
            "below it the sampler's rank-one updates lose all precision"
        )
    return None


def scales_allowed(scale: DataScale, sigma_x: float, sigma_a: float) -> bool:
    """Whether :func:`check_hyperparameters` would accept these scales for these data.

    The Metropolis updates of the scales give a proposal outside this set zero
    density: the scales' priors are truncated to where the samplers are accurate.

    Examples
    --------
    >>> scale = DataScale.of(np.ones((2, 2)))
    >>> scales_allowed(scale, 0.5, 1.0), scales_allowed(scale, 1e-4, 1.0)
    (True, False)
    """
    return (
        MIN_SCALE <= sigma_x <= MAX_PARAMETER
        and MIN_SCALE <= sigma_a <= MAX_PARAMETER
        and _scale_problem(scale, sigma_x, sigma_a) is None
        and _ratio_problem(sigma_x, sigma_a) is None
    )


def check_hyperparameters(
    X: np.ndarray, alpha, sigma_x, sigma_a, beta=1.0, *, name: str = "X"
) -> Hyperparameters:
    """Check the model's hyperparameters against each other and the (validated) data ``X``.

    The one door of every sampler, move, enumeration and held-out scorer of the
    linear-Gaussian IBP (see the module docstring for the limits).

    Parameters
    ----------
    X : numpy.ndarray
        ``(N, D)`` data, already through :func:`ibp_lab._checks.check_data_matrix`.
    alpha, sigma_x, sigma_a, beta
        The hyperparameters.
    name : str, optional
        The caller's name for ``X`` (``"X_train"``, say), used in the messages.

    Returns
    -------
    Hyperparameters

    Examples
    --------
    >>> check_hyperparameters(np.zeros((3, 2)), 1.0, 0.5, 1.0)
    Hyperparameters(alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0, discount=0.0)
    >>> check_hyperparameters(np.zeros((3, 2)), 1.0, 1e-4, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: sigma_x / sigma_a must be >= 0.001, got 0.0001: below it the sampler's rank-one updates lose all precision
    """
    alpha = check_positive("alpha", alpha)
    sigma_x = check_positive("sigma_x", sigma_x)
    sigma_a = check_positive("sigma_a", sigma_a)
    beta = check_positive("beta", beta)
    problem = _scale_problem(DataScale.of(X), sigma_x, sigma_a, name) or _ratio_problem(sigma_x, sigma_a)
    if problem:
        raise ValueError(problem)
    expected = alpha * harmonic(X.shape[0], beta)
    if expected > MAX_EXPECTED_FEATURES:
        raise ValueError(
            f"alpha = {alpha:g} makes the prior expect {expected:.3g} features for "
            f"{X.shape[0]} rows, more than the sampler's limit of {MAX_EXPECTED_FEATURES}; "
            "use a smaller alpha"
        )
    return Hyperparameters(alpha, sigma_x, sigma_a, beta)


def check_feature_matrix(name: str, Z, *, n_rows: int) -> np.ndarray:
    """A binary ``int8`` matrix with ``n_rows`` rows, its empty columns dropped, at most
    ``MAX_FEATURES`` columns left.

    Examples
    --------
    >>> check_feature_matrix("Z", [[1, 0], [1, 0]], n_rows=2)
    array([[1],
           [1]], dtype=int8)
    """
    Z = check_binary_matrix(name, Z, n_rows=n_rows)
    Z = np.ascontiguousarray(Z[:, Z.any(axis=0)], dtype=np.int8)
    if Z.shape[1] > MAX_FEATURES:
        raise ValueError(
            f"{name} must have at most MAX_FEATURES = {MAX_FEATURES} non-empty columns, "
            f"got {Z.shape[1]}"
        )
    return Z
