"""ibp_lab: the algorithms behind the ibp-lab book on the Indian buffet process.

One module per idea, in four wings stacked as floors: a module imports only the private
core, :mod:`ibp_lab.datasets` and modules of its own wing or of the wings below it
(``tests/test_layout.py`` checks it).

- The private core at the root: :mod:`ibp_lab._checks` (argument checks),
  :mod:`ibp_lab._hyper` (the hyperparameters' one door), :mod:`ibp_lab._kernel` (the
  linear-Gaussian algebra), :mod:`ibp_lab._estimator` (what the scikit-learn estimators
  share) and :mod:`ibp_lab._threads`.
- :mod:`ibp_lab.datasets`: the bundled optdigits files, synthetic images and the
  precomputed experiments.
- :mod:`ibp_lab.models`: the priors and likelihoods (prior, beta process, finite model,
  Recursive IBP marginals, linear-Gaussian model).
- :mod:`ibp_lab.inference`: exact enumeration, collapsed Gibbs, split-merge, chains,
  tempering, SMC, samplers that keep the features, the noisy-OR, PyMC, variational and
  streaming inference, the hyperparameters' posterior, held-out prediction and the
  scikit-learn estimator.
- :mod:`ibp_lab.evaluation`: summaries, predictive checks, comparisons of methods, class
  structure, recovery of known features.
- :mod:`ibp_lab.teaching`: the book's figures, explorers, exercises, tables and the
  chapters' one-source helpers.

Each wing's docstring lists its modules; the book's API page lists the same.

Importing the package has no side effects: submodules are imported on use.

Conventions
-----------
Every public function follows these rules (``tests/test_conventions.py`` checks them on
every name in every public module's ``__all__``).

Randomness
    Everything random takes ``rng: numpy.random.Generator``, always called ``rng`` and
    always the **last positional parameter**: everything after it is keyword-only. The
    same generator state gives the same result. (The scikit-learn estimators, such as
    :class:`ibp_lab.inference.streaming.RecursiveIBP`, store ``rng=None`` as a keyword parameter,
    as scikit-learn's estimators do.) No ``seed`` or ``random_state`` arguments.

Hyperparameters
    Spelled ``alpha`` (mass), ``beta`` (concentration), ``sigma_x`` (noise) and
    ``sigma_a`` (feature scale), later ``discount``; never ``sigma_X``, ``sigmaX`` or
    ``noise``. They are **keyword-only** in runners, drivers, simulators, estimators'
    methods, scorers and figures, for example
    ``run_chain(X, n_sweeps, rng, *, alpha=..., sigma_x=..., sigma_a=...)``. The building
    blocks whose signatures the contract table (docs/design.md, section 3) fixes keep them positional, in
    the order ``alpha, sigma_x, sigma_a``: ``prior.sample_ibp(alpha, n, rng, *, beta)``,
    ``prior.log_prior(Z, alpha, *, beta)``, ``recursive.marginals(alpha, beta, n, k_max)``,
    ``linear_gaussian.collapsed_loglik(X, Z, sigma_x, sigma_a)``,
    ``gibbs.gibbs_sweep(X, Z, alpha, sigma_x, sigma_a, rng, *, beta)``,
    ``exact.k_plus_posterior(X, alpha, sigma_x, sigma_a, *, beta, k_max)``, the split-merge
    moves and the estimators' constructors. ``beta`` is keyword-only everywhere except in
    :mod:`ibp_lab.models.recursive` (and ``RecursiveIBP``), whose contracts have it positional.

One set of hyperparameters
    The linear-Gaussian samplers, moves, enumeration and scorers validate
    ``(alpha, sigma_x, sigma_a, beta)`` against the data at one door,
    ``ibp_lab._hyper.check_hyperparameters``, which returns one frozen
    ``Hyperparameters`` object: they all accept and refuse the same values.

Dimensions
    ``X`` is ``(N, D)`` data (``N`` rows or customers, ``D`` dimensions); ``Z`` is an
    ``(N, K)`` binary ``int8`` feature matrix, with no empty columns when a sampler
    returns it (``K`` is then ``K+``); ``A`` is ``(K, D)`` features. Traces are xarray
    objects over the dimension ``draw`` (and ``chain`` for several chains).

Samples
    "samples" always means a list of kept posterior ``Z`` matrices (plus, where a
    function says so, the hyperparameters of each).

Errors
    Bad input is refused at the public function's door, before any work: a
    ``ValueError`` (or ``TypeError`` for a wrong type) whose message names the argument
    and the allowed range, such as ``alpha must be > 0, got -1.0``. Internal helpers
    trust their callers.

Figures
    A ``*_figure(...)`` function makes and returns a whole new
    ``matplotlib.figure.Figure``; a ``plot_*(...)`` function draws on one axes given as
    keyword-only ``ax=None`` (or ``axes=None`` for a row of axes), creating a figure if
    none is given, and returns the axes. Figures never run a model or a sampler: they
    take results the package computed.
"""

__version__ = "0.1.0"
