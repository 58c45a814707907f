"""Shared pieces of the robustness tests: junk inputs, the verdict, and the campaign's cases.

A public function of ibp_lab given bad or extreme input must either raise a
ValueError/TypeError whose message names the offending argument, or return something
that passes the caller's check. :func:`clear_error_or` says so for the property tests;
:func:`all_cases` lists the hostile-input campaign (see ``tests/campaign.py`` for the
harness that runs each case in a forked child).
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

#: Values of every kind, including large integers.
anything = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=3),
)
#: Like ``anything`` without large integers: a million rows or sweeps is a legitimate
#: (if slow) request, not bad input.
not_a_count = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=3),
)


def names_one_of(message: str, names) -> bool:
    """True if ``message`` names one of ``names`` as a word (``X`` is not in ``sigma_X``)."""
    return any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9])", message) for name in names
    )


def clear_error_or(result_check, call, names):
    """Run ``call``: a refusal must name one of ``names``; otherwise check the result.

    ``names`` are the arguments that the example varies: a ValueError/TypeError whose
    message names none of them (a function that refuses everything with one message,
    or an error from deep inside NumPy) fails. ``result_check`` may assert, or return
    False (or a message) to fail; returning None or True passes.
    """
    names = (names,) if isinstance(names, str) else tuple(names)
    try:
        result = call()
    except (ValueError, TypeError) as exc:
        assert names_one_of(str(exc), names), (
            f"a refusal that names none of {names}: {type(exc).__name__}: {exc}"
        )
        return
    verdict = result_check(result)
    assert verdict is None or verdict is True, f"result check failed: {verdict!r} for {result!r:.200}"


# =======================================================================================
# The hostile-input campaign: cases for every public function of ibp_lab
# =======================================================================================
#
# Each public function gets a *spec*: a valid base call (arguments by name), the kind of
# each argument, and a result check. Every argument is then replaced, one at a time, by
# the junk and extremes of its kind (:data:`MUTATIONS`); each replacement says whether it
# must be refused (R), must work (A), or may do either (E: a clear refusal or a valid
# result). The base call itself must work.

import dataclasses  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from campaign import Case  # noqa: E402

R, A, E = "refuse", "accept", "either"

# Kept short: every case forks a child, and the whole campaign runs in make test.
_COMMON_JUNK = [("str", "1.0", R), ("complex", 1 + 1j, R), ("array", np.array([1.0, 2.0]), R)]


def _positive(base):
    return [("nan", float("nan"), R), ("inf", float("inf"), R),
            ("negative", -1.0, R), ("zero", 0.0, R), ("huge", 1e308, E), ("subnormal", 5e-324, E),
            ("bool", True, R), ("np.float32", np.float32(1.5 if base is None else base), A)] + _COMMON_JUNK


def _nonneg(base):
    return [("nan", float("nan"), R), ("inf", float("inf"), R), ("negative", -1.0, R),
            ("zero", 0.0, E), ("huge", 1e308, E), ("subnormal", 5e-324, E),
            ("bool", True, R)] + _COMMON_JUNK


def _real(base):
    return [("nan", float("nan"), R), ("inf", float("inf"), R), ("huge", 1e308, E),
            ("bool", True, R)] + _COMMON_JUNK


def _count(base):
    return [("negative", -1, R), ("zero", 0, E), ("float", 2.5, R), ("nan", float("nan"), R),
            ("bool", True, R), ("str", "3", R), ("huge", 10**12, E), ("np.int64", np.int64(base), A)]


def _probability(base):
    return [("negative", -0.1, R), ("above one", 1.5, R), ("nan", float("nan"), R),
            ("zero", 0.0, E), ("one", 1.0, E), ("bool", True, R), ("str", "0.5", R), ("complex", 0.5j, R)]


def _flag(base):
    return [("str no", "no", R), ("int 1", 1, R), ("None", None, R), ("np.bool_", np.bool_(not base), A)]


def _rng(base):
    return [("None", None, R), ("RandomState", np.random.RandomState(0), R), ("int", 0, R),
            ("MT19937", np.random.Generator(np.random.MT19937(0)), A)]


def _optional_rng(base):
    return [m if m[0] != "None" else ("None", None, A) for m in _rng(base)]


def _estimator_rng(base):
    """RecursiveIBP's rng: scikit-learn's random_state rule (None, a seed or a Generator)."""
    return [("None", None, A), ("RandomState", np.random.RandomState(0), R), ("int seed", 0, A),
            ("negative seed", -1, R), ("str", "0", R), ("MT19937", np.random.Generator(np.random.MT19937(0)), A)]


def _matrix(base):
    """Junk for a 2-D real data matrix, derived from a valid one."""
    base = np.asarray(base, dtype=float)
    with_nan, with_inf = base.copy(), base.copy()
    with_nan[0, 0], with_inf[-1, -1] = np.nan, np.inf
    return [
        ("nan entry", with_nan, R), ("inf entry", with_inf, R), ("complex", base + 0j, R),
        ("object", base.astype(object), R), ("numeric strings", base.astype(str), R),
        ("str", "abc", R), ("None", None, R), ("ragged", [[1.0, 2.0], [3.0]], R), ("3-D", base[None], R),
        ("no rows", base[:0], E), ("no columns", base[:, :0], E), ("1-D row", base[0], E),
        ("huge", base * 1e200 + 1e200, E), ("subnormal", base * 1e-320, E), ("bool", base > 0, E),
        ("list", base.tolist(), A), ("one row", base[:1], E),
    ]


def _estimator_matrix(base):
    """Junk for the data of a scikit-learn estimator (ibp_lab._estimator.estimator_rows):
    as _matrix, except that an object array of numbers is read, as scikit-learn's
    check_dtype_object requires (one holding None is still refused), and a sparse matrix is
    refused."""
    from scipy import sparse

    base = np.asarray(base, dtype=float)
    holes = base.astype(object)
    holes[0, 0] = None
    return [(name, value, A if name == "object" else expect) for name, value, expect in _matrix(base)] + [
        ("object with None", holes, R), ("sparse", sparse.csr_array(base), R)]


def _stack(base):
    """Junk for data of shape (..., N, D): a matrix, or a stack of them (a 3-D array is valid)."""
    return [(name, value, A if name == "3-D" else expect) for name, value, expect in _matrix(base)]


def _vector(base):
    """Junk for a 1-D real array (the "list" case keeps the valid dtype: [1, 2] stays ints)."""
    as_list = np.asarray(base).tolist()
    base = np.asarray(base, dtype=float)
    with_nan = base.copy()
    with_nan[0] = np.nan
    return [
        ("nan entry", with_nan, R), ("complex", base + 1j, R), ("object", base.astype(object), R),
        ("numeric strings", base.astype(str), R), ("str", "abc", R),
        ("2-D", base[None, :][[0, 0]], E), ("empty", base[:0], E), ("huge", base * 0 + 1e300, E),
        ("list", as_list, A),
    ]


def _binary(base):
    """Junk for a binary feature matrix Z (or an optional one: then from the fixture)."""
    base = np.asarray(z_matrix() if base is None else base)
    two, half, nan, neg = (base.astype(float) for _ in range(4))
    two[0, 0], half[0, 0], nan[0, 0], neg[0, 0] = 2, 0.5, np.nan, -1
    return [
        ("entry 2", two, R), ("entry 0.5", half, R), ("entry nan", nan, R), ("entry -1", neg, R),
        ("complex", base + 0j, R), ("numeric strings", base.astype(str), R),
        ("object", base.astype(object), R), ("str", "Z", R),
        ("one row short", base[:-1], E), ("1-D", base[:, 0], R),
        ("bool", base.astype(bool), A), ("no columns", base[:, :0], E), ("list", base.tolist(), A),
    ]


def _choice(options):
    """Junk for a string option; every valid option must work."""
    def mutations(base):
        out = [("nonsense", "nonsense", R), ("int", 3, R), ("bytes", b"x", R),
               ("upper", str(base).upper() + "_", R)] + ([] if None in options else [("None", None, R)])
        return out + [(f"option {o}", o, A) for o in options if o != base]
    return mutations


def _shape(base):
    return [("negative", (-1, 6), R), ("float", (8.5, 6), R), ("str", "86", R), ("None", None, R),
            ("one number", (8,), R), ("bool", (True, 6), R), ("zero", (0, 6), E),
            ("three numbers", (8, 6, 1), R)]


def _text(base):
    return [("markup", "</script><script>alert(1)</script>", E), ("None", None, E),
            ("int", 3, E), ("long", "x" * 10_000, E)]


MUTATIONS = {
    "positive": _positive, "nonneg": _nonneg, "real": _real, "count": _count,
    "probability": _probability, "flag": _flag, "rng": _rng, "optional_rng": _optional_rng,
    "matrix": _matrix, "stack": _stack, "vector": _vector, "binary": _binary, "shape": _shape, "text": _text,
}


@dataclasses.dataclass
class Spec:
    """A public function, a valid call, the kinds of its arguments and its result check."""

    function: str
    call: callable
    base: dict
    kinds: dict
    check: callable = None
    extremes: list = dataclasses.field(default_factory=list)
    names: dict = dataclasses.field(default_factory=dict)
    allow_inf: bool = False
    time_limit: float = 10.0
    junk: list = dataclasses.field(default_factory=list)
    group: str = ""


def _invoke(call, kwargs):
    return call(**kwargs)


#: Arguments whose mismatch with X may be reported under their own name (Z has 6 rows, X 1).
_PARTNERS = {"X": ("Z", "Z0", "samples", "checkpoints"), "X_train": ("samples", "Z")}
#: Containers whose entries a message may name instead (samples[0] holds Z and sigma_x).
_ENTRIES = {"samples": ("Z", "sigma_x", "sigma_a", "alpha"), "values": ("alpha", "v", "sigma_A", "A")}


def _default_names(arg, base) -> tuple:
    partners = tuple(p for p in _PARTNERS.get(arg, ()) if p in base)
    entries = tuple(e for name in (arg,) + partners for e in _ENTRIES.get(name, ()))
    return (arg,) + partners + entries


def spec_cases(spec: Spec) -> list[Case]:
    """The base case, one case per mutation of each argument, the extremes and extra junk."""
    def case(label, overrides, expect, names):
        kwargs = {**spec.base, **overrides}
        return Case(spec.function, label, functools.partial(_invoke, spec.call, kwargs),
                    tuple(names), expect, spec.check, spec.allow_inf, spec.time_limit)

    cases = [case("valid", {}, A, ())]
    for arg, kind in spec.kinds.items():
        mutate = MUTATIONS[kind] if isinstance(kind, str) else kind
        names = spec.names.get(arg, _default_names(arg, spec.base))
        for label, value, expect in mutate(spec.base.get(arg)):
            cases.append(case(f"{arg}={label}", {arg: value}, expect, names))
    for label, overrides, expect in spec.extremes:
        cases.append(case(label, overrides, expect, tuple(overrides)))
    for label, call, names, expect in spec.junk:
        cases.append(Case(spec.function, label, call, tuple(names), expect, spec.check,
                          spec.allow_inf, spec.time_limit))
    if spec.function == "streaming.RecursiveIBP.save":
        cases += [c for c in _path_cases() if c.function == spec.function]
    if spec.function == "streaming.RecursiveIBP.load":
        cases += [c for c in _path_cases() if c.function == spec.function]
    return cases


# ---------------------------------------------------------------------------------------
# result checks: each returns a description of what is wrong, or None
# ---------------------------------------------------------------------------------------


def _arr(value):
    return np.asarray(value, dtype=float)


def is_binary(Z, rows=None):
    Z = np.asarray(Z)
    if Z.ndim != 2 or not np.isin(Z, (0, 1)).all():
        return f"not a binary matrix: shape {Z.shape}, values {np.unique(Z)[:5]}"
    if rows is not None and Z.shape[0] != rows:
        return f"{Z.shape[0]} rows, expected {rows}"
    return None


def in_unit_interval(p, what="probabilities"):
    p = _arr(p)
    if not np.all(np.isfinite(p)):  # a NaN passes both comparisons below
        return f"{what} not finite: {p[~np.isfinite(p)][:3]}"
    if p.size and (p.min() < 0 or p.max() > 1):
        return f"{what} outside [0, 1]: min {p.min():g}, max {p.max():g}"
    return None


def is_distribution(p, axis=None):
    p = _arr(p)
    bad = in_unit_interval(p)
    if bad:
        return bad
    total = p.sum(axis=axis)
    if p.size and not np.allclose(total, 1.0, atol=1e-8):
        return f"does not sum to 1: {np.ravel(total)[:3]}"
    return None


def is_nonnegative(value, what="value"):
    if isinstance(value, (tuple, list)) and value and all(np.ndim(v) > 0 for v in value):
        return first_problem(*(is_nonnegative(v, what) for v in value))
    v = _arr(value)
    if v.size and v.min() < 0:
        return f"{what} negative: {v.min():g}"
    return None


def first_problem(*problems):
    return next((p for p in problems if p), None)


def _no_check(result):
    return None


# ---------------------------------------------------------------------------------------
# fixtures: small valid inputs, built once in the parent and inherited by every child
# ---------------------------------------------------------------------------------------


@functools.cache
def data():
    return np.random.default_rng(0).normal(size=(6, 3))


@functools.cache
def z_matrix():
    return np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 1], [1, 1]], dtype=np.int8)


def fresh_rng():
    return np.random.default_rng(0)


@functools.cache
def chain():
    from ibp_lab.inference.chains import run_chain
    return run_chain(data(), 12, fresh_rng(), sigma_x=1.0, sigma_a=1.0, burn=3)


@functools.cache
def chains():
    from ibp_lab.inference.chains import run_chain
    return [chain(), run_chain(data(), 12, np.random.default_rng(5), sigma_x=1.0, sigma_a=1.0, burn=3)]


@functools.cache
def fake_idata():
    import arviz as az
    return az.from_dict(posterior={"log_pi": np.log([[[0.5, 0.3]]]), "A": np.ones((1, 1, 2, 3)),
                                   "sigma_X": [[0.3]]},
                        dims={"log_pi": ["feature"], "A": ["feature", "pixel"]})


# ---------------------------------------------------------------------------------------
# extra kinds for structured arguments
# ---------------------------------------------------------------------------------------


def _draws(base):
    """Junk for a list of binary matrices (posterior draws of Z)."""
    Z = np.asarray(base[0])
    bad = Z.astype(float)
    bad[0, 0] = 2
    return [("empty list", [], R), ("str", "Z", R), ("None", None, R), ("entry 2", [bad], R),
            ("rows differ", [Z, Z[:-1]], R), ("complex", [Z + 0j], R), ("strings", [Z.astype(str)], R),
            ("one matrix", Z, E), ("1-D draw", [Z[:, 0]], R), ("int", 3, R)]


def _indices(size):
    """Junk for an index array into ``size`` pixels."""
    def mutations(base):
        base = np.asarray(base)
        return [("out of range", np.array([size]), R), ("negative", np.array([-1]), R),
                ("float", base.astype(float) + 0.5, R), ("str", "0", R), ("None", None, R),
                ("2-D", base[None], R), ("empty", base[:0], R), ("complex", base + 0j, R),
                ("bool mask", np.ones(size, bool), R), ("huge", np.array([2**62]), R),
                ("duplicates", np.repeat(base[:1], 2), E), ("list", base.tolist(), A)]
    return mutations


def _chain_junk(base):
    return [("None", None, R), ("str", "chain", R), ("dict", {}, R), ("int", 3, R)]


def _chains_junk(base):
    return [("empty", [], R), ("None", None, R), ("str", "chains", R), ("list of None", [None], R),
            ("one chain", base[0], E), ("int", 3, R)]


def _dict_junk(base):
    return [("empty dict", {}, R), ("None", None, R), ("str", "x", R), ("list", [1], R)]


# ---------------------------------------------------------------------------------------
# specs: prior, recursive, datasets
# ---------------------------------------------------------------------------------------

P, C, G = "positive", "count", "rng"


def specs_prior():
    from ibp_lab.models import prior as m

    def sticks(out):
        Z, pi = out
        return first_problem(is_binary(Z), in_unit_interval(pi, "stick weights"))

    return [
        Spec("prior.sample_ibp", m.sample_ibp, dict(alpha=2.0, n=5, rng=fresh_rng(), beta=1.0),
             dict(alpha=P, n=C, rng=G, beta=P), is_binary,
             extremes=[("alpha 1e-100", dict(alpha=1e-100), A), ("alpha 1e3 n 3", dict(alpha=1e3, n=3), E),
                       ("beta 1e-100", dict(beta=1e-100), E), ("beta 1e6", dict(beta=1e6, n=3), E)]),
        Spec("prior.left_ordered", m.left_ordered, dict(Z=z_matrix()), dict(Z="binary"), is_binary),
        Spec("prior.log_prior", m.log_prior, dict(Z=z_matrix(), alpha=2.0, beta=1.0),
             dict(Z="binary", alpha=P, beta=P),
             extremes=[("alpha 1e-100", dict(alpha=1e-100), E), ("alpha 1e6", dict(alpha=1e6), E),
                       ("empty Z", dict(Z=np.zeros((0, 0), np.int8)), E)]
             + [(f"{label} with beta {b:g}", dict(d, beta=b), E) for label, d, _ in discount_edges()
                for b in (1e-100, 1e100)] + discount_edges()),
        Spec("prior.expected_num_features", m.expected_num_features, dict(alpha=2.0, n=5, beta=1.0),
             dict(alpha=P, n=C, beta=P), is_nonnegative,
             extremes=[("n 1e15", dict(n=10**15), E)] + discount_edges()
             + [("beta 1e-100 discount 1 - 1e-9", dict(beta=1e-100, discount=1 - 1e-9), E),
                ("alpha 1e-8 beta 1e100", dict(alpha=1e-8, beta=1e100), E)]),
        Spec("prior.new_dish_rate", m.new_dish_rate, dict(alpha=2.0, n=4, beta=1.0),
             dict(alpha=P, n=C, beta=P), is_nonnegative,
             extremes=[("n 1e15", dict(n=10**15), E), ("n 1e12 beta 1e6", dict(n=10**12, beta=1e6), E),
                       ("beta 1e-100 n 0", dict(beta=1e-100, n=0), A)] + discount_edges()
             + [("beta 1e-100 discount 1 - 1e-9", dict(beta=1e-100, discount=1 - 1e-9), E)]),
        Spec("prior.sample_stick_breaking", m.sample_stick_breaking,
             dict(alpha=2.0, n=5, rng=fresh_rng(), truncation=20),
             dict(alpha=P, n=C, rng=G, truncation=C), sticks,
             extremes=[("alpha 1e-100", dict(alpha=1e-100), E), ("alpha 1e6", dict(alpha=1e6), E)]),
        Spec("prior.expected_stick", m.expected_stick, dict(alpha=2.0, k=3), dict(alpha=P, k=C),
             in_unit_interval, extremes=[("k array", dict(k=np.arange(1, 5)), A),
                                         ("k 0", dict(k=0), E), ("k huge", dict(k=10**9), E)]),
        Spec("prior.sample_finite_beta_bernoulli", m.sample_finite_beta_bernoulli,
             dict(alpha=2.0, n=5, n_features=4, rng=fresh_rng(), beta=1.0),
             dict(alpha=P, n=C, n_features=C, rng=G, beta=P), is_binary),
        Spec("prior.simulate_feature_counts", m.simulate_feature_counts,
             dict(alpha=2.0, n=5, n_draws=10, rng=fresh_rng(), beta=1.0),
             dict(alpha=P, n=C, n_draws=C, rng=G, beta=P), is_nonnegative),
        Spec("prior.finite_k_plus_pmf", m.finite_k_plus_pmf,
             dict(alpha=2.0, n=5, n_features=6, beta=1.0),
             dict(alpha=P, n=C, n_features=C, beta=P), is_distribution,
             extremes=[("alpha 1e6", dict(alpha=1e6), E), ("alpha 1e-100", dict(alpha=1e-100), E)]),
        Spec("prior.stick_truncation_level", m.stick_truncation_level, dict(alpha=2.0, n=5, tol=0.01),
             # tol bounds an expected number of lost ownerships over all rows, not a probability
             dict(alpha=P, n=C, tol=P),
             lambda k: None if isinstance(k, int) and k >= 0 else f"not a count: {k!r}",
             extremes=[("alpha 1e6", dict(alpha=1e6), E), ("tol 1e-300", dict(tol=1e-300), E)]),
    ]


def _rm_steps(alpha, beta, k_max, tail):
    from ibp_lab.models.recursive import RecursiveMarginals
    model = RecursiveMarginals(alpha, beta, k_max, tail=tail)
    return [model.step() for _ in range(5)]  # rows grow when k_max is None


def _rows_in_unit_interval(rows):
    return first_problem(*(in_unit_interval(r) for r in rows))


def _rm_update(probabilities, rate):
    from ibp_lab.models.recursive import RecursiveMarginals
    model = RecursiveMarginals(2.0, 1.0, 6)
    model.update(probabilities, rate=rate)
    return model.prior_next()


def _rm_prior_next():
    from ibp_lab.models.recursive import RecursiveMarginals
    model = RecursiveMarginals(2.0, 1.0, 6)
    model.step()
    return model.prior_next(), model.state_nbytes


def _iter_rows(alpha, beta, k_max, tail):
    from itertools import islice

    from ibp_lab.models.recursive import iter_marginals
    return list(islice(iter_marginals(alpha, beta, k_max, tail=tail), 5))


def specs_recursive():
    from ibp_lab.models import recursive as m

    exact = m.marginals(2.0, 1.0, 4, 6)
    unit = in_unit_interval
    rate_opt = dict(rate="positive")
    return [
        Spec("recursive.marginals", m.marginals, dict(alpha=2.0, beta=1.0, n=4, k_max=6),
             dict(alpha=P, beta=P, n=C, k_max=C), unit,
             extremes=[("issue: 1e4, 1, 4, 21857", dict(alpha=1e4, n=4, k_max=21857), E),
                       ("alpha 1e-100", dict(alpha=1e-100), E), ("beta 1e6", dict(beta=1e6), E),
                       ("k_max 1e9", dict(k_max=10**9), E)]),
        Spec("recursive.monte_carlo_marginals", m.monte_carlo_marginals,
             dict(alpha=2.0, beta=1.0, n=4, k_max=6, n_samples=50, rng=fresh_rng()),
             dict(alpha=P, beta=P, n=C, k_max=C, n_samples=C, rng=G), unit,
             extremes=[("alpha 1e6", dict(alpha=1e6, n_samples=2), E)]),
        Spec("recursive.monte_carlo_mse", m.monte_carlo_mse,
             dict(alpha=2.0, beta=1.0, n=4, k_max=6, sample_sizes=[20, 40], rng=fresh_rng()),
             dict(alpha=P, beta=P, n=C, k_max=C, sample_sizes="vector", rng=G),
             lambda out: is_nonnegative(out[0], "mse"),
             extremes=[("sample size 0", dict(sample_sizes=[0]), R), ("sample size -5", dict(sample_sizes=[-5]), R),
                       ("sample size 2.5", dict(sample_sizes=[2.5]), R)]),
        Spec("recursive.monte_carlo_agreement", m.monte_carlo_agreement,
             dict(exact=exact, estimate=exact, n_samples=100, family_level=1e-3, min_variance=50.0),
             dict(exact="matrix", estimate="matrix", n_samples=C, family_level="probability",
                  min_variance="nonneg"),
             lambda rep: None if isinstance(rep.ok, (bool, np.bool_)) else "ok is not a bool",
             extremes=[("estimate above 1", dict(estimate=exact + 2), R),
                       ("exact above 1", dict(exact=exact + 2), R),
                       ("shapes differ", dict(estimate=exact[:, :-1]), R)]),
        Spec("recursive.new_dish_probabilities", m.new_dish_probabilities,
             dict(rate_before=1.0, rate_new=2.0, k_max=6),
             dict(rate_before="nonneg", rate_new="nonneg", k_max=C), unit,
             extremes=[("rates 1e6", dict(rate_before=1e6, rate_new=1e6), E)]),
        Spec("recursive.next_row_prior", m.next_row_prior,
             dict(running_sum=np.zeros(5), n=1, rate_before=0.0, alpha=2.0, beta=1.5, k_max=None),
             dict(running_sum="vector", n=C, rate_before="nonneg", alpha=P, beta=P),
             lambda out: unit(out[0]),
             extremes=[("running_sum above n", dict(running_sum=np.full(5, 7.0), n=2), R),
                       ("running_sum negative", dict(running_sum=np.full(5, -1.0), n=2), R),
                       ("k_max 3", dict(k_max=3), E), ("k_max -1", dict(k_max=-1), R)]),
        Spec("recursive.RecursiveMarginals.step", _rm_steps, dict(alpha=2.0, beta=1.0, k_max=6, tail=1e-12),
             dict(alpha=P, beta=P, tail="probability"), _rows_in_unit_interval,
             extremes=[("k_max None", dict(k_max=None), A), ("k_max 0", dict(k_max=0), E),
                       ("k_max -1", dict(k_max=-1), R), ("k_max str", dict(k_max="6"), R),
                       ("alpha 1e4 k_max None", dict(alpha=1e4, k_max=None), E),
                       ("alpha 1e4 beta 1e-3", dict(alpha=1e4, beta=1e-3, k_max=None), E)]),
        Spec("recursive.RecursiveMarginals.update", _rm_update,
             dict(probabilities=m.marginals(2.0, 1.0, 1, 6)[0], rate=None),
             dict(probabilities="vector", rate="nonneg"), unit,
             extremes=[("probabilities above 1", dict(probabilities=np.full(6, 1.5)), R),
                       ("probabilities negative", dict(probabilities=np.full(6, -0.5)), R),
                       ("too long", dict(probabilities=np.full(9, 0.5)), E)]),
        Spec("recursive.RecursiveMarginals.prior_next", _rm_prior_next, {}, {},
             lambda out: unit(out[0])),
        Spec("recursive.iter_marginals", _iter_rows, dict(alpha=2.0, beta=1.0, k_max=6, tail=1e-12),
             dict(alpha=P, beta=P, tail="probability"), _rows_in_unit_interval,
             extremes=[("k_max None", dict(k_max=None), A), ("k_max -2", dict(k_max=-2), R)]),
        Spec("recursive.columns_needed", m.columns_needed, dict(alpha=2.0, beta=1.0, n=4, tail=1e-12),
             dict(alpha=P, beta=P, n=C, tail="probability"),
             lambda k: None if isinstance(k, int) and k >= 0 else f"not a count: {k!r}",
             extremes=[("alpha 1e6", dict(alpha=1e6), E)]),
    ]


def specs_datasets():
    from ibp_lab import datasets as m

    def sim(out):
        X, Z, A_ = out
        return is_binary(Z)

    return [
        Spec("datasets.load_optdigits", m.load_optdigits, dict(split="test"),
             dict(split=_choice(["train", "test"]))),
        Spec("datasets.load_experiment", m.load_experiment, dict(name="tempering_digits"),
             dict(name=_choice(list(m.EXPERIMENTS))),
             lambda r: None if r["runs"] and r["quick"] else "an empty record"),
        Spec("datasets.load_digit_sets", m.load_digit_sets,
             dict(n_train_per_class=3, n_test_per_class=2, seed=1),
             dict(n_train_per_class=C, n_test_per_class=C, seed=C),
             extremes=[("more than the file holds", dict(n_train_per_class=10**6), R)]),
        Spec("datasets.four_feature_images", m.four_feature_images, {}, {}),
        Spec("datasets.load_docstring_words", m.load_docstring_words, {}, {},
             lambda w: is_binary(w.Z)),
        Spec("datasets.simulate_four_feature_data", m.simulate_four_feature_data,
             dict(rng=fresh_rng(), n=5, sigma_x=0.5, p_on=0.5),
             dict(rng=G, n=C, sigma_x=P, p_on="probability"), sim),
        Spec("datasets.DigitSets.train", lambda: (m.load_digit_sets(n_train_per_class=2, n_test_per_class=1).train,
                                                   m.load_digit_sets(n_train_per_class=2, n_test_per_class=1).test),
             {}, {}),
    ]


# ---------------------------------------------------------------------------------------
# specs: linear_gaussian, gibbs, exact, split_merge
# ---------------------------------------------------------------------------------------

MODEL_KINDS = dict(X="matrix", Z="binary", sigma_x=P, sigma_a=P)
# The three-parameter IBP's discount (issue 31): inside [0, 1) accepted, 1 and beyond refused.
DISCOUNT_EXTREMES = [("discount 0.5", dict(discount=0.5), A), ("discount 1", dict(discount=1.0), R),
                     ("discount 1e-12", dict(discount=1e-12), R)]
MODEL_EXTREMES = [
    ("sigma_x 1e-100", dict(sigma_x=1e-100), E), ("sigma_a 1e-100", dict(sigma_a=1e-100), E),
    ("sigma_x 1e6", dict(sigma_x=1e6), E), ("sigma_a 1e6", dict(sigma_a=1e6), E),
    ("sigma_x 1e-9", dict(sigma_x=1e-9), E), ("Z rows differ from X", dict(Z=z_matrix()[:-1]), R),
]


def _posterior_check(out):
    mean, cov = out
    cov = np.asarray(cov)
    return first_problem(is_nonnegative(np.diagonal(cov, axis1=-2, axis2=-1), "posterior variances"))


def _sweep_check(Z):
    bad = is_binary(Z, rows=6)
    if bad:
        return bad
    return "an empty column" if Z.shape[1] and (np.asarray(Z).sum(axis=0) == 0).any() else None


def _chain_check(result):
    return first_problem(is_binary(result.Z), scan_result_of(result.trace))


def scan_result_of(value):
    from campaign import scan_result
    return scan_result(value)


def _stats_check(out):
    Z, stats = out
    return first_problem(is_binary(Z, rows=6), scan_result_of(
        {k: v for k, v in stats.items() if not k.startswith("log_")}))


def specs_models():
    from ibp_lab.inference import chains, exact, gibbs, split_merge as sm
    from ibp_lab.models import linear_gaussian as lg
    from ibp_lab.teaching import reports

    X, Z = data(), z_matrix()
    Xs = X[:3, :2]
    hyper = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0)
    mc_kinds = dict(MODEL_KINDS, alpha=P, rng=G, beta=P)
    alpha_prior = lambda base: [("nan", (float("nan"), 1.0), R), ("negative", (-1.0, 1.0), R),
                                ("one number", (1.0,), R), ("str", "ab", R), ("None", None, R),
                                ("tiny shape", (1e-300, 1.0), E), ("huge rate", (1.0, 1e300), E),
                                ("subnormal", (5e-324, 5e-324), E), ("complex", (1j, 1.0), R)]
    posterior = exact.class_posterior(Xs, 1.0, 0.5, 1.0, k_max=4)
    _, run = chains.run_chains(X, 2, 10, fresh_rng(), Z0=np.ones((6, 1)), alpha=1.0, sigma_x=0.5,
                               sigma_a=1.0,
                               moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=2)])
    gibbs_sweep = chains.GibbsSweep()
    moves_junk = lambda base: [
        ("None (the default moves)", None, A), ("empty", [], R), ("unknown name", ["sideways"], R),
        ("int", 3, R), ("one name", "sequential_split_merge", A), ("list of None", [None], R),
        ("objects", [chains.GibbsSweep(), chains.RandomSplitMerge(n_proposals=2)], A),
        ("too many proposals", [chains.RandomSplitMerge(n_proposals=10**7)], R),
        # issue 49: the hyperparameter moves in the list
        ("every move", [gibbs_sweep, chains.SequentialSplitMerge(n_proposals=2), chains.AlphaUpdate(),
                        chains.DiscountUpdate(), chains.ScaleUpdate("sigma_x"),
                        chains.ScaleUpdate("sigma_a", n_steps=1)], A),
        ("a hyperparameter move first", [chains.AlphaUpdate(), gibbs_sweep], A),
        ("hyperparameter moves only", [chains.AlphaUpdate(), chains.ScaleUpdate("sigma_a")], R),
        ("one hyperparameter move", chains.AlphaUpdate(), R),
        ("alpha moved twice", [gibbs_sweep, chains.AlphaUpdate(), chains.AlphaUpdate()], R),
        ("sigma_a moved twice", [gibbs_sweep, chains.ScaleUpdate("sigma_a"),
                                 chains.ScaleUpdate("sigma_x", "sigma_a")], R),
        ("discount moved twice", [gibbs_sweep, chains.DiscountUpdate(), chains.DiscountUpdate()], R),
        ("classes, not objects", [chains.GibbsSweep, chains.AlphaUpdate], R)]
    learn_discount = [gibbs_sweep, chains.AlphaUpdate(), chains.DiscountUpdate()]
    in_a_chain = lambda move: chains.run_chain(X, 3, fresh_rng(), sigma_x=0.5,  # noqa: E731
                                               burn=1, moves=[gibbs_sweep, move])
    _, move_stats = sm.random_split_merge(X, Z, 1.0, 0.5, 1.0, fresh_rng(), 5)
    move_base = dict(X=X, Z=Z, **hyper, rng=fresh_rng(), n_proposals=5, beta=1.0, discount=0.0)
    move_kinds = dict(mc_kinds, n_proposals=C, discount="nonneg")
    specs = [
        Spec("linear_gaussian.collapsed_loglik", lg.collapsed_loglik,
             dict(X=X, Z=Z, sigma_x=0.5, sigma_a=1.0), MODEL_KINDS, extremes=MODEL_EXTREMES),
        Spec("linear_gaussian.feature_posterior", lg.feature_posterior,
             dict(X=X, Z=Z, sigma_x=0.5, sigma_a=1.0), MODEL_KINDS, _posterior_check,
             extremes=MODEL_EXTREMES),
        Spec("linear_gaussian.simulate", lg.simulate,
             dict(n=5, rng=fresh_rng(), alpha=2.0, sigma_x=0.5, sigma_a=1.0, d=3, beta=1.0),
             dict(n=C, rng=G, alpha=P, sigma_x=P, sigma_a=P, d=C, beta=P), lambda out: is_binary(out[1])),
        Spec("linear_gaussian.simulate_factor_analysis", lg.simulate_factor_analysis,
             dict(n=5, rng=fresh_rng(), alpha=2.0, sigma_x=0.1, sigma_a=1.0, sigma_w=1.0, d=3, beta=1.0),
             dict(n=C, rng=G, alpha=P, sigma_x=P, sigma_a=P, sigma_w=P, d=C, beta=P), lambda out: is_binary(out[1]),
             extremes=[("alpha 1e6", dict(alpha=1e6, n=2), E)]),
        Spec("gibbs.gibbs_sweep", gibbs.gibbs_sweep,
             dict(X=X, Z=Z, **hyper, rng=fresh_rng(), beta=1.0, discount=0.0),
             dict(mc_kinds, discount="nonneg"), _sweep_check,
             extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E)] + DISCOUNT_EXTREMES),
        Spec("gibbs.gibbs_sweep_numpy", gibbs.gibbs_sweep_numpy,
             dict(X=X, Z=Z, **hyper, rng=fresh_rng(), beta=1.0),
             mc_kinds, _sweep_check, extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E)]),
        Spec("chains.run_chain", chains.run_chain,
             dict(X=X, n_sweeps=4, rng=fresh_rng(), Z0=None, alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                  beta=1.0, thin=1, burn=0, progress=False, pointwise=False,
                  moves=[gibbs_sweep, chains.AlphaUpdate(),
                         chains.ScaleUpdate("sigma_a", "sigma_x", n_steps=2)], discount=0.0),
             dict(X="matrix", n_sweeps=C, rng=G, Z0="binary", alpha=P, sigma_x=P, sigma_a=P, beta=P,
                  thin=C, burn=C, progress="flag", pointwise="flag", moves=moves_junk,
                  discount="nonneg"),
             _chain_check, time_limit=20,
             extremes=[("Z0 given", dict(Z0=Z), A), ("burn beyond n_sweeps", dict(burn=10), E),
                       ("thin 0", dict(thin=0), R)] + DISCOUNT_EXTREMES
             + [("discount learned from 0.3", dict(discount=0.3, moves=learn_discount), A),
                ("discount learned, default start", dict(moves=learn_discount), A),
                ("discount learned from 1e-12", dict(discount=1e-12, moves=learn_discount), R),
                ("discount learned from 1", dict(discount=1.0, moves=learn_discount), R)]),
        # issue 49: each hyperparameter move made and run in a chain (the door at construction)
        Spec("chains.AlphaUpdate", lambda prior: in_a_chain(chains.AlphaUpdate(prior=prior)),
             dict(prior=(1.0, 1.0)), dict(prior=alpha_prior), _chain_check, time_limit=20,
             extremes=[("tiny shape, tiny rate", dict(prior=(1e-100, 1e-100)), A),
                       ("huge shape", dict(prior=(1e6, 1.0)), A)]),
        Spec("chains.DiscountUpdate", lambda prior: in_a_chain(chains.DiscountUpdate(prior=prior)),
             dict(prior=(1.0, 1.0)), dict(prior=alpha_prior), _chain_check, time_limit=20,
             extremes=[("np.array", dict(prior=np.array([2.0, 5.0])), A),
                       ("three numbers", dict(prior=(1.0, 1.0, 1.0)), R)]),
        Spec("chains.ScaleUpdate",
             lambda name, n_steps: in_a_chain(chains.ScaleUpdate(name, n_steps=n_steps)),
             dict(name="sigma_a", n_steps=3),
             dict(name=_choice(["sigma_a", "sigma_x"]), n_steps=C), _chain_check, time_limit=20,
             names={"name": ("names",)},
             extremes=[("most steps", dict(n_steps=10_000), E), ("one step too many",
                                                                   dict(n_steps=10_001), R)],
             junk=[("no names", lambda: chains.ScaleUpdate(), ("names",), R),
                   ("both scales", lambda: in_a_chain(chains.ScaleUpdate("sigma_x", "sigma_a")),
                    (), A),
                   ("a scale twice", lambda: chains.ScaleUpdate("sigma_a", "sigma_a"), ("names",), R),
                   ("a list of names", lambda: chains.ScaleUpdate(["sigma_a"]), ("names",), R)]),
        Spec("chains.run_chains", chains.run_chains,
             dict(X=X, n_chains=2, n_sweeps=3, rng=fresh_rng(), Z0=None, sigma_x=0.5, sigma_a=1.0),
             dict(X="matrix", n_chains=C, n_sweeps=C, rng=G), lambda out: _chain_check(out[1][0]),
             time_limit=20,
             extremes=[("Z0 list", dict(Z0=[Z, Z]), A), ("Z0 list too short", dict(Z0=[Z]), R),
                       ("unknown option", dict(colour="red"), R)]),
        Spec("gibbs.k_plus_trace", gibbs.k_plus_trace,
             dict(X=Xs, n_sweeps=5, rng=fresh_rng(), **hyper, beta=1.0, Z0=None, scan_order="random",
                  return_types=False, discount=0.0),
             dict(X="matrix", n_sweeps=C, rng=G, alpha=P, sigma_x=P, sigma_a=P, beta=P,
                  scan_order=_choice(["random", "fixed"]), return_types="flag", discount="nonneg"),
             lambda k: is_nonnegative(k if not isinstance(k, tuple) else k[0], "K+"),
             extremes=DISCOUNT_EXTREMES),
        Spec("exact.column_types", exact.column_types, dict(n_rows=3), dict(n_rows=C), is_binary),
        Spec("exact.count_classes", exact.count_classes, dict(n_rows=3, k_max=4), dict(n_rows=C, k_max=C),
             lambda n: None if isinstance(n, int) and n >= 1 else f"not a count: {n!r}"),
        Spec("exact.enumerate_classes", lambda n_rows, k_max: list(
            __import__("itertools").islice(exact.enumerate_classes(n_rows, k_max), 50)),
             dict(n_rows=3, k_max=3), dict(n_rows=C, k_max=C),
             lambda zs: next((is_binary(z) for z in zs if is_binary(z)), None)),
        Spec("exact.class_counts", exact.class_counts, dict(Z=Z[:3]), dict(Z="binary"), is_nonnegative,
             extremes=[("7 rows", dict(Z=np.ones((7, 2), np.int8)), E)]),
        Spec("exact.class_posterior", exact.class_posterior,
             dict(X=Xs, **hyper, beta=1.0, k_max=4, discount=0.0),
             dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P, beta=P, k_max=C, discount="nonneg"),
             lambda post: is_distribution(post.probabilities), time_limit=20,
             extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E), ("7 rows", dict(X=X[:1].repeat(7, 0)), E)]
             + DISCOUNT_EXTREMES),
        Spec("exact.k_plus_posterior", exact.k_plus_posterior,
             dict(X=Xs, **hyper, beta=1.0, k_max=4, return_tail=False, discount=0.0),
             dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P, beta=P, k_max=C, return_tail="flag",
                  discount="nonneg"),
             lambda p: is_distribution(p if not isinstance(p, tuple) else p[0]), time_limit=20,
             extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E), ("beta 1e-100", dict(beta=1e-100), E)]
             + DISCOUNT_EXTREMES),
        Spec("exact.log_evidence", exact.log_evidence,
             dict(X=Xs, **hyper, beta=1.0, k_max=4, discount=0.0),
             dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P, beta=P, k_max=C, discount="nonneg"),
             lambda v: None if np.isfinite(v) and v <= 1e300 else f"not a finite log density: {v}",
             time_limit=20,
             extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E), ("beta 1e-100", dict(beta=1e-100), E)]
             + DISCOUNT_EXTREMES),
        Spec("exact.ClassPosterior.probability_of", lambda Z: posterior.probability_of(Z),
             dict(Z=np.array([[1], [1], [0]], np.int8)), dict(Z="binary"), in_unit_interval,
             extremes=[("too many features", dict(Z=np.ones((3, 9), np.int8)), E)]),
        Spec("exact.ClassPosterior.classes", lambda: list(posterior.classes())[:20], {}, {},
             lambda zs: next((is_binary(z) for z in zs if is_binary(z)), None)),
        Spec("split_merge.random_split_merge", sm.random_split_merge, move_base, move_kinds,
             _stats_check, extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E)] + DISCOUNT_EXTREMES),
        Spec("split_merge.sequential_split_merge", sm.sequential_split_merge, move_base, move_kinds,
             _stats_check, extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E)] + DISCOUNT_EXTREMES),
        Spec("split_merge.singleton_update", sm.singleton_update,
             dict(X=X, Z=Z, **hyper, rng=fresh_rng(), beta=1.0, discount=0.0),
             dict(mc_kinds, discount="nonneg"), lambda Z_: is_binary(Z_, rows=6),
             extremes=MODEL_EXTREMES + [("alpha 1e6", dict(alpha=1e6), E)] + DISCOUNT_EXTREMES),
        Spec("reports.seconds_per_step", reports.seconds_per_step,
             dict(X=X, Z=Z, **hyper, rng=fresh_rng(), beta=1.0, n_rounds=1, n_sweeps=1, n_proposals=2),
             dict(mc_kinds, n_rounds=C, n_sweeps=C, n_proposals=C),
             lambda costs: is_nonnegative(list(costs.values()), "seconds"), time_limit=20),
        Spec("reports.log_ratio_parts", reports.log_ratio_parts, dict(stats=move_stats),
             dict(stats=_dict_junk)),
        Spec("reports.summarize_run", reports.summarize_run, dict(chains=run, warmup_fraction=0.5),
             dict(chains=_chains_junk, warmup_fraction="probability")),
        _comparison_spec(reports),
    ]
    return specs


def _comparison_spec(reports):
    """reports.ess_per_second_table: a record's runs, as the non-conjugate chapter reads them."""
    chain = dict(ess_log_joint=20.0, ess_k_plus=float("nan"), seconds=2.0, mean_k_plus=3.0)
    run = dict(chains=[chain, chain], rhat_log_joint=1.2, rhat_k_plus=1.5,
               pooled_ess_log_joint=8.0, pooled_ess_k_plus=float("nan"))
    runs = {"accelerated": run, "slice": run, "collapsed": dict(seconds_per_sweep=0.1)}
    bad_chain = lambda **kw: {"accelerated": dict(run, chains=[dict(chain, **kw)])}  # noqa: E731
    return Spec("reports.ess_per_second_table", reports.ess_per_second_table,
                dict(runs=runs, sweeps={"accelerated": 100, "slice": 50}),
                dict(runs=_dict_junk, sweeps=_dict_junk),
                lambda table: None if table.shape[0] == 3 else f"{table.shape[0]} rows",
                extremes=[("no accelerated", dict(runs={"collapsed": runs["collapsed"]}), R),
                          ("zero seconds", dict(runs=bad_chain(seconds=0.0)), R),
                          ("negative ESS", dict(runs=bad_chain(ess_log_joint=-1.0)), R),
                          ("str ESS", dict(runs=bad_chain(ess_k_plus="x")), R),
                          ("pooled ESS inf", dict(runs={"slice": dict(run, pooled_ess_k_plus=np.inf)}),
                           R),
                          ("no chains", dict(runs={"slice": dict(run, chains=[])}), R),
                          ("sweeps missing", dict(sweeps={"accelerated": 100}), R),
                          ("sweeps 0", dict(sweeps={"accelerated": 0, "slice": 50}), R),
                          ("sweeps 1e300", dict(sweeps={"accelerated": 1e300, "slice": 50}), R)])


