"""Label-free summaries of IBP posterior draws.

The features of a latent feature model are exchangeable: "feature 3" of one
draw has nothing to do with "feature 3" of the next draw, let alone of another
chain. Every summary here is therefore either free of labels by construction
or matches features by what they look like.

Free of labels by construction:

- :func:`co_ownership`: ``E[Z Z^T]``, entry ``(i, j)`` the expected number of
  features that data points ``i`` and ``j`` share.
- :func:`chain_summaries` and :func:`label_free_diagnostics`: per-chain means
  and ArviZ's R-hat and effective sample size of scalar traces (``K+``, the
  log-likelihood, the log joint, ``alpha``, ...), which are unchanged when the
  features are relabelled.
- :func:`count_law_moments`: the mean and standard deviation of a law of ``K+``, from the
  whole law only.
- :func:`k_plus_frequencies`, :func:`total_variation`,
  :func:`total_variation_noise` and :func:`indicator_ess`: a sampler's
  histogram of ``K+`` against an exact posterior, and how large a distance
  Monte Carlo noise alone would produce.

Matching features by their images:

- :func:`feature_correlations`: Pearson correlation of every pair of feature
  images.
- :func:`match_features`: a one-to-one matching that maximises the total
  correlation (the assignment problem, solved by
  :func:`scipy.optimize.linear_sum_assignment`).
- :func:`draw_feature_means` and :func:`chain_feature_means`: the posterior
  mean image of every feature of every kept draw.
- :func:`reappearance`: for each reference feature, the share of draws that
  hold a feature matched to it with a correlation above a threshold.

Reading a draw with outside labels (never used to fit):

- :func:`class_ownership`: the share of each class's rows that own each feature.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ibp_lab._checks import (
    MAX_COUNT,
    Checked,
    Count,
    Generator,
    Joint,
    Positive,
    check_binary_matrix,
    check_count,
    check_data_matrix,
    check_flag,
    check_positive,
    check_real_array,
    validated,
)

__all__ = [
    "co_ownership",
    "feature_correlations",
    "FeatureMatch",
    "match_features",
    "draw_feature_means",
    "chain_feature_means",
    "reappearance",
    "chain_summaries",
    "label_free_diagnostics",
    "k_plus_frequencies",
    "total_variation",
    "total_variation_noise",
    "count_law_moments",
    "indicator_ess",
    "class_ownership",
]

#: Variables of :class:`ibp_lab.inference.chains.ChainResult` traces that ignore feature labels.
LABEL_FREE_VARIABLES = ("k_plus", "log_likelihood", "log_joint", "alpha")
# Largest N for co_ownership's N x N result (800 MB of float64).
_MAX_CO_OWNERSHIP_ROWS = 10_000
# Largest k_max of k_plus_frequencies (the histogram has k_max + 1 bins).
_MAX_K_BINS = 10**6
# Most multinomial counts total_variation_noise draws at once (n_rep x len(p), 8 bytes each).
_MAX_NOISE_ENTRIES = 10**8


# --------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------


def _check_draws(samples) -> list[np.ndarray]:
    """A non-empty list of binary matrices with the same number of rows."""
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        samples = [samples]
    if isinstance(samples, (str, bytes)) or not isinstance(samples, (Sequence, np.ndarray)):
        raise TypeError(f"samples must be a list of binary matrices, got {type(samples).__name__}")
    if len(samples) == 0:
        raise ValueError("samples must hold at least one draw, got an empty list")
    first = check_binary_matrix("samples[0] (a Z)", samples[0])
    draws = [first]
    for s, Z in enumerate(samples[1:], start=1):
        draws.append(check_binary_matrix(f"samples[{s}] (a Z)", Z, n_rows=first.shape[0]))
    return draws


def _check_images(name: str, A, n_dims: int | None = None) -> np.ndarray:
    """A finite 2-D float array of feature images (zero rows allowed)."""
    arr = check_real_array(name, A)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (features x pixels), got {arr.ndim} dimension(s)")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one pixel, got shape {arr.shape}")
    if n_dims is not None and arr.shape[1] != n_dims:
        raise ValueError(f"{name} must have {n_dims} pixels per feature, got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite: found NaN or infinite values")
    return arr


def _check_probabilities(name: str, p) -> np.ndarray:
    arr = check_real_array(name, p)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array of probabilities, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must hold finite non-negative probabilities")
    if not math.isclose(float(arr.sum()), 1.0, rel_tol=0, abs_tol=1e-6):
        raise ValueError(f"{name} must sum to 1, got {float(arr.sum()):.6g}")
    return arr


# --------------------------------------------------------------------------------------
# free of labels by construction
# --------------------------------------------------------------------------------------


_PROBABILITIES = Checked(_check_probabilities)


def co_ownership(samples) -> np.ndarray:
    """Posterior co-ownership ``E[Z Z^T]`` estimated from draws.

    Entry ``(i, j)`` is the average over draws of the number of features that
    rows ``i`` and ``j`` both own; the diagonal is each row's expected number of
    features. Relabelling or reordering the features of any draw leaves it
    unchanged.

    Parameters
    ----------
    samples : list of array_like
        Draws of ``Z``, each ``(N, K_s)`` binary; ``K_s`` may differ between
        draws (and may be 0). A single matrix is accepted too.

    Returns
    -------
    numpy.ndarray
        ``(N, N)`` symmetric, non-negative.

    Examples
    --------
    >>> co_ownership([np.array([[1, 0], [1, 1]]), np.array([[1], [0]])])
    array([[1. , 0.5],
           [0.5, 1. ]])
    """
    draws = _check_draws(samples)
    if draws[0].shape[0] > _MAX_CO_OWNERSHIP_ROWS:
        raise ValueError(
            f"samples must have at most {_MAX_CO_OWNERSHIP_ROWS} rows for an N x N "
            f"co-ownership matrix, got {draws[0].shape[0]}"
        )
    total = np.zeros((draws[0].shape[0],) * 2)
    for Z in draws:
        Zf = Z.astype(np.float64)
        total += Zf @ Zf.T
    return total / len(draws)


def chain_summaries(chains, *, labels: Sequence[str] | None = None):
    """Per-chain means of the label-free traces after warm-up.

    Parameters
    ----------
    chains : list of ibp_lab.inference.chains.ChainResult
        Chains from :func:`ibp_lab.inference.chains.run_chains` (or several ``run_chain``).
    labels : list of str, optional
        One name per chain (the table's index); default ``chain 0``, ...

    Returns
    -------
    pandas.DataFrame
        One row per chain: the mean and the standard deviation of ``K+``, its
        smallest and largest value, the mean log-likelihood, the mean and
        standard deviation of the log joint, the means of ``alpha``,
        ``sigma_a`` and ``sigma_x``, over every sweep after the chain's
        warm-up (``trace.attrs["burn"]``).

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chain
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> chain = run_chain(X, 20, np.random.default_rng(1), sigma_x=1.0, sigma_a=1.0, burn=5)
    >>> list(chain_summaries([chain]).columns[:3])
    ['K+ mean', 'K+ sd', 'K+ min']
    """
    import pandas as pd

    chains = _check_chains(chains)
    if labels is None:
        labels = [f"chain {c}" for c in range(len(chains))]
    if isinstance(labels, (str, bytes)) or not isinstance(labels, (Sequence, np.ndarray)) \
            or not all(isinstance(label, str) for label in labels):
        raise TypeError("labels must be a list of strings, one name per chain")
    if len(labels) != len(chains):
        raise ValueError(f"labels must name each of the {len(chains)} chains, got {len(labels)}")
    rows = []
    for chain in chains:
        trace = _after_warmup(chain)
        k = trace.k_plus.values
        rows.append(
            {
                "K+ mean": float(k.mean()),
                "K+ sd": float(k.std()),
                "K+ min": int(k.min()),
                "K+ max": int(k.max()),
                "log lik mean": float(trace.log_likelihood.mean()),
                "log joint mean": float(trace.log_joint.mean()),
                "log joint sd": float(trace.log_joint.std()),
                "alpha mean": float(trace.alpha.mean()),
                "sigma_a mean": float(trace.sigma_a.mean()),
                "sigma_x mean": float(trace.sigma_x.mean()),
            }
        )
    return pd.DataFrame(rows, index=list(labels))


def _check_chains(chains) -> list:
    from ibp_lab.inference.chains import ChainResult

    if isinstance(chains, ChainResult):
        chains = [chains]
    if isinstance(chains, (str, bytes)) or not isinstance(chains, Sequence) or len(chains) == 0:
        raise TypeError("chains must be a non-empty list of ibp_lab.inference.chains.ChainResult")
    for c, chain in enumerate(chains):
        if not isinstance(chain, ChainResult):
            raise TypeError(f"chains[{c}] must be a ChainResult, got {type(chain).__name__}")
    return list(chains)


def _check_chain(chain):
    """One :class:`ibp_lab.inference.chains.ChainResult` (a function that reads a single chain)."""
    from ibp_lab.inference.chains import ChainResult

    if not isinstance(chain, ChainResult):
        raise TypeError(
            f"chain must be one ibp_lab.inference.chains.ChainResult (from run_chain), got {type(chain).__name__}"
        )
    return chain


def _after_warmup(chain):
    return chain.trace.isel(draw=slice(int(chain.trace.attrs.get("burn", 0)), None))


def label_free_diagnostics(chains, *, var_names: Sequence[str] = LABEL_FREE_VARIABLES):
    """R-hat and effective sample sizes of label-free traces, with ArviZ.

    Rank-normalised split R-hat (:func:`arviz.rhat`) and the bulk and tail
    effective sample sizes (:func:`arviz.ess`) of quantities that do not depend
    on how the features are labelled. R-hat near 1 (say below 1.01) and an
    ESS of a few hundred are what a trustworthy run shows; a variable held
    fixed (for example ``alpha`` when it is not sampled) has no R-hat (NaN).

    Parameters
    ----------
    chains : list of ChainResult, arviz.InferenceData or xarray.Dataset
        Chains from :func:`ibp_lab.inference.chains.run_chains`: either the list of
        :class:`~ibp_lab.inference.chains.ChainResult` (every sweep after warm-up is
        used, unthinned; the chains are cut to the shortest), or its
        ``InferenceData`` (its ``posterior`` group), or any dataset with
        dimensions ``(chain, draw)``.
    var_names : sequence of str, optional
        Variables to diagnose.

    Returns
    -------
    pandas.DataFrame
        One row per variable, columns ``r_hat``, ``ess_bulk``, ``ess_tail``.

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chains
    >>> X = np.random.default_rng(0).normal(size=(8, 2))
    >>> idata, chains = run_chains(X, 2, 60, np.random.default_rng(1), sigma_x=1.0,
    ...                            sigma_a=1.0, burn=10)
    >>> list(label_free_diagnostics(chains).index)
    ['k_plus', 'log_likelihood', 'log_joint', 'alpha']
    """
    import pandas as pd
    import xarray as xr

    dataset = _as_chain_dataset(chains)
    if isinstance(var_names, str) or not isinstance(var_names, Sequence) or not var_names:
        raise TypeError("var_names must be a non-empty list of variable names")
    missing = [v for v in var_names if v not in dataset.data_vars]
    if missing:
        raise ValueError(
            f"var_names {missing} are not traced; available: {list(dataset.data_vars)}"
        )
    if dataset.sizes.get("draw", 0) < 4:
        raise ValueError(
            f"need at least 4 draws per chain for R-hat and ESS, got {dataset.sizes.get('draw', 0)}"
        )
    dataset = xr.Dataset({v: dataset[v].astype(np.float64) for v in var_names})
    rows = {}
    for name in var_names:
        values = dataset[name].values
        if np.ptp(values) == 0:  # a fixed quantity: nothing to diagnose
            rows[name] = {"r_hat": np.nan, "ess_bulk": np.nan, "ess_tail": np.nan}
            continue
        rows[name] = {
            "r_hat": float(_arviz().rhat(values)),
            "ess_bulk": float(_arviz().ess(values, method="bulk")),
            "ess_tail": float(_arviz().ess(values, method="tail")),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _arviz():
    import warnings

    with warnings.catch_warnings():  # ArviZ 0.23 announces its 1.0 API at import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az


def _as_chain_dataset(chains):
    import xarray as xr

    if isinstance(chains, xr.Dataset):
        dataset = chains
    elif hasattr(chains, "posterior") and isinstance(
        getattr(chains, "posterior", None), xr.Dataset
    ):
        dataset = chains.posterior
    else:
        chains = _check_chains(chains)
        traces = [_after_warmup(c) for c in chains]
        length = min(t.sizes["draw"] for t in traces)
        dataset = xr.concat(
            [t.isel(draw=slice(0, length)).assign_coords(draw=np.arange(length)) for t in traces],
            dim="chain",
        )
    if "chain" not in dataset.dims or "draw" not in dataset.dims:
        raise ValueError(
            f"the traces must have dimensions (chain, draw), got {tuple(dataset.dims)}"
        )
    return dataset.transpose("chain", "draw", ...)


# --------------------------------------------------------------------------------------
# K+ histograms against an exact posterior
# --------------------------------------------------------------------------------------


def _as_1d_array(name: str, values) -> np.ndarray:
    try:
        return np.asarray(values)
    except ValueError:  # ragged nested lists
        raise ValueError(f"{name} must be a 1-D array, got a ragged nested list") from None


def _check_counts(name: str, values) -> np.ndarray:
    arr = _as_1d_array(name, values)
    if arr.dtype == object or arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of counts, got shape {arr.shape}")
    whole = np.issubdtype(arr.dtype, np.integer) or (
        np.issubdtype(arr.dtype, np.floating)
        and bool(np.all(np.isfinite(arr)))
        and bool(np.all(arr == np.round(arr)))
    )
    if not whole:
        raise ValueError(f"{name} must hold whole numbers (numbers of features)")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, found {arr.min()}")
    # a whole float beyond 2**53 is no exact count, and beyond 2**63 the int64 cast
    # below would wrap it to a negative number
    if np.any(arr > MAX_COUNT):
        raise ValueError(f"{name} must hold counts <= {MAX_COUNT}, found {arr.max():g}")
    return arr.astype(np.int64)


@validated(k_plus=Checked(_check_counts), k_max=Count(maximum=_MAX_K_BINS))
def k_plus_frequencies(k_plus, k_max: int) -> np.ndarray:
    """Relative frequencies of ``K+ = 0, 1, ..., k_max`` in a trace.

    Values above ``k_max`` are counted in the last bin, so the result sums to
    one and lines up with :func:`ibp_lab.inference.exact.k_plus_posterior` (whose tail
    beyond ``k_max`` is negligible when its bound is small).

    Examples
    --------
    >>> k_plus_frequencies([0, 1, 1, 5], 3)
    array([0.25, 0.5 , 0.  , 0.25])
    """
    return np.bincount(np.minimum(k_plus, k_max), minlength=k_max + 1) / k_plus.size


@validated(pmf=_PROBABILITIES)
def count_law_moments(pmf) -> tuple[float, float]:
    """Mean and standard deviation of a law on ``0, 1, 2, ...`` given as its pmf.

    Both moments come from the same, whole law: a pmf whose mass differs from 1 by more
    than 1e-6 is refused (the module's probability check), since a slice of a law (say ``K+ <= 5`` for a
    plot) gives a second moment that misses the tail while the mean may not (the error
    this function was written to make impossible).

    Parameters
    ----------
    pmf : array_like
        Probabilities of ``0, 1, ..., len(pmf) - 1``, non-negative, summing to 1.

    Returns
    -------
    mean, sd : float

    Examples
    --------
    >>> count_law_moments([0.25, 0.5, 0.25])
    (1.0, 0.7071067811865476)
    >>> count_law_moments([0.25, 0.5])  # a slice of a law
    Traceback (most recent call last):
    ...
    ValueError: pmf must sum to 1, got 0.75
    """
    values = np.arange(pmf.size, dtype=np.float64)
    mean = float(values @ pmf)
    variance = float(((values - mean) ** 2) @ pmf)  # centred: no cancellation
    return mean, math.sqrt(variance)


@validated(p=_PROBABILITIES, q=_PROBABILITIES)
def total_variation(p, q) -> float:
    """Total-variation distance ``0.5 sum |p - q|`` between two distributions on 0, 1, ....

    The shorter vector is padded with zeros.

    Examples
    --------
    >>> total_variation([0.5, 0.5], [0.25, 0.5, 0.25])
    0.25
    """
    size = max(p.size, q.size)
    p, q = np.pad(p, (0, size - p.size)), np.pad(q, (0, size - q.size))
    return float(0.5 * np.abs(p - q).sum())


def _check_at_least_one(n_eff: float) -> None:
    if n_eff < 1:
        raise ValueError(f"n_eff must be >= 1, got {n_eff}")


def _check_noise_size(n_rep: int, p: np.ndarray) -> None:
    if n_rep * p.size > _MAX_NOISE_ENTRIES:
        raise ValueError(
            f"n_rep * len(p) must be <= {_MAX_NOISE_ENTRIES:g} (the histograms are held in "
            f"memory), got {n_rep} * {p.size}"
        )


@validated(p=_PROBABILITIES, n_eff=Positive(upper=1e12),
           n_eff_at_least_one=Joint(_check_at_least_one, "n_eff"), rng=Generator(),
           n_rep=Count(minimum=1, maximum=10**7), size=Joint(_check_noise_size, "n_rep", "p"))
def total_variation_noise(
    p, n_eff: float, rng: np.random.Generator, *, n_rep: int = 10_000
) -> np.ndarray:
    """Total-variation distances that Monte Carlo noise alone produces.

    Draws ``n_rep`` histograms of ``n_eff`` independent draws from ``p``
    (multinomial, with ``n_eff`` rounded down) and returns each one's distance
    from ``p``. A sampler whose histogram of ``n_eff`` *effective* draws is
    much further from the exact ``p`` than these is biased. For a correlated
    chain use its effective sample size, for example the smallest of
    :func:`indicator_ess` over the values that carry mass.

    Parameters
    ----------
    p : array_like
        Exact probabilities (summing to 1).
    n_eff : float
        Effective number of draws, >= 1.
    rng : numpy.random.Generator
    n_rep : int, optional
        Number of simulated histograms.

    Returns
    -------
    numpy.ndarray
        ``(n_rep,)`` distances; their mean is the typical noise level and a
        high quantile a threshold for a test.

    Examples
    --------
    >>> tv = total_variation_noise([0.5, 0.5], 10_000, np.random.default_rng(0), n_rep=2000)
    >>> bool(0.002 < tv.mean() < 0.006)  # E|Bin(n, 1/2)/n - 1/2| = sqrt(2 / pi) / (2 sqrt(n))
    True
    """
    n = int(n_eff)
    counts = rng.multinomial(n, p / p.sum(), size=n_rep)
    return 0.5 * np.abs(counts / n - p).sum(axis=1)


def indicator_ess(values, categories) -> np.ndarray:
    """Effective sample size of the indicator ``1{value = c}`` for each category ``c``.

    What the frequency of each value in an autocorrelated trace is worth in
    independent draws (ArviZ's ``ess`` with ``method="mean"``). A category
    that the trace never or always takes has no ESS (NaN).

    Examples
    --------
    >>> trace = np.random.default_rng(0).integers(0, 3, 4000)
    >>> ess = indicator_ess(trace, [0, 1, 2, 7])
    >>> bool(np.all(ess[:3] > 3000)), bool(np.isnan(ess[3]))
    (True, True)
    """
    values = check_real_array("values", values)
    if values.ndim != 1 or values.size < 4:
        raise ValueError(
            f"values must be a 1-D trace of at least 4 draws, got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be a finite numeric trace")
    categories = np.atleast_1d(check_real_array("categories", categories))
    if categories.ndim != 1:
        raise ValueError(f"categories must be 1-D, got shape {categories.shape}")
    if not np.all(np.isfinite(categories)):
        # a NaN category can never be matched and would come back as a silent NaN ESS
        raise ValueError("categories must be finite values of the trace (no NaN or inf)")
    az = _arviz()
    out = np.full(categories.shape, np.nan)
    # only categories the trace takes need ArviZ (at most one per distinct value): a long
    # list of absent categories costs one isin, not one pass over the trace each
    seen = np.flatnonzero(np.isin(categories, values))
    for j in seen:
        indicator = (values == categories[j]).astype(np.float64)
        if 0 < indicator.sum() < indicator.size:
            out[j] = float(az.ess(indicator[None, :], method="mean"))
    return out


# --------------------------------------------------------------------------------------
# matching features across draws and chains
# --------------------------------------------------------------------------------------


def feature_correlations(A, B) -> np.ndarray:
    """Pearson correlation between every feature image of ``A`` and every one of ``B``.

    A feature with a constant image (zero variance) correlates 0 with
    everything rather than NaN.

    Parameters
    ----------
    A, B : array_like
        ``(K_A, D)`` and ``(K_B, D)`` feature images; either may have no rows.

    Returns
    -------
    numpy.ndarray
        ``(K_A, K_B)`` correlations in [-1, 1].

    Examples
    --------
    >>> feature_correlations([[1, 0, 0], [0, 1, 1]], [[2, 0, 0], [1, 1, 1]])
    array([[ 1.,  0.],
           [-1.,  0.]])
    """
    A = _check_images("A", A)
    B = _check_images("B", B, n_dims=A.shape[1])
    return _correlations(A, B)


def _correlations(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """:func:`feature_correlations` of already validated images (callers name their own)."""

    def standardise(M):
        # correlation ignores scale: divide by each row's largest entry first, so that
        # squares of huge images cannot overflow
        scale = np.abs(M).max(axis=1, keepdims=True) if M.size else np.ones((M.shape[0], 1))
        M = M / np.where(scale > 0, scale, 1.0)
        centred = M - M.mean(axis=1, keepdims=True)
        norm = np.sqrt(np.sum(centred**2, axis=1, keepdims=True))
        flat = norm <= 1e-12  # constant up to rounding
        return np.where(flat, 0.0, centred / np.where(flat, 1.0, norm))

    return np.clip(standardise(A) @ standardise(B).T, -1.0, 1.0)


@dataclass(frozen=True)
class FeatureMatch:
    """A one-to-one matching of reference features to the features of another set.

    Attributes
    ----------
    ref_index, index : numpy.ndarray
        Matched pairs: reference feature ``ref_index[j]`` goes with feature
        ``index[j]`` of the other set (sorted by ``ref_index``). There are
        ``min(K_ref, K)`` pairs; the rest of the larger set is unmatched.
    correlation : numpy.ndarray
        Correlation of each matched pair (its absolute value when matched with
        ``absolute=True``).
    n_ref : int or None
        ``K_ref``, the number of reference features (``None`` in a match built by
        hand: then :meth:`matched_to` and :meth:`ref_correlation` need ``n_ref``).
    """

    ref_index: np.ndarray
    index: np.ndarray
    correlation: np.ndarray
    n_ref: int | None = None

    def _n_ref(self, n_ref) -> int:
        if n_ref is None:
            if self.n_ref is None:
                raise TypeError("n_ref is needed for a FeatureMatch built without n_ref")
            return self.n_ref
        n_ref = check_count("n_ref", n_ref, maximum=_MAX_K_BINS)
        if n_ref <= (int(self.ref_index.max()) if self.ref_index.size else -1):
            raise ValueError(f"n_ref must exceed every matched reference index, got {n_ref}")
        return n_ref

    def matched_to(self, n_ref: int | None = None, *, threshold: float = -1.0) -> np.ndarray:
        """For each of the ``n_ref`` reference features, its partner's index or -1.

        A pair with correlation at or below ``threshold`` counts as no match.
        ``n_ref`` defaults to the number of reference features matched.
        """
        n_ref = self._n_ref(n_ref)
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) \
                or not -1.0 <= threshold < 1.0:
            raise ValueError(f"threshold must be a correlation in [-1, 1), got {threshold!r}")
        out = np.full(n_ref, -1, dtype=np.int64)
        good = self.correlation > threshold
        out[self.ref_index[good]] = self.index[good]
        return out

    def ref_correlation(self, n_ref: int | None = None) -> np.ndarray:
        """For each reference feature, the correlation with its partner; 0 if it has none.

        0, not NaN, for an unmatched reference feature, as if matched to a blank
        (constant) feature, which :func:`feature_correlations` correlates 0 with
        everything: a NaN would spread silently through a mean or a minimum.

        Examples
        --------
        >>> m = match_features(np.eye(3), np.eye(3)[:1])  # one feature found for three
        >>> m.ref_correlation().round(2).tolist(), m.matched_to().tolist()
        ([1.0, 0.0, 0.0], [0, -1, -1])
        """
        out = np.zeros(self._n_ref(n_ref))
        out[self.ref_index] = self.correlation
        return out


def match_features(A_ref, A, *, absolute: bool = False) -> FeatureMatch:
    """Match features one-to-one so that the total correlation is largest.

    Labels mean nothing across draws, but images do: the feature of ``A`` that
    plays the part of reference feature ``k`` should look like it. The
    assignment is the Hungarian solution on :func:`feature_correlations`
    (:func:`scipy.optimize.linear_sum_assignment`), so two reference features
    can never claim the same partner. The reference comes first: the true
    features of simulated data, or one draw that others are compared with.

    Parameters
    ----------
    A_ref, A : array_like
        ``(K_ref, D)`` and ``(K, D)`` feature images.
    absolute : bool, optional
        Match on ``|correlation|`` (factor analysis: a feature and its negative
        are the same feature with the weight's sign flipped).

    Returns
    -------
    FeatureMatch
        The pairs; :meth:`FeatureMatch.ref_correlation` and
        :meth:`FeatureMatch.matched_to` give one number per reference feature.

    Examples
    --------
    >>> A_true = np.eye(3)
    >>> found = np.array([[0.0, 0.1, 0.9], [1.0, 0.0, 0.1]])
    >>> m = match_features(A_true, found)
    >>> m.ref_index, m.index, m.correlation.round(2)
    (array([0, 2]), array([1, 0]), array([1.  , 0.99]))
    >>> match_features(A_true, -found, absolute=True).correlation.round(2)
    array([1.  , 0.99])
    """
    from scipy.optimize import linear_sum_assignment

    # validated here under this function's own parameter names, so that a bad second
    # argument is reported as ``A`` (not feature_correlations' ``B``)
    A_ref = _check_images("A_ref", A_ref)
    A = _check_images("A", A, n_dims=A_ref.shape[1])
    absolute = check_flag("absolute", absolute)
    corr = _correlations(A_ref, A)
    score = np.abs(corr) if absolute else corr
    n_ref = A_ref.shape[0]
    if score.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return FeatureMatch(empty, empty.copy(), np.zeros(0), n_ref)
    rows, cols = linear_sum_assignment(score, maximize=True)
    return FeatureMatch(rows.astype(np.int64), cols.astype(np.int64), score[rows, cols], n_ref)


def draw_feature_means(X, samples, *, sigma_x, sigma_a) -> list[np.ndarray]:
    """Posterior mean feature images ``E[A | X, Z]`` of every draw of ``Z``.

    Each is ``M^-1 Z^T X`` with ``M = Z^T Z + (sigma_x / sigma_a)^2 I``
    (:func:`ibp_lab.models.linear_gaussian.feature_posterior`), evaluated at that
    draw's scales.

    Parameters
    ----------
    X : array_like
        ``(N, D)`` data the draws were fitted to.
    samples : list of array_like
        Draws of ``Z``, each ``(N, K_s)``.
    sigma_x, sigma_a : float or sequence of float
        One value for every draw, or one per draw.

    Returns
    -------
    list of numpy.ndarray
        ``(K_s, D)`` for each draw.

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [3.0, 2.0]])
    >>> draw_feature_means(X, [np.ones((2, 1))], sigma_x=1.0, sigma_a=1.0)[0]
    array([[1.33333333, 1.33333333]])
    """
    from ibp_lab.models.linear_gaussian import feature_posterior

    X = check_data_matrix("X", X)
    draws = _check_draws(samples)
    if draws[0].shape[0] != X.shape[0]:
        raise ValueError(
            f"each Z in samples must have {X.shape[0]} rows (one per row of X), "
            f"got {draws[0].shape[0]}"
        )
    scales = []
    for name, value in (("sigma_x", sigma_x), ("sigma_a", sigma_a)):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            scales.append([check_positive(name, value)] * len(draws))
            continue
        values = np.asarray(value, dtype=object).ravel()
        if values.size != len(draws):
            raise ValueError(
                f"{name} must be one number or one per draw ({len(draws)}), got {values.size}"
            )
        scales.append([check_positive(f"{name}[{s}]", v) for s, v in enumerate(values)])
    return [feature_posterior(X, Z, sx, sa)[0] for Z, sx, sa in zip(draws, *scales)]


def chain_feature_means(X, chain) -> list[np.ndarray]:
    """:func:`draw_feature_means` of a chain's kept draws, each at its own scales.

    Examples
    --------
    >>> from ibp_lab.inference.chains import run_chain
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> chain = run_chain(X, 10, np.random.default_rng(1), sigma_x=1.0, sigma_a=1.0, thin=5)
    >>> [A.shape[1] for A in chain_feature_means(X, chain)]
    [2, 2]
    """
    chain = _check_chain(chain)
    kept = chain.posterior_trace
    return draw_feature_means(
        X, chain.samples, sigma_x=kept.sigma_x.values.tolist(), sigma_a=kept.sigma_a.values.tolist()
    )


def reappearance(A_ref, draws, *, threshold: float = 0.9) -> np.ndarray:
    """Share of draws holding a match of each reference feature.

    For every draw, :func:`match_features` pairs the reference features with
    the draw's features one-to-one; reference feature ``k`` reappears in the
    draw if its partner's image correlates above ``threshold`` with its own.

    Parameters
    ----------
    A_ref : array_like
        ``(K_ref, D)`` reference feature images (for example the posterior
        mean images of one draw).
    draws : list of array_like
        Feature images of the draws, each ``(K_s, D)`` (from
        :func:`draw_feature_means`).
    threshold : float, optional
        Correlation a match must exceed, in (-1, 1).

    Returns
    -------
    numpy.ndarray
        ``(K_ref,)`` fractions in [0, 1].

    Examples
    --------
    >>> ref = np.eye(2, 4)
    >>> reappearance(ref, [np.eye(2, 4), np.eye(4)[[1]], np.zeros((0, 4))])
    array([0.33333333, 0.66666667])
    """
    A_ref = _check_images("A_ref", A_ref)
    if isinstance(draws, np.ndarray) and draws.ndim == 2:
        draws = [draws]
    if (
        isinstance(draws, (str, bytes))
        or not isinstance(draws, (Sequence, np.ndarray))
        or len(draws) == 0
    ):
        raise ValueError("draws must be a non-empty list of feature-image arrays")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, numbers.Real)
        or not -1 < threshold < 1
    ):
        raise ValueError(f"threshold must be a correlation in (-1, 1), got {threshold!r}")
    hits = np.zeros(A_ref.shape[0])
    for s, A in enumerate(draws):
        A = _check_images(f"draws[{s}]", A, n_dims=A_ref.shape[1])
        hits += match_features(A_ref, A).matched_to(threshold=threshold) >= 0
    return hits / len(draws)


def class_ownership(Z, labels) -> np.ndarray:
    """Share of each class's rows that own each feature.

    The labels (for the digits, which digit each row is) play no part in the
    fit; they only help to read it.

    Parameters
    ----------
    Z : array_like
        ``(N, K)`` binary matrix.
    labels : array_like
        ``(N,)`` class of every row.

    Returns
    -------
    numpy.ndarray
        ``(K, n_classes)``, classes in sorted order (``numpy.unique(labels)``).

    Examples
    --------
    >>> class_ownership(np.array([[1, 0], [1, 1], [0, 1]]), [0, 0, 1])
    array([[1. , 0. ],
           [0.5, 1. ]])
    """
    Z = check_binary_matrix("Z", Z)
    labels = _as_1d_array("labels", labels)
    if labels.ndim != 1 or labels.shape[0] != Z.shape[0]:
        raise ValueError(
            f"labels must give one class per row of Z ({Z.shape[0]}), got shape {labels.shape}"
        )
    if labels.dtype.kind not in "biuUS":
        # floats would let NaN make a class of its own with no rows (a silent NaN share),
        # objects may not even sort
        raise TypeError(f"labels must be integers or strings, got dtype {labels.dtype}")
    classes = np.unique(labels)
    Zf = Z.astype(np.float64)
    return np.stack([Zf[labels == c].mean(axis=0) for c in classes], axis=1).reshape(
        Z.shape[1], len(classes)
    )
