"""The running state of one R-IBP stream, and the steps that change it.

:class:`StreamState` is the one owner of everything a stream carries from one observation
to the next (:class:`~ibp_lab.inference.streaming.RecursiveIBP` holds one and is only its
scikit-learn face):

- the kept slots: posterior means ``mu`` ``(K, D)`` and variances ``var`` of the features,
  their usages ``sum_n b_nk``, the logs ``sum_n log(1 - b_nk)`` of the probabilities that
  nobody owns them, and their dish numbers; arrays with spare capacity, grown together
  (:meth:`StreamState.ensure_capacity`) and compacted together;
- the counters: observations seen, the next dish number, the expected number of features,
  and the retired slots' summed existence probability and the law of their count;
- the birth buffer (``births="buffer"``: residuals waiting to be decomposed) and the
  histories (``keep_history``, ``record_posteriors``).

The steps on it are those of the model (``ibp_lab.inference.streaming`` module docstring): the
filtering prior with fresh slots (:meth:`~StreamState.prior_with_fresh`), an observation's
local posterior, folding it in (:meth:`~StreamState.store`: births, retirements), the
buffer's admissions and decompositions, and the round trip to the checkpoint's dictionary
(:meth:`~StreamState.to_dict`, :meth:`~StreamState.from_dict`; the checks and the files are
``ibp_lab.inference.streaming._state``'s). Rows go through the compiled fast path
(``ibp_lab.inference.streaming._fast``) up to the first *event*, which the Python reference path
(:meth:`~StreamState.observe`) takes; the fast path reads and updates this object's
arrays and counters through :meth:`~StreamState.kernel_view`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from scipy import special

from ibp_lab.inference.streaming import births
from ibp_lab.inference.streaming._limits import check_entries
from ibp_lab.inference.streaming._factor_analysis import FactorAnalysisLocal
from ibp_lab.inference.streaming._linear_gaussian import LinearGaussianLocal
from ibp_lab.inference.streaming.filtering import trusted_count_log_pmf, trusted_log_filtering_prior

__all__ = ["StreamState", "FRESH_BLOCK", "MAX_FRESH", "KernelSlots", "KernelCounts",
           "KernelParams"]

#: Fresh slots are examined in blocks of this many (their prior probabilities decrease).
FRESH_BLOCK = 4
#: Fresh slots examined at most: a Poisson(10^4) variable exceeds 4 * 10^4 with a
#: probability far below the smallest tol (1e-100).
MAX_FRESH = 1 << 16
#: The per-slot arrays (grown together, compacted together).
SLOT_ARRAYS = ("mu", "var", "usage", "log_unowned", "dish")
#: Slots allocated when the first rows arrive.
_FIRST_CAPACITY = 8

#: What the compiled fast path reads and writes in place: the slot arrays and the retired
#: slots' count law.
KernelSlots = namedtuple("KernelSlots", "mu var usage log_unowned dish retired_log_pmf")
#: The counters the fast path reads (it returns how far it got and the new rate).
KernelCounts = namedtuple("KernelCounts", "k n_seen next_dish retired_rate")
#: The settings the fast path needs, as the numbers it uses.
KernelParams = namedtuple(
    "KernelParams",
    "log_alpha beta s_prior sigma2 n_steps ossify tol log_tol fresh_block max_fresh births "
    "threshold")


#: The scalar counters of a stream (and its width), as :meth:`StreamState.snapshot` keeps them.
_COUNTERS = ("dim", "k", "n_seen", "retired_rate", "next_dish", "rate", "admit_threshold")


class _Snapshot(namedtuple("_Snapshot", "arrays counters retired_log_pmf buffer_array buffered "
                                        "buffer_rows rate_history slots_history n_posteriors "
                                        "patched")):
    """A stream as it was (:meth:`StreamState.snapshot`); read only by
    :meth:`StreamState.rollback`."""


def local_model(settings):
    """The one place that chooses the local model (linear-Gaussian or factor analysis)."""
    if settings.model == "factor_analysis":
        return FactorAnalysisLocal(settings.sigma_x, settings.sigma_w, settings.n_steps,
                                   settings.ossify)
    return LinearGaussianLocal(settings.sigma_x, settings.n_steps, settings.ossify)


class StreamState:
    """The running state of one stream with checked settings (module docstring).

    Parameters
    ----------
    settings : ibp_lab.inference.streaming._settings.Settings
        The stream's checked parameters.

    Examples
    --------
    >>> from ibp_lab.inference.streaming._settings import check_settings
    >>> settings = check_settings(alpha=1.0, log_alpha=None, beta=1.0, sigma_x=0.1,
    ...                           sigma_a=1.0, sigma_w=1.0, model="linear_gaussian",
    ...                           n_steps=3, tol=1e-6, ossify=False, keep_history=True,
    ...                           record_posteriors=False, births="single")
    >>> stream = StreamState(settings)
    >>> stream.consume(np.repeat(np.eye(2), 5, axis=0))
    >>> stream.n_seen, stream.k
    (10, 2)
    """

    def __init__(self, settings) -> None:
        self.settings = settings
        self.local = local_model(settings)
        self.dim: int | None = None
        self.k = 0
        self.mu = np.zeros((0, 0))
        self.var = np.zeros(0)
        self.usage = np.zeros(0)
        self.log_unowned = np.zeros(0)
        self.dish = np.zeros(0, dtype=np.int64)
        self.n_seen = 0
        self.retired_rate = 0.0
        self.retired_log_pmf = np.zeros(1)
        self.next_dish = 1
        self.rate = 0.0
        self.rate_history: list[float] = []
        self.slots_history: list[int] = []
        self.posteriors: list[tuple[np.ndarray, np.ndarray]] = []
        self.buffer_residuals = np.zeros((0, 0))
        self.buffer_rows: list[int] = []
        self.admit_threshold = np.inf

    # ------------------------------------------------------------------ shape and memory

    def begin(self, dim: int) -> None:
        """Allocate the slot arrays and the birth buffer for rows of width ``dim``."""
        self.dim = dim
        self.mu = np.zeros((_FIRST_CAPACITY, dim))
        self.var = np.zeros(_FIRST_CAPACITY)
        self.usage = np.zeros(_FIRST_CAPACITY)
        self.log_unowned = np.zeros(_FIRST_CAPACITY)
        self.dish = np.zeros(_FIRST_CAPACITY, dtype=np.int64)
        self._allocate_buffer()

    def _allocate_buffer(self) -> None:
        """Room for ``buffer_size`` residuals, and the admission threshold for this ``D``."""
        if self.settings.births == "buffer":
            self.buffer_residuals = np.zeros((self.settings.buffer_size, self.dim))
            self.admit_threshold = births.admission_threshold(self.dim)

    def ensure_capacity(self, needed: int) -> None:
        """Grow every slot array together to hold at least ``needed`` slots."""
        cap = self.mu.shape[0]
        if needed <= cap:
            return
        new = max(2 * cap, needed)
        for name in SLOT_ARRAYS:
            arr = getattr(self, name)
            grown = np.zeros((new,) + arr.shape[1:], dtype=arr.dtype)
            grown[:cap] = arr
            setattr(self, name, grown)

    @property
    def nbytes(self) -> int:
        """Bytes of what the stream needs to continue (the histories excluded)."""
        per_slot = sum(getattr(self, name)[: self.k].nbytes for name in SLOT_ARRAYS)
        # n_seen, retired rate, next dish number, rate; the retired slots' count law; the
        # birth buffer (its capacity: buffer_size rows, allocated once)
        return (int(per_slot) + 4 * 8 + int(self.retired_log_pmf.nbytes)
                + int(self.buffer_residuals.nbytes) + 8 * len(self.buffer_rows))

    # ------------------------------------------------------------------ the prior

    def expected_features(self) -> float:
        """``sum_k (1 - Pi_k)`` over the kept slots, plus the retired slots' mean."""
        return float(np.sum(-np.expm1(self.log_unowned[: self.k]))) + self.retired_rate

    def count_log_pmf(self) -> np.ndarray:
        """Log pmf of the number of features now: every kept slot and the retired ones."""
        return trusted_count_log_pmf(self.log_unowned[: self.k], self.retired_log_pmf)

    def prior(self, n: int, n_fresh: int, log_count):
        """Log prior of the kept slots and of ``n_fresh`` fresh ones for observation ``n``."""
        k = self.k
        fresh_dish = self.next_dish + np.arange(n_fresh)
        usage = np.concatenate([self.usage[:k], np.zeros(n_fresh)])
        log_unowned = np.concatenate([self.log_unowned[:k], np.zeros(n_fresh)])
        dish = np.concatenate([self.dish[:k], fresh_dish])
        log_q, log_1mq = trusted_log_filtering_prior(
            usage, log_unowned, dish, n, log_count, self.settings.log_alpha,
            self.settings.beta, last_used=self.next_dish - 1,
        )
        return log_q, log_1mq, dish

    def prior_with_fresh(self, n: int):
        """The prior, with fresh slots while their probability exceeds ``tol`` (at least 1)."""
        log_tol = np.log(self.settings.tol)
        n_fresh = FRESH_BLOCK
        log_count = self.count_log_pmf()
        while True:
            log_q, log_1mq, dish = self.prior(n, n_fresh, log_count)
            fresh = log_q[self.k:]
            # the cap on the expected number of features (checked by the estimator) keeps
            # the Poisson tail above tol well inside this bound
            if fresh[-1] <= log_tol or n_fresh >= MAX_FRESH:
                # fresh probabilities decrease with the dish number: keep the leading ones
                keep = max(1, int(np.sum(fresh > log_tol)))
                end = self.k + keep
                return log_q[:end], log_1mq[:end], dish[:end]
            n_fresh *= 2

    # ------------------------------------------------------------------ one observation

    def local_posterior(self, o: np.ndarray, prior, *, birth: bool = True):
        """Observation ``o``'s posteriors ``(mu, s, b)`` of every slot, as the next one.

        With ``birth=False`` (the buffer's step, linear-Gaussian only) no birth is
        proposed, and the residual and the misfit over ``sigma_x^2`` are returned too.
        """
        log_q, log_1mq, _ = prior
        k = self.k
        total = log_q.size
        mu0 = np.zeros((total, o.size))
        mu0[:k] = self.mu[:k]
        s0 = np.full(total, self.settings.sigma_a**2)
        s0[:k] = self.var[:k]
        usage = np.zeros(total)
        usage[:k] = self.usage[:k]
        if not birth:
            return self.local.fit_without_birth(o, mu0.copy(), s0.copy(), np.exp(log_q),
                                                log_q, log_1mq, mu0, s0, usage)
        return self.local.fit_observation(o, k, mu0.copy(), s0.copy(), np.exp(log_q), log_q,
                                          log_1mq, mu0, s0, usage)

    def observe(self, o: np.ndarray) -> None:
        """One observation, start to end: the reference that any faster path must match."""
        n = self.n_seen + 1
        prior = self.prior_with_fresh(n)
        if self.settings.births == "single":
            mu, s, b = self.local_posterior(o, prior)
            self.store(n, mu, s, b, prior[0])
            return
        mu, s, b, residual, misfit = self.local_posterior(o, prior, birth=False)
        self.store(n, mu, s, b, prior[0])
        if misfit > self.admit_threshold:
            self.admit(residual, n)

    def store(self, n, mu, s, b, log_q) -> None:
        """Fold observation ``n``'s posterior into the running state; manage the slots."""
        settings = self.settings
        k = self.k
        log_tol = np.log(settings.tol)
        with np.errstate(divide="ignore"):
            log_not_b = np.log1p(-b)
        # an old slot stays while its prior or posterior probability exceeds tol; a fresh
        # slot becomes a feature only if its posterior probability does
        keep = b > settings.tol
        keep[:k] |= log_q[:k] > log_tol
        n_born = int(keep[k:].sum())
        self.ensure_capacity(k + n_born)
        if n_born:  # fresh slots are born in order, at the end
            born = k + np.flatnonzero(keep[k:])
            new = slice(k, k + n_born)
            self.mu[new] = mu[born]
            self.var[new] = s[born]
            self.usage[new] = b[born]
            self.log_unowned[new] = log_not_b[born]
            self.dish[new] = self.next_dish + np.arange(n_born)
            self.next_dish += n_born
        old = slice(0, k)
        self.mu[old] = mu[:k]
        self.var[old] = s[:k]
        self.usage[old] += b[:k]
        self.log_unowned[old] += log_not_b[:k]
        if settings.record_posteriors:
            shown = np.flatnonzero(keep & (b > settings.tol))
            self.posteriors.append((self.dish[shown].copy(), b[shown].copy()))
        if not keep[:k].all():  # retire: the slot's existence stays in the rate
            retired = np.flatnonzero(~keep[:k])
            gone = self.log_unowned[retired]
            self.retired_rate += float(np.sum(-np.expm1(gone)))
            self.retired_log_pmf = trusted_count_log_pmf(gone, self.retired_log_pmf)
            kept = np.flatnonzero(np.r_[keep[:k], np.ones(n_born, bool)])
            for name in SLOT_ARRAYS:
                arr = getattr(self, name)
                arr[: kept.size] = arr[kept]
            self.k = kept.size
        else:
            self.k = k + n_born
        self.n_seen = n
        self.rate = self.expected_features()
        if settings.keep_history:
            self.rate_history.append(self.rate)
            self.slots_history.append(self.k)

    # ------------------------------------------------------------------ many observations

    def consume(self, X: np.ndarray, *, fast: bool = True) -> None:
        """Rows ``X`` ``(n, D)`` (checked, of the stream's width) in order.

        ``fast=False`` forces the Python reference path (tests and benchmarks compare).
        """
        if self.dim is None:
            self.begin(X.shape[1])
        if not (fast and self.fast_path_applies()):
            for row in X:
                self.observe(row)
            return
        # the compiled fast path takes the rows up to the first event, the reference
        # (observe) that row, and so on (ibp_lab.inference.streaming._fast)
        X = np.ascontiguousarray(X, dtype=np.float64)
        rates = np.empty(X.shape[0])
        slots = np.empty(X.shape[0], dtype=np.int64)
        i = 0
        while i < X.shape[0]:
            i = self.observe_fast(X, i, rates, slots)
            if i < X.shape[0]:
                self.observe(X[i])
                i += 1

    def fast_path_applies(self) -> bool:
        """Whether rows may go through the compiled fast path: linear-Gaussian streams
        that do not record posteriors."""
        return self.settings.model == "linear_gaussian" and not self.settings.record_posteriors

    def kernel_view(self) -> tuple[KernelSlots, KernelCounts, KernelParams]:
        """The arrays (shared, changed in place), counters and settings of the fast path."""
        for name in SLOT_ARRAYS:  # the kernel needs contiguous arrays of one dtype
            arr = getattr(self, name)
            dtype = np.int64 if name == "dish" else np.float64
            if arr.dtype != dtype or not arr.flags.c_contiguous:
                setattr(self, name, np.ascontiguousarray(arr, dtype=dtype))
        self.retired_log_pmf = np.ascontiguousarray(self.retired_log_pmf, dtype=np.float64)
        settings = self.settings
        slots = KernelSlots(self.mu, self.var, self.usage, self.log_unowned, self.dish,
                            self.retired_log_pmf)
        counts = KernelCounts(self.k, self.n_seen, self.next_dish, float(self.retired_rate))
        params = KernelParams(
            settings.log_alpha, settings.beta, settings.sigma_a**2, self.local.sigma2,
            settings.n_steps, settings.ossify, settings.tol, float(np.log(settings.tol)),
            FRESH_BLOCK, MAX_FRESH, 0 if settings.births == "single" else 1,
            float(self.admit_threshold))
        return slots, counts, params

    def observe_fast(self, X: np.ndarray, start: int, rates: np.ndarray,
                     slots: np.ndarray) -> int:
        """Rows ``X[start:]`` through the compiled kernel up to the first event.

        Returns the index of the first row not processed (``len(X)`` or an event row, which
        the caller hands to :meth:`observe`); ``rates`` and ``slots`` are scratch space
        for the histories, one entry per row of ``X``.
        """
        from ibp_lab.inference.streaming import _fast  # compiled on first use, not at import

        stop, rate = _fast.observe_rows(X, start, *self.kernel_view(), rates, slots)
        if stop > start:
            self.n_seen += stop - start
            self.rate = rate
            if self.settings.keep_history:
                self.rate_history.extend(rates[start:stop].tolist())
                self.slots_history.extend(slots[start:stop].tolist())
        return stop

    def predictive_draws(self, X_new: np.ndarray, n_draws: int, rng: np.random.Generator):
        """Log predictive densities of checked rows ``X_new`` from ``n_draws`` draws of the
        next observation's features; ``(logp, draws)`` (the estimator's
        ``predictive_logpdf`` states the estimate)."""
        log_q, _, dish = self.prior_with_fresh(self.n_seen + 1)
        check_entries("the predictive draws",
                      n_draws * (log_q.size + self.dim + X_new.shape[0]), "lower n_draws")
        k = self.k
        total = log_q.size
        sigma_x = self.settings.sigma_x
        mu = np.zeros((total, self.dim))
        mu[:k] = self.mu[:k]
        s = np.full(total, self.settings.sigma_a**2)
        s[:k] = self.var[:k]
        z = (rng.random((n_draws, total)) < np.exp(log_q)).astype(float)
        coef, var_coef = self.local.predictive_weights(z, rng)
        means = coef @ mu  # (n_draws, D)
        variances = sigma_x**2 + var_coef @ s  # (n_draws,)
        sq = (
            np.einsum("md,md->m", X_new, X_new)[:, None]
            - 2 * X_new @ means.T
            + np.einsum("sd,sd->s", means, means)[None, :]
        )
        draws = -0.5 * self.dim * np.log(2 * np.pi * variances)[None, :] - 0.5 * sq / variances
        logp = special.logsumexp(draws, axis=1) - np.log(n_draws)
        if not np.all(np.isfinite(logp)):
            # Entries within the bound can still overflow against a tiny sigma_x: refuse
            # rather than return -inf, which no log density is.
            raise ValueError(
                "X_new is too far from the fitted features for its log predictive density to "
                f"be represented (squared distances over sigma_x^2 = {sigma_x**2:g} overflow)"
            )
        return logp, draws

    # ------------------------------------------------------------------ the birth buffer

    def admit(self, residual: np.ndarray, n: int) -> None:
        """Keep observation ``n``'s residual; decompose the buffer once it is full."""
        m = len(self.buffer_rows)
        self.buffer_residuals[m] = residual
        self.buffer_rows.append(n)
        if m + 1 == self.settings.buffer_size:
            self.decompose_buffer(pilot=True)

    def flush(self) -> None:
        """Decompose what waits in the buffer (the last chance of these rows)."""
        if self.buffer_rows:
            self.decompose_buffer(pilot=False)

    def decompose_buffer(self, *, pilot: bool) -> None:
        """Births from the buffer's residuals (:func:`ibp_lab.inference.streaming.births.decompose_buffer`).

        ``pilot``: run the pilot first (full buffers; not the last buffer of :meth:`flush`).
        """
        settings = self.settings
        rows = np.array(self.buffer_rows, dtype=np.int64)
        residuals = self.buffer_residuals[: rows.size].copy()
        self.buffer_rows = []
        alpha = births.buffer_alpha(rows, log_alpha=settings.log_alpha, beta=settings.beta)
        found = births.decompose_buffer(residuals, np.random.default_rng(self.n_seen),
                                        alpha=alpha, sigma_x=settings.sigma_x,
                                        sigma_a=settings.sigma_a, pilot=pilot,
                                        moves=settings.buffer_moves)
        if found.n_features:
            self.add_features(found, rows)

    def add_features(self, found: births.BufferBirths, rows: np.ndarray) -> None:
        """Append the buffer's features; their owners are the buffered rows (``b`` 0 or 1)."""
        k, n_new = self.k, found.n_features
        self.ensure_capacity(k + n_new)
        new = slice(k, k + n_new)
        self.mu[new] = found.means
        self.var[new] = found.variances
        self.usage[new] = found.owners.sum(axis=0)
        self.log_unowned[new] = -np.inf  # owned for sure (b = 1) by the buffer's rows
        dishes = self.next_dish + np.arange(n_new)
        self.dish[new] = dishes
        self.next_dish += n_new
        self.k = k + n_new
        self.rate = self.expected_features()
        if self.settings.keep_history:  # the observation that filled the buffer
            self.rate_history[-1] = self.rate
            self.slots_history[-1] = self.k
        if self.settings.record_posteriors:
            for i, row in enumerate(rows):
                on = found.owners[i] > 0
                if on.any():
                    old_dishes, old_values = self.posteriors[row - 1]
                    self.posteriors[row - 1] = (np.r_[old_dishes, dishes[on]],
                                                np.r_[old_values, np.ones(int(on.sum()))])

    # ------------------------------------------------------------------ all or nothing

    def snapshot(self) -> "_Snapshot":
        """What :meth:`rollback` needs to put the stream back exactly as it is now.

        The estimator takes one before every call that changes the stream, so that an
        error or an interrupt in the middle of a call (inside a buffer's decomposition, say)
        loses nothing: the rows, the buffer and the counts are those before the call. Costs
        a copy of the slot arrays and the buffered residuals (``O((K + B) D)``, about what
        one observation costs); the histories are only appended to, so their lengths do.
        """
        m = len(self.buffer_rows)
        # the buffer's decomposition patches its rows' recorded posteriors (add_features)
        patched = ({row: self.posteriors[row - 1] for row in self.buffer_rows}
                   if self.settings.record_posteriors else {})
        return _Snapshot(
            arrays={name: getattr(self, name).copy() for name in SLOT_ARRAYS},
            counters={name: getattr(self, name) for name in _COUNTERS},
            retired_log_pmf=self.retired_log_pmf.copy(),
            buffer_array=self.buffer_residuals,
            buffered=self.buffer_residuals[:m].copy(),
            buffer_rows=list(self.buffer_rows),
            # add_features rewrites the last entry of each history (the row that filled
            # the buffer), so it is kept with the lengths
            rate_history=(len(self.rate_history), self.rate_history[-1:]),
            slots_history=(len(self.slots_history), self.slots_history[-1:]),
            n_posteriors=len(self.posteriors),
            patched=patched,
        )

    def rollback(self, snap: "_Snapshot") -> None:
        """Put the stream back as it was when ``snap`` was taken (:meth:`snapshot`)."""
        for name, arr in snap.arrays.items():
            setattr(self, name, arr)
        for name, value in snap.counters.items():
            setattr(self, name, value)
        self.retired_log_pmf = snap.retired_log_pmf
        self.buffer_residuals = snap.buffer_array
        self.buffer_residuals[: len(snap.buffered)] = snap.buffered
        self.buffer_rows = snap.buffer_rows
        for history, (length, last) in ((self.rate_history, snap.rate_history),
                                        (self.slots_history, snap.slots_history)):
            del history[length:]
            history[length - len(last):] = last
        del self.posteriors[snap.n_posteriors:]
        for row, entry in snap.patched.items():
            self.posteriors[row - 1] = entry

    # ------------------------------------------------------------------ the checkpoint

    def to_dict(self) -> dict:
        """The stream's entries of a checkpoint (``ibp_lab.inference.streaming._state``), as copies."""
        k, m = self.k, len(self.buffer_rows)
        rows, dishes, values = [], [], []
        for i, (d, v) in enumerate(self.posteriors):
            rows.append(np.full(d.size, i))
            dishes.append(d)
            values.append(v)
        return {
            "dim": self.dim,
            "n_seen": self.n_seen,
            "retired_rate": self.retired_rate,
            "retired_log_pmf": self.retired_log_pmf.copy(),
            "next_dish": self.next_dish,
            "rate": self.rate,
            "features": self.mu[:k].copy(),
            "variances": self.var[:k].copy(),
            "usage": self.usage[:k].copy(),
            "log_unowned": self.log_unowned[:k].copy(),
            "dish": self.dish[:k].copy(),
            "rate_history": np.array(self.rate_history, dtype=float),
            "slots_history": np.array(self.slots_history, dtype=np.int64),
            "posterior_rows": np.concatenate(rows) if rows else np.zeros(0, np.int64),
            "posterior_dishes": np.concatenate(dishes) if dishes else np.zeros(0, np.int64),
            "posterior_values": np.concatenate(values) if values else np.zeros(0),
            "buffer_residuals": self.buffer_residuals[:m].reshape(m, self.dim or 0).copy(),
            "buffer_rows": np.array(self.buffer_rows, dtype=np.int64),
        }

    @classmethod
    def from_dict(cls, valid: dict) -> StreamState:
        """The stream of a checkpoint that :func:`~ibp_lab.inference.streaming._state.validate_state`
        accepted (``valid`` holds its checked entries and ``settings``)."""
        stream = cls(valid["settings"])
        if valid["dim"] is not None:
            stream.dim = valid["dim"]
            stream.mu = valid["features"]
            stream.var = valid["variances"]
            stream.usage = valid["usage"]
            stream.log_unowned = valid["log_unowned"]
            stream.dish = valid["dish"]
            stream.k = stream.mu.shape[0]
            stream.ensure_capacity(max(stream.k, _FIRST_CAPACITY))
            stream._allocate_buffer()
            m = valid["buffer_rows"].size
            if m:  # only a buffer-births stream allocates (and may fill) a buffer
                stream.buffer_residuals[:m] = valid["buffer_residuals"]
            stream.buffer_rows = [int(v) for v in valid["buffer_rows"]]
        stream.n_seen = valid["n_seen"]
        stream.retired_rate = valid["retired_rate"]
        stream.retired_log_pmf = valid["retired_log_pmf"]
        stream.next_dish = valid["next_dish"]
        stream.rate = valid["rate"]
        stream.rate_history = [float(v) for v in valid["rate_history"]]
        stream.slots_history = [int(v) for v in valid["slots_history"]]
        if stream.settings.record_posteriors:
            rows = valid["posterior_rows"]
            bounds = np.searchsorted(rows, np.arange(stream.n_seen + 1))
            dishes, values = valid["posterior_dishes"], valid["posterior_values"]
            stream.posteriors = [(dishes[lo:hi], values[lo:hi])
                                 for lo, hi in zip(bounds[:-1], bounds[1:])]
        return stream
