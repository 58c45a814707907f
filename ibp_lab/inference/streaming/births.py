"""Births from a buffer: several observations must agree before a feature is born.

A birth from one observation's residual (``births="single"``, the estimator's original
rule) turns everything that observation shows and no feature explains into *one* feature.
Where observations show several unexplained features at once (the canonical setting of
Griffiths and Ghahramani's images: each of four features present with probability 1/2,
noise 0.5) those features are born fused, and a single-birth pass has no move that splits
them.

With ``births="buffer"`` an observation that the current features do not explain is
*admitted* to a buffer instead: its residual ``r_n = x_n - sum_k b_nk mu_k`` is kept (``D``
numbers) with its index ``n``. The test: if the current features explained ``x_n``, its
expected misfit ``E_q |x_n - sum_k z_nk A_k|^2`` divided by ``sigma_x^2`` would be about a
chi-square variable with ``D`` degrees of freedom (the noise; the posterior uncertainty of
the features adds to it, and fitting ``b_n`` and the features to ``x_n`` itself takes a
little away, so the law is approximate), so a row whose misfit exceeds the
``1 - ADMIT_LEVEL`` quantile is admitted (:func:`admission_threshold`). When the buffer
holds ``buffer_size`` residuals (or the stream ends,
:meth:`~ibp_lab.inference.streaming.RecursiveIBP.flush`), :func:`decompose_buffer` explains them
*jointly* as a small linear-Gaussian IBP: collapsed Gibbs sweeps (``ibp_lab.inference.gibbs``), every
``SPLIT_MERGE_EVERY`` of them followed by sequential split-merge proposals
(``ibp_lab.inference.split_merge``), ``SWEEPS`` sweeps from each of ``RESTARTS`` starts, keeping the
state of highest log joint (see *The search* below; ``moves=`` sets other rounds). Features
owned by at least ``MIN_OWNERS`` buffered rows are born, with the Gaussian posterior of their
images given the buffer (``ibp_lab.models.linear_gaussian.feature_posterior``); the buffer is
emptied. Memory stays bounded: ``buffer_size * D`` numbers.

A buffer of noise (late in a long stream a fraction ``ADMIT_LEVEL`` of well-explained rows
is admitted) would cost the full sampler for nothing. So a *pilot* comes first: up to
``PILOT_SWEEPS`` Gibbs sweeps without split-merge, on a copy of the generator, stopping as
soon as a feature has ``MIN_OWNERS`` owners; if none appears, the buffer is emptied with no
births. The pilot draws from a copy, so where it finds a shared feature the full sampler
runs exactly as it would without it. It is used for full buffers only: the partly filled
buffer that :meth:`~ibp_lab.inference.streaming.RecursiveIBP.flush` decomposes at the end of a stream
is the last chance for its rows, so it always gets the full sampler. (Piloting it too was
tried: it saved the full sampler on a last buffer of noise, but on the book's digits, in
shuffled orders, it lost features that the full sampler's BP-means start finds and the
pilot's short run from no features does not, and the held-out score fell by 0.2 to 1.2
nats per digit.)

The mass parameter of the buffer's IBP is chosen so that it expects as many new features as
the stream's prior expects the buffered rows to create: row ``n`` creates
``Poisson(alpha beta / (beta + n - 1))`` new features, and a one-parameter IBP on ``B`` rows
creates ``alpha_B H_B`` in all, so ``alpha_B = sum_i alpha beta / (beta + n_i - 1) / H_B``
(:func:`buffer_alpha`). At the start of a stream (rows ``1 .. B`` all admitted, ``beta =
1``) this is ``alpha`` itself; later in the stream a feature needs more rows' agreement.

A buffer's decomposition costs a bounded amount whatever its contents. The sampler's cost
grows with the number of features it holds, and a residual far larger than the features'
scale ``sigma_a`` would make it hold hundreds (a 2 x 5 buffer of values 1e3 with ``sigma_a =
1`` settles near 600 features and took minutes). Under the model a row with ``m`` features
has residual coordinates of variance about ``sigma_x^2 + m sigma_a^2``, so a row whose
residual alone implies more features than the buffer's IBP holds with probability ``1 -
OUT_OF_REACH_TAIL`` (:func:`feature_reach`: the Poisson quantile of ``K+ ~ Poisson(alpha_B
H_B)``) is *out of reach* of the joint decomposition (:func:`implied_features`). Such a row
is explained alone, as a single birth would: it owns one new feature, the Gaussian posterior
of an image given that row. The other rows are decomposed jointly as above.

The search. The first start is one pass of BP-means (:mod:`ibp_lab.inference.streaming.bp_means`,
the small-noise limit of the same model) over the rows in order of increasing norm, with
a new feature wherever a residual's squared norm exceeds ``sigma_x^2`` times the admission
threshold (the admission test itself): a row that shows one feature is smaller than rows
that show sums of features, so features are created from single-feature rows first. The
other starts are empty. Starts from no features settle in different local modes, some
tens of nats below the best (on one data set of Griffiths and Ghahramani's images, 2 of 6
starts of 250 sweeps stayed about 75 nats below the others), so several short starts find
the best mode about as often as a few long ones, for less; the BP-means start finds the
planted features of well-separated Gaussian features at once, where starts from nothing
stayed hundreds of nats below them. Measured (``benchmarks/streaming.py``, items 6 and 7):
a first buffer of 100 rows of the item-6 stream costs about 0.15 s of CPU against about
1 s for the schedule used before (4 empty starts of 250 sweeps, 3 proposals after every
sweep). On the canonical images one pass with a buffer recovered the four features in 38
of 40 new data sets at 100 images and 38 of 40 at 1,000 (the old schedule: 38 and 34), and
in 10 of 10 of the chapter's data sets at 100, 1,000 and 10,000 images. The schedules tried
(8 x 60 and 10 x 40 and 16 x 20 sweeps with split-merge every second sweep, 8 x 60 with
every third, and this one) recovered 36 to 39 of 40 each, differences within the binomial
noise of 40 data sets; this one is the cheapest that also kept the chapter's 10 of 10.

Rounds of moves. Each start runs ``SWEEPS // SPLIT_MERGE_EVERY`` rounds; a round is a list
of moves on ``Z`` applied in turn (``moves=`` of :func:`decompose_buffer`,
``buffer_moves=`` of the estimator), the moves of :func:`ibp_lab.inference.chains.run_chain`
(``move(X, Z, rng, hyper) -> (Z, stats)``, :mod:`ibp_lab.inference._moves`) called on the
buffer's residuals at the buffer's hyperparameters (``alpha_B``, ``sigma_x``, ``sigma_a``,
``beta = 1``; moves on the hyperparameters are refused, as replica exchange and SMC refuse
them). The default round is ``SPLIT_MERGE_EVERY`` Gibbs sweeps then
``SPLIT_MERGE_PROPOSALS`` sequential split-merge proposals, the schedule above, and gives
the same draws as the list ``[GibbsSweep()] * SPLIT_MERGE_EVERY +
[SequentialSplitMerge(n_proposals=SPLIT_MERGE_PROPOSALS)]``. A decomposition makes some 120
calls of moves, so the package's own sweeps and sequential split-merge (those two classes,
in the default round or in a list) run on the inputs checked once per buffer, without the
doors and constants each call of the public moves recomputes; other moves are called as the
runners call them. The BP-means start, the choice of the best start and the pilot (Gibbs
sweeps, whatever the rounds) stay as they are: a round without a move that creates
features (split-merge only) starts from BP-means' features or from none.

The estimator seeds the sampler's generator with the index of the observation at which the
buffer is decomposed, so that fitting stays deterministic and a stream resumed from a
checkpoint gives the same features as one never interrupted.
"""

