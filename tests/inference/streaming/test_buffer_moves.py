"""The birth buffer takes moves (issue 49): ``decompose_buffer(..., moves=)`` and
``RecursiveIBP(buffer_moves=)``.

- the default round (``moves=None``) gives the births it gave before moves could be
  chosen, bit for bit: a digest of decompositions and of a stream's features, computed
  before the change, is stored here;
- the default written out as a list (``SPLIT_MERGE_EVERY`` Gibbs sweeps, then sequential
  split-merge with ``SPLIT_MERGE_PROPOSALS`` proposals) gives the same births and leaves
  the generator in the same state, whether its moves take the buffer's fast path (the
  classes themselves) or are called as the runners call them (subclasses);
- other rounds run and find the docstring example's two features;
- the estimator hands its moves to every buffer, the last one of ``flush`` included;
- the doors refuse what is not a list of moves on ``Z``, naming the argument.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from sklearn.base import clone

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.chains import AlphaUpdate, Move, ScaleUpdate
from ibp_lab.inference.gibbs import GibbsSweep
from ibp_lab.inference.split_merge import (RandomSplitMerge, SequentialSplitMerge,
                                           SingletonUpdate)
from ibp_lab.inference.streaming import RecursiveIBP, births

#: sha256 of :func:`default_digest`, computed with the code of commit 6e2080e (before
#: ``moves=`` existed).
DIGEST_BEFORE_MOVES = "f16ba3b4fe1f1acab694d987c017da1ad87c38c8f815526867e03cc34ed707f5"

#: The default round written out.
DEFAULT_ROUND = ([GibbsSweep()] * births.SPLIT_MERGE_EVERY
                 + [SequentialSplitMerge(n_proposals=births.SPLIT_MERGE_PROPOSALS)])


class PlainGibbs(GibbsSweep):
    """A Gibbs sweep that is not the class itself: called as the runners call moves."""


class PlainSequential(SequentialSplitMerge):
    """Sequential split-merge called as the runners call moves."""


class Recorded(Move):
    """A Gibbs sweep that records the number of rows of each buffer it is called on."""

    name = "recorded"

    def __init__(self):
        self.rows = []

    def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
        self.rows.append(X.shape[0])
        return GibbsSweep()(X, Z, rng, hyper, inverse_temperature)


def docstring_example():
    """The example of ``decompose_buffer``: thirty rows showing one of two features or both."""
    rng = np.random.default_rng(0)
    A = np.zeros((2, 8))
    A[0, :4] = 1.0
    A[1, 4:] = 1.0
    Z = rng.random((30, 2)) < 0.6
    return Z @ A + 0.1 * rng.normal(size=(30, 8)), A


def shared_rows(seed: int, n_rows: int = 40, dim: int = 12) -> np.ndarray:
    """Rows that share three features (some rows two of them), noise 0.5."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3, dim))
    Z = (rng.random((n_rows, 3)) < 0.4).astype(float)
    return np.ascontiguousarray(Z @ A + 0.5 * rng.normal(size=(n_rows, dim)))


def buffers():
    """``(residuals, seed, alpha, sigma_x, pilot)``: the pilot passing and failing, a row out
    of reach, images."""
    yield docstring_example()[0], 30, 1.0, 0.1, True
    for seed in range(3):
        yield shared_rows(seed), seed, 0.8, 0.5, seed % 2 == 0
    images, _, _ = simulate_four_feature_data(np.random.default_rng(0), n=100)
    yield images, 1, 1.0, 0.5, False
    out_of_reach = shared_rows(7)
    out_of_reach[0] *= 1e3
    yield out_of_reach, 7, 1.0, 0.5, False
    yield 0.5 * np.random.default_rng(3).normal(size=(50, 6)), 3, 1.0, 0.5, True  # noise


