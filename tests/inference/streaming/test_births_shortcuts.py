"""The buffer's decomposition takes shortcuts that must not change a single draw (issue 54).

``ibp_lab.inference.streaming.births`` runs the kernel's compiled sweeps with the prior's
constants computed once per buffer (``_BufferSweeps``) and scores each start's final state
without the public doors' checks (``_log_joint``). What is checked, bit for bit:

- the sweeps give the same ``Z`` and leave the generator in the same state as the public
  ``gibbs_sweep`` (the pilot's sweeps) and the kernel's ``sweeps`` (the starts' rounds);
- the score is the number ``collapsed_loglik + log_prior`` gives, with equal columns
  (where the prior counts them) and without;
- a whole decomposition equals the one composed from the public functions (the schedule
  of the module docstring: pilot, starts from BP-means and from nothing, sweeps and
  split-merge rounds, the state of highest log joint);
- the BP-means pass (``ibp_lab.inference.streaming.bp_means``, the first start), written
  element by element, gives the numbers of its former array expressions.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from numba import njit

from ibp_lab import _kernel
from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.gibbs import gibbs_sweep
from ibp_lab.inference.split_merge import sequential_split_merge
from ibp_lab.inference.streaming import births
from ibp_lab.inference.streaming.bp_means import bp_means_one_pass
from ibp_lab.models.linear_gaussian import collapsed_loglik, feature_posterior
from ibp_lab.models.prior import log_prior


def buffer_rows(seed: int, n_rows: int = 40, dim: int = 12) -> np.ndarray:
    """Rows that share three features (some rows two of them), noise 0.5."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3, dim))
    Z = (rng.random((n_rows, 3)) < 0.4).astype(float)
    return np.ascontiguousarray(Z @ A + 0.5 * rng.normal(size=(n_rows, dim)))


def same_generator(a: np.random.Generator, b: np.random.Generator) -> bool:
    return a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("seed", range(4))
def test_buffer_sweeps_are_the_public_sweeps_draw_for_draw(seed):
    R = buffer_rows(seed)
    alpha = 0.8
    sweeps = births._BufferSweeps(R, alpha, 0.5, 1.0)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    Z_ours = Z_theirs = np.zeros((R.shape[0], 0))
    for _ in range(6):  # the pilot's sweeps, one at a time, from no features
        Z_ours = sweeps(Z_ours, 1, ours)
        Z_theirs = gibbs_sweep(R, Z_theirs, alpha, 0.5, 1.0, theirs)
        assert np.array_equal(Z_ours, Z_theirs) and Z_ours.dtype == Z_theirs.dtype
    assert same_generator(ours, theirs)
    for _ in range(4):  # a start's rounds: several sweeps per call
        Z_ours = sweeps(Z_ours, births.SPLIT_MERGE_EVERY, ours)
        Z_theirs = _kernel.sweeps(R, Z_theirs, alpha, 0.5, 1.0, 1.0,
                                  births.SPLIT_MERGE_EVERY, theirs)[0]
        assert np.array_equal(Z_ours, Z_theirs)
    assert same_generator(ours, theirs)
    assert Z_ours.shape[1] > 0  # the check saw features, not only empty states


def test_the_score_of_a_start_is_collapsed_loglik_plus_log_prior_exactly():
    R = buffer_rows(7)
    sum_sq = float(np.sum(R * R))
    rng = np.random.default_rng(7)
    distinct = (rng.random((R.shape[0], 5)) < 0.3).astype(np.int8)
    distinct[0] = 1  # no empty column
    twice = np.column_stack([distinct, distinct[:, :2]])  # two columns equal to others
    with_empty = np.column_stack([distinct, np.zeros(R.shape[0], np.int8)])
    for Z in (distinct, twice, with_empty, np.zeros((R.shape[0], 0), np.int8)):
        expected = collapsed_loglik(R, Z, 0.5, 1.0) + log_prior(Z, 0.8)
        assert births._log_joint(R, Z, sum_sq, 0.8, 0.5, 1.0) == expected


