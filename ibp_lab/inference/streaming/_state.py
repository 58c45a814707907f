"""Checkpoints of a :class:`~ibp_lab.inference.streaming.RecursiveIBP` stream: checked, atomic, no pickle.

A state is a dictionary (:meth:`RecursiveIBP.get_state`). This module

- checks a state completely before anything uses it (:func:`validate_state`): the keys
  (none missing, none extra), the type of every entry, the dtype and shape of every
  array, the range of every number (variances > 0, probabilities in [0, 1], counts
  non-negative integers) and the consistency of the entries with each other (the expected
  number of features is the sum of the existence probabilities, the retired slots' count
  law is a log pmf with the retired mean, every slot's usage lies between its
  existence probability and ``n_seen`` times it, the histories have one entry per
  observation, ...). Every failure is one ``ValueError("<source> is not a valid
  RecursiveIBP state: <what>")``;
- names the bit generators a state may hold through a whitelist (:data:`BIT_GENERATORS`):
  a file never chooses which function runs;
- writes a state to a temporary file in the target's folder, flushes it to disk and
  renames it over the target (:func:`write_state`), so that a failure leaves the previous
  checkpoint intact; reads one back without unpickling and without trusting the sizes a
  file claims (:func:`read_state`).

The generator's state holds integers beyond 64 bits (PCG64) and arrays of ``uint32`` or
``uint64`` words (MT19937, Philox, SFC64); it travels as JSON, arrays tagged with their
dtype, so that every one of them round-trips bit for bit.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import io
import json
import numbers
import os
import secrets
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ibp_lab._checks import check_count, check_positive
from ibp_lab.inference.streaming._limits import MAX_RECORDED_ROWS
from ibp_lab.inference.streaming._settings import (  # re-exported: the checkpoint's settings
    BIRTHS, MAX_BUFFER, MAX_STEPS, MODELS, SETTING_KEYS, Settings, check_settings)
from ibp_lab.inference.streaming._stream import StreamState

__all__ = [
    "BIT_GENERATORS",
    "MAX_STATE_BYTES",
    "MAX_RECORDED_ROWS",
    "MAX_STEPS",
    "STATE_VERSION",
    "Settings",
    "capture",
    "check_settings",
    "read_state",
    "restore",
    "validate_state",
    "write_state",
]

#: The bit generators a state may name, by name. Never looked up with ``getattr``.
BIT_GENERATORS = {
    "PCG64": np.random.PCG64,
    "PCG64DXSM": np.random.PCG64DXSM,
    "MT19937": np.random.MT19937,
    "Philox": np.random.Philox,
    "SFC64": np.random.SFC64,
}
#: Version 2 added ``retired_log_pmf`` (the law of the retired slots' count), which the
#: exact (Poisson-binomial) filtering prior needs; a version-1 state holds only its mean.
#: Version 3 adds the birth buffer (``births``, ``buffer_size``, ``buffer_residuals``,
#: ``buffer_rows``).
STATE_VERSION = 3
#: Keys each older version lacks, and why it cannot be resumed.
_OLD_VERSIONS = {
    1: ("kept only the mean of the retired slots' count, not the law the exact prior "
        "needs"),
    2: "predates the birth buffer (births, buffer_size, buffer_residuals, buffer_rows)",
}
#: Largest state file read (bytes, after decompression): far above any stream the book
#: runs (a digit stream's state is a few hundred kB), and it bounds what a file can make
#: :func:`read_state` allocate.
MAX_STATE_BYTES = 1 << 30
#: State entries stored as arrays; the others are JSON scalars (and the generator's state).
ARRAY_KEYS = ("features", "variances", "usage", "log_unowned", "dish", "rate_history",
              "slots_history", "posterior_rows", "posterior_dishes", "posterior_values",
              "retired_log_pmf", "buffer_residuals", "buffer_rows")
SCALAR_KEYS = ("version", "log_alpha", "beta", "sigma_x", "sigma_a", "sigma_w", "model",
               "n_steps", "tol", "ossify", "keep_history", "record_posteriors", "births",
               "buffer_size", "rng_state",
               "rng_kind", "dim", "n_seen", "retired_rate", "next_dish", "rate")
# Relative slack in the consistency checks between quantities that the stream computes
# along different floating-point paths (a sum of b and an expm1 of a sum of log1p(-b)).
_SLACK = 1e-9
_WORD_DTYPES = {"uint32": np.uint32, "uint64": np.uint64}
# What goes wrong while parsing bytes that are not a state written by write_state.
_PARSE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
                 KeyError, TypeError, IndexError, struct.error, zlib.error, OverflowError,
                 NotImplementedError, RecursionError, UnicodeError)


class InvalidState(Exception):
    """What is wrong with a state; turned into one ``ValueError`` at the public door."""


def invalid(source: str, what: str) -> ValueError:
    """The one error of this module."""
    return ValueError(f"{source} is not a valid RecursiveIBP state: {what}")


# ---------------------------------------------------------------------------------------
# the generator's state
# ---------------------------------------------------------------------------------------

def encode_rng_state(value, depth: int = 0):
    """The generator's state as JSON-ready values (arrays tagged with their dtype)."""
    if depth > 4:
        raise InvalidState("rng_state is nested too deeply")
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise InvalidState("rng_state must have string keys")
        return {key: encode_rng_state(item, depth + 1) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        if value.dtype.name not in _WORD_DTYPES or value.ndim != 1:
            raise InvalidState(f"rng_state arrays must be 1-D uint32 or uint64, got "
                               f"{value.dtype} with {value.ndim} dimension(s)")
        return {"__words__": value.dtype.name, "values": [int(v) for v in value]}
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, str)):
        raise InvalidState(f"rng_state entries must be integers, strings or arrays, got "
                           f"{type(value).__name__}")
    return value if isinstance(value, str) else int(value)


