"""The hostile-input campaign, in the suite: every public function, every case in a forked child.

One test per public function checks all of that function's cases (``tests/robust_inputs.py``),
each run by the harness (``tests/campaign.py``: a forked child with a time limit and an
address-space limit), and fails naming every case whose verdict is a failure. The cases
of a spec group run together in a fresh process (``tools/campaign.py --group``) that
imports only what the group needs: forking the test process itself, which holds the
whole suite, costs about 0.13 s per case. Failures
known to be still present are listed in :data:`KNOWN`; they are left out of the
per-function test and run one by one as ``xfail(strict=True)``, so that a fix turns them
into a failure here and the entry is removed.

Property-based cases (hypothesis) feed random data matrices to the functions that take
data, through the same harness. They are derandomised in ``make test`` (profile "ci");
``HYPOTHESIS_PROFILE=explore`` searches with fresh randomness and more examples.

Outside pytest, ``tools/campaign.py`` prints the counts per function and per verdict.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robust_inputs
from campaign import PASSES, Case, run_case
from layout_graph import full_module

SPECS = robust_inputs.all_specs()
CASES = {spec.function: robust_inputs.spec_cases(spec) for spec in SPECS}
GROUP_OF = {spec.function: spec.group for spec in SPECS}
TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")

#: Failures still present at the last run: case id -> "<failure class>: <short>". Each
#: is an xfail(strict=True) below; remove an entry when its module is fixed.
#: Written by ``tools/campaign.py --write-known``.
KNOWN: dict[str, str] = {

}  # end of KNOWN


#: The functions of each group that this session selected (tests/conftest.py fills it): a
#: group's process runs only their cases, so a sample (make check) costs only the sample.
SELECTED: dict[str, set[str]] = {}

#: make check runs every SAMPLE_EVERY-th function's cases (in name order); make test all.
SAMPLE_EVERY = 8
#: Groups left out of make check's sample: their process alone costs a minute or more
#: (PyMC builds and compiles models; the plotting group draws every figure's junk).
UNSAMPLED_GROUPS = {"pymc", "plotting"}


@functools.cache
def group_verdicts(group: str) -> dict:
    """Verdicts of the selected cases of a group, by case id, from one fresh process.

    Under pytest-xdist a group's tests go to one worker (tests/conftest.py), so each group
    runs once; the two workers run two groups at a time.
    """
    functions = sorted(SELECTED.get(group, ()))
    rows = _tool().run_in_subprocess(group, prefixes=functions)
    return {row["id"]: row for row in rows}


@functools.cache
def _tool():
    """tools/campaign.py, loaded under another name (tests/campaign.py is the harness)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("campaign_tool", os.path.join(TOOLS, "campaign.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _describe(row) -> str:
    return f"{row['kind']}: {row['id']} (expects {row['expect']}): {row['detail']}"


def _sampled(functions):
    """Every function, all but every SAMPLE_EVERY-th marked ``campaign`` (make check skips
    them); the sample leaves out the groups of :data:`UNSAMPLED_GROUPS`."""
    def in_sample(i, f):
        return i % SAMPLE_EVERY == 0 and GROUP_OF[f] not in UNSAMPLED_GROUPS

    return [pytest.param(f, marks=() if in_sample(i, f) else pytest.mark.campaign)
            for i, f in enumerate(sorted(functions))]


@pytest.mark.parametrize("function", _sampled(CASES))
def test_function_survives_hostile_input(function):
    verdicts = group_verdicts(GROUP_OF[function])
    failures = []
    for case in CASES[function]:
        row = verdicts.get(case.id, dict(id=case.id, kind="died", expect=case.expect,
                                         detail="no verdict from the group's process"))
        if case.id not in KNOWN and row["kind"] not in PASSES:
            failures.append(_describe(row))
    assert not failures, f"{len(failures)} of {len(CASES[function])} cases failed:\n" + "\n".join(failures)


def _known_params():
    group = {c.id: GROUP_OF[f] for f, cases in CASES.items() for c in cases}
    params = []
    for case_id, reason in sorted(KNOWN.items()):
        mark = pytest.mark.xfail(strict=True, reason=reason)
        params.append(pytest.param(group.get(case_id), case_id, marks=mark, id=case_id))
    return params


@pytest.mark.parametrize("group, case_id", _known_params())
def test_known_failure_is_still_present(group, case_id):
    assert group is not None, f"{case_id} is no longer a campaign case: remove it from KNOWN"
    row = group_verdicts(group)[case_id]
    assert row["kind"] in PASSES, _describe(row)


# ---------------------------------------------------------------------------------------
# the campaign covers every public function and method
# ---------------------------------------------------------------------------------------

MODULES = ("prior", "finite", "scan_order", "beta_process", "tempering", "variational", "recursive", "datasets", "linear_gaussian", "gibbs", "chains", "exact", "split_merge",
           "reports",
           "summaries", "heldout", "predictive_checks", "pymc_models", "streaming", "plotting",
           "widgets", "explorers", "exercises",
           # figure modules that chapters import directly (not re-exported by ibp_lab.teaching.plotting)
           "plotting.heldout", "plotting.pymc", "plotting.split_merge", "plotting.streaming",
           "plotting.recursive", "plotting.beta_process", "plotting.tempering",
           "plotting.variational",
           # the birth rule and the recovery study of the streaming chapter
           "streaming.births", "streaming.recovery",
           # the samplers that keep the feature images (issue 30)
           "uncollapsed", "slice_sampler", "noisy_or", "hyperposterior", "plotting.nonconjugate",
           # streaming variational inference, the R-IBP paper's baseline (issue 29)
           "streaming_variational", "comparisons", "plotting.paper",
           "class_structure")


def _public_callables():
    package_plots = set(importlib.import_module("ibp_lab.teaching.plotting").__all__)
    for short in MODULES:
        module = importlib.import_module(full_module(short))
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                if short.startswith("plotting.") and name in package_plots:
                    yield f"plotting.{name}"  # its spec is under the package's name
                else:
                    yield f"{short}.{name}"
            elif inspect.isclass(obj):
                methods = [m for m, v in vars(obj).items() if not m.startswith("_")
                           and (callable(v) or isinstance(v, (classmethod, staticmethod)))]
                yield from (f"{short}.{name}.{m}" for m in methods)


# Classes whose methods are covered under the class's name (constructor and methods in one spec)
# or by a spec of the function that returns them.
_COVERED_ELSEWHERE = {
    "heldout.FullGaussian.fit": "heldout.FullGaussian", "heldout.PPCA.fit": "heldout.PPCA",
    "chains.ChainResult.posterior_trace": "summaries.chain_summaries",
}


def test_every_public_function_has_cases():
    names = set(CASES)
    missing = [f for f in _public_callables()
               if f not in names and _COVERED_ELSEWHERE.get(f) not in names
               and not any(n.startswith(f + ".") for n in names)]
    assert not missing, f"public functions without campaign cases: {missing}"


def test_harness_fails_a_function_that_refuses_everything():
    def refuse_all(**kwargs):
        raise ValueError("invalid input")

    spec = robust_inputs.Spec("stub.refuse_all", refuse_all, dict(alpha=1.0), dict(alpha="positive"))
    verdicts = [run_case(c).kind for c in robust_inputs.spec_cases(spec)]
    assert "refused_valid" in verdicts and "unnamed_error" in verdicts and "refused" not in verdicts


def test_harness_classifies_crashes_hangs_and_huge_allocations():
    import time

    cases = {
        "crash": lambda: 1 / 0,
        "timeout": lambda: time.sleep(30),
        "memory": lambda: np.ones(2**40),
        "global_state": lambda: np.random.seed(3),
        "accepted_junk": lambda: 1.0,
    }
    for kind, call in cases.items():
        verdict = run_case(Case("stub", kind, call, ("x",), "refuse"), time_limit=2)
        assert verdict.kind == kind, (kind, verdict)
    nan = run_case(Case("stub", "nan", lambda: np.array([np.nan]), ("x",), "either"))
    assert nan.kind == "bad_result"


# ---------------------------------------------------------------------------------------
# property-based cases: random data matrices through the same harness
# ---------------------------------------------------------------------------------------

# In make test ("ci"): a few derandomised examples per function; "explore" searches longer.
_EXPLORING = os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci"
HYPOTHESIS = settings(
    max_examples=settings.default.max_examples if _EXPLORING else 6,
    deadline=None,  # each example forks a child with its own time limit
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_entries = st.one_of(
    st.floats(-5, 5), st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324, 1e-310, 1e154, np.nan, np.inf]),
)
_dtypes = st.sampled_from(["float64", "float64", "float64", "float32", "int64", "bool", "complex128",
                           "object", "str"])


@st.composite
def data_matrices(draw, max_rows=5, max_cols=4):
    """A data matrix of any small shape and dtype, sometimes with non-finite entries."""
    n, d = draw(st.integers(0, max_rows)), draw(st.integers(0, max_cols))
    values = np.array(draw(st.lists(_entries, min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    dtype = draw(_dtypes)
    with np.errstate(all="ignore"):
        arr = values.astype(dtype) if dtype not in ("int64", "bool") else np.nan_to_num(values).astype(dtype)
    return arr


def expectation(X) -> str:
    """Junk dtypes and non-finite entries must be refused; anything else may be either."""
    if X.dtype.kind not in "biuf":
        return "refuse"
    return "refuse" if X.size and not np.all(np.isfinite(X)) else "either"


def _ones(X):
    return np.ones((X.shape[0], 1), np.int8)


def _data_calls():
    from ibp_lab.inference import exact, gibbs, heldout, split_merge
    from ibp_lab.models import linear_gaussian
    from ibp_lab.evaluation import summaries
    from ibp_lab.inference.streaming import RecursiveIBP, bp_means_one_pass

    rng = robust_inputs.fresh_rng
    return {
        "linear_gaussian.collapsed_loglik": lambda X: linear_gaussian.collapsed_loglik(X, _ones(X), 0.5, 1.0),
        "gibbs.gibbs_sweep": lambda X: gibbs.gibbs_sweep(X, _ones(X), 1.0, 0.5, 1.0, rng()),
        "exact.k_plus_posterior": lambda X: exact.k_plus_posterior(X, 1.0, 0.5, 1.0, k_max=4),
        "split_merge.sequential_split_merge": lambda X: split_merge.sequential_split_merge(
            X, _ones(X), 1.0, 0.5, 1.0, rng(), 3),
        "split_merge.random_split_merge": lambda X: split_merge.random_split_merge(
            X, _ones(X), 1.0, 0.5, 1.0, rng(), 3),
        "streaming.RecursiveIBP.fit": lambda X: robust_inputs._fitted_check(
            RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0,
                         rng=rng()).fit(X)) or "fitted",
        "streaming.bp_means_one_pass": lambda X: bp_means_one_pass(X, 1.0),
        "heldout.FullGaussian": lambda X: heldout.FullGaussian().fit(X).heldout(
            X, [0], [X.shape[1] - 1]).log_density,
        "summaries.feature_correlations": lambda X: summaries.feature_correlations(X, X),
        "summaries.draw_feature_means": lambda X: summaries.draw_feature_means(X, [_ones(X)], sigma_x=0.5, sigma_a=1.0),
    }


DATA_CALLS = _data_calls()


@pytest.mark.parametrize("function", sorted(DATA_CALLS))
@HYPOTHESIS
@given(X=data_matrices())
def test_random_data_is_refused_or_handled(function, X):
    call = DATA_CALLS[function]
    names = ("X", "data", "A", "B")
    case = Case(function, f"X={X.dtype}{X.shape}", lambda: call(X), names, expectation(X))
    verdict = run_case(case)
    assert verdict.passed, f"{verdict.kind}: {function} with X = {X!r}: {verdict.detail}"
