"""Calling a student's function safely: exceptions and return values in words."""

from __future__ import annotations

import numbers

import numpy as np

from ibp_lab.exercises._result import describe_exception


def check_function(name: str, fn, signature: str) -> None:
    """A ``TypeError`` naming ``name`` unless ``fn`` is callable."""
    if not callable(fn):
        raise TypeError(f"{name} must be a function {signature}, got {type(fn).__name__}")


def call(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), None)``, or ``(None, what went wrong)`` for any exception
    but an interrupt (``KeyboardInterrupt`` and ``SystemExit`` are not ``Exception``)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as exc:  # noqa: BLE001 - the student's error is the verdict
        return None, describe_exception(exc)


def as_number(value) -> tuple[float | None, str | None]:
    """A returned value as a finite float, or what is wrong with it."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None, f"it returned {type(value).__name__}, not a number"
    if not np.isfinite(float(value)):
        return None, f"it returned {float(value)}, not a finite number"
    return float(value), None


def verdict_for(problem: str, where: str = "") -> str:
    """'Your function is not written yet ...' or 'Your function, on ...: it raised ...'."""
    if problem.startswith("not written"):
        return f"Your function is {problem}"
    return f"Your function{', ' + where if where else ''}: {problem}."
