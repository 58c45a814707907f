"""The parameters of a :class:`~ibp_lab.inference.streaming.RecursiveIBP` stream: their one door.

:func:`check_settings` turns the estimator's parameters into a frozen :class:`Settings`;
:meth:`RecursiveIBP.fit`, :meth:`~RecursiveIBP.partial_fit` and a restored checkpoint
(``ibp_lab.inference.streaming._state``) all come through it, so a value refused here is refused
before any row is consumed.

With ``births="buffer"`` the stream hands its buffered residuals to the linear-Gaussian
collapsed sampler (:mod:`ibp_lab.inference.streaming.births`, which calls ``ibp_lab.inference.gibbs`` and
``ibp_lab.inference.split_merge``). That sampler has limits of its own
(:func:`ibp_lab._hyper.check_hyperparameters`): ``sigma_x / sigma_a`` at least
``MIN_NOISE_RATIO``, and the prior expected number of features of its buffer at most
``MAX_EXPECTED_FEATURES``. Both depend only on the parameters, so they are checked here
(:func:`_check_buffer_sampler`), in the estimator's words: a stream that passes the door
never meets them in the middle of a buffer.

``buffer_moves`` (the moves of one round of the buffer's search, :func:`check_buffer_moves`)
is a setting of the stream but not of its checkpoints: a state stores numbers, not move
objects, so it is not among :data:`SETTING_KEYS` (a stream with moves of its own is not
checkpointed; :meth:`~ibp_lab.inference.streaming.RecursiveIBP.get_state`).

Kept apart from the checkpoint code so that ``_limits`` (the bounds on memory and work),
``_stream`` (the running state) and ``_state`` (checkpoints) share it without importing
one another in a circle.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ibp_lab._checks import (MAX_PARAMETER, Checked, Count, Flag, Joint, OneOf, Positive,
                             check_positive, validated)
from ibp_lab._hyper import MAX_EXPECTED_FEATURES, MIN_NOISE_RATIO, harmonic
from ibp_lab.inference._moves import HyperparameterMove, Move, check_moves

__all__ = ["BIRTHS", "MAX_BUFFER", "MAX_STEPS", "MODELS", "SETTING_CONSTRAINTS", "SETTING_KEYS",
           "Settings", "check_buffer_moves", "check_settings", "settings_from"]

#: Largest birth buffer (rows); its memory is ``buffer_size * D`` numbers.
MAX_BUFFER = 10_000
BIRTHS = ("buffer", "single")
#: Largest number of coordinate-ascent steps per observation.
MAX_STEPS = 10_000
MODELS = ("linear_gaussian", "factor_analysis")
# Relative margin kept below the buffer sampler's feature limit: the sampler computes the
# same bound along another floating-point path (births.buffer_alpha, then harmonic).
_ROUNDING_MARGIN = 1e-9


@dataclass(frozen=True)
class Settings:
    """The estimator's parameters once checked (:func:`check_settings`); ``alpha`` as a log."""

    log_alpha: float
    beta: float
    sigma_x: float
    sigma_a: float
    sigma_w: float
    model: str
    n_steps: int
    tol: float
    ossify: bool
    keep_history: bool
    record_posteriors: bool
    births: str
    buffer_size: int
    #: The moves of one round of the buffer's search (:func:`check_buffer_moves`); ``None``
    #: the default round. Not stored in a state (module docstring).
    buffer_moves: tuple | None = None

    @property
    def alpha(self) -> float:
        """The mass parameter (0.0 where it underflows, as in the BP-means limit)."""
        return float(np.exp(self.log_alpha))


#: The settings a state stores, in the order of :class:`Settings` (not ``buffer_moves``:
#: move objects are not numbers a checkpoint can hold).
SETTING_KEYS = tuple(name for name in Settings.__dataclass_fields__ if name != "buffer_moves")


