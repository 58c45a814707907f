"""Streaming inference with the Recursive IBP (Schaeffer, Du, Liu & Fiete 2022).

- :class:`RecursiveIBP`: one-pass variational inference for the linear-Gaussian and
  factor-analysis models with an IBP prior; a scikit-learn estimator (``fit``,
  ``partial_fit``, ``transform``, ``score``, ``get_params``/``set_params``/``clone``,
  fitted attributes ending in ``_``), with ``get_state``/``set_state`` and
  ``save``/``load`` to interrupt and resume a stream. Features are born from a buffer of
  residuals that several observations must agree on (``births="buffer"``, the
  linear-Gaussian default; ``flush`` ends a stream; ``ibp_lab.inference.streaming.births``) or from
  one observation's residual (``births="single"``, the original rule).
- :class:`NotFittedError`: raised by a method or fitted attribute of an unfitted
  :class:`RecursiveIBP`; a ``ValueError`` and an ``AttributeError``, as in scikit-learn.
- :func:`filtering_prior`, :func:`paper_prior`: the filtering prior of the next
  observation, with the exact (Poisson-binomial) law of the number of features, and the
  paper's form with its Poisson law, for comparison (``ibp_lab.inference.streaming.filtering``,
  which also holds that law, :func:`~ibp_lab.inference.streaming.filtering.log_feature_count_pmf`).
- :func:`bp_means_one_pass`: BP-means (Broderick, Kulis & Jordan 2013) in one pass, the
  zero-noise limit of :class:`RecursiveIBP` (``ibp_lab.inference.streaming.bp_means``).
- The data of both models are drawn by :func:`ibp_lab.models.linear_gaussian.simulate`
  and :func:`ibp_lab.models.linear_gaussian.simulate_factor_analysis`; learned features
  are paired with true ones by :func:`ibp_lab.evaluation.summaries.match_features`.
- :func:`stream_cost`, :func:`log_fit`: time and memory per observation as a stream grows
  (``ibp_lab.inference.streaming.cost``).
- ``ibp_lab.inference.streaming.births``: the rule of ``births="buffer"`` (admission threshold, the
  buffer's mass, the joint decomposition); ``ibp_lab.evaluation.recovery``:
  ``recovery_study`` and ``is_recovered``, the book's comparison of the birth rules with
  collapsed Gibbs on the canonical images.

The derivations are in the book's chapter "Streaming inference" (``book/12_streaming.md``).
"""

from ibp_lab._checks import NotFittedError
from ibp_lab.inference.streaming.bp_means import bp_means_one_pass
from ibp_lab.inference.streaming.cost import StreamCost, log_fit, stream_cost
from ibp_lab.inference.streaming.filtering import filtering_prior, paper_prior
from ibp_lab.inference.streaming.model import RecursiveIBP

__all__ = [
    "RecursiveIBP",
    "NotFittedError",
    "filtering_prior",
    "paper_prior",
    "bp_means_one_pass",
    "stream_cost",
    "StreamCost",
    "log_fit",
]