def decode_rng_state(value, depth: int = 0):
    """Inverse of :func:`encode_rng_state`; refuses anything else."""
    if depth > 4:
        raise InvalidState("rng_state is nested too deeply")
    if isinstance(value, dict) and "__words__" in value:
        if set(value) != {"__words__", "values"} or value["__words__"] not in _WORD_DTYPES:
            raise InvalidState("rng_state has a malformed array entry")
        words = value["values"]
        dtype = _WORD_DTYPES[value["__words__"]]
        top = np.iinfo(dtype).max
        if not isinstance(words, list) or not all(
            isinstance(w, int) and not isinstance(w, bool) and 0 <= w <= top for w in words
        ):
            raise InvalidState(f"rng_state array entries must be {value['__words__']} words")
        return np.array(words, dtype=dtype)
    if isinstance(value, dict):
        return {key: decode_rng_state(item, depth + 1) for key, item in value.items()}
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidState(f"rng_state entries must be integers, strings or arrays, got "
                           f"{type(value).__name__}")
    return value


# Entries of a generator's state that NumPy stores as given although only these ranges
# make sense (a cached-word flag, a position in a word buffer).
_POSITIONS = {"has_uint32": 1, "buffer_pos": 4, "pos": 624}


def _check_word_positions(canonical: dict, depth: int = 0) -> None:
    for key, value in canonical.items():
        if isinstance(value, dict) and "__words__" not in value and depth < 4:
            _check_word_positions(value, depth + 1)
        elif key in _POSITIONS and not (isinstance(value, int)
                                        and 0 <= value <= _POSITIONS[key]):
            raise InvalidState(f"rng_state {key} must be in [0, {_POSITIONS[key]}], got {value!r}")


def make_generator(kind, state) -> np.random.Generator:
    """A generator of the whitelisted ``kind`` in exactly the given ``state``."""
    if not isinstance(kind, str) or kind not in BIT_GENERATORS:
        raise InvalidState(f"rng_kind must be one of {sorted(BIT_GENERATORS)}, got {kind!r}")
    if not isinstance(state, dict):
        raise InvalidState(f"rng_state must be a dict, got {type(state).__name__}")
    canonical = encode_rng_state(state)
    _check_word_positions(canonical)
    bit_generator = BIT_GENERATORS[kind]()
    try:
        bit_generator.state = decode_rng_state(canonical)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise InvalidState(f"rng_state is not a {kind} state ({exc})") from None
    # NumPy converts some entries silently (a negative or oversized integer wraps): the
    # state read back must be the state given, or the stream would not resume as it was
    if encode_rng_state(bit_generator.state) != canonical:
        raise InvalidState(f"rng_state holds values out of range for {kind}")
    return np.random.Generator(bit_generator)


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------