# ---------------------------------------------------------------------------------------
# specs: summaries, heldout, predictive_checks
# ---------------------------------------------------------------------------------------


def _heldout_check(result):
    return scan_result_of({"log_density": result.log_density, "mean": result.mean})


def specs_summaries():
    from ibp_lab.evaluation import summaries as m

    X, Z = data(), z_matrix()
    A_ref = np.eye(2, 3)
    match = m.match_features(A_ref, A_ref[::-1])
    trace = np.random.default_rng(0).integers(0, 3, 200)
    return [
        Spec("summaries.co_ownership", m.co_ownership, dict(samples=[Z, Z]), dict(samples=_draws),
             lambda M: is_nonnegative(M, "co-ownership")),  # E[Z Z^T] counts shared features
        Spec("summaries.feature_correlations", m.feature_correlations, dict(A=A_ref, B=A_ref + 0.1),
             dict(A="matrix", B="matrix"), lambda r: in_unit_interval(np.abs(r), "|correlation|"),
             extremes=[("constant feature", dict(A=np.ones((2, 3))), E), ("widths differ", dict(B=np.eye(2, 4)), R)]),
        Spec("summaries.match_features", m.match_features, dict(A_ref=A_ref, A=A_ref[::-1], absolute=False),
             dict(A_ref="matrix", A="matrix", absolute="flag"),
             extremes=[("constant feature", dict(A=np.ones((2, 3))), E), ("widths differ", dict(A=np.eye(2, 4)), R)]),
        Spec("summaries.FeatureMatch.matched_to", lambda n_ref, threshold: match.matched_to(n_ref, threshold=threshold),
             dict(n_ref=2, threshold=-1.0), dict(n_ref=C, threshold="real"),
             extremes=[("n_ref below the matches", dict(n_ref=1), R)]),
        Spec("summaries.FeatureMatch.ref_correlation", lambda n_ref: match.ref_correlation(n_ref),
             dict(n_ref=2), dict(n_ref=C), lambda r: in_unit_interval(np.abs(r), "|correlation|"),
             extremes=[("n_ref None", dict(n_ref=None), A), ("n_ref below the matches", dict(n_ref=1), R)]),
        Spec("summaries.draw_feature_means", m.draw_feature_means,
             dict(X=X, samples=[Z], sigma_x=0.5, sigma_a=1.0),
             dict(X="matrix", samples=_draws, sigma_x=P, sigma_a=P), extremes=MODEL_EXTREMES),
        Spec("summaries.chain_feature_means", m.chain_feature_means, dict(X=data(), chain=chain()),
             dict(X="matrix", chain=_chain_junk)),
        Spec("summaries.reappearance", m.reappearance,
             dict(A_ref=A_ref, draws=[A_ref, A_ref[:1]], threshold=0.9),
             dict(A_ref="matrix", draws=lambda b: [("str", "x", R), ("None", None, R), ("empty", [], E),
                                                   ("widths differ", [np.eye(2, 4)], R),
                                                   ("nan draw", [A_ref * np.nan], R)],
                  threshold="real"), lambda r: in_unit_interval(r, "shares")),
        Spec("summaries.chain_summaries", m.chain_summaries, dict(chains=chains(), labels=["a", "b"]),
             dict(chains=_chains_junk, labels=lambda b: [("too few", ["a"], R), ("str", "ab", R),
                                                         ("markup", ["<b>", "</script>"], E)]),
             time_limit=20),
        Spec("summaries.label_free_diagnostics", m.label_free_diagnostics,
             dict(chains=chains(), var_names=("k_plus", "log_joint")),
             dict(chains=_chains_junk, var_names=lambda b: [("unknown", ("colour",), R), ("str", "k_plus", E),
                                                           ("empty", (), R), ("None", None, R)]),
             time_limit=20, allow_inf=True),
        Spec("summaries.k_plus_frequencies", m.k_plus_frequencies, dict(k_plus=[0, 1, 1, 5], k_max=3),
             dict(k_plus="vector", k_max=C), is_distribution,
             extremes=[("negative K+", dict(k_plus=[-1, 2]), R), ("fractional K+", dict(k_plus=[1.5]), R),
                       ("k_max huge", dict(k_max=10**12), E)]),
        Spec("summaries.total_variation", m.total_variation, dict(p=[0.5, 0.5], q=[0.25, 0.5, 0.25]),
             dict(p="vector", q="vector"), lambda tv: in_unit_interval(tv, "total variation"),
             extremes=[("p negative", dict(p=[-0.5, 1.5]), R), ("p sums to 2", dict(p=[1.0, 1.0]), R)]),
        Spec("summaries.count_law_moments", m.count_law_moments, dict(pmf=[0.25, 0.5, 0.25]),
             dict(pmf="vector"), lambda out: None if out[1] >= 0 else f"negative sd {out!r}",
             extremes=[("a slice", dict(pmf=[0.25, 0.5]), R), ("one point", dict(pmf=[1.0]), A),
                       ("negative", dict(pmf=[1.5, -0.5]), R)]),
        Spec("summaries.total_variation_noise", m.total_variation_noise,
             dict(p=[0.5, 0.5], n_eff=100.0, rng=fresh_rng(), n_rep=50),
             dict(p="vector", n_eff=P, rng=G, n_rep=C), lambda tv: in_unit_interval(tv, "total variation"),
             extremes=[("n_eff 1e15", dict(n_eff=1e15), E), ("p sums to 2", dict(p=[1.0, 1.0]), R)]),
        Spec("summaries.indicator_ess",
             lambda values, categories: np.nan_to_num(m.indicator_ess(values, categories), nan=0.0),
             dict(values=trace, categories=[0, 1, 2]), dict(values="vector", categories="vector"),
             is_nonnegative),
        Spec("summaries.class_ownership", m.class_ownership, dict(Z=Z, labels=[0, 0, 1, 1, 2, 2]),
             dict(Z="binary", labels=lambda b: [("too short", [0, 1], R), ("None", None, R),
                                                ("nan", [np.nan] * 6, E), ("str labels", list("aabbcc"), E)]),
             lambda s: in_unit_interval(s, "shares")),
    ]


