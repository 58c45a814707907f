"""Calling a student's function safely: exceptions, return values and time in words.

A checker is used by students and by autograders: whatever the student's function does
(raise anything, return anything, never return), the checker answers with a verdict.
"""

from __future__ import annotations

import contextlib
import numbers
import signal
import threading
import time

import numpy as np

from ibp_lab._checks import check_positive
from ibp_lab.teaching.exercises._result import ExerciseResult, describe_exception, fail

#: Longest time limit a checker accepts (a day): beyond it a limit means nothing.
MAX_TIME_LIMIT_S = 86_400.0


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
    """A returned value as a finite float, or what is wrong with it.

    >>> as_number(2)
    (2.0, None)
    >>> as_number(10**400)[1]  # an exact probability from math.factorial, say
    'it returned an integer of about 401 digits, too large for a float: work in log space'
    """
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None, f"it returned {type(value).__name__}, not a number"
    try:
        number = float(value)
    except OverflowError:
        # from the bit length: str() of an int beyond 4,300 digits is refused by Python
        digits = (int(abs(int(value)).bit_length() * 0.30103) + 1
                  if isinstance(value, numbers.Integral) else None)
        size = f"an integer of about {digits} digits" if digits else "a number"
        return None, f"it returned {size}, too large for a float: work in log space"
    except Exception as exc:  # noqa: BLE001 - a student's own number type that fails
        return None, f"it returned a {type(value).__name__} that float() refuses ({describe_exception(exc)})"
    if not np.isfinite(number):
        return None, f"it returned {number}, not a finite number"
    return number, None


class _OutOfTime(BaseException):
    """Raised in the checker when its time is up: a ``BaseException``, so that a
    student's ``except Exception`` cannot swallow it."""


def check_time_limit(value) -> float:
    """The ``time_limit`` argument of a checker, in seconds."""
    return check_positive("time_limit", value, upper=MAX_TIME_LIMIT_S)


@contextlib.contextmanager
def _alarm(seconds: float):
    """Raise :class:`_OutOfTime` in this thread after ``seconds`` of wall-clock time.

    Uses the interval timer (``SIGALRM``), which interrupts Python code between two
    bytecodes and a blocking call such as ``time.sleep``; it exists only in a
    process's main thread on POSIX systems. Elsewhere nothing is limited. A timer set
    by the caller (a test runner's, say) that is due first is left to fire; one due
    later is put back afterwards with its remaining time.
    """
    usable = (hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable or 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= seconds:
        yield  # no timer here, or the caller's own alarm comes first: leave it alone
        return

    armed = [True]

    def out_of_time(signum, frame):
        if armed[0]:  # never while the timer below is being taken down
            raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, out_of_time)
    # at least a microsecond: the timer rounds a shorter delay to 0, which disarms it
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))
    start = time.monotonic()
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay:
            left = max(old_delay - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, old_interval)


def within_time_limit(exercise: str, seconds: float, what: str, check, *args, **kwargs
                      ) -> ExerciseResult:
    """``check(*args, **kwargs)``, or a failed result if it takes more than ``seconds``.

    ``what`` names the student's function in the verdict ("function", "sweep").
    """
    try:
        with _alarm(seconds):
            return check(*args, **kwargs)
    except _OutOfTime:
        return fail(exercise, f"The check did not finish within its time limit of "
                    f"{seconds:g} s: your {what} is very slow or never returns (an endless "
                    f"loop?). Try it once by hand on a small input, or pass a larger "
                    f"time_limit if it is only slow.")


def verdict_for(problem: str, where: str = "") -> str:
    """'Your function is not written yet ...' or 'Your function, on ...: it raised ...'."""
    if problem.startswith("not written"):
        return f"Your function is {problem}"
    return f"Your function{', ' + where if where else ''}: {problem}."
