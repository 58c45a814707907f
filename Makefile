# ibp-lab: two commands do all the set-up on a fresh machine.
#   make book   create .venv, install the pinned stack, build the book (every chapter executed)
#   make test   install the test tools, chromium and TeX, make book, student, student-web and
#               pdf, run the whole test suite (what CI runs)
#   make check  the contributor's fast tier (no browser, Binder, long statistical runs; a
#               sample of the campaign): a few minutes on a warm checkout
#   make lab    JupyterLab on the chapters (works as root too)
#   make student  the chapters as notebooks without solutions, and the problem sets without
#               their keys, in _build/student
#   make student-web  the web book without solutions, keys or marking notes, in
#               _build/student-html, for a course site (after make book: from its cache)
#   make pdf    the book and its student edition as PDFs, _build/latex/ibp-lab.pdf and
#               ibp-lab-student.pdf (after make book: from its cache; installs TeX by make tex)
#   make tex    Debian's TeX for make pdf (XeLaTeX, latexmk, fonts, rsvg-convert, pdftotext),
#               installed with apt-get when missing, as make test installs chromium
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

.PHONY: book test check lab clean student browser setup-test publish-check student-web pdf tex \
        debian-packages a11y

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
	$(BIN)/python -m ibp_lab.teaching._numba_cache --warm
	$(BIN)/python tools/build_book.py

# Debian's chromium for the browser checks (never a downloaded browser build).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser checks"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Debian's TeX for the PDF editions (never a downloaded TeX), only the packages missing:
# XeLaTeX (texlive-xetex brings texlive-latex-extra), the PDF fonts of hyperref and the
# class (texlive-fonts-recommended), FreeFont (the text's Unicode), latexmk, rsvg-convert
# (the SVG figures) and pdftotext (the PDF's test). About 370 MB; 2.5 min on this machine.
TEX_PACKAGES := texlive-xetex texlive-fonts-recommended fonts-freefont-otf latexmk \
                librsvg2-bin poppler-utils
tex:
	@missing=$$(for p in $(TEX_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian's TeX for the PDF editions:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; fi

# Chapters as notebooks without exercise solutions, problem sets without keys, for handing out.
student: $(RUNTIME_STAMP)
	$(BIN)/python tools/student_edition.py _build/student

# The editions below render the book again from make book's execution cache (they run
# nothing, and stop with a message if the cache lacks a chapter).
# The web book without solutions, keys or marking notes, in _build/student-html.
student-web: $(RUNTIME_STAMP)
	$(BIN)/python tools/build_student_web.py

# The PDFs, the book's and the student edition's, in _build/latex.
pdf: $(RUNTIME_STAMP) tex
	$(BIN)/python tools/build_pdf.py

# Debian's packages (the browser, then TeX: apt takes one lock) and the test tools install
# side by side (both mostly wait on downloads), then the book builds (its chapters run one
# per core), then its student web edition and PDFs (one per core), then the suite runs on
# every core.
setup-test:
	$(MAKE) --no-print-directory -j2 debian-packages $(DEV_STAMP) a11y

# axe-core for the accessibility checks, pinned in tests/a11y/package-lock.json, from the
# npm registry (never a CDN).
a11y:
	npm ci --prefix tests/a11y --no-audit --no-fund --silent

debian-packages:
	$(MAKE) --no-print-directory browser
	$(MAKE) --no-print-directory tex

test: setup-test
	$(MAKE) --no-print-directory book student
	$(MAKE) --no-print-directory -j2 student-web pdf
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