def specs_heldout():
    from ibp_lab.inference import heldout as m

    X = np.random.default_rng(1).normal(size=(20, 4))
    obs, hid = np.array([0, 1]), np.array([2, 3])
    idx = dict(observed=_indices(4), hidden=_indices(4))
    split = dict(X=X[:3], observed=obs, hidden=hid)
    split_kinds = dict(X="matrix", **idx)
    Z = (np.random.default_rng(2).random((20, 2)) < 0.5).astype(np.int8)
    result = m.HeldoutResult(np.zeros(3), np.zeros((3, 2)))
    fitted_gauss = m.FullGaussian().fit(X)
    fitted_ppca = m.PPCA(2).fit(X)
    cov = np.cov(X.T) + np.eye(4) * 0.1
    return [
        Spec("heldout.split_top_bottom", m.split_top_bottom, dict(shape=(8, 6), n_top_rows=4),
             dict(shape="shape", n_top_rows=C),
             extremes=[("n_top_rows beyond shape", dict(n_top_rows=9), R)]),
        Spec("heldout.gaussian_conditional", m.gaussian_conditional,
             dict(mean=np.zeros(4), cov=cov, **split),
             dict(mean="vector", cov="matrix", **split_kinds), _posterior_check,
             extremes=[("cov not positive definite", dict(cov=-np.eye(4)), R),
                       ("cov singular", dict(cov=np.zeros((4, 4))), E),
                       ("cov asymmetric", dict(cov=np.triu(np.ones((4, 4))) * 2), R),
                       ("observed and hidden overlap", dict(hidden=np.array([1, 2])), R)]),
        Spec("heldout.FullGaussian", lambda ridge, X_fit: m.FullGaussian(ridge=ridge).fit(X_fit).heldout(X[:3], obs, hid),
             dict(ridge=1e-4, X_fit=X), dict(ridge="nonneg", X_fit="matrix"), _heldout_check,
             names=dict(X_fit=("X",))),
        Spec("heldout.FullGaussian.heldout", fitted_gauss.heldout, split, split_kinds, _heldout_check),
        Spec("heldout.PPCA", lambda n_components, X_fit: m.PPCA(n_components).fit(X_fit).heldout(X[:3], obs, hid),
             dict(n_components=2, X_fit=X), dict(n_components=C, X_fit="matrix"), _heldout_check,
             names=dict(X_fit=("X",)),
             extremes=[("n_components = D", dict(n_components=4), E), ("n_components > D", dict(n_components=9), R)]),
        Spec("heldout.PPCA.heldout", fitted_ppca.heldout, split, split_kinds, _heldout_check),
        Spec("heldout.HeldoutResult.rmse", result.rmse, dict(X_hidden=np.ones((3, 2))),
             dict(X_hidden="matrix"), is_nonnegative),
        Spec("heldout.finite_feature_heldout", m.finite_feature_heldout,
             dict(X=X[:3], observed=obs, hidden=hid, probabilities=[[0.5, 0.3]],
                  features=np.ones((1, 2, 4)), sigma_x=0.5, feature_variances=None,
                  draw_weights="equal"),
             dict(X="matrix", **idx, probabilities="matrix", sigma_x=P,
                  draw_weights=lambda b: [("unknown", "importance", R), ("int", 1, R)],
                  features=lambda b: [("nan", b * np.nan, R), ("2-D", b[0], R), ("complex", b + 1j, R),
                                      ("str", "A", R), ("wrong D", np.ones((1, 2, 5)), R)]),
             _heldout_check,
             extremes=[("probabilities above 1", dict(probabilities=[[1.5, 0.3]]), R),
                       ("probabilities negative", dict(probabilities=[[-0.5, 0.3]]), R),
                       ("negative feature_variances", dict(feature_variances=-np.ones((1, 2, 4))), R),
                       ("sigma_x 1e-100", dict(sigma_x=1e-100), E), ("sigma_x 1e-9", dict(sigma_x=1e-9), E)]),
        Spec("heldout.finite_factor_logpdf", m.finite_factor_logpdf,
             dict(X=X[:3], probabilities=[0.5, 0.3], features=np.ones((2, 4)), sigma_x=0.5,
                  sigma_w=1.0, feature_variances=None),
             dict(X="matrix", probabilities="vector", features="matrix", sigma_x=P, sigma_w=P,
                  feature_variances=lambda b: [("negative", [-1.0, 0.0], R), ("one short", [0.1], R),
                                               ("str", "v", R), ("nan", [np.nan, 0.0], R)]),
             lambda out: None if np.all(np.isfinite(out)) else "not finite",
             extremes=[("probabilities above 1", dict(probabilities=[1.5, 0.3]), R),
                       ("seventeen features", dict(probabilities=np.full(17, 0.5),
                                                   features=np.ones((17, 4))), R),
                       ("features one column short", dict(features=np.ones((2, 3))), R),
                       ("sigma_x 1e-100", dict(sigma_x=1e-100), E),
                       ("data 1e150", dict(X=X[:3] * 1e150), E),
                       ("sigma_w 1e-100", dict(sigma_w=1e-100), E)]),
        Spec("heldout.ibp_gibbs_heldout", m.ibp_gibbs_heldout,
             dict(X_train=X, samples=[(Z, 0.5, 1.0, 1.0)], X_test=X[:2], observed=obs, hidden=hid,
                  rng=fresh_rng(), beta=1.0, n_sweeps=3, burn=1, max_new=2),
             dict(X_train="matrix", X_test="matrix", **idx, rng=G, beta=P, n_sweeps=C, burn=C, max_new=C,
                  samples=lambda b: [("empty", [], R), ("None", None, R), ("str", "s", R),
                                     ("nan sigma", [(Z, np.nan, 1.0, 1.0)], R),
                                     ("negative alpha", [(Z, 0.5, 1.0, -1.0)], R),
                                     ("Z rows differ", [(Z[:-1], 0.5, 1.0, 1.0)], R),
                                     ("Z not binary", [(Z * 2, 0.5, 1.0, 1.0)], R),
                                     ("short tuple", [(Z, 0.5)], R)]),
             _heldout_check, time_limit=20,
             extremes=[("burn beyond n_sweeps", dict(burn=5), R)]),
        Spec("heldout.compare_heldout", m.compare_heldout,
             dict(results={"a": result, "b": m.HeldoutResult(np.ones(3), np.ones((3, 2)))},
                  X_hidden=np.zeros((3, 2)), reference="b"),
             dict(results=_dict_junk, X_hidden="matrix",
                  reference=lambda b: [("unknown", "c", R), ("None", None, R), ("int", 3, R)])),
        Spec("heldout.chain_draws", m.chain_draws, dict(chain=_small_chain()),
             dict(chain=lambda b: [("None", None, R), ("str", "chain", R), ("list", [b], R),
                                   ("dict", {"Z": 1}, R)]),
             lambda draws: next((is_binary(d[0]) for d in draws if is_binary(d[0])), None)),
        Spec("heldout.pool_heldout", m.pool_heldout,
             dict(results=[result, m.HeldoutResult(np.ones(3), np.ones((3, 2)))]),
             dict(results=lambda b: [("empty", [], R), ("one result", result, R), ("None", None, R),
                                     ("str", "ab", R), ("list of None", [None], R),
                                     ("shapes differ", [result, m.HeldoutResult(np.ones(4),
                                                                                np.ones((4, 2)))], R)]),
             _heldout_check),
    ]


def _small_chain():
    """A short chain of the runner, for the functions that take its result."""
    from ibp_lab.inference import chains

    return chains.run_chain(data(), 4, fresh_rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                            burn=1)


def specs_predictive():
    from ibp_lab.evaluation import predictive_checks as m

    X, Z = data(), z_matrix()
    return [
        Spec("predictive_checks.replicate_digits", m.replicate_digits,
             dict(X=X, samples=[(Z, 0.5, 1.0)], rng=fresh_rng()),
             dict(X="matrix", rng=G,
                  samples=lambda b: [("empty", [], R), ("None", None, R), ("nan sigma", [(Z, np.nan, 1.0)], R),
                                     ("negative sigma", [(Z, -1.0, 1.0)], R), ("Z rows differ", [(Z[:-1], 0.5, 1.0)], R),
                                     ("Z not binary", [(Z * 3, 0.5, 1.0)], R), ("str", "s", R),
                                     ("short tuple", [(Z,)], R), ("sigma 1e-100", [(Z, 1e-100, 1.0)], E)])),
        Spec("predictive_checks.ink_statistics", m.ink_statistics,
             dict(ink=[[0.0, 0.5], [1.0, -0.2]], blank_below=1 / 32),
             dict(ink="stack", blank_below="real"),  # documented for (..., N, D): chapter 13 passes 3-D
             lambda s: first_problem(in_unit_interval(s["share_blank"]), in_unit_interval(s["share_negative"]))),
    ]


# ---------------------------------------------------------------------------------------
# specs: pymc_models (building and sampling are slow: fewer, cheaper mutations)
# ---------------------------------------------------------------------------------------

_CHEAP_MATRIX = {"nan entry", "complex 1j", "numeric strings", "object", "no rows", "huge", "3-D"}


def _cheap_matrix(base):
    return [m for m in _matrix(base) if m[0] in _CHEAP_MATRIX]


def specs_pymc():
    from ibp_lab.inference import pymc_models as m

    X = np.random.default_rng(0).normal(size=(4, 3))
    values = {"alpha": 1.0, "v": [0.5, 0.5], "sigma_A": 1.0, "A": np.zeros((2, 3))}
    model = m.build_model(X, 2, sigma_x=0.5)
    values_junk = lambda b: [("missing A", {k: v for k, v in b.items() if k != "A"}, R),
                             ("nan alpha", {**b, "alpha": np.nan}, R), ("v above 1", {**b, "v": [1.5, 0.5]}, R),
                             ("A wrong shape", {**b, "A": np.zeros((3, 3))}, R), ("None", None, R),
                             ("negative sigma_A", {**b, "sigma_A": -1.0}, R), ("complex A", {**b, "A": b["A"] + 1j}, R)]
    pat = dict(X=X, pi=[0.5, 0.3], A=np.ones((2, 3)), sigma_x=0.5)
    pat_kinds = dict(X="matrix", pi="vector", A="matrix", sigma_x=P)
    pat_extremes = [("pi above 1", dict(pi=[1.5, 0.3]), R), ("pi negative", dict(pi=[-0.5, 0.3]), R),
                    ("pi 0 and 1", dict(pi=[0.0, 1.0]), E), ("A widths differ", dict(A=np.ones((2, 4))), R),
                    ("sigma_x 1e-100", dict(sigma_x=1e-100), E), ("too many features", dict(pi=np.full(30, 0.5), A=np.ones((30, 3))), R)]
    idata_junk = lambda b: [("None", None, R), ("str", "idata", R), ("dict", {}, R)]
    sample_kinds = dict(rng=G, draws=C, tune=C, chains=C, start=_choice(["data", "default"]),
                        target_accept="probability", cores=C, keep_warmup="flag", quiet="flag")
    return [
        Spec("pymc_models.pattern_matrix", m.pattern_matrix, dict(n_features=3), dict(n_features=C), is_binary),
        Spec("pymc_models.build_model", m.build_model,
             dict(X=X, n_features=2, sigma_x=0.5, alpha_shape=1.0, alpha_rate=1.0, sigma_a_scale=1.0,
                  sigma_x_scale=1.0),
             dict(X=_cheap_matrix, n_features=C, sigma_x=P, alpha_shape=P, alpha_rate=P, sigma_a_scale=P,
                  sigma_x_scale=P), time_limit=30,
             extremes=[("sigma_x None", dict(sigma_x=None), A)]),
        Spec("pymc_models.initial_point_from_data", m.initial_point_from_data,
             dict(X=X, n_features=2, rng=fresh_rng(), sigma_x=0.5, scale=0.5, v=0.8, alpha=2.0),
             dict(X="matrix", n_features=C, rng=G, sigma_x=P, scale=P, v="probability", alpha=P)),
        Spec("pymc_models.sample_posterior", m.sample_posterior,
             dict(model=model, X=X, rng=fresh_rng(), draws=3, tune=3, chains=1, start="data",
                  target_accept=0.8, cores=1, keep_warmup=False, quiet=True),
             dict(model=lambda b: [("None", None, R), ("str", "model", R)], X=_cheap_matrix, **sample_kinds),
             time_limit=120, allow_inf=True),
        Spec("pymc_models.row_log_likelihood", m.row_log_likelihood, pat, pat_kinds, extremes=pat_extremes),
        Spec("pymc_models.pattern_log_posteriors", m.pattern_log_posteriors, pat, pat_kinds,
             lambda lp: None if np.all(np.asarray(lp) <= 1e-12) else "log probability above 0",
             extremes=pat_extremes, allow_inf=True),
        Spec("pymc_models.pattern_posterior", m.pattern_posterior, pat, pat_kinds,
             lambda p: is_distribution(p, axis=1), extremes=pat_extremes),
        Spec("pymc_models.recover_z", m.recover_z, dict(idata=fake_idata(), X=X[:, :3], chain=None, n_draws=None),
             dict(idata=idata_junk, X="matrix"),
             lambda r: first_problem(in_unit_interval(r.probabilities), is_binary(r.map_z)),
             extremes=[("chain 5", dict(chain=5), R), ("chain -1", dict(chain=-1), R),
                       ("n_draws 0", dict(n_draws=0), R), ("n_draws str", dict(n_draws="2"), R)]),
        Spec("pymc_models.sample_z", m.sample_z,
             dict(idata=fake_idata(), X=X[:, :3], rng=fresh_rng(), chain=None, n_draws=3),
             dict(idata=idata_junk, X="matrix", rng=G, n_draws=C),
             lambda Z: next((is_binary(z) for z in np.asarray(Z) if is_binary(z)), None),
             extremes=[("chain 5", dict(chain=5), R), ("chain 1.5", dict(chain=1.5), R)]),
        Spec("pymc_models.numpy_logp", m.numpy_logp,
             dict(X=X, values=values, sigma_x=0.5, alpha_shape=1.0, alpha_rate=1.0, sigma_a_scale=1.0,
                  sigma_x_scale=1.0),
             dict(X="matrix", values=values_junk, sigma_x=P, alpha_shape=P, alpha_rate=P,
                  sigma_a_scale=P, sigma_x_scale=P)),
        Spec("pymc_models.feature_gradient", m.feature_gradient, dict(model=model, values=values),
             dict(model=lambda b: [("None", None, R), ("str", "model", R)], values=values_junk), time_limit=30),
        Spec("pymc_models.time_gradient", m.time_gradient, dict(X=X, n_features=2, sigma_x=0.5, repeats=2),
             dict(X=_cheap_matrix, n_features=C, sigma_x=P, repeats=C), is_nonnegative, time_limit=30),
    ]


# ---------------------------------------------------------------------------------------
# specs: streaming, RecursiveIBP and every field of its state
# ---------------------------------------------------------------------------------------


class Damaged(Exception):
    """A refusal that left the object or a file changed: reported as a crash."""


def _fitted_check(model):
    problems = [scan_result_of({"features": model.features_, "variances": model.feature_variances_,
                                "usage": model.feature_usage_, "expected": model.n_features_expected_})]
    problems.append(is_nonnegative(model.feature_variances_, "feature variances"))
    problems.append(is_nonnegative(model.feature_usage_, "feature usage"))
    problems.append(in_unit_interval(model.feature_existence_, "feature existence"))
    return first_problem(*problems)


def _stream_fit(alpha, beta, sigma_x, sigma_a, model, n_steps, rng, tol, sigma_w, ossify, keep_history,
                record_posteriors, births, buffer_size, X):
    from ibp_lab.inference.streaming import RecursiveIBP
    est = RecursiveIBP(alpha=alpha, beta=beta, sigma_x=sigma_x, sigma_a=sigma_a, model=model,
                       n_steps=n_steps, rng=rng, tol=tol,
                       sigma_w=sigma_w, ossify=ossify, keep_history=keep_history,
                       record_posteriors=record_posteriors, births=births, buffer_size=buffer_size)
    return est.fit(X)


def _fitted(rng=None, X=None):
    """A fitted estimator; the default one is a copy of one fit made once per process (the
    group's process makes it before forking, so its ~400 cases do not refit, 0.5 s each)."""
    import copy

    if rng is None and X is None:
        return copy.deepcopy(_default_fit())
    from ibp_lab.inference.streaming import RecursiveIBP
    est = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, rng=rng or fresh_rng(),
                       record_posteriors=True)
    return est.fit(data() if X is None else X)


@functools.cache
def _default_fit():
    from ibp_lab.inference.streaming import RecursiveIBP
    return RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, rng=fresh_rng(),
                        record_posteriors=True).fit(data())


def _same_state(a: dict, b: dict) -> bool:
    if set(a) != set(b):
        return False
    return all(repr(np.asarray(a[k]).tolist()) == repr(np.asarray(b[k]).tolist()) if isinstance(a[k], np.ndarray)
               else repr(a[k]) == repr(b[k]) for k in a)


def _set_state_untouched(state):
    """set_state(state) on a fitted model; a refusal must leave the model as it was."""
    model = _fitted()
    before = model.get_state()
    try:
        model.set_state(state)
    except (ValueError, TypeError):
        if not _same_state(before, model.get_state()):
            raise Damaged("set_state changed the model before refusing the state") from None
        raise
    return _fitted_check(model) or model


def _state_field_mutations(key, value):
    """Junk for one state field, by what the field holds."""
    out = [("missing", None, R), ("None", None, R), ("str", "x", R), ("list of str", ["x"], R)]
    if isinstance(value, (bool, np.bool_)):
        return out + [("str no", "no", R), ("int 2", 2, R)]
    if isinstance(value, np.ndarray):
        bad_nan = value.astype(float).copy()
        if bad_nan.size:
            bad_nan.flat[0] = np.nan
        return out + [("nan entry", bad_nan, R if value.size else E), ("complex", value + 1j, R),
                      ("one entry more", np.concatenate([value.reshape(-1), value.reshape(-1)[:1] + 1])
                       if value.size else np.ones(1), R),
                      ("negative", -np.abs(value.astype(float)) - 1, E), ("3-D", value[None, None], R),
                      ("numeric strings", value.astype(str), R), ("object", value.astype(object), R)]
    if isinstance(value, (int, np.integer)):
        return out + [("negative", -1, R), ("float", float(value) + 0.5, R), ("bool", True, R),
                      ("huge", 10**30, E), ("plus 7", value + 7, E)]
    if isinstance(value, float):
        return out + [("nan", float("nan"), R), ("inf", float("inf"), R), ("negative", -1.0, E),
                      ("zero", 0.0, E), ("bool", True, R), ("huge", 1e308, E)]
    if isinstance(value, dict):
        return out + [("empty dict", {}, R), ("other generator's state", np.random.MT19937(0).state, R)]
    return out + [("int", 3, R), ("nonsense", "nonsense", R)]


#: Edits of the state that look plausible and must still be refused (inconsistent or impossible).
def _state_edits(state):
    k = len(state["features"])
    edits = {
        "rng_kind seed": ("rng_kind", "seed"), "rng_kind RandomState": ("rng_kind", "RandomState"),
        "rng_kind default_rng": ("rng_kind", "default_rng"), "rng_kind MT19937": ("rng_kind", "MT19937"),
        "ossify no": ("ossify", "no"), "record_posteriors 1": ("record_posteriors", 1),
        "negative sigma_x": ("sigma_x", -1.0), "zero sigma_a": ("sigma_a", 0.0),
        "negative beta": ("beta", -2.0), "negative tol": ("tol", -1e-6), "n_steps 0": ("n_steps", 0),
        "negative variances": ("variances", -np.abs(state["variances"]) - 1),
        "zero variances": ("variances", np.zeros_like(state["variances"])),
        "usage beyond n_seen": ("usage", state["usage"] + state["n_seen"] + 5),
        "negative usage": ("usage", -np.abs(state["usage"]) - 1),
        "positive log_unowned": ("log_unowned", np.abs(state["log_unowned"]) + 1),
        "n_seen mismatch histories": ("n_seen", state["n_seen"] + 3),
        "negative n_seen": ("n_seen", -1), "negative rate": ("rate", -1.0),
        "negative retired_rate": ("retired_rate", -1.0), "dim mismatch": ("dim", state["dim"] + 1),
        "dish duplicates": ("dish", np.zeros(k, np.int64)),
        "next_dish not beyond dishes": ("next_dish", 0),
        "features rows differ": ("features", np.vstack([state["features"], state["features"][:1]])),
        "posterior values above 1": ("posterior_values", state["posterior_values"] + 2),
        "posterior rows beyond n_seen": ("posterior_rows", state["posterior_rows"] + 100),
        "posterior lengths differ": ("posterior_rows", state["posterior_rows"][:-1]),
        # a version this package does not write (it writes STATE_VERSION), and the one before
        "version ahead": ("version", _state_version() + 1),
        "version behind": ("version", _state_version() - 1),
        "version str": ("version", "1"), "model pca": ("model", "pca"),
        "rng_state garbage": ("rng_state", {"bit_generator": "PCG64", "state": {"state": -1, "inc": "x"}}),
    }
    return edits


def _state_version() -> int:
    from ibp_lab.inference.streaming._state import STATE_VERSION

    return STATE_VERSION


def _buffer_moves_junk(base):
    """Issue 49: the moves of the birth buffer's rounds (moves on Z only; its hyperparameters
    are fixed)."""
    from ibp_lab.inference import chains
    return [("None (the default round)", None, A), ("empty", [], R), ("unknown name", ["sideways"], R),
            ("int", 3, R), ("one name", "sequential_split_merge", A), ("list of None", [None], R),
            ("dict", {"gibbs_sweep": 1}, R), ("tuple", tuple(base), A),
            ("singletons and random split-merge", [chains.SingletonUpdate(),
                                                   chains.RandomSplitMerge(n_proposals=2)], A),
            ("one hyperparameter move", chains.AlphaUpdate(), R),
            ("a hyperparameter move among them", [chains.GibbsSweep(), chains.ScaleUpdate("sigma_x")], R),
            ("classes, not objects", [chains.GibbsSweep, chains.SingletonUpdate], R),
            ("array of moves", np.array([chains.GibbsSweep()], dtype=object), R)]


def _stream_fit_moves(buffer_moves, births, X):
    from ibp_lab.inference.streaming import RecursiveIBP
    return RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, rng=fresh_rng(), buffer_size=4,
                        births=births, buffer_moves=buffer_moves).fit(X)