from __future__ import annotations

import copy

import numpy as np
from scipy import stats
from scipy.special import gammaln

from ibp_lab import _kernel
from ibp_lab._checks import (
    MAX_PARAMETER,
    MIN_PARAMETER,
    check_count,
    check_data_matrix,
    check_flag,
    check_positive,
    check_real_array,
    check_rng,
)
from ibp_lab._hyper import (Hyperparameters, harmonic, log_stable_class_law,
                            stable_new_dish_rate)
from ibp_lab.models.linear_gaussian import feature_posterior
from ibp_lab.models.prior import log_prior
from ibp_lab.inference.gibbs import GibbsSweep
from ibp_lab.inference.split_merge import SequentialSplitMerge
from ibp_lab.inference.split_merge._metropolis import check_move_inputs
from ibp_lab.inference.split_merge._sequential import sequential_moves
from ibp_lab.inference.streaming._settings import check_buffer_moves
from ibp_lab.inference.streaming.bp_means import bp_means_one_pass

__all__ = ["ADMIT_LEVEL", "RESTARTS", "SWEEPS", "SPLIT_MERGE_EVERY", "SPLIT_MERGE_PROPOSALS",
           "MIN_OWNERS",
           "PILOT_SWEEPS", "OUT_OF_REACH_TAIL",
           "admission_threshold", "buffer_alpha", "decompose_buffer", "feature_reach",
           "implied_features", "BufferBirths"]

