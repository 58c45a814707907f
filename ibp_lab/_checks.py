"""Argument checks shared by the public functions of :mod:`ibp_lab`.

Every public function validates its inputs at the boundary and raises a
``ValueError`` or ``TypeError`` whose message names the argument and what is
allowed, so that a student's mistake is reported where it was made rather than
as a NaN or a shape error deep inside NumPy. Internal helpers trust their
callers.
"""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Largest value accepted for a scale or rate parameter unless a function says
#: otherwise: beyond it, Poisson rates and products such as alpha * beta overflow
#: or lose all precision, and no teaching example needs it.
MAX_PARAMETER = 1e6
#: Smallest positive value accepted for such a parameter: below it, products and
#: ratios underflow to 0 or overflow (subnormal numbers), and none is meaningful.
MIN_PARAMETER = 1e-100
#: Largest count accepted unless a function says otherwise: beyond 2**53 an integer
#: has no exact float, so ``beta + n`` and the like silently round or overflow.
MAX_COUNT = 2**53
#: Largest number of entries a public function allocates for one result or works
#: through in one call (10**8 float64 numbers are 800 MB): a larger request is
#: refused up front with a clear message instead of exhausting memory or time.
MAX_ENTRIES = 10**8

__all__ = [
    "MAX_PARAMETER",
    "MIN_PARAMETER",
    "MAX_COUNT",
    "MAX_ENTRIES",
    "check_positive",
    "check_count",
    "check_rng",
    "copy_generator",
    "check_binary_matrix",
    "check_data_matrix",
    "check_flag",
    "as_array",
    "check_real_array",
    "check_size",
    "check_positive_pair",
    "NotFittedError",
]


class NotFittedError(ValueError, AttributeError):
    """An estimator was asked for a result before it was fitted.

    As scikit-learn's ``sklearn.exceptions.NotFittedError``, it subclasses both
    :class:`ValueError` and :class:`AttributeError`: a method called too early
    (``model.next_prior()``) is an invalid use, caught by ``except ValueError`` like
    every other refusal of this package, while a fitted attribute read too early
    (``model.features_``) is missing, so ``hasattr(model, "features_")`` is ``False``
    before fitting, as scikit-learn's conventions expect.

    Examples
    --------
    >>> issubclass(NotFittedError, ValueError), issubclass(NotFittedError, AttributeError)
    (True, True)
    """