def specs_streaming():
    from ibp_lab.inference import chains, streaming as m
    from ibp_lab.inference.streaming import RecursiveIBP

    X = data()
    fitted = _fitted()
    state = fitted.get_state()
    base = dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, model="linear_gaussian", n_steps=3,
                rng=fresh_rng(), tol=1e-6, sigma_w=1.0, ossify=False, keep_history=True,
                record_posteriors=False, births=None, buffer_size=4, X=X)
    kinds = dict(alpha=P, beta=P, sigma_x=P, sigma_a=P, model=_choice(["linear_gaussian", "factor_analysis"]),
                 n_steps=C, rng=_estimator_rng, tol=P, sigma_w=P, ossify="flag", keep_history="flag",
                 record_posteriors="flag", births=_choice(["buffer", "single", None]), buffer_size=C,
                 X=_estimator_matrix)
    fit_extremes = [("issue: sigma_x 1e-9, X [[1.0]]", dict(sigma_x=1e-9, X=np.array([[1.0]])), E),
                    ("alpha 1e4", dict(alpha=1e4), E), ("alpha 1e-100", dict(alpha=1e-100), E),
                    ("sigma_a 1e-100", dict(sigma_a=1e-100), E), ("sigma_x 1e6", dict(sigma_x=1e6), E),
                    ("factor analysis sigma_x 1e-9", dict(model="factor_analysis", sigma_x=1e-9), E),
                    ("data 1e150", dict(X=X * 1e150), E)]
    state_specs = []
    for key, value in state.items():
        muts = _state_field_mutations(key, value)

        def mutate(b, muts=muts):
            return muts

        def call(field_value, key=key, label=None):
            return _set_state_untouched({**state, key: field_value})

        cases = []
        for label, v, expect in muts:
            if label == "missing":
                trimmed = {k: v2 for k, v2 in state.items() if k != key}
                cases.append((f"{key}: missing", functools.partial(_set_state_untouched, trimmed), (key,), R))
            else:
                cases.append((f"{key}: {label}", functools.partial(_set_state_untouched, {**state, key: v}),
                              (key,), expect))
        state_specs.extend(cases)
    for label, (key, value) in _state_edits(state).items():
        names = (key, "rng_state") if key == "rng_kind" else (key,)  # a kind that does not fit its state
        state_specs.append((f"edit {label}", functools.partial(_set_state_untouched, {**state, key: value}),
                            names, R))
    state_specs.append(("extra key", functools.partial(_set_state_untouched, {**state, "colour": "red"}),
                        ("colour",), R))
    state_specs += [(f"not a dict: {label}", functools.partial(_set_state_untouched, v), ("state",), R)
                    for label, v in [("None", None), ("list", [1]), ("str", "state")]]
    nx = lambda b: [m_ for m_ in _estimator_matrix(b) if m_[0] != "1-D row"] + [
        ("wrong width", np.ones((2, 5)), R)]
    return [
        Spec("streaming.RecursiveIBP.fit", _stream_fit, base, kinds, _fitted_check, extremes=fit_extremes,
             time_limit=20),
        # issue 49: the birth buffer's moves
        Spec("streaming.RecursiveIBP.buffer_moves", _stream_fit_moves,
             dict(buffer_moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=2)],
                  births="buffer", X=X),
             dict(buffer_moves=_buffer_moves_junk), _fitted_check, time_limit=20,
             extremes=[("with births single", dict(births="single"), R),
                       ("None with births single", dict(births="single", buffer_moves=None), A)]),
        Spec("streaming.RecursiveIBP.partial_fit", lambda X: _fitted().partial_fit(X), dict(X=X[:2]),
             dict(X=nx), _fitted_check),
        Spec("streaming.RecursiveIBP.bp_means_limit",
             lambda gamma, sigma_x, sigma_a, n_steps, ossify, record_posteriors, tol: RecursiveIBP.bp_means_limit(
                 gamma, sigma_x, sigma_a=sigma_a, n_steps=n_steps, ossify=ossify,
                 record_posteriors=record_posteriors, tol=tol).fit(X),
             dict(gamma=1.0, sigma_x=0.1, sigma_a=1.0, n_steps=3, ossify=False, record_posteriors=True, tol=1e-6),
             dict(gamma=P, sigma_x=P, sigma_a=P, n_steps=C, ossify="flag", record_posteriors="flag", tol=P),
             _fitted_check, extremes=[("sigma_x 1e-9", dict(sigma_x=1e-9), E), ("sigma_x 1e-3", dict(sigma_x=1e-3), E)]),
        Spec("streaming.RecursiveIBP.next_prior", lambda: fitted.next_prior(), {}, {},
             lambda out: in_unit_interval(out[1])),  # (dish numbers, probabilities)
        Spec("streaming.RecursiveIBP.predictive_logpdf",
             lambda X_new, n_draws, rng, return_draws: fitted.predictive_logpdf(
                 X_new, n_draws=n_draws, rng=rng, return_draws=return_draws),
             dict(X_new=X[:2], n_draws=5, rng=fresh_rng(), return_draws=False),
             dict(X_new=nx, n_draws=C, rng="optional_rng", return_draws="flag"),
             names=dict(X_new=("X_new", "X"))),
        Spec("streaming.RecursiveIBP.get_state", lambda: fitted.get_state(), {}, {}),
        Spec("streaming.RecursiveIBP.flush", lambda: _fitted().flush(), {}, {}, _fitted_check,
             junk=[("unfitted", lambda: RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5,
                                                     sigma_a=1.0).flush(), ("fit",), E)]),
        Spec("streaming.RecursiveIBP.properties", lambda: {
            name: getattr(fitted, name) for name in
            ("alpha", "log_alpha", "features_", "feature_variances_", "feature_usage_", "feature_existence_",
             "dish_numbers_", "n_features_expected_", "poisson_rate_history_", "expected_features_history_",
             "n_slots_history_", "n_seen_", "state_nbytes")}, {}, {}),
        Spec("streaming.RecursiveIBP.unfitted", lambda: repr(RecursiveIBP(alpha=1.0, beta=1.0,
                                                                          sigma_x=0.5, sigma_a=1.0)),
             {}, {}, junk=[(f"unfitted {a}", functools.partial(
                 lambda a: getattr(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0),
                                   a), a), (a, "fit"), E)
                 for a in ()]  # properties may raise AttributeError before fitting (hasattr works)
             + [("unfitted next_prior", lambda: RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5,
                                                             sigma_a=1.0).next_prior(), ("fit",), E),
                ("unfitted predictive_logpdf", lambda: RecursiveIBP(alpha=1.0, beta=1.0,
                                                                    sigma_x=0.5, sigma_a=1.0).predictive_logpdf(X),
                 ("fit",), E),
                ("unfitted get_state then set_state", lambda: RecursiveIBP(alpha=1.0, beta=1.0,
                                                                           sigma_x=0.5, sigma_a=1.0).set_state(
                    RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5,
                                 sigma_a=1.0).get_state()), ("state",), E)]),
        Spec("streaming.RecursiveIBP.set_state", lambda: _set_state_untouched(dict(state)), {}, {},
             junk=state_specs),
        Spec("streaming.RecursiveIBP.save", _save_round_trip, dict(kind="PCG64"), {},
             junk=[(f"bit generator {k}", functools.partial(_save_round_trip, k), (k,), A)
                   for k in ("MT19937", "Philox", "SFC64", "PCG64DXSM")]
             + [("path None", lambda: _fitted().save(None), ("path",), R)]),
        Spec("streaming.RecursiveIBP.load", _load_bytes, dict(payload=_good_checkpoint()), {},
             junk=_load_junk()),
        Spec("streaming.filtering_prior", m.filtering_prior,
             dict(usage=[1.0, 0.0], log_unowned=[-np.inf, 0.0], dish=[1, 2], n=2, alpha=2.0,
                  beta=1.0, last_used=None),
             dict(usage="vector", dish="vector", n=C, alpha=P, beta=P),
             in_unit_interval,
             extremes=[("usage beyond n", dict(usage=[5.0, 0.0]), R), ("log_unowned positive", dict(log_unowned=[1.0, 0.0]), R),
                       ("lengths differ", dict(dish=[1]), R), ("last_used -1", dict(last_used=-1), R),
                       ("alpha 1e6", dict(alpha=1e6), E)]),
        Spec("streaming.paper_prior", m.paper_prior,
             dict(usage=[1.0], dish=[1], n=2, rate_before=1.0, alpha=5.0, beta=0.1),
             dict(usage="vector", dish="vector", n=C, rate_before="nonneg", alpha=P, beta=P)),
        Spec("streaming.bp_means_one_pass", m.bp_means_one_pass, dict(X=X, gamma=1.0, n_steps=3, ossify=False),
             dict(X="matrix", gamma=P, n_steps=C, ossify="flag"), lambda out: is_binary(out[0]),
             extremes=hyper_edges(dict(gamma=1.0)) + data_edges(dict(X=X))
             + [("n_steps 1", dict(n_steps=1), A), ("ossify with one row", dict(X=X[:1], ossify=True), E)]),
        Spec("streaming.RecursiveIBP.transform", lambda X_new: fitted.transform(X_new), dict(X_new=X[:2]),
             dict(X_new=nx), lambda out: in_unit_interval(out), names=dict(X_new=("X_new", "X"))),
        Spec("streaming.RecursiveIBP.score", lambda X_new, n_draws: fitted.score(X_new, n_draws=n_draws),
             dict(X_new=X[:2], n_draws=5), dict(X_new=nx, n_draws=C), names=dict(X_new=("X_new", "X"))),
        Spec("streaming.stream_cost", m.stream_cost,
             dict(model=RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0),
                  X=np.random.default_rng(0).normal(size=(30, 3)),
                  checkpoints=[10, 20], n_blocks=2, block_size=2, n_traced=2),
             dict(model=lambda b: [("None", None, R), ("str", "model", R)], X="matrix",
                  checkpoints=lambda b: [("beyond X", [100], R), ("decreasing", [20, 10], R), ("empty", [], E),
                                         ("negative", [-1], R), ("str", "10", R)],
                  n_blocks=C, block_size=C, n_traced=C), time_limit=20),
        Spec("streaming.log_fit", m.log_fit, dict(n=[1, 10, 100], values=[1.0, 2.0, 3.0]),
             dict(n="vector", values="vector"),
             extremes=[("n zero", dict(n=[0, 10, 100]), R), ("one point", dict(n=[1], values=[1.0]), R),
                       ("lengths differ", dict(values=[1.0]), R)]),
    ]


def _save_round_trip(kind):
    """Save with a given bit generator over a good checkpoint, load back, compare states."""
    model = _fitted(rng=np.random.Generator(getattr(np.random, kind)(0)))
    path = os.path.join(os.getcwd(), "stream.npz")
    _fitted().save(path)
    good = open(path, "rb").read()
    try:
        model.save(path)
    except Exception:
        if open(path, "rb").read() != good:
            raise Damaged(f"a failed save with {kind} destroyed the previous checkpoint") from None
        raise
    loaded = type(model).load(path)
    if not _same_state(model.get_state(), loaded.get_state()):
        return "state after save/load differs"
    return loaded


def _load_bytes(payload):
    from ibp_lab.inference.streaming import RecursiveIBP
    path = os.path.join(os.getcwd(), "checkpoint.npz")
    with open(path, "wb") as handle:
        handle.write(payload)
    return RecursiveIBP.load(path)


def _edited_file(edit):
    """A checkpoint file whose JSON meta or arrays are edited: bytes."""
    import io
    import json
    path = os.path.join(tempfile_dir(), "good.npz")
    _fitted().save(path)
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(str(arrays.pop("meta")))
    edit(meta, arrays)
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)), **arrays)
    return buffer.getvalue()


@functools.cache
def tempfile_dir():
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="campaign-fixtures-")
    # made in the parent (warm_up) it goes at exit; made in a case's child it lands inside the
    # child's own directory, which the parent removes
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def _good_checkpoint():
    path = os.path.join(tempfile_dir(), "good.npz")
    _fitted().save(path)
    return open(path, "rb").read()


