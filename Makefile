# Two entry points: `make demo` and `make test`. Both create .venv/ when missing.
# `make lint` (CI runs it before the tests), `make train` and `make eval` rebuild and score the writer.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[writer,test,lint]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m gitmem.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check gitmem tests bench training
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/commit_overhead.py
	$(BIN)/python bench/hook_latency.py

eval: $(STAMP)
	$(BIN)/python training/eval.py

clean:
	rm -rf $(VENV)
