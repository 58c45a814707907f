"""Binder's install, done the way Binder does it, in a fresh environment; then a chapter runs.

repo2docker copies the repository, then (because ``binder/`` exists) runs
``pip install --no-cache-dir -r binder/requirements.txt`` from the repository's root
and ``./binder/postBuild``. This test does the same in a new virtual environment under
a temporary directory, with Python 3.11 as ``binder/runtime.txt`` asks, and executes one
chapter with that environment's kernel.

One difference, by decision: pip may use its cache, which ``make book``'s own install of the
same pins filled minutes earlier, where repo2docker passes ``--no-cache-dir`` (to keep its
image small). The cache changes where a wheel comes from, not which one: the same pinned
requirements are resolved from the repository's root, the same wheels unpacked into an empty
environment, postBuild run, the extension found and a chapter run. What it no longer
re-proves is that the registry serves the files, which the first install just did.
Cost: about a minute and a half with the cache (3.5 minutes without), and a chapter's
run; it is marked ``slow`` (part of ``make test``, not of ``make check``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def locked_pins() -> set[str]:
    """``name==version`` lines of requirements.lock, lower-cased."""
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    return {line.strip().lower() for line in lines if line.strip() and not line.startswith("#")}


def test_runtime_is_the_python_the_package_needs():
    runtime = (ROOT / "binder" / "runtime.txt").read_text().split()
    assert runtime == [f"python-{sys.version_info.major}.{sys.version_info.minor}"], runtime


def test_binder_requirements_install_from_the_root_and_a_chapter_runs(tmp_path):
    env_dir = tmp_path / "binder-env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    environ = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    environ.pop("IBP_LAB_BOOK_BUILD", None)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=1200,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--exclude-editable"],
                            env=environ, capture_output=True, text=True, timeout=300)
    installed = {line.strip().lower() for line in freeze.stdout.splitlines() if "==" in line}
    assert installed == locked_pins(), (
        f"Binder's environment differs from requirements.lock: not locked "
        f"{sorted(installed - locked_pins())}, missing {sorted(locked_pins() - installed)}")
    environ["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{environ['PATH']}"
    post = subprocess.run(["./binder/postBuild"], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=600)
    assert post.returncode == 0, post.stderr
    assert "compiled ibp_lab's kernels" in post.stdout, post.stdout
    settings = env_dir / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert settings.read_text() == (ROOT / "binder" / "jupyterlab-overrides.json").read_text()
    extensions = subprocess.run([str(env_dir / "bin" / "jupyter"), "labextension", "list"],
                                env=environ, capture_output=True, text=True, timeout=120)
    assert "jupyterlab-myst" in extensions.stdout + extensions.stderr
    chapter = subprocess.run(
        [str(python), str(ROOT / "tools" / "run_one_chapter.py"), "02_stick_breaking.md"],
        cwd=ROOT / "book", env=environ, capture_output=True, text=True, timeout=900,
    )
    assert chapter.returncode == 0, chapter.stdout[-2000:] + chapter.stderr[-3000:]
    assert "ran 02_stick_breaking.md" in chapter.stdout