def _load_junk():
    good = _good_checkpoint()
    rng = np.random.default_rng(7)
    names = ("checkpoint.npz", "not a valid RecursiveIBP state", "RecursiveIBP state", "path")
    junk = [(f"truncated to {n} bytes", good[:n]) for n in (0, 10, len(good) // 2, len(good) - 1)]
    junk += [("random bytes", rng.bytes(2000)), ("zip of nothing", _zip_bytes({})),
             ("pickle inside", _pickled_npz())]
    junk += [(f"edit {label}", _edited_file(fn)) for label, fn in [
        ("rng_kind seed", lambda m_, a: m_.update(rng_kind="seed")),
        ("ossify no", lambda m_, a: m_.update(ossify="no")),
        ("negative variances", lambda m_, a: a.update(variances=-np.abs(a["variances"]) - 1)),
        ("missing features", lambda m_, a: a.pop("features")),
        ("usage beyond n_seen", lambda m_, a: a.update(usage=a["usage"] + 100)),
        ("complex features", lambda m_, a: a.update(features=a["features"] + 1j)),
    ]]
    cases = [(f"file: {label}", functools.partial(_load_bytes, payload), names, R) for label, payload in junk]
    return cases


def _path_cases():
    """A path that is a directory or does not exist: an OSError naming the path is a fine refusal."""
    def case(label, call, names):
        return Case("streaming.RecursiveIBP.save" if "save" in label else "streaming.RecursiveIBP.load",
                    label, call, names, R, refusals=(ValueError, TypeError, OSError))
    return [case("save: path is a directory", lambda: _fitted().save(os.getcwd()), ("path", "Is a directory")),
            case("save: path in a missing directory", lambda: _fitted().save("no/such/dir/x.npz"),
                 ("path", "no/such")),
            case("load: missing file", _load_missing, ("no-such-file.npz",))]


def _load_missing():
    from ibp_lab.inference.streaming import RecursiveIBP
    return RecursiveIBP.load("no-such-file.npz")


def _zip_bytes(members):
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, payload in members.items():
            z.writestr(name, payload)
    return buffer.getvalue()


def _pickled_npz():
    import io
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array([{"x": 1}], dtype=object))
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------
# specs: plotting and widgets (a figure must also draw: errors in text surface then)
# ---------------------------------------------------------------------------------------


def _draws_ok(result):
    fig = getattr(result, "figure", None) or result
    if isinstance(result, tuple):
        fig = getattr(result[0], "figure", None) or result[0]
    if not hasattr(fig, "canvas"):
        return None
    fig.set_dpi(20)
    fig.canvas.draw()
    return None


_MARKUP = "</script><script>alert(1)</script>"


def _html_safe(explorer):
    page = explorer._repr_html_()
    if _MARKUP in page or "<script>alert" in page:
        return "markup from a title or grid value reached the HTML unescaped"
    return None


def _tiny_render(**params):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(str(list(params.values()))[:20])
    return fig


def specs_plotting():
    import matplotlib.pyplot as plt
    import xarray as xr

    from ibp_lab.teaching import explorers
    from ibp_lab.teaching import plotting as m
    from ibp_lab.evaluation.summaries import match_features

    step = explorers.recursion_step(alpha=3.0, beta=2.0, n=4)
    images = np.eye(4)
    trace = xr.Dataset({v: ("draw", np.ones(5)) for v in ["k_plus", "sigma_x", "sigma_a", "alpha"]})
    A = np.eye(2, 4)
    Z = np.array([[1, 0], [1, 1], [0, 1]])
    mapping = lambda b: [("None", None, R), ("str", "x", R), ("empty", {}, R),
                         ("nan values", {k: np.asarray(v, float) * np.nan for k, v in b.items()}, R),
                         ("markup key", {_MARKUP: v for v in b.values()}, E)]
    draw = _draws_ok
    return [
        Spec("plotting.plot_binary_matrix", m.plot_binary_matrix, dict(Z=Z, ax=None, left_order=True, title="t"),
             dict(Z="binary", left_order="flag", title="text"), draw),
        Spec("plotting.image_grid_figure", m.image_grid_figure,
             dict(images=images, shape=(2, 2), ncols=2, labels=None, diverging=False, scale=None, size=1.0,
                  title=None),
             dict(images="matrix", shape="shape", ncols=C, diverging="flag", scale=P, size=P, title="text",
                  labels=lambda b: [("too few", ["a"], R), ("markup", [_MARKUP] * 4, E), ("str", "abcd", E)]),
             draw, extremes=[("shape does not fit", dict(shape=(3, 3)), R), ("size 1e6", dict(size=1e6), E)]),
        Spec("plotting.plot_counts_vs_poisson", m.plot_counts_vs_poisson,
             dict(counts=[1, 2, 2, 3], mean=2.0, ax=None, color="#0072B2", label=""),
             # Poisson(0) is a law (all mass at 0): the mean may be zero
             dict(counts="vector", mean="nonneg", color=lambda b: [("nonsense", "nonsense", R), ("None", None, E)],
                  label="text"), draw,
             extremes=[("mean 1e6", dict(mean=1e6), E), ("counts 1e12", dict(counts=[10**12]), E),
                       ("negative counts", dict(counts=[-1, 2]), R), ("fractional counts", dict(counts=[1.5]), R)]),
        # the explorers' figures take a result of ibp_lab.teaching.explorers, and refuse anything else
        Spec("plotting.buffet_explorer_figure", m.buffet_explorer_figure,
             dict(draws=explorers.buffet(alpha=2.0, beta=1.0, n=5, n_draws=5)),
             dict(draws=_result_junk(step)), draw),
        Spec("plotting.marginals_figure", m.marginals_figure,
             dict(result=explorers.marginals_table(alpha=2.0, beta=1.0, n=5, k_max=8)),
             dict(result=_result_junk(step)), draw),
        Spec("plotting.recursion_step_figure", m.recursion_step_figure, dict(step=step),
             dict(step=_result_junk(explorers.marginals_table(alpha=2.0, beta=1.0, n=5, k_max=8))), draw),
        Spec("plotting.sigma_alpha_explorer_figure", m.sigma_alpha_explorer_figure,
             dict(run=explorers.sigma_alpha_chain(sigma_x=0.3, alpha=1.0, n_sweeps=1)),
             dict(run=_result_junk(step)), draw, time_limit=30),
        Spec("plotting.plot_feature_mosaic", m.plot_feature_mosaic,
             dict(images=np.eye(3, 4), shape=(2, 2), ax=None, ncols=2, scale=None, gap=1),
             dict(images="matrix", shape="shape", ncols=C, scale=P, gap=C), draw,
             extremes=[("gap 1e9", dict(gap=10**9), E), ("ncols 1e9", dict(ncols=10**9), E)]),
        Spec("plotting.k_plus_check_figure", m.k_plus_check_figure,
             dict(p_exact=[0.2, 0.5, 0.3], frequencies={"run": np.array([0.21, 0.49, 0.3])},
                  standard_errors=None, k_show=None),
             dict(p_exact="vector", frequencies=mapping), draw,
             extremes=[("k_show -1", dict(k_show=-1), R), ("k_show 1e9", dict(k_show=10**9), E),
                       ("p_exact negative", dict(p_exact=[-0.2, 0.9, 0.3]), R)]),
        Spec("plotting.free_fit_figure", m.free_fit_figure, dict(trace=trace),
             dict(trace=lambda b: [("None", None, R), ("missing variable", b.drop_vars("alpha"), R),
                                   ("empty", b.isel(draw=slice(0, 0)), E), ("str", "trace", R),
                                   ("nan", b * np.nan, E), ("huge", b * 1e300, E)]), draw),
        Spec("plotting.sensitivity_figure", m.sensitivity_figure,
             dict(by_sigma_x={0.2: np.array([5, 6])}, by_alpha={1.0: np.array([4, 4])}, n_rows=None),
             dict(by_sigma_x=mapping, by_alpha=mapping), draw, extremes=[("n_rows -1", dict(n_rows=-1), R)]),
        Spec("plotting.recovery_figure", m.recovery_figure,
             dict(A_true=A, A_found=A[::-1], match=match_features(A, A[::-1]), shape=(2, 2)),
             dict(A_true="matrix", A_found="matrix", shape="shape",
                  match=lambda b: [("None", None, R), ("str", "m", R)]), draw),
        Spec("plotting.chain_traces_figure", m.chain_traces_figure, dict(chains=chains(), labels=["a", "b"]),
             dict(chains=_chains_junk, labels=lambda b: [("too few", ["a"], R), ("markup", [_MARKUP, "b"], E),
                                                         ("str", "ab", R)]), draw),
        Spec("plotting.co_ownership_figure", m.co_ownership_figure,
             dict(matrices={"a": np.eye(4)}, labels=[1, 0, 1, 0], vmax=None),
             dict(matrices=mapping, labels=lambda b: [("too short", [1], R), ("None", None, R)], vmax=P), draw),
        Spec("plotting.feature_owners_figure", m.feature_owners_figure,
             dict(A=A, Z=Z, labels=[0, 0, 1], shape=(2, 2), scale=None, ncols=10, min_share=0.3),
             dict(A="matrix", Z="binary", labels=lambda b: [("too short", [0], R), ("None", None, R)],
                  shape="shape", scale=P, ncols=C, min_share="probability"), draw),
        Spec("plotting.reappearance_figure", m.reappearance_figure,
             dict(rates=np.array([[1.0, 0.5]]), chain_labels=["a"], threshold=0.9),
             dict(rates="matrix", chain_labels=lambda b: [("too many", ["a", "b"], R), ("None", None, R)],
                  threshold="real"), draw,
             extremes=[("rates above 1", dict(rates=np.array([[2.0, 0.5]])), R)]),
    ]


def _result_junk(other):
    """Junk for a result of ibp_lab.teaching.explorers: nothing else, not even another explorer's result."""
    return lambda b: [("None", None, R), ("float", 2.0, R), ("dict", vars(b), R),
                      ("another explorer's result", other, R)]


def specs_explorers():
    from ibp_lab.teaching import explorers as m

    few = lambda kind: lambda b: [m_ for m_ in MUTATIONS[kind](b)
                                  if m_[0] in ("nan", "negative", "zero", "str", "huge")]
    return [
        Spec("explorers.buffet", m.buffet, dict(alpha=2.0, beta=1.0, n=5, n_draws=5, seed=0),
             dict(alpha=P, beta=P, n=C, n_draws=C, seed=C), _buffet_ok, time_limit=20,
             extremes=[("alpha 1e3", dict(alpha=1e3), E),
                       ("n x n_draws too many", dict(n=10**4, n_draws=10**3), R)]),
        Spec("explorers.marginals_table", m.marginals_table, dict(alpha=2.0, beta=1.0, n=5, k_max=8),
             dict(alpha=P, beta=P, n=C, k_max=C), lambda r: in_unit_interval(r.table),
             extremes=[("k_max None alpha 1e4", dict(k_max=None, alpha=1e4), E)]),
        Spec("explorers.recursion_step", m.recursion_step, dict(alpha=3.0, beta=2.0, n=4, k_max=None),
             dict(alpha=P, beta=P, n=C), lambda r: in_unit_interval(r.existing + r.created),
             extremes=[("alpha 1e4", dict(alpha=1e4), E), ("k_max -1", dict(k_max=-1), R),
                       ("n 1", dict(n=1), R)]),
        Spec("explorers.sigma_alpha_chain", m.sigma_alpha_chain, dict(sigma_x=0.3, alpha=1.0, n_sweeps=1, seed=0),
             dict(sigma_x=few("positive"), alpha=few("positive"),
                  n_sweeps=lambda b: [m_ for m_ in _count(b) if m_[0] in ("negative", "float", "huge", "bool")],
                  seed=lambda b: [("negative", -1, R), ("str", "0", R), ("float", 0.5, R)]),
             lambda r: None if r.k_plus.shape == (r.n_sweeps,) else "one K+ per sweep", time_limit=30),
    ]


def _exercise_ok(result):
    from ibp_lab.teaching.exercises import ExerciseResult

    if not isinstance(result, ExerciseResult) or not isinstance(result.passed, bool):
        return f"not an ExerciseResult with a bool passed: {result!r:.100}"
    return None if result.verdict else "an empty verdict"


def _not_written(*args, **kwargs):
    raise NotImplementedError


def _student_function(base):
    """Junk for a student's function: non-callables are refused, any callable is judged."""
    return [("None", None, R), ("str", "f", R), ("int", 3, R), ("array", np.zeros(3), R),
            ("not written", _not_written, A), ("returns None", lambda *a, **k: None, A),
            ("class", dict, A)]


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def _raise_unprintable(*args, **kwargs):
    raise _Unprintable


def _never_return(*args, **kwargs):
    while True:
        try:
            time.sleep(0.05)
        except Exception:  # noqa: BLE001
            pass


def _student_extremes(arg):
    """Student functions that once crashed or hung a checker (third audit): each must get
    a verdict (A), not an exception or a hang."""
    return [("returns a huge int", {arg: lambda *a, **k: 10**400}, A),
            ("raises an unprintable error", {arg: _raise_unprintable}, A),
            ("never returns, 1 s limit", {arg: _never_return, "time_limit": 1.0}, A)]



def _birth_step_edges():
    """Student birth steps that return edge values (issue 48): each gets a verdict in words
    from the checker's basics test (A), not an exception from deep inside the sweep."""
    def nan_images(residual, own, rate, sigma_x, sigma_a, rng):
        return np.full((1, np.shape(residual)[-1]), np.nan)

    def wider(residual, own, rate, sigma_x, sigma_a, rng):
        return np.zeros((1, np.shape(residual)[-1] + 1))

    def three_d(residual, own, rate, sigma_x, sigma_a, rng):
        return np.zeros((1, 1, np.shape(residual)[-1]))

    def huge(residual, own, rate, sigma_x, sigma_a, rng):
        return np.full((1, np.shape(residual)[-1]), 1e300)

    def strings(residual, own, rate, sigma_x, sigma_a, rng):
        return np.full((1, np.shape(residual)[-1]), "a")

    def mutates(residual, own, rate, sigma_x, sigma_a, rng):
        residual[...] = 0.0
        return np.asarray(own)

    return [(f"step returns {label}", dict(step=fn), A) for label, fn in (
        ("NaN images", nan_images), ("one column too many", wider), ("a 3-D array", three_d),
        ("images 1e300", huge), ("strings", strings), ("after zeroing its residual", mutates))]


def specs_exercises():
    from ibp_lab.teaching import exercises as m
    from ibp_lab.inference import gibbs
    from ibp_lab.models import prior

    fn = _student_function
    return [
        Spec("exercises.check_gibbs_sweep", m.check_gibbs_sweep,
             dict(sweep=gibbs.gibbs_sweep, rng=fresh_rng(), n_sweeps=2_000, n_one_row=500),
             dict(sweep=fn, rng="optional_rng", n_sweeps=C, n_one_row=C, time_limit=P),
             _exercise_ok, time_limit=60, extremes=_student_extremes("sweep")),
        Spec("exercises.check_class_probability", m.check_class_probability,
             dict(fn=prior.log_prior), dict(fn=fn, time_limit=P), _exercise_ok, time_limit=30,
             extremes=_student_extremes("fn")),
        Spec("exercises.check_recursive_step", m.check_recursive_step,
             dict(step=_not_written), dict(step=fn, time_limit=P), _exercise_ok,
             extremes=_student_extremes("step")),
        Spec("exercises.check_split_merge_ratio", m.check_split_merge_ratio,
             dict(fn=_not_written), dict(fn=fn, time_limit=P), _exercise_ok, time_limit=30,
             extremes=_student_extremes("fn")),
        Spec("exercises.check_birth_step", m.check_birth_step,
             dict(step=_not_written, rng=fresh_rng(), n_sweeps=2_000, n_one_row=500),
             dict(step=fn, rng="optional_rng", n_sweeps=C, n_one_row=C, time_limit=P),
             _exercise_ok, time_limit=60, extremes=_student_extremes("step")
             + _birth_step_edges()),
        Spec("exercises.check_ais", m.check_ais,
             dict(fn=_not_written), dict(fn=fn, time_limit=P), _exercise_ok, time_limit=30,
             extremes=_student_extremes("fn")),
        Spec("exercises.check_smc_weight", m.check_smc_weight,
             dict(weight=_not_written), dict(weight=fn, time_limit=P), _exercise_ok,
             time_limit=30, extremes=_student_extremes("weight")),
        Spec("exercises.check_noisy_or_link", m.check_noisy_or_link,
             dict(update=_not_written), dict(update=fn, time_limit=P), _exercise_ok,
             time_limit=30, extremes=_student_extremes("update")),
        Spec("exercises.check_stick_update", m.check_stick_update,
             dict(update=_not_written), dict(update=fn, time_limit=P), _exercise_ok,
             time_limit=30, extremes=_student_extremes("update")),
        Spec("exercises.check_slice_conditional", m.check_slice_conditional,
             dict(log_odds=_not_written), dict(log_odds=fn, time_limit=P), _exercise_ok,
             time_limit=30, extremes=_student_extremes("log_odds")),
    ]


def _buffet_ok(draws):
    return first_problem(is_binary(draws.Z, rows=draws.n),
                         None if draws.k_plus.shape == (draws.n_draws,) else "one K+ per draw")


def specs_widgets():
    import matplotlib.pyplot as plt

    from ibp_lab.teaching import widgets as m

    explorer = m.static_explorer(_tiny_render, {"a": [1, 2]}, dpi=10)
    shown = m.explorer(_tiny_render, {"a": [1, 2]}, initial={"a": 1}, dpi=10, prefetch=False)
    grid_junk = lambda b: [("None", None, R), ("str", "grid", R), ("empty", {}, R), ("empty values", {"a": []}, R),
                           ("markup value", {"a": [_MARKUP, "x"]}, E), ("markup key", {_MARKUP: [1, 2]}, E),
                           ("nan value", {"a": [np.nan, 1.0]}, E), ("int key", {3: [1, 2]}, R),
                           ("huge grid", {"a": list(range(10**4)), "b": list(range(10**4))}, R),
                           ("unhashable values", {"a": [[1], [2]]}, E)]
    return [
        Spec("widgets.static_explorer", m.static_explorer,
             dict(render=_tiny_render, grid={"a": [1, 2]}, title="Explorer", initial=None, dpi=10),
             dict(render=lambda b: [("None", None, R), ("str", "render", R),
                                    ("returns None", lambda **p: None, R)],
                  grid=grid_junk, title="text", dpi=C), _html_safe, time_limit=20,
             extremes=[("initial off the grid", dict(initial=(7,)), R), ("initial str", dict(initial="a"), R),
                       ("dpi 1e5", dict(dpi=10**5), E)]),
        Spec("widgets.live_explorer", m.live_explorer, dict(render=_tiny_render, grid={"a": [1, 2]}, initial=None),
             dict(render=lambda b: [("None", None, R), ("str", "render", R)], grid=grid_junk), time_limit=20,
             extremes=[("initial off the grid", dict(initial=(7,)), R)]),
        Spec("widgets.figure_png", m.figure_png, dict(fig=plt.figure(figsize=(1, 1)), dpi=10),
             dict(fig=lambda b: [("None", None, R), ("str", "fig", R), ("axes", b.subplots(), E)], dpi=C),
             lambda png: None if png[:4] == b"\x89PNG" else "not a PNG", extremes=[("dpi 1e6", dict(dpi=10**6), E)]),
        Spec("widgets.StaticExplorer.frame_at", lambda **p: explorer.frame_at(**p), dict(a=1), {},
             junk=[("off the grid", lambda: explorer.frame_at(a=7), ("a",), R),
                   ("missing", lambda: explorer.frame_at(), ("a",), R),
                   ("unknown", lambda: explorer.frame_at(a=1, b=2), ("b",), R)]),
        Spec("widgets.refine_grid", m.refine_grid, dict(grid={"a": [1.0, 2.0], "k": ["x", "y"]}),
             dict(grid=grid_junk),
             lambda g: None if isinstance(g, dict) and g and all(
                 isinstance(v, list) and v for v in g.values()) else f"not a grid: {g!r}"),
        Spec("widgets.explorer", m.explorer,
             dict(render=_tiny_render, grid={"a": [1, 2]}, initial={"a": 1}, title="Explorer",
                  live_grid=None, dpi=10, prefetch=False),
             dict(render=lambda b: [("None", None, R), ("str", "render", R)], grid=grid_junk,
                  title="text", dpi=C, prefetch="flag",
                  initial=lambda b: [("None (the middle)", None, A), ("off the grid", {"a": 7}, R),
                                     ("unknown name", {"b": 1}, R), ("str", "a", R)],
                  live_grid=lambda b: [("other names", {"b": [1, 2]}, R),
                                       ("without initial", {"a": [2, 3]}, R), ("str", "g", R)]),
             time_limit=20),
        Spec("widgets.Explorer.first_png", lambda: shown.first_png(), {}, {},
             lambda png: None if png[:4] == b"\x89PNG" else "not a PNG", time_limit=20),
        Spec("widgets.Explorer.live", lambda: shown.live(), {}, {}, time_limit=20),
    ]


# ---------------------------------------------------------------------------------------
# specs: the figure functions of the plotting submodules (not re-exported by the package)
# ---------------------------------------------------------------------------------------


def _figure_drawn(result):
    """A matplotlib Figure (or the Axes of one) came back, and it draws."""
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    fig = result.figure if isinstance(result, Axes) else result
    if not isinstance(fig, Figure):
        return f"not a matplotlib Figure: {type(result).__name__}"
    fig.set_dpi(20)
    fig.canvas.draw()
    return None


def _mapping_junk(good_value):
    """Junk for a dict of names -> something, given one valid value."""
    def mutations(base):
        return [("None", None, R), ("str", "x", R), ("empty", {}, R), ("list", [good_value], R),
                ("int key", {3: good_value}, R), ("None value", {"a": None}, R),
                ("str value", {"a": "x"}, R), ("markup key", {_MARKUP: good_value}, E)]
    return mutations


def _seq_of_str_junk(n):
    """Junk for a list of ``n`` strings (labels)."""
    def mutations(base):
        return [("too few", ["a"] * (n - 1), R), ("too many", ["a"] * (n + 1), R), ("str", "a" * n, R),
                ("ints", list(range(n)), R), ("markup", [_MARKUP] * n, E)]
    return mutations


def _axes_junk(base):
    """Junk for an optional matplotlib Axes."""
    from matplotlib.figure import Figure

    return [("str", "ax", R), ("int", 3, R), ("figure", Figure(), R), ("list", [1], R)]


def _optional_probability(base):
    return _probability(base) + [("None", None, A)]


def specs_plotting_submodules():
    import arviz as az
    import matplotlib
    import xarray as xr
    from matplotlib.figure import Figure

    from ibp_lab.teaching.plotting import heldout, pymc, recursive, split_merge, streaming
    from ibp_lab.evaluation.predictive_checks import ink_statistics
    from ibp_lab.models.recursive import marginals
    from ibp_lab.inference.chains import ChainResult
    from ibp_lab.inference.streaming import StreamCost

    matplotlib.use("Agg")
    rng = np.random.default_rng(0)
    draw = _figure_drawn

    def new_ax():
        return Figure(figsize=(2, 2)).subplots()

    # heldout
    real = ink_statistics(rng.random((1, 5, 4)))
    replicated = ink_statistics(rng.normal(size=(3, 5, 4)))
    stats_nan = {k: np.asarray(v, float) * np.nan for k, v in real.items()}
    stats_missing = {k: v for k, v in real.items() if k != "share_blank"}
    stats_junk = lambda b: [("None", None, R), ("str", "x", R), ("empty", {}, R), ("missing key", stats_missing, R),
                            ("nan values", stats_nan, R), ("list", [1.0], R),
                            ("str values", {k: "x" for k in b}, R)]
    X_raw = rng.random((2, 4))

    # pymc
    lp = -np.arange(20.0).reshape(2, 10)
    idata_lp = az.from_dict(sample_stats={"lp": lp})
    idata_nan = az.from_dict(sample_stats={"lp": lp * np.nan})
    idata_pi_only = az.from_dict(posterior={"pi": np.full((2, 3, 2), 0.5)}, dims={"pi": ["feature"]})
    pi = np.sort(rng.random((2, 30, 3)), axis=-1)[..., ::-1]
    idata_pi = az.from_dict(posterior={"pi": pi}, dims={"pi": ["feature"]})
    pi_nan, pi_big = pi.copy(), pi.copy()
    pi_nan[0, 0, 0], pi_big[0, 0, 0] = np.nan, 2.0
    idata_junk = lambda b: [
        ("None", None, R), ("str", "idata", R), ("array", pi, R), ("no pi", idata_lp, R),
        ("nan pi", az.from_dict(posterior={"pi": pi_nan}, dims={"pi": ["feature"]}), R),
        ("pi above 1", az.from_dict(posterior={"pi": pi_big}, dims={"pi": ["feature"]}), R),
        ("pi without feature", az.from_dict(posterior={"pi": pi[..., 0]}), R),
        ("no features", az.from_dict(posterior={"pi": pi[..., :0]}, dims={"pi": ["feature"]}), R),
        ("one draw", az.from_dict(posterior={"pi": pi[:1, :1]}, dims={"pi": ["feature"]}), E)]
    runs_junk = lambda b: _mapping_junk(idata_lp)(b) + [
        ("no lp", {"a": idata_pi}, R), ("nan lp", {"a": idata_nan}, R),
        ("many runs", {str(i): idata_lp for i in range(1500)}, R)]

    # split_merge
    sm_stats = {"kind": np.array(["split", "merge", "split"]), "log_ratio": np.array([-50.0, -3.0, -np.inf])}
    stats_by_move_junk = lambda b: _mapping_junk(sm_stats)(b) + [
        ("missing log_ratio", {"a": {"kind": sm_stats["kind"]}}, R),
        ("lengths differ", {"a": {"kind": sm_stats["kind"], "log_ratio": np.zeros(2)}}, R),
        ("nan ratio", {"a": {**sm_stats, "log_ratio": np.array([np.nan, 0.0, 1.0])}}, R),
        ("complex ratio", {"a": {**sm_stats, "log_ratio": sm_stats["log_ratio"] + 1j}}, R),
        ("empty stats", {"a": {"kind": np.array([], "<U5"), "log_ratio": np.array([])}}, E),
        ("many moves", {str(i): sm_stats for i in range(1500)}, R)]

    def move_chains(values=None, seconds=(1.0, 2.0), n_draws=5, n_seconds=None):
        """Two ChainResults as run_chains makes them; ``seconds`` are each chain's total."""
        values = np.arange(2.0 * n_draws).reshape(2, n_draws) if values is None else values
        n_seconds = n_draws if n_seconds is None else n_seconds
        return [ChainResult(
            trace=xr.Dataset({"k_plus": ("draw", v), "log_joint": ("draw", -v)}),
            samples=[], sample_draws=np.zeros(0, np.int64), Z=np.ones((3, 1)), alpha=1.0,
            sigma_x=1.0, sigma_a=1.0,
            sample_stats=xr.Dataset({"seconds": ("time", np.linspace(total / max(n_seconds, 1), total, n_seconds)),
                                     "accepted_moves": ("time", np.zeros(n_seconds, np.int64))}))
            for v, total in zip(values, seconds)]

    run = move_chains()
    nan_values = np.arange(10.0).reshape(2, 5)
    nan_values[0, 0] = np.nan
    traces_runs_junk = lambda b: _mapping_junk(run)(b) + [
        ("nan trace", {"a": move_chains(nan_values)}, R),
        ("missing seconds", {"a": move_chains(n_seconds=4)}, R),
        ("negative seconds", {"a": move_chains(seconds=(-1.0, 1.0))}, R),
        ("no draws", {"a": move_chains(np.zeros((2, 0)), n_draws=0)}, R),
        ("many runs", {str(i): run for i in range(1500)}, R)]

    # streaming
    cost = StreamCost(np.array([10, 100]), np.array([1e-4, 1.2e-4]), np.array([800, 1200]),
                      np.array([5000, 6000]), np.array([3, 5]), np.array([3.0, 5.0]))
    cost_junk = lambda b: [
        ("None", None, R), ("str", "cost", R), ("tuple", (1, 2), R), ("dict", {}, R),
        ("nan", b._replace(seconds_per_obs=np.array([np.nan, 1e-4])), R),
        ("lengths differ", b._replace(n=np.array([10])), R),
        ("zero n", b._replace(n=np.array([0, 100])), R),
        ("negative bytes", b._replace(state_bytes=np.array([-1, 2])), R),
        ("complex", b._replace(peak_bytes=b.peak_bytes + 1j), R),
        ("no checkpoints", StreamCost(*(np.array([]) for _ in range(6))), E),
        ("strings", b._replace(n_slots=np.array(["3", "5"])), R)]
    time_fit_junk = lambda b: [("nan", (np.nan, 1.0), R), ("one number", (1.0,), R), ("str", "ab", R),
                               ("complex", (1j, 1.0), R), ("inf", (1.0, np.inf), R), ("None", None, A),
                               ("array", np.array([50.0, 10.0]), A)]

    # recursive
    table = marginals(2.0, 1.0, 5, 6)
    bad_table = table.copy()
    bad_table[0, 0] = np.nan
    results = {(2.0, 1.0): (table, table)}
    results_junk = lambda b: [
        ("None", None, R), ("str", "r", R), ("empty", {}, R), ("list", [(table, table)], R),
        ("missing pair", {(3.0, 1.0): (table, table)}, R), ("one table", {(2.0, 1.0): table}, R),
        ("shapes differ", {(2.0, 1.0): (table, table[:, :3])}, R),
        ("nan table", {(2.0, 1.0): (table, bad_table)}, R),
        ("above 1", {(2.0, 1.0): (table, table + 1.0)}, R),
        ("1-D table", {(2.0, 1.0): (table[0], table[0])}, R),
        ("str tables", {(2.0, 1.0): ("a", "b")}, R)]
    grid_junk = lambda b: [("None", None, R), ("str", "2", R), ("empty", [], R), ("nan", [np.nan], R),
                           ("complex", [2.0 + 0j], R), ("not in results", [3.0], R),
                           ("numpy", np.asarray(b), A), ("many", list(np.arange(1.0, 1500.0)), R)]
    optional_count = lambda b: [("negative", -1, R), ("float", 2.5, R), ("str", "3", R), ("bool", True, R),
                                ("int", 100, A), ("np.int64", np.int64(100), A), ("nan", float("nan"), R)]
    errors = {(2.0, 1.0): (np.array([0.01, 0.001]), 0.1), (4.0, 1.0): (np.array([0.02, 0.002]), 0.2)}
    errors_junk = lambda b: [
        ("None", None, R), ("str", "e", R), ("empty", {}, R), ("list", [1], R),
        ("key not a pair", {2.0: (np.array([0.01, 0.001]), 0.1)}, R),
        ("str key", {"a": (np.array([0.01, 0.001]), 0.1)}, R),
        ("value not a pair", {(2.0, 1.0): np.array([0.01, 0.001])}, R),
        ("mse too short", {(2.0, 1.0): (np.array([0.01]), 0.1)}, R),
        ("nan mse", {(2.0, 1.0): (np.array([np.nan, 0.001]), 0.1)}, R),
        ("negative mse", {(2.0, 1.0): (np.array([-0.01, 0.001]), 0.1)}, R),
        ("nan variance", {(2.0, 1.0): (np.array([0.01, 0.001]), np.nan)}, R),
        ("negative variance", {(2.0, 1.0): (np.array([0.01, 0.001]), -1.0)}, R),
        ("str variance", {(2.0, 1.0): (np.array([0.01, 0.001]), "0.1")}, R),
        ("complex mse", {(2.0, 1.0): (np.array([0.01, 0.001]) + 1j, 0.1)}, R),
        ("zero mse", {(2.0, 1.0): (np.array([0.0, 0.001]), 0.1)}, E),
        ("many curves", {(float(i), 1.0): (np.array([0.01, 0.001]), 0.1) for i in range(1, 1500)}, E)]
    sizes_junk = lambda b: _vector(b) + [("zero", [0, 100], R), ("negative", [-10, 100], R),
                                          ("fractional", [10.5, 100], R)]
    bytes_junk = lambda b: _vector(b) + [("zero", [0, 200], R), ("negative", [-100, 200], R),
                                          ("length differs", [100], R)]

    return [
        # heldout
        Spec("plotting.heldout.ink_check_figure", heldout.ink_check_figure,
             dict(real=real, replicated=replicated, ink_real=rng.random((5, 4)),
                  ink_replicated=rng.normal(size=(3, 5, 4))),
             dict(real=stats_junk, replicated=stats_junk,
                  ink_real=lambda b: [m_ for m_ in _stack(b) if m_[0] not in ("one row", "1-D row")],
                  ink_replicated=lambda b: [m_ for m_ in _stack(b[0]) if m_[0] not in ("one row", "1-D row")]),
             draw, extremes=[("no raw ink", dict(ink_real=None, ink_replicated=None), A),
                             ("ink_real alone", dict(ink_replicated=None), R),
                             ("ink_replicated alone", dict(ink_real=None), R)]),
        Spec("plotting.heldout.completion_figure", heldout.completion_figure,
             dict(X_raw=X_raw, predictions={"m": np.ones((2, 2))}, observed=[0, 1], hidden=[2, 3], shape=(2, 2),
                  offset=None),
             dict(X_raw="matrix", observed=_indices(4), hidden=_indices(4), shape="shape",
                  predictions=lambda b: _mapping_junk(np.ones((2, 2)))(b) + [
                      ("wrong shape", {"m": np.ones((2, 3))}, R), ("nan", {"m": np.full((2, 2), np.nan)}, R),
                      ("complex", {"m": np.ones((2, 2)) + 1j}, R),
                      ("many models", {str(i): np.ones((2, 2)) for i in range(600)}, R)],
                  offset=lambda b: _vector(np.zeros(4)) + [("too short", np.zeros(3), R)]),
             draw, extremes=[("many digits", dict(X_raw=rng.random((1500, 4)),
                                                  predictions={"m": np.ones((1500, 2))}), R),
                             ("overlap", dict(observed=[0, 1, 2], hidden=[2, 3]), E),
                             ("offset", dict(offset=np.full(4, 0.1)), A)]),
        # pymc
        Spec("plotting.pymc.log_density_figure", pymc.log_density_figure,
             dict(runs={"run": idata_lp}, lower_quantile=0.01),
             dict(runs=runs_junk, lower_quantile="probability"), draw),
        Spec("plotting.pymc.stick_posterior_figure", pymc.stick_posterior_figure,
             dict(idata=idata_pi, threshold=0.01),
             dict(idata=idata_junk, threshold=_optional_probability), draw,
             extremes=[("pi constant", dict(idata=idata_pi_only), A)]),
        Spec("plotting.pymc.feature_usage_figure", pymc.feature_usage_figure,
             dict(probabilities=np.full((4, 2), 0.5), labels=[0, 0, 1, 1], feature_names=None),
             dict(probabilities="matrix",
                  labels=lambda b: [("too short", [0], R), ("None", None, R), ("nan", [0, 0, 1, np.nan], R),
                                    ("str", "0011", R), ("strings", ["a", "a", "b", "b"], A),
                                    ("2-D", [[0, 0, 1, 1]], R)],
                  feature_names=_seq_of_str_junk(2)), draw,
             extremes=[("above 1", dict(probabilities=np.full((4, 2), 1.5)), R),
                       ("negative", dict(probabilities=np.full((4, 2), -0.5)), R),
                       ("many features", dict(probabilities=np.full((4, 10**5), 0.5)), E)]),
        Spec("plotting.pymc.gradient_cost_figure", pymc.gradient_cost_figure,
             dict(n_features=[2, 4], seconds=[1e-4, 4e-4], reference=None),
             dict(n_features=lambda b: _vector(b) + [("fractional", [2.5, 4], R), ("negative", [-2, 4], R),
                                                     ("length differs", [2, 4, 6], R)],
                  seconds=lambda b: _vector(b) + [("negative", [-1e-4, 4e-4], R), ("zero", [0.0, 4e-4], R),
                                                  ("length differs", [1e-4], R)],
                  reference=lambda b: [("not timed", 3, R), ("str", "2", R), ("float", 2.5, R),
                                       ("bool", True, R), ("timed", 2, A), ("np.int64", np.int64(4), A)]),
             draw, extremes=[("far apart", dict(n_features=[1, 1000], seconds=[1e-4, 1.0]), E)]),
        # split_merge
        Spec("plotting.split_merge.log_ratios_figure", split_merge.log_ratios_figure,
             dict(stats_by_move={"random": sm_stats}, floor=-2000.0),
             dict(stats_by_move=stats_by_move_junk,
                  floor=lambda b: _real(b) + [("zero", 0.0, R), ("positive", 5.0, R), ("-1", -1.0, A),
                                              ("-1e300", -1e300, E)]), draw),
        Spec("plotting.split_merge.plot_k_plus_check", split_merge.plot_k_plus_check,
             dict(frequencies=[0.2, 0.5, 0.3], p_exact=[0.25, 0.45, 0.3], ax=None, label="sampler"),
             dict(frequencies=lambda b: _vector(b) + [("too short", [0.2], R), ("above 1", [2.0, 0.5, 0.3], R),
                                                      ("longer", [0.2, 0.5, 0.2, 0.1], A)],
                  p_exact=lambda b: _vector(b) + [("negative", [-0.25, 0.45, 0.3], R)],
                  ax=_axes_junk, label="text"), draw,
             extremes=[("an Axes", dict(ax=new_ax()), A)]),
        Spec("plotting.split_merge.traces_by_time_figure", split_merge.traces_by_time_figure,
             dict(runs={"with the move": run}, variables=("k_plus", "log_joint"), labels=None, ylabels=None,
                  ylim_quantile=0.02),
             dict(runs=traces_runs_junk,
                  variables=lambda b: [("str", "k_plus", R), ("unknown", ["nope"], R), ("empty", [], R),
                                       ("None", None, R), ("ints", [1, 2], R), ("one", ["k_plus"], A),
                                       ("many", ["k_plus"] * 1500, R)],
                  labels=_seq_of_str_junk(2), ylabels=_seq_of_str_junk(2),
                  ylim_quantile=_optional_probability), draw,
             extremes=[("labels", dict(labels=["a", "b"], ylabels=["K+", "log joint"]), A)]),
        # streaming
        Spec("plotting.streaming.feature_count_figure", streaming.feature_count_figure,
             dict(histories={"run": [1.0, 2.0, 2.0]}, true_count=[1, 2, 2], log_x=False, title=None),
             dict(histories=lambda b: _mapping_junk([1.0, 2.0])(b) + [
                      ("nan", {"a": [np.nan, 1.0]}, R), ("complex", {"a": [1j]}, R),
                      ("2-D", {"a": np.ones((2, 2))}, R), ("empty values", {"a": []}, E),
                      ("many runs", {str(i): [1.0] for i in range(1500)}, R)],
                  true_count=lambda b: _vector(b) + [("None", None, A)], log_x="flag", title="text"), draw),
        Spec("plotting.streaming.next_prior_figure", streaming.next_prior_figure,
             dict(dish=[1, 2, 3], prob=[0.5, 0.2, 0.01], n_kept=2, title=None),
             dict(dish=lambda b: _vector(b) + [("length differs", [1, 2], R)],
                  prob=lambda b: _vector(b) + [("above 1", [1.5, 0.2, 0.01], R), ("negative", [-0.5, 0.2, 0.01], R),
                                               ("all zero", [0.0, 0.0, 0.0], E)],
                  n_kept=lambda b: _count(b) + [("more than slots", 4, R)], title="text"), draw),
        Spec("plotting.streaming.matched_features_figure", streaming.matched_features_figure,
             dict(learned=np.eye(4), true=np.eye(4), shape=(2, 2), match=[0, 1, 2, 3], correlation=[1, 1, 1, 1]),
             dict(learned="matrix", true="matrix", shape="shape",
                  match=lambda b: [("out of range", [0, 1, 2, 4], R), ("below -1", [0, 1, 2, -2], R),
                                   ("float", [0.5, 1, 2, 3], R), ("str", "0123", R), ("None", None, R),
                                   ("too short", [0], R), ("2-D", [[0, 1, 2, 3]], R), ("complex", [0j, 1, 2, 3], R),
                                   ("unmatched", [0, 1, -1, 3], A)],
                  correlation=lambda b: _vector(b) + [("too short", [1.0], R), ("above 1", [2.0, 1, 1, 1], R)]),
             draw, extremes=[("many features", dict(true=np.zeros((1500, 4)), match=np.zeros(1500, int),
                                                    correlation=np.zeros(1500)), R)]),
        Spec("plotting.streaming.feature_grid_figure", streaming.feature_grid_figure,
             dict(features=np.eye(4), usage=[1.0, 5.0, 2.0, 0.5], shape=(2, 2), ncols=4, max_features=40,
                  title=None),
             dict(features="matrix", shape="shape", ncols=C, title="text",
                  usage=lambda b: _vector(b) + [("too short", [1.0], R), ("negative", [-1.0, 5, 2, 0.5], R)],
                  max_features=lambda b: _count(b) + [("one", 1, A)]), draw,
             extremes=[("many features", dict(features=np.zeros((3000, 4)), usage=np.ones(3000),
                                              max_features=3000), R),
                       ("ncols 1e9", dict(ncols=10**9), E)]),
        Spec("plotting.streaming.cost_figure", streaming.cost_figure, dict(cost=cost, time_fit=(50.0, 10.0)),
             dict(cost=cost_junk, time_fit=time_fit_junk), draw),
        # recursive
        Spec("plotting.recursive.comparison_grid_figure", recursive.comparison_grid_figure,
             dict(results=results, alphas=[2.0], betas=[1.0], n_samples=None),
             dict(results=results_junk, alphas=grid_junk, betas=grid_junk, n_samples=optional_count), draw),
        Spec("plotting.recursive.mse_figure", recursive.mse_figure,
             dict(sample_sizes=[10, 100], errors=errors, slope=None, slope_se=None),
             dict(sample_sizes=sizes_junk, errors=errors_junk, slope="real", slope_se="nonneg"), draw,
             extremes=[("slope given", dict(slope=-1.0, slope_se=0.01), A)]),
        Spec("plotting.recursive.memory_figure", recursive.memory_figure,
             dict(n_values=[10, 100], state_bytes=[100, 200], history_bytes=[140, 1800]),
             dict(n_values=sizes_junk, state_bytes=bytes_junk, history_bytes=bytes_junk), draw),
    ] + _beta_process_specs(draw) + _nonconjugate_figure_specs() + _paper_figure_specs()


def _beta_process_specs(draw):
    """Issue 16: the three-parameter prior, the beta process, its explorer and its figures."""
    from ibp_lab.models import beta_process as bp
    from ibp_lab.teaching import explorers
    from ibp_lab.models import prior
    from ibp_lab.teaching.plotting import beta_process as fig

    B = "real"  # beta > -discount: with discount > 0, zero and small negative betas are valid
    D = "nonneg"  # the discount: 0 <= d < 1 (huge values and subnormal ones must be refused)
    draws = explorers.discount_buffet(alpha=2.0, beta=1.0, discount=0.5, n=5, n_draws=3)
    other = explorers.recursion_step(alpha=3.0, beta=2.0, n=4)  # another explorer's result
    threshold_junk = lambda b: [("nan", float("nan"), R), ("negative", -1.0, R), ("str", "x", R),
                                ("above one", 1.5, R), ("small", 1e-3, A)]
    densities_junk = lambda b: [("None", None, R), ("empty", {}, R), ("str", "x", R),
                                ("wrong length", {"a": [1.0]}, R), ("negative", {"a": -np.ones(5)}, R),
                                ("nan", {"a": np.full(5, np.nan)}, R)]
    stable = [("discount 0.9", dict(discount=0.9), A), ("beta -0.2 discount 0.5", dict(beta=-0.2, discount=0.5), A),
              ("beta -0.5 discount 0.5", dict(beta=-0.5, discount=0.5), R)]
    sticks = lambda out: first_problem(is_binary(out[0]), in_unit_interval(out[1], "weights"))
    from ibp_lab.inference import hyperposterior as hp
    from ibp_lab.models.prior import sample_ibp

    words_Z = sample_ibp(2.0, 12, fresh_rng())
    curves = hp.predictive_curves(hp.sample_hyperparameters(words_Z, 5, fresh_rng()), 12,
                                  fresh_rng(), n_simulations=2)

    def _models_junk(base):
        return [("empty", {}, R), ("not a mapping", [curves], R), ("label int", {1: curves}, R),
                ("not curves", {"x": 3}, R), ("seven", {str(i): curves for i in range(7)}, R)]

    return [
        Spec("prior.expected_feature_popularity", prior.expected_feature_popularity,
             dict(alpha=2.0, n=5, beta=1.0, discount=0.3), dict(alpha=P, n=C, beta=B, discount=D),
             is_nonnegative, extremes=stable),
        Spec("prior.sample_two_parameter_stick_breaking", prior.sample_two_parameter_stick_breaking,
             dict(alpha=2.0, n=5, rng=fresh_rng(), beta=2.0, n_rounds=10, discount=0.3),
             dict(alpha=P, n=C, rng=G, beta=B, n_rounds=C, discount=D), sticks,
             extremes=[("beta 1e6", dict(beta=1e6, n_rounds=3), E),
                       ("no discount", dict(discount=0.0), A),
                       ("beta below -discount", dict(beta=-0.5), R),
                       ("many rounds", dict(n_rounds=10**4, alpha=50.0), R)]),
        Spec("prior.stick_rounds_needed", prior.stick_rounds_needed,
             dict(alpha=2.0, n=5, beta=2.0, tol=0.01, discount=0.3),
             dict(alpha=P, n=C, beta=B, tol=P, discount=D),
             lambda r: None if isinstance(r, int) and r >= 1 else f"not a count >= 1: {r!r}",
             extremes=[("tol out of reach", dict(tol=1e-9, discount=0.9), R)]),
        Spec("explorers.discount_buffet", explorers.discount_buffet,
             dict(alpha=2.0, beta=1.0, discount=0.5, n=5, n_draws=3),
             dict(alpha=P, beta=B, discount=D, n=C, n_draws=C), lambda r: is_binary(r.Z), time_limit=20,
             extremes=stable[:2] + [("alpha 1e3", dict(alpha=1e3), E)]),
        Spec("beta_process.levy_constant", bp.levy_constant, dict(alpha=2.0, beta=1.0, discount=0.3),
             dict(alpha=P, beta=B, discount=D), is_nonnegative, extremes=stable),
        Spec("beta_process.expected_atoms_above", bp.expected_atoms_above,
             dict(threshold=0.01, alpha=2.0, beta=1.0, discount=0.3),
             dict(threshold=P, alpha=P, beta=B, discount=D), is_nonnegative, extremes=stable),
        Spec("beta_process.expected_mass_below", bp.expected_mass_below,
             dict(threshold=0.01, alpha=2.0, beta=1.0, discount=0.3),
             dict(threshold=P, alpha=P, beta=B, discount=D), is_nonnegative, extremes=stable),
        Spec("beta_process.threshold_for_rows", bp.threshold_for_rows,
             dict(n=5, alpha=2.0, beta=1.0, discount=0.3, tol=1e-3),
             dict(n=C, alpha=P, beta=B, discount=D, tol=P),
             lambda t: None if 0 < t < 1 else f"not a threshold in (0, 1): {t!r}", extremes=stable),
        Spec("beta_process.sample_beta_process", bp.sample_beta_process,
             dict(threshold=0.01, rng=fresh_rng(), alpha=2.0, beta=1.0, discount=0.3),
             dict(threshold=P, rng=G, alpha=P, beta=B, discount=D),
             lambda atoms: in_unit_interval(atoms.weights, "weights"),
             extremes=stable + [("too many atoms", dict(threshold=1e-12, discount=0.9), R)]),
        Spec("beta_process.bernoulli_process_rows", bp.bernoulli_process_rows,
             dict(weights=[0.5, 0.1, 0.02], n=4, rng=fresh_rng()), dict(weights="vector", n=C, rng=G),
             is_binary),
        Spec("plotting.beta_process.plot_atom_weights", fig.plot_atom_weights,
             dict(weights=[0.5, 0.1, 0.02], threshold=0.01, label=""),
             dict(weights="vector", threshold=threshold_junk, label="text"), draw),
        Spec("plotting.beta_process.beta_process_figure", fig.beta_process_figure,
             dict(weights=[0.6, 0.2, 0.05], Z=np.array([[1, 0, 0], [1, 1, 0]], np.int8), threshold=None),
             dict(weights="vector", Z="binary", threshold=threshold_junk), draw),
        Spec("plotting.beta_process.plot_levy_densities", fig.plot_levy_densities,
             dict(pi=np.linspace(0.01, 0.99, 5), densities={"1 / pi": 1 / np.linspace(0.01, 0.99, 5)}),
             dict(pi="vector", densities=densities_junk), draw),
        Spec("plotting.beta_process.plot_feature_growth", fig.plot_feature_growth,
             dict(draws=draws, label=None), dict(draws=_result_junk(other), label="text"), draw),
        Spec("plotting.beta_process.plot_feature_popularity", fig.plot_feature_popularity,
             dict(draws=draws, label=None), dict(draws=_result_junk(other), label="text"), draw),
        Spec("plotting.beta_process.discount_explorer_figure", fig.discount_explorer_figure,
             dict(draws=draws), dict(draws=_result_junk(other)), draw),
        Spec("plotting.beta_process.heaps_zipf_figure", fig.heaps_zipf_figure,
             dict(Z=words_Z, models={"fitted": curves}), dict(Z="binary", models=_models_junk),
             draw, extremes=[("rows differ", dict(Z=words_Z[:-1]), R)]),
    ]


# ---------------------------------------------------------------------------------------
# the whole campaign
# ---------------------------------------------------------------------------------------

#: The spec groups. Each runs in its own process (tools/campaign.py --group), importing only
#: what it needs: forking a process that holds all of ibp_lab, PyMC and the test suite costs
#: about 0.13 s per case on this machine, a small one about 0.02 s.
def specs_theory():
    """Modules that compute exact answers for the text: finite model, scan-order laws."""
    from ibp_lab.models import finite
    from ibp_lab.inference import scan_order

    Z = np.array([[1, 1, 0], [1, 0, 1], [0, 0, 1]], np.int8)  # creation order, no empty column
    # classes of three rows as counts of the 7 column types (row t: types 111, 110, ..., 001)
    owners = np.array([3, 2, 2, 1, 2, 1, 1])
    counts = np.array([[0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0], [0, 2, 0, 1, 0, 0, 1],
                       [0, 0, 0, 0, 1, 1, 2]])
    X2 = np.array([[0.9, -0.2], [1.1, 0.1]])
    laws = scan_order.scan_order_laws(X2, alpha=1.0, sigma_x=0.5, sigma_a=1.0, k_max=4)
    return [
        Spec("finite.finite_log_class_probability", finite.finite_log_class_probability,
             dict(Z=Z, alpha=1.5, n_features=10, beta=1.0),
             dict(Z="binary", alpha=P, n_features=C, beta=P),
             lambda v: None if np.isfinite(v) and v <= 0 else f"not a log probability: {v!r}",
             extremes=[("fewer columns than K+", dict(n_features=2), R),
                       ("n_features huge", dict(n_features=10**12), E),
                       ("alpha 1e-100", dict(alpha=1e-100), E)]),
        Spec("finite.log_class_probabilities", finite.log_class_probabilities,
             dict(counts=counts, owners=owners, n_rows=3, alpha=1.5, n_features=4, beta=1.0),
             dict(counts="matrix", owners="vector", n_rows=C, alpha=P, n_features=C, beta=P),
             lambda v: (None if v.shape == (len(v),) and np.all(np.isfinite(v)) and np.all(v <= 0)
                        else f"not log probabilities: {v!r}"),
             extremes=[("a class wider than n_features", dict(n_features=1), R),
                       ("owners beyond n_rows", dict(owners=owners + 3), R),
                       ("an owner of no row", dict(owners=0 * owners), R),
                       ("negative count", dict(counts=-counts), R),
                       ("fractional count", dict(counts=counts + 0.5), R),
                       ("count 2**60", dict(counts=counts * 2**60), R),
                       ("n_features huge", dict(n_features=10**12), E),
                       ("alpha 1e-100", dict(alpha=1e-100), E)]),
        Spec("finite.log_history_probability", finite.log_history_probability,
             dict(Z=Z, alpha=1.5, beta=1.0), dict(Z="binary", alpha=P, beta=P),
             lambda v: None if np.isfinite(v) and v <= 0 else f"not a log probability: {v!r}",
             extremes=[("not in creation order", dict(Z=Z[:, ::-1]), R),
                       ("empty column", dict(Z=np.array([[1, 0], [1, 0]], np.int8)), R)]),
        Spec("scan_order.scan_order_laws", scan_order.scan_order_laws,
             dict(X=X2, alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0, k_max=4),
             dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P, beta=P, k_max=C),
             lambda laws: first_problem(
                 is_distribution(laws.posterior), is_distribution(laws.stationary["random"]),
                 is_distribution(laws.stationary["fixed"]),
                 is_distribution(laws.transition["fixed"], axis=1),
                 in_unit_interval([laws.dish_tail, laws.tv["fixed"], laws.tv["random"]])),
             time_limit=30,
             extremes=[("three rows", dict(X=np.vstack([X2, X2[:1]])), R),
                       ("k_max huge", dict(k_max=10**6), R),
                       # far from the prior: NaN laws and an infinite "bound" (third audit)
                       ("rows at +-50", dict(X=np.array([[50.0, 2.0], [1.0, -50.0]])), A),
                       ("rows at 15 times the data", dict(X=15 * X2), A)]),
        Spec("scan_order.ScanOrderLaws.index", laws.index, dict(Z=np.array([[1, 0], [1, 1]])),
             dict(Z="binary"), lambda i: None if 0 <= i < laws.states.shape[0] else f"bad row {i}",
             extremes=[("three rows", dict(Z=np.ones((3, 1), np.int8)), R),
                       ("more features than k_max", dict(Z=np.ones((2, 9), np.int8)), R)]),
        Spec("scan_order.ScanOrderLaws.k_plus", laws.k_plus, dict(law=laws.posterior),
             dict(law=lambda b: [("nan", b * np.nan, R), ("negative", -b, R), ("short", b[:-1], R),
                                 ("2-D", b[None], R), ("str", "p", R), ("complex", b + 1j, R)]),
             is_distribution),
        Spec("tempering.run_tempered", __import__("ibp_lab.inference.tempering", fromlist=["_"]).run_tempered,
             dict(X=X2, n_sweeps=5, rng=fresh_rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                  n_temperatures=3, min_inverse_temperature=0.1, burn=1, swap_scheme="deo",
                  workers=1),
             dict(X="matrix", n_sweeps=C, rng=G, alpha=P, sigma_x=P, sigma_a=P, n_temperatures=C,
                  min_inverse_temperature="probability", burn=C,
                  swap_scheme=_choice(["deo", "seo"]), workers=C),
             lambda run: is_nonnegative(run.trace["k_plus"].values, "K+"), time_limit=20,
             extremes=[("one rung", dict(n_temperatures=1), A),
                       ("hottest rung at b = 1", dict(min_inverse_temperature=1.0), R)]),
        Spec("tempering.tempered_k_plus_posterior",
             __import__("ibp_lab.inference.tempering", fromlist=["_"]).tempered_k_plus_posterior,
             dict(X=X2, inverse_temperature=0.5, alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0,
                  k_max=4),
             dict(X="matrix", inverse_temperature="probability", alpha=P, sigma_x=P, sigma_a=P,
                  beta=P, k_max=C),
             is_distribution),
    ]


