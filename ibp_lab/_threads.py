"""One BLAS thread for the samplers' small linear algebra.

The samplers factor and solve small matrices (``K x K`` with ``K`` a few tens) thousands of
times a run. OpenBLAS starts one thread per core for them by default, and a thread that
waits for a busy core stalls the whole call: on a loaded 2-core machine
``scipy.linalg.solve_triangular`` took about 15 ms a call with two threads, and the
uncollapsed and slice samplers ran 3 to 25 times faster with one (``benchmarks/threads.py``
measures it). Every runner that does linear algebra therefore runs under
:func:`single_blas_thread`, a decorator and context manager that holds every BLAS library
the process has loaded at one thread while it runs and restores the previous counts after.

Entering is cheap (microseconds): the libraries are found once, on first use, by a cached
``threadpoolctl.ThreadpoolController`` (``threadpool_limits`` looks them up afresh at
each entry, about 0.6 ms), after importing ``scipy.linalg`` so that SciPy's own OpenBLAS,
which NumPy does not load, is among them. Importing this module does nothing (no lookup, no limit).
Calls nest, and several threads may hold the limit at once: the first to enter sets it and
the last to leave restores it, so a thread that leaves early does not lift the limit for the others. (Across threads this
is best effort: OpenBLAS 0.3.30 does not reliably apply a count set from one thread while
another thread that set one is still alive. A miss costs speed only, never the numbers.)

>>> import numpy as np
>>> with single_blas_thread():
...     x = np.linalg.solve(np.eye(3), np.ones(3))
>>> x.tolist()
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

_Function = TypeVar("_Function", bound=Callable)

_lock = threading.Lock()
_controller = None  # threadpoolctl.ThreadpoolController, built on first use
_holders = 0  # callers (threads, nested calls) inside the limit now
_restore = None  # the limiter whose exit restores the counts found on first entry


def _blas_controller(refresh: bool):
    """The cached controller of the loaded BLAS libraries (rebuilt if ``refresh``)."""
    global _controller
    if _controller is None or refresh:
        # imported on use, so that importing this module does no work; scipy.linalg first,
        # since SciPy's BLAS is a library of its own that NumPy's import does not load
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


@contextmanager
def _limited(refresh: bool) -> Iterator[None]:
    global _holders, _restore
    with _lock:
        if _holders == 0:
            _restore = _blas_controller(refresh).limit(limits=1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _restore.restore_original_limits()
                _restore = None


def single_blas_thread(function: _Function | None = None, *, refresh: bool = False):
    """Run ``function`` (as a decorator) or a ``with`` block with one BLAS thread.

    Parameters
    ----------
    function : callable, optional
        The function to wrap; without it, a context manager is returned.
    refresh : bool, optional
        Look the BLAS libraries up again first (about 3 ms), for code that may load one
        after the first lookup (PyMC's compiled graphs). Ignored while a limit is held.

    Returns
    -------
    callable or context manager

    Examples
    --------
    >>> @single_blas_thread
    ... def one_solve(n):
    ...     import numpy as np
    ...     return float(np.linalg.solve(2 * np.eye(n), np.ones(n)).sum())
    >>> one_solve(4)
    2.0
    """
    if function is None:
        return _limited(refresh)

    @functools.wraps(function)
    def limited(*args, **kwargs):
        with _limited(refresh):
            return function(*args, **kwargs)
    return limited
