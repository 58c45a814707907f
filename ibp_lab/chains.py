"""Markov chains for the linear-Gaussian IBP: sweeps plus hyperparameter updates.

- :func:`run_chain` runs one chain of :func:`ibp_lab.gibbs.gibbs_sweep` with
  hyperparameter updates and returns a :class:`ChainResult`;
- :func:`run_chains` runs independent chains and returns an ``arviz.InferenceData``
  with the per-chain results.

Hyperparameters (in :func:`run_chain`, after each sweep): ``alpha`` has a
conjugate update, since ``P([Z] | alpha)`` is proportional to
``alpha^K+ exp(-alpha H)`` with ``H = sum_{i=1}^N beta / (beta + i - 1)``: with
a Gamma(a, b) prior (shape, rate) the posterior is Gamma(a + K+, b + H).
Every hyperparameter is kept inside the range that a fresh call accepts
(:func:`ibp_lab._hyper.check_hyperparameters`): the priors are truncated to it.
For ``alpha`` that is ``[1e-100, MAX_EXPECTED_FEATURES / H]``, and the conjugate
draw comes from the truncated Gamma (a prior with a tiny shape would otherwise
let ``alpha`` underflow to 0 while ``K+ = 0``, and a huge one ask for more
features than the sampler holds). ``sigma_a`` and ``sigma_x`` have HalfNormal(1) priors and are moved by
random-walk Metropolis on the log scale (the Jacobian ``sigma'/sigma`` enters
the acceptance ratio); their step sizes adapt during the first ``burn`` sweeps
only, so the kernel is fixed while samples are kept. Proposals with
``sigma_x / sigma_a < MIN_NOISE_RATIO`` (1e-3), where the rank-one algebra loses its
precision, or outside the range accepted for the data, are rejected: the priors
are truncated there, far from any posterior mass of real data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.special import gammainc, gammaincc, gammaincinv, gammainccinv

from ibp_lab._checks import MIN_PARAMETER, check_count, check_data_matrix, check_flag, check_positive, check_rng
from ibp_lab._hyper import DataScale, alpha_upper, check_feature_matrix, check_hyperparameters, harmonic, scales_allowed
from ibp_lab.gibbs import MAX_SWEEPS, _sweeps
from ibp_lab.linear_gaussian import _loglik_from_stats

__all__ = ["ChainResult", "run_chain", "run_chains"]

#: Most chains one call of run_chains runs.
MAX_CHAINS = 1000
# Most Metropolis steps per sweep for each scale (each costs a K x K factorisation).
_MAX_SCALE_STEPS = 10_000


def _check_hyper(X, alpha, sigma_x, sigma_a, beta):
    """The shared door (:func:`ibp_lab._hyper.check_hyperparameters`), unpacked."""
    return tuple(check_hyperparameters(X, alpha, sigma_x, sigma_a, beta))


def _check_sweeps(name: str, n_sweeps) -> int:
    return check_count(name, n_sweeps, minimum=1, maximum=MAX_SWEEPS)


@dataclass
class ChainResult:
    """What :func:`run_chain` returns.

    Attributes
    ----------
    trace : xarray.Dataset
        One entry per sweep along dimension ``draw`` (``draw = t`` is the state
        after sweep ``t + 1``; warm-up included): ``k_plus``, ``alpha``,
        ``sigma_x``, ``sigma_a``, ``log_likelihood`` (``log p(X | Z, sigma_x,
        sigma_a)``) and ``log_joint`` (``log_likelihood + log P([Z] | alpha,
        beta)``; the hyperparameters' priors are not included). All are
        label-free. ``trace.attrs`` records ``burn``, ``thin`` and ``beta``.
    samples : list of numpy.ndarray
        The kept ``Z`` (``int8``): sweeps with ``draw >= burn`` and
        ``(draw - burn) % thin == 0``.
    sample_draws : numpy.ndarray
        The ``draw`` of each kept sample.
    Z : numpy.ndarray
        The final state, to continue a chain (with the final hyperparameters below).
    alpha, sigma_x, sigma_a : float
        Final hyperparameter values.
    acceptance : dict
        Metropolis acceptance rate after warm-up of each updated scale
        (``"sigma_a"``, ``"sigma_x"``) and its final log-scale step size
        (``"sigma_a_step"``, ``"sigma_x_step"``).
    """

    trace: xr.Dataset
    samples: list[np.ndarray]
    sample_draws: np.ndarray
    Z: np.ndarray
    alpha: float
    sigma_x: float
    sigma_a: float
    acceptance: dict = field(default_factory=dict)

    @property
    def posterior_trace(self) -> xr.Dataset:
        """The trace at the kept draws only (after warm-up, thinned)."""
        return self.trace.sel(draw=self.sample_draws)


def _log_prior_class(Z, alpha, beta):
    from ibp_lab.prior import log_prior  # imported on use, like every sibling module

    return log_prior(Z, alpha, beta=beta) if Z.shape[0] else 0.0


def _check_alpha_prior(alpha_prior) -> tuple[float, float]:
    """``(shape, rate)`` of the Gamma prior on alpha, each a positive number."""
    if isinstance(alpha_prior, (str, bytes)) or not isinstance(alpha_prior, (Sequence, np.ndarray)) \
            or len(alpha_prior) != 2:
        raise ValueError(f"alpha_prior must be a (shape, rate) pair, got {alpha_prior!r}")
    return (check_positive("alpha_prior[0] (shape)", alpha_prior[0]),
            check_positive("alpha_prior[1] (rate)", alpha_prior[1]))


def _truncated_gamma(u: float, shape: float, rate: float, lower: float, upper: float) -> float:
    """The ``u``-quantile of Gamma(shape, rate) truncated to ``[lower, upper]``.

    Inverts the regularised incomplete gamma function on whichever tail keeps
    its digits: the lower one (``P``) when little mass lies below ``lower``, the
    upper one (``Q``) otherwise, so that a posterior with almost all its mass
    below ``lower`` (a tiny shape) is still resolved. If the range holds no mass
    at all in double precision, the truncated density is monotone on the range
    and falls off within a tiny fraction of it from the boundary next to the
    mass: that boundary is returned.
    """
    x_lo, x_hi = rate * lower, rate * upper
    p_lo = float(gammainc(shape, x_lo))
    if p_lo < 0.5:
        p_hi = float(gammainc(shape, x_hi))
        x = gammaincinv(shape, p_lo + u * (p_hi - p_lo)) if p_hi > p_lo else x_hi
    else:
        q_lo, q_hi = float(gammaincc(shape, x_lo)), float(gammaincc(shape, x_hi))
        # Q falls as x grows: the u-quantile leaves a share u of the range's mass below it
        x = gammainccinv(shape, q_lo - u * (q_lo - q_hi)) if q_lo > q_hi else x_lo
    x = float(x) / rate
    return min(max(x, lower), upper) if math.isfinite(x) else (lower if p_lo >= 0.5 else upper)


def _draw_alpha(rng: np.random.Generator, shape: float, rate: float, upper: float) -> float:
    """A draw of alpha from Gamma(shape, rate) truncated to ``[MIN_PARAMETER, upper]``.

    The accepted range of :func:`ibp_lab._hyper.check_hyperparameters`: below
    ``MIN_PARAMETER`` alpha underflows (a Gamma prior with a tiny shape puts most
    of its mass there while ``K+ = 0``), above ``upper`` the prior expects more
    features than the sampler holds. First an ordinary Gamma draw, kept if it is
    in range (always, at the book's settings); otherwise an exact draw from the
    truncated law by inversion. Both branches give the truncated law, so their
    mixture does too (a rejection sampler with one try, then inversion).
    """
    alpha = float(rng.gamma(shape, 1.0 / rate))
    if MIN_PARAMETER <= alpha <= upper:
        return alpha
    return _truncated_gamma(float(rng.random()), shape, rate, MIN_PARAMETER, upper)


def _metropolis_scale(rng, value, log_step, log_lik_now, log_lik_at):
    """One log-scale random-walk step for a HalfNormal(1) scale.

    Returns ``(value, log_likelihood, accepted)``.
    """
    proposal = value * math.exp(log_step * rng.standard_normal())
    log_lik_prop = log_lik_at(proposal)
    # target in log(sigma): likelihood x HalfNormal(1) density x Jacobian sigma
    log_ratio = (log_lik_prop - log_lik_now - 0.5 * (proposal**2 - value**2)
                 + math.log(proposal / value))
    if math.log(rng.random()) < log_ratio:
        return proposal, log_lik_prop, True
    return value, log_lik_now, False


def run_chain(
    X,
    n_sweeps: int,
    rng: np.random.Generator,
    *,
    Z0=None,
    alpha: float = 1.0,
    sigma_x: float = 0.25,
    sigma_a: float = 0.3,
    beta: float = 1.0,
    update_alpha: bool = True,
    update_sigma_a: bool = True,
    update_sigma_x: bool = False,
    alpha_prior: tuple[float, float] = (1.0, 1.0),
    thin: int = 1,
    burn: int = 0,
    n_scale_steps: int = 3,
    progress: bool = False,
) -> ChainResult:
    """Run one chain: Gibbs sweeps on ``Z`` plus hyperparameter updates.

    Each iteration: one :func:`gibbs_sweep`; then, if asked, a conjugate draw of
    ``alpha`` from Gamma(a + K+, b + sum_i beta / (beta + i - 1)); then
    ``n_scale_steps`` log-scale random-walk Metropolis steps for ``sigma_a`` and
    for ``sigma_x`` (HalfNormal(1) priors). Step sizes start at 0.1 and adapt
    towards an acceptance rate of 0.44 during the ``burn`` warm-up sweeps only.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data (the book centres the digits first).
    n_sweeps : int
        Number of sweeps, >= 1.
    rng : numpy.random.Generator
    Z0 : array_like, optional
        Starting ``Z``; default a single feature owned by every row.
    alpha, sigma_x, sigma_a : float, optional
        Starting (or fixed) hyperparameters, > 0. The defaults are the book's
        for the centred digits.
    beta : float, optional
        IBP concentration, > 0, held fixed.
    update_alpha, update_sigma_a, update_sigma_x : bool, optional
        Which hyperparameters to sample; the others stay fixed.
    alpha_prior : (float, float), optional
        Shape and rate of the Gamma prior on ``alpha``, each in ``[1e-100, 1e6]``;
        the prior is truncated to the alphas a call accepts (module docstring).
    thin, burn : int, optional
        Keep ``Z`` every ``thin`` sweeps after the first ``burn``.
    n_scale_steps : int, optional
        Metropolis steps per sweep for each updated scale, at most 10000.
        It must be >= 1 when ``update_sigma_a`` or
        ``update_sigma_x`` is true: with no step the scale never moves, so
        "updated" would be false and its acceptance rate 0/0. To hold the scales
        fixed, pass ``update_sigma_a=False`` (and ``update_sigma_x=False``); then
        0 is accepted.
    progress : bool, optional
        Show a tqdm progress bar.

    Returns
    -------
    ChainResult

    Examples
    --------
    >>> from ibp_lab.linear_gaussian import simulate
    >>> X, _, _ = simulate(30, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=6)
    >>> chain = run_chain(X, 50, np.random.default_rng(1), sigma_x=0.3, sigma_a=1.0,
    ...                   burn=20, thin=5)
    >>> sorted(chain.trace.data_vars)
    ['alpha', 'k_plus', 'log_joint', 'log_likelihood', 'sigma_a', 'sigma_x']
    >>> chain.trace.sizes["draw"], len(chain.samples), chain.sample_draws[:3]
    (50, 6, array([20, 25, 30]))
    """
    X = check_data_matrix("X", X)
    n_sweeps = _check_sweeps("n_sweeps", n_sweeps)
    rng = check_rng(rng)
    alpha, sigma_x, sigma_a, beta = _check_hyper(X, alpha, sigma_x, sigma_a, beta)
    flags = {name: check_flag(name, value) for name, value in (
        ("update_alpha", update_alpha), ("update_sigma_a", update_sigma_a),
        ("update_sigma_x", update_sigma_x), ("progress", progress))}
    thin = check_count("thin", thin, minimum=1)
    burn = check_count("burn", burn, maximum=n_sweeps - 1)
    n_scale_steps = check_count("n_scale_steps", n_scale_steps, maximum=_MAX_SCALE_STEPS)
    if n_scale_steps == 0 and (flags["update_sigma_a"] or flags["update_sigma_x"]):
        # zero steps would report a NaN (0/0) acceptance for a scale that never moved
        raise ValueError(
            "n_scale_steps must be >= 1 when update_sigma_a or update_sigma_x is True, got 0; "
            "to hold the scales fixed pass update_sigma_a=False and update_sigma_x=False")
    prior_shape, prior_rate = _check_alpha_prior(alpha_prior)
    N, D = X.shape
    Z = np.ones((N, 1), np.int8) if Z0 is None else check_feature_matrix("Z0", Z0, n_rows=N)

    h_n = harmonic(N, beta)
    alpha_max = alpha_upper(N, beta)
    data_scale = DataScale.of(X)
    sum_sq = float(np.sum(X * X))
    names = ["k_plus", "alpha", "sigma_x", "sigma_a", "log_likelihood", "log_joint"]
    records = {name: np.empty(n_sweeps) for name in names}
    samples, sample_draws = [], []
    scales = {"sigma_a": flags["update_sigma_a"], "sigma_x": flags["update_sigma_x"]}
    log_steps = {name: math.log(0.1) for name in scales}
    accepted = {name: 0 for name in scales}
    tried = {name: 0 for name in scales}

    iterator = range(n_sweeps)
    if flags["progress"]:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="Gibbs sweeps")
    for t in iterator:
        Z, _, _ = _sweeps(X, Z, alpha, sigma_x, sigma_a, beta, 1, rng)
        k_plus = Z.shape[1]
        if flags["update_alpha"]:
            alpha = _draw_alpha(rng, prior_shape + k_plus, prior_rate + h_n, alpha_max)
        Zf = Z.astype(np.float64)
        ztz, ztx = Zf.T @ Zf, Zf.T @ X
        log_lik = _loglik_from_stats(ztz, ztx, sum_sq, N, D, sigma_x, sigma_a)
        for _ in range(n_scale_steps):
            for name, active in scales.items():
                if not active:
                    continue
                # a proposal outside the sampler's accurate range has zero density
                if name == "sigma_a":
                    sigma_a, log_lik, ok = _metropolis_scale(
                        rng, sigma_a, math.exp(log_steps[name]), log_lik,
                        lambda s: (_loglik_from_stats(ztz, ztx, sum_sq, N, D, sigma_x, s)
                                   if scales_allowed(data_scale, sigma_x, s) else -math.inf))
                else:
                    sigma_x, log_lik, ok = _metropolis_scale(
                        rng, sigma_x, math.exp(log_steps[name]), log_lik,
                        lambda s: (_loglik_from_stats(ztz, ztx, sum_sq, N, D, s, sigma_a)
                                   if scales_allowed(data_scale, s, sigma_a) else -math.inf))
                if t < burn:
                    # Robbins-Monro: diminishing adaptation towards 44% acceptance, warm-up only
                    log_steps[name] += (float(ok) - 0.44) / math.sqrt(t + 1.0)
                else:
                    accepted[name] += ok
                    tried[name] += 1
        for name, value in zip(names, [k_plus, alpha, sigma_x, sigma_a, log_lik,
                                       log_lik + _log_prior_class(Z, alpha, beta)]):
            records[name][t] = value
        if t >= burn and (t - burn) % thin == 0:
            samples.append(Z.copy())
            sample_draws.append(t)

    trace = xr.Dataset(
        {name: ("draw", records[name].astype(np.int64) if name == "k_plus" else records[name])
         for name in names},
        coords={"draw": np.arange(n_sweeps)},
        attrs={"burn": burn, "thin": thin, "beta": beta},
    )
    acceptance = {}
    for name, active in scales.items():
        if active:
            # tried > 0 here: n_scale_steps >= 1 (checked above) and burn < n_sweeps
            acceptance[name] = accepted[name] / tried[name]
            acceptance[f"{name}_step"] = math.exp(log_steps[name])
    return ChainResult(trace, samples, np.array(sample_draws, dtype=np.int64), Z, alpha,
                       sigma_x, sigma_a, acceptance)


def run_chains(X, n_chains: int, n_sweeps: int, rng: np.random.Generator, *, Z0=None,
               **options):
    """Run independent chains and collect their traces for ArviZ.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data.
    n_chains : int
        Number of chains, >= 1.
    n_sweeps : int
        Sweeps per chain.
    rng : numpy.random.Generator
        Parent generator: chain ``c`` uses ``rng.spawn(n_chains)[c]``, so the
        chains are independent and the whole run is reproducible from one seed.
    Z0 : array_like or list of array_like, optional
        One starting ``Z`` for every chain, or a list (or tuple) of matrices,
        one per chain (useful to start chains far apart).
    **options
        Passed to :func:`run_chain` (``alpha``, ``sigma_x``, ``burn``, ...).

    Returns
    -------
    idata : arviz.InferenceData
        ``posterior``: the kept sweeps of every chain, dims ``(chain, draw)``;
        ``warmup_posterior``: the first ``burn`` sweeps. Variables as in
        :class:`ChainResult`'s ``trace``.
    chains : list of ChainResult
        Everything else (kept ``Z``, final states).

    Examples
    --------
    >>> import arviz as az
    >>> from ibp_lab.linear_gaussian import simulate
    >>> X, _, _ = simulate(30, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=6)
    >>> idata, chains = run_chains(X, 2, 40, np.random.default_rng(1), sigma_x=0.3,
    ...                            sigma_a=1.0, burn=10)
    >>> dict(idata.posterior.sizes)
    {'chain': 2, 'draw': 30}
    >>> rhat = az.rhat(idata, var_names=["k_plus", "log_joint"])
    """
    import arviz as az  # imported on use: arviz is slow to import

    n_chains = check_count("n_chains", n_chains, minimum=1, maximum=MAX_CHAINS)
    check_rng(rng)
    one_start = (Z0 is None or not isinstance(Z0, (list, tuple))
                 or (len(Z0) > 0 and np.ndim(Z0[0]) != 2))  # a matrix written as nested lists
    if one_start:
        starts = [Z0] * n_chains
    else:
        starts = list(Z0)
        if len(starts) != n_chains:
            raise ValueError(
                f"Z0 must be one matrix or a list of n_chains = {n_chains} matrices, "
                f"got a list of {len(starts)}"
            )
    chains = [run_chain(X, n_sweeps, child, Z0=start, **options)
              for child, start in zip(rng.spawn(n_chains), starts)]
    burn = chains[0].trace.attrs["burn"]
    posterior = xr.concat([c.posterior_trace.assign_coords(draw=np.arange(len(c.sample_draws)))
                           for c in chains], dim="chain")
    groups = {"posterior": posterior.assign_coords(chain=np.arange(n_chains))}
    if burn:
        warmup = xr.concat([c.trace.isel(draw=slice(0, burn)) for c in chains], dim="chain")
        groups["warmup_posterior"] = warmup.assign_coords(chain=np.arange(n_chains))
    return az.InferenceData(**groups), chains