def _vi_fit(alpha, sigma_x, sigma_a, n_features, family, max_iter, tol, rng, X):
    from ibp_lab.inference.variational import VariationalIBP
    return VariationalIBP(alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a, n_features=n_features,
                          family=family,
                          max_iter=max_iter, tol=tol, rng=rng).fit(X)


def _vi_fitted_check(vi):
    """A fitted VariationalIBP: finite, non-decreasing ELBOs and q(z) in [0, 1]."""
    elbo = np.asarray(vi.elbo_, float)
    if elbo.size == 0 or not np.all(np.isfinite(elbo)):
        return f"ELBOs not finite: {elbo[:3]}"
    return first_problem(scan_result_of(vi.features_), scan_result_of(vi.feature_variances_),
                         in_unit_interval(vi.feature_probabilities_),
                         in_unit_interval(vi.prior_probabilities_))


@functools.cache
def _vi_fitted():
    from ibp_lab.inference.variational import VariationalIBP
    return VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2, max_iter=5,
                          rng=fresh_rng()).fit(data())


def _vi_unfitted():
    from ibp_lab.inference.variational import VariationalIBP
    return VariationalIBP(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2, max_iter=5)


def specs_late():
    """Tempering, variational inference and their figures (issue 14's campaign cases)."""
    import matplotlib
    from matplotlib.figure import Figure

    from ibp_lab.inference import tempering, variational
    from ibp_lab.teaching.plotting import tempering as tfig
    from ibp_lab.teaching.plotting import variational as vfig

    matplotlib.use("Agg")
    draw = _figure_drawn
    X2 = np.array([[0.9, -0.2], [1.1, 0.1]])
    X = data()
    fitted = _vi_fitted()
    nx = lambda b: [m_ for m_ in _estimator_matrix(b) if m_[0] != "1-D row"] + [
        ("wrong width", np.ones((2, 5)), R)]
    ax_kind = lambda b: _axes_junk(b) + [("None", None, A), ("new axes", Figure().subplots(), A)]

    # tempering
    Z0 = np.ones((2, 1), np.int8)
    z0_junk = lambda b: [("entry 2", np.full((2, 1), 2), R), ("wrong rows", np.ones((3, 1)), R),
                         ("str", "Z", R), ("one per run", [Z0, Z0], A), ("too few starts", [Z0], R),
                         ("a start of junk", [Z0, np.full((2, 1), 0.5)], R), ("matrix", Z0, A)]
    ladder = np.array([1.0, 0.5, 0.1])
    rejection = np.array([0.4, 0.6])

    def runs_check(out):
        idata, runs = out
        return first_problem(is_nonnegative(idata.posterior["k_plus"].values, "K+"),
                             None if len(runs) == idata.posterior.sizes["chain"] else "runs differ")

    def class_check(post):
        return first_problem(is_distribution(post.probabilities),
                             in_unit_interval(post.tail_bound, "tail bound"))

    def ladder_check(b):
        b = _arr(b)
        return (None if b.size and b[0] == 1.0 and np.all(np.isfinite(b)) and np.all(np.diff(b) <= 0)
                else f"not a ladder: {b}")

    laws = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3]])
    t = np.arange(5.0)
    chain_pair = [(t, -t)]

    specs = [
        Spec("tempering.run_tempered_chains", tempering.run_tempered_chains,
             dict(X=X2, n_runs=2, n_sweeps=4, rng=fresh_rng(), Z0=None, alpha=1.0, sigma_x=0.5,
                  sigma_a=1.0, n_temperatures=2, burn=1),
             dict(X="matrix", n_runs=C, n_sweeps=C, rng=G, Z0=z0_junk), runs_check, time_limit=20,
             extremes=[("burn as long as the run", dict(burn=4), R),
                       ("unknown option", dict(colour="red"), R)]),
        Spec("tempering.tempered_class_posterior", tempering.tempered_class_posterior,
             dict(X=X2, inverse_temperature=0.5, alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0,
                  k_max=4),
             dict(X="matrix", inverse_temperature="probability", alpha=P, sigma_x=P, sigma_a=P,
                  beta=P, k_max=C), class_check, allow_inf=True,
             extremes=[("five rows", dict(X=np.ones((5, 1))), R)]),
        Spec("tempering.tuned_ladder", tempering.tuned_ladder,
             dict(inverse_temperatures=ladder, rejection=rejection),
             dict(inverse_temperatures="vector", rejection="vector"), ladder_check,
             names=dict(inverse_temperatures=("inverse_temperatures", "rejection")),
             # a barrier increment above 1 is fine (tests/inference/test_tempering.py feeds them)
             extremes=[("rejection above 1", dict(rejection=[0.4, 1.5]), A),
                       ("rejection negative", dict(rejection=[-0.4, 0.5]), R),
                       ("rejection too short", dict(rejection=[0.4]), R),
                       ("increasing ladder", dict(inverse_temperatures=ladder[::-1]), R),
                       ("ladder not from 1", dict(inverse_temperatures=ladder / 2), R),
                       ("one rung", dict(inverse_temperatures=[1.0], rejection=[]), E),
                       ("no rejection", dict(rejection=[0.0, 0.0]), A),
                       # summed to inf: the last rung came back NaN (third audit)
                       ("huge increments", dict(rejection=[1e308, 1e308]), A)]),
        # variational
        Spec("variational.VariationalIBP.fit", _vi_fit,
             dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2, family="stick_breaking",
                  max_iter=5, tol=1e-6, rng=fresh_rng(), X=X),
             dict(alpha=P, sigma_x=P, sigma_a=P, n_features=C,
                  family=_choice(list(variational.FAMILIES)), max_iter=C, tol="nonneg",
                  rng=_estimator_rng, X=_estimator_matrix), _vi_fitted_check,
             extremes=[("alpha 1e-100", dict(alpha=1e-100), E), ("alpha 1e6", dict(alpha=1e6), E),
                       ("sigma_x 1e-9", dict(sigma_x=1e-9), E), ("sigma_a 1e-100", dict(sigma_a=1e-100), E),
                       ("finite alpha 1e-100", dict(family="finite", alpha=1e-100), E),
                       ("data 1e150", dict(X=X * 1e150), E)]),
        Spec("variational.VariationalIBP.k_plus_distribution", lambda: fitted.k_plus_distribution(),
             {}, {}, is_distribution,
             junk=[("unfitted", lambda: _vi_unfitted().k_plus_distribution(), ("fit",), E),
                   ("unfitted ibp_elbo_", lambda: _vi_unfitted().ibp_elbo_, ("fit",), E)]),
        Spec("variational.VariationalIBP.sample_feature_probabilities",
             lambda n_draws, rng: fitted.sample_feature_probabilities(n_draws, rng),
             dict(n_draws=4, rng=fresh_rng()), dict(n_draws=C, rng=G), in_unit_interval,
             junk=[("unfitted", lambda: _vi_unfitted().sample_feature_probabilities(3, fresh_rng()),
                    ("fit",), E)]),
        Spec("variational.VariationalIBP.stick_bound_slack",
             lambda n_draws, rng: fitted.stick_bound_slack(n_draws, rng),
             dict(n_draws=4, rng=fresh_rng()), dict(n_draws=C, rng=G),
             lambda out: None if len(out) == 2 and np.all(np.isfinite(out)) and out[1] >= 0
             else f"not a finite (slack, standard error): {out}",
             junk=[("unfitted", lambda: _vi_unfitted().stick_bound_slack(3, fresh_rng()),
                    ("fit",), E)]),
        Spec("variational.VariationalIBP.predictive_draws",
             lambda n_draws, rng: fitted.predictive_draws(n_draws, rng),
             dict(n_draws=4, rng=fresh_rng()), dict(n_draws=C, rng=G),
             lambda out: first_problem(in_unit_interval(out[0]), is_nonnegative(out[2], "variances"))),
        Spec("variational.VariationalIBP.transform", lambda X_new: fitted.transform(X_new),
             dict(X_new=X[:2]), dict(X_new=nx), in_unit_interval, names=dict(X_new=("X_new", "X")),
             junk=[("unfitted", lambda: _vi_unfitted().transform(X[:2]), ("fit",), E)]),
        Spec("variational.VariationalIBP.score", lambda X_new: fitted.score(X_new),
             dict(X_new=X[:2]), dict(X_new=nx), names=dict(X_new=("X_new", "X")),
             junk=[("unfitted", lambda: _vi_unfitted().score(X[:2]), ("fit",), E)]),
        Spec("variational.finite_log_evidence", variational.finite_log_evidence,
             dict(X=X2, alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_features=2),
             dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P, n_features=C),
             # the largest size takes about 3 s alone, over 10 s beside a loaded suite
             time_limit=60,
             extremes=[("five rows", dict(X=np.ones((5, 1))), R),
                       # the largest size the docstring allows: over a minute when each of
                       # its 490,314 classes was scored by a Python call (third audit)
                       ("four rows, K = 8", dict(X=np.full((4, 2), 0.3), n_features=8), A),
                       ("alpha 1e-100", dict(alpha=1e-100), E), ("sigma_x 1e-9", dict(sigma_x=1e-9), E)]),
        # figures
        Spec("plotting.tempering.tempered_laws_figure", tfig.tempered_laws_figure,
             dict(inverse_temperatures=[1.0, 0.0], exact_laws=laws, sampled_laws=laws),
             dict(inverse_temperatures="vector", exact_laws="matrix", sampled_laws="matrix"), draw,
             names=dict(inverse_temperatures=("inverse_temperatures", "exact_laws")),
             extremes=[("many rungs", dict(inverse_temperatures=np.ones(2000),
                                           exact_laws=np.ones((2000, 3)), sampled_laws=np.ones((2000, 3))), R)]),
        Spec("plotting.tempering.ladder_figure", tfig.ladder_figure,
             dict(ladders={"run": ladder}, rejections={"run": rejection}),
             dict(ladders=_mapping_junk(ladder), rejections=_mapping_junk(rejection)), draw,
             extremes=[("None values", dict(ladders={"a": None}, rejections={"a": None}), R),
                       ("str values", dict(ladders={"a": "x"}, rejections={"a": "x"}), R),
                       ("rejection length", dict(rejections={"run": [0.4]}), R),
                       ("nan rejection", dict(rejections={"run": [np.nan, 0.5]}), R),
                       ("nan ladder", dict(ladders={"run": [1.0, np.nan, 0.1]}), R),
                       ("int labels", dict(ladders={3: ladder}, rejections={3: rejection}), E),
                       ("markup labels", dict(ladders={_MARKUP: ladder}, rejections={_MARKUP: rejection}), E),
                       ("many runs", dict(ladders={str(i): ladder for i in range(1500)},
                                          rejections={str(i): rejection for i in range(1500)}), R)]),
        Spec("plotting.tempering.traces_by_cpu_figure", tfig.traces_by_cpu_figure,
             dict(runs={"plain": chain_pair}, reference=0.0, reference_label="reference"),
             dict(runs=lambda b: _mapping_junk(chain_pair)(b) + [
                 ("pair of str", {"a": [("x", "y")]}, R), ("triple", {"a": [(t, t, t)]}, R),
                 ("lengths differ", {"a": [(t, t[:-1])]}, R), ("nan", {"a": [(t, t * np.nan)]}, R),
                 ("no chains", {"a": []}, E), ("many panels", {str(i): chain_pair for i in range(1500)}, R)],
                  reference=lambda b: _real(b) + [("None", None, A)], reference_label="text"), draw),
        Spec("plotting.variational.plot_evidence_bounds", vfig.plot_evidence_bounds,
             dict(n_features=[1, 2], bounds={"ELBO": [-3.0, -2.5]}, exact_value=-2.0, ax=None),
             dict(n_features="vector", bounds=lambda b: _mapping_junk([-3.0, -2.5])(b) + [
                 ("wrong length", {"a": [-3.0]}, R), ("nan", {"a": [np.nan, 1.0]}, R)],
                  exact_value="real", ax=ax_kind), draw,
             names=dict(n_features=("n_features", "bounds"))),
        Spec("plotting.variational.plot_k_plus_laws", vfig.plot_k_plus_laws,
             dict(laws={"exact": [0.5, 0.5], "q": [0.2, 0.7, 0.1]}, ax=None),
             dict(laws=lambda b: _mapping_junk([0.5, 0.5])(b) + [
                 ("nan", {"a": [np.nan, 1.0]}, R), ("2-D", {"a": [[0.5, 0.5]]}, R),
                 ("empty law", {"a": []}, E), ("many laws", {str(i): [1.0] for i in range(1500)}, R)],
                  ax=ax_kind), draw),
        Spec("plotting.variational.elbo_traces_figure", vfig.elbo_traces_figure,
             dict(traces=[[-5.0, -4.0], [-6.0, -4.5]], highlight={"best": 0}),
             dict(traces=lambda b: [("None", None, R), ("str", "x", R), ("empty", [], R),
                                    ("list of None", [None], R), ("nan", [[np.nan, 1.0]], R),
                                    ("empty trace", [[]], R), ("2-D trace", [[[1.0]]], R),
                                    ("array", np.array([[-5.0, -4.0]]), E),
                                    ("many traces", [[-1.0]] * 1500, R)],
                  highlight=lambda b: [("None", None, A), ("str", "x", R), ("list", [1], R),
                                       ("out of range", {"a": 5}, R), ("negative", {"a": -1}, R),
                                       ("float index", {"a": 0.5}, R), ("str index", {"a": "0"}, R),
                                       ("int label", {3: 0}, E), ("markup label", {_MARKUP: 0}, E)]),
             draw),
    ]
    return specs


