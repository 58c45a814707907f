"""One run's trace, draw by draw, and runs collected for ArviZ (private to the inference wing).

The samplers that trace a run draw by draw keep it in a :class:`Recorder`: the chains of
:mod:`ibp_lab.inference.chains` (which add their moves' statistics and the pointwise
log-likelihood on top), the replica exchange of :mod:`ibp_lab.inference.tempering`, and the
runner of :mod:`ibp_lab.inference.uncollapsed` that the slice sampler and the noisy-OR
sampler share. A recorder is told the variables it keeps, draws ``Z`` at ``burn + k *
thin`` and times the run in CPU seconds (:func:`time.process_time`: other programs on a
shared machine slow the wall clock but hardly the CPU time); it builds the label-free
``trace`` and ``sample_stats`` Datasets, dimension ``draw``. :func:`collect_runs` stacks
several runs' Datasets into an :class:`arviz.InferenceData`, as
:func:`ibp_lab.inference.chains.run_chains` and
:func:`ibp_lab.inference.tempering.run_tempered_chains` return it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np
import xarray as xr

__all__ = ["Recorder", "collect_runs"]


class Recorder:
    """One run's record: each variable's value at every draw, the CPU seconds and the kept ``Z``.

    Parameters
    ----------
    n_draws : int
        Draws of the run.
    variables : dict
        The trace's variables, in order: name -> dtype, or ``(dtype, dims)`` for a variable
        with dimensions after ``draw`` (their sizes in ``sizes``).
    stats : dict, optional
        The sample_stats' variables after ``seconds``, given the same way.
    burn, thin : int, optional
        Draw ``t`` is kept (its ``Z`` copied into ``samples``) when ``t >= burn`` and
        ``(t - burn) % thin == 0``.
    sizes : dict, optional
        Size of each dimension besides ``draw``, e.g. ``{"level": 4}``.

    Examples
    --------
    >>> record = Recorder(3, {"k_plus": np.int64}, burn=1)
    >>> for t in range(3):
    ...     record.clock(t)
    ...     record.draw(t, np.ones((2, t), np.int8), k_plus=t)
    >>> trace, stats = record.datasets({"burn": 1})
    >>> trace["k_plus"].values.tolist(), record.kept_draws().tolist(), list(stats)
    ([0, 1, 2], [1, 2], ['seconds'])
    """

    def __init__(self, n_draws: int, variables: dict, stats: dict | None = None, *,
                 burn: int = 0, thin: int = 1, sizes: dict | None = None):
        specs = {**variables, "seconds": np.float64, **(stats or {})}
        specs = {name: spec if isinstance(spec, tuple) else (spec, ())
                 for name, spec in specs.items()}
        self.sizes = {"draw": n_draws, **(sizes or {})}
        self.dims = {name: ("draw", *dims) for name, (_, dims) in specs.items()}
        self.values = {name: np.zeros([self.sizes[dim] for dim in self.dims[name]], dtype)
                       for name, (dtype, _) in specs.items()}
        self.trace_names, self.stat_names = tuple(variables), tuple(specs)[len(variables):]
        self.burn, self.thin = burn, thin
        self.samples, self.sample_draws = [], []
        self.excluded_seconds = 0.0
        self.start()

    def start(self) -> None:
        """(Re)start the clock: ``seconds`` count from here."""
        self.started = time.process_time()

    def clock(self, t: int) -> None:
        """Draw ``t``'s ``seconds``: CPU time since the start, less what :meth:`untimed` held."""
        self.values["seconds"][t] = time.process_time() - self.started - self.excluded_seconds

    @contextmanager
    def untimed(self):
        """Leave the CPU time of the block out of the ``seconds`` of every later draw."""
        started = time.process_time()
        try:
            yield
        finally:
            self.excluded_seconds += time.process_time() - started

    def keeps(self, t: int) -> bool:
        """Whether draw ``t`` is kept: after the warm-up, every ``thin``-th."""
        return t >= self.burn and (t - self.burn) % self.thin == 0

    def draw(self, t: int, Z: np.ndarray | None = None, **values) -> None:
        """Record draw ``t``'s ``values`` by name, and a copy of ``Z`` if the draw is kept."""
        for name, value in values.items():
            self.values[name][t] = value
        if Z is not None and self.keeps(t):
            self.samples.append(Z.copy())
            self.sample_draws.append(t)

    def kept_draws(self) -> np.ndarray:
        """The ``draw`` of each kept ``Z`` (``int64``)."""
        return np.array(self.sample_draws, np.int64)

    def datasets(self, trace_attrs: dict | None = None,
                 stats_attrs: dict | None = None) -> tuple[xr.Dataset, xr.Dataset]:
        """``(trace, sample_stats)``: each dimension a coordinate ``0, 1, ...``."""
        def dataset(names, attrs):
            dims = dict.fromkeys(dim for name in names for dim in self.dims[name])
            return xr.Dataset({name: (self.dims[name], self.values[name]) for name in names},
                              coords={dim: np.arange(self.sizes[dim]) for dim in dims},
                              attrs=attrs or {})
        return dataset(self.trace_names, trace_attrs), dataset(self.stat_names, stats_attrs)


def collect_runs(runs: list, *, warmup: int = 0, **groups):
    """Independent runs as one :class:`arviz.InferenceData`, dims ``(chain, draw)``.

    Parameters
    ----------
    runs : list of (xarray.Dataset, xarray.Dataset, numpy.ndarray)
        Per run: its ``trace``, its ``sample_stats`` and the draws it keeps.
    warmup : int, optional
        When > 0, the first ``warmup`` draws of every run form the ``warmup_posterior``
        and ``warmup_sample_stats`` groups.
    **groups
        Further groups (e.g. ``log_likelihood``, ``observed_data``), added as given.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` and ``sample_stats``: each run's kept draws, renumbered from 0 along
        ``draw``, run ``c`` at ``chain = c``.

    Examples
    --------
    >>> trace = xr.Dataset({"k_plus": ("draw", [3, 4, 4, 5])}, coords={"draw": range(4)})
    >>> stats = xr.Dataset({"seconds": ("draw", [0.1, 0.2, 0.3, 0.4])}, coords={"draw": range(4)})
    >>> idata = collect_runs([(trace, stats, np.array([1, 3]))] * 2, warmup=1)
    >>> dict(idata.posterior.sizes), idata.posterior["k_plus"].values[0].tolist()
    ({'chain': 2, 'draw': 2}, [4, 5])
    """
    import arviz as az  # imported on use: arviz is slow to import

    chain = np.arange(len(runs))
    collected = {}
    for index, group in enumerate(("posterior", "sample_stats")):
        kept = [run[index].sel(draw=run[2]).assign_coords(draw=np.arange(len(run[2])))
                for run in runs]
        collected[group] = xr.concat(kept, dim="chain").assign_coords(chain=chain)
        if warmup:
            warm = [run[index].isel(draw=slice(0, warmup)) for run in runs]
            collected[f"warmup_{group}"] = xr.concat(warm, dim="chain").assign_coords(chain=chain)
    return az.InferenceData(**collected, **groups)
