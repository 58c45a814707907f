"""Checkpoints of a RecursiveIBP stream: every field checked, files atomic, nothing unpickled.

What is checked:

- every bit generator of numpy.random.Generator survives save/load bit for bit, and the
  stream resumes identically after it;
- a state is refused as a whole, with one ``ValueError("... not a valid RecursiveIBP
  state: ...")``, when any one field is edited to a wrong type, a wrong shape or dtype, an
  out-of-range or inconsistent value, or is missing, or when an extra one is added; the
  estimator is then left exactly as it was (it still predicts the same numbers);
- a file truncated at any of several lengths, random bytes, a zip with the wrong members,
  an object array and a header that lies about its size are all refused the same way;
- a saved file name never chooses a function (``rng_kind="seed"`` does not reseed NumPy);
- a save that fails leaves the previous checkpoint intact and no temporary file behind,
  and the data are flushed to disk before the rename.
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

from ibp_lab.datasets import simulate_four_feature_data
from ibp_lab.inference.streaming import RecursiveIBP
from ibp_lab.inference.streaming import _state

INVALID = "state is not a valid RecursiveIBP state: "
BIT_GENERATORS = ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"]


@pytest.fixture(scope="module")
def data():
    X, _, _ = simulate_four_feature_data(np.random.default_rng(6), n=80, sigma_x=0.2)
    return X


def fitted(X, model="linear_gaussian", bit_generator="PCG64", n=40):
    rng = np.random.Generator(getattr(np.random, bit_generator)(11))  # the test's choice
    return RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.25, sigma_a=0.5, model=model,
                        record_posteriors=True,
                        rng=rng, births="single").partial_fit(X[:n])


@pytest.fixture(scope="module")
def good_state(data):
    state = fitted(data).get_state()
    assert state["features"].shape[0] >= 2 and state["posterior_rows"].size > 0
    return state


def same_state(a: dict, b: dict) -> bool:
    if set(a) != set(b):
        return False
    for key in a:
        if isinstance(a[key], np.ndarray) or isinstance(b[key], np.ndarray):
            same_dtype = np.asarray(a[key]).dtype == np.asarray(b[key]).dtype
            if not (same_dtype and np.array_equal(a[key], b[key])):
                return False
        elif key == "rng_state":
            if _state.encode_rng_state(a[key]) != _state.encode_rng_state(b[key]):
                return False
        elif a[key] != b[key] or type(a[key]) is not type(b[key]):
            return False
    return True


# --- bit generators ---------------------------------------------------------------------------

@pytest.mark.parametrize("model_name", ["linear_gaussian", "factor_analysis"])
@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
def test_every_bit_generator_round_trips_bit_for_bit(bit_generator, model_name, data, tmp_path):
    whole = fitted(data, model_name, bit_generator, n=60)
    first = fitted(data, model_name, bit_generator, n=30)
    first.save(tmp_path / "stream.npz")
    resumed = RecursiveIBP.load(tmp_path / "stream.npz")
    assert type(resumed.rng.bit_generator).__name__ == bit_generator
    assert same_state(resumed.get_state(), first.get_state())
    resumed.partial_fit(data[30:60])
    assert same_state(resumed.get_state(), whole.get_state())
    # the generator's state travelled exactly: the same predictive draws, then the same words
    assert np.array_equal(resumed.predictive_logpdf(data[:3], n_draws=20),
                          whole.predictive_logpdf(data[:3], n_draws=20))
    assert np.array_equal(resumed.rng.integers(0, 2**63, 8), whole.rng.integers(0, 2**63, 8))


def test_saved_rng_kind_never_chooses_a_function(good_state, tmp_path):
    before = np.random.get_state()[1].copy()
    for kind in ("seed", "default_rng", "__class__", "RandomState", "Generator"):
        state = dict(good_state, rng_kind=kind)
        with pytest.raises(ValueError, match=INVALID + "rng_kind must be one of"):
            RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                         births="single").set_state(state)
        _state.write_state(tmp_path / "s.npz", state)
        with pytest.raises(ValueError, match="rng_kind must be one of"):
            RecursiveIBP.load(tmp_path / "s.npz")
    assert np.array_equal(np.random.get_state()[1], before)  # the global generator untouched


# --- every field, edited ----------------------------------------------------------------------

def _pcg_state(**changes):
    def edit(state):
        rng_state = json.loads(json.dumps(_state.encode_rng_state(state["rng_state"])))
        rng_state["state"].update(changes)  # PCG64 holds no arrays: a plain dict
        return rng_state
    return edit


def _last(key, value):
    def edit(state):
        arr = state[key].copy()
        arr[-1] = value
        return arr
    return edit


def _first(key, value):
    def edit(state):
        arr = state[key].copy()
        arr[0] = value
        return arr
    return edit


def _swap(key):
    def edit(state):
        return state[key][::-1].copy()
    return edit


# (field, new value or function of the state, what the message names)
EDITS = [
    ("version", "3", "version must be 3"),
    ("version", 1, "version must be 3"),  # version 1 had no retired_log_pmf
    ("version", 2, "version must be 3"),  # version 2 had no birth buffer
    ("version", True, "version must be 3"),
    ("log_alpha", "0.0", "log_alpha must be a finite real"),
    ("log_alpha", float("nan"), "log_alpha must be a finite real"),
    ("log_alpha", -float("inf"), "log_alpha must be a finite real"),
    ("log_alpha", 20.0, "log_alpha must be a finite real <= log"),
    ("beta", "1", "beta must be a real number"),
    ("beta", -1.0, "beta must be > 0"),
    ("beta", True, "beta must be a real number"),
    ("sigma_x", 0.0, "sigma_x must be > 0"),
    ("sigma_x", float("inf"), "sigma_x must be finite"),
    ("sigma_a", [0.5], "sigma_a must be a real number"),
    ("sigma_a", 0.1, "variances must be in"),  # the stored variances exceed the new prior
    ("sigma_w", -2.0, "sigma_w must be > 0"),
    ("model", 3, "model must be 'linear_gaussian' or 'factor_analysis'"),
    ("model", "pca", "model must be 'linear_gaussian' or 'factor_analysis'"),
    ("n_steps", 2.5, "n_steps must be an integer"),
    ("n_steps", 0, "n_steps must be an integer >= 1"),
    ("n_steps", 10**9, "n_steps must be an integer <= 10000"),
    ("tol", 0.5, "tol must be <= 0.01"),
    ("tol", "x", "tol must be a real number"),
    ("ossify", "no", "ossify must be True or False"),
    ("ossify", 1, "ossify must be True or False"),
    ("keep_history", None, "keep_history must be True or False"),
    ("keep_history", False, "rate_history and slots_history must have 0 entries"),
    ("record_posteriors", "yes", "record_posteriors must be True or False"),
    ("record_posteriors", False, "posteriors are recorded only with record_posteriors=True"),
    ("rng_state", "x", "rng_state must be a dict"),
    ("rng_state", {}, "rng_state is not a PCG64 state"),
    ("rng_state", {"bit_generator": "MT19937", "state": {"key": 1, "pos": 2}},
     "rng_state is not a PCG64 state"),
    ("rng_state", _pcg_state(state=-5), "rng_state is not a PCG64 state|out of range"),
    ("rng_state", _pcg_state(inc=2**200), "rng_state is not a PCG64 state|out of range"),
    ("rng_state", lambda s: dict(s["rng_state"], has_uint32=-1), "has_uint32 must be in"),
    ("rng_state", lambda s: dict(s["rng_state"], has_uint32=2), "has_uint32 must be in"),
    ("rng_state", _pcg_state(state=1.5), "rng_state entries must be integers"),
    ("rng_kind", 3, "rng_kind must be one of"),
    ("rng_kind", "MT19937", "rng_state is not a MT19937 state"),
    ("dim", "36", "dim must be an integer"),
    ("dim", 0, "dim must be an integer >= 1"),
    ("dim", 5, "features must have shape"),
    ("dim", None, "dim is None with n_seen"),
    ("n_seen", -1, "n_seen must be an integer >= 0"),
    ("n_seen", 40.0, "n_seen must be an integer"),
    ("n_seen", 0, "dim is 36 with n_seen = 0"),
    ("n_seen", 41, "must have 41 entries"),
    ("n_seen", 10**30, "n_seen must be an integer <="),
    ("n_seen", 10**8, "n_seen = 100000000 exceeds 10000000"),
    ("retired_rate", -1.0, "retired_rate must be >= 0"),
    ("retired_rate", float("nan"), "retired_rate must be finite"),
    ("retired_rate", 1e6, "retired_rate .* exceeds"),
    ("retired_log_pmf", lambda s: np.zeros(2), "retired_log_pmf must have 1 to 1 entries"),
    ("retired_log_pmf", lambda s: np.zeros(0), "retired_log_pmf must have 1 to 1 entries"),
    ("retired_log_pmf", lambda s: np.array([-0.1]), "retired_log_pmf must sum to 1"),
    ("retired_log_pmf", lambda s: np.array([np.nan]), "retired_log_pmf must hold logs"),
    ("retired_log_pmf", lambda s: np.array([0.5]), "retired_log_pmf must hold logs"),
    ("retired_log_pmf", lambda s: np.zeros((1, 1)), "retired_log_pmf must be 1-D"),
    ("retired_log_pmf", lambda s: np.zeros(1, np.int64), "retired_log_pmf must be a floating"),
    ("next_dish", 0, "next_dish must be an integer >= 1"),
    ("next_dish", "9", "next_dish must be an integer"),
    ("next_dish", 2, "dish must be strictly increasing dish numbers"),
    ("rate", -1.0, "rate must be >= 0"),
    ("rate", float("inf"), "rate must be finite"),
    ("rate", lambda s: s["rate"] + 1.0, "rate must be the sum of the existence"),
    ("features", lambda s: s["features"].astype(np.int64), "features must be a floating-point"),
    ("features", lambda s: s["features"].astype(str), "features must be a floating-point"),
    ("features", lambda s: s["features"].astype(complex), "features must be a floating-point"),
    ("features", lambda s: s["features"].astype(object), "features must be a floating-point"),
    ("features", lambda s: s["features"][0], "features must be 2-D"),
    ("features", lambda s: s["features"][:-1], "variances must have shape"),
    ("features", lambda s: s["features"][:, :-1], "features must have shape"),
    ("features", _first("features", np.nan), "features must be finite"),
    ("features", "abc", "features must be an array"),
    ("variances", _first("variances", -1.0), "variances must be in"),
    ("variances", _first("variances", 0.0), "variances must be in"),
    ("variances", _first("variances", np.nan), "variances must be in"),
    ("variances", lambda s: s["variances"][:-1], "variances must have shape"),
    ("variances", lambda s: s["variances"].astype(np.int64), "variances must be a floating"),
    ("usage", _first("usage", -0.5), "usage must be in"),
    ("usage", _first("usage", 41.0), "usage must be in"),
    ("usage", _first("usage", 1e-9), "usage must lie between"),
    ("usage", lambda s: s["usage"][None, :], "usage must be 1-D"),
    ("log_unowned", _first("log_unowned", 0.5), "log_unowned must be <= 0"),
    ("log_unowned", _first("log_unowned", np.nan), "log_unowned must be <= 0"),
    ("log_unowned", _first("log_unowned", 0.0), "usage must lie between"),
    ("log_unowned", lambda s: s["log_unowned"][:1], "log_unowned must have shape"),
    ("dish", lambda s: s["dish"].astype(float), "dish must be an integer array"),
    ("dish", _swap("dish"), "dish must be strictly increasing"),
    ("dish", _first("dish", 0), "dish must be strictly increasing"),
    ("dish", _last("dish", 10**6), "dish must be strictly increasing"),
    ("dish", lambda s: -s["dish"], "dish must hold non-negative integers"),
    ("rate_history", lambda s: s["rate_history"][:-1], "must have 40 entries"),
    ("rate_history", _first("rate_history", -1.0), "rate_history must hold finite rates"),
    ("rate_history", _first("rate_history", np.inf), "rate_history must hold finite rates"),
    ("rate_history", _last("rate_history", 0.0), "the histories must end at the current"),
    ("rate_history", lambda s: s["rate_history"][:, None], "rate_history must be 1-D"),
    ("slots_history", lambda s: s["slots_history"].astype(float), "slots_history must be an"),
    ("slots_history", _last("slots_history", 0), "the histories must end at the current"),
    ("slots_history", _first("slots_history", 10**6), "the histories must end at the current"),
    ("slots_history", lambda s: s["slots_history"][1:], "must have 40 entries"),
    ("posterior_rows", _last("posterior_rows", 40), "posterior_rows must be sorted rows"),
    ("posterior_rows", _swap("posterior_rows"), "posterior_rows must be sorted rows"),
    ("posterior_rows", lambda s: s["posterior_rows"][:-1], "must have the same length"),
    ("posterior_rows", lambda s: s["posterior_rows"].astype(float), "posterior_rows must be an"),
    ("posterior_dishes", _first("posterior_dishes", 0), "posterior_dishes increasing"),
    ("posterior_dishes", _last("posterior_dishes", 10**6), "posterior_dishes increasing"),
    ("posterior_values", _first("posterior_values", 1.5), "posterior_values must be probabilities"),
    ("posterior_values", _first("posterior_values", 0.0), "posterior_values must be probabilities"),
    ("posterior_values", _first("posterior_values", np.nan), "posterior_values must be prob"),
    ("posterior_values", lambda s: s["posterior_values"].astype(np.int64),
     "posterior_values must be a floating"),
    ("births", 3, "births must be 'buffer', 'single' or None"),
    ("births", "twice", "births must be 'buffer', 'single' or None"),
    ("buffer_size", 1, "buffer_size must be an integer >= 2"),
    ("buffer_size", 2.5, "buffer_size must be an integer"),
    ("buffer_size", 10**6, "buffer_size must be an integer <= 10000"),
    ("buffer_rows", lambda s: np.array([1]), "one row per buffer_rows entry"),
    ("buffer_residuals", lambda s: np.zeros((0, 35)), r"buffer_residuals must have shape \(0"),
    ("buffer_rows", lambda s: np.zeros(0), "buffer_rows must be an integer array"),
    ("buffer_residuals", lambda s: np.zeros((1, 36)), "one row per buffer_rows entry"),
    ("buffer_residuals", lambda s: np.zeros((0, 36), np.int64),
     "buffer_residuals must be a floating"),
    ("buffer_residuals", lambda s: np.zeros(0), "buffer_residuals must be 2-D"),
]


def edited(state, key, change):
    out = dict(state)
    out[key] = change(state) if callable(change) else change
    return out


def test_every_field_is_edited_somewhere():
    assert {key for key, _, _ in EDITS} == set(_state.SCALAR_KEYS) | set(_state.ARRAY_KEYS)


@pytest.mark.parametrize("key, change, message", EDITS,
                         ids=[f"{key}-{i}" for i, (key, _, _) in enumerate(EDITS)])
def test_edited_field_is_refused_and_leaves_the_model_untouched(key, change, message, data,
                                                                good_state):
    model = fitted(data, n=50)
    before = model.get_state()
    expected = model.predictive_logpdf(data[:3], n_draws=20, rng=np.random.default_rng(2))
    with pytest.raises(ValueError, match=INVALID + ".*(" + message + ")"):
        model.set_state(edited(good_state, key, change))
    assert same_state(model.get_state(), before)
    assert np.array_equal(
        model.predictive_logpdf(data[:3], n_draws=20, rng=np.random.default_rng(2)), expected)


@pytest.mark.parametrize("key", _state.SCALAR_KEYS + _state.ARRAY_KEYS)
def test_missing_field_is_refused(key, good_state):
    state = dict(good_state)
    del state[key]
    with pytest.raises(ValueError, match=INVALID + rf"missing \['{key}'\]"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                     births="single").set_state(state)


def test_extra_field_is_refused(good_state):
    with pytest.raises(ValueError, match=INVALID + r"unexpected \['colour'\]"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                     births="single").set_state(dict(good_state, colour="red"))


def test_malformed_retired_count_law_is_refused():
    """Three slots retired, each existing for sure: the law is the point mass at 3. Laws
    that no set of independent Bernoullis gives are refused, each naming the field."""
    e = 3 * np.eye(8)
    X = np.vstack([np.tile(e[1], (3, 1)), np.tile(e[2], (3, 1)), np.tile(e[3], (3, 1)),
                   np.tile(e[0], (400, 1))])
    state = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.1, sigma_a=1.0, tol=0.01, rng=0,
                         births="single").fit(X).get_state()
    assert np.array_equal(state["retired_log_pmf"], [-np.inf, -np.inf, -np.inf, 0.0])
    assert same_state(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                                   births="single").set_state(state).get_state(), state)
    for law, message in [
        ([0.5, 0.0, 0.0, 0.5], "no zero probabilities between"),  # gap in the support
        ([0.4, 0.1, 0.1, 0.4], "log-concave"),  # bimodal
        ([0.0, 0.0, 1.0, 0.0], "mean 2, not retired_rate 3"),
        ([0.0, 0.0, 1.0], "mean 2, not retired_rate 3"),
        ([0.0, 0.0, 0.0, 0.0, 1.0], "1 to 4 entries"),
    ]:
        with np.errstate(divide="ignore"):
            bad = dict(state, retired_log_pmf=np.log(np.array(law)))
        with pytest.raises(ValueError, match=INVALID + ".*" + message):
            RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                         births="single").set_state(bad)


def test_version_one_state_is_refused_with_its_reason(good_state):
    """A version-1 checkpoint has no retired_log_pmf; the message says why it cannot load."""
    old = {key: value for key, value in good_state.items() if key != "retired_log_pmf"}
    old["version"] = 1
    with pytest.raises(ValueError, match=INVALID + "version must be 3, got 1 .*refit"):
        RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0, births="single").set_state(old)


def test_valid_state_is_accepted_and_copied(good_state, data):
    """The checks refuse no state that the estimator itself produced (fresh, fitted, retired)."""
    # a seed: with rng=None every unfitted get_state() draws fresh entropy (scikit-learn's rule)
    fresh = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0, rng=0, births="single")
    assert same_state(RecursiveIBP(alpha=2.0, beta=2.0, sigma_x=2.0, sigma_a=2.0,
                                   births="single").set_state(fresh.get_state()).get_state(),
                      fresh.get_state())
    # a slot retired (tol = 0.01 drops a feature 3 of 403 observations own) and b = 1 exactly
    a, b = 3 * np.eye(6)[0], 3 * np.eye(6)[1]
    X = np.vstack([np.tile(b, (3, 1)), np.tile(a, (400, 1))])
    for model in (RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.1, sigma_a=1.0, tol=0.01,
                               record_posteriors=True, births="single").fit(X),
                  RecursiveIBP.bp_means_limit(1.5, 1e-3).fit(data),
                  RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.3, sigma_a=1.0, keep_history=False,
                               ossify=True, births="single").fit(data)):
        state = model.get_state()
        assert same_state(RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                                       births="single").set_state(state).get_state(), state)
    restored = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=1.0, sigma_a=1.0,
                            births="single").set_state(good_state)
    restored.partial_fit(data[40:45])  # fitting does not write into the caller's arrays
    assert same_state(good_state, fitted(data).get_state())


# --- files ---------------------------------------------------------------------------------------

@pytest.fixture()
def saved(data, tmp_path):
    path = tmp_path / "stream.npz"
    fitted(data).save(path)
    return path


def refused(path, message="corrupt or truncated"):
    with pytest.raises(ValueError, match=r"file '.*' is not a valid RecursiveIBP state: .*"
                                         + message):
        RecursiveIBP.load(path)


def test_truncated_file_is_refused_at_every_length(saved, tmp_path):
    raw = saved.read_bytes()
    for length in (0, 1, 4, 30, 100, 1000, len(raw) // 3, len(raw) // 2, len(raw) - 22,
                   len(raw) - 1):
        part = tmp_path / f"part{length}.npz"
        part.write_bytes(raw[:length])
        refused(part)


def test_random_bytes_and_foreign_files_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    for i, raw in enumerate([rng.bytes(2000), b"PK\x03\x04" + rng.bytes(500), b"\x93NUMPY",
                             json.dumps({"version": 1}).encode()]):
        path = tmp_path / f"junk{i}.npz"
        path.write_bytes(raw)
        refused(path)
    np.save(tmp_path / "plain.npy", np.zeros(3))  # a NumPy file, but not an archive
    refused(tmp_path / "plain.npy")
    with pytest.raises(FileNotFoundError):
        RecursiveIBP.load(tmp_path / "absent.npz")


def rewrite(path, **members):
    """Rebuild the archive at ``path`` with some members replaced (None: removed)."""
    with np.load(path, allow_pickle=False) as archive:
        contents = {name: archive[name] for name in archive.files}
    for name, value in members.items():
        if value is None:
            contents.pop(name)
        else:
            contents[name] = value
    with open(path, "wb") as handle:
        np.savez(handle, **contents)


def test_archive_with_wrong_members_is_refused(saved):
    rewrite(saved, usage=None)
    refused(saved, "members")
    rewrite(saved, usage=np.zeros(2), extra=np.zeros(1))
    refused(saved, "members")


def test_object_array_is_refused_without_unpickling(saved):
    class Boom:
        def __reduce__(self):
            return (os.system, ("echo unpickled > /dev/null",))

    with np.load(saved, allow_pickle=False) as archive:
        contents = {name: archive[name] for name in archive.files}
    contents["usage"] = np.array([Boom()], dtype=object)
    with open(saved, "wb") as handle:
        np.savez(handle, allow_pickle=True, **contents)
    refused(saved, "dtype object is not allowed")


def test_header_claiming_a_huge_array_is_refused_without_allocating(saved, tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    lying = np.lib.format.magic(1, 0) + buf.getvalue()[8:] + np.zeros(4).tobytes()
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(tmp_path / "lie.npz", "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, lying if info.filename == "usage.npy"
                         else src.read(info.filename))
    refused(tmp_path / "lie.npz", "array size disagrees with its header")


def test_edited_meta_is_refused(saved):
    with np.load(saved, allow_pickle=False) as archive:
        meta = json.loads(str(archive["meta"]))
    for key, value, message in [("ossify", "no", "ossify must be True or False"),
                                ("sigma_x", -1.0, "sigma_x must be > 0"),
                                ("rng_kind", "seed", "rng_kind must be one of")]:
        rewrite(saved, meta=np.array(json.dumps(dict(meta, **{key: value}))))
        refused(saved, message)
    rewrite(saved, meta=np.array("{not json"))
    refused(saved, "corrupt or truncated")
    rewrite(saved, meta=np.array(json.dumps([1, 2])))
    refused(saved, "meta must hold a JSON object")


def test_edited_arrays_in_a_file_are_refused(saved):
    with np.load(saved, allow_pickle=False) as archive:
        variances, dish = archive["variances"], archive["dish"]
    rewrite(saved, variances=-variances)
    refused(saved, "variances must be in")
    rewrite(saved, variances=variances, dish=dish.astype(np.float32))
    refused(saved, "dish must be an integer array")


# --- atomic saves ---------------------------------------------------------------------------

def test_failed_save_keeps_the_previous_checkpoint(saved, data, monkeypatch):
    good = saved.read_bytes()
    model = fitted(data, n=60)

    def broken_savez(handle, **arrays):
        handle.write(b"PK partial")
        raise OSError("disk full")

    monkeypatch.setattr(_state.np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        model.save(saved)
    monkeypatch.undo()
    assert saved.read_bytes() == good
    assert RecursiveIBP.load(saved).n_seen_ == 40
    assert sorted(p.name for p in saved.parent.iterdir()) == ["stream.npz"]  # no temporary


def test_save_flushes_to_disk_then_renames(saved, data, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(_state.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(_state.os, "replace",
                        lambda a, b: (events.append(("replace", os.path.dirname(a))),
                                      real_replace(a, b)))
    fitted(data, n=60).save(saved)
    assert events[0] == "fsync"
    assert events[1] == ("replace", str(saved.parent))  # the temporary is in the same folder
    assert RecursiveIBP.load(saved).n_seen_ == 60


def test_save_refuses_a_non_path(data):
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        fitted(data).save(3)


# --- files at the edges (third audit) -------------------------------------------------------------

def test_a_restricted_checkpoint_stays_restricted_when_saved_over(data, saved):
    os.chmod(saved, 0o600)
    fitted(data, n=50).save(saved)
    assert os.stat(saved).st_mode & 0o777 == 0o600
    assert RecursiveIBP.load(saved).n_seen_ == 50


def test_a_killed_saves_temporary_file_is_removed_by_the_next_save(data, saved):
    prefix = _state._temporary_prefix(saved)
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    dead = saved.with_name(f"{prefix}{int(child.stdout)}.abcd1234.tmp")  # its writer has ended
    alive = saved.with_name(f"{prefix}{os.getppid()}.abcd1234.tmp")  # a running process's
    dead.write_bytes(b"half a checkpoint")
    alive.write_bytes(b"being written")
    fitted(data).save(saved)
    assert not dead.exists() and alive.exists()
    assert sorted(p.name for p in saved.parent.iterdir()) == sorted([saved.name, alive.name])


def test_a_name_the_system_accepts_can_be_saved(data, tmp_path):
    path = tmp_path / ("s" * 251 + ".npz")  # 255 bytes, the usual limit of a name
    fitted(data).save(path)
    assert RecursiveIBP.load(path).n_seen_ == 40


def test_an_empty_path_is_refused_by_name(data):
    for call in (lambda: fitted(data).save(""), lambda: RecursiveIBP.load("")):
        with pytest.raises(ValueError, match="path must name a file"):
            call()


def test_load_refuses_a_fifo_and_a_device_without_reading_them(tmp_path):
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        with pytest.raises(ValueError, match="not a regular file"):
            RecursiveIBP.load(path)  # before: the FIFO blocked, /dev/zero read 1 GiB


def test_a_copy_continues_its_stream_bit_for_bit_like_the_original(data):
    """deepcopy, pickle and joblib of a fitted estimator resume partial_fit. The generator
    parameter was recorded by id(), which a copy does not keep, so every copy refused
    ("the parameters changed"); a new generator set on purpose is still refused."""
    import copy
    import io
    import pickle

    import joblib

    original = fitted(data, n=30)

    def joblib_copy(model):
        buffer = io.BytesIO()
        joblib.dump(model, buffer)
        buffer.seek(0)
        return joblib.load(buffer)

    expected = copy.deepcopy(original).partial_fit(data[30:45]).get_state()
    for make_copy in (copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m)), joblib_copy):
        resumed = make_copy(original).partial_fit(data[30:45])
        assert same_state(resumed.get_state(), expected)
    # clone copies the parameters only (scikit-learn's contract): refitted on the same rows
    # it is the original, bit for bit
    from sklearn.base import clone

    refitted = clone(original).partial_fit(data[:30]).partial_fit(data[30:45])
    assert same_state(refitted.get_state(), expected)
    original.set_params(rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="the parameters changed"):
        original.partial_fit(data[30:45])


def test_scoring_leaves_the_estimator_unchanged_and_repeats_itself(data):
    """score and predictive_logpdf drew from rng_ itself, so each call advanced the fitted
    generator: the estimator changed by being scored, and the next partial_fit differed."""
    model = fitted(data, n=30)
    before = model.get_state()
    first = model.score(data[30:40])
    assert model.score(data[30:40]) == first
    np.testing.assert_array_equal(model.predictive_logpdf(data[30:35]),
                                  model.predictive_logpdf(data[30:35]))
    assert same_state(model.get_state(), before)


def test_threads_feeding_one_estimator_take_turns(tmp_path):
    # Four threads each pushing rows one at a time into one estimator used to interleave
    # inside an update: n_seen_ was 59 after 121 rows and save() wrote a state that load()
    # refused. Calls now take turns: every row is counted once and the checkpoint loads.
    import threading

    X = np.random.default_rng(0).normal(size=(124, 3))
    model = RecursiveIBP(sigma_x=0.5, rng=0).partial_fit(X[:1])
    start = threading.Barrier(4)

    def feed(rows):
        start.wait()
        for row in rows:
            model.partial_fit(row)

    threads = [threading.Thread(target=feed, args=(X[1 + i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    saves = 0
    while any(thread.is_alive() for thread in threads):  # save while they run
        model.save(tmp_path / "mid.npz")
        RecursiveIBP.load(tmp_path / "mid.npz")
        saves += 1
    for thread in threads:
        thread.join()
    assert model.n_seen_ == X.shape[0] and saves >= 1
    assert len(model.expected_features_history_) == X.shape[0]
    model.save(tmp_path / "end.npz")
    assert RecursiveIBP.load(tmp_path / "end.npz").n_seen_ == X.shape[0]


def test_a_copy_of_an_estimator_in_use_has_its_own_lock():
    import copy
    import pickle

    model = RecursiveIBP(sigma_x=0.5, rng=0).fit(np.eye(3))
    twin = pickle.loads(pickle.dumps(model))
    assert "_lock" not in twin.__dict__
    twin.partial_fit(np.ones(3))
    assert twin.__dict__["_lock"] is not model.__dict__["_lock"]
    assert copy.deepcopy(model).n_seen_ == model.n_seen_
