"""The Metropolis-Hastings driver and the argument door shared by every move.

:func:`metropolis_hastings` runs proposals from any ``propose(Z, rng)`` and
records the pieces of each log ratio in a ``stats`` dict (layout in
:mod:`ibp_lab.inference.split_merge`); :data:`MOVE_CONSTRAINTS` is the door of every
public move, declared once (:func:`check_move_inputs` runs it for callers that check once):
the hyperparameters pass :func:`ibp_lab._hyper.check_hyperparameters`,
the same door as :func:`ibp_lab.inference.gibbs.gibbs_sweep`, so moves and sweeps accept
exactly the same settings.
"""

from __future__ import annotations

import math

import numpy as np

from ibp_lab._checks import (HYPERPARAMETERS, Checked, Count, DataMatrix, Generator,
                             InverseTemperature, Joint, Rows, validated)
from ibp_lab._hyper import check_discount, check_feature_matrix, check_hyperparameters
from ibp_lab.inference._moves import Move
from ibp_lab.inference.split_merge._target import LogJoint

#: Most proposals one call makes (each keeps six numbers in ``stats``).
MAX_PROPOSALS = 10**7


def empty_stats() -> dict:
    return {
        "proposed_splits": 0, "accepted_splits": 0, "proposed_merges": 0,
        "accepted_merges": 0, "void": 0,
        "kind": [], "delta_log_likelihood": [], "delta_log_prior": [],
        "log_proposal_ratio": [], "log_ratio": [], "accepted": [],
    }


ARRAY_FIELDS = ("kind", "delta_log_likelihood", "delta_log_prior", "log_proposal_ratio",
                 "log_ratio", "accepted")


def finish_stats(stats: dict) -> dict:
    for name in ARRAY_FIELDS:
        dtype = {"kind": "<U5", "accepted": bool}.get(name, np.float64)
        stats[name] = np.asarray(stats[name], dtype=dtype)
    return stats


def combine_stats(all_stats) -> dict:
    """Add the counts and concatenate the per-proposal arrays of several ``stats``."""
    out = empty_stats()
    for stats in all_stats:
        for name, value in stats.items():
            if name in ARRAY_FIELDS:
                out[name].extend(value.tolist())
            else:
                out[name] += value
    return finish_stats(out)


def metropolis_hastings(target, Z, rng, n_proposals, propose, stats, current=None):
    """Run ``n_proposals`` proposals from ``propose(Z, rng)``; returns ``(Z, current)``."""
    if current is None:
        current = target(Z)
    for _ in range(n_proposals):
        proposal = propose(Z, rng)
        if proposal is None:
            stats["void"] += 1
            continue
        new = target(proposal.Z)
        # the tempered target p(X | Z)^b P([Z]): the likelihood's change times b (b = 1 is
        # exact: a product with 1.0 changes no bit)
        d_lik = target.inverse_temperature * (new[0] - current[0])
        d_prior = new[1] - current[1]
        log_ratio = d_lik + d_prior + proposal.log_proposal_ratio
        accepted = math.log(rng.random()) < log_ratio
        stats[f"proposed_{proposal.kind}s"] += 1
        stats[f"accepted_{proposal.kind}s"] += int(accepted)
        for name, value in zip(ARRAY_FIELDS, (proposal.kind, d_lik, d_prior,
                                               proposal.log_proposal_ratio, log_ratio,
                                               accepted)):
            stats[name].append(value)
        if accepted:
            Z, current = proposal.Z, new
    return Z, current


#: ``n_proposals`` of the moves: at most :data:`MAX_PROPOSALS`.
PROPOSALS = Count(maximum=MAX_PROPOSALS)
#: The door of the moves on ``Z``, in its order (``n_proposals`` between ``rng`` and
#: ``inverse_temperature``): the same as gibbs_sweep's, so that moves and sweeps accept
#: exactly the same settings.
MOVE_CONSTRAINTS = dict(
    X=DataMatrix(),
    Z=Checked(check_feature_matrix, rows_of="X"),
    hyperparameters=Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS),
    discount=Joint(check_discount, Rows("X"), "alpha", "beta", "discount", sets="discount"),
    rng=Generator(),
    n_proposals=PROPOSALS,
    inverse_temperature=InverseTemperature(),
)
#: The same door without ``n_proposals`` (the singleton update has none).
SWEEP_CONSTRAINTS = {name: constraint for name, constraint in MOVE_CONSTRAINTS.items()
                     if name != "n_proposals"}


@validated(**MOVE_CONSTRAINTS)
def check_move_inputs(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals, beta, discount=0.0,
                      inverse_temperature=1.0):
    """:data:`MOVE_CONSTRAINTS` as a function, for callers that check once and then run
    many rounds: ``(X, Z, LogJoint, rng, n_proposals)``, checked."""
    return X, Z, LogJoint(X, alpha, sigma_x, sigma_a, beta, discount=discount,
                          inverse_temperature=inverse_temperature), rng, n_proposals


class SplitMergeMove(Move):
    """``n_proposals`` Metropolis-Hastings proposals of one split-merge family, as a move
    (:class:`ibp_lab.inference.chains.Move`): subclasses give the proposer."""

    @validated(n_proposals=PROPOSALS)
    def __init__(self, n_proposals: int = 10):
        self.n_proposals = n_proposals

    def _proposer(self, target):
        """``propose(Z, rng) -> Proposal or None`` for the target ``target``."""
        raise NotImplementedError

    def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
        target = LogJoint(X, *hyper, discount=hyper.discount,
                          inverse_temperature=inverse_temperature)
        stats = empty_stats()
        Z, _ = metropolis_hastings(target, Z, rng, self.n_proposals, self._proposer(target), stats)
        return np.ascontiguousarray(Z), finish_stats(stats)
