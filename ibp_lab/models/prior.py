"""The Indian buffet process prior: one-, two- and three-parameter.

Three ways to draw a binary feature matrix ``Z`` (rows are data points or
"customers", columns are features or "dishes"):

- :func:`sample_ibp`: the buffet metaphor itself (Griffiths & Ghahramani 2005;
  the two-parameter version of Ghahramani, Griffiths & Sollich 2007);
- :func:`sample_stick_breaking`: the stick-breaking construction of Teh, Gorur &
  Ghahramani (2007), truncated at a fixed number of sticks;
- :func:`sample_finite_beta_bernoulli`: the finite beta-Bernoulli model whose
  limit is the IBP;
- :func:`sample_two_parameter_stick_breaking`: the stick-breaking construction of
  the beta process for any ``beta`` (Paisley, Zaas, Woods, Ginsburg & Carin 2010),
  in rounds, truncated at a fixed number of rounds.

And the quantities the book checks them against: :func:`log_prior` (the
probability of a left-ordered equivalence class), :func:`left_ordered`,
:func:`expected_num_features`, :func:`new_dish_rate`, :func:`expected_feature_popularity`
and :func:`expected_stick`. These are the package's public faces of the class prior,
``E[K+]`` and the new-dish rate; their formulas live in :mod:`ibp_lab._hyper`, which
every sampler shares.

Conventions: ``alpha > 0`` is the mass parameter (expected features per row),
``beta`` the concentration (``beta = 1`` is the one-parameter IBP), ``discount``
the three-parameter (stable) IBP's discount ``d`` of Teh & Gorur (2009),
``0 <= d < 1``, with ``beta > -d`` (so ``beta > 0`` when ``d = 0``, the default,
whose results are exactly those of the two-parameter code);
matrices are ``int8`` arrays of 0 and 1.
"""

from __future__ import annotations

import numpy as np

from scipy.special import gammaln

from ibp_lab._checks import (
    MAX_ENTRIES,
    BinaryMatrix,
    Count,
    Generator,
    Joint,
    Positive,
    check_count,
    check_positive,
    check_size,
    validated,
)
from ibp_lab._hyper import (
    check_beta_discount,
    harmonic,
    log_stable_class_law,
    stable_harmonic,
    stable_new_dish_rate,
)

__all__ = [
    "sample_ibp",
    "left_ordered",
    "log_prior",
    "expected_num_features",
    "new_dish_rate",
    "expected_feature_popularity",
    "sample_stick_breaking",
    "expected_stick",
    "sample_finite_beta_bernoulli",
    "simulate_feature_counts",
    "finite_k_plus_pmf",
    "stick_truncation_level",
    "sample_two_parameter_stick_breaking",
    "stick_rounds_needed",
]

#: Most rows one simulation seats: each row is a step of a Python loop.
MAX_ROWS = 10**6
#: beta and discount, checked together (discount first), as every door of the prior does.
_BETA_DISCOUNT = Joint(check_beta_discount, "beta", "discount", sets=("beta", "discount"))


@validated(alpha=Positive())  # n and beta: their order depends on discount
def expected_num_features(alpha: float, n: int, *, beta: float = 1.0, discount: float = 0.0) -> float:
    """Expected number of non-empty columns ``E[K+]`` among ``n`` rows.

    ``K+`` is Poisson with mean ``alpha * sum_{i=1}^n beta / (beta + i - 1)``:
    every customer adds a Poisson number of new dishes (:func:`new_dish_rate`),
    independently. With a ``discount`` ``d > 0`` the rates are the three-parameter
    ones and the mean grows like ``n^d``. With ``alpha = 1`` it is the generalised
    harmonic number (``H_n`` for ``beta = 1``). For more than ``2**16`` rows it is
    evaluated in closed form, in constant time and memory. The package's one public
    face of ``E[K+]``: the formula is :func:`ibp_lab._hyper.stable_harmonic`.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Number of rows (customers), >= 0.
    beta : float, optional
        Concentration, > ``-discount`` (1 gives the one-parameter IBP).
    discount : float, optional
        Discount ``d``, ``0 <= d < 1`` (0: the two-parameter IBP).

    Returns
    -------
    float

    Examples
    --------
    >>> round(expected_num_features(2.0, 3), 4)  # 2 * (1 + 1/2 + 1/3)
    3.6667
    >>> round(expected_num_features(2.0, 2, discount=0.5), 4)  # 2 * (1 + 3/4)
    3.5
    >>> round(expected_num_features(1.0, 10**12), 4)  # H_n = log(1e12) + Euler's gamma
    28.2082
    """
    if discount == 0.0:  # the two-parameter path, exactly as before
        n = check_count("n", n)
        return alpha * harmonic(n, check_positive("beta", beta))
    beta, discount = check_beta_discount(beta, discount)
    n = check_count("n", n)
    return alpha * stable_harmonic(n, beta, discount)


