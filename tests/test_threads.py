"""Tests of ibp_lab._threads: one BLAS thread while a sampler runs, the counts restored after.

The limit is global to the process, so what matters is when it is set and when it is lifted:
nested calls must not lift it early, and the counts found on entry must come back. (Threads
that overlap in the limit are not tested: OpenBLAS 0.3.30 itself does not reliably apply a
count set from one thread while another thread that set one is alive; see ibp_lab._threads.)
"""

import subprocess
import sys

import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS, loaded as the samplers load it)
from threadpoolctl import threadpool_info, threadpool_limits

from ibp_lab import _threads
from ibp_lab._threads import single_blas_thread


def blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_the_limit_covers_numpy_and_scipy_blas_and_restores_the_counts():
    with threadpool_limits(limits=2, user_api="blas"):  # a known start, even on one core
        before = blas_threads()
        assert len(before) == 2  # NumPy's OpenBLAS and SciPy's: the samplers use both
        with single_blas_thread():
            assert blas_threads() == [1, 1]
            with single_blas_thread():  # nested: still one thread after the inner call
                pass
            assert blas_threads() == [1, 1]
        assert blas_threads() == before


def test_a_decorated_function_keeps_its_name_and_runs_limited():
    @single_blas_thread
    def inside(x):
        """Doc."""
        return x, blas_threads()

    value, threads = inside(3)
    assert value == 3 and threads == [1] * len(threads) and inside.__doc__ == "Doc."
    assert inside.__name__ == "inside" and inside.__wrapped__ is not None


def test_an_error_inside_still_restores_the_counts():
    before = blas_threads()
    try:
        with single_blas_thread():
            raise KeyError("inside")
    except KeyError:
        pass
    assert blas_threads() == before and _threads._holders == 0


def test_importing_the_package_limits_nothing_and_loads_no_controller():
    """design.md: importing ibp_lab has no side effects; the libraries are looked up on
    first use only."""
    code = ("import ibp_lab._threads as t, ibp_lab.inference.uncollapsed, ibp_lab.inference.chains;"
            "print(t._controller is None, t._holders)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "0"]