def specs_births():
    """The buffer's birth rule and the streaming chapter's recovery study (issue 18)."""
    from ibp_lab.evaluation import recovery
    from ibp_lab.inference import chains
    from ibp_lab.inference.streaming import births

    R2 = np.array([[1.0, 0.0], [1.1, 0.1], [0.9, -0.1], [0.0, 1.0]])
    rows_junk = lambda b: [("None", None, R), ("str", "1", R), ("zero", [0, 1], R),
                           ("float", [1.5], R), ("empty", [], R), ("2-D", [[1, 2]], R),
                           ("negative", [-1], R), ("nan", [np.nan], R), ("huge", [10**12], A),
                           ("list", [1, 2, 3], A)]
    seq_junk = lambda b: [("None", None, R), ("str", "5", R), ("empty", [], R),
                          ("repeat", [b[0], b[0]], R), ("negative", [-1], R), ("float", [2.5], R),
                          ("nan", [np.nan], R), ("tuple", tuple(b), A)]
    methods_junk = lambda b: [("None", None, R), ("str", "single", R), ("empty", [], R),
                              ("unknown", ["pca"], R), ("repeat", ["single", "single"], R),
                              ("int", [3], R), ("gibbs", ["gibbs"], A)]

    def found_check(found):
        return first_problem(scan_result_of({"means": found.means, "variances": found.variances}),
                             is_nonnegative(found.variances, "variances"),
                             in_unit_interval(found.owners, "owners"))

    def table_check(table):
        return None if len(table) and table["recovered"].dtype == bool else f"bad table {table}"

    return [
        Spec("streaming.births.admission_threshold", births.admission_threshold, dict(dim=36),
             dict(dim=C), extremes=[("zero", dict(dim=0), R)]),
        Spec("streaming.births.buffer_alpha", births.buffer_alpha,
             dict(rows=np.arange(1, 5), log_alpha=0.0, beta=1.0),
             dict(rows=rows_junk, log_alpha="real", beta=P),
             extremes=[("log_alpha -1e5", dict(log_alpha=-1e5), A)]),
        Spec("streaming.births.decompose_buffer", births.decompose_buffer,
             dict(residuals=R2, rng=fresh_rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0, pilot=True),
             dict(residuals="matrix", rng=G, alpha="nonneg", sigma_x=P, sigma_a=P, pilot="flag"),
             found_check, time_limit=30,
             extremes=[("no pilot", dict(pilot=False), A), ("alpha 1e-300", dict(alpha=1e-300), A),
                       ("sigma_x 1e-9", dict(sigma_x=1e-9), E),
                       # out of the joint decomposition's reach: bounded time (it took minutes)
                       ("values 1e3", dict(residuals=np.full((2, 5), 1e3)), A),
                       ("one outlier x1000", dict(residuals=np.r_[R2, 1e3 * R2[:1]]), A)]),
        # issue 49: the rounds' moves
        Spec("streaming.births.decompose_buffer.moves",
             lambda moves: births.decompose_buffer(R2, fresh_rng(), alpha=1.0, sigma_x=0.5,
                                                   sigma_a=1.0, pilot=False, moves=moves),
             dict(moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=2)]),
             dict(moves=_buffer_moves_junk), found_check, time_limit=30),
        Spec("streaming.births.feature_reach", births.feature_reach, dict(n_rows=100, alpha=1.0),
             dict(n_rows=C, alpha=P), lambda out: None if isinstance(out, int) and out >= 0 else
             f"expected a count, got {out!r}",
             extremes=[("alpha 1e-300", dict(alpha=1e-300), R), ("n_rows 1e12", dict(n_rows=10**12), A)]),
        Spec("streaming.births.implied_features", births.implied_features,
             dict(residuals=R2, sigma_x=0.5, sigma_a=1.0), dict(residuals="matrix", sigma_x=P, sigma_a=P),
             lambda out: None if np.all(np.isfinite(out)) and np.all(out >= 0) else
             f"expected finite non-negative counts, got {out!r}",
             extremes=[("sigma_a 1e-300", dict(sigma_a=1e-300), E)]),
        Spec("streaming.recovery.is_recovered", recovery.is_recovered,
             dict(correlations=[0.95, 0.97, 0.99, 0.93], n_features=4.0),
             dict(correlations="vector", n_features="nonneg"),
             extremes=[("three correlations", dict(correlations=[0.95] * 3), R),
                       ("correlation 2", dict(correlations=[2.0, 0.9, 0.9, 0.9]), R)]),
        Spec("streaming.recovery.recovery_study", recovery.recovery_study,
             dict(n_values=[6], seeds=[0], methods=["single"], alpha=1.0, sigma_x=0.5,
                  sigma_a=1.0, p_on=0.5, n_sweeps=2, buffer_size=4),
             dict(n_values=seq_junk, seeds=seq_junk, methods=methods_junk, alpha=P, sigma_x=P,
                  sigma_a=P, p_on="probability", n_sweeps=C, buffer_size=C),
             table_check, time_limit=30,
             extremes=[("buffer", dict(methods=["buffer"]), A),
                       ("too many images", dict(n_values=[10**9]), R)]),
    ]


def specs_smc():
    """Sequential Monte Carlo and annealed importance sampling (issue 28)."""
    from ibp_lab.inference import smc

    X2 = np.array([[0.9, -0.2], [1.1, 0.1]])
    base = dict(X=X2, n_particles=4, rng=fresh_rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0,
                n_temperatures=3, n_sweeps=1)
    kinds = dict(X="matrix", n_particles=C, rng=G, alpha=P, sigma_x=P, sigma_a=P,
                 n_temperatures=C, n_sweeps=C)

    def run_check(run):
        return first_problem(is_nonnegative(run.k_plus, "K+"),
                             None if np.isfinite(run.log_evidence) else "log evidence not finite",
                             is_distribution(np.exp(run.log_weights)))

    ladder_junk = [("decreasing", dict(inverse_temperatures=[1.0, 0.5, 0.0]), R),
                   ("not from 0", dict(inverse_temperatures=[0.1, 1.0]), R),
                   ("not to 1", dict(inverse_temperatures=[0.0, 0.9]), R),
                   ("repeated rung", dict(inverse_temperatures=[0.0, 0.5, 0.5, 1.0]), R),
                   ("nan rung", dict(inverse_temperatures=[0.0, np.nan, 1.0]), R),
                   ("one rung", dict(inverse_temperatures=[1.0]), R),
                   ("2-D", dict(inverse_temperatures=[[0.0, 1.0]]), R),
                   ("str", dict(inverse_temperatures="ladder"), R),
                   ("two rungs", dict(inverse_temperatures=[0.0, 1.0]), A),
                   ("huge run", dict(n_particles=10**5, n_temperatures=10**4), R)]
    run = smc.run_smc(X2, 5, fresh_rng(), alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_temperatures=3)
    return [
        Spec("smc.run_smc", smc.run_smc, dict(base, ess_threshold=0.5),
             dict(kinds, ess_threshold="probability"), run_check,
             extremes=ladder_junk + [("always resample", dict(ess_threshold=1.0), A),
                                     ("one particle", dict(n_particles=1), A),
                                     ("unknown option", dict(colour="red"), R)]),
        Spec("smc.run_ais", smc.run_ais, base, kinds, run_check,
             extremes=[("ess_threshold given", dict(ess_threshold=0.5), R),
                       ("unknown option", dict(colour="red"), R)]),
        Spec("smc.power_ladder", smc.power_ladder, dict(n_temperatures=4, power=2.0),
             dict(n_temperatures=C, power=P),
             lambda b: None if b[0] == 0 and b[-1] == 1 and np.all(np.diff(b) > 0) else f"bad {b}"),
        Spec("smc.harmonic_mean_log_evidence", smc.harmonic_mean_log_evidence,
             dict(log_likelihoods=np.array([-3.0, -2.5, -4.0])), dict(log_likelihoods="vector"),
             lambda v: None if np.isfinite(v) else "not finite",
             extremes=[("one draw", dict(log_likelihoods=[-1.0]), A),
                       ("empty", dict(log_likelihoods=[]), R),
                       ("-inf draw", dict(log_likelihoods=[-1.0, -np.inf]), R)]),
        Spec("smc.SMCResult.mean", run.mean, dict(values=run.k_plus), dict(values="vector"),
             lambda v: None if np.isfinite(v) else "not finite",
             extremes=[("wrong length", dict(values=np.ones(3)), R)]),
        Spec("smc.SMCResult.k_plus_pmf", run.k_plus_pmf, dict(k_max=4), dict(k_max=C),
             lambda p: None if np.all(p >= 0) and p.sum() <= 1 + 1e-12 else f"bad {p}"),
        Spec("smc.SMCResult.region_log_evidence", run.region_log_evidence,
             dict(labels=run.k_plus), dict(labels="vector"),
             lambda d: None if d and all(np.isfinite(list(d.values()))) else f"bad {d}",
             extremes=[("wrong length", dict(labels=np.ones(3)), R),
                       ("fractional", dict(labels=np.full(run.k_plus.size, 0.5)), R),
                       ("nan", dict(labels=np.full(run.k_plus.size, np.nan)), R),
                       ("one region", dict(labels=np.zeros(run.k_plus.size, int)), A)]),
    ]



def _pair(base):
    """Junk for a prior's pair of positive numbers."""
    return [("nan", (float("nan"), 1.0), R), ("negative", (-1.0, 1.0), R),
            ("one number", (1.0,), R), ("str", "ab", R), ("None", None, R),
            ("complex", (1j, 1.0), R), ("three numbers", (1.0, 1.0, 1.0), R),
            ("huge rate", (1.0, 1e6), E), ("tiny shape", (1e-100, 1.0), E)]


def specs_hyperposterior():
    """The buffet's parameters given a binary matrix (issue 31)."""
    from ibp_lab.inference import hyperposterior as hp

    Z = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1], [1, 1, 0, 0]], np.int8)
    draws_check = lambda ds: first_problem(*(  # noqa: E731
        None if np.all(np.isfinite(ds[name].values)) else f"{name} not finite"
        for name in ("alpha", "beta", "discount")))
    finite = lambda v: None if np.isfinite(v) else f"not finite: {v}"  # noqa: E731
    fitted = hp.sample_hyperparameters(Z, 3, fresh_rng())
    start = [("discount 0", dict(discount=0.0), R), ("discount 1", dict(discount=1.0), R),
             ("discount 0.999", dict(discount=0.999), A)]
    return [
        Spec("hyperposterior.FeatureCounts.of", hp.FeatureCounts.of, dict(Z=Z), dict(Z="binary"),
             lambda c: None if c.n_features >= 0 else "negative K+",
             extremes=[("no rows", dict(Z=np.zeros((0, 2), np.int8)), R)]),
        Spec("hyperposterior.discount_step", hp.discount_step,
             dict(Z=Z, rng=fresh_rng(), discount=0.5, alpha=1.0, beta=1.0,
                  discount_prior=(1.0, 1.0)),
             dict(Z="binary", rng=G, discount="probability", alpha=P, beta=P,
                  discount_prior=_pair),
             lambda d: None if 0.0 < d < 1.0 else f"discount out of range: {d}",
             extremes=start + [("discount 1 - 1e-9", dict(discount=1 - 1e-9), E)]
             + hyper_edges(dict(alpha=1, beta=1)) + data_edges(dict(Z=Z), "Z", binary=True)),
        Spec("hyperposterior.sample_hyperparameters", hp.sample_hyperparameters,
             dict(Z=Z, n_draws=3, rng=fresh_rng(), beta=1.0, discount=0.5,
                  alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0), discount_prior=(1.0, 1.0),
                  update_beta=True, update_discount=True),
             dict(Z="binary", n_draws=C, rng=G, beta=P, discount="probability",
                  alpha_prior=_pair, beta_prior=_pair, discount_prior=_pair,
                  update_beta="flag", update_discount="flag"), draws_check, time_limit=20,
             extremes=start + [("fixed at 0", dict(discount=0.0, update_discount=False), A),
                               ("huge n_draws", dict(n_draws=10**9), R),
                               ("discount 1 - 1e-9", dict(discount=1 - 1e-9), E)]
             + hyper_edges(dict(beta=1)) + data_edges(dict(Z=Z), "Z", binary=True)),
        Spec("hyperposterior.heaps_curve", hp.heaps_curve, dict(Z=Z), dict(Z="binary"),
             is_nonnegative, extremes=[("no rows", dict(Z=np.zeros((0, 2), np.int8)), R)]),
        Spec("hyperposterior.zipf_curve", hp.zipf_curve, dict(Z=Z), dict(Z="binary"),
             is_nonnegative),
        Spec("hyperposterior.predictive_curves", hp.predictive_curves,
             dict(draws=fitted, n_rows=5, rng=fresh_rng(), n_simulations=2, burn=0),
             dict(draws=lambda base: [("None", None, R), ("dict", {"alpha": [1.0]}, R),
                                      ("array", np.ones(3), R)],
                  n_rows=C, rng=G, n_simulations=C, burn=C),
             lambda c: is_nonnegative(c.heaps),
             extremes=[("burn past the draws", dict(burn=3), R),
                       ("huge n_rows", dict(n_rows=10**9), R)]),
        Spec("hyperposterior.heldout_log_score", hp.heldout_log_score,
             dict(Z_train=Z[:3], Z_test=Z[3:], alpha=1.0, beta=1.0, discount=0.2),
             dict(Z_train="binary", Z_test="binary", alpha=P, beta=P, discount="nonneg"), finite,
             extremes=[("columns differ", dict(Z_test=Z[3:, :2]), R),
                       ("discount 1", dict(discount=1.0), R)] + discount_edges()
             + hyper_edges(dict(alpha=1, beta=1))
             + [e for e in data_edges(dict(Z_test=Z[3:]), "Z_test", binary=True) if "row" not in e[0]]
             + [("Z_test no rows", dict(Z_test=Z[:0]), E), ("Z_train one row", dict(Z_train=Z[:1]), E)]),
    ]

# ---------------------------------------------------------------------------------------
# edges and extremes of the modules added in issue 29-31 (issue 48): each must work
# (finite results) or be refused at the door naming the argument
# ---------------------------------------------------------------------------------------

#: Hyperparameters at the ends of their useful range (issue 48): accepted, or refused by name.
_HYPER_ENDS = {
    "alpha": (1e-8, 1e3), "beta": (1e-100, 1e100), "sigma_x": (1e-3, 1e3), "sigma_a": (1e-3, 1e3),
    "gamma": (1e-8, 1e3),
}


def _readonly(values):
    values = np.array(values)
    values.flags.writeable = False
    return values


def hyper_edges(base) -> list:
    """Every hyperparameter of ``base`` at both ends of :data:`_HYPER_ENDS`: work or refuse by name."""
    return [(f"{name} {value:g}", {name: value}, E)
            for name, ends in _HYPER_ENDS.items() if name in base for value in ends]


def data_edges(base, arg="X", *, binary=False) -> list:
    """The data argument ``arg`` as other dtypes (int, bool, float32, read-only: all must work)
    and as degenerate data (all zero, constant, one row, empty: work or refuse by name)."""
    values = np.asarray(base[arg])
    out = [(f"{arg} read-only", {arg: _readonly(values)}, A),
           (f"{arg} all zero", {arg: np.zeros_like(values)}, E),
           (f"{arg} one row", {arg: values[:1]}, E), (f"{arg} no rows", {arg: values[:0]}, E),
           (f"{arg} int64", {arg: values.astype(np.int64)}, A if binary else E),
           (f"{arg} bool", {arg: values.astype(bool)}, A if binary else E)]
    if binary:
        out.append((f"{arg} all one", {arg: np.ones_like(values)}, E))
    else:
        out += [(f"{arg} float32", {arg: values.astype(np.float32)}, A),
                (f"{arg} constant", {arg: np.full_like(values, 2.5)}, E),
                (f"{arg} -inf entry", {arg: np.where(np.arange(values.size).reshape(values.shape) == 1,
                                                     -np.inf, values)}, R)]
    return out


def discount_edges(names=("discount",)) -> list:
    """The discount at 0 and just below 1: work, or a refusal naming it."""
    return [("discount 0", dict(discount=0.0), E), ("discount 1 - 1e-9", dict(discount=1 - 1e-9), E)]


def specs_nonconjugate():
    """The samplers that keep the feature images (issue 30)."""
    from ibp_lab.models import linear_gaussian as lg
    from ibp_lab.inference import slice_sampler, uncollapsed

    X, Z = data(), z_matrix()
    images = lg.sample_features(X, Z, fresh_rng(), sigma_x=0.5, sigma_a=1.0)
    hyper = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, beta=1.0)
    kinds = dict(X="matrix", Z="binary", A="matrix", rng=G, alpha=P, sigma_x=P, sigma_a=P,
                 beta=P)
    state_extremes = MODEL_EXTREMES + hyper_edges(hyper) + [
        e for e in data_edges(dict(X=X)) if "row" not in e[0]] + [
        ("A one row short", dict(A=images[:1]), R), ("A one column short", dict(A=images[:, :2]), R),
        ("A entries 1e150", dict(A=images * 0 + 1e150), R), ("alpha 1e6", dict(alpha=1e6), E),
        ("an empty column of Z", dict(Z=np.column_stack([Z, np.zeros(6, np.int8)]),
                                      A=np.vstack([images, images[:1]])), A)]
    run_kinds = dict(X="matrix", n_sweeps=C, rng=G, alpha=P, sigma_x=P, sigma_a=P, beta=P,
                     Z0="binary", burn=C, thin=C)
    run_base = dict(X=X, n_sweeps=4, rng=fresh_rng(), **hyper, Z0=None, burn=0, thin=1)
    run_extremes = [("Z0 given", dict(Z0=Z), A), ("burn beyond n_sweeps", dict(burn=10), R),
                    ("thin 0", dict(thin=0), R), ("huge n_sweeps", dict(n_sweeps=10**9), R),
                    ("sigma_x 1e-100", dict(sigma_x=1e-100), E), ("alpha 1e6", dict(alpha=1e6), E)
                    ] + hyper_edges(hyper) + data_edges(run_base) + [
                    ("Z0 read-only", dict(Z0=_readonly(Z)), A), ("Z0 bool", dict(Z0=Z.astype(bool)), A),
                    ("Z0 no columns", dict(Z0=Z[:, :0]), A)]
    run_check = lambda run: first_problem(is_binary(run.Z),  # noqa: E731
                                          scan_result_of(run.trace))
    state_check = lambda out: first_problem(_sweep_check(out[0]),  # noqa: E731
                                            is_finite_matrix(out[1]))
    return [
        Spec("linear_gaussian.sample_features", lg.sample_features,
             dict(X=X, Z=Z, sigma_x=0.5, sigma_a=1.0, rng=fresh_rng()),
             dict(MODEL_KINDS, rng=G), is_finite_matrix, extremes=MODEL_EXTREMES),
        Spec("uncollapsed.uncollapsed_sweep", uncollapsed.uncollapsed_sweep,
             dict(X=X, Z=Z, A=images, rng=fresh_rng(), **hyper), kinds, state_check,
             extremes=state_extremes),
        Spec("slice_sampler.slice_sweep", slice_sampler.slice_sweep,
             dict(X=X, Z=Z, A=images, rng=fresh_rng(), **hyper), kinds, state_check,
             extremes=state_extremes),
        Spec("uncollapsed.run_uncollapsed", uncollapsed.run_uncollapsed, run_base, run_kinds,
             run_check, extremes=run_extremes, time_limit=20),
        Spec("slice_sampler.run_slice", slice_sampler.run_slice, run_base, run_kinds, run_check,
             extremes=run_extremes, time_limit=20),
    ] + _noisy_or_specs(Z, state_check, run_check)


def _class_structure_specs():
    """class_structure: feature sharing between classes against a classifier's confusions."""
    from ibp_lab.evaluation import class_structure as cs

    Z = fresh_rng().random((8, 3))
    labels = np.array([1, 1, 3, 3, 5, 5, 7, 7])
    S = np.array([[1, .5, .1, .2], [.5, 1, .3, .1], [.1, .3, 1, .8], [.2, .1, .8, 1]])
    classes = [1, 3, 5, 7]
    ints = lambda b: [("floats", np.asarray(b, float) + 0.5, R), ("2-D", np.asarray(b)[None], R),  # noqa: E731
                      ("None", None, R), ("str", "abc", R), ("one short", np.asarray(b)[:-1], R)]
    finite = lambda out: None if np.all(np.isfinite(out[1])) else "not finite"  # noqa: E731
    return [
        Spec("class_structure.class_sharing", cs.class_sharing, dict(Z=Z, labels=labels),
             dict(Z="matrix", labels=ints), finite,
             extremes=[("Z above 1", dict(Z=Z + 1), R), ("a class of one row",
                                                         dict(labels=np.arange(8)), R),
                       ("all zero", dict(Z=Z * 0), A), ("all one", dict(Z=Z * 0 + 1), A),
                       ("Z bool", dict(Z=Z > 0.5), A), ("Z int", dict(Z=(Z > 0.5).astype(int)), A),
                       ("Z float32", dict(Z=Z.astype(np.float32)), A), ("Z read-only", dict(Z=_readonly(Z)), A),
                       ("Z no columns", dict(Z=Z[:, :0]), E), ("one class", dict(labels=np.ones(8, int)), E),
                       ("labels read-only", dict(labels=_readonly(labels)), A),
                       ("labels bool", dict(labels=np.arange(8) % 2 == 0), E),
                       ("labels huge", dict(labels=labels.astype(np.int64) + 2**62), A)]),
        Spec("class_structure.confusion_similarity", cs.confusion_similarity,
             dict(labels=labels, predicted=labels[::-1]), dict(labels=ints, predicted=ints),
             finite, extremes=[("unknown prediction", dict(predicted=labels + 100), R),
                               ("all right", dict(predicted=labels), A),
                               ("one class", dict(labels=np.ones(8, int), predicted=np.ones(8, int)), E),
                               ("labels huge", dict(labels=labels + 2**62, predicted=labels[::-1] + 2**62), A)]),
        Spec("class_structure.matrix_agreement", cs.matrix_agreement, dict(A=S, B=S[::-1, ::-1]),
             dict(A="matrix", B="matrix"),
             lambda out: None if np.isfinite(out[0]) and 0 < out[1] <= 1 else f"bad {out}",
             extremes=[("nine classes", dict(A=np.eye(9), B=np.eye(9)), R),
                       ("not symmetric", dict(A=np.triu(S)), R), ("constant", dict(B=S * 0), R),
                       ("identical", dict(B=S), A), ("float32", dict(A=S.astype(np.float32)), A),
                       ("read-only", dict(A=_readonly(S)), A), ("scaled 1e-150", dict(B=S * 1e-150), E),
                       ("two classes", dict(A=S[:2, :2], B=S[:2, :2]), E)]),
        Spec("class_structure.closest_pair", cs.closest_pair,
             dict(classes=classes, S=S, first=1, second=3),
             dict(classes=lambda b: [("None", None, R), ("two", [1, 3], R), ("2-D", [b], R)],
                  S="matrix", first=lambda b: [("unknown", 2, R), ("None", None, R)],
                  second=lambda b: [("same as first", 1, R), ("str", "3", R)]),
             lambda v: None if isinstance(v, bool) else f"not a bool: {v!r}"),
        Spec("class_structure.most_isolated", cs.most_isolated, dict(classes=classes, S=S),
             dict(classes=lambda b: [("None", None, R), ("two", [1, 3], R)], S="matrix"),
             lambda v: None if v in classes else f"not a class: {v!r}"),
    ]


