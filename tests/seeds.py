"""Seeds of the statistical tests, and a switch to replace them with fresh ones.

A statistical test states a false-alarm rate: the probability that it fails a
correct implementation. That rate is only a claim until the test is run on seeds
it was not tuned on. Every statistical test therefore draws its generator with
:func:`stat_rng` (or its seed with :func:`stat_seed`) instead of calling
``np.random.default_rng`` with a literal. In a normal run the seed is the literal
given; with ``IBP_SEED_OFFSET=k`` in the environment every such seed is shifted
by ``k * 1_000_003``, so ``tools/fresh_seeds.py`` can rerun the statistical tests
on many fresh seeds and count the failures against the stated rates.
"""

from __future__ import annotations

import os

import numpy as np

#: Offset applied to every statistical test's seed (0 in a normal run).
SEED_OFFSET = int(os.environ.get("IBP_SEED_OFFSET", "0"))


def stat_seed(seed: int) -> int:
    """The seed a statistical test uses in place of ``seed`` in this run."""
    return int(seed) + SEED_OFFSET * 1_000_003


def stat_rng(seed: int) -> np.random.Generator:
    """``np.random.default_rng(stat_seed(seed))``."""
    return np.random.default_rng(stat_seed(seed))