def _scalar(value):
    """A 0-d NumPy array as its scalar (``.item()``); anything else unchanged.

    Posterior draws read from xarray or ArviZ come as 0-d arrays; they are
    numbers, and the number checks below should judge them as such.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def check_positive(
    name: str, value, *, allow_zero: bool = False, upper: float | None = MAX_PARAMETER
) -> float:
    """Return ``value`` as a float after checking that it is finite and > 0 (or >= 0).

    Values above ``upper`` (by default :data:`MAX_PARAMETER`) are refused too:
    a huge ``alpha`` would otherwise overflow into a silent NaN.

    Examples
    --------
    >>> check_positive("alpha", 2)
    2.0
    >>> check_positive("alpha", -1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be > 0, got -1.0
    >>> check_positive("alpha", np.array(2.5))  # a 0-d array, as xarray's .to_numpy() gives
    2.5
    """
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range: certainly above any upper bound
        raise ValueError(f"{name} must be a finite number, got an integer with "
                         f"{len(str(abs(int(value))))} digits") from None
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if allow_zero and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    if not allow_zero and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if not allow_zero and value < MIN_PARAMETER:
        raise ValueError(f"{name} must be >= {MIN_PARAMETER:g} (smaller values underflow), got {value:g}")
    if upper is not None and value > upper:
        raise ValueError(f"{name} must be <= {upper:g}, got {value:g}")
    return value


def check_count(name: str, value, *, minimum: int = 0, maximum: int | None = MAX_COUNT) -> int:
    """Return ``value`` as an int after checking it is an integer in ``[minimum, maximum]``.

    By default ``maximum`` is :data:`MAX_COUNT` (2**53, the last integer a float
    holds exactly); ``maximum=None`` removes the bound (seeds, for instance).

    Examples
    --------
    >>> check_count("n", 3)
    3
    >>> check_count("n", -2)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer >= 0, got -2
    >>> check_count("n", 10**20)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer <= 9007199254740992, got 100000000000000000000
    """
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value}")
    return value


def check_size(
    what: str,
    n_entries: float,
    *,
    names: str | tuple[str, ...] = (),
    limit: float = MAX_ENTRIES,
    hint: str = "",
) -> None:
    """Refuse a request whose result or work would exceed ``limit`` entries.

    ``n_entries`` is the caller's estimate (an exact size, or an expectation
    plus a margin), computed in floating point so that it cannot overflow.
    Called before anything is allocated, so a huge request fails at once.

    Parameters
    ----------
    what : str
        What would be built ("Z", "the table of marginals").
    n_entries : float
        Estimated number of entries (or operations).
    names : str or tuple of str, optional
        The argument(s) that set the size. They are named in the message, so
        that the caller knows which of their arguments to lower (the size is
        not itself an argument).
    limit : float, optional
        Largest accepted estimate, :data:`MAX_ENTRIES` by default.
    hint : str, optional
        What to do instead, appended to the message.

    Raises
    ------
    ValueError
        If ``n_entries`` exceeds ``limit`` or is NaN.

    Examples
    --------
    >>> check_size("Z", 100.0 * 100)
    >>> check_size("Z", 1e6 * 1e6, names=("n", "n_features"), hint="use fewer rows")
    Traceback (most recent call last):
    ...
    ValueError: Z would need about 1e+12 entries (set by n and n_features), more than the limit of 1e+08; use fewer rows
    """
    if not n_entries <= limit:  # also refuses a NaN estimate
        if isinstance(names, str):
            names = (names,)
        if len(names) > 1:
            by = f" (set by {', '.join(names[:-1])} and {names[-1]})"
        elif names:
            by = f" (set by {names[0]})"
        else:
            by = ""
        raise ValueError(
            f"{what} would need about {n_entries:.3g} entries{by}, more than the limit of {limit:.3g}"
            + (f"; {hint}" if hint else "")
        )


def check_rng(rng) -> np.random.Generator:
    """Check that ``rng`` is a :class:`numpy.random.Generator` and return it.

    Examples
    --------
    >>> check_rng(np.random.default_rng(0))  # doctest: +ELLIPSIS
    Generator(PCG64) at 0x...
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (for example np.random.default_rng(0)), "
            f"got {type(rng).__name__}"
        )
    return rng


def copy_generator(rng: np.random.Generator) -> np.random.Generator:
    """A new generator in the same state as ``rng`` (same bit generator): drawing from it
    leaves ``rng`` as it was.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> float(copy_generator(rng).random()) == float(rng.random())
    True
    """
    copy = np.random.Generator(type(rng.bit_generator)())
    copy.bit_generator.state = rng.bit_generator.state
    return copy


def check_binary_matrix(name: str, Z, *, n_rows: int | None = None) -> np.ndarray:
    """Return ``Z`` as a 2-D ``int8`` array of zeros and ones.

    Integer, boolean and float arrays are accepted as long as every entry is
    exactly 0 or 1; anything else raises.

    Examples
    --------
    >>> check_binary_matrix("Z", [[1, 0], [0, 1]]).dtype
    dtype('int8')
    >>> check_binary_matrix("Z", [[2, 0]])
    Traceback (most recent call last):
    ...
    ValueError: Z must contain only 0 and 1, found 2
    """
    try:
        arr = np.asarray(Z) if not isinstance(Z, (str, bytes)) else None
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a 2-D array of 0/1, got {type(Z).__name__}") from exc
    if arr is None or arr.dtype.kind not in "biuf":
        kind = type(Z).__name__ if arr is None else f"dtype {arr.dtype}"
        raise TypeError(f"{name} must be a numeric 2-D array of 0/1, got {kind}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got {arr.ndim} dimension(s)")
    if arr.size:
        bad = arr[(arr != 0) & (arr != 1)]
        if bad.size:
            raise ValueError(f"{name} must contain only 0 and 1, found {bad.flat[0].item()!r}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows (one per data point), got {arr.shape[0]}")
    return arr.astype(np.int8, copy=False)


