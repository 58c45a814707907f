# ibp-lab: two commands do all the set-up on a fresh machine.
#   make book   create .venv, install the pinned stack, build the book (every chapter executed)
#   make test   make book, install the test tools, run the whole test suite (what CI runs)
#   make check  the contributor's fast tier (no browser, Binder, long statistical runs; a
#               sample of the campaign): a few minutes on a warm checkout
#   make lab    JupyterLab on the chapters (works as root too)
#   make student  the chapters as notebooks without solutions, in _build/student
#   make clean  remove the build and the virtual environment
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP     := $(VENV)/.dev-installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Parallel test workers, one per core; each work unit (a file, a campaign group: see
# tests/conftest.py) goes whole to one worker, the longest first.
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST  := $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup --no-loadscope-reorder
# what make check leaves out (tests/conftest.py: the tiers)
FAST    := not slow and not browser and not campaign

.PHONY: book test check lab clean student browser setup-test publish-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): requirements.txt requirements.lock pyproject.toml binder/jupyterlab-overrides.json | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp binder/jupyterlab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $@

$(DEV_STAMP): requirements-dev.txt requirements-dev.lock $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

# The compiled kernels first, once (each chapter would otherwise compile its own), so that
# the chapters' timings are what a reader's first run in this environment meets.
book: $(RUNTIME_STAMP)
	$(BIN)/python -m ibp_lab._numba_cache --warm
	$(BIN)/python tools/build_book.py

# Debian's chromium for the browser checks (never a downloaded browser build).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser checks"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Chapters as notebooks without exercise solutions, for handing out.
student: $(RUNTIME_STAMP)
	$(BIN)/python tools/student_edition.py _build/student

# The browser and the test tools install side by side (both mostly wait on downloads),
# then the book builds (its chapters run one per core), then the suite runs on every core.
setup-test:
	$(MAKE) --no-print-directory -j2 browser $(DEV_STAMP)

test: setup-test
	$(MAKE) --no-print-directory book student
	$(PYTEST)

# The fast tier: everything but the browser, Binder, the long statistical runs and all but a
# sample of the campaign. Needs no built book (the tests of the built site are browser tests).
check: $(DEV_STAMP) student
	$(PYTEST) -m "$(FAST)"

# The environment Binder builds: requirements.txt (which binder/requirements.txt reads,
# jupyterlab-myst included) and the settings binder/postBuild installs, run in .venv.
lab: $(RUNTIME_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" ./binder/postBuild
	$(BIN)/jupyter lab --allow-root --notebook-dir=. book/intro.md

# Refuses to publish while _config.yml's publish: URLs are placeholders.
publish-check:
	$(BIN)/python tools/publish_check.py

clean:
	rm -rf _build $(VENV) .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
