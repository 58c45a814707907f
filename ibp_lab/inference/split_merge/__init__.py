"""Split-merge Metropolis-Hastings moves on the columns of ``Z``, and the singleton update.

The collapsed Gibbs sampler (:mod:`ibp_lab.inference.gibbs`) changes one entry of ``Z``
at a time. To turn one feature into two, or two into one, it has to walk
through intermediate states in which many digits are explained badly, and on
real data it practically never does. A split-merge move proposes the whole
change at once and accepts it with a Metropolis-Hastings probability.

Public functions:

- :func:`random_split_merge` ``(X, Z, alpha, sigma_x, sigma_a, rng, n_proposals,
  *, beta=1.0) -> (Z, stats)``: merge two random features into their union, or
  split a random feature by sending each owner to the first half, the second
  half or both, uniformly at random.
- :func:`sequential_split_merge` (same signature): pick two data points; split a
  feature they share, or merge a feature of one with a feature of the other;
  the other owners are allocated to the halves one at a time, each in
  proportion to how well it fits (sequential allocation, Jain & Neal 2004;
  for latent features, Meeds et al. 2007).
- :func:`singleton_update` ``(X, Z, alpha, sigma_x, sigma_a, rng, *, beta=1.0)
  -> Z``: for each row, redraw its number of singleton features (features no
  other row owns) from the exact conditional. With a split-merge move it makes
  a complete sampler without any Gibbs flips, which is how the tests check the
  moves on their own.

As moves (:class:`RandomSplitMerge`, :class:`SequentialSplitMerge`, each ``n_proposals``
proposals a call, and :class:`SingletonUpdate`; also importable from
:mod:`ibp_lab.inference.chains`) they go in a chain's list of moves beside Gibbs sweeps
and the hyperparameter moves (:class:`ibp_lab.inference.chains.AlphaUpdate`,
:class:`ibp_lab.inference.chains.ScaleUpdate`), and replica exchange and SMC run them at
their inverse temperatures (those two refuse the hyperparameter moves). Only the moves listed run:
``ibp_lab.inference.chains.run_chains(X, n_chains, n_sweeps, rng,
moves=[chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=10)], ...)`` holds
``alpha``, ``sigma_x`` and ``sigma_a`` fixed at the values given; add
``chains.AlphaUpdate()`` and ``chains.ScaleUpdate("sigma_a")`` to the list to sample them
as well (:data:`ibp_lab.inference.chains.DEFAULT_MOVES` is the sweep with those two). Timings and book tables
(:func:`ibp_lab.teaching.reports.seconds_per_step`, :func:`ibp_lab.teaching.reports.log_ratio_parts`,
:func:`ibp_lab.teaching.reports.summarize_run`) live in :mod:`ibp_lab.teaching.reports`.

Layout, one unit per piece (as emcee groups its moves):

- ``_target``: the target, ``LogJoint`` (``log p(X | Z)`` and
  ``log P([Z])``, the kernel's :func:`ibp_lab._kernel.log_joint`), the proposal record and the counting of
  columns by value;
- ``_metropolis``: the argument door of every move and the Metropolis-Hastings
  driver that fills ``stats``;
- ``_random``: random splits and merges;
- ``_sequential``: sequentially allocated splits and merges;
- ``_singleton``: the singleton update.

Every move takes the model's hyperparameters through the same
door as :func:`ibp_lab.inference.gibbs.gibbs_sweep` (:func:`ibp_lab._hyper.check_hyperparameters`),
so the moves accept and refuse exactly the settings the sweep does; in particular
``sigma_x / sigma_a >= 1e-3``, where their rank-one downdates keep their digits.

``stats`` (what both moves return) holds the counts ``proposed_splits``,
``accepted_splits``, ``proposed_merges``, ``accepted_merges`` and ``void``
(proposals that could not be formed: a random split with an empty half, no
feature to merge with, fewer than two rows owning features), and one entry per
formed proposal in the arrays ``kind`` (``"split"`` or ``"merge"``),
``delta_log_likelihood``, ``delta_log_prior``, ``log_proposal_ratio``,
``log_ratio`` (the sum of the three: the log Metropolis-Hastings ratio) and
``accepted``.

Tempered moves. Every move takes ``inverse_temperature=b`` (default 1) and then leaves
the tempered posterior ``p(X | Z)^b P([Z])`` invariant, the target of replica exchange's
rungs and of SMC's steps (:mod:`ibp_lab.inference.tempering`, :mod:`ibp_lab.inference.smc`,
which take these moves): the acceptance ratio weighs the likelihood's change by ``b``
(``delta_log_likelihood`` records ``b`` times the change), the sequential allocation and
the singleton update raise their predictive densities to ``b``, and the prior is not
tempered. At ``b = 1`` every move draws what it drew before, bit for bit.

What the moves leave invariant
------------------------------
The target is the posterior over equivalence classes, ``pi([Z])`` proportional
to ``P([Z] | alpha, beta) p(X | Z, sigma_x, sigma_a)``, with the class
probability of :func:`ibp_lab.models.prior.log_prior` (including its ``1 / prod_h K_h!``
for identical columns). A class is a multiset of columns, so every
proposal probability below is written in terms of column *values*: "pick a
feature uniformly at random" picks the value ``u`` with probability
``n(u) / K``, where ``n(u)`` counts the columns equal to ``u``.

Each move is a collection of *paths*: a path from ``[Z]`` to ``[Z']`` is the
list of value-level choices that produced ``[Z']`` (which values were picked,
which owner went where). Every path has exactly one reverse path, from ``[Z']``
back to ``[Z]``, and the pairing is one-to-one: a split of value ``u`` into the
halves ``c1, c2`` is reversed by the merge of the pair ``{c1, c2}``, and
conversely. A path ``w`` is accepted with probability
``min(1, pi(Z') q(w') / (pi(Z) q(w)))``, ``w'`` its reverse, so that
``pi(Z) q(w) a(w) = min(pi(Z) q(w), pi(Z') q(w'))`` is the same for ``w`` and
``w'``. Summing over the paths between two classes gives detailed balance
for the classes themselves. (Several paths can connect the same two classes:
for example, a random merge of ``a`` with a column ``b`` that contains it
deletes ``a``, as would the merge of two copies of ``a``. Each path is balanced
with its own reverse, so nothing needs to be summed.) The tests compute the
whole transition matrix of each move on small state spaces and check detailed
balance to 1e-10.

The moves never change which rows own at least one feature, and a split or a
merge changes ``K+`` by exactly one, so on their own they are not irreducible:
combine them with :func:`ibp_lab.inference.gibbs.gibbs_sweep` or :func:`singleton_update`.

Sequential allocation
---------------------
Pick an ordered pair of distinct rows ``(i, j)`` uniformly among the rows that
own at least one feature (the moves do not change that set, so this
probability cancels), then a feature ``a`` of row ``i`` uniformly.

- If row ``j`` owns ``a``: *split* ``a``. Row ``i`` goes to the first half only,
  row ``j`` to the second half only; the other owners of ``a``, in a uniformly
  random order, are allocated one at a time.
- Otherwise: pick a feature ``b`` uniformly among those that ``j`` owns and
  ``i`` does not (no move if there is none) and propose to *merge* ``a`` and
  ``b`` into their union. Its reverse is the split of the union in which ``i``
  and ``j`` anchor the halves and the other owners are allocated in a random
  order so as to recreate ``a`` and ``b``; the merge needs the probability
  that the allocation would have done so.

Allocation of row ``r``: the halves so far hold the anchors and the rows
already allocated; the rows still waiting keep the old feature, as a third
column that shrinks as they leave it, so that they stay explained while the
halves are built. Row ``r`` leaves that column and is scored on three
options (first only, second only, both): the prior conditional of each half
(``m / (beta + N - 1)`` for an entry switched on, ``m`` the other rows in
that half, as in the Gibbs sampler) times the predictive density of ``x_r``
given all other rows. The product of the chosen options' probabilities is
the proposal probability of the split. (Any weights would give a valid move,
as long as their probability is computed exactly; these follow the data.)

Cost of one sequential proposal with ``K`` features, ``N`` rows, ``D``
dimensions and ``m`` owners to allocate: ``O(N K D + K^3)`` to set up (``Z^T X``
and ``M^-1``, ``M = Z^T Z + (sigma_x / sigma_a)^2 I``), then ``O(K^2 + K D)`` per
allocated row, because taking a row out and putting it back are rank-one
(Sherman-Morrison) updates of ``M^-1`` and of the posterior mean of the
features: the kernel's ``row_out`` and ``row_in`` (:mod:`ibp_lab._kernel`), the
same steps as the Gibbs sweep; ``O(N K D + K^3)`` again for the log joint of
the proposed state. On the book's 300 digits this is well under a millisecond.
The allocation runs in compiled code (numba).
"""

from ibp_lab.inference.split_merge._metropolis import MAX_PROPOSALS
from ibp_lab.inference.split_merge._random import RandomSplitMerge, random_split_merge
from ibp_lab.inference.split_merge._sequential import SequentialSplitMerge, sequential_split_merge
from ibp_lab.inference.split_merge._singleton import SingletonUpdate, singleton_update

__all__ = ["random_split_merge", "sequential_split_merge", "singleton_update", "MAX_PROPOSALS",
           "RandomSplitMerge", "SequentialSplitMerge", "SingletonUpdate"]
