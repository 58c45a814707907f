"""Running a noisy-OR chain on (``run_noisy_or(..., Z0=Z, W0=A)``): two runs joined are one.

A run that starts from given links draws nothing before its first sweep, so the generator
it is handed continues where the last run left it: ``n`` sweeps, then ``m`` more from the
final ``(Z, W)`` and parameters, must give, value for value, the trace of one run of
``n + m`` sweeps from the same seed. That holds only if nothing is redrawn or reset at the
join, so it checks the whole state passes.
"""

import numpy as np
import pytest

from ibp_lab.inference import noisy_or

X = (np.random.default_rng(3).random((12, 5)) < 0.4).astype(np.int8)
LEARNED = ("strength", "leak", "weight_prob")


def _joined(n_first, n_second, **options):
    rng = np.random.default_rng(11)
    first = noisy_or.run_noisy_or(X, n_first, rng, **options)
    last = {name: float(first.trace[name].values[-1]) for name in options.get("learn", LEARNED)}
    second = noisy_or.run_noisy_or(X, n_second, rng, **dict(options, **last), Z0=first.Z,
                                   W0=first.A)
    return first, second


@pytest.mark.parametrize("options", [
    dict(learn=()),
    dict(learn=(), births="data"),
    dict(),  # the three parameters learned
    dict(learn=["leak"], births="data", priors={"leak": (1.0, 9.0)}),
])
def test_two_runs_joined_are_one_run(options):
    whole = noisy_or.run_noisy_or(X, 30, np.random.default_rng(11), **options)
    first, second = _joined(12, 18, **options)
    for name in whole.trace.data_vars:
        np.testing.assert_array_equal(
            np.concatenate([first.trace[name].values, second.trace[name].values]),
            whole.trace[name].values, err_msg=name)
    np.testing.assert_array_equal(second.Z, whole.Z)
    np.testing.assert_array_equal(second.A, whole.A)


def test_links_of_empty_columns_are_dropped_with_them():
    Z0 = np.array([[1, 0]] * 12, np.int8)
    W0 = np.array([[1, 0, 1, 0, 1], [1, 1, 1, 1, 1]])
    run = noisy_or.run_noisy_or(X, 1, np.random.default_rng(0), learn=(), Z0=Z0, W0=W0)
    same = noisy_or.run_noisy_or(X, 1, np.random.default_rng(0), learn=(), Z0=Z0[:, :1],
                                 W0=W0[:1])
    np.testing.assert_array_equal(run.trace["log_joint"], same.trace["log_joint"])


@pytest.mark.parametrize("Z0, W0, match", [
    (None, [[1, 0, 1, 0, 1]], "W0 needs Z0"),
    (np.ones((12, 1)), [[1, 0, 1, 0]], r"W0 must have shape \(K, D\) = \(1, 5\)"),
    (np.ones((12, 1)), [[1, 0, 2, 0, 1]], "W0"),
    (np.ones((12, 2)), [[1, 0, 1, 0, 1]], r"W0 must have shape \(K, D\) = \(2, 5\)"),
])
def test_bad_links_are_refused_before_any_sweep(Z0, W0, match):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        noisy_or.run_noisy_or(X, 2, rng, Z0=Z0, W0=W0)
    assert rng.bit_generator.state == before
