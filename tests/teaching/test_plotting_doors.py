"""The figure functions' doors: valid book-like inputs still draw, junk is refused by name.

The hostile-input campaign (tests/campaign.py) covers one junk value per argument; these
tests pin the pipelines the chapters use (outputs of ibp_lab functions fed straight into
the figures), so that a door never refuses what the book passes, and a few refusals whose
wording matters to a student.
"""

from __future__ import annotations

import ast
import functools
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from layout_graph import WINGS  # noqa: E402

from ibp_lab.inference import exact  # noqa: E402
from ibp_lab.teaching import explorers
from ibp_lab.evaluation import summaries
from ibp_lab.inference.chains import run_chain  # noqa: E402
from ibp_lab.teaching.plotting import (  # noqa: E402
    chain_traces_figure,
    co_ownership_figure,
    feature_owners_figure,
    free_fit_figure,
    k_plus_check_figure,
    plot_feature_mosaic,
    reappearance_figure,
    recovery_figure,
    recursion_step_figure,
    sensitivity_figure,
)


def _draw(fig):
    """Draw ``fig`` (errors in the layout and the text surface only then) and check that
    something was drawn: a Figure with at least one axes holding an artist."""
    assert isinstance(fig, Figure), type(fig)
    fig.set_dpi(20)
    fig.canvas.draw()
    assert fig.axes and any(ax.has_data() or ax.images or ax.texts for ax in fig.axes)
    return fig


@pytest.fixture(scope="module")
def chains():
    X = np.random.default_rng(0).normal(size=(6, 4))
    return X, [run_chain(X, 12, np.random.default_rng(s), sigma_x=1.0, sigma_a=1.0, burn=4)
               for s in (1, 2)]


def test_chapter_five_pipeline_draws(chains):
    X, runs = chains
    labels = np.array([0, 1, 0, 1, 2, 2])
    _draw(chain_traces_figure(runs, [f"chain {c}" for c in range(2)]))
    shared = {f"chain {c}": summaries.co_ownership(r.samples) for c, r in enumerate(runs)}
    _draw(co_ownership_figure(shared, labels))
    ref = runs[0]
    A_ref = summaries.chain_feature_means(X, ref)[-1]
    Z_ref = ref.samples[-1]
    assert Z_ref.shape[1] > 0  # these seeds end with features: the two figures below draw
    _draw(feature_owners_figure(A_ref, Z_ref, labels, (2, 2), scale=0.7))
    images = summaries.chain_feature_means(X, runs[1])
    rates = np.array([summaries.reappearance(A_ref, images, threshold=0.9)])
    _draw(reappearance_figure(rates, ["chain 1"]))
    _draw(free_fit_figure(ref.trace))


def test_chapter_four_pipeline_draws(chains):
    X, runs = chains
    tiny = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)
    X3 = X[:3, :2]
    p = exact.k_plus_posterior(X3, **tiny, k_max=6)
    k = runs[0].trace.k_plus.values
    freq = summaries.k_plus_frequencies(k, p.size - 1)
    se = np.sqrt(p * (1 - p) / k.size)
    _draw(k_plus_check_figure(p, {"run": freq}, standard_errors={"run": se}))
    by_sigma = {0.2: np.array([5, 6]), 0.5: np.array([3, 4, 4])}
    by_alpha = {1: np.array([4, 4]), 2.5: np.array([4, 5])}  # int and float keys alike
    _draw(sensitivity_figure(by_sigma, by_alpha, n_rows=300))
    A = np.eye(3, 4)
    found = np.vstack([A[::-1], np.ones((1, 4))])  # one extra feature, shown unmatched
    _draw(recovery_figure(A, found, summaries.match_features(A, found), (2, 2)))


