"""ibp_lab: the algorithms behind the ibp-lab book on the Indian buffet process.

One module per idea (see the book's API reference):

- :mod:`ibp_lab.prior`: the IBP prior (buffet, stick-breaking, finite beta-Bernoulli).
- :mod:`ibp_lab.recursive`: the Recursive IBP marginals.
- :mod:`ibp_lab.datasets`: the bundled optdigits files and synthetic images.
- :mod:`ibp_lab.linear_gaussian`, :mod:`ibp_lab.gibbs`, :mod:`ibp_lab.exact`: the
  linear-Gaussian model, its collapsed Gibbs sampler and exact enumeration.
- :mod:`ibp_lab.plotting`, :mod:`ibp_lab.widgets`: pictures and explorers.

Importing the package has no side effects: submodules are imported on use.
"""

__version__ = "0.1.0"
