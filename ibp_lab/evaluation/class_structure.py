"""How inferred features relate to known classes: feature sharing between classes, a
classifier's confusions, and whether the two agree.

The R-IBP paper (Schaeffer et al. 2022, its Fig. 7) fits features to the odd digits without
their labels, then asks how many features two digits share when they come from the same
class and when from different classes, and sets that against the confusion matrix of a
classifier trained with the labels. Three pieces:

- :func:`class_sharing`: the class-by-class mean fraction of features two rows share;
- :func:`confusion_similarity`: a classifier's confusions, symmetrised, as a similarity;
- :func:`matrix_agreement`: the rank correlation of two such matrices over the pairs of
  different classes, with an exact permutation p-value over relabelings of the classes;
- :func:`closest_pair` and :func:`most_isolated`: the paper's two kinds of statement
  ("3 and 5 are similar", "1 is on its own") as checks on one matrix.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import spearmanr

from ibp_lab._checks import Checked, Joint, RealArray, check_real_array, validated

__all__ = ["class_sharing", "confusion_similarity", "matrix_agreement", "closest_pair",
           "most_isolated"]

#: Most classes matrix_agreement enumerates the relabelings of (8! = 40,320).
MAX_CLASSES = 8


def _check_labels(labels, n_rows: int, name: str = "labels") -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != n_rows or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D array of {n_rows} integer class labels, got "
                         f"dtype {labels.dtype} and shape {labels.shape}")
    return labels


def _check_ownership(name: str, Z) -> np.ndarray:
    Z = check_real_array(name, Z)
    if Z.ndim != 2 or Z.shape[0] < 2 or Z.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D (rows, features) array with at least two rows and "
                         f"one feature, got shape {Z.shape}")
    if not np.all((Z >= 0) & (Z <= 1)):
        raise ValueError(f"{name} must hold probabilities in [0, 1]")
    return Z


def _labels_of_rows(labels, Z: np.ndarray) -> np.ndarray:
    return _check_labels(labels, Z.shape[0])


@validated(Z=Checked(_check_ownership), labels=Joint(_labels_of_rows, "labels", "Z", sets="labels"))
def class_sharing(Z, labels) -> tuple[np.ndarray, np.ndarray]:
    """Mean fraction of features shared by two rows, for each pair of classes.

    For rows ``i`` and ``j`` with feature probabilities (or 0/1 entries) ``z_i`` and
    ``z_j``, the shared fraction is the expected number of features both own over the
    expected number either owns, ``sum_k z_ik z_jk / sum_k (z_ik + z_jk - z_ik z_jk)``
    (the Jaccard index of binary rows), and 0 when neither owns any. Entry ``(c, c')``
    averages it over pairs of distinct rows, one of class ``c`` and one of class ``c'``.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` entries in [0, 1].
    labels : array_like of int
        ``(N,)`` class of each row; every class present needs two rows.

    Returns
    -------
    classes : numpy.ndarray
        The sorted distinct labels.
    sharing : numpy.ndarray
        ``(C, C)`` symmetric, entries in [0, 1].

    Examples
    --------
    >>> Z = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 1]])
    >>> classes, S = class_sharing(Z, [0, 0, 1, 1])
    >>> S.round(3).tolist()
    [[0.5, 0.083], [0.083, 0.5]]
    """
    classes, counts = np.unique(labels, return_counts=True)
    if np.any(counts < 2):
        raise ValueError("labels must give every class at least two rows")
    both = Z @ Z.T
    sizes = Z.sum(axis=1)
    either = sizes[:, None] + sizes[None, :] - both
    shared = np.divide(both, either, out=np.zeros_like(both), where=either > 0)
    np.fill_diagonal(shared, np.nan)  # a row with itself is not a pair
    index = [np.flatnonzero(labels == c) for c in classes]
    sharing = np.array([[np.nanmean(shared[np.ix_(a, b)]) for b in index] for a in index])
    return classes, sharing


def confusion_similarity(labels, predicted) -> tuple[np.ndarray, np.ndarray]:
    """A classifier's confusions as a symmetric similarity between classes.

    Entry ``(c, c')`` is the mean of the share of class ``c`` predicted as ``c'`` and the
    share of ``c'`` predicted as ``c`` (rows of the confusion matrix normalised first).

    Parameters
    ----------
    labels, predicted : array_like of int
        ``(N,)`` true and predicted classes (predictions made without the row itself,
        such as cross-validated ones).

    Returns
    -------
    classes : numpy.ndarray
    similarity : numpy.ndarray
        ``(C, C)`` symmetric.

    Examples
    --------
    >>> classes, C = confusion_similarity([1, 1, 3, 3], [1, 3, 3, 3])
    >>> C.tolist()
    [[0.5, 0.25], [0.25, 1.0]]
    """
    labels = _check_labels(labels, np.asarray(labels).size)
    predicted = _check_labels(predicted, labels.size, "predicted")
    if labels.size == 0:
        raise ValueError("labels must not be empty")
    classes = np.unique(labels)
    if not np.isin(predicted, classes).all():
        raise ValueError("predicted must only hold classes that occur in labels")
    position = {c: i for i, c in enumerate(classes)}
    counts = np.zeros((classes.size, classes.size))
    for true, guess in zip(labels, predicted):
        counts[position[true], position[guess]] += 1
    rates = counts / counts.sum(axis=1, keepdims=True)
    return classes, (rates + rates.T) / 2


@validated(A=RealArray(), B=RealArray())
def matrix_agreement(A, B) -> tuple[float, float]:
    """Spearman correlation of two class-by-class matrices over pairs of different
    classes, and its exact one-sided permutation p-value.

    The p-value is the share of the ``C!`` relabelings of ``B``'s classes (rows and
    columns permuted together) whose correlation with ``A`` is at least the observed one,
    the identity included: under the null hypothesis that the two matrices' class
    structures are unrelated, every relabeling is equally likely (a Mantel test).

    Parameters
    ----------
    A, B : array_like
        ``(C, C)`` symmetric matrices, ``3 <= C <= 8``.

    Returns
    -------
    rho : float
    p_value : float
        At least ``1 / C!``.

    Examples
    --------
    >>> A = np.array([[1, .9, .1, .2], [.9, 1, .3, .1], [.1, .3, 1, .8], [.2, .1, .8, 1]])
    >>> matrix_agreement(A, A)  # no other relabeling ranks the six pairs the same
    (1.0, 0.041666666666666664)
    """
    for name, M in (("A", A), ("B", B)):
        if M.ndim != 2 or M.shape[0] != M.shape[1] or not 3 <= M.shape[0] <= MAX_CLASSES:
            raise ValueError(f"{name} must be a square matrix of 3 to {MAX_CLASSES} classes, "
                             f"got shape {M.shape}")
        if not np.all(np.isfinite(M)) or not np.allclose(M, M.T):
            raise ValueError(f"{name} must be finite and symmetric")
    if A.shape != B.shape:
        raise ValueError(f"A and B must have the same shape, got {A.shape} and {B.shape}")
    upper = np.triu_indices(A.shape[0], k=1)
    a = A[upper]
    if np.ptp(a) == 0 or np.ptp(B[upper]) == 0:
        raise ValueError("A and B must each vary over the pairs of classes (a constant has "
                         "no rank correlation)")
    rho = float(spearmanr(a, B[upper]).statistic)
    at_least = 0
    for order in itertools.permutations(range(A.shape[0])):
        permuted = B[np.ix_(order, order)][upper]
        # 1e-12: a relabeling that ties the observed correlation counts, whatever rounding
        at_least += spearmanr(a, permuted).statistic >= rho - 1e-12
    return rho, float(at_least / math.factorial(A.shape[0]))


def _check_class_matrix(classes, S) -> tuple[np.ndarray, np.ndarray]:
    classes = np.asarray(classes)
    S = check_real_array("S", S)
    if classes.ndim != 1 or classes.size < 3 or S.shape != (classes.size, classes.size):
        raise ValueError(f"S must be a (C, C) matrix for C >= 3 classes, got classes of "
                         f"shape {classes.shape} and S of shape {S.shape}")
    if not np.all(np.isfinite(S)) or not np.allclose(S, S.T):
        raise ValueError("S must be finite and symmetric")
    return classes, S


#: ``classes`` and their similarity matrix ``S``, checked together.
_CLASS_MATRIX = Joint(_check_class_matrix, "classes", "S", sets=("classes", "S"))


@validated(class_matrix=_CLASS_MATRIX)
def closest_pair(classes, S, first, second) -> bool:
    """Whether classes ``first`` and ``second`` are each other's most similar in ``S``.

    True when their entry of ``S`` is at least every other off-diagonal entry of their two
    rows ("3 and 5 share more features with each other than with any other class").

    Examples
    --------
    >>> S = np.array([[1, .5, .1], [.5, 1, .2], [.1, .2, 1]])
    >>> closest_pair([1, 3, 5], S, 1, 3), closest_pair([1, 3, 5], S, 3, 5)
    (True, False)
    """
    where = {c: i for i, c in enumerate(classes.tolist())}
    if first not in where or second not in where or first == second:
        raise ValueError(f"first and second must be two different classes of "
                         f"{classes.tolist()}, got {first!r} and {second!r}")
    i, j = where[first], where[second]
    others = np.where(np.eye(S.shape[0], dtype=bool), -np.inf, S)
    return bool(S[i, j] >= others[i].max() and S[i, j] >= others[j].max())


@validated(class_matrix=_CLASS_MATRIX)
def most_isolated(classes, S):
    """The class whose largest similarity to another class is the smallest.

    Examples
    --------
    >>> S = np.array([[1, .5, .1], [.5, 1, .2], [.1, .2, 1]])
    >>> most_isolated([1, 3, 5], S)
    5
    """
    others = np.where(np.eye(S.shape[0], dtype=bool), -np.inf, S)
    return classes[int(np.argmin(others.max(axis=1)))].item()