#: A row is admitted when its misfit is this improbable as noise (chi-square upper tail).
ADMIT_LEVEL = 0.01
#: Starts of the buffer's sampler (the first from BP-means, the others empty); the state
#: of highest log joint is kept.
RESTARTS = 12
#: Collapsed Gibbs sweeps per start.
SWEEPS = 30
#: Sweeps between two rounds of split-merge proposals.
SPLIT_MERGE_EVERY = 3
#: Sequential split-merge proposals per round (they split fused features).
SPLIT_MERGE_PROPOSALS = 2
#: A feature is born only if at least this many buffered rows own it.
MIN_OWNERS = 2
#: Most Gibbs sweeps of the pilot that tells a buffer of noise from one with features.
PILOT_SWEEPS = 25
#: Prior tail beyond which a row's implied number of features is out of the joint
#: decomposition's reach (module docstring).
OUT_OF_REACH_TAIL = 1e-12


def admission_threshold(dim: int) -> float:
    """The misfit (in units of ``sigma_x^2``) above which a row is admitted to the buffer.

    The ``1 - ADMIT_LEVEL`` quantile of the chi-square law with ``dim`` degrees of freedom.

    Examples
    --------
    >>> round(admission_threshold(36), 2)  # the 99% point of chi-square(36)
    58.62
    """
    dim = check_count("dim", dim, minimum=1)
    return float(stats.chi2.isf(ADMIT_LEVEL, dim))


def buffer_alpha(rows, *, log_alpha: float, beta: float) -> float:
    """Mass parameter of the buffer's IBP (module docstring): ``alpha_B``.

    Parameters
    ----------
    rows : array_like
        Indices ``n_i >= 1`` of the buffered observations in the stream (integers).
    log_alpha : float
        Log of the stream's mass parameter (finite).
    beta : float
        The stream's concentration, > 0.

    Returns
    -------
    float
        ``sum_i alpha beta / (beta + n_i - 1) / H_B``; 0.0 where it underflows.

    Examples
    --------
    Rows 1 to 10 of a stream with ``beta = 1``: the buffer's IBP is the stream's own.

    >>> buffer_alpha(np.arange(1, 11), log_alpha=np.log(2.0), beta=1.0)
    2.0
    """
    raw = np.asarray(check_real_array("rows", rows))
    if raw.ndim != 1 or raw.size == 0 or np.asarray(rows).dtype.kind not in "iu" \
            or raw.min() < 1:
        raise ValueError("rows must be a non-empty 1-D array of integer indices >= 1")
    if isinstance(log_alpha, bool) or not isinstance(log_alpha, (int, float, np.number)) \
            or not np.isfinite(log_alpha) or log_alpha > np.log(MAX_PARAMETER):
        raise ValueError(f"log_alpha must be a finite real <= log({MAX_PARAMETER:g}), got "
                         f"{log_alpha!r}")
    beta = check_positive("beta", beta)
    rows = raw.astype(np.float64)
    # beta + (n - 1), not (beta + n) - 1: for row 1 the latter rounds a tiny beta to 0
    rate = np.exp(log_alpha) * beta * np.sum(1.0 / (beta + (rows - 1.0)))
    harmonic = np.sum(1.0 / np.arange(1, rows.size + 1))
    return float(rate / harmonic)


