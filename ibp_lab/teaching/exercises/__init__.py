"""Self-checking exercises: a student's function against an exact answer.

Each check runs a function the student wrote, compares it with an exact computation of
the package, and returns an :class:`ExerciseResult`: ``passed`` (a bool), a ``verdict``
in a student's words (what is wrong and where to look) and the numbers behind it. A
notebook shows the result as a short report; a teacher can grade with ``passed``.

- :func:`check_gibbs_sweep`: a collapsed Gibbs sweep of the linear-Gaussian model
  (chapter 5) against exact enumeration, with tolerances from the chain's own effective
  sample size.
- :func:`check_class_probability`: the log probability of a left-ordered class
  (chapter 1) against :func:`ibp_lab.models.prior.log_prior` on every small class.
- :func:`check_recursive_step`: one step of the Recursive IBP marginals (chapter 4)
  against :func:`ibp_lab.models.recursive.marginals`.
- :func:`check_split_merge_ratio`: the log acceptance ratio of a random split (chapter 7)
  on every split of every small class.
- :func:`check_birth_step`: a Metropolis-Hastings update of a row's singletons in the
  uncollapsed sampler (the non-conjugate chapter), inside a sweep, against enumeration.
- :func:`check_ais`: an annealed importance sampler's estimate of the log evidence
  (chapter 8) against enumeration, over independent runs.
- :func:`check_noisy_or_link`: the Gibbs conditional of one link of the noisy-OR model
  (the non-conjugate chapter) against enumeration of its two values.
- :func:`check_smc_weight`: the incremental log weight of one tempering step of SMC
  (chapter 8) against ``(b_new - b_old)`` times the package's collapsed log-likelihood.
- :func:`check_stick_update`: the coordinate-ascent update of one stick's ``q(v_k)`` in
  the stick-breaking variational family (chapter 11) against the package's own update
  (:class:`ibp_lab.inference.variational.VariationalIBP`) and the formula computed directly.
- :func:`check_slice_conditional`: the log-odds of one entry ``z_nk`` in the slice
  sampler (the non-conjugate chapter) against the joint density at both values.

A function that raises ``NotImplementedError`` is reported as "not written yet"; any
other exception is reported in the verdict with its message (an interrupt is not caught).
"""

from ibp_lab.teaching.exercises._ais import check_ais
from ibp_lab.teaching.exercises._births import check_birth_step
from ibp_lab.teaching.exercises._class_probability import check_class_probability
from ibp_lab.teaching.exercises._gibbs import check_gibbs_sweep
from ibp_lab.teaching.exercises._noisy_or_link import check_noisy_or_link
from ibp_lab.teaching.exercises._recursive import check_recursive_step
from ibp_lab.teaching.exercises._result import ExerciseResult, Measurement
from ibp_lab.teaching.exercises._slice_conditional import check_slice_conditional
from ibp_lab.teaching.exercises._smc_weight import check_smc_weight
from ibp_lab.teaching.exercises._split_merge import check_split_merge_ratio
from ibp_lab.teaching.exercises._stick_update import check_stick_update

__all__ = ["ExerciseResult", "Measurement", "check_gibbs_sweep", "check_class_probability",
           "check_recursive_step", "check_split_merge_ratio", "check_ais", "check_birth_step",
           "check_smc_weight", "check_noisy_or_link", "check_stick_update",
           "check_slice_conditional"]
