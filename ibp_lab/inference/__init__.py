"""Inference: posteriors and predictives of the models, exact and approximate.

Every module imports only the private core, :mod:`ibp_lab.models` and other inference
modules.

- :mod:`ibp_lab.inference.exact`: exact posteriors of tiny data sets, by enumeration.
- :mod:`ibp_lab.inference.gibbs`: the collapsed Gibbs sweep.
- :mod:`ibp_lab.inference.split_merge`: split-merge moves on columns, and the singleton
  update.
- :mod:`ibp_lab.inference.chains`: chains of moves plus hyperparameter updates, traced
  as ArviZ InferenceData.
- :mod:`ibp_lab.inference.scan_order`: the exact stationary laws of fixed- and
  random-scan sweeps.
- :mod:`ibp_lab.inference.tempering`: replica exchange over likelihood temperatures.
- :mod:`ibp_lab.inference.smc`: sequential Monte Carlo and annealed importance sampling,
  and the log evidence they estimate.
- :mod:`ibp_lab.inference.uncollapsed`, :mod:`ibp_lab.inference.slice_sampler`: samplers
  that keep the feature images.
- :mod:`ibp_lab.inference.noisy_or`: a model whose features cannot be integrated out,
  with its samplers and enumeration.
- :mod:`ibp_lab.inference.pymc_models`: the truncated stick-breaking IBP in PyMC.
- :mod:`ibp_lab.inference.variational`,
  :mod:`ibp_lab.inference.streaming_variational`: mean-field variational inference, in
  batch and streaming.
- :mod:`ibp_lab.inference.streaming`: the Recursive IBP's streaming inference.
- :mod:`ibp_lab.inference.hyperposterior`: the buffet's own parameters given a binary
  matrix.
- :mod:`ibp_lab.inference.heldout`: held-out prediction, the hidden pixels given the
  observed ones (the IBP's predictive beside finite and Gaussian baselines).
- :mod:`ibp_lab.inference.gibbs_estimator`: the collapsed Gibbs sampler as a
  scikit-learn estimator.
"""
