"""Self-check of a student's annealed importance sampler against the exact evidence (chapter 8)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ibp_lab.inference import exact, smc
from ibp_lab.teaching.exercises._common import (as_number, call, check_function, check_time_limit,
                                       verdict_for, within_time_limit)
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement, fail
from ibp_lab.teaching.exercises._stats import FALSE_ALARM, z_threshold

__all__ = ["check_ais"]

EXERCISE = "annealed importance sampling"
SIGNATURE = "ais(X, n_particles, rng, alpha, sigma_x, sigma_a, ladder) -> log evidence"
#: The variational chapter's tiny rows and hyperparameters (exact evidence by enumeration).
X_TINY = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
HYPER = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)
#: Independent runs, particles per run, and the ladder's steps.
N_RUNS, N_PARTICLES, N_STEPS = 100, 20, 10
SEED = 20_281


def check_ais(fn, *, time_limit: float = 120) -> ExerciseResult:
    """Check a student's AIS estimate of ``log p(X)`` against enumeration on three rows.

    ``fn(X, n_particles, rng, alpha, sigma_x, sigma_a, ladder)`` must return one
    estimate of ``log p(X | alpha, sigma_x, sigma_a)`` (``beta = 1``) by annealed
    importance sampling along ``ladder`` (increasing from 0 to 1): ``n_particles``
    draws from the IBP prior, each moved along the ladder by tempered Gibbs sweeps
    and weighted by ``p(X | Z)^(b_t - b_{t-1})`` at every step, the estimate the log of
    the mean weight. It is called :data:`N_RUNS` times with independent generators;
    ``exp(estimate - log p(X))`` must then average 1 within ``z`` standard errors (``z``
    the two-sided normal quantile at the exercises' false-alarm rate 1e-3, the error
    from the runs' own spread), because the mean weight is an unbiased estimate of ``p(X)``. The verdict
    says which way a wrong answer misses, and the usual reason.

    Parameters
    ----------
    fn : callable
        The student's sampler.
    time_limit : float, optional
        Seconds the whole check may take (default 120).

    Returns
    -------
    ExerciseResult

    Raises
    ------
    TypeError
        If ``fn`` is not callable.

    Examples
    --------
    >>> from ibp_lab.inference import smc
    >>> def ais(X, n_particles, rng, alpha, sigma_x, sigma_a, ladder):
    ...     return smc.run_ais(X, n_particles, rng, alpha=alpha, sigma_x=sigma_x,
    ...                        sigma_a=sigma_a, inverse_temperatures=ladder).log_evidence
    >>> bool(check_ais(ais))
    True
    """
    check_function("fn", fn, SIGNATURE)
    limit = check_time_limit(time_limit)
    return within_time_limit(EXERCISE, limit, "sampler", _judge, fn)


def _judge(fn) -> ExerciseResult:
    """The check itself, run under the time limit."""
    ladder = smc.power_ladder(N_STEPS)
    estimates = []
    for rng in np.random.default_rng(SEED).spawn(N_RUNS):
        out, problem = call(fn, X_TINY.copy(), N_PARTICLES, rng, **HYPER, ladder=ladder.copy())
        value, bad = (None, problem) if problem else as_number(out)
        if bad:
            return fail(EXERCISE, verdict_for(bad, f"on run {len(estimates) + 1}"))
        estimates.append(value)
    log_p = exact.log_evidence(X_TINY, **HYPER, k_max=12)
    estimates = np.array(estimates)
    ratio = np.exp(np.clip(estimates - log_p, -700.0, 700.0))
    se = float(ratio.std(ddof=1) / np.sqrt(N_RUNS))
    tolerance = z_threshold(1, FALSE_ALARM) * se
    measurements = (Measurement("mean of exp(estimate - log p(X))", float(ratio.mean()), 1.0,
                                tolerance),
                    Measurement("mean estimate of log p(X)", float(estimates.mean()), log_p))
    if np.ptp(estimates) == 0:
        return fail(EXERCISE, "Your sampler returned the same number on every run: an "
                    "estimate from random draws varies with the generator (use rng).",
                    measurements)
    if measurements[0].ok:
        return ExerciseResult(EXERCISE, True, (
            f"Your estimates average {ratio.mean():.3f} times the exact p(X) over {N_RUNS} "
            f"runs (within {tolerance:.3f}): consistent with an unbiased estimate of the "
            "evidence."), measurements)
    direction = "above" if ratio.mean() > 1 else "below"
    jensen = ("" if ratio.mean() > 1 else "; the mean of the log weights instead of the log "
              "of the mean weight (Jensen's inequality puts that below log p(X))")
    # the log of the mean ratio: signed the same way as `direction`, unlike the mean of
    # the log estimates (which Jensen's inequality pulls down)
    log_mean_ratio = float(logsumexp(estimates - log_p) - np.log(N_RUNS))
    hint = (f"{direction} the exact evidence: their mean, as an estimate of p(X), is "
            f"{abs(log_mean_ratio):.3g} nats off. The usual reasons: a weight of p(X | Z)^b_t at each step instead of "
            "p(X | Z)^(b_t - b_{t-1}); the weight of a step computed after that step's move "
            f"instead of before it; a start that is not a draw from the IBP prior{jensen}")
    return fail(EXERCISE, f"Your estimates are {hint}.", measurements)