def test_mosaic_unchanged_at_valid_input():
    ax = Figure().subplots()
    assert plot_feature_mosaic(np.eye(3, 4), (2, 2), ax=ax, ncols=2) is ax
    im = ax.images[-1]
    canvas = im.get_array()
    assert canvas.shape == (5, 5)
    assert canvas.mask[2].all() and canvas.mask[:, 2].all()  # the one-pixel gap
    assert im.norm.vmin == -1.0 and im.norm.vmax == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: plot_feature_mosaic(np.eye(3, 4), (2, 2), ax=Figure().subplots(), gap=10**9),
     r"\bgap\b"),
    (lambda: plot_feature_mosaic(np.eye(3, 4), None, ax=Figure().subplots()), r"^shape must be a pair"),
    (lambda: plot_feature_mosaic(np.eye(3, 4), (2, 2), ax="left"), r"^ax must be a matplotlib Axes"),
    (lambda: recursion_step_figure(3.0), r"^step must be a RecursionStep \(from ibp_lab.teaching.explorers"),
    (lambda: k_plus_check_figure([0.2, 0.5, 0.3], {"run": [0.2, 0.5, 0.3]}, k_show=10**9),
     r"^k_show must be an integer <= 2"),
    (lambda: k_plus_check_figure([0.2, 0.5, 0.3], {"run": [0.2, 0.5]}), r"^frequencies\['run'\]"),
    (lambda: sensitivity_figure({}, {1.0: [4]}), r"^by_sigma_x must hold at least one"),
    (lambda: co_ownership_figure({"a": np.eye(4)}, [1, 0]), r"^labels must hold one class per row"),
    (lambda: reappearance_figure([[2.0, 0.5]], ["a"]), r"^rates must hold shares in \[0, 1\]"),
    (lambda: chain_traces_figure([], []), r"^chains must hold at least one"),
    (lambda: recovery_figure(np.eye(2, 4), np.eye(1, 4),
                             summaries.match_features(np.eye(2, 4), np.eye(2, 4)), (2, 2)),
     r"A_found has 1 row"),
])
def test_refusals_name_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_many_dishes_draw_quickly():
    # alpha = 1e4 needs about 26,000 dishes: bars would take most of a minute to build.
    start = time.perf_counter()
    _draw(recursion_step_figure(explorers.recursion_step(alpha=1e4, beta=2.0, n=4)))
    assert time.perf_counter() - start < 5.0


def test_few_dishes_still_drawn_as_bars():
    from ibp_lab.models.recursive import columns_needed

    fig = recursion_step_figure(explorers.recursion_step(alpha=3.0, beta=2.0, n=10))
    assert len(fig.axes[0].patches) == columns_needed(3.0, 2.0, 10, tail=1e-4)


# ---------------------------------------------------------------------------------------
# one figure API: figures never run a sampler; *_figure returns a Figure, plot_* an Axes
# ---------------------------------------------------------------------------------------

PLOTTING_DIR = Path(__file__).resolve().parents[2] / "ibp_lab" / "teaching" / "plotting"
#: Modules that run a sampler: a figure draws their results, never calls them.
SAMPLER_MODULES = {"gibbs", "chains", "split_merge", "streaming"}


