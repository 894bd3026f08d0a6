# The README's commands. CI runs `make test` (through .ci/run) on a CPU machine, where the
# Triton kernels run through Triton's interpreter.
PYTHON ?= python3
PIP := $(PYTHON) -m pip --disable-pip-version-check
export PYTHONUNBUFFERED := 1
export PIP_ROOT_USER_ACTION := ignore
# pipefail: a failing command piped into a filter still fails its target.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# Drops pip's warnings about local package folders this machine's pip config names but lacks.
PIP_FILTER := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: test deps bench verify lint

deps:
	$(PIP) install --quiet -r requirements-test.txt 2>&1 | $(PIP_FILTER)

# pytest's own exit codes pass through: 1 for failures, 5 when no test ran; make fails on both.
# TEST_WORKERS pytest-xdist processes share the tests (the interpreter runs one core's worth of
# Python each): 2 for CI's two cores, where the suite takes about half its serial time.
TEST_WORKERS ?= 2
test: deps
	$(PYTHON) -m ruff check tileconv tests benchmarks
	TRITON_INTERPRET=1 $(PYTHON) -m pytest -q -n $(TEST_WORKERS)

# The main job: tileconv beside cuDNN on the default (seed) suite. On a machine without a
# GPU it says so and runs a small correctness demo through Triton's interpreter instead.
bench:
	$(PIP) install --quiet -r requirements-bench.txt
	$(PYTHON) -m tileconv bench

verify:
	$(PYTHON) -m tileconv verify

lint: deps
	$(PYTHON) -m ruff check tileconv tests benchmarks
