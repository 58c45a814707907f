"""The models: the IBP prior and its relatives, and the likelihoods the samplers target.

Nothing here samples a posterior; every module imports only the private core
(:mod:`ibp_lab._checks`, :mod:`ibp_lab._hyper`, :mod:`ibp_lab._kernel`) and other models.

- :mod:`ibp_lab.models.prior`: the IBP prior (buffet, stick-breaking, finite
  beta-Bernoulli; one-, two- and three-parameter).
- :mod:`ibp_lab.models.beta_process`: the (stable) beta process: atoms above a threshold,
  Bernoulli-process rows.
- :mod:`ibp_lab.models.finite`: class probabilities of the finite model and of buffet
  histories.
- :mod:`ibp_lab.models.recursive`: the Recursive IBP marginals.
- :mod:`ibp_lab.models.linear_gaussian`: the linear-Gaussian model, its collapsed
  likelihood and the posterior of its feature images.
"""
