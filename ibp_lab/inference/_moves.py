"""What a move is, shared by the samplers that apply moves (private to the inference wing).

A move is one Markov step on ``Z`` at fixed hyperparameters::

    move(X, Z, rng, hyper, inverse_temperature=1.0) -> (Z, stats)

that leaves the tempered posterior ``p(X | Z)^b P([Z])`` invariant, ``b`` the inverse
temperature (``b = 1`` the posterior, ``b = 0`` the IBP prior): the likelihood is raised
to ``b``, the prior is not. The chain runner (:mod:`ibp_lab.inference.chains`) applies
moves at ``b = 1``; replica exchange (:mod:`ibp_lab.inference.tempering`) at each rung's
``b``; sequential Monte Carlo (:mod:`ibp_lab.inference.smc`) at each step's ``b``, as
BlackJAX's tempered SMC runs any kernel on a tempered density. The package's moves are
defined beside their algorithms: :class:`ibp_lab.inference.gibbs.GibbsSweep`, and the
split-merge moves and the singleton update in :mod:`ibp_lab.inference.split_merge`.

A chain (:func:`ibp_lab.inference.chains.run_chain`) also takes moves on the
hyperparameters given ``Z`` (:class:`HyperparameterMove`: ``AlphaUpdate``,
``DiscountUpdate`` and ``ScaleUpdate``, defined in :mod:`ibp_lab.inference.chains`), so
that a chain is one list of moves. Replica exchange and SMC hold the hyperparameters
fixed and refuse them.

Here: the base classes :class:`Move` and :class:`HyperparameterMove`, :func:`check_moves`
(the door of ``moves=``, which resolves names through a registry the caller passes) and
:func:`move_keys`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Move", "HyperparameterMove", "check_moves", "move_keys"]


class Move:
    """One step on ``Z`` at fixed hyperparameters and inverse temperature.

    ``move(X, Z, rng, hyper, inverse_temperature=1.0) -> (Z, stats)``: ``X`` and ``Z``
    have passed the runner's doors, ``hyper`` is an :class:`ibp_lab._hyper.Hyperparameters`
    and ``inverse_temperature`` a number in ``[0, 1]``; a move trusts them. It leaves
    ``p(X | Z)^b P([Z])`` invariant, ``b = inverse_temperature`` (a subclass written
    before tempering, without the argument, still runs in the chain runner, which calls
    every move at ``b = 1`` without passing it). ``stats`` is the split-merge layout of
    :mod:`ibp_lab.inference.split_merge` for Metropolis-Hastings moves and empty (``{}``)
    for moves that always move. Subclasses set ``name`` (the key of their stats in
    :attr:`ibp_lab.inference.chains.ChainResult.move_stats`, and the string that names
    the move in ``moves=``) and ``n_proposals`` (Metropolis-Hastings proposals per call,
    0 for the others).
    """

    name = "move"
    n_proposals = 0

    def __call__(self, X: np.ndarray, Z: np.ndarray, rng: np.random.Generator, hyper,
                 inverse_temperature: float = 1.0) -> tuple[np.ndarray, dict]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if not self.n_proposals else f'n_proposals={self.n_proposals}'})"


class HyperparameterMove:
    """One step on hyperparameters given ``Z``, in a chain: the base of the chain runner's
    ``AlphaUpdate``, ``DiscountUpdate`` and ``ScaleUpdate`` (:mod:`ibp_lab.inference.chains`).

    The object holds only its settings, checked at construction, so one object may serve
    many chains. The chain runner asks it for each chain's own step, ``move._start(chain)``
    (with fresh adaptive state, if any; ``chain`` is the runner's view of the chain: the
    data, ``burn``, ``H_N``), and calls that step once an iteration as ``step(t, Z, hyper,
    rng) -> (hyper, log_likelihood)``: ``t`` the iteration, ``log_likelihood`` ``log p(X |
    Z, sigma_x, sigma_a)`` at the new hyperparameters when the step computed it, else
    ``None``. ``targets`` names the hyperparameters the move changes (a chain refuses two
    moves that change the same one) and ``name`` the move in messages.
    """

    name = "hyperparameter_move"
    targets: tuple[str, ...] = ()

    def _start(self, chain):
        raise NotImplementedError


def check_moves(moves, registry: dict, *, hyperparameters: bool = False) -> tuple:
    """A move, a name of one, or a non-empty list of those, as a tuple of move objects.

    ``registry`` maps each name to its class (:data:`ibp_lab.inference.chains.MOVES`); a
    name gives the move with its default settings. With ``hyperparameters`` (the chain
    runner) the tuple may also hold :class:`HyperparameterMove` objects; without (replica
    exchange, SMC: runners at fixed hyperparameters) a ``TypeError`` refuses them.
    """
    if isinstance(moves, (Move, HyperparameterMove, str)):
        moves = [moves]
    if not isinstance(moves, (list, tuple)) or len(moves) == 0:
        raise TypeError(f"moves must be a Move, a move name or a non-empty list of them "
                        f"(names: {sorted(registry)}), got {moves!r}")
    checked = []
    for position, move in enumerate(moves):
        if isinstance(move, str):
            if move not in registry:
                raise ValueError(f"moves[{position}] must be one of {sorted(registry)}, got {move!r}")
            move = registry[move]()
        if isinstance(move, HyperparameterMove) and not hyperparameters:
            raise TypeError(
                f"moves[{position}] is {move!r}, a move on the hyperparameters: only run_chain "
                f"takes those; this runner holds the hyperparameters fixed, so pass moves on Z "
                f"only (GibbsSweep, the split-merge moves, SingletonUpdate)")
        if not isinstance(move, (Move, HyperparameterMove) if hyperparameters else Move):
            kinds = ("a Move (for example chains.GibbsSweep()), a hyperparameter move "
                     "(chains.AlphaUpdate(), ...)" if hyperparameters
                     else "a Move (for example chains.GibbsSweep())")
            raise TypeError(f"moves[{position}] must be {kinds} or a move name, "
                            f"got {type(move).__name__}")
        checked.append(move)
    return tuple(checked)


def move_keys(moves: tuple[Move, ...]) -> list[str]:
    """The key of each move's stats: its name, numbered when a name repeats."""
    names = [move.name for move in moves]
    return [name if names.count(name) == 1 else f"{name}_{names[:i + 1].count(name)}"
            for i, name in enumerate(names)]
