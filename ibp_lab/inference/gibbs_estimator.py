"""The collapsed Gibbs sampler as a scikit-learn estimator: :class:`GibbsIBP`.

:class:`GibbsIBP` runs :func:`ibp_lab.inference.chains.run_chains` (the one chain runner; no sampler
of its own) on the rows given to ``fit`` and reads the kept draws back as features:

- ``features_``: posterior mean images of the features with real support. The rule: the
  kept draw with the highest log joint (over every chain) is the reference; every kept
  draw's columns are matched one to one to the reference's by the Hungarian assignment
  on owner sets (cost ``1 - Jaccard``); a reference feature is *present* in a draw when
  its partner shares at least half of their joint owners (Jaccard >= 1/2). Features
  present in at least half of the kept draws are kept, ordered by owners; each image is
  the average over the draws where it is present of that draw's posterior mean
  (:func:`ibp_lab.models.linear_gaussian.feature_posterior`). Features born in one draw and
  gone in the next (a singleton, a split that did not last) are left out.
- ``ownership_``: each training row's posterior probability of owning each kept feature
  (the share of kept draws where it owns the matched column).
- ``transform(X)``: any rows' conditional ownership of ``features_``, given those images,
  the posterior mean ``sigma_x`` and each feature's share of owners as its prior
  probability. One rule for every row, training rows included, because ``transform``
  must be a function of the rows alone (``fit_transform`` equals ``fit().transform``;
  scikit-learn checks both); ``ownership_`` keeps the training rows' posterior.
- ``score(X)``: the mean over rows of ``log p(second half of the row | first half)``,
  the held-out density of :func:`ibp_lab.inference.heldout.ibp_gibbs_heldout` (features integrated
  out, new dishes included) from up to ``n_score_draws`` kept draws, the columns split in
  their order (``ceil(D / 2)`` observed): the book's held-out score for the digits' top
  and bottom halves, on any data with at least two columns.
- ``inference_data_``: the :class:`arviz.InferenceData` of the chains, with the
  ``log_likelihood`` group, so that ``az.loo``, ``az.waic`` and ``az.compare`` take it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, TransformerMixin

from ibp_lab._checks import Checked, Count, Joint, NotFittedError, check_count
from ibp_lab._estimator import (DEFAULT_RNG, Seed, checked_parameters, estimator_generator,
                                estimator_rows)

__all__ = ["GibbsIBP", "HYPERPARAMETERS_TO_LEARN"]

#: The hyperparameters ``learn`` may name.
HYPERPARAMETERS_TO_LEARN = ("alpha", "sigma_x", "sigma_a")
# Sweeps of transform's Gibbs sampler over one row's features, and those discarded.
_TRANSFORM_SWEEPS, _TRANSFORM_BURN = 200, 20
# Most kept draws in one fit: each is an N x K int8 matrix kept in memory.
_MAX_KEPT_DRAWS = 100_000


def _checked_learn(name: str, learn) -> frozenset:
    """``learn`` as a set of names among :data:`HYPERPARAMETERS_TO_LEARN` (one name alone too)."""
    names = (learn,) if isinstance(learn, str) else learn
    if not isinstance(names, (tuple, list, frozenset, set)) or any(
            not isinstance(one, str) or one not in HYPERPARAMETERS_TO_LEARN for one in names):
        raise ValueError(f"{name} must be a tuple of names among {HYPERPARAMETERS_TO_LEARN} "
                         f"(empty: learn none), got {learn!r}")
    return frozenset(names)


def _checked_burn(burn, n_sweeps: int) -> int:
    """``burn`` in ``[0, n_sweeps)``: the warm-up leaves at least one sweep."""
    return check_count("burn", burn, maximum=n_sweeps - 1)


def _check_kept(n_chains: int, n_sweeps: int, burn: int, thin: int) -> None:
    """Refuse a fit that would keep more than ``_MAX_KEPT_DRAWS`` draws in memory."""
    kept = n_chains * math.ceil((n_sweeps - burn) / thin)
    if kept > _MAX_KEPT_DRAWS:
        raise ValueError(f"n_chains * (n_sweeps - burn) / thin must keep at most "
                         f"{_MAX_KEPT_DRAWS} draws, got {kept}: raise thin")


class GibbsIBP(TransformerMixin, BaseEstimator):
    """The linear-Gaussian IBP fitted by collapsed Gibbs chains, as a scikit-learn transformer.

    The parameters are keyword-only, each with a default; ``__init__`` stores them and
    :meth:`fit` checks them. It passes scikit-learn's ``check_estimator`` at default
    construction. Module docstring: what ``features_``, ``transform`` and ``score`` are.

    Parameters
    ----------
    alpha : float, optional
        IBP mass, > 0; the chains' start if learned (default 1).
    sigma_x, sigma_a : float, optional
        Noise and feature standard deviations, > 0; starts if learned. The default 1 and 1
        fit standardised data (columns with mean 0, variance 1), as in every entry point
        of the package; a ``ScaleWarning`` at :meth:`fit` says when ``X`` is far from them.
    beta : float, optional
        IBP concentration, > 0, held fixed (default 1).
    learn : tuple of str, optional
        The hyperparameters the chains sample, among ``"alpha"``, ``"sigma_x"``,
        ``"sigma_a"`` (Gamma(1, 1) on alpha, HalfNormal(1) on the scales,
        :mod:`ibp_lab.inference.chains`); the others stay at their values. Default ``("alpha",
        "sigma_a")``, as :func:`ibp_lab.inference.chains.run_chain`'s defaults: with ``sigma_x``
        learned on real data the noise shrinks and features multiply (standardised breast
        cancer: about 70 features for 30 dimensions after 60 sweeps, against 12-14 at
        ``sigma_x = 1``), and chains disagree; learn it knowingly and compare chains.
    n_chains : int, optional
        Independent chains, >= 1 (default 2).
    n_sweeps : int, optional
        Sweeps per chain, warm-up included (default 300).
    burn : int, optional
        Warm-up sweeps discarded, < ``n_sweeps`` (default 150).
    thin : int, optional
        Keep every ``thin``-th sweep after the warm-up (default 5).
    n_score_draws : int, optional
        Most kept draws (evenly spaced over the pooled chains) that :meth:`score` uses
        (default 20).
    rng : numpy.random.Generator, int or None, optional
        Seeds the chains (through four draws that seed :func:`~ibp_lab.inference.chains.run_chains`'
        parent generator), :meth:`transform` and :meth:`score`;
        read by :func:`ibp_lab._estimator.estimator_generator`: default ``0``
        (:data:`ibp_lab._estimator.DEFAULT_RNG`, reproducible fits), an ``int`` seeds, a
        Generator is copied (never advanced), ``None`` takes fresh entropy.

    Attributes
    ----------
    features_ : numpy.ndarray
        ``(n_features_, D)`` posterior mean images of the features with real support.
    n_features_ : int
        Number of those features.
    ownership_ : numpy.ndarray
        ``(N, n_features_)`` posterior probability that training row ``n`` owns feature ``k``.
    feature_support_ : numpy.ndarray
        ``(n_features_,)`` share of kept draws in which each feature is present (>= 1/2).
    sigma_x_, sigma_a_, alpha_ : float
        Posterior means of the hyperparameters over the kept draws (their values if fixed).
    inference_data_ : arviz.InferenceData
        The chains' draws (``posterior``, ``sample_stats``, ``log_likelihood``, ...).
    chains_ : list of ibp_lab.inference.chains.ChainResult
        Everything else (kept ``Z``, full traces).
    n_features_in_ : int
        ``D``.

    Examples
    --------
    >>> from ibp_lab.models.linear_gaussian import simulate
    >>> X, Z, A = simulate(60, np.random.default_rng(0), alpha=2.0, sigma_x=0.3,
    ...                    sigma_a=1.0, d=8)
    >>> model = GibbsIBP(sigma_x=0.3, n_sweeps=200, burn=100).fit(X)
    >>> model.features_.shape == (model.n_features_, 8)
    True
    >>> model.transform(X[:3]).shape == (3, model.n_features_)
    True
    >>> import arviz as az
    >>> bool(az.loo(model.inference_data_).elpd_loo < 0)
    True
    """

    #: What :meth:`fit` checks, in this order (after ``X``), by
    #: :func:`ibp_lab._estimator.checked_parameters`. ``alpha``, ``sigma_x``, ``sigma_a``,
    #: ``beta`` and the largest ``n_chains`` are checked after these by
    #: :func:`~ibp_lab.inference.chains.run_chains`, the runner's own door (with ``X``: the
    #: scales' ratio, the scale warning), whose words they keep.
    parameter_constraints = {
        "learn": Checked(_checked_learn),
        "n_sweeps": Count(minimum=1),
        "burn": Joint(_checked_burn, "burn", "n_sweeps", sets="burn"),
        "thin": Count(minimum=1),
        "n_chains": Count(minimum=1),
        "kept draws": Joint(_check_kept, "n_chains", "n_sweeps", "burn", "thin"),
        "n_score_draws": Count(minimum=1),
        "rng": Seed(),
    }

    def __init__(self, *, alpha: float = 1.0, sigma_x: float = 1.0, sigma_a: float = 1.0,
                 beta: float = 1.0, learn: tuple = ("alpha", "sigma_a"),
                 n_chains: int = 2, n_sweeps: int = 300, burn: int = 150, thin: int = 5,
                 n_score_draws: int = 20,
                 rng: np.random.Generator | int | None = DEFAULT_RNG) -> None:
        self.alpha = alpha
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.beta = beta
        self.learn = learn
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.burn = burn
        self.thin = thin
        self.n_score_draws = n_score_draws
        self.rng = rng

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y=None) -> GibbsIBP:
        """Run the chains on ``X`` and read their kept draws; ``y`` is ignored.

        Parameters
        ----------
        X : array_like
            ``(N, D)`` data, standardised for the default scales.

        Returns
        -------
        GibbsIBP
            ``self``, fitted.
        """
        from ibp_lab.inference.chains import run_chains

        X = estimator_rows(self, X)
        p = checked_parameters(self)
        idata, chains = run_chains(
            X, p["n_chains"], p["n_sweeps"], _chains_generator(p["rng"]), alpha=self.alpha,
            sigma_x=self.sigma_x, sigma_a=self.sigma_a, beta=self.beta,
            moves=_moves_learning(p["learn"]), burn=p["burn"], thin=p["thin"])
        draws = _kept_draws(chains)
        features, ownership, support = _supported_features(X, draws)
        self._X, self._draws = X, draws
        self.inference_data_, self.chains_ = idata, chains
        self.features_, self.ownership_, self.feature_support_ = features, ownership, support
        self.n_features_ = features.shape[0]
        self.alpha_, self.sigma_x_, self.sigma_a_ = (
            float(np.mean([d[name] for d in draws])) for name in ("alpha", "sigma_x", "sigma_a"))
        self.n_features_in_ = X.shape[1]
        return self

    def _check_fitted(self, name: str) -> None:
        if not hasattr(self, "_draws"):
            raise NotFittedError(f"{name} needs a fitted GibbsIBP: call fit(X) first")

    # ------------------------------------------------------------------ new rows

    def transform(self, X) -> np.ndarray:
        """Each row's probability of owning each of ``features_``, given the posterior features.

        Rows are independent given the features ``A = features_``: a row owns feature
        ``k`` a priori with probability ``pi_k`` (its share of owners among the training
        rows, kept inside ``[1 / (N + 1), N / (N + 1)]``) and is ``Normal(z A,
        sigma_x_^2 I)`` given its pattern ``z``. The probabilities ``p(z_k = 1 | x)`` are
        Rao-Blackwellised averages over a Gibbs sampler on ``z`` (200 sweeps, 20
        discarded) whose uniforms are shared by all rows, so that a row's result does
        not depend on the other rows given with it, and the same rows give the same
        numbers (the generator is a copy of ``rng``'s).

        Parameters
        ----------
        X : array_like
            ``(m, D)`` rows.

        Returns
        -------
        numpy.ndarray
            ``(m, n_features_)``.
        """
        self._check_fitted("transform")
        X = estimator_rows(self, X, n_features=self.n_features_in_)
        n_rows = self._X.shape[0]
        share = np.clip(self.ownership_.mean(axis=0), 1.0 / (n_rows + 1), n_rows / (n_rows + 1.0))
        return _conditional_ownership(X, self.features_, share, self.sigma_x_,
                                      estimator_generator(self.rng))

    def score(self, X, y=None) -> float:
        """Mean over rows of ``log p(second half of x | first half of x)`` under the posterior.

        :func:`ibp_lab.inference.heldout.ibp_gibbs_heldout` from up to ``n_score_draws`` kept
        draws, the first ``ceil(D / 2)`` columns observed and the rest scored; ``y`` is
        ignored. A consistent estimate, biased low at finite draws (Jensen's inequality;
        that function's docstring).

        Parameters
        ----------
        X : array_like
            ``(m, D)`` rows, ``D >= 2``.

        Returns
        -------
        float
        """
        from ibp_lab.inference.heldout import ibp_gibbs_heldout

        self._check_fitted("score")
        X = estimator_rows(self, X, n_features=self.n_features_in_)
        D = X.shape[1]
        if D < 2:
            raise ValueError("score needs X with at least 2 columns: it scores the second "
                             f"half of each row given the first, got {D}")
        picks = np.unique(np.linspace(0, len(self._draws) - 1,
                                      min(self.n_score_draws, len(self._draws))).round().astype(int))
        samples = [(self._draws[i]["Z"], self._draws[i]["sigma_x"], self._draws[i]["sigma_a"],
                    self._draws[i]["alpha"]) for i in picks]
        observed = np.arange((D + 1) // 2)
        result = ibp_gibbs_heldout(self._X, samples, X, observed, np.arange(observed.size, D),
                                   estimator_generator(self.rng), beta=self.beta)
        return float(np.mean(result.log_density))


def _chains_generator(rng: np.random.Generator) -> np.random.Generator:
    """The parent generator of the chains: seeded by four draws from ``rng``'s reading
    (the checked ``rng``, :class:`ibp_lab._estimator.Seed`).

    :func:`ibp_lab.inference.chains.run_chains` spawns the chains' generators from its parent's
    seed sequence, and a copied Generator (:func:`ibp_lab._estimator.estimator_generator`)
    carries a fresh one; seeding a new parent from draws of the copy makes ``rng=7`` and
    ``rng=np.random.default_rng(7)`` give the same chains, fit after fit.
    """
    return np.random.default_rng(rng.integers(2**63, size=4))


# --------------------------------------------------------------------------------------
# Reading the draws
# --------------------------------------------------------------------------------------


def _moves_learning(learn: set) -> list:
    """The chain's moves: a Gibbs sweep, then a move for each hyperparameter in ``learn``
    (alpha's conjugate draw; the scales' Metropolis steps, ``sigma_a`` first)."""
    from ibp_lab.inference.chains import AlphaUpdate, GibbsSweep, ScaleUpdate

    moves = [GibbsSweep()] + ([AlphaUpdate()] if "alpha" in learn else [])
    scales = [name for name in ("sigma_a", "sigma_x") if name in learn]
    return moves + ([ScaleUpdate(*scales)] if scales else [])


def _kept_draws(chains) -> list[dict]:
    """Every kept draw of every chain: ``Z``, the hyperparameters and the log joint."""
    draws = []
    for chain in chains:
        kept = chain.posterior_trace
        for s, Z in enumerate(chain.samples):
            draws.append({"Z": Z, **{name: float(kept[name].values[s]) for name in
                                     ("alpha", "sigma_x", "sigma_a", "log_joint")}})
    return draws


def _jaccard(owners_a: np.ndarray, owners_b: np.ndarray) -> np.ndarray:
    """``(Ka, Kb)`` Jaccard similarity of the owner sets of two draws' columns."""
    a, b = owners_a.astype(np.float64), owners_b.astype(np.float64)
    both = a.T @ b
    either = a.sum(axis=0)[:, None] + b.sum(axis=0)[None, :] - both
    return np.divide(both, either, out=np.zeros_like(both), where=either > 0)


def _supported_features(X: np.ndarray, draws: list[dict]):
    """``features_``, ``ownership_`` and ``feature_support_`` by the module docstring's rule."""
    from ibp_lab.models.linear_gaussian import feature_posterior

    reference = max(draws, key=lambda d: d["log_joint"])["Z"]
    K, N = reference.shape[1], X.shape[0]
    image_sum, present = np.zeros((K, X.shape[1])), np.zeros(K)
    owned = np.zeros((N, K))
    for draw in draws:
        Z = draw["Z"]
        if Z.shape[1] == 0 or K == 0:
            continue
        similarity = _jaccard(reference, Z)
        rows, cols = linear_sum_assignment(-similarity)
        matched = similarity[rows, cols] >= 0.5
        rows, cols = rows[matched], cols[matched]
        means, _ = feature_posterior(X, Z, draw["sigma_x"], draw["sigma_a"])
        image_sum[rows] += means[cols]
        present[rows] += 1
        owned[:, rows] += Z[:, cols]
    support = present / len(draws)
    keep = np.flatnonzero(support >= 0.5)
    keep = keep[np.argsort(-owned[:, keep].sum(axis=0), kind="stable")]  # most owners first
    return image_sum[keep] / present[keep, None], owned[:, keep] / len(draws), support[keep]


def _conditional_ownership(X: np.ndarray, A: np.ndarray, share: np.ndarray, sigma_x: float,
                           rng: np.random.Generator) -> np.ndarray:
    """``p(z_k = 1 | x)`` for each row: the transform's Gibbs sampler (:meth:`GibbsIBP.transform`)."""
    n, K = X.shape[0], A.shape[0]
    if K == 0:
        return np.zeros((n, 0))
    z = np.zeros((n, K))
    residual = X.copy()  # x - z A
    prior_log_odds = np.log(share) - np.log1p(-share)
    norms = np.einsum("kd,kd->k", A, A)
    total = np.zeros((n, K))
    for sweep in range(_TRANSFORM_SWEEPS):
        uniforms = rng.random(K)  # one per feature, shared by all rows
        for k in range(K):
            # residual without feature k, then the log-odds of owning it
            without = residual + z[:, [k]] * A[k]
            log_odds = prior_log_odds[k] + (without @ A[k] - 0.5 * norms[k]) / sigma_x**2
            on_probability = 0.5 * (1.0 + np.tanh(0.5 * log_odds))  # the logistic, stably
            if sweep >= _TRANSFORM_BURN:
                total[:, k] += on_probability
            z[:, k] = uniforms[k] < on_probability
            residual = without - z[:, [k]] * A[k]
    return total / (_TRANSFORM_SWEEPS - _TRANSFORM_BURN)
