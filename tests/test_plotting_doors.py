"""The figure functions' doors: valid book-like inputs still draw, junk is refused by name.

The hostile-input campaign (tests/campaign.py) covers one junk value per argument; these
tests pin the pipelines the chapters use (outputs of ibp_lab functions fed straight into
the figures), so that a door never refuses what the book passes, and a few refusals whose
wording matters to a student.
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ibp_lab import exact, summaries  # noqa: E402
from ibp_lab.gibbs import run_chain  # noqa: E402
from ibp_lab.plotting import (  # noqa: E402
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
    fig.set_dpi(20)
    fig.canvas.draw()
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
    if Z_ref.shape[1]:
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
    im = plot_feature_mosaic(ax, np.eye(3, 4), (2, 2), ncols=2)
    canvas = im.get_array()
    assert canvas.shape == (5, 5)
    assert canvas.mask[2].all() and canvas.mask[:, 2].all()  # the one-pixel gap
    assert im.norm.vmin == -1.0 and im.norm.vmax == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: plot_feature_mosaic(Figure().subplots(), np.eye(3, 4), (2, 2), gap=10**9),
     r"\bgap\b"),
    (lambda: plot_feature_mosaic(Figure().subplots(), np.eye(3, 4), None), r"^shape must be a pair"),
    (lambda: plot_feature_mosaic(None, np.eye(3, 4), (2, 2)), r"^ax must be a matplotlib Axes"),
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
    _draw(recursion_step_figure(1e4, 2.0, 4))
    assert time.perf_counter() - start < 5.0


def test_few_dishes_still_drawn_as_bars():
    from ibp_lab.recursive import columns_needed

    fig = recursion_step_figure(3.0, 2.0, 10)
    assert len(fig.axes[0].patches) == columns_needed(3.0, 2.0, 10, tail=1e-4)
