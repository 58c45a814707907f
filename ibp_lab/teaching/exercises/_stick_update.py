"""Self-check of the coordinate-ascent update of one stick's ``q(v_k)`` (chapter 11)."""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from ibp_lab.inference.variational import VariationalIBP
from ibp_lab.teaching.exercises._common import (call, check_function, check_time_limit,
                                                verdict_for, within_time_limit)
from ibp_lab.teaching.exercises._exact_unit import TOLERANCE
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail

__all__ = ["check_stick_update"]

EXERCISE = "stick-breaking update of q(v_k)"
SIGNATURE = "update(nu, tau, k, alpha) -> (tau_k1, tau_k2)"
#: The data the package's fits run on: five rows in two dimensions, three sticks.
X_SMALL = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8], [0.3, 0.9], [1.1, 1.0]])
N_STICKS = 3
#: Iterations of the fits read: q(v) before iteration j is the fit's after j - 1.
ITERATIONS = (1, 2, 3)
ALPHAS = (0.8, 2.0)


def _package_fit(alpha: float, n_iter: int) -> VariationalIBP:
    """The package's fit, stopped after ``n_iter`` iterations (``tol=0``: never earlier)."""
    fit = VariationalIBP(alpha=alpha, sigma_x=0.5, sigma_a=1.0, n_features=N_STICKS,
                         family="stick_breaking", max_iter=n_iter, tol=0.0, rng=7).fit(X_SMALL)
    if fit.n_iter_ != n_iter:  # the cases below would pair the wrong q(v) with nu
        raise RuntimeError(f"the reference fit stopped after {fit.n_iter_} iterations, "
                           f"not {n_iter}")
    return fit


def _cases():
    """Inputs and the package's answer, read off fits of :class:`VariationalIBP`.

    One iteration ends with the update of every ``q(v_k)``, from the ``nu`` just fitted
    and the weights ``y`` of the ``q(v)`` the iteration started from: so the ``tau_``
    after ``j`` iterations is the update applied to that fit's ``nu`` and the ``tau_``
    after ``j - 1`` (the prior ``Beta(alpha, 1)`` for ``j = 1``).
    """
    cases = []
    for alpha in ALPHAS:
        before = np.tile([alpha, 1.0], (N_STICKS, 1))
        for n_iter in ITERATIONS:
            fit = _package_fit(alpha, n_iter)
            nu, after = fit.feature_probabilities_, fit.tau_
            cases += [dict(nu=nu, tau=before, k=k, alpha=alpha, package=after[k])
                      for k in range(N_STICKS)]
            before = after
    return cases


def _bound_terms(tau):
    """``E log v_m`` and ``b_m = E log(1 - v_m) + sum_{i<m} E log v_i`` under ``q(v)``."""
    total = digamma(tau[:, 0] + tau[:, 1])
    e_log_v = digamma(tau[:, 0]) - total
    e_log_1mv = digamma(tau[:, 1]) - total
    return e_log_v, e_log_1mv + np.concatenate([[0.0], np.cumsum(e_log_v)[:-1]])


def _update(nu, tau, k, alpha, *, prior=True, first=1, tau2_from=0, weights="best"):
    """The chapter's update, written out sum by sum; the keywords plant the usual mistakes.

    ``first``: where the inner sum of ``tau_k1`` starts, ``k + first`` (1 is right);
    ``tau2_from``: the first later column in ``tau_k2``, ``k + tau2_from`` (0 is right);
    ``weights``: ``"best"`` (``y_mi`` proportional to ``exp(b_i)``) or ``"uniform"``.
    """
    _, b = _bound_terms(tau)
    used = nu.sum(axis=0)
    unused = nu.shape[0] - used
    tau1 = (alpha if prior else 0.0) + used[k:].sum()
    tau2 = 1.0 if prior else 0.0
    for m in range(k, tau.shape[0]):
        if weights == "best":
            y = np.exp(b[:m + 1] - np.logaddexp.reduce(b[:m + 1]))
        else:
            y = np.full(m + 1, 1.0 / (m + 1))
        tau1 += unused[m] * y[k + first:m + 1].sum()
        if m >= k + tau2_from:
            tau2 += unused[m] * y[k]
    return np.array([tau1, tau2])


def _finite(nu, tau, k, alpha):
    used = nu[:, k].sum()
    return np.array([alpha + used, 1.0 + nu.shape[0] - used])


#: name -> the pair that mistake gives; "direct" is the chapter's formula without one
_MISTAKES = {
    "direct": lambda **kw: _update(**kw),
    "finite": _finite,
    "no prior": lambda **kw: _update(**kw, prior=False),
    "inner sum from k": lambda **kw: _update(**kw, first=0),
    "tau2 over m > k": lambda **kw: _update(**kw, tau2_from=1),
    "uniform weights": lambda **kw: _update(**kw, weights="uniform"),
    "swapped": lambda **kw: _update(**kw)[::-1],
}

_HINTS = {
    "finite": ("you wrote the finite family's update, (alpha + n_k, 1 + N - n_k). In the "
               "stick-breaking family v_k is a factor of every later pi_m: tau_k1 adds n_m "
               "for every m >= k and the weights y_mi (i = k+1..m) of the later columns' "
               "bounds, and tau_k2 collects (N - n_m) y_mk for m >= k"),
    "no prior": ("the prior is missing: start from Beta(alpha, 1), that is tau_k1 = alpha + "
                 "..., tau_k2 = 1 + ..."),
    "inner sum from k": ("in tau_k1 the inner sum of the weights starts at i = k; it starts "
                         "at i = k + 1 (y_mk belongs to E log(1 - v_k), in tau_k2)"),
    "tau2 over m > k": ("in tau_k2 the sum over columns starts after k; it starts at m = k "
                        "(column k's own bound has the weight y_kk on E log(1 - v_k))"),
    "uniform weights": ("your weights y are not the best ones for the current q(v): use "
                        "y_mi proportional to exp(b_i), i <= m, with b_i = E log(1 - v_i) + "
                        "sum_{l < i} E log v_l under Beta(tau)"),
    "swapped": "you returned (tau_k2, tau_k1): the first parameter belongs to v_k, the "
               "second to 1 - v_k",
}