def feature_reach(n_rows: int, *, alpha: float) -> int:
    """Most features the buffer's IBP holds but with probability ``OUT_OF_REACH_TAIL``.

    The ``1 - OUT_OF_REACH_TAIL`` quantile of ``K+ ~ Poisson(alpha H_B)``, the number of
    features of a one-parameter IBP on ``B = n_rows`` rows.

    Examples
    --------
    >>> feature_reach(100, alpha=1.0)  # the prior expects H_100 = 5.19 features
    28
    """
    n_rows = check_count("n_rows", n_rows, minimum=1)
    alpha = check_positive("alpha", alpha)
    return int(stats.poisson.isf(OUT_OF_REACH_TAIL, alpha * harmonic(n_rows, 1.0)))


def implied_features(residuals, *, sigma_x: float, sigma_a: float) -> np.ndarray:
    """How many features each residual alone implies: ``(|r|^2 / D - sigma_x^2) / sigma_a^2``.

    Under the model a row owning ``m`` features has residual coordinates of mean square
    about ``sigma_x^2 + m sigma_a^2`` (features drawn from ``N(0, sigma_a^2 I)``); the
    estimate is floored at 0. Computed in units of ``sigma_a`` so that it does not overflow.

    Examples
    --------
    >>> implied_features(np.full((1, 5), 1e3), sigma_x=1.0, sigma_a=1.0)
    array([999999.])
    """
    residuals = check_data_matrix("residuals", residuals)
    sigma_x = check_positive("sigma_x", sigma_x)
    sigma_a = check_positive("sigma_a", sigma_a)
    with np.errstate(over="ignore"):
        mean_square = np.mean((residuals / sigma_a) ** 2, axis=1)
        implied = np.maximum(mean_square - (sigma_x / sigma_a) ** 2, 0.0)
    if not np.all(np.isfinite(implied)):
        raise ValueError(f"residuals are too large for sigma_a = {sigma_a:g} (and sigma_x = "
                         f"{sigma_x:g}): their squares over sigma_a^2 overflow")
    return implied


class BufferBirths:
    """The features the buffer's rows agree on: what :func:`decompose_buffer` returns.

    Attributes
    ----------
    means : numpy.ndarray
        ``(K_new, D)`` posterior means of the new features' images.
    variances : numpy.ndarray
        ``(K_new,)`` posterior variance of each coordinate (the diagonal of the shared
        covariance: the streaming family keeps one variance per feature).
    owners : numpy.ndarray
        ``(B, K_new)`` ``float`` 0/1: which buffered rows own each new feature.
    """

    def __init__(self, means: np.ndarray, variances: np.ndarray, owners: np.ndarray) -> None:
        self.means = means
        self.variances = variances
        self.owners = owners

    @property
    def n_features(self) -> int:
        return self.means.shape[0]


