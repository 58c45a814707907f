"""Argument checks shared by the figure functions of :mod:`ibp_lab.teaching.plotting`.

The number and array doors of :mod:`ibp_lab._checks` judge numbers and data; the
checks here judge what only figures take: image shapes, stacks of flattened
images, grid layout numbers, colour limits, legend labels, dictionaries of runs,
the results of :mod:`ibp_lab.teaching.explorers` and the chains of
:func:`ibp_lab.inference.chains.run_chain`. Each raises ``ValueError`` or
``TypeError`` naming the argument and what is allowed, so that a mistake is
reported at the figure's door rather than as an ``IndexError`` from matplotlib
or a silently blank panel.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ibp_lab._checks import as_array, check_count, check_positive, check_real_array, check_size

#: Most panels (axes) one figure draws: each costs about 10 ms, and a thousand
#: feature images are already far more than a reader can look at.
MAX_PANELS = 1000
#: Largest colour limit accepted: ``vmax - vmin`` must stay finite in float64.
MAX_SCALE = 1e300


def check_axes(name: str, ax):
    """Return ``ax`` if it is a matplotlib ``Axes``, else raise ``TypeError``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> check_axes("ax", Figure().subplots()).__class__.__name__
    'Axes'
    >>> check_axes("ax", None)
    Traceback (most recent call last):
    ...
    TypeError: ax must be a matplotlib Axes, got NoneType
    """
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"{name} must be a matplotlib Axes, got {type(ax).__name__}")
    return ax


def axes_or_new(name: str, ax, *, figsize: tuple[float, float] = (4.0, 3.2)):
    """``ax`` checked, or (if ``None``) the axes of a new pyplot figure of ``figsize``.

    The ``plot_*`` functions draw on one axes given as ``ax=None``; with none given
    they make a pyplot figure, so that a notebook cell shows it as usual.

    Examples
    --------
    >>> axes_or_new("ax", None).__class__.__name__
    'Axes'
    >>> axes_or_new("ax", "left")
    Traceback (most recent call last):
    ...
    TypeError: ax must be a matplotlib Axes, got str
    """
    if ax is not None:
        return check_axes(name, ax)
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize).subplots()


def check_result(name: str, value, kind: type, *, made_by: str):
    """Return ``value`` if it is a ``kind`` (a result of :mod:`ibp_lab.teaching.explorers`), else raise.

    ``made_by`` names the function that computes such a result, for the message.

    Examples
    --------
    >>> from ibp_lab.teaching.explorers import BuffetDraws
    >>> check_result("draws", 2.0, BuffetDraws, made_by="ibp_lab.teaching.explorers.buffet")
    Traceback (most recent call last):
    ...
    TypeError: draws must be a BuffetDraws (from ibp_lab.teaching.explorers.buffet(...)), got float
    """
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__} (from {made_by}(...)), got {type(value).__name__}")
    return value


def check_shape(name: str, shape) -> tuple[int, int]:
    """``shape`` as ``(h, w)``: a pair of integers >= 1 (the shape of one image).

    Examples
    --------
    >>> check_shape("shape", (8, 6))
    (8, 6)
    >>> check_shape("shape", None)
    Traceback (most recent call last):
    ...
    ValueError: shape must be a pair (h, w) of integers >= 1, got None
    """
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 2:
        raise ValueError(f"{name} must be a pair (h, w) of integers >= 1, got {shape!r}")
    return (check_count(f"{name}[0]", shape[0], minimum=1),
            check_count(f"{name}[1]", shape[1], minimum=1))


def check_images(name: str, images, shape: tuple[int, int], *, min_rows: int = 0) -> np.ndarray:
    """``images`` as a finite ``(m, h * w)`` float array for a checked ``shape``.

    Examples
    --------
    >>> check_images("A", np.eye(2, 4), (2, 2)).shape
    (2, 4)
    >>> check_images("A", np.eye(2, 4), (3, 2))
    Traceback (most recent call last):
    ...
    ValueError: A must have shape (m, 6), one flattened 3 x 2 image per row, got (2, 4)
    """
    images = check_real_array(name, images)
    h, w = shape
    if images.ndim != 2 or images.shape[1] != h * w:
        raise ValueError(f"{name} must have shape (m, {h * w}), one flattened {h} x {w} image "
                         f"per row, got {images.shape}")
    if images.shape[0] < min_rows:
        raise ValueError(f"{name} must hold at least {min_rows} image(s), got {images.shape[0]}")
    if not np.all(np.isfinite(images)):
        raise ValueError(f"{name} must be finite (no NaN or infinite pixels)")
    return images


def check_scale(name: str, scale) -> float | None:
    """An optional colour limit: ``None`` or a finite number in ``(0, MAX_SCALE]``."""
    if scale is None:
        return None
    return check_positive(name, scale, upper=MAX_SCALE)


def check_fraction(name: str, value, *, low: float = 0.0, high: float = 1.0) -> float:
    """A real number in ``[low, high]`` (a share or a correlation), as a float.

    Examples
    --------
    >>> check_fraction("min_share", 0.3)
    0.3
    >>> check_fraction("min_share", 1.5)
    Traceback (most recent call last):
    ...
    ValueError: min_share must be in [0, 1], got 1.5
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not low <= value <= high:  # also refuses NaN
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value}")
    return value


