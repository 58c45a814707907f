"""Test-suite set-up: no display, so matplotlib draws off-screen."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