def _compare_methods_spec():
    """comparisons.compare_methods: paired scores of repeated runs."""
    from ibp_lab.evaluation import comparisons

    scores = {"a": [(1.0, 1.1), (2.0, 2.0), None], "b": [(1.5, 1.4), (2.2, 2.3), (0.1, 0.2)]}
    seconds = {"a": [1.0, 1.0, 2.0], "b": [0.5, 0.4, 0.6]}
    return Spec("comparisons.compare_methods", comparisons.compare_methods,
                dict(scores=scores, seconds=seconds, reference="a"),
                dict(scores=_dict_junk, seconds=_dict_junk,
                     reference=lambda b: [("unknown", "c", R), ("None", None, R), ("int", 3, R)]),
                # two methods, or one where a case passes only the reference
                lambda rows: None if len(rows) in (1, 2) else f"{len(rows)} rows",
                extremes=[("NaN score", dict(scores=dict(scores, b=[(np.nan, 1.0)] * 3)), R),
                          ("inf seconds", dict(seconds=dict(seconds, b=[np.inf] * 3)), R),
                          ("huge scores", dict(scores={"a": [(1e300, -1e300)] * 3,
                                                       "b": scores["b"]}), E),
                          ("one run", dict(scores={"a": [(1.0, 1.0)], "b": [(2.0, 2.0)]},
                                           seconds={"a": [1.0], "b": [1.0]}), A),
                          ("all tied", dict(scores={"a": [(1.0, 1.0)] * 3, "b": [(1.0, 1.0)] * 3}), A),
                          ("one method only", dict(scores={"a": scores["a"]}, seconds={"a": seconds["a"]}), E),
                          ("every run missing", dict(scores=dict(scores, b=[None] * 3)), E),
                          ("int scores", dict(scores={"a": [(1, 2)] * 3, "b": [(2, 2)] * 3}), A),
                          ("float32 seconds", dict(seconds={k: np.float32(v) for k, v in seconds.items()}), A),
                          ("zero seconds", dict(seconds={"a": [0.0] * 3, "b": [0.0] * 3}), E),
                          ("scores 1e-300", dict(scores={"a": [(1e-300, 2e-300)] * 3, "b": [(0.0, 1e-300)] * 3}), A)])


def _example_rows():
    from ibp_lab.evaluation import comparisons

    return comparisons.compare_methods({"a": [(1.0, 1.1), (2.0, 2.0)],
                                        "b": [(1.5, 1.4), (2.2, 2.3)]},
                                       {"a": [1.0, 2.0], "b": [0.5, 0.6]}, reference="a")


def specs_streaming_vi():
    """Streaming variational inference (issue 29's baseline)."""
    from ibp_lab.inference import streaming_variational as svi

    X = data()
    base = dict(X=X, alpha=1.0, sigma_x=0.5, sigma_a=1.0, family="stick_breaking",
                n_features=3, batch_size=2, max_iter=5, tol=1e-6, rng=fresh_rng())
    kinds = dict(X="matrix", alpha=P, sigma_x=P, sigma_a=P,
                 family=_choice(["stick_breaking", "finite"]), n_features=C, batch_size=C,
                 max_iter=C, tol="nonneg", rng=G)

    def fitted_check(res):
        return first_problem(scan_result_of(res.features),
                             in_unit_interval(res.feature_probabilities),
                             None if np.all(np.isfinite(res.step_bounds)) else "bounds not finite")

    res = svi.stream_variational(**dict(base, rng=fresh_rng()))
    finite = svi.stream_variational(**dict(base, family="finite", rng=fresh_rng()))
    number = lambda v: None if np.isfinite(v) else f"not finite: {v}"  # noqa: E731
    return [
        Spec("streaming_variational.stream_variational", svi.stream_variational, base, kinds,
             fitted_check,
             extremes=[("alpha 1e-100", dict(alpha=1e-100), E), ("alpha 1e6", dict(alpha=1e6), E),
                       ("sigma_x 1e-9", dict(sigma_x=1e-9), E),
                       ("data 1e150", dict(X=X * 1e150), E),
                       ("one batch", dict(batch_size=10**6), A),
                       ("finite alpha 1e-100", dict(family="finite", alpha=1e-100), E)]
             + hyper_edges(base) + data_edges(base)
             + [("finite alpha 1e3", dict(family="finite", alpha=1e3), E),
                ("batch_size 1", dict(batch_size=1), A), ("n_features 1", dict(n_features=1), A),
                ("max_iter 1", dict(max_iter=1), A)]),
        _compare_methods_spec(),
        *_class_structure_specs(),
        Spec("comparisons.scores_from_runs", __import__("ibp_lab.evaluation.comparisons", fromlist=["_"]).scores_from_runs,
             dict(runs=[{"methods": {"m": {"score_a": 1.0, "score_b": 1.2, "seconds": 0.3}}}],
                  methods=["m"]),
             dict(runs=lambda b: [("None", None, R), ("str", "runs", R), ("empty", [], R),
                                  ("no methods", [{}], R), ("entry missing", [{"methods": {}}], R)],
                  methods=lambda b: [("None", None, R), ("str", "m", R), ("empty", [], R),
                                     ("unknown", ["x"], R)]),
             lambda out: None if len(out) == 2 else "not (scores, seconds)"),
        Spec("comparisons.comparison_table",
             __import__("ibp_lab.evaluation.comparisons", fromlist=["_"]).comparison_table,
             dict(rows=_example_rows(),
                  reference="a"),
             dict(rows=lambda b: [("None", None, R), ("str", "rows", R), ("empty", [], R),
                                  ("not rows", [{"method": "a"}], R),
                                  ("one method only", b[:1], E)],
                  reference=lambda b: [("unknown", "c", R), ("None", None, R),
                                       ("int", 3, R)]),
             lambda t: None if t.shape[0] in (1, 2) else f"{t.shape[0]} rows"),
        Spec("comparisons.claim_verdict", __import__("ibp_lab.evaluation.comparisons", fromlist=["_"]).claim_verdict,
             dict(differences=[0.5, 0.4], standard_errors=[0.1, 0.1], z=2.0),
             dict(differences="vector", standard_errors="vector", z=P),
             lambda v: None if isinstance(v, str) else f"not a verdict: {v!r}",
             extremes=[("lengths differ", dict(standard_errors=[0.1]), R),
                       ("negative error", dict(standard_errors=[-0.1, 0.1]), R),
                       ("zero errors", dict(standard_errors=[0.0, 0.0]), A),
                       ("ties", dict(differences=[0.0, 0.0]), A), ("one", dict(differences=[0.5], standard_errors=[0.1]), A),
                       ("empty", dict(differences=[], standard_errors=[]), E),
                       ("inf difference", dict(differences=[np.inf, 0.4]), R),
                       ("int", dict(differences=[1, 0], standard_errors=[1, 1]), A)]),
        Spec("streaming_variational.StreamResult.elbo", lambda: res.elbo(), {}, {}, number),
        Spec("streaming_variational.StreamResult.ibp_elbo", lambda: res.ibp_elbo(), {}, {},
             number, junk=[("finite family", lambda: finite.ibp_elbo(), ("family",), R)]),
        Spec("streaming_variational.StreamResult.predictive_draws",
             lambda n_draws, rng: res.predictive_draws(n_draws, rng),
             dict(n_draws=4, rng=fresh_rng()), dict(n_draws=C, rng=G),
             lambda out: first_problem(in_unit_interval(out[0]),
                                       is_nonnegative(out[2], "variances"))),
        Spec("streaming_variational.StreamResult.transform", lambda X_new: res.transform(X_new),
             dict(X_new=X[:2]), dict(X_new="matrix"), in_unit_interval,
             extremes=[("one column short", dict(X_new=X[:2, :-1]), R)]),
    ]


def _nonconjugate_figure_specs():
    import matplotlib

    from ibp_lab.teaching.plotting import nonconjugate as fig

    matplotlib.use("Agg")
    rng = fresh_rng()
    counts = rng.dirichlet(np.ones(5), size=4)
    pixels = rng.random((4, 4))
    trace = [1.0, 2.0, 2.0]
    return [
        Spec("plotting.nonconjugate.traces_by_sweep_figure", fig.traces_by_sweep_figure,
             dict(traces={"chain 1": trace}, ylabel="K+"),
             dict(traces=lambda b: _mapping_junk(trace)(b) + [
                 ("2-D values", {"a": [trace, trace]}, R), ("empty values", {"a": []}, R),
                 ("seven chains", {str(i): trace for i in range(7)}, R)], ylabel="text"),
             _figure_drawn),
        Spec("plotting.nonconjugate.binary_check_figure", fig.binary_check_figure,
             dict(observed_counts=counts[0], replicated_counts=counts[1:],
                  observed_pixels=pixels[0], replicated_pixels=pixels[1:], band=0.9),
             dict(observed_counts="vector", replicated_counts="matrix", observed_pixels="vector",
                  replicated_pixels="matrix", band="probability"), _figure_drawn,
             extremes=[("counts above 1", dict(observed_counts=counts[0] * 3), R),
                       ("pixels one short", dict(observed_pixels=pixels[0, :3]), R),
                       ("replicated width", dict(replicated_pixels=pixels[1:, :3]), R),
                       ("band 1", dict(band=1.0), R)]),
    ]


def _paper_figure_specs():
    import matplotlib

    from ibp_lab.teaching.plotting import paper as fig

    matplotlib.use("Agg")
    means = {"a": [-3.0, -4.0], "b": [-3.5, -5.0]}
    spreads = {"a": [0.1, 0.2], "b": [0.3, 0.1]}
    seconds = {"a": [0.5, 0.6], "b": [0.05, 0.07]}
    return [
        Spec("plotting.paper.score_and_time_figure", fig.score_and_time_figure,
             dict(settings=[1.0, 2.0], means=means, spreads=spreads, seconds=seconds,
                  xlabel="alpha", ylabel="score"),
             dict(settings="vector", means=_mapping_junk([-3.0, -4.0]),
                  spreads=_mapping_junk([0.1, 0.2]), seconds=_mapping_junk([0.5, 0.6]),
                  xlabel="text", ylabel="text"), _figure_drawn,
             extremes=[("settings decreasing", dict(settings=[2.0, 1.0]), R),
                       ("one setting short", dict(settings=[1.0]), R),
                       ("negative spread", dict(spreads=dict(spreads, a=[-0.1, 0.2])), R),
                       ("zero seconds", dict(seconds=dict(seconds, a=[0.0, 0.6])), R),
                       ("a method missing", dict(seconds={"a": [0.5, 0.6]}), R),
                       ("seven methods", dict(means={str(i): [1.0, 2.0] for i in range(7)}), R)]),
        Spec("plotting.paper.class_matrices_figure", fig.class_matrices_figure,
             dict(classes=[1, 3, 5], matrices={"a": np.eye(3), "b": np.ones((3, 3))}),
             dict(classes=lambda b: [("None", None, R), ("one class", [1], R), ("2-D", [b], R)],
                  matrices=_mapping_junk(np.eye(3))), _figure_drawn,
             extremes=[("wrong shape", dict(matrices={"a": np.eye(4)}), R),
                       ("five panels", dict(matrices={str(i): np.eye(3) for i in range(5)}), R)]),
    ]


def _noisy_or_specs(Z, state_check, run_check):
    from ibp_lab.inference import noisy_or

    X = (data() > 0).astype(np.int8)
    W = np.array([[1, 0, 1], [0, 1, 1]])
    model = dict(weight_prob=0.3, strength=0.8, leak=0.05)
    probabilities = dict(weight_prob="probability", strength="probability", leak="probability")
    finite = lambda v: None if np.isfinite(v) else f"not finite: {v}"  # noqa: E731
    # Beta shapes: a pair, each in [0.01, 1e6] (below, the truncated prior's draws lose
    # their precision)
    beta_prior = lambda base: [("nan", (float("nan"), 1.0), R), ("negative", (-1.0, 1.0), R),  # noqa: E731
                               ("one number", (1.0,), R), ("str", "ab", R), ("None", None, R),
                               ("tiny shape", (1e-300, 1.0), R), ("shape 0.001", (1e-3, 1.0), R),
                               ("huge shape", (1.0, 1e300), R), ("complex", (1j, 1.0), R),
                               ("np.array", np.array([2.0, 3.0]), A), ("edge shapes", (0.01, 1e6), A)]
    # learn: names among the three; priors: Beta shapes by name, each checked as above
    learn_names = lambda base: [  # noqa: E731
        ("unknown name", ["alpha"], R), ("name in capitals", ["Leak"], R), ("None", None, R),
        ("int", 3, R), ("nested list", [["leak"]], R), ("np.array", np.array(["leak"]), R),
        ("one name as a str", "leak", A), ("a set", {"leak", "strength"}, A),
        ("all three", ["weight_prob", "leak", "strength"], A), ("repeated", ["leak", "leak"], A)]
    beta_priors = lambda base: [  # noqa: E731
        ("list", [(1.0, 1.0)], R), ("str", "leak", R), ("unknown key", {"alpha": (1.0, 1.0)}, R),
        ("empty", {}, A)] + [(f"leak {label}", {"leak": value}, verdict)
                             for label, value, verdict in beta_prior(None)]
    # W0 alone (the base has no Z0): refused whatever it is
    links_without_z0 = lambda base: [("links", W, R), ("bool links", W.astype(bool), R),  # noqa: E731
                                     ("list", W.tolist(), R), ("str", "W", R)]
    learn_all = dict(learn=("strength", "leak", "weight_prob"))
    learning_extremes = [
        ("learn all three", learn_all, A),
        ("learn all three, births from the data", dict(learn_all, births="data"), A),
        ("learn at the shapes' edges", dict(learn_all, priors=dict(
            strength=(0.01, 1e6), leak=(1e6, 0.01), weight_prob=(0.01, 0.01))), A),
        ("learn from the support's edges", dict(learn_all, strength=1 - 1e-9, leak=1e-9,
                                                weight_prob=1e-9), A),
        ("learn on all-zero X", dict(learn_all, X=np.zeros_like(X)), A),
        ("learn on all-one X, data births", dict(learn_all, X=np.ones_like(X), births="data"), A)]
    sweep_extremes = [("W one row short", dict(W=W[:1]), R), ("W entry 2", dict(W=W * 2), R),
                      ("alpha 1e6", dict(alpha=1e6), R), ("strength 1 - 1e-12",
                                                          dict(strength=1 - 1e-12), R)
                      ] + [e for e in hyper_edges(dict(alpha=1, beta=1)) if e[0] != "alpha 1000"] + [
                      e for e in data_edges(dict(X=X), binary=True) if "row" not in e[0]]
    return [
        Spec("noisy_or.NoisyOrParameters.checked", noisy_or.NoisyOrParameters.checked,
             dict(alpha=1.0, **model, beta=1.0), dict(alpha=P, beta=P, **probabilities)),
        Spec("noisy_or.log_likelihood", noisy_or.log_likelihood,
             dict(X=X, Z=Z, W=W, strength=0.8, leak=0.05),
             dict(X="binary", Z="binary", W="binary", strength="probability",
                  leak="probability"), finite),
        Spec("noisy_or.simulate", noisy_or.simulate, dict(Z=Z, W=W, rng=fresh_rng(), strength=0.8,
                                                          leak=0.05),
             dict(Z="binary", W="binary", rng=G, strength="probability", leak="probability"),
             is_binary),
        Spec("noisy_or.noisy_or_sweep", noisy_or.noisy_or_sweep,
             dict(X=X, Z=Z, W=W, rng=fresh_rng(), alpha=1.0, **model, beta=1.0, births="prior"),
             dict(X="binary", Z="binary", W="binary", rng=G, alpha=P, beta=P, **probabilities,
                  births=_choice(["prior", "data"])),
             state_check, extremes=sweep_extremes + [
                 ("births data at the extremes", dict(births="data", alpha=1e-100,
                                                      strength=1 - 1e-9, leak=1e-9), A)]),
        Spec("noisy_or.run_noisy_or", noisy_or.run_noisy_or,
             dict(X=X, n_sweeps=4, rng=fresh_rng(), alpha=1.0, **model, beta=1.0, Z0=None, burn=0,
                  thin=1, births="prior", learn=(), priors=None, W0=None),
             dict(X="binary", n_sweeps=C, rng=G, alpha=P, beta=P, Z0="binary", burn=C, thin=C,
                  **probabilities, births=_choice(["prior", "data"]), learn=learn_names,
                  priors=beta_priors, W0=links_without_z0), run_check, time_limit=20,
             extremes=[("Z0 given", dict(Z0=Z), A), ("burn beyond n_sweeps", dict(burn=10), R),
                       ("Z0 and W0 given", dict(Z0=Z, W0=W), A),
                       ("W0 one row short", dict(Z0=Z, W0=W[:1]), R),
                       ("W0 entry 2", dict(Z0=Z, W0=W * 2), R),
                       ("W0 nan", dict(Z0=Z, W0=np.where(W > 0, np.nan, 0.0)), R),
                       ("W0 one column short", dict(Z0=Z, W0=W[:, :-1]), R),
                       ("Z0 and W0 with no columns", dict(Z0=Z[:, :0], W0=W[:0]), A),
                       ("huge n_sweeps", dict(n_sweeps=10**9), R)]
             + hyper_edges(dict(alpha=1, beta=1)) + data_edges(dict(X=X), binary=True)
             + [("leak 0", dict(leak=0.0), E), ("strength 1", dict(strength=1.0), E)]
             + learning_extremes),
        Spec("noisy_or.class_posterior", noisy_or.class_posterior,
             dict(X=X[:3], alpha=1.0, **model, beta=1.0, k_max=3),
             dict(X="binary", alpha=P, beta=P, k_max=C, **probabilities),
             lambda post: is_distribution(post.probabilities), time_limit=20,
             extremes=[("five rows", dict(X=X[:5]), R), ("k_max 40", dict(k_max=40), R),
                       ("issue 48: 4 x 2 at the default k_max", dict(X=X[:4, :2], k_max=8), E)]
             + hyper_edges(dict(alpha=1, beta=1)) + data_edges(dict(X=X[:3]), binary=True)),
    ]


def is_finite_matrix(value):
    value = np.asarray(value, float)
    return None if value.ndim == 2 and np.all(np.isfinite(value)) else "not a finite matrix"


GROUPS = {
    "theory": specs_theory,
    "prior": specs_prior, "recursive": specs_recursive, "datasets": specs_datasets,
    "models": specs_models, "summaries": specs_summaries, "heldout": specs_heldout,
    "predictive": specs_predictive, "pymc": specs_pymc, "streaming": specs_streaming,
    "plotting": specs_plotting, "widgets": specs_widgets, "explorers": specs_explorers,
    "plotting_submodules": specs_plotting_submodules, "exercises": specs_exercises,
    "late": specs_late, "births": specs_births, "smc": specs_smc,
    "hyperposterior": specs_hyperposterior, "nonconjugate": specs_nonconjugate,
    "streaming_vi": specs_streaming_vi,
}


def _broken_group(name, exc):
    """A group whose fixtures cannot be built is one failing case, not a broken collection."""
    def reraise():
        raise exc
    return [Spec(f"{name}.<fixtures>", reraise, {}, {})]


@functools.cache
def group_specs(name: str) -> tuple:
    try:
        specs = GROUPS[name]()
    except Exception as exc:  # noqa: BLE001 - reported as a failing case
        specs = _broken_group(name, exc)
    for spec in specs:
        spec.group = name
    return tuple(specs)


def all_specs(groups=None) -> tuple:
    return tuple(spec for name in (groups or GROUPS) for spec in group_specs(name))


def all_cases(function: str | None = None, groups=None) -> list[Case]:
    return [c for s in all_specs(groups) if function in (None, s.function) for c in spec_cases(s)]


#: Functions whose first call compiles numba kernels: run once in the parent, so that no
#: child compiles against its time limit.
_WARM = ("gibbs.", "split_merge.", "streaming.", "exact.", "heldout.ibp_gibbs", "linear_gaussian.",
         "tempering.", "smc.", "chains.", "uncollapsed.",
         "slice_sampler.", "noisy_or.")


def warm_up(cases) -> None:
    here = os.getcwd()
    os.chdir(tempfile_dir())  # the save/load cases write into the working directory
    try:
        for case in cases:
            if case.label == "valid" and case.function.startswith(_WARM):
                try:
                    case.call()
                except Exception:  # noqa: BLE001 - the forked run reports it
                    pass
    finally:
        os.chdir(here)



# --------------------------------------------------------------------------------------
# Issue 52: the Gibbs sampler's estimator and the chains' pointwise log-likelihood
# --------------------------------------------------------------------------------------


def _gibbs_fit(alpha, sigma_x, sigma_a, n_chains, n_sweeps, burn, thin, rng, X):
    from ibp_lab.inference.gibbs_estimator import GibbsIBP
    return GibbsIBP(alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a, n_chains=n_chains,
                    n_sweeps=n_sweeps, burn=burn, thin=thin, rng=rng).fit(X)


def _gibbs_fitted_check(model):
    """A fitted GibbsIBP: finite features, ownership in [0, 1], support in [1/2, 1]."""
    support = np.asarray(model.feature_support_, float)
    return first_problem(scan_result_of(model.features_), in_unit_interval(model.ownership_),
                         None if np.all((support >= 0.5) & (support <= 1)) else "support")


@functools.cache
def _gibbs_fitted():
    from ibp_lab.inference.gibbs_estimator import GibbsIBP
    return GibbsIBP(sigma_x=0.5, n_chains=1, n_sweeps=6, burn=2, thin=1, n_score_draws=2,
                    rng=fresh_rng()).fit(data())


def specs_gibbs_estimator():
    """GibbsIBP and chains.pointwise_log_likelihood (issue 52)."""
    from ibp_lab.inference import chains
    from ibp_lab.inference.gibbs_estimator import GibbsIBP

    X = data()
    fitted = _gibbs_fitted()
    unfitted = lambda: GibbsIBP(n_sweeps=6, burn=2)  # noqa: E731
    nx = lambda b: [m_ for m_ in _estimator_matrix(b) if m_[0] != "1-D row"] + [  # noqa: E731
        ("wrong width", np.ones((2, 5)), R)]
    return [
        Spec("chains.pointwise_log_likelihood", chains.pointwise_log_likelihood,
             dict(X=X, Z=np.ones((X.shape[0], 1)), sigma_x=0.5, sigma_a=1.0),
             dict(X="matrix", Z="binary", sigma_x=P, sigma_a=P), scan_result_of),
        Spec("gibbs_estimator.GibbsIBP.fit", _gibbs_fit,
             dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, n_chains=1, n_sweeps=6, burn=2, thin=1,
                  rng=fresh_rng(), X=X),
             dict(alpha=P, sigma_x=P, sigma_a=P, n_chains=C, n_sweeps=C, burn="count", thin=C,
                  rng=_estimator_rng, X=_estimator_matrix), _gibbs_fitted_check, time_limit=20,
             extremes=[("burn as long as the run", dict(burn=6), R),
                       ("data 1e150", dict(X=X * 1e150), E)]),
        Spec("gibbs_estimator.GibbsIBP.transform", lambda X: fitted.transform(X),
             dict(X=X), dict(X=nx), in_unit_interval,
             junk=[("unfitted", lambda: unfitted().transform(X), ("fit",), E)]),
        Spec("gibbs_estimator.GibbsIBP.score", lambda X: fitted.score(X),
             dict(X=X), dict(X=nx), lambda s: None if np.isfinite(s) else f"score {s}",
             time_limit=20,
             junk=[("unfitted", lambda: unfitted().score(X), ("fit",), E)]),
    ]


GROUPS["gibbs_estimator"] = specs_gibbs_estimator
