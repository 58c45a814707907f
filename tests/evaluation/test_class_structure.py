"""Feature sharing between classes, confusions, and their agreement, by direct computation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr
from seeds import stat_rng

from ibp_lab.evaluation.class_structure import class_sharing, confusion_similarity, matrix_agreement


def test_class_sharing_by_a_loop_over_pairs():
    rng = np.random.default_rng(3)
    Z = rng.random((9, 4)) * (rng.random((9, 4)) < 0.6)
    Z[4] = 0.0  # a row with no feature shares nothing
    labels = np.array([2, 0, 2, 1, 0, 1, 2, 0, 1])
    classes, S = class_sharing(Z, labels)
    assert classes.tolist() == [0, 1, 2]
    for (ia, ca), (ib, cb) in itertools.product(enumerate(classes), repeat=2):
        values = []
        for i, j in itertools.product(np.flatnonzero(labels == ca), np.flatnonzero(labels == cb)):
            if i == j:
                continue
            both = (Z[i] * Z[j]).sum()
            either = (Z[i] + Z[j] - Z[i] * Z[j]).sum()
            values.append(both / either if either > 0 else 0.0)
        assert S[ia, ib] == pytest.approx(np.mean(values), rel=1e-12)


def test_confusion_similarity_by_counting():
    labels = np.array([1, 1, 1, 3, 3, 5, 5, 5, 5])
    predicted = np.array([1, 3, 1, 3, 5, 5, 5, 1, 5])
    classes, C = confusion_similarity(labels, predicted)
    rates = np.array([[2 / 3, 1 / 3, 0], [0, 1 / 2, 1 / 2], [1 / 4, 0, 3 / 4]])
    np.testing.assert_allclose(C, (rates + rates.T) / 2)


def test_matrix_agreement_p_value_by_enumeration():
    rng = np.random.default_rng(8)
    for _ in range(5):
        A, B = rng.random((5, 5)), rng.random((5, 5))
        A, B = A + A.T, B + B.T
        rho, p = matrix_agreement(A, B)
        upper = np.triu_indices(5, k=1)
        count = sum(spearmanr(A[upper], B[np.ix_(o, o)][upper]).statistic >= rho - 1e-12
                    for o in itertools.permutations(range(5)))
        assert rho == pytest.approx(spearmanr(A[upper], B[upper]).statistic)
        assert p == count / 120


def _squared_rank_distance(a, b) -> int:
    """sum_i (rank a_i - rank b_i)^2 in integers: for distinct values Spearman's rho is
    1 - 6 S / (n (n^2 - 1)), so a larger rho is exactly a smaller S."""
    return int(((np.argsort(np.argsort(a)) - np.argsort(np.argsort(b))) ** 2).sum())


@pytest.mark.parametrize("seed", range(3))
def test_matrix_agreement_p_value_is_the_exact_share_of_relabelings(seed):
    """The p-value counts, among all C! relabelings (the identity included), those whose
    rank agreement is at least the observed one, and divides by C!: computed here by brute
    force over itertools.permutations with integer rank distances (no spearmanr, no
    tolerance), it must equal the function's p-value exactly. One permutation too many or
    too few is 1/24 off on four classes; the null test below cannot see that."""
    rng = np.random.default_rng(seed)
    A, B = rng.random((4, 4)), rng.random((4, 4))
    A, B = A + A.T, B + B.T
    upper = np.triu_indices(4, k=1)
    observed = _squared_rank_distance(A[upper], B[upper])
    count = sum(_squared_rank_distance(A[upper], B[np.ix_(o, o)][upper]) <= observed
                for o in itertools.permutations(range(4)))
    rho, p = matrix_agreement(A, B)
    assert rho == pytest.approx(1 - 6 * observed / (6 * (36 - 1)), rel=1e-12)
    assert p == count / 24


def test_matrix_agreement_p_value_on_a_hand_counted_case():
    """Three classes: three pairs, six relabelings. A pair is named by the class it leaves
    out, so a relabeling moves the pairs' values as it moves the classes: every relabeling
    but the identity puts some value on another pair. With three distinct values only the
    identity keeps their order (rho = 1), so p = 1/6."""
    A = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], float)
    rho, p = matrix_agreement(A, A)
    assert rho == 1.0 and p == 1 / 6


@pytest.mark.statistical(rate=1e-6)
def test_the_p_value_is_uniform_under_the_null():
    """With unrelated random matrices the test's size is honest. With 4 classes the p-value
    is a multiple of 1/24, so P(p <= 0.1) = P(p <= 2/24) = 2/24 (ties have probability 0
    for continuous entries); over 400 pairs its binomial sd is 0.0138, and 5 sds is 0.07
    (false alarm about 6e-7 by the normal approximation). This catches a p-value of the
    wrong kind (two-sided, or from a parametric formula); a count off by one relabeling
    moves the rate by only 1/24 = 3 sds, which the exact tests above catch instead."""
    rng = stat_rng(21)
    ps = []
    for _ in range(400):
        A, B = rng.random((4, 4)), rng.random((4, 4))
        ps.append(matrix_agreement(A + A.T, B + B.T)[1])
    assert abs(np.mean(np.array(ps) <= 0.1) - 2 / 24) < 0.07


@pytest.mark.parametrize("call, match", [
    (lambda: class_sharing([[0.5, 2.0], [0.1, 0.1]], [0, 0]), "probabilities"),
    (lambda: class_sharing([[0.5], [0.1], [0.2]], [0, 0, 1]), "two rows"),
    (lambda: class_sharing([[0.5], [0.1]], [0.0, 1.0]), "integer class labels"),
    (lambda: confusion_similarity([1, 2], [1, 7]), "predicted"),
    (lambda: matrix_agreement(np.eye(2), np.eye(2)), "3 to 8"),
    (lambda: matrix_agreement(np.ones((3, 3)), np.eye(3) + 1), "vary"),
    (lambda: matrix_agreement(np.arange(9.0).reshape(3, 3), np.eye(3)), "symmetric"),
])
def test_bad_input_is_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_closest_pair_and_most_isolated_on_a_known_matrix():
    from ibp_lab.evaluation.class_structure import closest_pair, most_isolated

    classes = [1, 3, 5, 7, 9]
    S = np.full((5, 5), 0.1)
    np.fill_diagonal(S, 1.0)
    S[1, 2] = S[2, 1] = 0.5  # 3 and 5
    S[3, 4] = S[4, 3] = 0.4  # 7 and 9
    S[0, 4] = S[4, 0] = 0.12
    assert closest_pair(classes, S, 3, 5) and closest_pair(classes, S, 7, 9)
    assert not closest_pair(classes, S, 1, 9)  # 9's closest is 7
    assert most_isolated(classes, S) == 1
    with pytest.raises(ValueError, match="two different classes"):
        closest_pair(classes, S, 3, 3)
    with pytest.raises(ValueError, match="symmetric"):
        most_isolated(classes, S + np.triu(np.ones((5, 5)), 1))