def decompose_buffer(residuals, rng: np.random.Generator, *, alpha: float, sigma_x: float,
                     sigma_a: float, pilot: bool = True, moves=None) -> BufferBirths:
    """Explain buffered residuals jointly; return the features at least two rows own, and
    one feature for each row out of the joint decomposition's reach (module docstring).

    Parameters
    ----------
    residuals : array_like
        ``(B, D)`` residuals of the admitted rows, finite.
    rng : numpy.random.Generator
        Source of the sampler's draws (the estimator seeds it with the index of the
        current observation).
    alpha : float
        Mass parameter of the buffer's IBP (:func:`buffer_alpha`), >= 0. Below the
        samplers' floor ``MIN_PARAMETER`` (1e-100; 0 where ``alpha_B`` underflows) the
        buffer's prior expects fewer than ``1e-100 H_B`` features, and no feature is born.
    sigma_x, sigma_a : float
        The model's noise and feature standard deviations, > 0.
    pilot : bool, optional
        Run the pilot first and return no births if it finds no shared feature (module
        docstring).
    moves : Move, str or list of them, optional
        One round of the search (module docstring): moves on ``Z`` applied in turn at the
        buffer's hyperparameters (``alpha``, ``sigma_x``, ``sigma_a``, ``beta = 1``), as
        :func:`ibp_lab.inference.chains.run_chain` takes them (objects such as
        ``GibbsSweep()`` and ``SequentialSplitMerge(n_proposals=2)``, or their names);
        moves on the hyperparameters are refused. ``None`` (the default): the round of
        ``SPLIT_MERGE_EVERY`` Gibbs sweeps then ``SPLIT_MERGE_PROPOSALS`` sequential
        split-merge proposals, that is ``[GibbsSweep()] * SPLIT_MERGE_EVERY +
        [SequentialSplitMerge(n_proposals=SPLIT_MERGE_PROPOSALS)]``, draw for draw.

    Returns
    -------
    BufferBirths

    Examples
    --------
    Thirty rows, each showing one of two features or both: the buffer finds both.

    >>> rng = np.random.default_rng(0)
    >>> A = np.zeros((2, 8)); A[0, :4] = 1.0; A[1, 4:] = 1.0
    >>> Z = rng.random((30, 2)) < 0.6
    >>> R = Z @ A + 0.1 * rng.normal(size=(30, 8))
    >>> found = decompose_buffer(R, np.random.default_rng(30), alpha=1.0, sigma_x=0.1,
    ...                          sigma_a=1.0)
    >>> found.n_features, bool(np.allclose(np.sort(found.means.round(0), axis=0),
    ...                                    np.sort(A, axis=0)))
    (2, True)

    Rounds of other moves: one Gibbs sweep and a singleton update each.

    >>> from ibp_lab.inference.gibbs import GibbsSweep
    >>> from ibp_lab.inference.split_merge import SingletonUpdate
    >>> decompose_buffer(R, np.random.default_rng(30), alpha=1.0, sigma_x=0.1, sigma_a=1.0,
    ...                  moves=[GibbsSweep(), SingletonUpdate()]).n_features
    2
    """
    residuals = check_data_matrix("residuals", residuals)
    rng = check_rng(rng)
    alpha = check_positive("alpha", alpha, allow_zero=True)
    sigma_x = check_positive("sigma_x", sigma_x)
    sigma_a = check_positive("sigma_a", sigma_a)
    pilot = check_flag("pilot", pilot)
    moves = check_buffer_moves(moves, "moves")
    with np.errstate(over="ignore"):
        scaled = float(np.sum((residuals / sigma_x) ** 2))
    if not np.isfinite(scaled):
        raise ValueError(f"residuals are too large for sigma_x = {sigma_x:g}: their squared "
                         "norms over sigma_x^2 overflow")
    n_rows, dim = residuals.shape
    if alpha < MIN_PARAMETER:
        return BufferBirths(np.zeros((0, dim)), np.zeros(0), np.zeros((n_rows, 0)))
    alone = implied_features(residuals, sigma_x=sigma_x, sigma_a=sigma_a) \
        > feature_reach(n_rows, alpha=alpha)
    joint = _joint_births(residuals[~alone], rng, alpha, sigma_x, sigma_a, pilot, moves)
    if not alone.any():
        return joint
    owners = np.zeros((n_rows, joint.n_features + int(alone.sum())))
    owners[~alone, : joint.n_features] = joint.owners
    owners[np.flatnonzero(alone), joint.n_features + np.arange(int(alone.sum()))] = 1.0
    single_means, single_cov = feature_posterior(residuals[alone], np.eye(int(alone.sum())),
                                                 sigma_x, sigma_a)
    return BufferBirths(np.vstack([joint.means, single_means]),
                        np.r_[joint.variances, np.diag(single_cov)], owners)


