"""Streaming variational inference with the Recursive IBP: the :class:`RecursiveIBP` estimator.

One pass over the data; each observation is seen once and then discarded. For observation
``n`` the estimator

1. forms the filtering prior ``q(z_nk = 1 | x_{<n})`` of every feature slot from running
   sums and products of earlier posteriors (:mod:`ibp_lab.inference.streaming.filtering`), including
   a few *fresh* slots for features that observation ``n`` may create;
2. runs ``n_steps`` coordinate-ascent steps on the Bernoulli probabilities ``b_nk`` and the
   feature posteriors ``N(mu_k, s_k I)``, each step starting from the posterior after
   observation ``n - 1`` (Schaeffer et al. 2022, supplement B.2; B.3 for factor analysis);
3. creates features (*births*) in one of two ways (``births``):

   - ``"buffer"`` (the default for the linear-Gaussian model): an observation that the
     features do not explain (its expected misfit is improbable as noise) puts its
     residual in a buffer; when ``buffer_size`` residuals have gathered, a small collapsed
     sampler explains them jointly and the features that at least two of them own are
     born (:mod:`ibp_lab.inference.streaming.births`). Several observations must agree before a
     feature exists, so features that one observation happens to show together are
     rarely born fused. The sampler's rounds are Gibbs sweeps and sequential split-merge
     proposals; ``buffer_moves`` replaces them by any moves on ``Z``;
   - ``"single"`` (the original rule; the only one for factor analysis, and the one of the
     zero-noise limit): the first fresh slot switched on and fitted to what the other
     features leave unexplained in this observation; the proposal is kept only if it
     increases the local objective and leaves the slot on (``b >= 1/2``; see below);
4. stores the feature posteriors (optionally the usage-weighted, "ossified", average of
   supplement B.2), adds ``b_nk`` to the running sums and ``log(1 - b_nk)`` to the running
   log-products, and updates the expected number of features
   ``rho_n = sum_k (1 - prod_{n' <= n} (1 - b_{n'k}))``. The number of features itself has
   the Poisson-binomial law of these existence probabilities, which the prior of the next
   observation uses; supplement A approximates it by a Poisson law, which is wrong where
   features are established (:mod:`ibp_lab.inference.streaming.filtering`).

Why a birth rule at all. Coordinate ascent that starts a fresh slot at its prior
probability (tiny) never creates a feature: a feature that is barely switched on learns
almost nothing from the observation, and a feature that has learned nothing is switched
off. The objective has a second local optimum with the slot switched on and fitted to the
residual, and the objective itself, which charges a new feature its prior probability and
the Kullback-Leibler cost of its posterior, decides between the two. In the zero-noise
limit this is exactly BP-means' rule "add the residual as a feature when its squared norm
exceeds gamma^2" (:func:`ibp_lab.inference.streaming.bp_means_one_pass`).

Feature slots. A slot is kept while its prior or posterior probability in the current
observation is above ``tol``; there is no bound on the number of features fixed in
advance. Fresh slots are offered while their prior probability exceeds ``tol`` (at least
one). A slot that is retired adds its existence probability ``1 - Pi_k`` to a scalar and
its Bernoulli variable to the law of the retired slots' count (one log pmf, one entry per
retired slot), so that the number of features never loses it. Memory is
``O(K D)`` for ``K`` kept slots and each observation costs ``O(n_steps K D)`` for the
linear-Gaussian model (``O(n_steps (K^2 D + K_a^3))`` for factor analysis, ``K_a`` the
slots the observation may own), with ``K`` growing like the expected number of features,
``alpha beta log(1 + n / beta)`` (measured in ``benchmarks/streaming.py``).

Bounds. Before any work, :meth:`RecursiveIBP.partial_fit` refuses a batch after which the
IBP prior expects more than :data:`MAX_EXPECTED_FEATURES` features, or whose features
would need more than :data:`MAX_ENTRIES` numbers, or whose entries exceed
:data:`MAX_DATA_MAGNITUDE`; a large ``alpha`` is refused with a message instead of
running for hours. Checkpoints (:meth:`~RecursiveIBP.save`, :meth:`~RecursiveIBP.load`,
:meth:`~RecursiveIBP.set_state`) are checked completely and written atomically
(``ibp_lab.inference.streaming._state``; the one door of the parameters is
``ibp_lab.inference.streaming._settings``, which also refuses what the buffer's sampler would). A call
that fails or is interrupted halfway leaves the stream as it was (:meth:`RecursiveIBP.partial_fit`).

A scikit-learn estimator. :class:`RecursiveIBP` derives from
:class:`sklearn.base.BaseEstimator`: ``__init__`` stores its parameters as given,
``fit``/``partial_fit`` check them (``ibp_lab.inference.streaming._settings.check_settings``), so
``get_params``, ``set_params`` and :func:`sklearn.base.clone` work; learned attributes end
in ``_``; ``transform`` gives new rows' posterior feature probabilities and ``score`` their
mean predictive log-density. ``rng`` keeps the project's name for scikit-learn's
``random_state``: a ``Generator``, a seed or ``None``, copied at each ``fit`` so that
fitting never advances it and the same parameters give the same results. The two local
models (``_linear_gaussian``, ``_factor_analysis``) sit behind one protocol,
:class:`LocalModel`.

Derived here, not in the paper: the existence factor ``Pi_k`` in the filtering prior (so
that it is a probability by construction; :mod:`ibp_lab.inference.streaming.filtering`), the exact
(Poisson-binomial) law of the number of features in place of the paper's Poisson, the birth
proposal, the weight covariance in the factor-analysis cross terms, and the choice to
leave "ossify" off by default. Chapter 12 of the book gives the derivations and the
measurements behind each.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Protocol, runtime_checkable

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from ibp_lab._checks import (
    NotFittedError,
    check_count,
    check_flag,
    check_rng,
    copy_generator,
)
from ibp_lab._estimator import (DEFAULT_RNG, checked_parameters, estimator_generator,
                                estimator_rows)
from ibp_lab.inference.streaming import _state
from ibp_lab.inference.streaming._limits import (
    MAX_DATA_MAGNITUDE,
    MAX_ENTRIES,
    MAX_EXPECTED_FEATURES,
    check_entries,
    check_work,
)
from ibp_lab.inference.streaming._settings import SETTING_CONSTRAINTS, settings_from
from ibp_lab.inference.streaming._stream import StreamState

__all__ = ["RecursiveIBP", "LocalModel", "MAX_EXPECTED_FEATURES", "MAX_ENTRIES",
           "MAX_DATA_MAGNITUDE"]



@runtime_checkable
class LocalModel(Protocol):
    """What the estimator asks of a local model (linear-Gaussian or factor analysis).

    ``fit_observation`` takes observation ``o``, the number ``n_old`` of kept slots (the
    rest are fresh), starting posteriors ``mu`` ``(K, D)``, ``s`` and ``b`` (changed in
    place), the log prior probabilities of each slot being on and off, the previous
    posteriors ``mu0``, ``s0`` and the usages, and returns the posteriors ``(mu, s, b)``
    of this observation (birth proposal included). ``predictive_weights`` turns the
    ``(n_draws, K)`` indicator draws ``z`` of a predictive draw into the coefficients of
    the feature means and of the feature variances (``z`` and ``z`` for the
    linear-Gaussian model; ``z w`` and ``z w^2`` with weights drawn from ``rng`` for
    factor analysis).
    """

    def fit_observation(self, o, n_old, mu, s, b, log_q, log_1mq, mu0, s0,
                        usage) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def predictive_weights(self, z, rng) -> tuple[np.ndarray, np.ndarray]: ...


def _one_thread_at_a_time(method):
    """Run ``method`` holding the estimator's lock: calls from several threads take turns.

    A stream is a sequence, so its updates cannot run side by side; four threads feeding
    one estimator used to interleave inside an update and lose counts (and ``save`` then
    wrote a state that ``load`` refused). With the lock every call sees, and leaves, a
    whole state; the order in which the threads' rows arrive is theirs to arrange. The lock
    is re-entrant (``fit`` calls ``flush``) and is not part of a copy (``__getstate__``).
    """
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self.__dict__.setdefault("_lock", threading.RLock()):  # setdefault is atomic
            return method(self, *args, **kwargs)
    return locked


class RecursiveIBP(TransformerMixin, BaseEstimator):
    """Streaming Recursive-IBP inference for a linear-Gaussian or factor-analysis model.

    A scikit-learn estimator: the parameters are keyword-only, each with a default, stored
    as given and checked by :meth:`fit` and :meth:`partial_fit`, so :meth:`get_params`,
    :meth:`set_params` and :func:`sklearn.base.clone` work; it passes scikit-learn's
    ``check_estimator``.

    Parameters
    ----------
    alpha : float or None, optional
        IBP mass parameter, > 0 (expected number of features per observation). ``None``
        (the default) means 1, or ``exp(log_alpha)`` when ``log_alpha`` is given.
    beta : float, optional
        IBP concentration, > 0 (default 1).
    sigma_x : float, optional
        Observation noise standard deviation, > 0 (default 1).
    sigma_a : float, optional
        Prior standard deviation of every feature coordinate, > 0 (prior mean 0; default 1).
    model : {"linear_gaussian", "factor_analysis"}, optional
        ``o = sum_k z_k A_k + noise``, or ``o = sum_k z_k w_k A_k + noise`` with
        ``w ~ N(0, sigma_w^2 I)`` per observation.
    n_steps : int, optional
        Coordinate-ascent steps per observation (``S``), >= 1.
    rng : numpy.random.Generator, int or None, optional
        Source of the draws of :meth:`predictive_logpdf` and :meth:`score` (fitting is
        deterministic). Read by :func:`ibp_lab._checks.estimator_generator` at every
        :meth:`fit` (and at the first :meth:`partial_fit`) into :attr:`rng_`: a Generator
        is copied, so that the parameter itself never advances and the same parameters
        give the same results; an ``int`` seeds a new generator (default ``0``,
        :data:`ibp_lab._estimator.DEFAULT_RNG`, so that default scores are reproducible);
        ``None`` takes fresh entropy. :attr:`rng_`'s state is part of :meth:`get_state`.
    tol : float, optional
        A feature slot is kept while its prior or posterior probability exceeds ``tol``,
        in (0, 0.01].
    sigma_w : float, optional
        Prior standard deviation of the factor-analysis weights, > 0.
    ossify : bool, optional
        Store the usage-weighted average of the old and new feature posteriors
        (supplement B.2's "ossify" heuristic). Off by default: the Gaussian update already
        weighs the old posterior by its precision, which grows with the feature's usage, so
        the average counts the evidence twice and features freeze after a few owners
        (chapter 12 derives this and measures what it costs).
    keep_history : bool, optional
        Keep the expected number of features and the number of slots after each
        observation (8 bytes each
        per observation; switch off for memory that does not grow with the stream).
    record_posteriors : bool, optional
        Keep every observation's ``b_nk`` (memory grows with the stream; for teaching and
        testing), available as :attr:`posterior_history_`.
    log_alpha : float, optional
        The mass parameter as its logarithm, for masses below the smallest float
        (:meth:`bp_means_limit`); then ``alpha`` must be ``None``.
    births : {"buffer", "single"} or None, optional
        How features are created (module docstring). ``None``: ``"buffer"`` for the
        linear-Gaussian model, ``"single"`` for factor analysis (which allows only it).
    buffer_size : int, optional
        Residuals gathered before the buffer is decomposed, in [2, 10000]; the buffer
        holds ``buffer_size * D`` numbers.
    buffer_moves : Move, str or list of them, or None, optional
        The moves of one round of the buffer's search (``moves`` of
        :func:`ibp_lab.inference.streaming.births.decompose_buffer`), applied in turn at
        the buffer's hyperparameters: moves on ``Z`` such as
        ``[GibbsSweep(), SingletonUpdate()]`` (:mod:`ibp_lab.inference.chains`) or their
        names; moves on the hyperparameters are refused, and so is any value with
        ``births="single"``, which has no buffer. ``None`` (the default): Gibbs sweeps and
        sequential split-merge proposals (module docstring of
        :mod:`~ibp_lab.inference.streaming.births`). Every buffer uses them, the last one
        of :meth:`flush` included. Moves are objects, not numbers: a stream with
        ``buffer_moves`` is not checkpointed (:meth:`get_state` refuses it).

    Attributes
    ----------
    features_ : numpy.ndarray
        ``(K, D)`` posterior means of the kept features, in order of creation.
    feature_variances_ : numpy.ndarray
        ``(K,)`` posterior variance of each coordinate of each feature.
    feature_usage_ : numpy.ndarray
        ``(K,)`` running sums ``sum_n b_nk``: expected number of owners.
    feature_existence_ : numpy.ndarray
        ``(K,)`` ``1 - prod_n (1 - b_nk)``: probability that the feature exists.
    dish_numbers_ : numpy.ndarray
        ``(K,)`` 1-based order of creation of each kept slot.
    n_features_expected_ : float
        The mean ``sum_k (1 - Pi_k)`` of the posterior number of features (whose law is
        Poisson-binomial).
    expected_features_history_, poisson_rate_history_ : numpy.ndarray
        That mean after each observation (two names for the same numbers; the second is
        kept from the paper, which treats the mean as a Poisson rate).
    n_slots_history_ : numpy.ndarray
        Number of kept slots after each observation (these two need ``keep_history``).
    n_seen_ : int
        Observations processed.
    n_features_in_ : int
        ``D``, the width of the observations (scikit-learn's name).
    rng_ : numpy.random.Generator
        This fit's copy of ``rng``.

    Examples
    --------
    The four features of Griffiths and Ghahramani's images, each in half of the 300
    images, noise 0.5, streamed once:

    >>> from ibp_lab.datasets import simulate_four_feature_data
    >>> from ibp_lab.evaluation.summaries import match_features
    >>> X, Z, A = simulate_four_feature_data(np.random.default_rng(0), n=300)
    >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
    ...                      rng=np.random.default_rng(1)).fit(X)
    >>> model.features_.shape, round(model.n_features_expected_, 2)
    ((4, 36), 4.0)
    >>> bool(match_features(A, model.features_).ref_correlation().min() > 0.98)
    True

    Births from single residuals fuse the features the first images show together:

    >>> single = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="single").fit(X)
    >>> single.features_.shape[0], bool(
    ...     match_features(A, single.features_).ref_correlation().min() < 0.9)
    (7, True)
    >>> from sklearn.base import clone
    >>> clone(model).get_params()["sigma_x"]
    0.5
    """

    #: What ``fit``/``partial_fit`` check, in this order, by
    #: :func:`ibp_lab._estimator.checked_parameters`: the stream's settings, the same
    #: mapping as :func:`ibp_lab.inference.streaming._settings.check_settings`' door (which
    #: a restored checkpoint goes through). ``rng`` is read after them, when a stream starts.
    parameter_constraints = SETTING_CONSTRAINTS

    def __init__(
        self,
        *,
        alpha: float | None = None,
        beta: float = 1.0,
        sigma_x: float = 1.0,
        sigma_a: float = 1.0,
        model: str = "linear_gaussian",
        n_steps: int = 3,
        rng: np.random.Generator | int | None = DEFAULT_RNG,
        tol: float = 1e-6,
        sigma_w: float = 1.0,
        ossify: bool = False,
        keep_history: bool = True,
        record_posteriors: bool = False,
        log_alpha: float | None = None,
        births: str | None = None,
        buffer_size: int = 100,
        buffer_moves=None,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.model = model
        self.n_steps = n_steps
        self.rng = rng
        self.tol = tol
        self.sigma_w = sigma_w
        self.ossify = ossify
        self.keep_history = keep_history
        self.record_posteriors = record_posteriors
        self.log_alpha = log_alpha
        self.births = births
        self.buffer_size = buffer_size
        self.buffer_moves = buffer_moves

    # ------------------------------------------------------------------------------------
    # parameters: one door, and the stream they started
    # ------------------------------------------------------------------------------------

    def _checked_settings(self) -> _state.Settings:
        """The parameters checked against :attr:`parameter_constraints`, as settings."""
        return settings_from(checked_parameters(self))

    def _parameter_key(self) -> tuple:
        """The parameters as they stand: compared with :func:`_same_parameters` to tell
        whether they changed mid-stream. A generator is kept as the object itself (and
        compared by identity), not by its ``id()``: a copy (deepcopy, pickle, joblib)
        copies it together with this key, so the copy still sees the same generator, and
        an address reused by a new object cannot pass for the old one."""
        return tuple(getattr(self, name) for name in _PARAMETERS)

    def _start(self, settings: _state.Settings, rng: np.random.Generator) -> None:
        """Begin a new stream (forget any previous one) with checked settings."""
        self._settings = settings
        self._key = self._parameter_key()
        self.rng_ = rng
        self._stream = StreamState(settings)

    def _stream_settings(self) -> _state.Settings:
        """The settings of the running stream; refuse parameters changed since it began."""
        if not _same_parameters(self._parameter_key(), self._key):
            raise ValueError(
                "the parameters changed since this stream started (set_params during "
                "partial_fit): call fit(X) to start again with the new parameters"
            )
        return self._settings

    @classmethod
    def bp_means_limit(
        cls,
        gamma: float,
        sigma_x: float,
        *,
        sigma_a: float = 1.0,
        n_steps: int = 3,
        ossify: bool = False,
        record_posteriors: bool = True,
        tol: float = 1e-6,
    ) -> RecursiveIBP:
        """The linear-Gaussian R-IBP with ``alpha = exp(-gamma^2 / (2 sigma_x^2))``, ``beta = 1``.

        As ``sigma_x -> 0`` one pass of this model is one pass of BP-means with penalty
        ``gamma^2`` per feature (Proposition 4.1 of Schaeffer et al. 2022;
        :func:`ibp_lab.inference.streaming.bp_means_one_pass`). ``alpha`` is given as its logarithm
        (``log_alpha``), since for small ``sigma_x`` it is far below the smallest positive
        float.

        Examples
        --------
        >>> model = RecursiveIBP.bp_means_limit(1.0, 1e-3)
        >>> model.log_alpha, model.alpha
        (-500000.0, None)
        """
        from ibp_lab._checks import check_positive

        gamma = check_positive("gamma", gamma)
        sigma_x = check_positive("sigma_x", sigma_x)
        model = cls(alpha=None, beta=1.0, sigma_x=sigma_x, sigma_a=sigma_a,
                    model="linear_gaussian", n_steps=n_steps, rng=0, tol=tol, ossify=ossify,
                    keep_history=True, record_posteriors=record_posteriors,
                    log_alpha=-gamma**2 / (2 * sigma_x**2), births="single")
        model._checked_settings()  # refuse bad arguments here, as the other doors do
        return model

    # ------------------------------------------------------------------------------------
    # fitted attributes
    # ------------------------------------------------------------------------------------

    #: Private switch: ``False`` sends every row through the Python reference path
    #: (``StreamState.observe``); tests and benchmarks compare the two paths.
    _fast_path = True

    def __getstate__(self) -> dict:
        # a copy (pickle, deepcopy, joblib) gets its own lock when it is first used
        state = dict(super().__getstate__())  # (object.__getstate__ gives __dict__ itself)
        state.pop("_lock", None)
        return state

    def __sklearn_is_fitted__(self) -> bool:
        stream = self.__dict__.get("_stream")
        return stream is not None and stream.n_seen > 0

    def _check_fitted(self, name: str) -> None:
        """Raise :class:`~ibp_lab._checks.NotFittedError` if nothing has been seen yet.

        It is both a ValueError (a method called too early is a misuse, refused like any
        other) and an AttributeError (``hasattr(model, "features_")`` stays False).
        """
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"{name} is not available before fitting: call fit(X) or partial_fit(x) first"
            )

    @property
    def features_(self) -> np.ndarray:
        self._check_fitted("features_")
        return self._stream.mu[: self._stream.k].copy()

    @property
    def feature_variances_(self) -> np.ndarray:
        self._check_fitted("feature_variances_")
        return self._stream.var[: self._stream.k].copy()

    @property
    def feature_usage_(self) -> np.ndarray:
        self._check_fitted("feature_usage_")
        return self._stream.usage[: self._stream.k].copy()

    @property
    def feature_existence_(self) -> np.ndarray:
        self._check_fitted("feature_existence_")
        return -np.expm1(self._stream.log_unowned[: self._stream.k])

    @property
    def dish_numbers_(self) -> np.ndarray:
        self._check_fitted("dish_numbers_")
        return self._stream.dish[: self._stream.k].copy()

    @property
    def n_features_expected_(self) -> float:
        self._check_fitted("n_features_expected_")
        return self._stream.rate

    @property
    def n_features_in_(self) -> int:
        self._check_fitted("n_features_in_")
        return self._stream.dim

    def _check_history(self, name: str) -> None:
        self._check_fitted(name)
        if not self._settings.keep_history:
            raise AttributeError(f"{name} needs RecursiveIBP(alpha=..., keep_history=True)")

    @property
    def poisson_rate_history_(self) -> np.ndarray:
        self._check_history("poisson_rate_history_")
        return np.array(self._stream.rate_history)

    expected_features_history_ = poisson_rate_history_

    @property
    def n_slots_history_(self) -> np.ndarray:
        self._check_history("n_slots_history_")
        return np.array(self._stream.slots_history, dtype=np.int64)

    @property
    def n_seen_(self) -> int:
        self._check_fitted("n_seen_")
        return self._stream.n_seen

    @property
    def posterior_history_(self) -> np.ndarray:
        """``(n_seen, n_dishes)`` matrix of ``b_nk`` by dish (needs ``record_posteriors``)."""
        self._check_fitted("posterior_history_")
        if not self._settings.record_posteriors:
            raise AttributeError(
                "posterior_history_ needs RecursiveIBP(alpha=..., record_posteriors=True)"
            )
        posteriors = self._stream.posteriors
        width = max((int(d.max()) for d, _ in posteriors if d.size), default=0)
        check_entries("posterior_history_", len(posteriors) * width,
                       "read the sparse rows of get_state() instead")
        out = np.zeros((len(posteriors), width))
        for i, (dishes, values) in enumerate(posteriors):
            out[i, dishes - 1] = values
        return out

    @property
    def state_nbytes(self) -> int:
        """Bytes of what the stream needs to continue (the histories excluded)."""
        self._check_fitted("state_nbytes")
        return self._stream.nbytes

    # ------------------------------------------------------------------------------------
    # fitting
    # ------------------------------------------------------------------------------------

    @_one_thread_at_a_time
    def fit(self, X, y=None) -> RecursiveIBP:
        """Forget any previous fit and make one pass over the rows of ``X``, in order.

        The end of ``X`` is the end of the stream: the residuals left in the birth buffer
        are decomposed (:meth:`flush`), so ``fit(X)`` is ``partial_fit(X)`` then
        ``flush()``.

        Parameters
        ----------
        X : array_like
            ``(n, D)`` observations.
        y : None
            Ignored (scikit-learn's signature).

        Returns
        -------
        RecursiveIBP
            ``self``.
        """
        settings = self._checked_settings()
        rng = estimator_generator(self.rng)
        X = estimator_rows(self, X)
        check_work(settings, X, n_before=0)  # refuse before forgetting the previous fit
        previous = {name: self.__dict__[name] for name in _STREAM_ATTRIBUTES
                    if name in self.__dict__}
        try:
            self._start(settings, rng)
            self._stream.consume(X, fast=self._fast_path)
            self._stream.flush()
        except BaseException:  # an error or an interrupt: the previous fit stays
            for name in _STREAM_ATTRIBUTES:
                self.__dict__.pop(name, None)
            self.__dict__.update(previous)
            raise
        return self

    @_one_thread_at_a_time
    def flush(self) -> RecursiveIBP:
        """Decompose the residuals waiting in the birth buffer now, and empty it.

        With ``births="buffer"`` features are born only when ``buffer_size`` residuals have
        gathered; call ``flush`` at the end of a stream fed by :meth:`partial_fit` (as
        :meth:`fit` does) to let the last, partly filled buffer create its features. Does
        nothing with ``births="single"`` or an empty buffer.

        Returns
        -------
        RecursiveIBP
            ``self``.

        Examples
        --------
        >>> X = np.repeat(np.eye(3), 10, axis=0)
        >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.1, sigma_a=1.0).partial_fit(X)
        >>> model.features_.shape[0], model.flush().features_.shape[0]
        (0, 3)
        """
        self._check_fitted("flush")
        with _all_or_nothing(self._stream):
            self._stream.flush()
        return self

    @_one_thread_at_a_time
    def partial_fit(self, X, y=None) -> RecursiveIBP:
        """Process one observation (``(D,)``) or a batch of them (``(n, D)``), in order.

        Each row is used once and not stored. Calling ``partial_fit`` on the halves of a
        data set gives exactly the same result as calling it (or :meth:`fit`) on the whole.
        The first call checks the parameters and starts the stream; changing them later
        (``set_params``) is refused until the next :meth:`fit`. Residuals waiting in the
        birth buffer stay there until it is full or :meth:`flush` is called.

        All or nothing: if anything goes wrong in the middle of the rows (an error in a
        buffer's decomposition, a ``KeyboardInterrupt``), the stream is left exactly as it
        was before the call (rows, buffer, counts), so the call can be retried and the
        stream saved. :meth:`flush` and :meth:`fit` (which then keeps the previous fit)
        are all or nothing too.

        Parameters
        ----------
        X : array_like
            One observation ``(D,)`` or rows ``(n, D)``.
        y : None
            Ignored (scikit-learn's signature).

        Returns
        -------
        RecursiveIBP
            ``self``.
        """
        started = hasattr(self, "_settings")
        settings = self._stream_settings() if started else self._checked_settings()
        rng = None if started else estimator_generator(self.rng)
        X = estimator_rows(self, X, one_row=True)
        check_work(settings, X, n_before=self._stream.n_seen if started else 0)
        if not started:
            self._start(settings, rng)
        elif self._stream.dim is not None and X.shape[1] != self._stream.dim:
            raise ValueError(
                f"X has {X.shape[1]} features, but RecursiveIBP is expecting "
                f"{self._stream.dim} features as input (the width of the stream so far)"
            )
        with _all_or_nothing(self._stream):
            self._stream.consume(X, fast=self._fast_path)
        return self

    # ------------------------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------------------------

    @_one_thread_at_a_time
    def next_prior(self) -> tuple[np.ndarray, np.ndarray]:
        """The filtering prior of the next observation: dish numbers and probabilities.

        Kept slots first, then fresh slots while their probability exceeds ``tol``.

        Returns
        -------
        dish : numpy.ndarray
            Dish number of each slot.
        prob : numpy.ndarray
            ``q(z_{n+1,k} = 1 | x_{<=n})`` for each slot, in ``[0, 1]``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit` or :meth:`partial_fit` (a ``ValueError``).
        """
        self._check_fitted("next_prior")
        log_q, _, dish = self._stream.prior_with_fresh(self._stream.n_seen + 1)
        return dish, np.exp(log_q)

    def _new_rows(self, X_new, *, name: str = "X_new", one_row: bool = True) -> np.ndarray:
        """``X_new`` as checked rows of the fitted width, within the data bound."""
        X_new = estimator_rows(self, X_new, name=name, one_row=one_row,
                               n_features=self._stream.dim)
        # The same bound as for the data fitted: beyond it squared norms overflow and the
        # log density would come out as -inf (or NaN) instead of a number.
        largest = float(np.max(np.abs(X_new)))
        if largest > MAX_DATA_MAGNITUDE:
            raise ValueError(f"{name} entries must be at most {MAX_DATA_MAGNITUDE:g} in "
                             f"magnitude (squared norms overflow), got {largest:g}")
        return X_new

    @_one_thread_at_a_time
    def transform(self, X) -> np.ndarray:
        """Posterior feature probabilities ``b_nk`` of new rows; the model is not updated.

        Each row is treated as the next observation of the stream: the same filtering
        prior, coordinate ascent and birth proposal as :meth:`partial_fit`, whose
        probabilities of the kept features are returned; nothing is stored.

        Parameters
        ----------
        X : array_like
            ``(m, D)`` observations (one row: ``x.reshape(1, -1)``).

        Returns
        -------
        numpy.ndarray
            ``(m, K)`` probabilities, one column per kept feature (:attr:`features_`).

        Examples
        --------
        >>> X = np.repeat(np.eye(2), 20, axis=0)
        >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.1, sigma_a=1.0).fit(X)
        >>> model.transform([[1.0, 0.0], [0.0, 1.0]]).round(3)
        array([[1., 0.],
               [0., 1.]])
        """
        self._check_fitted("transform")
        X = self._new_rows(X, name="X", one_row=False)
        stream = self._stream
        prior = stream.prior_with_fresh(stream.n_seen + 1)
        out = np.empty((X.shape[0], stream.k))
        for i, row in enumerate(X):
            out[i] = stream.local_posterior(row, prior)[2][: stream.k]
        return out

    @_one_thread_at_a_time
    def score(self, X, y=None, *, n_draws: int = 200) -> float:
        """Mean log predictive density per row of ``X`` ``(m, D)`` (:meth:`predictive_logpdf`).

        Draws from a copy of :attr:`rng_`, so the estimator is left unchanged and the score
        is deterministic given the fitted state. ``y`` is ignored (scikit-learn's signature).

        Examples
        --------
        >>> X = np.random.default_rng(0).normal(size=(30, 2))
        >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0, rng=3).fit(X)
        >>> bool(np.isclose(model.score(X[:4]), model.set_params().fit(X)
        ...                 .predictive_logpdf(X[:4]).mean()))
        True
        """
        self._check_fitted("score")
        X = self._new_rows(X, name="X", one_row=False)
        return float(np.mean(self.predictive_logpdf(X, n_draws=n_draws)))

    @_one_thread_at_a_time
    def predictive_logpdf(
        self,
        X_new,
        *,
        n_draws: int = 200,
        rng: np.random.Generator | None = None,
        return_draws: bool = False,
    ):
        """Log predictive density ``log p(x | x_{<=n})`` of new observations (not learned from).

        The predictive density is an average of densities over the posterior:
        ``p(x | o) = E[p(x | z, A)]``. It is estimated as the log of the mean over
        ``n_draws`` draws, computed as a log-mean-exp (``logsumexp - log n_draws``), never
        as the mean of log-densities (which estimates a different, smaller number: Jensen's
        inequality). Each draw takes ``z`` from the filtering prior of the next observation
        (kept and fresh slots; factor analysis also draws ``w ~ N(0, sigma_w^2 I)``) and
        integrates the features out exactly: given ``z`` (and ``w``) the observation is
        ``N(sum_k z_k w_k mu_k, (sigma_x^2 + sum_k z_k w_k^2 s_k) I)`` with ``w = 1`` for the
        linear-Gaussian model. The same draws serve every row of ``X_new``.

        Parameters
        ----------
        X_new : array_like
            ``(m, D)`` or ``(D,)`` observations.
        n_draws : int, optional
            Posterior draws, >= 1.
        rng : numpy.random.Generator, optional
            Source of the draws; by default a copy of the estimator's :attr:`rng_` (which
            is not advanced: the same call gives the same numbers).
        return_draws : bool, optional
            Also return the ``(m, n_draws)`` log-densities of the individual draws.

        Returns
        -------
        numpy.ndarray or (numpy.ndarray, numpy.ndarray)
            ``(m,)`` log predictive densities (and the per-draw log-densities).

        Raises
        ------
        NotFittedError
            Before :meth:`fit` or :meth:`partial_fit` (a ``ValueError``).
        ValueError
            If ``X_new`` is not finite, has the wrong width, has entries beyond
            :data:`MAX_DATA_MAGNITUDE`, or lies so far from the features that its log
            density overflows.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(50, 3))
        >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
        ...                      rng=np.random.default_rng(1)).fit(X)
        >>> logp, draws = model.predictive_logpdf(X[:2], n_draws=10, return_draws=True)
        >>> from scipy.special import logsumexp
        >>> bool(np.allclose(logp, logsumexp(draws, axis=1) - np.log(10)))
        True
        """
        self._check_fitted("predictive_logpdf")
        X_new = self._new_rows(X_new)
        n_draws = check_count("n_draws", n_draws, minimum=1)
        return_draws = check_flag("return_draws", return_draws)
        # by default a copy of rng_: scoring leaves the estimator as it was, and the same
        # call on the same fitted state gives the same numbers
        rng = copy_generator(self.rng_) if rng is None else check_rng(rng)
        logp, draws = self._stream.predictive_draws(X_new, n_draws, rng)
        return (logp, draws) if return_draws else logp

    # ------------------------------------------------------------------------------------
    # interruption and resumption (ibp_lab.inference.streaming._state does the work)
    # ------------------------------------------------------------------------------------

    @_one_thread_at_a_time
    def get_state(self) -> dict:
        """Everything needed to resume the stream: settings, running state, histories.

        The returned dictionary holds copies (NumPy arrays and plain Python scalars, the
        generator's state as a dictionary), so it is not changed by later fitting.
        ``set_state`` on a new object, or :meth:`save` then :meth:`load`, resumes with
        results identical to an uninterrupted run. Before any fit, the state of an empty
        stream with these parameters.

        A stream with ``buffer_moves`` is refused (a ``ValueError``): a state holds
        numbers, not move objects, and a stream resumed without its moves would decompose
        its next buffers otherwise than the uninterrupted one.
        """
        settings = self._settings if hasattr(self, "_settings") else self._checked_settings()
        if settings.buffer_moves is not None:
            raise ValueError(
                "get_state (and save) cannot record buffer_moves: a checkpoint holds numbers, "
                "not move objects, and a stream resumed without its moves would not continue "
                "as this one; checkpoint streams with buffer_moves=None")
        if hasattr(self, "_settings"):
            return _state.capture(self)
        empty = type(self)(**self.get_params())
        empty._start(empty._checked_settings(), estimator_generator(empty.rng))
        return _state.capture(empty)

    @_one_thread_at_a_time
    def set_state(self, state: dict) -> RecursiveIBP:
        """Restore a state made by :meth:`get_state` (parameters included).

        The state is checked completely first (keys, types, dtypes, shapes, ranges and
        the consistency of its counts; ``ibp_lab.inference.streaming._state``); if anything is
        wrong, the estimator is left exactly as it was. The parameters become those of
        the state (``rng`` its generator), so that :meth:`get_params` describes the
        stream.

        Parameters
        ----------
        state : dict

        Returns
        -------
        RecursiveIBP
            ``self``.

        Raises
        ------
        TypeError
            If ``state`` is not a dict.
        ValueError
            ``"state is not a valid RecursiveIBP state: <what>"``.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from get_state(), got {type(state).__name__}")
        _state.restore(self, _state.validate_state(state))
        return self

    @_one_thread_at_a_time
    def save(self, path) -> None:
        """Write :meth:`get_state` to ``path`` (NumPy's ``.npz`` format, no pickle), as named.

        The state goes to a temporary file in the same folder, is flushed to disk, and
        then replaces ``path`` in one atomic rename (:func:`ibp_lab.inference.streaming._state.write_state`):
        a save that fails (a full disk, an interrupted process) leaves the previous
        checkpoint at ``path`` intact. Every bit generator of
        :class:`numpy.random.Generator` (PCG64, PCG64DXSM, MT19937, Philox, SFC64) is saved
        exactly.

        Examples
        --------
        >>> import tempfile, os
        >>> model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
        ...                      rng=np.random.default_rng(0))
        >>> _ = model.partial_fit(np.ones((3, 2)))
        >>> path = os.path.join(tempfile.mkdtemp(), "stream.npz")
        >>> model.save(path)
        >>> RecursiveIBP.load(path).n_seen_
        3
        """
        state = self.get_state()
        # what is written is what load accepts: the state passes load's own checks first
        _state.validate_state(state, "the state to save")
        _state.write_state(path, state)

    @classmethod
    def load(cls, path) -> RecursiveIBP:
        """Read a state written by :meth:`save` into a new estimator.

        Nothing is unpickled, and the file's contents are checked completely
        (:meth:`set_state`): a corrupt, truncated or edited file raises one
        ``ValueError("file '...' is not a valid RecursiveIBP state: <what>")``; a missing
        file raises ``FileNotFoundError``.
        """
        valid = _state.read_state(path)
        obj = cls()  # every parameter is replaced
        _state.restore(obj, valid)
        return obj


#: What a fit sets up (:meth:`RecursiveIBP._start`): kept aside while ``fit`` runs, restored
#: if it fails.
_STREAM_ATTRIBUTES = ("_settings", "_key", "rng_", "_stream")


@contextlib.contextmanager
def _all_or_nothing(stream: StreamState):
    """Leave ``stream`` as it was if the block raises anything (an interrupt included)."""
    snapshot = stream.snapshot()
    try:
        yield
    except BaseException:
        stream.rollback(snapshot)
        raise


def _same_parameters(now: tuple, then: tuple) -> bool:
    """Equal values, and the very same generator object where one is a generator."""
    return len(now) == len(then) and all(
        a is b if isinstance(a, np.random.Generator) or isinstance(b, np.random.Generator)
        else bool(a == b)
        for a, b in zip(now, then))


#: The constructor's parameters, in order.
_PARAMETERS = ("alpha", "beta", "sigma_x", "sigma_a", "model", "n_steps", "rng", "tol",
               "sigma_w", "ossify", "keep_history", "record_posteriors", "log_alpha",
               "births", "buffer_size", "buffer_moves")