@validated(alpha=Positive(), n=Count(), beta_discount=_BETA_DISCOUNT)
def new_dish_rate(alpha: float, n: int, *, beta: float = 1.0, discount: float = 0.0) -> float:
    """Poisson rate of the new dishes of the customer who arrives after ``n`` others.

    ``alpha beta / (beta + n)`` in the two-parameter IBP: customer ``i`` (counting from 1)
    has ``n = i - 1`` customers before it. With a ``discount`` ``d > 0`` it is the
    three-parameter rate ``alpha Gamma(1 + beta) Gamma(n + beta + d) / (Gamma(n + 1 +
    beta) Gamma(beta + d))`` (Teh & Gorur 2009). Summed over ``n = 0 .. N - 1`` it is
    :func:`expected_num_features` of ``N`` rows. The package's one public face of the
    rate: the formula is :func:`ibp_lab._hyper.stable_new_dish_rate`, which the
    samplers share (compiled in ``ibp_lab._kernel``).

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Customers already seated, >= 0.
    beta : float, optional
        Concentration, > ``-discount`` (1 gives the one-parameter IBP).
    discount : float, optional
        Discount ``d``, ``0 <= d < 1`` (0: the two-parameter IBP).

    Returns
    -------
    float

    Examples
    --------
    >>> new_dish_rate(2.0, 0), new_dish_rate(2.0, 3)  # the first customer; the fourth
    (2.0, 0.5)
    >>> bool(np.isclose(new_dish_rate(2.0, 2),
    ...                 expected_num_features(2.0, 3) - expected_num_features(2.0, 2)))
    True
    """
    return float(stable_new_dish_rate(alpha, beta, discount, n))


@validated(alpha=Positive(), n=Count(minimum=1, maximum=MAX_ENTRIES), beta_discount=_BETA_DISCOUNT)
def expected_feature_popularity(alpha: float, n: int, *, beta: float = 1.0,
                                discount: float = 0.0) -> np.ndarray:
    """``E[K_m]``, the expected number of features owned by exactly ``m`` of ``n`` rows.

    A feature of weight ``pi`` is owned by ``m`` rows with probability
    ``C(n, m) pi^m (1 - pi)^(n - m)``; integrating against the (stable) beta
    process's Levy measure gives::

        E[K_m] = alpha C(n, m) Gamma(1 + beta) Gamma(m - d) Gamma(n - m + beta + d)
                 / (Gamma(1 - d) Gamma(beta + d) Gamma(n + beta))

    For ``m << n`` it falls like ``m^(-1 - d)``: a power law when ``d > 0``.
    Summed over ``m`` it is :func:`expected_num_features`.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows, 1 to :data:`ibp_lab._checks.MAX_ENTRIES`.
    beta, discount : float, optional
        Concentration (> ``-discount``) and discount (``0 <= d < 1``).

    Returns
    -------
    numpy.ndarray
        ``(n,)``: entry ``m - 1`` is ``E[K_m]`` for ``m = 1, ..., n``.

    Examples
    --------
    >>> popularity = expected_feature_popularity(2.0, 5, discount=0.3)
    >>> bool(np.isclose(popularity.sum(), expected_num_features(2.0, 5, discount=0.3)))
    True
    """
    m = np.arange(1, n + 1, dtype=float)
    log_choose = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0)
    log_levy = gammaln(1.0 + beta) - gammaln(1.0 - discount) - gammaln(beta + discount)
    return alpha * np.exp(log_choose + log_levy + gammaln(m - discount)
                          + gammaln(n - m + beta + discount) - gammaln(n + beta))