def check_buffer_moves(moves, name: str = "buffer_moves") -> tuple | None:
    """The door of the buffer's moves: ``None`` (the default round) or a tuple of moves on
    ``Z``.

    ``moves`` is ``None``, a move on ``Z`` (:class:`ibp_lab.inference._moves.Move`:
    ``GibbsSweep()``, ``SequentialSplitMerge(n_proposals=2)``, ...), the name of one in
    the runners' registry (:data:`ibp_lab.inference.chains.MOVES`; a name gives the
    move's defaults) or a non-empty list of them, as :func:`ibp_lab.inference.chains.run_chain`'s
    ``moves``. Moves on the hyperparameters are refused: the buffer's are fixed (``alpha_B``,
    ``sigma_x``, ``sigma_a``, ``beta = 1``), as in replica exchange and SMC. Every refusal is
    a ``ValueError`` naming ``name``.

    Examples
    --------
    >>> from ibp_lab.inference.gibbs import GibbsSweep
    >>> check_buffer_moves([GibbsSweep(), "sequential_split_merge"])
    (GibbsSweep(), SequentialSplitMerge(n_proposals=10))
    >>> check_buffer_moves(None) is None
    True
    """
    if moves is None:
        return None
    # the runners' registry, imported here: ibp_lab.inference.chains loads xarray, which a
    # stream with the default moves never needs
    from ibp_lab.inference.chains import MOVES

    kinds = f"moves on Z (GibbsSweep, SequentialSplitMerge, ...) or their names {sorted(MOVES)}"
    listed = [moves] if isinstance(moves, (Move, HyperparameterMove, str)) else moves
    if not isinstance(listed, (list, tuple)) or len(listed) == 0:
        raise ValueError(f"{name} must be None or a non-empty list of {kinds}, got {moves!r}")
    for position, move in enumerate(listed):
        where = name if listed is not moves else f"{name}[{position}]"
        if isinstance(move, HyperparameterMove):
            raise ValueError(f"{name} must hold moves on Z (GibbsSweep, SequentialSplitMerge, "
                             f"...), got {move!r}: the buffer's hyperparameters are fixed "
                             "(alpha_B, sigma_x, sigma_a, beta = 1)")
        if isinstance(move, str) and move not in MOVES:
            raise ValueError(f"{where} must be one of the move names {sorted(MOVES)}, got "
                             f"{move!r}")
        if isinstance(move, type):
            raise ValueError(f"{where} must be a move, got the class {move.__name__}: pass "
                             f"{move.__name__}(...) instead")
        if not isinstance(move, (Move, str)):
            raise ValueError(f"{where} must be one of the {kinds}, got "
                             f"{type(move).__name__}")
    return check_moves(listed, MOVES)  # names to moves, as the runners resolve them


def _check_births(births, model: str) -> str:
    """``"buffer"`` or ``"single"`` (``None``: the model's default, see :func:`check_settings`)."""
    if births is None:
        return "buffer" if model == "linear_gaussian" else "single"
    if not isinstance(births, str) or births not in BIRTHS:
        raise ValueError(f"births must be 'buffer', 'single' or None, got {births!r}")
    if births == "buffer" and model != "linear_gaussian":
        raise ValueError("births='buffer' needs model='linear_gaussian' (the buffer is "
                         "decomposed by the linear-Gaussian collapsed sampler); use "
                         "births='single' with factor analysis")
    return births


def _check_buffer_sampler(births: str, log_alpha: float, beta: float, sigma_x: float,
                          sigma_a: float, buffer_size: int) -> None:
    """Refuse the parameters that the buffer's collapsed sampler would refuse (module
    docstring), naming the estimator's parameters.

    The buffer's mass ``alpha_B`` (:func:`ibp_lab.inference.streaming.births.buffer_alpha`) is
    largest when the buffered rows are the stream's first ``B = buffer_size`` rows; then its
    IBP expects ``alpha_B H_B = alpha sum_{i < B} beta / (beta + i)`` features, which is
    therefore the most the sampler can be asked to hold (a flushed buffer has fewer rows,
    and fewer expected features).
    """
    if births != "buffer":
        return
    alpha = float(np.exp(log_alpha))  # as Settings.alpha reads it
    if sigma_x / sigma_a < MIN_NOISE_RATIO:
        raise ValueError(
            f"sigma_x / sigma_a must be >= {MIN_NOISE_RATIO:g} with births='buffer', got "
            f"sigma_x = {sigma_x:g} and sigma_a = {sigma_a:g} (ratio "
            f"{sigma_x / sigma_a:.3g}): the buffer's collapsed sampler loses "
            "all precision below it; raise sigma_x, lower sigma_a, or use births='single'")
    per_unit_alpha = harmonic(buffer_size, beta)
    expected = alpha * per_unit_alpha
    limit = MAX_EXPECTED_FEATURES * (1.0 - _ROUNDING_MARGIN)
    if expected > limit:
        raise ValueError(
            f"alpha = {alpha:.4g} is too large for births='buffer' with beta = "
            f"{beta:g} and buffer_size = {buffer_size}: the buffer's sampler "
            f"would expect up to {expected:.4g} features among its {buffer_size} "
            f"residuals (alpha sum_(i < buffer_size) beta / (beta + i)), more than its limit "
            f"of {MAX_EXPECTED_FEATURES}; alpha must be at most {limit / per_unit_alpha:.4g} "
            "here (or lower buffer_size or beta, or use births='single')")


def _checked_log_alpha(alpha, log_alpha) -> float:
    """The mass as a log: from ``alpha`` (> 0; ``None``: 1) or ``log_alpha`` (finite, at
    most ``log(MAX_PARAMETER)``), never both (:func:`check_settings`)."""
    if log_alpha is None:
        # alpha=None (the estimator's default) with no log_alpha is the unit mass
        return float(np.log(check_positive("alpha", 1.0 if alpha is None else alpha)))
    if alpha is not None:
        raise ValueError(f"give alpha or log_alpha, not both (got alpha={alpha!r} and "
                         f"log_alpha={log_alpha!r}); set alpha=None to use log_alpha")
    if isinstance(log_alpha, bool) or not isinstance(log_alpha, numbers.Real) \
            or not np.isfinite(log_alpha) or log_alpha > np.log(MAX_PARAMETER):
        raise ValueError(f"log_alpha must be a finite real <= log({MAX_PARAMETER:g}), "
                         f"got {log_alpha!r}")
    return float(log_alpha)


