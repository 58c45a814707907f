"""Streaming inference with the Recursive IBP (Schaeffer, Du, Liu & Fiete 2022).

- :class:`RecursiveIBP`: one-pass variational inference for the linear-Gaussian and
  factor-analysis models with an IBP prior; scikit-learn-like (``partial_fit``, ``fit``,
  fitted attributes ending in ``_``), with ``get_state``/``set_state`` and
  ``save``/``load`` to interrupt and resume a stream.
- :class:`NotFittedError`: raised by a method or fitted attribute of an unfitted
  :class:`RecursiveIBP`; a ``ValueError`` and an ``AttributeError``, as in scikit-learn.
- :func:`filtering_prior`, :func:`paper_prior`: the filtering prior of the next
  observation (``ibp_lab.streaming.filtering``).
- :func:`bp_means_one_pass`: BP-means (Broderick, Kulis & Jordan 2013) in one pass, the
  zero-noise limit of :class:`RecursiveIBP` (``ibp_lab.streaming.bp_means``).
- :func:`simulate_linear_gaussian`, :func:`match_features`: data drawn from the model,
  and learned features paired with the true ones (``ibp_lab.streaming.simulate``).
- :func:`stream_cost`, :func:`log_fit`: time and memory per observation as a stream grows
  (``ibp_lab.streaming.cost``).

The derivations are in the book's chapter "Streaming inference" (``book/08_streaming.md``).
"""

from ibp_lab._checks import NotFittedError
from ibp_lab.streaming.bp_means import bp_means_one_pass
from ibp_lab.streaming.cost import StreamCost, log_fit, stream_cost
from ibp_lab.streaming.filtering import filtering_prior, paper_prior
from ibp_lab.streaming.model import RecursiveIBP
from ibp_lab.streaming.simulate import match_features, simulate_linear_gaussian

__all__ = [
    "RecursiveIBP",
    "NotFittedError",
    "filtering_prior",
    "paper_prior",
    "bp_means_one_pass",
    "simulate_linear_gaussian",
    "match_features",
    "stream_cost",
    "StreamCost",
    "log_fit",
]