@validated(alpha=Positive(), n=Count(maximum=MAX_ROWS), beta_discount=_BETA_DISCOUNT,
           rng=Generator())
def sample_ibp(alpha: float, n: int, rng: np.random.Generator, *, beta: float = 1.0,
               discount: float = 0.0) -> np.ndarray:
    """Draw ``Z`` from the (two- or three-parameter) IBP by the buffet metaphor.

    Customer ``i`` (1-based) takes each dish already tasted by ``m_k`` earlier
    customers with probability ``m_k / (beta + i - 1)``, then tries a
    Poisson(``alpha * beta / (beta + i - 1)``) number of new dishes. Columns are
    in order of creation (not left-ordered); every column is non-empty. With a
    ``discount`` ``d > 0`` (Teh & Gorur 2009) an old dish is taken with
    probability ``(m_k - d) / (beta + i - 1)`` and the new dishes are
    Poisson(:func:`ibp_lab._hyper.stable_new_dish_rate`); ``d = 0`` draws exactly
    the same numbers as the two-parameter code.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Number of customers (rows), 0 to :data:`MAX_ROWS` (10**6).
    rng : numpy.random.Generator
        Source of randomness.
    beta : float, optional
        Concentration, > ``-discount``.
    discount : float, optional
        Discount, ``0 <= discount < 1``.

    Raises
    ------
    ValueError
        Also when the matrix would likely exceed
        :data:`ibp_lab._checks.MAX_ENTRIES` (10**8) entries: ``n`` times a high
        quantile of ``K+`` is checked before anything is drawn.

    Returns
    -------
    numpy.ndarray
        ``(n, K+)`` array of dtype ``int8``.

    Examples
    --------
    >>> Z = sample_ibp(3.0, 5, np.random.default_rng(0))
    >>> Z.shape[0], Z.dtype, bool(Z.sum(axis=0).min() > 0)
    (5, dtype('int8'), True)
    """
    _check_matrix_size(alpha, n, beta, discount=discount)
    denominators = beta + np.arange(n)  # beta + i - 1 for customers i = 1..n
    # All new-dish counts can be drawn first: they do not depend on earlier choices.
    new_counts = rng.poisson(stable_new_dish_rate(alpha, beta, discount, np.arange(n)))
    first_owner_end = np.cumsum(new_counts)  # dishes created by customers 1..i
    Z = np.zeros((n, int(first_owner_end[-1]) if n else 0), dtype=np.int8)
    counts = np.zeros(Z.shape[1])
    for i in range(n):
        n_old = int(first_owner_end[i] - new_counts[i])
        if n_old:  # customer 1 has no old dishes, so beta <= 0 never divides here
            Z[i, :n_old] = rng.random(n_old) < (counts[:n_old] - discount) / denominators[i]
        Z[i, n_old : first_owner_end[i]] = 1
        counts += Z[i]
    return Z


def _check_matrix_size(
    alpha: float, n: int, beta: float, n_draws: int = 1, *, names: tuple[str, ...] = ("alpha", "n"),
    discount: float = 0.0,
) -> None:
    """Refuse IBP draws whose ``n x K+`` matrices would not fit in :data:`MAX_ENTRIES`.

    ``K+`` is Poisson with mean ``m =`` :func:`expected_num_features`; ``m + 10 sqrt(m) + 10``
    exceeds it with probability below 1e-20, so a request that passes cannot run out
    of the bound by bad luck. ``names`` are the caller's arguments that set the size,
    named in the refusal.
    """
    mean = alpha * stable_harmonic(n, beta, discount)
    k_high = mean + 10.0 * np.sqrt(mean) + 10.0
    check_size(
        "the feature matrices", float(n_draws) * n * k_high,
        names=names,
        hint="use a smaller alpha, fewer rows or fewer draws",
    )


