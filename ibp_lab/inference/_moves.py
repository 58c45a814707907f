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

Here: the base class :class:`Move`, :func:`check_moves` (the door of ``moves=``, which
resolves names through a registry the caller passes) and :func:`move_keys`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Move", "check_moves", "move_keys"]


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


def check_moves(moves, registry: dict) -> tuple[Move, ...]:
    """A move, a name of one, or a non-empty list of those, as a tuple of :class:`Move`.

    ``registry`` maps each name to its class (:data:`ibp_lab.inference.chains.MOVES`); a
    name gives the move with its default settings.
    """
    if isinstance(moves, (Move, str)):
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
        if not isinstance(move, Move):
            raise TypeError(f"moves[{position}] must be a Move (for example chains.GibbsSweep()) "
                            f"or a move name, got {type(move).__name__}")
        checked.append(move)
    return tuple(checked)


def move_keys(moves: tuple[Move, ...]) -> list[str]:
    """The key of each move's stats: its name, numbered when a name repeats."""
    names = [move.name for move in moves]
    return [name if names.count(name) == 1 else f"{name}_{names[:i + 1].count(name)}"
            for i, name in enumerate(names)]