def _joint_births(residuals, rng, alpha, sigma_x, sigma_a, pilot, moves) -> BufferBirths:
    """The joint decomposition of residuals within reach (module docstring); ``moves``
    checked (``None``: the default round)."""
    n_rows, dim = residuals.shape
    empty = BufferBirths(np.zeros((0, dim)), np.zeros(0), np.zeros((n_rows, 0)))
    if n_rows < MIN_OWNERS:
        return empty
    residuals = np.ascontiguousarray(residuals, dtype=np.float64)
    best, best_z = -np.inf, np.zeros((n_rows, 0))
    # the inputs of the sweeps and of the moves' target, checked once for the pilot and
    # every round of every start
    target = check_move_inputs(residuals, best_z, alpha, sigma_x, sigma_a, rng,
                               SPLIT_MERGE_PROPOSALS, 1.0)[2]
    sweeps = _BufferSweeps(residuals, alpha, sigma_x, sigma_a)
    if pilot and not _shares_a_feature(residuals, copy.deepcopy(rng), alpha, sigma_x,
                                       sigma_a, sweeps):
        return empty
    sum_sq = float(np.sum(residuals * residuals))
    steps = _round_steps(moves, residuals, Hyperparameters(alpha, sigma_x, sigma_a, 1.0),
                         target, sweeps)
    for start in range(RESTARTS):
        Z = _bp_means_start(residuals, sigma_x) if start == 0 else np.zeros((n_rows, 0))
        Z = np.ascontiguousarray(Z, dtype=np.int8)  # what the moves on Z take
        for _ in range(SWEEPS // SPLIT_MERGE_EVERY):
            for step in steps:
                Z = step(Z, rng)
        joint = _log_joint(residuals, Z, sum_sq, alpha, sigma_x, sigma_a)
        if joint > best:
            best, best_z = joint, Z
    owners = best_z[:, best_z.sum(axis=0) >= MIN_OWNERS].astype(np.float64)
    if owners.shape[1] == 0:
        return empty
    means, cov = feature_posterior(residuals, owners, sigma_x, sigma_a)
    return BufferBirths(np.asarray(means, dtype=np.float64), np.diag(cov).copy(), owners)


def _round_steps(moves, residuals, hyper, target, sweeps) -> tuple:
    """One round of the search as steps ``step(Z, rng) -> Z`` (``Z`` ``int8``, no empty
    column), from the checked ``moves`` (``None``: the default round).

    The package's own Gibbs sweeps and sequential split-merge (their exact classes) run
    on the decomposition's checked inputs, as the default round does: consecutive
    ``GibbsSweep()`` as one call of ``sweeps`` (the same draws as one sweep per call) and
    ``SequentialSplitMerge`` with the buffer's ``target``. Any other move is called as
    the runners call it.
    """
    if moves is None:
        return (_sweeps_step(sweeps, SPLIT_MERGE_EVERY),
                _split_merge_step(target, SPLIT_MERGE_PROPOSALS))
    steps, n_sweeps = [], 0
    for move in moves:
        if type(move) is GibbsSweep:
            n_sweeps += 1
            continue
        if n_sweeps:
            steps.append(_sweeps_step(sweeps, n_sweeps))
            n_sweeps = 0
        if type(move) is SequentialSplitMerge:
            steps.append(_split_merge_step(target, move.n_proposals))
        else:
            steps.append(_move_step(move, residuals, hyper))
    if n_sweeps:
        steps.append(_sweeps_step(sweeps, n_sweeps))
    return tuple(steps)


def _sweeps_step(sweeps, n_sweeps):
    return lambda Z, rng: sweeps(Z, n_sweeps, rng)


def _split_merge_step(target, n_proposals):
    # no proposal can be formed without a feature (and none draws a number): skip the call
    return lambda Z, rng: sequential_moves(target, Z, rng, n_proposals)[0] if Z.shape[1] else Z


def _move_step(move, residuals, hyper):
    def step(Z, rng):
        Z = np.asarray(move(residuals, Z, rng, hyper)[0])  # at b = 1, as run_chain calls it
        return np.ascontiguousarray(Z[:, Z.any(axis=0)], dtype=np.int8)
    return step


def _bp_means_start(residuals, sigma_x) -> np.ndarray:
    """The first start (module docstring): BP-means over the rows by increasing norm."""
    order = np.argsort(np.einsum("nd,nd->n", residuals, residuals), kind="stable")
    gamma = sigma_x * np.sqrt(admission_threshold(residuals.shape[1]))
    in_order = bp_means_one_pass(residuals[order], gamma)[0]
    Z = np.zeros(in_order.shape)  # every column has an owner: the row that made it
    Z[order] = in_order
    return Z


def _shares_a_feature(residuals, rng, alpha, sigma_x, sigma_a, sweeps=None) -> bool:
    """The pilot: does a short Gibbs run find a feature that ``MIN_OWNERS`` rows own?

    ``sweeps``: the decomposition's :class:`_BufferSweeps` of these (checked) residuals, if
    it has one already.
    """
    if sweeps is None:
        sweeps = _BufferSweeps(np.ascontiguousarray(residuals, dtype=np.float64), alpha,
                               sigma_x, sigma_a)
    Z = np.zeros((residuals.shape[0], 0))
    for _ in range(PILOT_SWEEPS):
        Z = sweeps(Z, 1, rng)
        if Z.shape[1] and Z.sum(axis=0).max() >= MIN_OWNERS:
            return True
    return False


class _BufferSweeps:
    """Collapsed Gibbs sweeps of one buffer's IBP (``beta = 1``) on its checked residuals.

    The draws and the arithmetic of :func:`ibp_lab.inference.gibbs.gibbs_sweep` and of the
    kernel's ``sweeps`` (the same compiled ``run_sweeps``), without what they redo at every
    call: the argument checks (the caller checks once) and the prior's two constants (the
    rate of a row's singletons and the table of log-odds of an old feature), which depend
    only on the number of rows and ``alpha``. A decomposition calls it some 120 times.
    """

    def __init__(self, residuals: np.ndarray, alpha: float, sigma_x: float,
                 sigma_a: float) -> None:
        n_rows = residuals.shape[0]
        self.residuals = residuals  # C-contiguous float64
        # the kernel's sweeps(..., beta=1.0, discount=0.0), computed as it computes them
        self.rate = float(stable_new_dish_rate(float(alpha), 1.0, 0.0, n_rows - 1.0))
        self.log_odds = _kernel.prior_log_odds_table(n_rows, 1.0, 0.0)
        self.sigma_x, self.sigma_a = float(sigma_x), float(sigma_a)
        self.k_trace = np.zeros(max(PILOT_SWEEPS, SPLIT_MERGE_EVERY), np.int64)
        self.no_classes = np.zeros((0, 1), np.int32)  # no class trace recorded

    def __call__(self, Z: np.ndarray, n_sweeps: int, rng) -> np.ndarray:
        """``n_sweeps`` sweeps from ``Z`` (empty columns dropped); the new ``int8`` ``Z``."""
        Zb, K = _kernel.to_buffer(Z)
        Zb, K = _kernel.run_sweeps(self.residuals, Zb, K, self.rate, self.log_odds,
                                   self.sigma_x, self.sigma_a, n_sweeps, rng, True,
                                   self.k_trace, self.no_classes, 1.0)
        return np.ascontiguousarray(Zb[:, :K])


def _log_joint(residuals, Z, sum_sq, alpha, sigma_x, sigma_a) -> float:
    """``collapsed_loglik(residuals, Z, sigma_x, sigma_a) + log_prior(Z, alpha)``, the same
    number, for a start's final ``Z`` (``int8``) on checked inputs.

    It skips the public doors' checks and, when every column has an owner and no two
    columns are equal (nearly always), ``log_prior``'s sort of the columns to count the
    equal ones (most of its time): each count is then 1, and ``sum_h log K_h!`` the sum of
    ``log 1! = 0`` that ``log_prior`` forms. ``sum_sq`` is ``sum(residuals**2)``.
    """
    Zf = Z.astype(np.float64)
    log_lik = _kernel.checked_loglik_from_stats(Zf.T @ Zf, Zf.T @ residuals, sum_sq,
                                                *residuals.shape, sigma_x, sigma_a)
    owners = Z.sum(axis=0)
    columns = np.ascontiguousarray(Z.T)
    if owners.min(initial=1) == 0 or \
            len({column.tobytes() for column in columns}) < columns.shape[0]:
        return log_lik + log_prior(Z, alpha)
    log_duplicates = float(np.sum(gammaln(np.ones(Z.shape[1], np.int64) + 1.0)))
    return log_lik + log_stable_class_law(owners.astype(float), Z.shape[0], Z.shape[1],
                                          log_duplicates, alpha, 1.0, 0.0)
