# make lab   -- create .venv if missing, install ctxlab, open JupyterLab on the course
# make test  -- same set-up, then the whole test suite (build check, unit tests, notebooks)
#
# torch is installed first, before the package, so that pip never picks a multi-GB CUDA build
# by accident. TORCH defaults to the CPU wheel the course's CI machines keep on disk; elsewhere
# that pin falls back to your platform's own torch, or choose one: `make lab TORCH=torch`.

VENV   ?= .venv
PYTHON ?= python3
TORCH  ?= torch==2.13.0
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ctxlab-installed
PYTEST := $(BIN)/python -m pytest -p no:cacheprovider

.PHONY: install lab test test-unit test-notebooks build clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)" || $(BIN)/python -m pip install -q torch
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. lessons/00_welcome.ipynb

build: $(STAMP)
	$(BIN)/ctxlab build

test: $(STAMP)
	$(BIN)/ctxlab build --check
	$(PYTEST) tests
	$(PYTEST) --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	    --nbval-cell-timeout 300 lessons solutions

clean:
	rm -rf $(VENV)