def check_labels(name: str, labels, n: int, *, what: str) -> list[str]:
    """A sequence of ``n`` strings (legend entries), as a list.

    ``what`` says what they label, for the message ("chain", for instance).

    Examples
    --------
    >>> check_labels("labels", ["a", "b"], 2, what="chain")
    ['a', 'b']
    >>> check_labels("labels", "ab", 2, what="chain")
    Traceback (most recent call last):
    ...
    TypeError: labels must be a list of strings, one per chain, got str
    """
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise TypeError(f"{name} must be a list of strings, one per {what}, got {type(labels).__name__}")
    if len(labels) != n:
        raise ValueError(f"{name} must hold one string per {what} ({n}), got {len(labels)}")
    for j, label in enumerate(labels):
        if not isinstance(label, str):
            raise TypeError(f"{name}[{j}] must be a string, got {type(label).__name__}")
    return list(labels)


def check_class_labels(name: str, labels, n: int, *, partner: str) -> np.ndarray:
    """``(n,)`` class labels (integers or strings), one per row of ``partner``.

    Examples
    --------
    >>> check_class_labels("labels", [1, 0, 1], 3, partner="Z").tolist()
    [1, 0, 1]
    >>> check_class_labels("labels", [1], 3, partner="Z")
    Traceback (most recent call last):
    ...
    ValueError: labels must hold one class per row of Z (3), got shape (1,)
    """
    arr = as_array(name, labels, "an array of class labels", refuse_none=True)
    if arr.dtype.kind not in "biuUSf":
        raise TypeError(f"{name} must hold integers or strings, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must not hold NaN or infinite values")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must hold one class per row of {partner} ({n}), got shape {arr.shape}")
    return arr


def check_runs(name: str, runs, *, keys: str = "str") -> dict:
    """A non-empty mapping from names (or numbers) to finite real arrays, as a dict.

    ``keys`` is ``"str"`` (legend entries or panel titles) or ``"positive"``
    (settings of a positive parameter, such as ``sigma_x``, drawn as tick labels).

    Examples
    --------
    >>> list(check_runs("runs", {"a": [1, 2]}))
    ['a']
    >>> check_runs("runs", {})
    Traceback (most recent call last):
    ...
    ValueError: runs must hold at least one entry, got an empty mapping
    """
    if not isinstance(runs, Mapping):
        raise TypeError(f"{name} must be a dict (name -> array), got {type(runs).__name__}")
    if len(runs) == 0:
        raise ValueError(f"{name} must hold at least one entry, got an empty mapping")
    out = {}
    for key, value in runs.items():
        if keys == "str":
            if not isinstance(key, str):
                raise TypeError(f"{name} keys must be strings, got {type(key).__name__} {key!r}")
        else:
            key = check_positive(f"{name} key", key, upper=None)
        arr = check_real_array(f"{name}[{key!r}]", value)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}[{key!r}] must be finite (no NaN or infinite values)")
        out[key] = arr
    return out


#: What a figure reads from a chain result (:class:`ibp_lab.inference.chains.ChainResult`).
CHAIN_FIELDS = ("trace", "samples", "Z")


def is_chain_result(value) -> bool:
    """Whether ``value`` carries the fields of a chain result.

    Judged by its fields, not its class: the figures must not import the chain
    runner's module (figures never run a sampler), only read what it returned.
    """
    import xarray as xr

    return all(hasattr(value, field) for field in CHAIN_FIELDS) and isinstance(value.trace, xr.Dataset)