@validated(Z=BinaryMatrix())
def left_ordered(Z) -> np.ndarray:
    """Sort the columns of ``Z`` into left-ordered form.

    Each column is read as a binary number with the first row as the most
    significant bit, and columns are sorted from the largest number to the
    smallest (Griffiths & Ghahramani's ``lof``). Empty columns end up last;
    identical columns stay adjacent. The result depends only on the multiset of
    columns, so two matrices that differ by a permutation of their columns have
    the same left-ordered form.

    Parameters
    ----------
    Z : array_like
        ``(n, K)`` binary matrix.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` ``int8`` matrix with its columns reordered.

    Examples
    --------
    >>> left_ordered([[0, 1, 1], [1, 0, 1]])
    array([[1, 1, 0],
           [1, 0, 1]], dtype=int8)
    """
    if Z.shape[1] == 0:
        return Z.copy()
    # lexsort's last key is the primary one: row 0 first, larger bits first.
    order = np.lexsort((1 - Z)[::-1])
    return Z[:, order]


@validated(Z=BinaryMatrix(), alpha=Positive(), beta_discount=_BETA_DISCOUNT)
def log_prior(Z, alpha: float, *, beta: float = 1.0, discount: float = 0.0) -> float:
    """Log probability of the left-ordered equivalence class of ``Z``.

    For the two-parameter IBP (Ghahramani, Griffiths & Sollich 2007)::

        P([Z]) = (alpha beta)^K+ / prod_h K_h!
                 * exp(-alpha sum_{i=1}^N beta / (beta + i - 1))
                 * prod_k B(m_k, N - m_k + beta)

    where ``m_k`` is the number of rows owning feature ``k``, ``K_h`` counts
    the columns that are identical to one another (one count per distinct
    non-zero column), and ``B`` is the Beta function. With ``beta = 1`` this is
    the one-parameter formula of Griffiths & Ghahramani (2011, eq. 14). All-zero
    columns are not features and are ignored.

    With a ``discount`` ``d > 0`` it is the three-parameter class probability
    (Teh & Gorur 2009; derived in the book's chapter on the beta process)::

        P([Z]) = alpha^K+ / prod_h K_h! * exp(-alpha S_N)
                 * prod_k Gamma(1 + beta) Gamma(m_k - d) Gamma(N - m_k + beta + d)
                          / (Gamma(1 - d) Gamma(beta + d) Gamma(N + beta))

    with ``alpha S_N`` the sum of the new-dish rates,
    :func:`expected_num_features`. At ``d = 0`` the product is
    ``beta B(m_k, N - m_k + beta)``, the formula above.

    The package's one public face of the class prior: the formula, from ``K+``, the
    numbers of owners and ``sum_h log K_h!``, is :func:`ibp_lab._hyper.log_stable_class_law`.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary matrix, ``N >= 1``.
    alpha, beta : float
        Mass (> 0) and concentration (> 0, or > ``-discount``).
    discount : float, optional
        Discount, ``0 <= discount < 1``.

    Returns
    -------
    float

    Examples
    --------
    With one row, the class is fixed by ``K+`` and its probability is Poisson:

    >>> from scipy.stats import poisson
    >>> bool(np.isclose(log_prior(np.ones((1, 2)), 1.5), poisson(1.5).logpmf(2)))
    True
    >>> bool(np.isclose(log_prior(np.ones((1, 2)), 1.5, discount=0.4), poisson(1.5).logpmf(2)))
    True
    """
    n_rows = Z.shape[0]
    if n_rows == 0:
        raise ValueError("Z must have at least one row, got 0")
    Z = Z[:, Z.any(axis=0)]
    m = Z.sum(axis=0).astype(float)
    k_plus = Z.shape[1]
    if k_plus:
        _, multiplicities = np.unique(Z, axis=1, return_counts=True)
        log_duplicates = float(np.sum(gammaln(multiplicities + 1.0)))
    else:
        log_duplicates = 0.0
    return log_stable_class_law(m, n_rows, k_plus, log_duplicates, alpha, beta, discount)


