# Threadwise: `make chat` sets up and runs the terminal chat on the embedded default; `make test` runs the checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup chat test lint bench

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

setup: $(BIN)/.installed

chat: setup
	$(BIN)/threadwise chat

lint: setup
	$(BIN)/ruff check threadwise tests bench
	$(BIN)/ruff format --check threadwise tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -p no:cacheprovider

bench: setup
	bash bench/run_all.sh