def check_chains(name: str, chains) -> list:
    """A non-empty list of chain results (:class:`ibp_lab.inference.chains.ChainResult`), as a list.

    A bare chain result is refused (with a hint) rather than wrapped: its
    labels would then be counted against the wrong number of chains.
    """
    if is_chain_result(chains):
        raise TypeError(f"{name} must be a list of ChainResult; wrap one chain in a list: [chain]")
    if isinstance(chains, (str, bytes)) or not isinstance(chains, Sequence):
        raise TypeError(f"{name} must be a list of ibp_lab.inference.chains.ChainResult, got {type(chains).__name__}")
    if len(chains) == 0:
        raise ValueError(f"{name} must hold at least one ChainResult, got none")
    check_size(f"{name} (one line per chain)", float(len(chains)), limit=MAX_PANELS,
               hint="draw fewer chains")
    for c, chain in enumerate(chains):
        if not is_chain_result(chain):
            raise TypeError(f"{name}[{c}] must be a ChainResult, got {type(chain).__name__}")
    return list(chains)


def check_trace(name: str, trace, variables: Sequence[str]) -> None:
    """Check that ``trace`` is an ``xarray.Dataset`` with real 1-D ``variables`` along ``draw``."""
    import xarray as xr

    if not isinstance(trace, xr.Dataset):
        raise TypeError(f"{name} must be an xarray.Dataset (ChainResult.trace), got {type(trace).__name__}")
    missing = [v for v in variables if v not in trace.data_vars]
    if missing:
        raise ValueError(f"{name} must hold the variables {list(variables)}; missing {missing}")
    for v in variables:
        if trace[v].dims != ("draw",):
            raise ValueError(f"{name}.{v} must be 1-D along 'draw', got dims {trace[v].dims}")
        check_real_array(f"{name}.{v}", trace[v].values)


def check_finite(name: str, value, *, ndim: int | None = None, length: int | None = None,
                 partner: str = "", low: float | None = None, high: float | None = None,
                 min_size: int = 0) -> np.ndarray:
    """``value`` as a finite float array, optionally of ``ndim`` dimensions and ``length``.

    ``length`` is the size of the first axis, given by ``partner`` (named in the
    message); ``low`` and ``high`` bound every entry (probabilities, for instance).

    Examples
    --------
    >>> check_finite("prob", [0.5, 0.2], ndim=1, low=0, high=1).tolist()
    [0.5, 0.2]
    >>> check_finite("prob", [0.5], ndim=1, length=2, partner="dish")
    Traceback (most recent call last):
    ...
    ValueError: prob must hold one entry per entry of dish (2), got shape (1,)
    """
    arr = check_real_array(name, value)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if length is not None and (arr.ndim == 0 or arr.shape[0] != length):
        raise ValueError(f"{name} must hold one entry per entry of {partner} ({length}), got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or infinite values)")
    # bounds hold up to rounding (a normalised probability may come out as 1 + 2e-16)
    if low is not None and arr.size and arr.min() < low - _SLACK * max(1.0, abs(low)):
        raise ValueError(f"{name} must be >= {low:g}, got {arr.min():g}")
    if high is not None and arr.size and arr.max() > high + _SLACK * max(1.0, abs(high)):
        raise ValueError(f"{name} must be <= {high:g}, got {arr.max():g}")
    return arr


#: Rounding allowed beyond the bounds of :func:`check_finite`.
_SLACK = 1e-9


def check_panels(name: str, n_panels: float) -> None:
    """Refuse a figure of more than :data:`MAX_PANELS` panels (or curves), naming ``name``."""
    check_size("the figure's panels or curves", float(n_panels), names=name, limit=MAX_PANELS,
               hint="draw fewer at once")


def check_optional_real(name: str, value, *, allow_none: bool = True) -> float | None:
    """``None`` or a finite real number (not a bool), as a float."""
    if value is None and allow_none:
        return None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def check_index_array(name: str, value, size: int, *, partner: str, allow_minus_one: bool = False,
                      min_size: int = 0) -> np.ndarray:
    """A 1-D array of integer indices into ``size`` items of ``partner`` (``-1``: none, if allowed).

    Examples
    --------
    >>> check_index_array("hidden", [2, 3], 4, partner="X_raw's columns").tolist()
    [2, 3]
    >>> check_index_array("hidden", [4], 4, partner="X_raw's columns")
    Traceback (most recent call last):
    ...
    ValueError: hidden must hold indices in [0, 3] (X_raw's columns), got 4
    """
    arr = as_array(name, value, "an array of integer indices", refuse_none=True)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and arr.size == 0):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} index(es), got {arr.size}")
    low = -1 if allow_minus_one else 0
    if arr.size and (arr.min() < low or arr.max() >= size):
        bad = arr[(arr < low) | (arr >= size)][0]
        raise ValueError(f"{name} must hold indices in [{low}, {size - 1}] ({partner}), got {bad}")
    return arr
