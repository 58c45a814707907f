"""The bounds on a stream's memory and work, checked before any work is done.

:class:`~ibp_lab.inference.streaming.RecursiveIBP` refuses a batch (:func:`check_work`) whose data
would overflow, whose recorded posteriors or expected number of features would exceed
what the estimator supports, or whose arrays would pass :data:`MAX_ENTRIES` numbers; it
refuses the same way any other allocation of that size (:func:`check_entries`).
"""

from __future__ import annotations

import numpy as np

from ibp_lab._hyper import harmonic
from ibp_lab.inference.streaming._settings import Settings

__all__ = ["MAX_DATA_MAGNITUDE", "MAX_ENTRIES", "MAX_EXPECTED_FEATURES", "MAX_RECORDED_ROWS",
           "check_entries", "check_work"]

#: Largest expected number of features under the IBP prior after ``n`` observations,
#: ``alpha sum_{i <= n} beta / (beta + i - 1)`` (``ibp_lab.models.prior.expected_num_features``),
#: that a stream may reach: each feature
#: costs ``D`` numbers of memory and ``O(n_steps D)`` work per observation (factor analysis
#: also a ``K x K`` weight covariance, factored at every step, hence its smaller cap).
#: ``RecursiveIBP.partial_fit`` refuses, before any work, a batch that would exceed it.
MAX_EXPECTED_FEATURES = {"linear_gaussian": 10_000, "factor_analysis": 400}
#: Largest number of entries of an array the estimator allocates (2**26 float64s: 512 MiB):
#: the expected number of features times ``D``, the draws of ``predictive_logpdf``, the
#: dense ``posterior_history_``.
MAX_ENTRIES = 2**26
#: Largest magnitude of a data entry: squared norms of larger entries, divided by a small
#: noise variance, overflow.
MAX_DATA_MAGNITUDE = 1e100
#: Largest stream whose posteriors are recorded (``record_posteriors=True`` keeps one entry
#: per observation).
MAX_RECORDED_ROWS = 10_000_000


def check_work(settings: Settings, X: np.ndarray, n_before: int) -> None:
    """Refuse, before any work, a batch whose memory or work would be out of bounds.

    ``n_before``: observations already seen when the batch starts.
    """
    largest = float(np.max(np.abs(X)))
    if largest > MAX_DATA_MAGNITUDE:
        raise ValueError(f"X entries must be at most {MAX_DATA_MAGNITUDE:g} in magnitude "
                         f"(squared norms overflow), got {largest:g}")
    n_total = n_before + X.shape[0]
    if settings.record_posteriors and n_total > MAX_RECORDED_ROWS:
        raise ValueError(f"record_posteriors=True keeps one entry per observation: at most "
                         f"{MAX_RECORDED_ROWS} observations, got {n_total}")
    # the prior's E[K+] (ibp_lab.models.prior.expected_num_features), from the formula
    # itself: alpha = exp(log_alpha) may be below what the public door accepts
    expected = settings.alpha * harmonic(n_total, settings.beta)
    cap = MAX_EXPECTED_FEATURES[settings.model]
    if expected > cap:
        raise ValueError(
            f"alpha = {settings.alpha:.4g} and beta = {settings.beta:g} expect "
            f"{expected:.4g} features after {n_total} observations (alpha sum_(i <= n) "
            f"beta / (beta + i - 1)); model={settings.model!r} supports at most {cap}: "
            "lower alpha or beta"
        )
    check_entries("the features", expected * X.shape[1], "lower alpha, or reduce D")
    if settings.births == "buffer":
        check_entries("the birth buffer", settings.buffer_size * X.shape[1],
                      "lower buffer_size")


def check_entries(what: str, n_entries: float, advice: str) -> None:
    """Refuse an allocation of more than :data:`MAX_ENTRIES` numbers, before making it."""
    if n_entries > MAX_ENTRIES:
        raise ValueError(f"{what} would need {n_entries:.3g} numbers, more than the "
                         f"{MAX_ENTRIES} allowed (MAX_ENTRIES): {advice}")
