# Set-up is automatic: the first `make run` or `make test` creates .venv and installs
# the project with its test extras. Python >= 3.11 must be on PATH as python3.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint lint-types bench clean-venv node-deps

# the openai npm package for the proxy's language-agnostic test (tests/proxy/test_node_agent.py);
# without node or the registry the test skips itself with the reason
NODE_DEPS := tests/proxy/node/node_modules/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(VENV)/.installed  ## open the app on the bundled default recording
	$(BIN)/chassis-inspector $(ARGS)

$(NODE_DEPS): tests/proxy/node/package.json tests/proxy/node/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd tests/proxy/node && npm ci --silent --no-audit --no-fund) && touch $@ \
	  || echo "node-deps: npm ci failed; the node agent test will be skipped" >&2; \
	else echo "node-deps: npm is not installed; the node agent test will be skipped" >&2; fi

node-deps: $(NODE_DEPS)

test: lint node-deps  ## lint and type checks, then the whole test suite
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
