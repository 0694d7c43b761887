# Set-up is automatic: the first `make run` or `make test` creates .venv and installs
# the project with its test extras. Python >= 3.11 must be on PATH as python3.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint lint-types bench clean-venv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(VENV)/.installed  ## open the app on the bundled default recording
	$(BIN)/chassis-inspector $(ARGS)

test: lint  ## lint and type checks, then the whole test suite
	$(BIN)/python -m pytest -q -n 2 $(PYTEST_ARGS)

lint: $(VENV)/.installed  ## ruff (lint + format check), import contracts, mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory lint-types

lint-types: $(VENV)/.installed  ## mypy: strict on core, normal on inspector
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

clean-venv:
	rm -rf $(VENV)