def _describe(case) -> str:
    return (f"k = {case['k']} (counted from 0), alpha = {case['alpha']}, "
            f"tau = {np.round(case['tau'], 3).tolist()}")


def _as_pair(out) -> tuple[np.ndarray | None, str | None]:
    """The returned value as two finite floats, or what is wrong with it."""
    try:
        pair = np.asarray(out, dtype=float)
    except Exception:  # noqa: BLE001 - None, strings, huge integers and the like
        return None, f"it returned {type(out).__name__}, not a pair of numbers (tau_k1, tau_k2)"
    if pair.shape != (2,):
        return None, (f"it returned an array of shape {pair.shape}; return the pair "
                      "(tau_k1, tau_k2) of the new q(v_k)")
    if not np.isfinite(pair).all():
        return None, f"it returned {pair.tolist()}, not two finite numbers"
    return pair, None


def _student_pairs(update, cases):
    """The student's pair on every case, or the failed result of the first bad one."""
    pairs = []
    for case in cases:
        kwargs = {name: np.copy(case[name]) if isinstance(case[name], np.ndarray) else case[name]
                  for name in ("nu", "tau", "k", "alpha")}
        out, problem = call(update, **kwargs)
        pair, bad = (None, problem) if problem else _as_pair(out)
        if bad:
            return None, fail(EXERCISE, verdict_for(bad, f"on {_describe(case)}"))
        pairs.append(pair)
    return np.array(pairs), None


def _judge(update) -> ExerciseResult:
    cases = _cases()
    inputs = [{name: case[name] for name in ("nu", "tau", "k", "alpha")} for case in cases]
    package = np.array([case["package"] for case in cases])
    direct = np.array([_MISTAKES["direct"](**kw) for kw in inputs])
    scale = np.maximum(1.0, np.abs(package))
    if (np.abs(direct - package) / scale).max() > TOLERANCE:
        return fail(EXERCISE, "The package's update (VariationalIBP) and the chapter's "
                    "formula disagree on these cases: that is a bug of ibp_lab, not of your "
                    "function; please report it.")
    student, failed = _student_pairs(update, cases)
    if failed is not None:  # a result is falsy when it failed: test for None
        return failed
    errors = np.abs(student - package) / scale
    worst = int(np.argmax(errors.max(axis=1)))
    where = _describe(cases[worst])
    measurements = tuple(
        Measurement(f"{name} on {where}", float(student[worst, i]), float(package[worst, i]),
                    TOLERANCE * scale[worst, i])
        for i, name in enumerate(("tau_k1", "tau_k2")))
    if errors.max() <= TOLERANCE:
        return ExerciseResult(EXERCISE, True, "Your update agrees with the package's own "
                              "(VariationalIBP's tau_ one iteration later) and with the "
                              f"chapter's formula on all {len(cases)} cases.", measurements)
    for name, hint in _HINTS.items():
        wrong = np.array([_MISTAKES[name](**kw) for kw in inputs])
        if np.allclose(student, wrong, rtol=1e-8, atol=1e-8):
            return fail(EXERCISE, f"Your update: {hint}.", measurements)
    off = np.abs(student - package)[worst]
    return fail(EXERCISE, f"Your update is off by {off.max():.3g} on {where}: none of the "
                "usual mistakes explains it; compare each sum with the chapter's update of "
                "q(v_k).", measurements)


def check_stick_update(update, *, time_limit: float = 60) -> ExerciseResult:
    """Check a student's coordinate-ascent update of one stick's ``q(v_k)``.

    In the stick-breaking family of :class:`ibp_lab.inference.variational.VariationalIBP`,
    ``update(nu, tau, k, alpha)`` receives ``q(z) = Bernoulli(nu)`` (an ``(N, K)``
    array), the current ``q(v) = Beta(tau)`` (``(K, 2)``), a column ``k`` counted from 0
    and the IBP's ``alpha``, and returns the pair ``(tau_k1, tau_k2)`` of the updated
    ``q(v_k)``, with the weights ``y`` of the bound on ``E log(1 - pi_m)`` the best ones
    for the current ``tau``, held fixed. It is called (with keywords) on 18 cases read
    off the package's own fits (three sticks, two values of ``alpha``, the first three
    iterations), and compared with the package's ``tau_`` after the iteration; a value
    further than 1e-10 (relative) from it fails, and the verdict names the usual mistake
    (the finite family's update, the prior left out, a sum started one column off, weights
    ``y`` that are not the best ones, the two parameters swapped). The same cases are
    computed from the chapter's formula directly; should the package's update ever
    disagree with it, the verdict says that the fault is the package's.

    Parameters
    ----------
    update : callable
        The student's function.
    time_limit : float, optional
        Seconds the whole check may take (default 60).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``update`` is not callable.
    ValueError
        If ``time_limit`` is not a positive number of seconds up to a day.

    Examples
    --------
    >>> check_stick_update(_MISTAKES["direct"]).passed
    True
    >>> "finite family's update" in check_stick_update(_finite).verdict
    True
    """
    check_function("update", update, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "function", _judge, update)