def _scalar(check, *args, **kwargs):
    """Run one of the shared checks of :mod:`ibp_lab._checks`, reporting its message."""
    try:
        return check(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise InvalidState(str(exc)) from None


def _array(state, key, kind: str, ndim: int) -> np.ndarray:
    """``state[key]`` as a float64 (``kind="f"``) or int64 (``kind="i"``) array."""
    value = state[key]
    if isinstance(value, (str, bytes, dict)) or value is None:
        raise InvalidState(f"{key} must be an array, got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        raise InvalidState(f"{key} must be an array, got {type(value).__name__}") from None
    allowed = "f" if kind == "f" else "iu"
    if arr.dtype.kind not in allowed or arr.dtype.fields is not None:
        wanted = "a floating-point" if kind == "f" else "an integer"
        raise InvalidState(f"{key} must be {wanted} array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise InvalidState(f"{key} must be {ndim}-D, got shape {arr.shape}")
    if kind == "f":
        return arr.astype(np.float64)
    if arr.size and (arr.max() > np.iinfo(np.int64).max or arr.min() < 0):
        raise InvalidState(f"{key} must hold non-negative integers, found {arr.min()}..{arr.max()}")
    return arr.astype(np.int64)


def _check_keys(state) -> None:
    if not isinstance(state, dict):
        raise InvalidState(f"it must be a dict from get_state(), got {type(state).__name__}")
    expected = set(SCALAR_KEYS) | set(ARRAY_KEYS)
    missing = sorted(expected - set(state), key=str)
    extra = sorted(set(state) - expected, key=str)
    version = state.get("version")
    if missing and not isinstance(version, bool) and isinstance(version, int) \
            and version in _OLD_VERSIONS:
        raise InvalidState(f"version must be {STATE_VERSION}, got {version} (version "
                           f"{version} {_OLD_VERSIONS[version]}: refit the stream)")
    if missing:
        raise InvalidState(f"missing {missing}")
    if extra:
        raise InvalidState(f"unexpected {extra}")


def _hyperparameters(state) -> dict:
    """The estimator's settings, through the door :meth:`RecursiveIBP.fit` uses."""
    version = state["version"]
    if isinstance(version, bool) or not isinstance(version, numbers.Integral) \
            or version != STATE_VERSION:
        raise InvalidState(f"version must be {STATE_VERSION}, got {version!r}")
    if state["log_alpha"] is None:
        # a state always stores the log of alpha; None would send the door to ask for alpha
        raise InvalidState("log_alpha must be a finite real number, got None")
    if state["births"] is None:
        # a state stores the rule it ran; None would let the door choose one afresh
        raise InvalidState("births must be 'buffer' or 'single' in a state, got None")
    try:
        settings = check_settings(alpha=None, **{name: state[name] for name in SETTING_KEYS})
    except (TypeError, ValueError) as exc:
        raise InvalidState(str(exc)) from None
    return {"settings": settings, "rng": make_generator(state["rng_kind"], state["rng_state"])}


def _counters(state) -> dict:
    """``dim``, ``n_seen``, ``next_dish`` and the two rates."""
    dim = state["dim"]
    out = {"dim": None if dim is None else _scalar(check_count, "dim", dim, minimum=1),
           "n_seen": _scalar(check_count, "n_seen", state["n_seen"]),
           "next_dish": _scalar(check_count, "next_dish", state["next_dish"], minimum=1)}
    for name in ("retired_rate", "rate"):
        out[name] = _scalar(check_positive, name, state[name], allow_zero=True, upper=None)
    if (out["dim"] is None) != (out["n_seen"] == 0):
        raise InvalidState(f"dim is {dim!r} with n_seen = {out['n_seen']} (dim is set by "
                           "the first observation, and only then)")
    return out


def _close(a, b) -> bool:
    return abs(a - b) <= _SLACK * (1.0 + abs(a) + abs(b))


def _slots(state, counts, sigma_a: float) -> dict:
    """The per-slot arrays, their shapes, ranges and consistency with the rates."""
    features = _array(state, "features", "f", 2)
    k = features.shape[0]
    dim = counts["dim"]
    if dim is not None and features.shape != (k, dim):
        raise InvalidState(f"features must have shape (K, dim={dim}), got {features.shape}")
    if dim is None and features.size:
        raise InvalidState("features must be empty before the first observation")
    out = {"features": features.reshape(k, dim or 0)}
    for key, kind in (("variances", "f"), ("usage", "f"), ("log_unowned", "f"), ("dish", "i")):
        out[key] = _array(state, key, kind, 1)
        if out[key].shape != (k,):
            raise InvalidState(f"{key} must have shape ({k},) like features, got "
                               f"{out[key].shape}")
    if not np.all(np.isfinite(features)):
        raise InvalidState("features must be finite")
    var = out["variances"]
    if not np.all((var > 0) & (var <= sigma_a**2 * (1 + _SLACK))):
        raise InvalidState(f"variances must be in (0, sigma_a^2 = {sigma_a**2:g}]")
    n_seen, usage, log_unowned = counts["n_seen"], out["usage"], out["log_unowned"]
    if not np.all((usage >= 0) & (usage <= n_seen)):
        raise InvalidState(f"usage must be in [0, n_seen = {n_seen}]")
    if np.any(np.isnan(log_unowned)) or np.any(log_unowned > 0):
        raise InvalidState("log_unowned must be <= 0 (logs of probabilities), not NaN")
    existence = -np.expm1(log_unowned)
    # 1 - prod(1 - b) <= sum b <= (observations) * max b <= n_seen * (1 - prod(1 - b))
    if np.any(existence > usage * (1 + _SLACK) + 1e-300) or \
            np.any(usage > n_seen * existence * (1 + _SLACK)):
        raise InvalidState("usage must lie between each slot's existence probability "
                           "1 - exp(log_unowned) and n_seen times it")
    dish, next_dish = out["dish"], counts["next_dish"]
    if k > next_dish - 1 or (k and (dish[0] < 1 or dish[-1] > next_dish - 1
                                    or np.any(np.diff(dish) <= 0))):
        raise InvalidState(f"dish must be strictly increasing dish numbers in [1, next_dish - 1 "
                           f"= {next_dish - 1}]")
    retired = counts["retired_rate"]
    if retired > (next_dish - 1 - k) * (1 + _SLACK):
        raise InvalidState(f"retired_rate {retired:g} exceeds the {next_dish - 1 - k} retired "
                           "slots")
    if not _close(counts["rate"], float(np.sum(existence)) + retired):
        raise InvalidState("rate must be the sum of the existence probabilities plus "
                           "retired_rate")
    out["retired_log_pmf"] = _retired_law(state, next_dish - 1 - k, retired)
    return out


def _retired_law(state, n_retired: int, retired_rate: float) -> np.ndarray:
    """The retired slots' count law: a log pmf on ``0 .. n_retired``, mean ``retired_rate``,
    log-concave with no gap in its support (as a Poisson-binomial law is)."""
    log_pmf = _array(state, "retired_log_pmf", "f", 1)
    if not 1 <= log_pmf.size <= n_retired + 1:
        raise InvalidState(f"retired_log_pmf must have 1 to {n_retired + 1} entries (one more "
                           f"than the retired slots), got {log_pmf.size}")
    if np.any(np.isnan(log_pmf)) or np.any(log_pmf > 0):
        raise InvalidState("retired_log_pmf must hold logs of probabilities (<= 0, not NaN)")
    pmf = np.exp(log_pmf)
    total = float(pmf.sum())
    if abs(total - 1.0) > 1e-9:
        raise InvalidState(f"retired_log_pmf must sum to 1 once exponentiated, got {total:.12g}")
    # a sum of independent Bernoullis has a log-concave pmf with no gap in its support,
    # which the filtering prior relies on (its sums stop early below the mode); the slack
    # covers rounding of logs computed by log-sum-exp (1e-9 relative)
    finite = np.flatnonzero(np.isfinite(log_pmf))
    inner = log_pmf[finite[0]: finite[-1] + 1]
    if not np.all(np.isfinite(inner)):
        raise InvalidState("retired_log_pmf must have no zero probabilities between its "
                           "nonzero ones (a count of independent Bernoullis)")
    if inner.size >= 3:
        excess = inner[:-2] + inner[2:] - 2 * inner[1:-1]
        if np.any(excess > 1e-9 * (1.0 + np.abs(inner[1:-1]))):
            raise InvalidState("retired_log_pmf must be log-concave (a count of "
                               "independent Bernoullis)")
    mean = float(np.arange(log_pmf.size) @ pmf)
    if abs(mean - retired_rate) > 1e-9 * (1.0 + log_pmf.size):
        raise InvalidState(f"retired_log_pmf has mean {mean:.12g}, not retired_rate "
                           f"{retired_rate:.12g}")
    return log_pmf


def _histories(state, counts, settings, k: int) -> dict:
    """Rate and slot histories, and the recorded posteriors."""
    n_seen = counts["n_seen"]
    settings = settings["settings"]
    if settings.record_posteriors and n_seen > MAX_RECORDED_ROWS:
        raise InvalidState(f"n_seen = {n_seen} exceeds {MAX_RECORDED_ROWS}, the most "
                           "observations recorded with record_posteriors=True")
    rates = _array(state, "rate_history", "f", 1)
    slots = _array(state, "slots_history", "i", 1)
    length = n_seen if settings.keep_history else 0
    if rates.size != length or slots.size != length:
        raise InvalidState(f"rate_history and slots_history must have {length} entries "
                           f"(keep_history={settings.keep_history}, n_seen={n_seen}), got "
                           f"{rates.size} and {slots.size}")
    if not np.all(np.isfinite(rates) & (rates >= 0)):
        raise InvalidState("rate_history must hold finite rates >= 0")
    if length and (not _close(rates[-1], counts["rate"]) or slots[-1] != k
                   or slots.max() > counts["next_dish"] - 1):
        raise InvalidState("the histories must end at the current rate and number of slots")
    rows = _array(state, "posterior_rows", "i", 1)
    dishes = _array(state, "posterior_dishes", "i", 1)
    values = _array(state, "posterior_values", "f", 1)
    if not rows.size == dishes.size == values.size:
        raise InvalidState("posterior_rows, posterior_dishes and posterior_values must have "
                           "the same length")
    if rows.size and not settings.record_posteriors:
        raise InvalidState("posteriors are recorded only with record_posteriors=True")
    if rows.size:
        same_row = np.diff(rows) == 0
        if rows[-1] >= n_seen or np.any(np.diff(rows) < 0) or dishes.min() < 1 \
                or dishes.max() > counts["next_dish"] - 1 or np.any(np.diff(dishes)[same_row] <= 0):
            raise InvalidState("posterior_rows must be sorted rows in [0, n_seen) and "
                               "posterior_dishes increasing dish numbers within a row")
        if not np.all((values > 0) & (values <= 1)):
            raise InvalidState("posterior_values must be probabilities in (0, 1]")
    return {"rate_history": rates, "slots_history": slots, "posterior_rows": rows,
            "posterior_dishes": dishes, "posterior_values": values}


def _buffer(state, counts, settings: Settings) -> dict:
    """The birth buffer: fewer rows than ``buffer_size``, finite residuals of width ``dim``,
    strictly increasing observation indices in ``[1, n_seen]``; empty with single births."""
    residuals = _array(state, "buffer_residuals", "f", 2)
    rows = _array(state, "buffer_rows", "i", 1)
    m = rows.size
    if residuals.shape != (m, counts["dim"] or 0) and residuals.shape[0] == m:
        raise InvalidState(f"buffer_residuals must have shape ({m}, dim={counts['dim']}), "
                           f"got {residuals.shape}")
    if residuals.shape[0] != m:
        raise InvalidState(f"buffer_residuals must have one row per buffer_rows entry ({m}), "
                           f"got {residuals.shape[0]}")
    if m and settings.births != "buffer":
        raise InvalidState("the birth buffer must be empty with births='single'")
    if m >= settings.buffer_size:
        raise InvalidState(f"the birth buffer holds {m} rows; a full buffer "
                           f"(buffer_size = {settings.buffer_size}) is always emptied")
    if m and (rows[0] < 1 or rows[-1] > counts["n_seen"] or np.any(np.diff(rows) <= 0)):
        raise InvalidState(f"buffer_rows must be strictly increasing observation indices in "
                           f"[1, n_seen = {counts['n_seen']}]")
    if not np.all(np.isfinite(residuals)):
        raise InvalidState("buffer_residuals must be finite")
    return {"buffer_residuals": residuals.reshape(m, counts["dim"] or 0),
            "buffer_rows": rows}


def validate_state(state, source: str = "state") -> dict:
    """Check ``state`` completely; return its entries converted (a generator for the rng).

    Raises
    ------
    ValueError
        ``"<source> is not a valid RecursiveIBP state: <what>"`` for anything wrong.
    """
    try:
        _check_keys(state)
        settings = _hyperparameters(state)
        counts = _counters(state)
        slots = _slots(state, counts, settings["settings"].sigma_a)
        histories = _histories(state, counts, settings, slots["features"].shape[0])
        buffer = _buffer(state, counts, settings["settings"])
    except InvalidState as exc:
        raise invalid(source, str(exc)) from None
    return {**settings, **counts, **slots, **histories, **buffer}


# ---------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------

def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable where the system allows opening a folder."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _checked_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if os.fspath(path) in ("", b""):
        raise ValueError("path must name a file, got an empty path")
    return Path(os.fsdecode(path))


def _temporary_prefix(path: Path) -> str:
    """Hidden temporary files of ``path``: ``.ibp-<hash of the name>.`` then the writer's
    process id. Of fixed length, so that a name the system accepts stays accepted (the
    whole name in it added 23 characters, too many near the 255-byte limit)."""
    digest = hashlib.sha256(path.name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f".ibp-{digest}."


def _remove_abandoned(path: Path, prefix: str) -> None:
    """Remove the temporary files of ``path`` left by writers that no longer run (a save
    killed before its rename); a live writer's file is left alone."""
    try:
        candidates = list(path.parent.glob(f"{prefix}*.tmp"))
    except OSError:
        return
    for candidate in candidates:
        pid = candidate.name[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or _process_alive(int(pid)):
            continue
        try:
            candidate.unlink()
        except OSError:
            pass


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be saving now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def write_state(path, state: dict) -> None:
    """Write ``state`` as ``.npz`` to ``path`` atomically: a temporary file, then a rename.

    Until the rename, the file at ``path`` (a previous checkpoint) is untouched; if
    anything fails the temporary file is removed and the error propagates. A checkpoint
    replaced keeps its permissions (a file restricted with ``chmod 600`` stays so), and
    the temporary files of saves that were killed are removed by the next save.
    """
    path = _checked_path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory: path must name a file",
                                os.fspath(path))
    scalars = {key: state[key] for key in SCALAR_KEYS}
    scalars["rng_state"] = encode_rng_state(state["rng_state"])
    arrays = {key: np.asarray(state[key]) for key in ARRAY_KEYS}
    meta = np.array(json.dumps(scalars, allow_nan=False))
    prefix = _temporary_prefix(path)
    _remove_abandoned(path, prefix)
    tmp = path.with_name(f"{prefix}{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never write through a file someone else put there; 0o666 lets umask decide
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))  # the replaced file's mode
        except FileNotFoundError:
            pass
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, meta=meta, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_folder(path.parent)


def _parse_npy(data: bytes) -> np.ndarray:
    """One ``.npy`` member, refusing object dtypes and sizes that disagree with the bytes."""
    buf = io.BytesIO(data)
    version = np.lib.format.read_magic(buf)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufU":
        raise ValueError(f"dtype {dtype} is not allowed")
    count = int(np.prod(shape, dtype=object))
    if count * dtype.itemsize != len(data) - buf.tell():
        raise ValueError("array size disagrees with its header (truncated?)")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=buf.tell())
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def _parse(raw: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        infos = archive.infolist()
        names = sorted(info.filename for info in infos)
        expected = sorted(f"{key}.npy" for key in ("meta",) + ARRAY_KEYS)
        if names != expected:
            raise KeyError(f"members {names}, expected {expected}")
        if sum(info.file_size for info in infos) > MAX_STATE_BYTES:
            raise ValueError(f"more than {MAX_STATE_BYTES} bytes once decompressed")
        arrays = {name[:-4]: _parse_npy(archive.read(name)) for name in names}
    meta = arrays.pop("meta")
    if meta.shape != () or meta.dtype.kind != "U":
        raise ValueError("meta must be a JSON string")
    state = json.loads(str(meta[()]))
    if not isinstance(state, dict):
        raise ValueError("meta must hold a JSON object")
    if "rng_state" in state:
        state["rng_state"] = decode_rng_state(state["rng_state"])
    state.update(arrays)
    return state


def read_state(path) -> dict:
    """Read the file written by :func:`write_state` and validate it (:func:`validate_state`).

    A missing or unreadable file raises the usual ``OSError``; anything wrong with the
    contents raises one ``ValueError``.
    """
    path = _checked_path(path)
    source = f"file {os.fspath(path)!r}"
    # without blocking (a FIFO would wait for a writer forever), then checked to be a
    # regular file of bounded size before a byte is read (/dev/zero never ends)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise invalid(source, "not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_STATE_BYTES:
            raise invalid(source, f"larger than {MAX_STATE_BYTES} bytes")
        raw = handle.read(MAX_STATE_BYTES + 1)
    if len(raw) > MAX_STATE_BYTES:
        raise invalid(source, f"larger than {MAX_STATE_BYTES} bytes")
    try:
        state = _parse(raw)
    except InvalidState as exc:
        raise invalid(source, str(exc)) from None
    except _PARSE_ERRORS as exc:
        raise invalid(source, f"corrupt or truncated ({type(exc).__name__}: {exc})") from None
    return validate_state(state, source)


# ---------------------------------------------------------------------------------------
# an estimator's state, out and in
# ---------------------------------------------------------------------------------------

def capture(estimator) -> dict:
    """The state of a started :class:`~ibp_lab.inference.streaming.RecursiveIBP` stream, as copies."""
    settings = estimator._settings
    return {
        "version": STATE_VERSION,
        **{name: getattr(settings, name) for name in SETTING_KEYS},
        "rng_state": estimator.rng_.bit_generator.state,
        "rng_kind": type(estimator.rng_.bit_generator).__name__,
        **estimator._stream.to_dict(),
    }


def _parameters_of(settings: Settings, rng: np.random.Generator) -> dict:
    """Constructor parameters that reproduce ``settings`` exactly.

    ``alpha`` where ``log(alpha)`` gives back the stored logarithm bit for bit (then a
    refit computes the same prior), ``log_alpha`` otherwise (the BP-means limit).
    """
    params = {name: getattr(settings, name) for name in SETTING_KEYS if name != "log_alpha"}
    alpha = settings.alpha
    exact = alpha > 0 and float(np.log(alpha)) == settings.log_alpha
    params["alpha"] = alpha if exact else None
    params["log_alpha"] = None if exact else settings.log_alpha
    params["rng"] = rng
    return params


def restore(estimator, valid: dict) -> None:
    """Replace the estimator's parameters and stream by a validated state, all at once.

    The new stream is built aside on a fresh estimator and then swapped in, so nothing
    can fail half-way.
    """
    settings, rng = valid["settings"], valid["rng"]
    fresh = type(estimator)(**_parameters_of(settings, copy.deepcopy(rng)))
    fresh._start(settings, rng)
    fresh._stream = StreamState.from_dict(valid)
    estimator.__dict__.clear()
    estimator.__dict__.update(fresh.__dict__)
