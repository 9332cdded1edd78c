# nnprofile: `make demo` profiles the bundled LeNet project, `make test` runs the tests.
# NNabla publishes wheels only up to Python 3.10, so the virtualenv is built with 3.10.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
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

.PHONY: setup demo test test-fast format test-oldest corpus bench clean

setup: $(STAMP)

# Every editable install here is in "compat" mode (the clone's folder on sys.path): in setuptools' default mode,
# Python run from the folder above a clone named nnprofile/ imported that folder as an empty namespace package
# (no nnprofile.load).
EDITABLE := --config-settings editable_mode=compat -e
# An editable install's modules compiled, as pip compiles an installed package's: where the environment sets
# PYTHONDONTWRITEBYTECODE, every profiled run compiled nnprofile's modules again (0.12 s a run). A module edited since
# is compiled afresh as it is imported (its file is newer than its .pyc); the profiling targets compile it again.
COMPILE = $(PY) -m compileall -q nnprofile > /dev/null

# The demo's environment: nnprofile and what the demo runs (the sample digits), nothing else; pip's log in
# .venv/install.log (shown when it fails). `make test` adds the test extras (pytest, mypy, playwright, mpi4py).
$(STAMP): setup.cfg pyproject.toml constraints.txt
	@if [ -z "$(PYTHON310)" ]; then \
		echo "error: Python 3.10 not found (NNabla has wheels only up to 3.10)." >&2; \
		echo "       Install it (e.g. 'pyenv install 3.10') or run: make PYTHON310=/path/to/python3.10" >&2; \
		exit 1; \
	fi
	@test -x $(PY) || { echo "nnprofile: creating $(VENV) with $(PYTHON310)"; $(PYTHON310) -m venv $(VENV); }
	@echo "nnprofile: installing nnprofile and its dependencies into $(VENV) (log: $(VENV)/install.log)"
	@{ $(PY) -m pip install --upgrade pip && $(PY) -m pip install -c constraints.txt $(EDITABLE) '.[samples]'; } \
		> $(VENV)/install.log 2>&1 || { tail -n 20 $(VENV)/install.log >&2; exit 1; }
	@$(COMPILE)
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	@echo "nnprofile: installing the test tools into $(VENV) (log: $(VENV)/install.log)"
	@$(PY) -m pip install -c constraints.txt $(EDITABLE) '.[test,samples]' >> $(VENV)/install.log 2>&1 \
		|| { tail -n 20 $(VENV)/install.log >&2; exit 1; }
	@touch $(TEST_STAMP)

$(DIGITS): $(STAMP) $(LENET)/make_digits.py
	@echo "nnprofile: making the sample digits dataset ($(LENET)/digits)"
	@$(PY) $(LENET)/make_digits.py > /dev/null

demo: $(STAMP) $(DIGITS)
	@echo "nnprofile: profiling $(LENET)/lenet.nntxt, training and inference (a few seconds once set up)"
	@$(PY) -m nnprofile $(LENET)/lenet.nntxt -o results/lenet -q
	@grep -E "^(Step|Advice):" results/lenet/profile.log | cut -c1-240
	@echo "Open results/lenet/report.html in a browser, or results/lenet/profile.xlsx in Excel or LibreOffice."

test: $(TEST_STAMP) $(DIGITS)
	$(PY) -m ruff check nnprofile tests benchmarks examples
	$(PY) -m ruff format --check nnprofile tests benchmarks examples
	$(PY) -m mypy
	$(PY) -m pytest -q -n auto -m "not serial"
	$(PY) -m pytest -q -m serial

# The inner loop: every test but those marked slow (subprocesses, mpirun, Chromium, the corpus, the docs), in
# parallel (pytest-xdist, a process per core).
test-fast: $(TEST_STAMP) $(DIGITS)
	$(PY) -m pytest -q -n auto -m "not slow"

# The code as the formatter writes it (make test checks it): run before committing.
format: $(TEST_STAMP)
	$(PY) -m ruff format nnprofile tests benchmarks examples

# The real programs of ../shared/corpus, each alone and under nnprofile run side by side (9.5 to 15 minutes at a
# load of 2 on 2 cores, most of it the programs' own: it ends saying what they took each way; make test runs them
# too).
corpus: $(TEST_STAMP)
	@$(COMPILE)
	$(PY) -m pytest -q -n auto -m "corpus and not serial"
	$(PY) -m pytest -q -m "corpus and serial" || [ $$? -eq 5 ]  # (5: none is serial now, which is no failure)

# The lowest version setup.cfg declares of every dependency, in an environment of its own: the user's
# own pandas and numpy first (as a user's environment holds them), then nnprofile beside them; then the
# tests (TESTS="-m 'not slow'" for the quick ones).
test-oldest:
	@if [ -z "$(PYTHON310)" ]; then echo "error: Python 3.10 not found (see make setup)" >&2; exit 1; fi
	rm -rf $(OLDEST)
	$(PYTHON310) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python .ci/lowest_constraints.py setup.cfg constraints.txt > $(OLDEST)/lowest.txt
	$(OLDEST)/bin/python -m pip install --quiet -c $(OLDEST)/lowest.txt pandas numpy
	$(OLDEST)/bin/python -m pip install --quiet -c $(OLDEST)/lowest.txt $(EDITABLE) '.[test,samples]'
	$(OLDEST)/bin/python -m pip list 2>/dev/null | grep -iE '^(nnabla|numpy|pandas|openpyxl|xlsxwriter|matplotlib|pyyaml|protobuf|tqdm) '
	test -f $(DIGITS) || $(OLDEST)/bin/python $(LENET)/make_digits.py
	$(OLDEST)/bin/python -m mypy
	$(OLDEST)/bin/python -m pytest -q $(TESTS)

bench: $(TEST_STAMP) $(DIGITS)
	@$(COMPILE)
	$(PY) benchmarks/run.py

clean:
	rm -rf results $(LENET)/digits .pytest_cache $(OLDEST)
