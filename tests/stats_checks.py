"""Shared statistical checks whose false-alarm rates are computed, not assumed.

Every check here rejects a correct implementation with probability at most the
``level`` it is given, up to the approximations named beside it:

- independent draws: exact binomial tails (no normal approximation, which is
  what made the old "4.5 sigma" checks fail whenever a bin with n p << 1 was
  visited once);
- a Markov chain: the same binomial tails with the number of draws replaced by
  an *effective* number (see :func:`chain_ess` for how it is estimated and why
  it errs on the conservative side);
- several bins or entries in one test: a Bonferroni union, each comparison at
  ``level / m`` (valid whatever the dependence between the bins).

Discrete tails only make a check more conservative (P(p-value <= a) <= a).
"""

from __future__ import annotations

import arviz as az
import numpy as np
from scipy import special

#: False-alarm rate allowed to one statistical test (one parametrised case).
TEST_LEVEL = 1e-3
#: An indicator needs this many visits and non-visits before its own ESS estimate is trusted.
MIN_VISITS_FOR_ESS = 100


def binomial_upper(x, n, p):
    """P(Bin(n, p) >= x), continuous in x and n (regularised incomplete beta)."""
    x, n, p = np.broadcast_arrays(np.asarray(x, float), np.asarray(n, float),
                                  np.asarray(p, float))
    out = np.ones(x.shape)
    positive = (x > 0) & (p < 1)
    out[positive] = special.betainc(x[positive], n[positive] - x[positive] + 1, p[positive])
    out[(x > 0) & (p <= 0)] = 0.0
    out[x > n] = 0.0
    return out


def binomial_lower(x, n, p):
    """P(Bin(n, p) <= x), continuous in x and n."""
    x, n, p = np.broadcast_arrays(np.asarray(x, float), np.asarray(n, float),
                                  np.asarray(p, float))
    out = np.ones(x.shape)
    inside = (x < n) & (p > 0)
    out[inside] = special.betainc(n[inside] - x[inside], x[inside] + 1, 1 - p[inside])
    out[(x < n) & (p >= 1)] = 0.0
    out[x < 0] = 0.0
    return out


def binomial_pvalue(x, n, p_low, p_high=None):
    """Two-sided tail p-value of x successes in n trials, p known to lie in [p_low, p_high].

    The upper tail is taken at ``p_high`` and the lower tail at ``p_low``, the
    least extreme values: an exact answer known only up to a truncated tail
    (enumeration up to k_max) is then never held against the sampler.
    """
    p_high = p_low if p_high is None else p_high
    return np.minimum(1.0, 2 * np.minimum(binomial_upper(x, n, p_high),
                                          binomial_lower(x, n, p_low)))


def assert_binomial_counts(counts, n, p, *, level=TEST_LEVEL, what="counts"):
    """Counts of m outcomes in n independent draws against their probabilities.

    Each outcome is tested two-sided at level / m (Bonferroni), so a correct
    sampler fails with probability <= level.
    """
    counts, p = np.asarray(counts, float), np.asarray(p, float)
    pvalues = binomial_pvalue(counts, n, p)
    bad = pvalues < level / counts.size
    assert not bad.any(), (
        f"{what} {np.flatnonzero(bad)}: observed {counts[bad]} of {n}, expected "
        f"{n * p[bad]} (p-values {pvalues[bad]}, limit {level / counts.size:.1e})")


def _ess(indicator: np.ndarray) -> float:
    return float(az.ess(indicator.astype(float)[None, :], method="mean"))


def chain_ess(labels, n_bins: int) -> float:
    """Effective sample size used for every bin of a chain's histogram.

    Estimated as ArviZ's ``ess(method="mean")`` (autocorrelations summed with
    Geyer's initial monotone sequence) of each indicator ``1{label = k}`` that
    the chain visits at least MIN_VISITS_FOR_ESS times and leaves at least as
    often, and then the *smallest* of these. Conservative: a bin is judged with
    fewer effective draws than its own estimate gives it, which only widens its
    tails; the rare bins, whose own ESS cannot be estimated from a handful of
    visits, get the guard of :func:`chain_frequency_pvalues` on top.
    """
    labels = np.asarray(labels)
    n = labels.size
    estimates = []
    for k in range(n_bins):
        hit = labels == k
        visits = int(hit.sum())
        if min(visits, n - visits) >= MIN_VISITS_FOR_ESS:
            estimates.append(_ess(hit))
    assert estimates, "no bin is visited often enough to estimate the chain's ESS"
    return float(min(min(estimates), n))


def longest_run(hit: np.ndarray) -> int:
    """Length of the longest stretch of consecutive True values."""
    if not hit.any():
        return 0
    padded = np.concatenate([[0], hit.astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(padded))
    return int(np.max(edges[1::2] - edges[::2]))


def chain_frequency_pvalues(labels, p_low, p_high=None, *, n_eff=None):
    """Two-sided p-value of each bin's visit count in a chain.

    A bin visited ``v`` times out of ``n`` is treated as ``x = v n_k / n``
    successes in ``n_k`` trials (exact binomial tail, continuous in x), where
    ``n_k = min(n_eff, n / longest run of visits to k)``. The second term is
    the guard for rare bins: whatever their own autocorrelation, x never exceeds
    the number of separate visits (runs) to the bin, and each run of a chain
    at stationarity enters the bin with probability at most p; so a rare bin
    visited once is never an alarm, which is exactly where the normal
    approximation of the old checks raised false alarms of 0.3-4%.
    """
    labels = np.asarray(labels)
    p_low = np.asarray(p_low, float)
    n_bins = p_low.size
    n = labels.size
    if n_eff is None:
        n_eff = chain_ess(labels, n_bins)
    x, n_k = np.empty(n_bins), np.empty(n_bins)
    for k in range(n_bins):
        hit = labels == k
        run = longest_run(hit)
        n_k[k] = min(n_eff, n / run) if run else n_eff
        x[k] = hit.sum() * n_k[k] / n
    return binomial_pvalue(x, n_k, p_low, p_high), x, n_k


def assert_chain_frequencies(labels, p_low, p_high=None, *, level=TEST_LEVEL, n_tests=None,
                             n_eff=None, what="bins"):
    """Every bin's frequency in a chain against its exact probability, Bonferroni at ``level``.

    ``n_tests`` is the number of comparisons the calling test makes in all
    (default: the bins here), so that the test as a whole has false-alarm rate
    <= level.
    """
    pvalues, x, n_k = chain_frequency_pvalues(labels, p_low, p_high, n_eff=n_eff)
    limit = level / (n_tests or pvalues.size)
    bad = pvalues < limit
    p_high = np.asarray(p_low if p_high is None else p_high, float)
    assert not bad.any(), (
        f"{what} {np.flatnonzero(bad)}: effective counts {x[bad]} of {n_k[bad]}, "
        f"exact probabilities {p_high[bad]} (p-values {pvalues[bad]}, limit {limit:.1e})")
    return pvalues


def normal_two_sided_z(level: float, n_tests: int = 1) -> float:
    """z such that a union of n_tests two-sided normal checks has false-alarm rate level."""
    return float(special.ndtri(1 - level / (2 * n_tests)))


def binomial_false_alarm(failures: int, runs: int, rate: float) -> float:
    """P(at least ``failures`` failures in ``runs`` runs) if each fails with ``rate``."""
    if failures <= 0:
        return 1.0
    return float(binomial_upper(failures, runs, rate))

