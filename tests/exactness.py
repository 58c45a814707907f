"""One shared check: "this kernel leaves the exact posterior invariant on tiny data".

Every sampler and every move of the package is a Markov kernel on the binary
matrix ``Z``. On data with at most four rows, :func:`ibp_lab.inference.exact.class_posterior`
gives the exact posterior of every left-ordered class; a kernel that leaves it
invariant, run long enough, visits each class with that probability.
:func:`assert_leaves_posterior_invariant` runs any kernel ``Z -> Z``, tallies the
classes it visits and compares the tally with the enumeration by exact binomial
tails whose number of trials is the chain's effective sample size
(:mod:`tests.stats_checks`): every class above ``min_probability`` gets its own
bin, all other classes share one. Each bin is tested two-sided at
``level / n_bins`` (Bonferroni), so a correct kernel fails with probability at
most ``level`` whatever its autocorrelation (the ESS is estimated
conservatively, see :func:`tests.stats_checks.chain_ess`).

A kernel that is only invariant together with others (one split-merge move, say,
whose target is right but which cannot reach every class alone) is checked by
composing it with a sweep: ``lambda Z: move(sweep(Z))``; the composition of
invariant kernels is invariant, and a wrong move breaks it.

Example::

    from tests.exactness import assert_leaves_posterior_invariant
    rng = stat_rng(5)
    assert_leaves_posterior_invariant(
        lambda Z: gibbs_sweep(X, Z, 1.3, 0.6, 1.2, rng, beta=2.0),
        X, 1.3, 0.6, 1.2, beta=2.0, n_steps=40_000, what="gibbs_sweep")
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ibp_lab.inference import exact
from tests.stats_checks import TEST_LEVEL, chain_ess, chain_frequency_pvalues

#: Most rows for which the check enumerates the posterior (2^N - 1 column types).
MAX_ROWS = 4
#: Largest admitted bound on the posterior mass beyond the enumeration's k_max.
MAX_TAIL = 1e-3
# Bins listed in a failure message, the worst first.
_MAX_LINES = 8
# Largest k_max tried by default for N rows (about 10^5 classes or fewer).
_LARGEST_K_MAX = {1: 40, 2: 25, 3: 14, 4: 8}


def _exact_posterior(X, alpha, sigma_x, sigma_a, beta, k_max, discount=0.0):
    """The class posterior; without k_max, the smallest k_max whose tail is below MAX_TAIL."""
    largest = _LARGEST_K_MAX[X.shape[0]]
    candidates = [k_max] if k_max else range(min(6, largest), largest + 1)
    for k in candidates:
        post = exact.class_posterior(X, alpha, sigma_x, sigma_a, beta=beta, k_max=k,
                                     discount=discount)
        if post.tail_bound < MAX_TAIL:
            return post
    raise ValueError(
        f"the enumeration up to k_max = {k} leaves a tail of up to {post.tail_bound:.1e}"
        f" (>= {MAX_TAIL}): pass a larger k_max or use a smaller alpha")


def _describe(counts_row: np.ndarray, n_rows: int) -> str:
    """A class as its left-ordered matrix, rows joined by '/' (e.g. '110/011')."""
    Z = np.repeat(exact.column_types(n_rows), counts_row, axis=1)
    return "/".join("".join(str(v) for v in row) for row in Z) if Z.size else "(empty)"


def class_labels_of_chain(states, post, bins) -> np.ndarray:
    """Index in ``bins`` (class indices of ``post``) of each state, ``len(bins)`` if other."""
    index = {row.tobytes(): c for c, row in enumerate(post.counts)}
    position = np.full(len(post.probabilities) + 1, len(bins))
    position[bins] = np.arange(len(bins))
    return np.array([position[index.get(exact.class_counts(Z).astype(post.counts.dtype)
                                        .tobytes(), -1)] for Z in states])


def run_kernel(step: Callable, Z0, n_steps: int) -> list[np.ndarray]:
    """The states after each of ``n_steps`` applications of ``step``."""
    states, Z = [], np.asarray(Z0)
    for _ in range(n_steps):
        Z = step(Z)
        states.append(Z)
    return states


def assert_leaves_posterior_invariant(step: Callable, X, alpha: float, sigma_x: float,
                                      sigma_a: float, *, beta: float = 1.0, n_steps: int,
                                      Z0=None, k_max: int | None = None, burn: int = 100,
                                      min_probability: float = 0.003, level: float = TEST_LEVEL,
                                      n_tests: int = 1, what: str = "kernel",
                                      discount: float = 0.0, posterior=None):
    """Fail unless ``step`` visits the classes of ``Z`` with their exact posterior probabilities.

    Parameters
    ----------
    step : callable
        ``Z -> Z``: one application of the kernel (it draws from its own generator,
        which should come from ``tests.seeds.stat_rng``).
    X : array_like
        ``(N, D)`` data, ``N <= MAX_ROWS``.
    alpha, sigma_x, sigma_a, beta : float
        The posterior the kernel should leave invariant.
    n_steps : int
        Kernel applications after ``burn`` (which forget ``Z0``; default ``Z0`` is
        one feature owned by every row).
    k_max : int, optional
        Largest ``K+`` enumerated (default: the smallest, up to 14 for three rows
        and 8 for four, that leaves a tail below ``MAX_TAIL``); the tail bound
        widens the "other" bin's upper side.
    min_probability : float
        Classes at least this probable get their own bin.
    level : float
        False-alarm rate of the whole check for a correct kernel; ``n_tests`` other
        checks in the same test share it (each bin is tested at ``level / (n_bins
        n_tests)``).
    what : str
        Name of the kernel in the failure message.
    discount : float
        The three-parameter IBP's discount of the posterior (default 0).
    posterior : ibp_lab.inference.exact.ClassPosterior, optional
        The exact class posterior of another model (the noisy-OR's,
        :func:`ibp_lab.inference.noisy_or.class_posterior`); then ``sigma_x``, ``sigma_a``, ``beta``,
        ``discount`` and ``k_max`` are not used.

    Returns
    -------
    dict
        ``n_eff`` (the ESS used), ``p_values`` per bin, ``bins`` (class indices).
    """
    X = np.asarray(X, float)
    n_rows = X.shape[0]
    if n_rows > MAX_ROWS:
        raise ValueError(f"X must have at most {MAX_ROWS} rows for enumeration, got {n_rows}")
    post = posterior or _exact_posterior(X, alpha, sigma_x, sigma_a, beta, k_max, discount)
    Z0 = np.ones((n_rows, 1), np.int8) if Z0 is None else Z0
    states = run_kernel(step, Z0, burn + n_steps)[burn:]
    bins = np.flatnonzero(post.probabilities >= min_probability)
    labels = class_labels_of_chain(states, post, bins)
    p = np.append(post.probabilities[bins], max(1.0 - post.probabilities[bins].sum(), 0.0))
    tail = post.tail_bound
    # The enumeration is normalised without the tail: each class's true probability lies
    # in [p (1 - tail), p], the "other" bin's in [p_other (1 - tail), p_other + tail].
    p_low = p * (1 - tail)
    p_high = p + np.append(np.zeros(len(bins)), tail)
    n_eff = chain_ess(labels, len(p))
    pvalues, x, n_k = chain_frequency_pvalues(labels, p_low, p_high, n_eff=n_eff)
    limit = level / (len(p) * n_tests)
    bad = np.flatnonzero(pvalues < limit)
    if bad.size:
        frequencies = np.bincount(labels, minlength=len(p)) / len(labels)
        lines = [f"{what} does not leave the posterior invariant ({n_steps} steps, ESS "
                 f"{n_eff:.0f}, {len(p)} bins, limit {limit:.1e} per bin):"]
        worst = bad[np.argsort(pvalues[bad])]
        for b in worst[:_MAX_LINES]:
            name = "other classes" if b == len(bins) else _describe(post.counts[bins[b]], n_rows)
            lines.append(f"  {name}: visited {frequencies[b]:.4f}, exact {p[b]:.4f} "
                         f"(p-value {pvalues[b]:.1e})")
        if worst.size > _MAX_LINES:
            lines.append(f"  ... and {worst.size - _MAX_LINES} more bins")
        raise AssertionError("\n".join(lines))
    return {"n_eff": n_eff, "p_values": pvalues, "bins": bins}
