"""The (stable) beta process behind the IBP: its atoms above a threshold, and Bernoulli rows.

A beta process with mass ``alpha``, concentration ``beta`` and discount ``d``
(Hjort 1990; Thibaux & Jordan 2007; the stable version of Teh & Gorur 2009) is a
completely random measure: a countable set of atoms whose weights ``pi`` in (0, 1)
form a Poisson process with intensity (the Levy measure)::

    nu(pi) = c pi^(-1 - d) (1 - pi)^(beta + d - 1),
    c = alpha Gamma(1 + beta) / (Gamma(1 - d) Gamma(beta + d))

(with ``d = 0``: ``alpha beta pi^-1 (1 - pi)^(beta - 1)``). Infinitely many atoms
are small, so a draw keeps the atoms above a ``threshold`` ``eps``: their number is
Poisson(:func:`expected_atoms_above`) and their weights are independent with
density proportional to ``nu`` on ``[eps, 1)``. The atoms left out hold, in
expectation, :func:`expected_mass_below` ``= alpha I_eps(1 - d, beta + d)`` of
weight (``I`` the regularised incomplete beta function); all atoms together hold
``alpha``. Rows are Bernoulli processes: row ``i`` owns atom ``k`` with probability
``pi_k``, independently (:func:`bernoulli_process_rows`). Integrating the beta
process out gives the (three-parameter) IBP of :mod:`ibp_lab.models.prior`.

- :func:`sample_beta_process`: the atoms above a threshold, as a
  :class:`BetaProcessAtoms`;
- :func:`bernoulli_process_rows`: rows given the atoms' weights;
- :func:`threshold_for_rows`: the largest threshold that loses at most ``tol``
  expected ownerships among ``n`` rows.

Hyperparameters are keyword-only here (``alpha`` too), as everywhere outside the
building blocks of the contract table (docs/design.md, section 3).

Examples
--------
>>> rng = np.random.default_rng(0)
>>> atoms = sample_beta_process(0.01, rng, alpha=2.0, discount=0.5)
>>> Z = bernoulli_process_rows(atoms.weights, 5, rng)
>>> Z.shape == (5, atoms.weights.size), round(atoms.expected_mass_below, 3)
(True, 0.254)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import integrate
from scipy.special import betainc, betaincinv, gammaln

from ibp_lab._checks import (MAX_ENTRIES, Checked, Count, Generator, Joint, Positive,
                             check_positive, check_real_array, check_size, validated)
from ibp_lab._hyper import check_beta_discount

__all__ = [
    "BetaProcessAtoms",
    "MAX_ATOMS",
    "levy_constant",
    "expected_atoms_above",
    "expected_mass_below",
    "threshold_for_rows",
    "sample_beta_process",
    "bernoulli_process_rows",
]

#: Most atoms one draw may expect: ``d`` near 1 with a tiny threshold asks for ``eps^-d``.
MAX_ATOMS = 10**7
# Rounds of the rejection sampler before it gives up (each accepts over a quarter).
_MAX_REJECTION_ROUNDS = 200


@dataclass(frozen=True)
class BetaProcessAtoms:
    """The atoms of one beta-process draw above a threshold (from :func:`sample_beta_process`).

    Attributes
    ----------
    weights : numpy.ndarray
        ``(K,)`` atom weights in ``[threshold, 1)``, in decreasing order (read-only).
    threshold : float
        Atoms below it were not drawn.
    expected_atoms_above : float
        ``E[K]``, the mean of the Poisson number of atoms drawn.
    expected_mass_below : float
        Expected total weight of the atoms left out: each row misses that many
        ownerships on average.
    alpha, beta, discount : float
        The process.
    """

    weights: np.ndarray
    threshold: float
    expected_atoms_above: float
    expected_mass_below: float
    alpha: float
    beta: float
    discount: float


def _check_threshold(name: str, threshold) -> float:
    threshold = check_positive(name, threshold)
    if threshold >= 1.0:
        raise ValueError(f"{name} must be < 1 (atom weights lie in (0, 1)), got {threshold}")
    return threshold


#: The process's parameters, checked as every door checks them: alpha, then beta and the
#: discount together (the discount first).
_PROCESS = dict(alpha=Positive(),
                beta_discount=Joint(check_beta_discount, "beta", "discount",
                                    sets=("beta", "discount")))
#: ... and a threshold in (0, 1), checked after them.
_PROCESS_ABOVE = dict(_PROCESS, threshold=Checked(_check_threshold))


def _check_tol(tol: float, n: int, alpha: float) -> None:
    if tol >= n * alpha:
        raise ValueError(f"tol must be < n * alpha = {n * alpha:g} (all ownerships), got {tol:g}")


def _check_weights(name: str, weights) -> np.ndarray:
    weights = check_real_array(name, weights)
    if weights.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {weights.shape}")
    if not np.all((weights >= 0) & (weights <= 1)):  # also refuses NaN
        raise ValueError(f"{name} must lie in [0, 1]")
    return weights


def _log_levy_constant(alpha: float, beta: float, discount: float) -> float:
    return float(np.log(alpha) + gammaln(1.0 + beta) - gammaln(1.0 - discount) - gammaln(beta + discount))


@validated(**_PROCESS)
def levy_constant(*, alpha: float, beta: float = 1.0, discount: float = 0.0) -> float:
    """``c = alpha Gamma(1 + beta) / (Gamma(1 - d) Gamma(beta + d))``, the Levy measure's constant.

    With ``d = 0`` it is ``alpha beta``. It makes ``int pi nu(pi) d pi = alpha``.

    Examples
    --------
    >>> levy_constant(alpha=2.0, beta=3.0)
    6.0
    """
    return float(np.exp(_log_levy_constant(alpha, beta, discount)))


def _split_point(threshold: float, b: float) -> float:
    """Where the lower piece (proposal ``pi^(-1-d)``) meets the upper one (``(1-pi)^(b-1)``).

    At ``min(1/2, 1/b)`` both envelopes stay within a factor of about 4 of the
    density, so each rejection step accepts with probability above about 1/4.
    """
    return max(threshold, min(0.5, 1.0 / b))


@lru_cache(maxsize=256)  # a pure function of three floats; repeated draws reuse it
def _piece_integrals(threshold: float, b: float, d: float) -> tuple[float, float, float]:
    """``(h, L, U)``: the split point and ``int pi^(-1-d) (1-pi)^(b-1)`` below and above it."""
    h = _split_point(threshold, b)
    lower = 0.0
    if h > threshold:
        # int pi^(-1-d) exactly, plus the bounded remainder pi^(-1-d) ((1-pi)^(b-1) - 1),
        # integrated over t = log pi where it is smooth.
        power = np.log(h / threshold) if d == 0 else (threshold ** -d - h ** -d) / d
        remainder = integrate.quad(
            lambda t: np.exp(-d * t) * np.expm1((b - 1.0) * np.log1p(-np.exp(t))),
            np.log(threshold), np.log(h), limit=200, epsabs=0.0, epsrel=1e-11)[0]
        lower = power + remainder
    # s = (1 - pi)^b turns (1 - pi)^(b-1) d pi into ds / b; the integrand is then bounded.
    upper = integrate.quad(lambda s: (1.0 - s ** (1.0 / b)) ** (-1.0 - d),
                           0.0, (1.0 - h) ** b, limit=200, epsabs=0.0, epsrel=1e-11)[0] / b
    return h, lower, upper


@validated(**_PROCESS_ABOVE)
def expected_atoms_above(threshold: float, *, alpha: float, beta: float = 1.0,
                         discount: float = 0.0) -> float:
    """Expected number of atoms with weight at least ``threshold``: ``int_eps^1 nu(pi) d pi``.

    Parameters
    ----------
    threshold : float
        ``eps``, in (0, 1).
    alpha, beta, discount : float
        Mass (> 0), concentration (> ``-discount``), discount (``0 <= d < 1``).

    Returns
    -------
    float

    Examples
    --------
    With ``beta = 1`` and ``d = 0`` the Levy measure is ``alpha / pi``:

    >>> bool(np.isclose(expected_atoms_above(0.01, alpha=2.0), 2.0 * np.log(100.0)))
    True
    """
    _, lower, upper = _piece_integrals(threshold, beta + discount, discount)
    return float(np.exp(_log_levy_constant(alpha, beta, discount)) * (lower + upper))


@validated(**_PROCESS_ABOVE)
def expected_mass_below(threshold: float, *, alpha: float, beta: float = 1.0,
                        discount: float = 0.0) -> float:
    """Expected total weight of the atoms below ``threshold``: ``alpha I_eps(1 - d, beta + d)``.

    ``int_0^eps pi nu(pi) d pi`` is ``c B(1 - d, beta + d)`` times the regularised
    incomplete beta function, and ``c B(1 - d, beta + d) = alpha``. It is the
    expected number of ownerships per row that a draw truncated at ``eps`` misses.

    Examples
    --------
    >>> round(expected_mass_below(0.01, alpha=2.0), 6)  # d = 0, beta = 1: alpha eps
    0.02
    """
    return float(alpha * betainc(1.0 - discount, beta + discount, threshold))


@validated(n=Count(minimum=1), **_PROCESS, tol=Positive(),
           tol_below=Joint(_check_tol, "tol", "n", "alpha"))
def threshold_for_rows(n: int, *, alpha: float, beta: float = 1.0, discount: float = 0.0,
                       tol: float = 1e-3) -> float:
    """The largest threshold whose left-out atoms cost ``n`` rows at most ``tol`` ownerships.

    Solves ``n * expected_mass_below(eps) = tol`` by the inverse incomplete beta
    function. A row that owns a left-out atom is the only way a truncated draw's
    rows can differ from the untruncated ones, so ``tol`` also bounds the total
    variation between the two laws of the rows (Markov's inequality).

    Parameters
    ----------
    n : int
        Rows, >= 1.
    alpha, beta, discount : float
        The process.
    tol : float, optional
        Expected ownerships lost over all ``n`` rows, in (0, ``n * alpha``).

    Returns
    -------
    float

    Examples
    --------
    >>> round(threshold_for_rows(10, alpha=2.0, tol=0.01), 6)  # alpha eps n = tol
    0.0005
    """
    return float(betaincinv(1.0 - discount, beta + discount, tol / (n * alpha)))


def _sample_lower(size: int, threshold: float, h: float, b: float, d: float, rng) -> np.ndarray:
    """``size`` draws with density proportional to ``pi^(-1-d) (1-pi)^(b-1)`` on ``[eps, h)``."""
    envelope = 1.0 if b >= 1.0 else (1.0 - h) ** (b - 1.0)  # the largest (1-pi)^(b-1) there
    out = np.empty(0)
    for _ in range(_MAX_REJECTION_ROUNDS):
        if out.size >= size:
            break
        u = rng.random(2 * (size - out.size) + 8)
        if d == 0.0:
            pi = threshold * (h / threshold) ** u  # inverse CDF of 1/pi on [eps, h)
        else:
            pi = (threshold ** -d - u * (threshold ** -d - h ** -d)) ** (-1.0 / d)
        keep = rng.random(pi.size) * envelope < (1.0 - pi) ** (b - 1.0)
        out = np.concatenate([out, pi[keep]])
    return _enough(out, size)


def _sample_upper(size: int, h: float, b: float, d: float, rng) -> np.ndarray:
    """``size`` draws with density proportional to ``pi^(-1-d) (1-pi)^(b-1)`` on ``[h, 1)``."""
    out = np.empty(0)
    top = (1.0 - h) ** b
    for _ in range(_MAX_REJECTION_ROUNDS):
        if out.size >= size:
            break
        s = top * rng.random(2 * (size - out.size) + 8)  # s = (1 - pi)^b is uniform
        pi = 1.0 - s ** (1.0 / b)
        keep = rng.random(pi.size) < (h / pi) ** (1.0 + d)  # pi^(-1-d) over its largest value
        out = np.concatenate([out, pi[keep]])
    return _enough(out, size)


def _enough(draws: np.ndarray, size: int) -> np.ndarray:
    if draws.size < size:  # acceptance is above 1/4 per proposal: not reached in practice
        raise RuntimeError("the rejection sampler of the atom weights did not finish")
    return draws[:size]


@validated(**_PROCESS_ABOVE, rng=Generator())
def sample_beta_process(threshold: float, rng: np.random.Generator, *, alpha: float,
                        beta: float = 1.0, discount: float = 0.0) -> BetaProcessAtoms:
    """Draw the atoms of a (stable) beta process whose weights are at least ``threshold``.

    The number of atoms is Poisson(:func:`expected_atoms_above`); each weight is
    drawn exactly, by rejection from two pieces of the Levy measure (below a split
    point the proposal is ``pi^(-1-d)``, above it ``(1 - pi)^(beta+d-1)``, both
    inverted in closed form; each accepts more than about a quarter of its
    proposals). Where the atoms sit (the base measure) does not matter for the
    rows and is not drawn.

    Parameters
    ----------
    threshold : float
        ``eps`` in (0, 1); see :func:`threshold_for_rows` to choose it.
    rng : numpy.random.Generator
    alpha : float
        Mass, > 0: each row owns Poisson(``alpha``) atoms when nothing is truncated.
    beta : float, optional
        Concentration, > ``-discount``.
    discount : float, optional
        Discount ``d``, ``0 <= d < 1``.

    Returns
    -------
    BetaProcessAtoms

    Raises
    ------
    ValueError
        Also when the draw would expect more than :data:`MAX_ATOMS` atoms.

    Examples
    --------
    >>> atoms = sample_beta_process(1e-3, np.random.default_rng(1), alpha=3.0, beta=2.0)
    >>> bool(np.all(np.diff(atoms.weights) <= 0) and atoms.weights.min() >= 1e-3)
    True
    """
    b = beta + discount
    h, lower, upper = _piece_integrals(threshold, b, discount)
    c = float(np.exp(_log_levy_constant(alpha, beta, discount)))
    mean = c * (lower + upper)
    check_size("the beta process's atoms above the threshold", mean + 10.0 * np.sqrt(mean),
               names=("threshold", "discount"), limit=MAX_ATOMS,
               hint="use a larger threshold (see threshold_for_rows)")
    # The atoms of a Poisson process on two disjoint pieces are two independent Poissons.
    n_lower, n_upper = rng.poisson(c * lower), rng.poisson(c * upper)
    weights = np.concatenate([_sample_lower(n_lower, threshold, h, b, discount, rng),
                              _sample_upper(n_upper, h, b, discount, rng)])
    weights = np.sort(weights)[::-1].copy()
    weights.setflags(write=False)
    return BetaProcessAtoms(weights, threshold, mean,
                            float(alpha * betainc(1.0 - discount, b, threshold)),
                            alpha, beta, discount)


@validated(weights=Checked(_check_weights), n=Count(), rng=Generator())
def bernoulli_process_rows(weights, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows of a Bernoulli process: row ``i`` owns atom ``k`` with probability ``weights[k]``.

    Given the weights the rows are independent and identically distributed; this
    is why the IBP's rows are exchangeable (de Finetti).

    Parameters
    ----------
    weights : array_like
        ``(K,)`` atom weights in [0, 1].
    n : int
        Rows, >= 0; ``n * K`` at most :data:`ibp_lab._checks.MAX_ENTRIES`.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` ``int8``; columns may be empty.

    Examples
    --------
    >>> bernoulli_process_rows([1.0, 0.0], 3, np.random.default_rng(0)).tolist()
    [[1, 0], [1, 0], [1, 0]]
    """
    check_size("Z", float(n) * weights.size, names=("n", "weights"), limit=MAX_ENTRIES,
               hint="use fewer rows or fewer atoms")
    return (rng.random((n, weights.size)) < weights).astype(np.int8)