def _checked_buffer_moves(name: str, moves) -> tuple | None:
    """:func:`check_buffer_moves` as a constraint (the name first)."""
    return check_buffer_moves(moves, name)


def _check_moves_have_buffer(buffer_moves, births: str) -> None:
    """Refuse ``buffer_moves`` with ``births='single'``, which has no buffer to search."""
    if buffer_moves is not None and births != "buffer":
        raise ValueError(f"buffer_moves is for births='buffer' (the moves of the buffer's "
                         f"search), got births={births!r}, which has no buffer; leave "
                         "buffer_moves=None or use births='buffer'")


#: What the stream's parameters must be, in the order they are checked: the door of
#: :func:`check_settings` and :class:`~ibp_lab.inference.streaming.RecursiveIBP`'s
#: ``parameter_constraints``. ``alpha`` is folded into ``log_alpha``; ``births=None``
#: becomes the model's default.
SETTING_CONSTRAINTS = {
    "log_alpha": Joint(_checked_log_alpha, "alpha", "log_alpha", sets="log_alpha"),
    "model": OneOf(*MODELS),
    "births": Joint(_check_births, "births", "model", sets="births"),
    "beta": Positive(),
    "sigma_x": Positive(),
    "sigma_a": Positive(),
    "sigma_w": Positive(),
    "n_steps": Count(minimum=1, maximum=MAX_STEPS),
    "tol": Positive(upper=0.01),
    "ossify": Flag(),
    "keep_history": Flag(),
    "record_posteriors": Flag(),
    "buffer_size": Count(minimum=2, maximum=MAX_BUFFER),
    "buffer_moves": Checked(_checked_buffer_moves),
    "moves need a buffer": Joint(_check_moves_have_buffer, "buffer_moves", "births"),
    "buffer sampler": Joint(_check_buffer_sampler, "births", "log_alpha", "beta", "sigma_x",
                            "sigma_a", "buffer_size"),
}


@validated(**SETTING_CONSTRAINTS)
def check_settings(*, alpha, log_alpha, beta, sigma_x, sigma_a, sigma_w, model, n_steps, tol,
                   ossify, keep_history, record_posteriors, births=None,
                   buffer_size=100, buffer_moves=None) -> Settings:
    """The one door of the estimator's parameters: :meth:`RecursiveIBP.fit`, ``partial_fit``
    and a restored state (:func:`ibp_lab.inference.streaming._state.validate_state`) all come through it.

    At most one of ``alpha`` (> 0) and ``log_alpha`` (finite, at most
    ``log(MAX_PARAMETER)``) is given (neither: ``alpha = 1``); the logarithm reaches masses below the smallest
    float (:meth:`RecursiveIBP.bp_means_limit`). ``births`` is ``"buffer"`` or ``"single"``;
    ``None`` chooses ``"buffer"`` for the linear-Gaussian model and ``"single"`` for factor
    analysis, whose weights the buffer's collapsed sampler does not model (so
    ``"buffer"`` with factor analysis is refused). With ``births="buffer"`` the limits of
    the buffer's sampler are checked too (module docstring). ``buffer_moves`` passes
    :func:`check_buffer_moves` and is refused with ``births="single"``, which has no
    buffer to search.

    Examples
    --------
    >>> s = check_settings(alpha=2.0, log_alpha=None, beta=1.0, sigma_x=0.5, sigma_a=1.0,
    ...                    sigma_w=1.0, model="linear_gaussian", n_steps=3, tol=1e-6,
    ...                    ossify=False, keep_history=True, record_posteriors=False)
    >>> round(s.alpha, 12), s.n_steps, s.births
    (2.0, 3, 'buffer')
    >>> check_settings(alpha=1000.0, log_alpha=None, beta=1.0, sigma_x=0.5, sigma_a=1.0,
    ...                sigma_w=1.0, model="linear_gaussian", n_steps=3, tol=1e-6,
    ...                ossify=False, keep_history=True, record_posteriors=False)
    Traceback (most recent call last):
    ...
    ValueError: alpha = 1000 is too large for births='buffer' with beta = 1 and buffer_size = 100: the buffer's sampler would expect up to 5187 features among its 100 residuals (alpha sum_(i < buffer_size) beta / (beta + i)), more than its limit of 1000; alpha must be at most 192.8 here (or lower buffer_size or beta, or use births='single')
    """
    # the arguments arrive checked by SETTING_CONSTRAINTS (alpha folded into log_alpha)
    return settings_from(locals())


def settings_from(checked: dict) -> Settings:
    """The :class:`Settings` of checked parameters (:data:`SETTING_CONSTRAINTS`), by name;
    other names (``alpha``, ``rng``) are left out."""
    return Settings(**{name: checked[name] for name in Settings.__dataclass_fields__})
