"""ibp_lab.lab: quoted numbers reach the kernel, solution cells are skipped in JupyterLab."""

from __future__ import annotations

import pytest

from ibp_lab import lab


@pytest.fixture
def shell():
    """A fresh IPython shell standing in for the kernel."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield shell
    lab.skip_solutions(False)


def test_quote_glues_and_binds_the_name_in_the_kernel(shell):
    shell.run_cell("from ibp_lab.lab import quote\nquote('lab_t_value', 0.125, display=False)")
    assert shell.user_ns["lab_t_value"] == 0.125
    # the prose's expression now evaluates as jupyterlab-myst evaluates it
    assert eval('f"{lab_t_value:.2f}"', shell.user_ns) == "0.12"


def test_quote_refuses_a_name_the_prose_cannot_evaluate():
    with pytest.raises(ValueError, match="identifier"):
        lab.quote("a-b", 1.0)
    with pytest.raises(TypeError, match="display"):
        lab.quote("ok", 1.0, display="yes")


def test_solution_cells_are_skipped_in_a_kernel_and_their_numbers_pending(shell, monkeypatch):
    monkeypatch.delenv(lab.BOOK_BUILD_VARIABLE, raising=False)
    assert lab.skip_solutions() is True
    cell = f"{lab.SOLUTION_MARKER}\nlab_t_ran = True\nquote('lab_t_answer', 2.0)\n"
    shell.run_cell("from ibp_lab.lab import quote")
    shell.run_cell(cell)
    assert "lab_t_ran" not in shell.user_ns
    assert f"{shell.user_ns['lab_t_answer']:.3f}" == "(run the solution)"
    # an ordinary cell still runs
    shell.run_cell("lab_t_plain = 1")
    assert shell.user_ns["lab_t_plain"] == 1
    # switched off (the student asks for solutions), the same cell runs
    assert lab.skip_solutions(False) is False
    shell.run_cell(cell)
    assert shell.user_ns["lab_t_ran"] is True and shell.user_ns["lab_t_answer"] == 2.0


def test_the_book_build_runs_solution_cells(shell, monkeypatch):
    monkeypatch.setenv(lab.BOOK_BUILD_VARIABLE, "1")
    assert lab.skip_solutions() is False
    shell.run_cell(f"{lab.SOLUTION_MARKER}\nlab_t_built = 3\n")
    assert shell.user_ns["lab_t_built"] == 3


def test_numpy_scalars_are_quoted_as_python_numbers(monkeypatch):
    """{glue:text} formats text/plain: "np.float64(0.5)" would fail the build."""
    import myst_nb
    import numpy as np

    from ibp_lab import lab

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    lab.quote("lab_test_float", np.float64(0.5), display=False)
    lab.quote("lab_test_int", np.int64(3), display=False)
    assert type(seen["lab_test_float"]) is float and seen["lab_test_float"] == 0.5
    assert type(seen["lab_test_int"]) is int and seen["lab_test_int"] == 3
