"""What the scikit-learn estimators share: their default seed, generator and data door.

:class:`~ibp_lab.inference.streaming.RecursiveIBP`, :class:`~ibp_lab.inference.variational.VariationalIBP` and
:class:`~ibp_lab.inference.gibbs_estimator.GibbsIBP` follow scikit-learn's estimator contract and pass its ``check_estimator``. That suite
asks for particular kinds of error and particular words in their messages (a sparse
matrix refused by saying so, complex data refused with ``ValueError``, a 1-D array refused
with "Reshape your data", a width that differs from the fitted one named as "X has d
features, but E is expecting D features as input"). This module holds the one reading of
``rng`` (:func:`estimator_generator`), the one door of the data (:func:`estimator_rows`)
and the one door of the parameters (:func:`checked_parameters`) that every estimator
calls, so that they keep the same manners.

Parameters declared once. As in scikit-learn (``_parameter_constraints``), ``__init__``
stores the parameters as given and each estimator class states what they must be, once,
as data: a class-level ``parameter_constraints`` mapping of the constraint objects of
:mod:`ibp_lab._checks` (:class:`~ibp_lab._checks.Positive`, ..., and
:class:`~ibp_lab._checks.Joint` entries for relations such as ``burn < n_sweeps``), in the
order the checks run. ``fit`` calls :func:`checked_parameters`, which reads
``get_params()`` against that mapping, so the messages, and which of two bad parameters
is named, follow the declared order. :class:`Seed` is the constraint of ``rng``.

Seeding. scikit-learn seeds an estimator only through a parameter named ``random_state``
(``sklearn.utils.estimator_checks`` and its tools call ``set_random_state``, which touches
nothing else), and then compares two fits of clones. The package names that parameter
``rng`` (docs/design.md, section 2), so the estimators' ``rng`` defaults to
:data:`DEFAULT_RNG`, a fixed seed: two fits with the same parameters give the same numbers,
whoever clones them (a pipeline, a grid search, ``check_estimator``). Fresh entropy is
asked for explicitly, ``rng=None``; another seed is ``rng=<int>`` or a Generator.
"""

from __future__ import annotations

import numbers

import numpy as np

from ibp_lab._checks import Constraint, Joint, Rows, as_array, check_data_matrix, copy_generator

__all__ = ["DEFAULT_RNG", "Seed", "checked_parameters", "estimator_generator",
           "estimator_rows"]

#: The estimators' default ``rng``: a fixed seed, so that a fit is reproducible at default
#: construction, as scikit-learn's tools expect of an estimator they cannot seed.
DEFAULT_RNG = 0