def _imported_ibp_modules(source: str) -> set[str]:
    """Every ``ibp_lab.<name>`` the source imports, at module level or inside a function.

    Read from the syntax tree, so that docstring examples (which a reader runs, not the
    module) do not count.
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "ibp_lab" and len(parts) > 1:
                # ibp_lab.<wing>.<module>: the module; ibp_lab.<root module>: itself
                found.add(parts[2] if parts[1] in WINGS and len(parts) > 2 else parts[1])
    return found


def test_the_import_scan_sees_function_level_imports():
    """The scan must be able to fail: a sampler imported inside a function is found."""
    source = "def f():\n    from ibp_lab.inference.chains import run_chain\n    import ibp_lab.inference.gibbs as g\n"
    assert _imported_ibp_modules(source) & SAMPLER_MODULES == {"chains", "gibbs"}
    assert _imported_ibp_modules('"""\n>>> from ibp_lab.inference.gibbs import run_chain\n"""') == set()


#: Known offenders, owned elsewhere: plotting/split_merge.py imports ibp_lab.inference.chains for an
#: isinstance check of ChainResult; _doors.is_chain_result (or check_chains) judges the
#: same by the result's fields. Not strict: it is being edited in parallel.
_IMPORTS_A_SAMPLER: dict[str, str] = {}


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason=_IMPORTS_A_SAMPLER[p.name])) if p.name in _IMPORTS_A_SAMPLER
    else p for p in sorted(PLOTTING_DIR.glob("*.py"))], ids=lambda p: p.name)
def test_no_plotting_module_imports_a_sampler(path):
    samplers = _imported_ibp_modules(path.read_text()) & SAMPLER_MODULES
    assert not samplers, f"{path.name} imports {sorted(samplers)}: figures must take results, not run samplers"


def _public_figure_functions():
    import importlib
    import inspect
    import pkgutil

    import ibp_lab.teaching.plotting as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"ibp_lab.teaching.plotting.{info.name}")
        for name in module.__all__:
            if inspect.isfunction(getattr(module, name)):
                yield f"plotting.{info.name}.{name}", getattr(module, name)


def test_every_public_figure_function_is_named_by_what_it_returns():
    odd = [qualified for qualified, _ in _public_figure_functions()
           if not (qualified.rsplit(".", 1)[1].startswith("plot_") or qualified.endswith("_figure"))]
    assert not odd, f"neither plot_* nor *_figure: {odd}"


#: Known departures from the figure API (qualified name -> reason), run as xfail; none left.
_API_DEPARTURES: dict[str, str] = {}


def _cases(departures: dict, *, plot_only: bool = False) -> list:
    return [pytest.param(qualified, function, id=qualified,
                         marks=[pytest.mark.xfail(reason=departures[qualified])] if qualified in departures else [])
            for qualified, function in _public_figure_functions()
            if not plot_only or qualified.rsplit(".", 1)[1].startswith("plot_")]


FIGURE_FUNCTIONS = _cases(_API_DEPARTURES)
PLOT_FUNCTIONS = _cases({k: v for k, v in _API_DEPARTURES.items() if k.endswith("plot_traces_by_time")},
                        plot_only=True)


@pytest.mark.parametrize("qualified, function", PLOT_FUNCTIONS)
def test_every_plot_function_takes_a_keyword_only_ax(qualified, function):
    import inspect

    params = inspect.signature(function).parameters
    key = "axes" if "axes" in params else "ax"
    assert key in params and params[key].kind is inspect.Parameter.KEYWORD_ONLY, f"no keyword-only {key}"
    assert params[key].default is None


@functools.cache
def _figure_specs() -> dict:
    """The campaign's valid call of every public figure function (small inputs)."""
    import robust_inputs

    specs = {}
    for group in ("plotting", "plotting_submodules", "late"):
        for spec in robust_inputs.group_specs(group):
            specs[spec.function] = spec
    return specs


@pytest.mark.parametrize("qualified, function", FIGURE_FUNCTIONS)
def test_figure_functions_return_figures_and_plot_functions_axes(qualified, function):
    import inspect

    from matplotlib.axes import Axes

    short = qualified.rsplit(".", 1)[1]
    spec = _figure_specs().get(qualified) or _figure_specs().get(f"plotting.{short}")
    assert spec is not None, f"no valid call of {qualified} in tests/robust_inputs.py"
    result = spec.call(**spec.base)
    plt.close("all")
    if short.endswith("_figure"):
        assert isinstance(result, Figure), f"returned {type(result).__name__}"
    elif "axes" in inspect.signature(function).parameters:  # a row of axes
        assert all(isinstance(ax, Axes) for ax in np.ravel(result)), f"returned {type(result).__name__}"
    else:
        assert isinstance(result, Axes), f"returned {type(result).__name__}"
