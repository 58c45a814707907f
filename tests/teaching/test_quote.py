"""ibp_lab.teaching.lab: quoted numbers reach the kernel, solution cells are skipped in JupyterLab."""

from __future__ import annotations

import pytest

from ibp_lab.teaching import lab


@pytest.fixture
def shell():
    """A fresh IPython shell standing in for the kernel."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield shell
    lab.skip_solutions(False)


def test_quote_glues_and_binds_the_name_in_the_kernel(shell):
    shell.run_cell("from ibp_lab.teaching.lab import quote\nquote('lab_t_value', 0.125, display=False)")
    assert shell.user_ns["lab_t_value"] == 0.125
    # the prose's expression now evaluates as jupyterlab-myst evaluates it
    assert eval('f"{lab_t_value:.2f}"', shell.user_ns) == "0.12"


def test_quote_refuses_a_name_the_prose_cannot_evaluate():
    with pytest.raises(ValueError, match="identifier"):
        lab.quote("a-b", 1.0)
    with pytest.raises(TypeError, match="display"):
        lab.quote("ok", 1.0, display="yes")


class _Requests:
    """Execute-request headers as the front end sends them: an id and the time sent."""

    def __init__(self, shell, monkeypatch):
        from datetime import datetime, timezone

        self.count, self.now = 0, datetime(2026, 1, 1, tzinfo=timezone.utc)
        self.parent = {}
        monkeypatch.setattr(shell, "get_parent", lambda: self.parent, raising=False)
        monkeypatch.setattr(lab, "_REQUESTS", lab._Requests())  # no earlier test's requests

    def send(self, after_seconds: float) -> None:
        from datetime import timedelta

        self.count += 1
        self.now += timedelta(seconds=after_seconds)
        self.parent = {"header": {"msg_id": f"m{self.count}", "date": self.now.isoformat()}}


def test_run_all_skips_solutions_and_their_numbers_are_pending(shell, monkeypatch):
    monkeypatch.delenv(lab.BOOK_BUILD_VARIABLE, raising=False)
    requests = _Requests(shell, monkeypatch)
    requests.send(0.0)
    assert lab.skip_solutions() is True
    cell = f"{lab.SOLUTION_MARKER}\nlab_t_ran = True\nquote('lab_t_answer', 2.0)\n"
    requests.send(0.001)  # Run All: every request sent at once
    shell.run_cell("from ibp_lab.teaching.lab import quote")
    requests.send(0.001)
    shell.run_cell(cell)
    assert "lab_t_ran" not in shell.user_ns
    assert f"{shell.user_ns['lab_t_answer']:.3f}" == "(run the solution's code, then this text)"
    requests.send(0.001)  # an ordinary cell of the batch still runs
    shell.run_cell("lab_t_plain = 1")
    assert shell.user_ns["lab_t_plain"] == 1


def test_a_solution_run_on_its_own_runs(shell, monkeypatch):
    """Shift+Enter on a solution, seconds after the last request: the reader asked for it."""
    monkeypatch.delenv(lab.BOOK_BUILD_VARIABLE, raising=False)
    requests = _Requests(shell, monkeypatch)
    requests.send(0.0)
    lab.skip_solutions()
    shell.run_cell("lab_t_before = 0")  # a cell run, then the reader reads for a while
    cell = f"{lab.SOLUTION_MARKER}\nlab_t_own = True\n"
    requests.send(2.5)
    shell.run_cell(cell)
    assert shell.user_ns.get("lab_t_own") is True
    # the same cell again as part of a batch is skipped
    del shell.user_ns["lab_t_own"]
    requests.send(0.0001)
    shell.run_cell(cell)
    assert "lab_t_own" not in shell.user_ns
    # switched off (the student asks for every solution), a batched solution runs too
    assert lab.skip_solutions(False) is False
    requests.send(0.0001)
    shell.run_cell(cell)
    assert shell.user_ns["lab_t_own"] is True


def test_a_request_is_judged_once_and_a_header_without_a_date_is_not_a_batch(shell, monkeypatch):
    monkeypatch.delenv(lab.BOOK_BUILD_VARIABLE, raising=False)
    requests = _Requests(shell, monkeypatch)
    clock = lab._REQUESTS
    requests.send(0.0)
    assert not clock.current_is_batched()  # the first request has nothing before it
    requests.send(0.001)
    assert clock.current_is_batched() and clock.current_is_batched()
    requests.parent = {"header": {"msg_id": "no-date"}}
    assert not clock.current_is_batched()


def test_the_book_build_runs_solution_cells(shell, monkeypatch):
    monkeypatch.setenv(lab.BOOK_BUILD_VARIABLE, "1")
    assert lab.skip_solutions() is False
    shell.run_cell(f"{lab.SOLUTION_MARKER}\nlab_t_built = 3\n")
    assert shell.user_ns["lab_t_built"] == 3


def test_numpy_scalars_are_quoted_as_python_numbers(monkeypatch):
    """{glue:text} formats text/plain: "np.float64(0.5)" would fail the build."""
    import myst_nb
    import numpy as np

    from ibp_lab.teaching import lab

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    lab.quote("lab_test_float", np.float64(0.5), display=False)
    lab.quote("lab_test_int", np.int64(3), display=False)
    assert type(seen["lab_test_float"]) is float and seen["lab_test_float"] == 0.5
    assert type(seen["lab_test_int"]) is int and seen["lab_test_int"] == 3
