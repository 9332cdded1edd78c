# nnprofile: `make demo` profiles the bundled LeNet project, `make test` runs the tests.
# NNabla publishes wheels only up to Python 3.10, so the virtualenv is built with 3.10.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LENET := projects/lenet
DIGITS := $(LENET)/digits/training.csv

# python3.10 from PATH if it really runs (a pyenv shim may not), else pyenv's versions folder.
PYTHON310 ?= $(shell \
	if command -v python3.10 >/dev/null 2>&1 && python3.10 -c 'import sys' >/dev/null 2>&1; then \
		command -v python3.10; \
	else \
		ls -d "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.10*/bin/python3.10 2>/dev/null | sort -V | tail -n 1; \
	fi)

.PHONY: setup demo test bench clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@if [ -z "$(PYTHON310)" ]; then \
		echo "error: Python 3.10 not found (NNabla has wheels only up to 3.10)." >&2; \
		echo "       Install it (e.g. 'pyenv install 3.10') or run: make PYTHON310=/path/to/python3.10" >&2; \
		exit 1; \
	fi
	@test -x $(PY) || $(PYTHON310) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,samples]'
	@touch $(STAMP)

$(DIGITS): $(STAMP) $(LENET)/make_digits.py
	$(PY) $(LENET)/make_digits.py

demo: $(STAMP) $(DIGITS)
	$(PY) -m nnprofile $(LENET)/lenet.nntxt -o results/lenet
	@echo "Open results/lenet/report.html in a browser, or results/lenet/profile.xlsx in Excel or LibreOffice."

test: $(STAMP) $(DIGITS)
	$(PY) -m mypy
	$(PY) -m pytest -q

bench: $(STAMP) $(DIGITS)
	$(PY) benchmarks/run.py

clean:
	rm -rf results $(LENET)/digits .pytest_cache
