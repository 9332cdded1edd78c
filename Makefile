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

OLDEST := .venv-oldest

.PHONY: setup demo test test-fast test-oldest bench clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml constraints.txt
	@if [ -z "$(PYTHON310)" ]; then \
		echo "error: Python 3.10 not found (NNabla has wheels only up to 3.10)." >&2; \
		echo "       Install it (e.g. 'pyenv install 3.10') or run: make PYTHON310=/path/to/python3.10" >&2; \
		exit 1; \
	fi
	@test -x $(PY) || $(PYTHON310) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,samples]'
	@touch $(STAMP)

$(DIGITS): $(STAMP) $(LENET)/make_digits.py
	$(PY) $(LENET)/make_digits.py

demo: $(STAMP) $(DIGITS)
	$(PY) -m nnprofile $(LENET)/lenet.nntxt -o results/lenet
	@echo "Open results/lenet/report.html in a browser, or results/lenet/profile.xlsx in Excel or LibreOffice."

test: $(STAMP) $(DIGITS)
	$(PY) -m mypy
	$(PY) -m pytest -q

# The inner loop: every test but those marked slow (subprocesses, mpirun, Chromium, the corpus, the docs).
test-fast: $(STAMP) $(DIGITS)
	$(PY) -m pytest -q -m "not slow"

# The lowest version setup.cfg declares of every dependency, in an environment of its own: the user's
# own pandas, matplotlib and scipy first (as a user's environment holds them), then nnprofile beside
# them; then the tests.
test-oldest:
	@if [ -z "$(PYTHON310)" ]; then echo "error: Python 3.10 not found (see make setup)" >&2; exit 1; fi
	rm -rf $(OLDEST)
	$(PYTHON310) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python .ci/lowest_constraints.py setup.cfg constraints.txt > $(OLDEST)/lowest.txt
	$(OLDEST)/bin/python -m pip install --quiet -c $(OLDEST)/lowest.txt pandas matplotlib scipy numpy
	$(OLDEST)/bin/python -m pip install --quiet -c $(OLDEST)/lowest.txt -e '.[test,samples]'
	$(OLDEST)/bin/python -m pip list 2>/dev/null | grep -iE '^(nnabla|numpy|pandas|openpyxl|xlsxwriter|matplotlib|scipy|pyyaml|protobuf|tqdm) '
	test -f $(DIGITS) || $(OLDEST)/bin/python $(LENET)/make_digits.py
	$(OLDEST)/bin/python -m mypy
	$(OLDEST)/bin/python -m pytest -q

bench: $(STAMP) $(DIGITS)
	$(PY) benchmarks/run.py

clean:
	rm -rf results $(LENET)/digits .pytest_cache $(OLDEST)