def decompositions_digest(**options) -> str:
    """sha256 of every buffer's births and of the generator's state after it."""
    digest = hashlib.sha256()
    for residuals, seed, alpha, sigma_x, pilot in buffers():
        rng = np.random.default_rng(seed)
        found = births.decompose_buffer(residuals, rng, alpha=alpha, sigma_x=sigma_x,
                                        sigma_a=1.0, pilot=pilot, **options)
        for array in (found.means, found.variances, found.owners):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(repr(rng.bit_generator.state).encode())
    return digest.hexdigest()


def default_digest() -> str:
    """The digest of the decompositions and of a stream (full buffers of 40 rows, then the
    last one of ``flush``), all with the default round."""
    digest = hashlib.sha256(decompositions_digest().encode())
    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), n=290)
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=40).fit(X)
    for array in (model.features_, model.feature_variances_, model.feature_usage_):
        digest.update(array.tobytes())
    return digest.hexdigest()


def test_the_default_round_gives_the_births_of_before_bit_for_bit():
    assert default_digest() == DIGEST_BEFORE_MOVES


@pytest.mark.parametrize("moves", [
    DEFAULT_ROUND,
    [PlainGibbs()] * births.SPLIT_MERGE_EVERY
    + [PlainSequential(n_proposals=births.SPLIT_MERGE_PROPOSALS)],
    [GibbsSweep(), PlainGibbs(), "gibbs_sweep",
     SequentialSplitMerge(n_proposals=births.SPLIT_MERGE_PROPOSALS)],
    tuple(DEFAULT_ROUND),
], ids=["the classes (fast path)", "subclasses (called as moves)", "mixed, a name", "tuple"])
def test_the_default_written_as_a_list_gives_the_same_births(moves):
    assert decompositions_digest(moves=moves) == decompositions_digest()


@pytest.mark.parametrize("moves", [
    [GibbsSweep(), SingletonUpdate()],
    [SequentialSplitMerge(n_proposals=5)],  # split-merge only: from the BP-means start
    [RandomSplitMerge(n_proposals=5), SingletonUpdate()],
    "gibbs_sweep",
], ids=["gibbs and singletons", "split-merge only", "random split-merge and singletons",
        "one name"])
def test_other_rounds_find_the_two_features(moves):
    R, A = docstring_example()
    found = births.decompose_buffer(R, np.random.default_rng(30), alpha=1.0, sigma_x=0.1,
                                    sigma_a=1.0, moves=moves)
    assert found.n_features == 2
    assert np.allclose(np.sort(found.means.round(0), axis=0), np.sort(A, axis=0))


def test_the_moves_run_at_the_buffers_hyperparameters():
    seen = []

    class Spy(GibbsSweep):
        def __call__(self, X, Z, rng, hyper, inverse_temperature=1.0):
            seen.append(tuple(hyper) + (hyper.discount, inverse_temperature, Z.dtype))
            return super().__call__(X, Z, rng, hyper, inverse_temperature)

    births.decompose_buffer(shared_rows(0), np.random.default_rng(0), alpha=0.7, sigma_x=0.5,
                            sigma_a=1.5, pilot=False, moves=[Spy()])
    assert len(seen) == births.RESTARTS * (births.SWEEPS // births.SPLIT_MERGE_EVERY)
    assert set(seen) == {(0.7, 0.5, 1.5, 1.0, 0.0, 1.0, np.dtype(np.int8))}


def test_the_estimator_hands_its_moves_to_every_buffer_and_to_flush():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), n=200)
    recorded = Recorded()
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=40,
                         buffer_moves=[recorded, SequentialSplitMerge(n_proposals=2)])
    model.partial_fit(X)
    model.partial_fit(np.full((3, X.shape[1]), 3.0))  # rows no feature explains: admitted
    n_calls = len(recorded.rows)
    assert n_calls and set(recorded.rows) == {40}  # full buffers only so far
    model.flush()
    last = set(recorded.rows[n_calls:])  # the rows left waiting, decomposed by flush
    assert len(last) == 1 and 3 <= last.pop() < 40
    assert model.features_.shape[0] >= 4


