"""Frequencies of a Markov chain against exact probabilities, with ESS-based tolerances."""

from __future__ import annotations

import numpy as np
from scipy import stats

from ibp_lab.teaching.exercises._result import Measurement
from ibp_lab.evaluation.summaries import indicator_ess

#: Probability that a check fails a correct implementation (before rounding of the ESS).
FALSE_ALARM = 1e-3
#: Categories below this exact probability are pooled into one "other" bin: the normal
#: approximation of a frequency needs ESS * p well above 1, and rare ones carry no power.
MIN_PROBABILITY = 0.01
#: Fewer effective draws than this for a category means the chain hardly moves.
MIN_ESS = 100.0


def z_threshold(n_tests: int, level: float = FALSE_ALARM) -> float:
    """Two-sided normal quantile with a Bonferroni split of ``level`` over ``n_tests``.

    Examples
    --------
    >>> round(z_threshold(10), 2)  # 1e-4 in each tail of each of 10 bins
    3.89
    """
    return float(stats.norm.isf(level / (2 * n_tests)))


def compare_frequencies(labels: np.ndarray, expected: dict, describe) -> tuple[list, list, float]:
    """Test the frequency of each label of a chain against its exact probability.

    ``expected`` maps a label to its exact probability; ``describe(label, main)``
    names a bin in words (``label`` None is the pooled bin, ``main`` the other labels).
    Labels below
    :data:`MIN_PROBABILITY` are pooled into one bin (label ``None``), which also holds
    every label the chain visits that ``expected`` lacks. The tolerance of each
    frequency is ``z * sqrt(p (1 - p) / ESS)``: ESS is the effective sample size of
    the chain's indicator of that label (ArviZ's, through
    :func:`ibp_lab.evaluation.summaries.indicator_ess`), so the autocorrelation of the chain
    widens the tolerance exactly as much as it inflates the Monte Carlo error; ``z`` is
    the normal quantile that, split (Bonferroni) over all bins, fails a correct
    sampler with probability at most :data:`FALSE_ALARM`.

    Returns the measurements (one per bin), the bins that missed, as
    ``(ratio observed / exact, measurement)``, and the smallest ESS of the bins.
    """
    main = [label for label, p in expected.items() if p >= MIN_PROBABILITY]
    p_other = 1.0 - sum(expected[label] for label in main)
    bins = [(label, expected[label]) for label in main] + [(None, max(p_other, 0.0))]
    codes = np.full(labels.shape, len(main))
    for index, label in enumerate(main):
        codes[labels == label] = index
    z = z_threshold(len(bins))
    ess = indicator_ess(codes, np.arange(len(bins)))
    measurements, misses = [], []
    for index, (label, p) in enumerate(bins):
        frequency = float(np.mean(codes == index))
        n_eff = ess[index] if np.isfinite(ess[index]) else float(len(codes))
        # a rare bin: its sd is taken at p >= 1 / ESS at least, so that a single stray
        # visit to a state of probability 1e-9 is not called a failure
        spread = max(p, 1.0 / n_eff)
        tolerance = z * float(np.sqrt(spread * (1 - min(spread, 0.5)) / n_eff))
        m = Measurement(describe(label, main), frequency, p, tolerance)
        measurements.append(m)
        if not m.ok:
            misses.append((frequency / p if p > 0 else np.inf, m))
    return measurements, misses, float(np.nanmin(ess)) if np.isfinite(ess).any() else 0.0
