"""Evaluation: judging what inference returned.

Every module imports only the private core, :mod:`ibp_lab.datasets`, :mod:`ibp_lab.models`,
:mod:`ibp_lab.inference` and other evaluation modules.

- :mod:`ibp_lab.evaluation.summaries`: label-free summaries and diagnostics of posterior
  draws.
- :mod:`ibp_lab.evaluation.predictive_checks`: posterior predictive checks.
- :mod:`ibp_lab.evaluation.comparisons`: paired comparisons of methods over repeated runs.
- :mod:`ibp_lab.evaluation.class_structure`: how inferred features relate to known
  classes.
- :mod:`ibp_lab.evaluation.recovery`: whether a stream recovers known features, against
  batch Gibbs.
"""
