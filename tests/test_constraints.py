"""The constraints declared once (``ibp_lab._checks.validated``): same refusals, same words,
same order, the real signature, and nothing run before the checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from ibp_lab._checks import (BinaryMatrix, Checked, Count, DataMatrix, Flag, Generator,
                             InverseTemperature, Joint, OneOf, Optional, Positive, RealArray, Rows,
                             Sweeps, check_binary_matrix, check_count, check_data_matrix,
                             check_flag, check_inverse_temperature, check_positive,
                             check_real_array, check_rng, check_sweeps, validated)
from ibp_lab.inference.gibbs import gibbs_sweep, k_plus_trace

#: constraint, the check_* call it stands for, and inputs good and bad for both
PAIRS = [
    (Positive(), lambda v: check_positive("a", v), [2, 0, -1.0, np.inf, "x", True, 1e7]),
    (Positive(allow_zero=True, upper=1.0),
     lambda v: check_positive("a", v, allow_zero=True, upper=1.0), [0, 0.5, 2.0, -0.1]),
    (Count(minimum=1, maximum=10), lambda v: check_count("a", v, minimum=1, maximum=10),
     [3, 0, 11, 2.5, None]),
    (Sweeps(), lambda v: check_sweeps("a", v), [5, 0, 10**9]),
    (InverseTemperature(), lambda v: check_inverse_temperature(v, "a"), [0.5, 1.5, -1]),
    (Flag(), lambda v: check_flag("a", v), [True, np.True_, 1, "no"]),
    (Generator(), check_rng, [np.random.default_rng(0), 0, np.random.RandomState(0)]),
    (DataMatrix(), lambda v: check_data_matrix("a", v), [[[1.0]], [1.0], [[np.nan]], "x", [[1j]]]),
    (BinaryMatrix(), lambda v: check_binary_matrix("a", v), [[[1, 0]], [[2]], [1, 0]]),
    (RealArray(), lambda v: check_real_array("a", v), [[1, 2], ["x"], "ab"]),
]


def _outcome(call, value):
    try:
        result = call(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return "ok", repr(result)


@pytest.mark.parametrize("constraint, direct, values", PAIRS, ids=lambda p: type(p).__name__)
def test_each_constraint_refuses_and_accepts_as_its_check_function(constraint, direct, values):
    for value in values:
        assert _outcome(lambda v: constraint.check("a", v), value) == _outcome(direct, value)


def test_one_of_and_optional():
    with pytest.raises(ValueError, match=r"^mode must be 'a', 'b' or 'c', got 'd'$"):
        OneOf("a", "b", "c").check("mode", "d")
    with pytest.raises(ValueError, match="must be 'a' or 'b', got 3"):
        OneOf("a", "b").check("mode", 3)
    assert Optional(Count()).check("seed", None) is None
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        Optional(Count()).check("seed", -1)


def _door(log):
    @validated(x=Count(minimum=1), y=Positive(), rows=Optional(BinaryMatrix()),
               relation=Joint(lambda x, y: log.append(("relation", x, y)), "x", "y"))
    def door(x, y=1.0, rows=None, *, flag=False):
        """A door."""
        log.append(("body", x, y))
        return x, y, rows, flag

    return door


def test_checked_values_reach_the_body_in_every_calling_style():
    log = []
    door = _door(log)
    assert door(2, 3) == (2, 3.0, None, False)
    assert door(x=np.int64(2), y=np.array(3.0), flag=True) == (2, 3.0, None, True)
    assert door(2)[1] == 1.0  # the default, checked too
    assert door(2, rows=[[1]])[2].dtype == np.int8
    assert log[:2] == [("relation", 2, 3.0), ("body", 2, 3.0)]


def test_checks_run_in_declared_order_and_before_any_work():
    log = []
    door = _door(log)
    with pytest.raises(ValueError, match="^x must be an integer >= 1, got 0$"):
        door(0, -1.0)  # both bad: the first declared is reported
    with pytest.raises(ValueError, match="^y must be > 0, got -1.0$"):
        door(1, -1.0)
    assert log == []  # neither the relation nor the body ran


def test_python_binding_errors_are_untouched():
    door = _door([])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        door()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        door(1, z=2)
    with pytest.raises(TypeError, match="takes from 1 to 3 positional arguments"):
        door(1, 2, None, True)


def test_signature_docstring_and_constraints_are_readable():
    door = _door([])
    assert door.__name__ == "door" and door.__doc__ == "A door."
    assert str(inspect.signature(door)) == "(x, y=1.0, rows=None, *, flag=False)"
    assert list(door.parameter_constraints) == ["x", "y", "rows", "relation"]
    assert door.parameter_constraints["x"] == Count(minimum=1)
    assert "alpha: 'float'" in str(inspect.signature(gibbs_sweep))
    assert "One collapsed Gibbs sweep" in gibbs_sweep.__doc__
    assert list(k_plus_trace.parameter_constraints)[:3] == ["X", "n_sweeps", "rng"]


def test_positional_only_varargs_and_kwargs_pass_through():
    @validated(a=Count(), b=Count())
    def f(a, /, *rest, b=0, **extra):
        return a, rest, b, extra

    assert f(1, 2, 3, b=4, c=5) == (1, (2, 3), 4, {"c": 5})
    assert str(inspect.signature(f)) == "(a, /, *rest, b=0, **extra)"
    with pytest.raises(TypeError, match="b must be an integer"):
        f(1, b=1.5)


def test_a_function_without_constraints_is_untouched():
    def f(a, *, b=2):
        return a + b

    g = validated()(f)
    assert g(1) == 3 and g(1, b=5) == 6
    assert inspect.signature(g) == inspect.signature(f)
    assert g.parameter_constraints == {}
    assert not hasattr(f, "parameter_constraints")  # the original is not modified


def test_declaring_a_constraint_on_a_missing_or_later_parameter_fails_at_once():
    with pytest.raises(TypeError, match="'y' is not a parameter"):
        validated(y=Count())(lambda x: x)
    with pytest.raises(TypeError, match="reads 'Z' is not a parameter"):
        validated(X=BinaryMatrix(rows_of="Z"), Z=DataMatrix())(lambda X, Z: X)
    with pytest.raises(TypeError, match="must be a Constraint or a Joint"):
        validated(x=int)(lambda x: x)


def test_checked_with_rows_of_passes_the_rows():
    seen = []

    def check_rows(name, value, *, n_rows):
        seen.append((name, n_rows))
        return value

    @validated(X=DataMatrix(), Z=Checked(check_rows, rows_of="X"))
    def f(X, Z):
        return Z

    f([[1.0], [2.0]], "z")
    assert seen == [("Z", 2)]


def test_gibbs_sweep_refuses_as_before():
    X = np.zeros((3, 2))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^Z must have 3 rows"):
        gibbs_sweep(X, np.ones((2, 1)), -1.0, 0.5, 1.0, rng)  # Z before alpha, as before
    with pytest.raises(ValueError, match="^beta must be > 0"):
        gibbs_sweep(X, np.ones((3, 1)), 1.0, 0.5, 1.0, "rng", beta=-1)  # beta before rng
    with pytest.raises(TypeError, match="^rng must be a numpy.random.Generator"):
        gibbs_sweep(X, np.ones((3, 1)), 1.0, 0.5, 1.0, "rng", inverse_temperature=2)
    with pytest.raises(ValueError, match="return_types needs X with at most 6 rows"):
        k_plus_trace(np.zeros((7, 1)), 5, rng, alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                     return_types=True, Z0="junk")  # before Z0, as before


def test_joint_reads_rows_and_sets_values():
    @validated(X=DataMatrix(), k=Count(),
               k_fits=Joint(lambda n_rows, k: min(k, n_rows), Rows("X"), "k", sets="k"))
    def f(X, k):
        return k

    assert f([[1.0], [2.0]], 5) == 2
    with pytest.raises(TypeError, match="Rows of 'X'"):
        validated(j=Joint(len, Rows("X")), X=DataMatrix())(lambda X: X)


def test_a_warning_at_stacklevel_3_points_at_the_caller():
    import warnings

    @validated(x=Count())
    def door(x):
        warnings.warn("careful", RuntimeWarning, stacklevel=3)  # past the wrapper
        return x

    with pytest.warns(RuntimeWarning) as record:
        door(1)
    assert record[0].filename == __file__


def test_the_wrapper_frame_belongs_to_the_function_module():
    import sys

    @validated(x=Count())
    def door(x):
        return sys._getframe(1).f_globals["__name__"]

    assert door(1) == __name__