def test_the_estimator_with_the_default_written_out_learns_the_same_features():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(0), n=290)
    settings = dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, buffer_size=40)
    default = RecursiveIBP(**settings).fit(X)
    written = RecursiveIBP(**settings, buffer_moves=DEFAULT_ROUND).fit(X)
    assert np.array_equal(default.features_, written.features_)
    assert np.array_equal(default.feature_usage_, written.feature_usage_)


def test_buffer_moves_is_a_scikit_learn_parameter():
    moves = [GibbsSweep(), SingletonUpdate()]
    model = RecursiveIBP(buffer_moves=moves)
    assert model.get_params()["buffer_moves"] is moves  # stored as given
    assert RecursiveIBP().get_params()["buffer_moves"] is None
    copy = clone(model)
    assert [type(move) for move in copy.buffer_moves] == [GibbsSweep, SingletonUpdate]
    X, _, _ = simulate_four_feature_data(np.random.default_rng(1), n=30)
    model.partial_fit(X)
    model.set_params(buffer_moves=[GibbsSweep()])
    with pytest.raises(ValueError, match="parameters changed"):
        model.partial_fit(X[:2])


def test_a_stream_with_buffer_moves_is_not_checkpointed(tmp_path):
    X, _, _ = simulate_four_feature_data(np.random.default_rng(1), n=30)
    model = RecursiveIBP(buffer_moves=["gibbs_sweep"])
    with pytest.raises(ValueError, match="buffer_moves"):
        model.get_state()  # before any fit too
    model.fit(X)
    with pytest.raises(ValueError, match="buffer_moves"):
        model.get_state()
    with pytest.raises(ValueError, match="buffer_moves"):
        model.save(tmp_path / "stream.npz")
    assert not (tmp_path / "stream.npz").exists()


BAD_MOVES = [
    (AlphaUpdate(), "must hold moves on Z .*AlphaUpdate.*hyperparameters are fixed"),
    ([GibbsSweep(), ScaleUpdate("sigma_a")], "must hold moves on Z .*ScaleUpdate"),
    ([], "non-empty list"),
    (3, "non-empty list"),
    ({"gibbs_sweep": 1}, "non-empty list"),
    (["sideways"], r"\[0\] must be one of the move names"),
    ([GibbsSweep(), None], r"\[1\] must be one of the moves on Z"),
    ([GibbsSweep], r"\[0\] must be a move, got the class GibbsSweep"),
    ("sideways", "must be one of the move names"),
]


@pytest.mark.parametrize("moves, message", BAD_MOVES, ids=[repr(m[0]) for m in BAD_MOVES])
def test_decompose_buffer_refuses_what_is_not_a_list_of_moves_on_z(moves, message):
    R, _ = docstring_example()
    with pytest.raises(ValueError, match=rf"^moves\b.*{message}"):
        births.decompose_buffer(R, np.random.default_rng(0), alpha=1.0, sigma_x=0.1,
                                sigma_a=1.0, moves=moves)


@pytest.mark.parametrize("moves, message", BAD_MOVES, ids=[repr(m[0]) for m in BAD_MOVES])
def test_the_estimator_refuses_bad_buffer_moves_before_any_row(moves, message):
    model = RecursiveIBP(buffer_moves=moves)
    for call in (model.fit, model.partial_fit):
        with pytest.raises(ValueError, match=rf"^buffer_moves\b.*{message}"):
            call(np.ones((3, 2)))
        assert not hasattr(model, "_stream")


@pytest.mark.parametrize("options", [dict(births="single"), dict(model="factor_analysis")])
def test_buffer_moves_need_a_buffer(options):
    model = RecursiveIBP(buffer_moves=[GibbsSweep()], **options)
    with pytest.raises(ValueError, match="buffer_moves is for births='buffer'.*'single'"):
        model.fit(np.ones((3, 2)))
    RecursiveIBP(buffer_moves=None, **options).fit(np.ones((3, 2)))  # the default passes
