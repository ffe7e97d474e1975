# One-command set-up: every target below creates .venv (Python 3.10), installs tique with its dev extras and
# builds the C module first, so `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON310 ?= $(shell PYENV_VERSION=3.10.13 pyenv which python3.10 2>/dev/null || command -v python3.10)
VENV := .venv
PY := $(VENV)/bin/python
UDF := tique/_lib/tique_udf.so
STACK := tique/_lib/session_stack.so
DIR ?= ./data/tique-db
PORT ?= 50000
TEST_ARGS ?=
# Test workers: most of a test's time is waiting (on the kernel's threads, a served process, a subprocess, a
# lease), so two workers on two cores take about half the time of one, and three less again (2026-12-07, the same
# tree: 18 min 21 s with two, 14 min 26 s with three). A file's tests stay on one worker (--dist loadfile): module
# fixtures are set up once and tests of a file keep their order. TEST_JOBS=0: one process.
TEST_JOBS ?= 3

.PHONY: setup build test test-long demo serve lint clean bench-engine

setup: $(VENV)/.installed $(UDF) $(STACK)

$(VENV)/.installed: pyproject.toml
	@if [ -z "$(PYTHON310)" ]; then echo "Python 3.10 is required (the embedded MonetDB wheel exists only for it): install it, e.g. 'pyenv install 3.10' or 'apt-get install python3.10'"; exit 1; fi
	@test -x $(PY) || $(PYTHON310) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

build: $(UDF) $(STACK)

tique/_lib/%.so: tique/udf/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -fPIC -shared -pthread -o $@ $<

# `make test` keeps under about 15 minutes: the randomized, soak, crash, differential and benchmark-script tests
# run at a small size there (every case class, value type and engine; fewer seeds, steps, rows, seconds).
# `make test-long` runs the same suite with those tests at full size (TIQUE_TEST_LONG=1, read in tests/conftest.py).
# A test that hangs under tests/interrupts.py ends its process and leaves every thread's stack in a file (pytest
# would lose them with the process's captured stderr): printed after a failed run.
PYTEST_SUITE = hangs=$$(mktemp -d); TIQUE_HANG_DIR=$$hangs $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile \
	--durations=20 $(TEST_ARGS); rc=$$?; for f in $$hangs/*; do [ -s "$$f" ] && cat "$$f"; done; rm -rf $$hangs; exit $$rc

test: setup
	@$(PYTEST_SUITE)

test-long: setup
	@export TIQUE_TEST_LONG=1; $(PYTEST_SUITE)

lint: setup
	$(VENV)/bin/ruff check tique tests benchmarks
	$(VENV)/bin/ruff format --check tique tests benchmarks

demo: setup
	$(PY) -m tique.demo

serve: setup
	@mkdir -p $(dir $(DIR))
	$(VENV)/bin/tique serve $(DIR) --port $(PORT)

bench-engine: setup
	$(PY) -m benchmarks engine --out results/engine.json

clean:
	rm -rf $(VENV) tique/_lib build .pytest_cache
