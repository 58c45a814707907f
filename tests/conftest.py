"""Test-suite set-up: no display, so matplotlib draws off-screen."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

# Property-based tests draw their examples from a fixed seed, so that a run of the suite is
# reproducible; `HYPOTHESIS_PROFILE=explore pytest` searches with fresh randomness.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