def decomposition_from_public_functions(R, rng, alpha, sigma_x, sigma_a, pilot):
    """The joint decomposition (no row out of reach) as the module docstring states it,
    from the public sweep, split-merge and scores: the reference of the shortcuts."""
    n_rows = R.shape[0]
    if pilot:
        pilot_rng, Z, shared = copy.deepcopy(rng), np.zeros((n_rows, 0)), False
        for _ in range(births.PILOT_SWEEPS):
            Z = gibbs_sweep(R, Z, alpha, sigma_x, sigma_a, pilot_rng)
            if Z.shape[1] and Z.sum(axis=0).max() >= births.MIN_OWNERS:
                shared = True
                break
        if not shared:
            return np.zeros((n_rows, 0)), np.zeros((0, R.shape[1]))
    best, best_z = -np.inf, None
    for start in range(births.RESTARTS):
        Z = births._bp_means_start(R, sigma_x) if start == 0 else np.zeros((n_rows, 0))
        for _ in range(births.SWEEPS // births.SPLIT_MERGE_EVERY):
            Z = _kernel.sweeps(R, Z, alpha, sigma_x, sigma_a, 1.0, births.SPLIT_MERGE_EVERY,
                               rng)[0]
            if Z.shape[1]:
                Z, _ = sequential_split_merge(R, Z, alpha, sigma_x, sigma_a, rng,
                                              births.SPLIT_MERGE_PROPOSALS)
        joint = collapsed_loglik(R, Z, sigma_x, sigma_a) + log_prior(Z, alpha)
        if joint > best:
            best, best_z = joint, Z
    owners = best_z[:, best_z.sum(axis=0) >= births.MIN_OWNERS].astype(np.float64)
    if owners.shape[1] == 0:
        return owners, np.zeros((0, R.shape[1]))
    return owners, feature_posterior(R, owners, sigma_x, sigma_a)[0]


@pytest.mark.parametrize("case", ["shared, pilot", "shared, no pilot", "images",
                                  "noise, pilot", "noise, no pilot"])
def test_a_decomposition_is_the_one_composed_from_the_public_functions(case):
    if case == "images":
        R = simulate_four_feature_data(np.random.default_rng(3), n=60)[0]
    elif case.startswith("noise"):
        R = 0.5 * np.random.default_rng(4).normal(size=(50, 10))
    else:
        R = buffer_rows(5)
    R = np.ascontiguousarray(R, dtype=np.float64)
    alpha = 0.2 if case.startswith("noise") else 1.0
    pilot = case.endswith(" pilot") and "no pilot" not in case
    found = births.decompose_buffer(R, np.random.default_rng(11), alpha=alpha, sigma_x=0.5,
                                    sigma_a=1.0, pilot=pilot)
    owners, means = decomposition_from_public_functions(R, np.random.default_rng(11), alpha,
                                                        0.5, 1.0, pilot)
    assert np.array_equal(found.owners, owners)
    assert np.array_equal(found.means, means)
    if not case.startswith("noise"):
        assert found.n_features >= 2  # the comparison covered births, not only empties


# ---------------------------------------------------------------------------------------
# BP-means (the first start) element by element: the numbers of the array expressions
# ---------------------------------------------------------------------------------------


@njit(cache=False)
def array_expression_pass(X, gamma2, n_steps, ossify):
    """The pass of ``bp_means._one_pass`` as it was written with array expressions (one
    temporary array per feature and step), compiled the same way: the reference."""
    n, D = X.shape
    features = np.zeros((n, D))
    variance = np.zeros(n)
    owners = np.zeros(n)
    Z = np.zeros((n, n), np.int8)
    K = 0
    for i in range(n):
        A = features[:K].copy()
        z = owners[:K] / (i + 1)
        residual = X[i] - z @ A
        for _ in range(n_steps):
            for l in range(K):
                r = residual + z[l] * A[l]
                z[l] = 1.0 if np.sum((r - A[l]) ** 2) < np.sum(r**2) else 0.0
                residual = r - z[l] * A[l]
            for l in range(K):
                r = residual + z[l] * A[l]
                if z[l] == 1.0:
                    eta = variance[l] / (1.0 + variance[l])
                    if ossify:
                        eta /= owners[l] + 1.0
                    A[l] = features[l] + eta * (r - features[l])
                else:
                    A[l] = features[l]
                residual = r - z[l] * A[l]
        for l in range(K):
            if z[l] == 1.0:
                v = variance[l]
                variance[l] = v - v**2 / ((owners[l] + 1.0) * (1.0 + v)) if ossify \
                    else v / (1.0 + v)
            features[l] = A[l]
            owners[l] += z[l]
            Z[i, l] = np.int8(z[l])
        if residual @ residual > gamma2:
            features[K] = residual
            variance[K] = 1.0
            owners[K] = 1.0
            Z[i, K] = 1
            K += 1
    return np.ascontiguousarray(Z[:, :K]), features[:K].copy()


def test_bp_means_pass_is_the_array_expression_pass_bit_for_bit():
    rng = np.random.default_rng(54)
    for _ in range(60):
        n_rows, dim = int(rng.integers(1, 90)), int(rng.integers(1, 40))
        k = int(rng.integers(1, 6))
        A = rng.normal(size=(k, dim)) * rng.choice([0.1, 1.0, 10.0])
        X = (rng.random((n_rows, k)) < rng.random()) @ A \
            + rng.choice([0.01, 0.5, 2.0]) * rng.normal(size=(n_rows, dim))
        gamma = float(rng.choice([0.3, 1.0, 3.0])) * np.sqrt(dim) / 3
        for ossify in (False, True):
            for steps in (1, 3):
                Z, F = bp_means_one_pass(X, gamma, n_steps=steps, ossify=ossify)
                Z_ref, F_ref = array_expression_pass(np.ascontiguousarray(X), gamma**2, steps,
                                                     ossify)
                assert np.array_equal(Z, Z_ref) and Z.dtype == Z_ref.dtype
                assert F.shape == F_ref.shape and F.tobytes() == F_ref.tobytes()