def estimator_generator(rng) -> np.random.Generator:
    """The generator an estimator's fit draws from, from its ``rng`` parameter.

    The default parameter is :data:`DEFAULT_RNG` (an ``int``: reproducible fits). ``None`` takes fresh entropy (as scikit-learn's ``random_state=None`` does), a
    non-negative ``int`` seeds a new generator, and a Generator is *copied*, so that
    fitting never advances the parameter and two fits with the same parameters draw the
    same numbers.

    Examples
    --------
    >>> rng = np.random.default_rng(4)
    >>> float(estimator_generator(rng).random()) == float(estimator_generator(rng).random())
    True
    >>> float(estimator_generator(4).random()) == float(rng.random())
    True
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValueError(f"rng must be None, a non-negative int seed or a "
                             f"numpy.random.Generator, got {rng}")
        return np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be None, a non-negative int seed or a numpy.random.Generator "
                        f"(for example np.random.default_rng(0)), got {type(rng).__name__}")
    return copy_generator(rng)


def estimator_rows(estimator, X, *, name: str = "X", one_row: bool = False,
                   n_features: int | None = None) -> np.ndarray:
    """``X`` as finite ``(n, D)`` float64 rows for one of the estimators, or a clear error.

    Parameters
    ----------
    estimator : object
        The estimator asking (its class name goes into the messages).
    X : array_like
        The data. Dense only; an object array is read if every entry is a real number.
    name : str, optional
        The argument's name in the messages.
    one_row : bool, optional
        Accept a 1-D array as one row (``partial_fit``'s single observation).
    n_features : int or None, optional
        The fitted width ``D`` the rows must have (``transform``, ``score``); ``None``
        at fitting time.

    Examples
    --------
    >>> estimator_rows(object(), np.array([[1, 2]], dtype=object)).dtype
    dtype('float64')
    >>> estimator_rows(object(), [[1.0, 2.0]], n_features=3)
    Traceback (most recent call last):
    ...
    ValueError: X has 2 features, but object is expecting 3 features as input (the width of the data it was fitted on)
    """
    who = type(estimator).__name__
    if hasattr(X, "tocsr") or hasattr(X, "nnz"):  # scipy.sparse, without importing it
        raise TypeError(f"{name} is a sparse matrix: sparse input is not supported by {who}; "
                        f"pass a dense array ({name}.toarray())")
    X = as_array(name, X, "an array of real numbers")
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers, "
                         f"got dtype {X.dtype}")
    if X.dtype.kind == "O":
        X = _numbers_of(name, X)
    if X.ndim == 1 and one_row:
        X = X[None, :]
    elif X.ndim == 1:
        raise ValueError(f"{name} must be 2-D (rows x features), got a 1-D array. Reshape "
                         f"your data with {name}.reshape(1, -1) if it is one row")
    if X.ndim == 2 and 0 in X.shape:
        what = "sample(s)" if X.shape[0] == 0 else "feature(s)"
        raise ValueError(f"{name} has 0 {what} (shape={X.shape}) while a minimum of 1 "
                         f"is required.")
    X = check_data_matrix(name, X)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but {who} is expecting "
                         f"{n_features} features as input (the width of the data it was "
                         f"fitted on)")
    return X


def _numbers_of(name: str, X: np.ndarray) -> np.ndarray:
    """An object array whose entries are all real numbers, as float64 (a pandas frame of
    mixed columns arrives this way); strings are refused, not parsed."""
    for entry in X.flat:
        if isinstance(entry, (str, bytes)) or not isinstance(entry, numbers.Real):
            raise TypeError(f"{name} must hold real numbers: float()'s argument must be a real "
                            f"number, not a string (strings are not parsed) nor anything else "
                            f"that is not a number; got an entry of type "
                            f"{type(entry).__name__}")
    return X.astype(np.float64)


class Seed(Constraint):
    """An estimator's ``rng`` parameter, read as :func:`estimator_generator` reads it: the
    checked value is the generator a fit draws from (a copy of a given Generator).

    Examples
    --------
    >>> isinstance(Seed().check("rng", 3), np.random.Generator)
    True
    """

    def check(self, name, value):
        return estimator_generator(value)


def checked_parameters(estimator, **known) -> dict:
    """An estimator's parameters checked against its class's ``parameter_constraints``.

    The parameters (``estimator.get_params(deep=False)``) and ``known`` (values the caller
    has already checked, such as the rows ``X`` that a :class:`~ibp_lab._checks.Joint`
    reads) go through the mapping in its declared order, each constraint replacing its
    parameter by the checked value; a :class:`~ibp_lab._checks.Joint` gets the values of
    its ``reads`` (checked if declared before it; :class:`~ibp_lab._checks.Rows` as a
    number of rows) and sets those of its ``sets``. The first refusal is raised as the
    constraint raised it. Parameters without a constraint come back as given.

    Parameters
    ----------
    estimator : object
        A scikit-learn style estimator whose class declares ``parameter_constraints``.
    **known
        Values checked already, available to the constraints by name.

    Returns
    -------
    dict
        Every parameter (and every ``known`` value), checked, by name.

    Examples
    --------
    >>> from ibp_lab._checks import Count, Positive
    >>> class Toy:
    ...     parameter_constraints = {"n": Count(minimum=1), "scale": Positive()}
    ...     def get_params(self, deep=True):
    ...         return {"n": 3, "scale": 2}
    >>> checked_parameters(Toy())
    {'n': 3, 'scale': 2.0}
    """
    values = {**estimator.get_params(deep=False), **known}
    for key, constraint in type(estimator).parameter_constraints.items():
        if isinstance(constraint, Joint):
            result = constraint.function(*(values[read.of].shape[0] if isinstance(read, Rows)
                                           else values[read] for read in constraint.reads))
            if len(constraint.sets) == 1:
                values[constraint.sets[0]] = result
            elif constraint.sets:
                values.update(zip(constraint.sets, result))
        else:
            earlier = (values[name] for name in constraint.reads)
            values[key] = constraint.check(key, values[key], *earlier)
    return values
