"""Self-check of the conditional of one entry in the slice sampler (the non-conjugate chapter)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ibp_lab.teaching.exercises._common import check_function, check_time_limit, within_time_limit
from ibp_lab.teaching.exercises._exact_unit import judge_exact
from ibp_lab.teaching.exercises._result import ExerciseResult

__all__ = ["check_slice_conditional"]

EXERCISE = "slice sampler's entry conditional"
SIGNATURE = "log_odds(X, Z, A, mu, n, k, sigma_x) -> log-odds of z_nk = 1 given the rest"
X_TINY = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])


def _states():
    """Two states of the sampler's step 4: represented features with their weights.

    The first has a feature two rows own, a singleton of row 1 whose weight is the
    smallest owned one, a singleton of row 2 with a large weight and two unowned sticks
    below and far below the smallest owned weight; the second owns no feature at all
    (then ``mu* = 1``). Every weight is above the slice, as in the sampler.
    """
    rng = np.random.default_rng(23)  # fixed: the same images on every run
    Z1 = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0]])
    mu1 = np.array([0.55, 0.3, 0.8, 0.2, 0.07])
    Z2 = np.zeros((3, 2), dtype=int)
    mu2 = np.array([0.45, 0.12])
    return [(Z1, rng.normal(0.0, 1.0, size=(5, 2)), mu1),
            (Z2, rng.normal(0.0, 1.0, size=(2, 2)), mu2)]


def _cases():
    """Every entry of both states, at two noise levels."""
    return [dict(X=X_TINY, Z=Z, A=A, mu=mu, n=n, k=k, sigma_x=sigma_x)
            for Z, A, mu in _states() for sigma_x in (0.6, 1.5)
            for n in range(Z.shape[0]) for k in range(Z.shape[1])]


def _log_joint(X, Z, A, mu, sigma_x):
    """``log p(Z | mu) + log p(X | Z, A) - log mu*(Z)``, up to terms free of ``Z``.

    The joint density of the entries, the represented weights and the slice is
    ``p(Z, mu) 1[s < mu*] / mu*`` times the likelihood; the weights' own density and the
    indicator (every represented weight is above ``s``) do not depend on ``Z``.
    """
    coins = np.sum(Z * np.log(mu) + (1 - Z) * np.log1p(-mu))
    resid = X - Z @ A
    owned = Z.any(axis=0)
    smallest = mu[owned].min() if owned.any() else 1.0
    return coins - np.sum(resid**2) / (2 * sigma_x**2) - np.log(smallest)


def _exact(X, Z, A, mu, n, k, sigma_x):
    """The log-odds from the joint density at both values of ``z_nk``."""
    on, off = np.array(Z), np.array(Z)
    on[n, k], off[n, k] = 1, 0
    return float(_log_joint(X, on, A, mu, sigma_x) - _log_joint(X, off, A, mu, sigma_x))


def _terms(X, Z, A, mu, n, k, sigma_x):
    """The three terms of the chapter's formula: prior, slice, likelihood."""
    prior = np.log(mu[k]) - np.log1p(-mu[k])
    other_owners = Z[:, k].sum() - Z[n, k]
    others = [np.log(mu[j]) for j in range(Z.shape[1]) if j != k and Z[:, j].any()]
    smallest_other = min(others, default=0.0)  # log mu* without feature k (log 1 if none)
    slice_term = 0.0 if other_owners else smallest_other - min(smallest_other, np.log(mu[k]))
    e0 = X[n] - Z[n] @ A + Z[n, k] * A[k]  # row n's residual with z_nk = 0
    likelihood = (e0 @ e0 - (e0 - A[k]) @ (e0 - A[k])) / (2 * sigma_x**2)
    return prior, slice_term, likelihood


def _only_if_empty(X, Z, A, mu, n, k, sigma_x):
    prior, slice_term, likelihood = _terms(X, Z, A, mu, n, k, sigma_x)
    return prior + (slice_term if Z[:, k].sum() == 0 else 0.0) + likelihood


_MISTAKES = {
    "exact": _exact,
    "no slice": lambda **kw: (lambda p, s, l: p + l)(*_terms(**kw)),
    "slice reversed": lambda **kw: (lambda p, s, l: p - s + l)(*_terms(**kw)),
    "only if empty": _only_if_empty,
    "no prior": lambda **kw: (lambda p, s, l: s + l)(*_terms(**kw)),
    "sign": lambda **kw: -_exact(**kw),
    "probability": lambda **kw: float(expit(_exact(**kw))),
}

_HINTS = {
    "no slice": ("the slice's term is missing: when no other row owns feature k, mu* "
                 "depends on z_nk, and the slice's density 1 / mu* adds "
                 "log mu*(z_nk = 0) - log mu*(z_nk = 1)"),
    "slice reversed": ("the slice's term has the wrong sign: owning a light feature lowers "
                       "mu* and raises the density 1 / mu*, so add log mu*(z_nk = 0) - "
                       "log mu*(z_nk = 1), which is >= 0"),
    "only if empty": ("you add the slice's term only when column k is empty, counting row "
                      "n itself: it applies whenever no row other than n owns feature k, "
                      "also when z_nk = 1 now"),
    "no prior": "the prior's term log(mu_k / (1 - mu_k)) is missing",
    "sign": ("your log-odds have the wrong sign: return log P(z_nk = 1 | rest) - "
             "log P(z_nk = 0 | rest)"),
    "probability": "you returned the probability; return the log-odds",
}


def _describe(case) -> str:
    return (f"n = {case['n']}, k = {case['k']}, Z = {np.asarray(case['Z']).tolist()}, "
            f"mu = {np.asarray(case['mu']).tolist()}, sigma_x = {case['sigma_x']}")


def check_slice_conditional(log_odds, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's conditional log-odds of one entry in the slice sampler's step 4.

    ``log_odds(X, Z, A, mu, n, k, sigma_x)`` receives the data, the entries ``Z`` of the
    represented features (``(N, K)``; a column no row owns is an unowned stick above the
    slice), their images ``A`` (``(K, D)``), their weights ``mu`` (``(K,)``, every one
    above the slice), an entry ``(n, k)`` and the noise scale, and returns
    ``log P(z_nk = 1 | rest) - log P(z_nk = 0 | rest)`` in the sampler of
    :mod:`ibp_lab.inference.slice_sampler`. It is called (with keywords) on every entry
    of two small states at two noise levels (42 cases); the exact value evaluates the
    joint density ``p(Z | mu) p(X | Z, A) / mu*`` at both values of ``z_nk``. A value
    further than 1e-10 (relative) from it fails, and the verdict names the usual mistake
    (the slice's term left out, reversed or added only to an empty column).

    Parameters
    ----------
    log_odds : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``log_odds`` is not callable.
    ValueError
        If ``time_limit`` is not a positive number of seconds up to a day.

    Examples
    --------
    >>> check_slice_conditional(_exact).passed
    True
    >>> "slice's term is missing" in check_slice_conditional(_MISTAKES["no slice"]).verdict
    True
    """
    check_function("log_odds", log_odds, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", judge_exact, EXERCISE, log_odds,
                             _cases(), _MISTAKES, _HINTS, _describe,
                             "Your log-odds agree with the joint density evaluated at both "
                             "values of z_nk on all {n} entries.", "log-odds of z_nk = 1")
