# ibp-lab: two commands do all the set-up on a fresh machine.
#   make book   create .venv, install the pinned stack, build the book (every chapter executed)
#   make test   make book, install the test tools, run the whole test suite
#   make lab    JupyterLab on the chapters (works as root too)
#   make student  the chapters as notebooks without solutions, in _build/student
#   make clean  remove the build and the virtual environment
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP     := $(VENV)/.dev-installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: book test lab clean student browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): requirements.txt pyproject.toml binder/jupyterlab-overrides.json | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp binder/jupyterlab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $@

$(DEV_STAMP): requirements-dev.txt $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

book: $(RUNTIME_STAMP)
	$(BIN)/python tools/build_book.py

# Debian's chromium for the browser checks (never a downloaded browser build).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser checks"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Chapters as notebooks without exercise solutions, for handing out.
student: $(RUNTIME_STAMP)
	$(BIN)/python tools/student_edition.py _build/student

test: book student $(DEV_STAMP) browser
	$(BIN)/python -m pytest

# The environment Binder builds: requirements.txt (which binder/requirements.txt reads,
# jupyterlab-myst included) and the settings binder/postBuild installs, run in .venv.
lab: $(RUNTIME_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" ./binder/postBuild
	$(BIN)/jupyter lab --allow-root --notebook-dir=. book/intro.md

clean:
	rm -rf _build $(VENV) .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