def as_array(name: str, value, what: str, *, refuse_none: bool = False) -> np.ndarray:
    """``np.asarray(value)``, or a ``TypeError`` saying ``name must be <what>``.

    Refused before NumPy sees them: a bare string or bytes (NumPy would make a 0-d
    string array of it), ``None`` if ``refuse_none``, and anything NumPy cannot turn
    into an array (ragged lists and the like). The dtype is the caller's to judge.

    Examples
    --------
    >>> as_array("labels", [1, 2], "an array of class labels").tolist()
    [1, 2]
    >>> as_array("labels", "ab", "an array of class labels")
    Traceback (most recent call last):
    ...
    TypeError: labels must be an array of class labels, got str
    """
    if isinstance(value, (str, bytes)) or (refuse_none and value is None):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    try:
        return np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}") from exc


def check_real_array(name: str, value) -> np.ndarray:
    """Return ``value`` as a float64 array, refusing anything that is not real numbers.

    The one door through which numeric data enters the package. NumPy would
    happily turn ``"1.5"`` or ``1 + 2j`` into a float (dropping the imaginary part
    with only a warning), so the dtype is checked before any conversion: booleans,
    integers and floats are accepted; complex, string, bytes, object, datetime and
    structured arrays raise :class:`TypeError`. Shape and finiteness are the
    caller's business.

    Examples
    --------
    >>> check_real_array("x", [1, 2.5]).dtype
    dtype('float64')
    >>> check_real_array("x", [1 + 2j])
    Traceback (most recent call last):
    ...
    TypeError: x must hold real numbers, got dtype complex128
    """
    arr = as_array(name, value, "an array of real numbers")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def check_flag(name: str, value) -> bool:
    """Return ``value`` if it is a bool (Python's or NumPy's), else raise ``TypeError``.

    A flag given as the string ``"no"`` or the number ``2`` is almost always a
    mistake, and Python would treat both as true.

    Examples
    --------
    >>> check_flag("ossify", False)
    False
    >>> check_flag("ossify", "no")
    Traceback (most recent call last):
    ...
    TypeError: ossify must be True or False, got str 'no'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def check_data_matrix(name: str, X, *, min_rows: int = 1) -> np.ndarray:
    """Return ``X`` as a finite 2-D float64 array with at least ``min_rows`` rows.

    Complex, string and object arrays are refused (see :func:`check_real_array`).

    Examples
    --------
    >>> check_data_matrix("X", [[1.0, 2.0]]).shape
    (1, 2)
    >>> check_data_matrix("X", [[np.nan, 1.0]])
    Traceback (most recent call last):
    ...
    ValueError: X must be finite: found 1 NaN or infinite value(s)
    """
    arr = check_real_array(name, X)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x dimensions), got {arr.ndim} dimension(s)")
    if arr.shape[0] < min_rows or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must have at least {min_rows} row(s) and 1 column, got shape {arr.shape}"
        )
    n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
    if n_bad:
        raise ValueError(f"{name} must be finite: found {n_bad} NaN or infinite value(s)")
    return arr


def check_positive_pair(name: str, pair) -> tuple[float, float]:
    """A pair of positive numbers (a prior's two parameters)."""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, (Sequence, np.ndarray)) \
            or len(pair) != 2:
        raise ValueError(f"{name} must be a pair of positive numbers, got {pair!r}")
    return (check_positive(f"{name}[0]", pair[0]), check_positive(f"{name}[1]", pair[1]))


def check_inverse_temperature(value, name: str = "inverse_temperature") -> float:
    """An inverse temperature ``b`` in ``[0, 1]``: 1 is the posterior, 0 the prior.

    The one door of every sampler of a tempered posterior ``p(X | Z)^b P([Z])`` (the
    Gibbs sweep, the split-merge moves, replica exchange's enumeration).

    Examples
    --------
    >>> check_inverse_temperature(0.5)
    0.5
    """
    return check_positive(name, value, allow_zero=True, upper=1.0)


__all__ += ["check_inverse_temperature"]


#: Most sweeps (or rounds of moves) one call of a collapsed sampler runs: every sweep adds
#: entries to the traces kept in memory.
MAX_SWEEPS = 10**8


def check_sweeps(name: str, value) -> int:
    """A number of sweeps, an integer in ``[1, MAX_SWEEPS]``: the one door of the
    collapsed samplers' ``n_sweeps`` (the Gibbs sweep's traces, chains, replica exchange).

    Examples
    --------
    >>> check_sweeps("n_sweeps", 200)
    200
    """
    return check_count(name, value, minimum=1, maximum=MAX_SWEEPS)


__all__ += ["MAX_SWEEPS", "check_sweeps"]


# --------------------------------------------------------------------------------------
# constraints declared once: a public door states what each argument must be, as data
# --------------------------------------------------------------------------------------
#
# Each constraint below is a small frozen dataclass whose ``check(name, value)`` calls
# the check_* function above, so a door declared with them refuses exactly what it
# refused before, with the same words. :func:`validated` runs a door's constraints in
# the order they are declared (the door's order of checks, which the campaign's
# messages depend on when two arguments are bad) before the body runs at all.


class Constraint:
    """What one argument must be. ``check(name, value, *earlier)`` returns the checked
    value or raises; ``earlier`` are the already-checked values of :attr:`reads`."""

    #: Names of arguments (declared before this one) whose checked values ``check`` needs.
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Positive(Constraint):
    """A finite float > 0 (>= 0 with ``allow_zero``), at most ``upper``: :func:`check_positive`.

    Examples
    --------
    >>> Positive().check("alpha", 2)
    2.0
    """

    allow_zero: bool = False
    upper: float | None = MAX_PARAMETER

    def check(self, name, value):
        return check_positive(name, value, allow_zero=self.allow_zero, upper=self.upper)


@dataclass(frozen=True)
class Count(Constraint):
    """An int in ``[minimum, maximum]``: :func:`check_count`.

    Examples
    --------
    >>> Count(minimum=1).check("n", 3)
    3
    """

    minimum: int = 0
    maximum: int | None = MAX_COUNT

    def check(self, name, value):
        return check_count(name, value, minimum=self.minimum, maximum=self.maximum)


@dataclass(frozen=True)
class Sweeps(Constraint):
    """A number of sweeps in ``[1, MAX_SWEEPS]``: :func:`check_sweeps`."""

    def check(self, name, value):
        return check_sweeps(name, value)


@dataclass(frozen=True)
class InverseTemperature(Constraint):
    """An inverse temperature in ``[0, 1]``: :func:`check_inverse_temperature`."""

    def check(self, name, value):
        return check_inverse_temperature(value, name)


@dataclass(frozen=True)
class Flag(Constraint):
    """True or False: :func:`check_flag`."""

    def check(self, name, value):
        return check_flag(name, value)


@dataclass(frozen=True)
class Generator(Constraint):
    """A :class:`numpy.random.Generator`: :func:`check_rng` (whose message says ``rng``)."""

    def check(self, name, value):
        return check_rng(value)


@dataclass(frozen=True)
class DataMatrix(Constraint):
    """A finite 2-D float64 array with at least ``min_rows`` rows: :func:`check_data_matrix`."""

    min_rows: int = 1

    def check(self, name, value):
        return check_data_matrix(name, value, min_rows=self.min_rows)


@dataclass(frozen=True)
class BinaryMatrix(Constraint):
    """A 2-D ``int8`` matrix of 0/1 (:func:`check_binary_matrix`); with ``rows_of``, as many
    rows as that (already checked) argument has.

    Examples
    --------
    >>> BinaryMatrix().check("Z", [[1, 0]]).dtype
    dtype('int8')
    """

    rows_of: str | None = None

    @property
    def reads(self):
        return () if self.rows_of is None else (self.rows_of,)

    def check(self, name, value, *earlier):
        n_rows = earlier[0].shape[0] if earlier else None
        return check_binary_matrix(name, value, n_rows=n_rows)


@dataclass(frozen=True)
class RealArray(Constraint):
    """An array of real numbers as float64: :func:`check_real_array`."""

    def check(self, name, value):
        return check_real_array(name, value)


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of a few strings; anything else is a ``ValueError`` listing them.

    Examples
    --------
    >>> OneOf("random", "fixed").check("scan_order", "fixed")
    'fixed'
    >>> OneOf("random", "fixed").check("scan_order", "cyclic")
    Traceback (most recent call last):
    ...
    ValueError: scan_order must be 'random' or 'fixed', got 'cyclic'
    """

    choices: tuple

    def __init__(self, *choices):
        object.__setattr__(self, "choices", choices)

    def check(self, name, value):
        if not isinstance(value, str) or value not in self.choices:
            allowed = " or ".join(", ".join(map(repr, self.choices)).rsplit(", ", 1))
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        return value


@dataclass(frozen=True)
class Optional(Constraint):
    """``None``, or what ``inner`` accepts.

    Examples
    --------
    >>> Optional(Count()).check("seed", None) is None
    True
    """

    inner: Constraint

    @property
    def reads(self):
        return self.inner.reads

    def check(self, name, value, *earlier):
        return None if value is None else self.inner.check(name, value, *earlier)


@dataclass(frozen=True)
class Checked(Constraint):
    """Any check function ``function(name, value)`` of the package as a constraint; with
    ``rows_of``, called ``function(name, value, n_rows=<rows of that argument>)``.

    For the wings' own checks (``check_feature_matrix``, ...) that this module cannot
    import without a cycle.
    """

    function: Callable
    rows_of: str | None = None

    @property
    def reads(self):
        return () if self.rows_of is None else (self.rows_of,)

    def check(self, name, value, *earlier):
        if earlier:
            return self.function(name, value, n_rows=earlier[0].shape[0])
        return self.function(name, value)


@dataclass(frozen=True)
class Joint:
    """A check of several arguments together, at its place in the declared order.

    ``function(*values of reads)`` returns the new values of ``sets`` (one value if
    ``sets`` names one argument, a tuple if several; nothing if ``sets`` is empty: a
    check of a relation such as ``burn < n_sweeps``). Arguments of ``reads`` declared
    before arrive checked; the others arrive as the caller gave them. ``Rows("X")`` among
    ``reads`` passes the number of rows of the (checked) argument ``X``.

    Examples
    --------
    >>> Joint(check_positive_pair, "prior", sets="prior").sets
    ('prior',)
    """

    function: Callable
    reads: tuple
    sets: tuple[str, ...]

    def __init__(self, function, *reads, sets=()):
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "reads", reads)
        object.__setattr__(self, "sets", (sets,) if isinstance(sets, str) else tuple(sets))


@dataclass(frozen=True)
class Rows:
    """Among a :class:`Joint`'s ``reads``: the number of rows of the argument ``of``."""

    of: str

    def __str__(self):
        return f"{self.of}.shape[0]"


def _read_name(read) -> str:
    return read.of if isinstance(read, Rows) else read


#: The linear-Gaussian model's four hyperparameters, in the order
#: ``_hyper.check_hyperparameters`` takes and returns them: a door declares
#: ``Joint(check_hyperparameters, "X", *HYPERPARAMETERS, sets=HYPERPARAMETERS)``.
HYPERPARAMETERS = ("alpha", "sigma_x", "sigma_a", "beta")


def validated(**constraints):
    """Decorate a public door with its argument constraints, declared once as data.

    Each keyword names a parameter and gives its :class:`Constraint`, or names a
    :class:`Joint` check of several parameters. On every call the constraints run in
    the order declared, each argument replaced by its checked value, and only then
    does the body run: no work happens on unchecked input. The decorated function
    keeps its name, docstring and signature (``functools.wraps``; ``help()``,
    ``inspect.signature`` and Sphinx see the real one), and its constraints stay
    readable as ``function.parameter_constraints``.

    The checks add no argument binding of their own: the wrapper is generated with the
    function's own parameter list, so Python binds the call once, as it would have.
    The wrapper is one frame between the caller and the body: a warning the body
    raises for its caller takes ``stacklevel=3``.

    Examples
    --------
    >>> @validated(n=Count(minimum=1), scale=Positive())
    ... def spread(n, *, scale=1.0):
    ...     return n * scale
    >>> spread(3, scale=2)
    6.0
    >>> spread(0)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer >= 1, got 0
    >>> list(spread.parameter_constraints)
    ['n', 'scale']
    """
    def decorate(function):
        return _wrap(function, constraints)

    return decorate


def _wrap(function, constraints):
    """Generate ``function``'s checked twin: the same parameter list, then one line per
    constraint, then the call (see :func:`validated`)."""
    signature = inspect.signature(function)
    parameters = signature.parameters
    namespace = {"_function": function}
    seen: list[str] = []
    lines = []
    for i, (key, constraint) in enumerate(constraints.items()):
        namespace[f"_c{i}"] = constraint
        if isinstance(constraint, Joint):
            reads = tuple(map(_read_name, constraint.reads))
            _require(function, reads + constraint.sets, parameters, f"{key}'s")
            _require(function, [read.of for read in constraint.reads if isinstance(read, Rows)],
                     seen, f"{key}'s Rows of")
            call = f"_c{i}.function({', '.join(map(str, constraint.reads))})"
            targets = ", ".join(constraint.sets)
            lines.append(f"{targets} = {call}" if constraint.sets else call)
            seen.extend(constraint.sets)
        elif isinstance(constraint, Constraint):
            _require(function, (key,), parameters, "constraint")
            _require(function, constraint.reads, seen, f"{key}'s constraint reads")
            earlier = "".join(f", {name}" for name in constraint.reads)
            lines.append(f"{key} = _c{i}.check({key!r}, {key}{earlier})")
            seen.append(key)
        else:
            raise TypeError(f"the constraint of {key} must be a Constraint or a Joint, "
                            f"got {type(constraint).__name__}")
    header, call = _parameter_list(signature)
    # the code's own name, as Python's binding errors and tracebacks show it
    name = function.__name__ if function.__name__.isidentifier() else "checked"
    source = (f"def _make({', '.join(namespace)}):\n"
              f"    def {name}({header}):\n"
              + "".join(f"        {line}\n" for line in lines)
              + f"        return _function({call})\n"
              f"    return {name}\n")
    # the wrapper's frame belongs to the function's module, for code that tells the
    # package's frames from the caller's by module name
    scope: dict = {"__name__": function.__module__}
    exec(compile(source, f"<validated {function.__qualname__}>", "exec"), scope)
    checked = scope["_make"](**namespace)
    checked.__kwdefaults__ = function.__kwdefaults__
    checked.__defaults__ = function.__defaults__
    checked = functools.wraps(function)(checked)
    checked.parameter_constraints = dict(constraints)
    return checked


def _require(function, names, allowed, what):
    """Refuse, when decorating, a constraint on a name the function does not have (or
    one that reads an argument not yet checked)."""
    for name in names:
        if name not in allowed:
            raise TypeError(f"{what} {name!r} is not a parameter of {function.__qualname__} "
                            "declared before it")


def _parameter_list(signature):
    """The wrapper's parameter list, without defaults (they are set afterwards, the
    function's own objects), and the matching call of the function."""
    kinds = inspect.Parameter
    header, call = [], []
    previous = None
    for p in signature.parameters.values():
        if previous is kinds.POSITIONAL_ONLY and p.kind is not kinds.POSITIONAL_ONLY:
            header.append("/")
        if p.kind is kinds.KEYWORD_ONLY and previous not in (kinds.KEYWORD_ONLY,
                                                             kinds.VAR_POSITIONAL):
            header.append("*")
        star = {kinds.VAR_POSITIONAL: "*", kinds.VAR_KEYWORD: "**"}.get(p.kind, "")
        header.append(star + p.name)
        call.append(f"{p.name}={p.name}" if p.kind is kinds.KEYWORD_ONLY else star + p.name)
        previous = p.kind
    if previous is kinds.POSITIONAL_ONLY:
        header.append("/")
    return ", ".join(header), ", ".join(call)


__all__ += ["Constraint", "Positive", "Count", "Sweeps", "InverseTemperature", "Flag",
            "Generator", "DataMatrix", "BinaryMatrix", "RealArray", "OneOf", "Optional",
            "Checked", "Joint", "Rows", "validated", "HYPERPARAMETERS"]