@validated(alpha=Positive(), n=Count(), truncation=Count(minimum=1), rng=Generator())
def sample_stick_breaking(
    alpha: float, n: int, rng: np.random.Generator, *, truncation: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``Z`` from the one-parameter IBP by truncated stick-breaking.

    Feature probabilities in decreasing order are ``pi_k = nu_1 ... nu_k`` with
    ``nu_j ~ Beta(alpha, 1)`` (Teh, Gorur & Ghahramani 2007); then
    ``z_ik ~ Bernoulli(pi_k)``. Everything beyond ``truncation`` sticks is
    dropped; :func:`expected_stick` says how much that loses.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Number of rows, >= 0.
    rng : numpy.random.Generator
    truncation : int, optional
        Number of sticks kept, >= 1; ``n * truncation`` is at most
        :data:`ibp_lab._checks.MAX_ENTRIES` (10**8).

    Returns
    -------
    Z : numpy.ndarray
        ``(n, truncation)`` ``int8`` matrix; columns may be empty.
    pi : numpy.ndarray
        ``(truncation,)`` decreasing feature probabilities.

    Examples
    --------
    >>> Z, pi = sample_stick_breaking(2.0, 4, np.random.default_rng(1), truncation=6)
    >>> Z.shape, bool(np.all(np.diff(pi) <= 0))
    ((4, 6), True)
    """
    check_size("Z", float(n) * truncation, names=("n", "truncation"), hint="use fewer rows or a lower truncation")
    # log space: products of many sticks underflow long before they matter less than 1e-300.
    # A tiny alpha can draw a stick of exactly 0; its log is -inf and every later pi is 0,
    # which is the right value, so the divide-by-zero warning is noise.
    with np.errstate(divide="ignore"):
        pi = np.exp(np.cumsum(np.log(rng.beta(alpha, 1.0, size=truncation))))
    Z = (rng.random((n, truncation)) < pi).astype(np.int8)
    return Z, pi


@validated(alpha=Positive())
def expected_stick(alpha: float, k) -> np.ndarray | float:
    """Expected ``k``-th stick ``E[pi_(k)] = (alpha / (1 + alpha))^k``.

    Since ``E[nu_j] = alpha / (1 + alpha)`` and the ``nu_j`` are independent, the
    expectation of their product is the product of expectations. Summed over
    ``j > K`` it bounds the expected number of ownerships a truncation at ``K``
    loses per row: ``alpha (alpha / (1 + alpha))^K``.

    Examples
    --------
    >>> expected_stick(1.0, 3)
    0.125
    """
    k_arr = np.asarray(k)
    if not np.issubdtype(k_arr.dtype, np.integer) or np.any(k_arr < 0):
        raise ValueError(f"k must be a non-negative integer (or array of them), got {k!r}")
    out = (alpha / (1.0 + alpha)) ** k_arr
    return float(out) if out.ndim == 0 else out


@validated(alpha=Positive(), n=Count(), n_features=Count(minimum=1), beta=Positive(),
           rng=Generator())
def sample_finite_beta_bernoulli(
    alpha: float, n: int, n_features: int, rng: np.random.Generator, *, beta: float = 1.0
) -> np.ndarray:
    """Draw ``Z`` from the finite beta-Bernoulli model with ``n_features`` columns.

    ``pi_k ~ Beta(alpha beta / K, beta)`` and ``z_ik ~ Bernoulli(pi_k)``. As
    ``K -> infinity`` the distribution of the non-empty columns converges to the
    (two-parameter) IBP.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows, >= 0.
    n_features : int
        Number of columns ``K``, >= 1; ``n * n_features`` is at most
        :data:`ibp_lab._checks.MAX_ENTRIES` (10**8).
    rng : numpy.random.Generator
    beta : float, optional
        Concentration, > 0.

    Returns
    -------
    numpy.ndarray
        ``(n, n_features)`` ``int8``; columns may be empty.

    Examples
    --------
    >>> sample_finite_beta_bernoulli(2.0, 3, 10, np.random.default_rng(0)).shape
    (3, 10)
    """
    check_size("Z", float(n) * n_features, names=("n", "n_features"), hint="use fewer rows or fewer features")
    pi = rng.beta(alpha * beta / n_features, beta, size=n_features)
    return (rng.random((n, n_features)) < pi).astype(np.int8)


@validated(alpha=Positive(), n=Count(minimum=1, maximum=MAX_ROWS), n_draws=Count(minimum=1),
           beta=Positive(), rng=Generator())
def simulate_feature_counts(
    alpha: float, n: int, n_draws: int, rng: np.random.Generator, *, beta: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate the IBP ``n_draws`` times and count features.

    Used to check the IBP's laws by simulation: ``K+`` should be Poisson with
    mean :func:`expected_num_features`, and each row's number of features
    Poisson(``alpha``) whatever its position.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows per draw, 1 to :data:`MAX_ROWS`.
    n_draws : int
        Number of independent matrices, >= 1; ``n * n_draws`` is at most
        ``10 * MAX_ROWS`` (each row is a step of a loop) and the matrices must
        fit the same bound as in :func:`sample_ibp`.
    rng : numpy.random.Generator
    beta : float, optional
        Concentration, > 0.

    Returns
    -------
    k_plus : numpy.ndarray
        ``(n_draws,)`` number of non-empty columns of each draw.
    per_row : numpy.ndarray
        ``(n_draws, n)`` number of features owned by each row of each draw.

    Examples
    --------
    >>> k_plus, per_row = simulate_feature_counts(2.0, 10, 5, np.random.default_rng(0))
    >>> k_plus.shape, per_row.shape
    ((5,), (5, 10))
    """
    # Every draw seats n customers one by one in Python: bound the rows in total too.
    check_size("the draws", float(n) * n_draws, names=("n", "n_draws"), limit=MAX_ROWS * 10,
               hint="use fewer rows or fewer draws")
    _check_matrix_size(alpha, n, beta, n_draws, names=("alpha", "n", "n_draws"))
    k_plus = np.empty(n_draws, dtype=np.int64)
    per_row = np.empty((n_draws, n), dtype=np.int64)
    for d in range(n_draws):
        Z = sample_ibp(alpha, n, rng, beta=beta)
        k_plus[d] = Z.shape[1]
        per_row[d] = Z.sum(axis=1)
    return k_plus, per_row


@validated(alpha=Positive(), n=Count(), n_features=Count(minimum=1, maximum=MAX_ENTRIES),
           beta=Positive())
def finite_k_plus_pmf(alpha: float, n: int, n_features: int, *, beta: float = 1.0) -> np.ndarray:
    """Exact law of ``K+`` (non-empty columns) under the finite beta-Bernoulli model.

    Columns are independent, and a column is non-empty with probability
    ``q = 1 - E[(1 - pi)^n] = 1 - B(a, beta + n) / B(a, beta)`` with
    ``a = alpha beta / K``, so ``K+ ~ Binomial(K, q)``. As ``K`` grows this tends
    to the IBP's Poisson law (:func:`expected_num_features`).

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows, >= 0.
    n_features : int
        Number of columns ``K`` of the finite model, 1 to
        :data:`ibp_lab._checks.MAX_ENTRIES` (10**8).
    beta : float, optional
        Concentration, > 0.

    Returns
    -------
    numpy.ndarray
        ``(n_features + 1,)`` probabilities of ``K+ = 0, ..., K``.

    Examples
    --------
    >>> p = finite_k_plus_pmf(2.0, 10, 1000)
    >>> bool(np.isclose(p.sum(), 1.0)), round(float(p @ np.arange(p.size)), 2)
    (True, 5.84)
    """
    from scipy.special import betaln
    from scipy.stats import binom

    a = alpha * beta / n_features
    q = -np.expm1(betaln(a, beta + n) - betaln(a, beta))
    return binom(n_features, q).pmf(np.arange(n_features + 1))


@validated(alpha=Positive(), n=Count(minimum=1), tol=Positive())
def stick_truncation_level(alpha: float, n: int, *, tol: float = 0.01) -> int:
    """Smallest truncation ``K`` whose expected number of lost ownerships is below ``tol``.

    Sticks beyond ``K`` hold ``sum_{k > K} E[pi_(k)] = alpha (alpha / (1 + alpha))^K``
    expected ownerships per row (:func:`expected_stick`), so ``n`` rows lose
    ``n alpha (alpha / (1 + alpha))^K`` in expectation.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows, >= 1.
    tol : float, optional
        Largest expected number of ownerships lost over all ``n`` rows, > 0. It is an
        expected count, not a probability, so values above 1 are meaningful (lose at most
        1.5 ownerships on average); a ``tol`` of at least ``n * alpha`` gives 0.

    Returns
    -------
    int
        The truncation level ``K >= 0``.

    Examples
    --------
    >>> stick_truncation_level(1.0, 100, tol=0.01)
    14
    """
    ratio = alpha / (1.0 + alpha)
    return max(0, int(np.ceil(np.log(tol / (n * alpha)) / np.log(ratio))))


@validated(alpha=Positive(), n=Count(), beta_discount=_BETA_DISCOUNT,
           n_rounds=Count(minimum=1, maximum=10**4), rng=Generator())
def sample_two_parameter_stick_breaking(
    alpha: float, n: int, rng: np.random.Generator, *, beta: float = 1.0, n_rounds: int = 30,
    discount: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``Z`` from the two- or three-parameter IBP through a stick-breaking beta process.

    The construction of Paisley, Zaas, Woods, Ginsburg & Carin (2010): in round
    ``r = 1, 2, ...`` a Poisson(``alpha``) number of atoms is made, and each atom of
    round ``r`` gets the weight ``V_r prod_{l < r} (1 - V_l)`` with its own
    independent ``V_1, ..., V_r ~ Beta(1, beta)``: the ``r``-th piece broken off a
    stick of length one. The weights are those of a beta process with mass
    ``alpha`` and concentration ``beta``; rows are then Bernoulli processes,
    ``z_ik ~ Bernoulli(pi_k)``. Rounds beyond ``n_rounds`` are dropped; they hold
    ``alpha (beta / (1 + beta))^n_rounds`` expected weight, so each row loses that
    many ownerships on average (:func:`stick_rounds_needed`).

    With a ``discount`` ``d > 0`` the ``l``-th break is ``V_l ~ Beta(1 - d, beta + l d)``
    instead: the stable (three-parameter) beta process of Teh & Gorur (2009), by the
    construction of Broderick, Jordan & Pitman (2012), whose buffet is
    :func:`sample_ibp` with the same ``discount``. Its rounds shrink only like a power
    of ``r``, so many more are needed (:func:`stick_rounds_needed` with the discount).
    ``d = 0`` draws exactly the same numbers as the two-parameter code.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Number of rows, >= 0.
    rng : numpy.random.Generator
    beta : float, optional
        Concentration, > 0, or > ``-discount`` when ``discount > 0`` (any value:
        unlike :func:`sample_stick_breaking`, not only 1).
    n_rounds : int, optional
        Rounds kept, 1 to 10**4; the matrix's expected size ``n * alpha * n_rounds``
        is at most :data:`ibp_lab._checks.MAX_ENTRIES`.
    discount : float, optional
        ``0 <= discount < 1`` (see :func:`check_beta_discount`).

    Returns
    -------
    Z : numpy.ndarray
        ``(n, K)`` ``int8`` with ``K`` the number of atoms made; columns may be empty.
    pi : numpy.ndarray
        ``(K,)`` atom weights, round by round (not sorted).

    Examples
    --------
    >>> Z, pi = sample_two_parameter_stick_breaking(2.0, 4, np.random.default_rng(0), beta=3.0)
    >>> Z.shape == (4, pi.size), bool(np.all((pi > 0) & (pi < 1)))
    (True, True)
    """
    mean_atoms = alpha * n_rounds
    # the r breaks of a round-r atom: memory grows like alpha n_rounds^2 / 2
    check_size("the breaks", alpha * n_rounds * (n_rounds + 1) / 2.0,
               names=("alpha", "n_rounds"), hint="use fewer rounds")
    check_size("Z", float(max(n, 1)) * (mean_atoms + 10.0 * np.sqrt(mean_atoms) + 10.0),
               names=("alpha", "n", "n_rounds"), hint="use fewer rows, a smaller alpha or fewer rounds")
    atoms_per_round = rng.poisson(alpha, size=n_rounds)
    # log space: a weight is a product of up to n_rounds factors, which underflows early.
    with np.errstate(divide="ignore"):  # a break of exactly 1 gives log 0 = -inf: weight 0
        if discount == 0.0:
            log_weights = []
            for r, n_atoms in enumerate(atoms_per_round, start=1):
                breaks = rng.beta(1.0, beta, size=(n_atoms, r))
                log_weights.append(np.log(breaks[:, -1])
                                   + np.log1p(-breaks[:, :-1]).sum(axis=1))
            pi = np.exp(np.concatenate(log_weights))
        else:
            pi = np.exp(_stable_log_weights(atoms_per_round, beta, discount, rng))
    Z = (rng.random((n, pi.size)) < pi).astype(np.int8)
    return Z, pi


def _stable_log_weights(atoms_per_round: np.ndarray, beta: float, discount: float,
                        rng: np.random.Generator) -> np.ndarray:
    """Log weights of the three-parameter construction, every atom at once.

    Atom ``a`` of round ``r_a`` has breaks ``V_l ~ Beta(1 - d, beta + l d)``,
    ``l = 1..r_a``, drawn as one flat array (atom after atom); its log weight is
    ``log V_r + sum_{l < r} log(1 - V_l)``.
    """
    rounds = np.repeat(np.arange(1, atoms_per_round.size + 1), atoms_per_round)
    if rounds.size == 0:
        return np.zeros(0)
    starts = np.concatenate([[0], np.cumsum(rounds)[:-1]])
    levels = np.arange(rounds.sum()) - np.repeat(starts, rounds) + 1  # l within each atom
    breaks = rng.beta(1.0 - discount, beta + discount * levels)
    last = starts + rounds - 1
    log_rest = np.log1p(-breaks)
    log_rest[last] = 0.0  # the last break is the piece kept, not a remainder
    return np.log(breaks[last]) + np.add.reduceat(log_rest, starts)


@validated(alpha=Positive(), n=Count(minimum=1), beta_discount=_BETA_DISCOUNT,
           tol=Positive())
def stick_rounds_needed(alpha: float, n: int, *, beta: float = 1.0, tol: float = 0.01,
                        discount: float = 0.0) -> int:
    """Fewest rounds of :func:`sample_two_parameter_stick_breaking` that lose at most ``tol``.

    Round ``r`` holds ``alpha (1 / (1 + beta)) (beta / (1 + beta))^(r - 1)`` expected
    weight (``E[V] = 1 / (1 + beta)``, and the ``V`` are independent), so rounds
    beyond ``R`` hold ``alpha (beta / (1 + beta))^R`` and ``n`` rows lose ``n`` times
    that many ownerships in expectation. With a discount, ``E[1 - V_l] =
    (beta + l d) / (1 + beta + (l - 1) d)`` and rounds beyond ``R`` hold ``alpha``
    times the product of these for ``l = 1..R`` (the sum over rounds telescopes), which
    falls only like ``R^(-(1 - d) / d)``; a ``tol`` that needs more than 10**4 rounds is
    refused.

    Parameters
    ----------
    alpha : float
        Mass parameter, > 0.
    n : int
        Rows, >= 1.
    beta : float, optional
        Concentration, > 0 (> ``-discount`` when ``discount > 0``).
    tol : float, optional
        Largest expected number of ownerships lost over all ``n`` rows, > 0.
    discount : float, optional
        ``0 <= discount < 1``.

    Returns
    -------
    int
        The number of rounds, >= 1.

    Examples
    --------
    >>> stick_rounds_needed(2.0, 10, beta=1.0, tol=0.01)  # 20 * 2^-R <= 0.01
    11
    >>> stick_rounds_needed(2.0, 10, beta=1.0, tol=0.01, discount=0.5)  # 20 * 3 / (R + 3)
    5997
    """
    if discount > 0.0:
        levels = np.arange(1, 10**4 + 1)
        log_left = np.cumsum(np.log(beta + levels * discount)
                             - np.log(1.0 + beta + (levels - 1) * discount))
        enough = np.flatnonzero(np.log(n * alpha / tol) + log_left <= 1e-12)
        if enough.size == 0:
            raise ValueError(f"n={n}, alpha={alpha:g} and tol={tol:g} need more than 10**4 "
                             f"rounds at discount={discount:g}, beta={beta:g}: use fewer rows, "
                             "a smaller alpha or a larger tol")
        return int(enough[0] + 1)
    # log(beta / (1 + beta)) = -log1p(1 / beta), accurate for large beta
    needed = np.log(n * alpha / tol) / np.log1p(1.0 / beta)
    return max(1, int(np.ceil(needed - 1e-9)))
