# Two entry points: `make demo` and `make test`. Both create .venv/ when missing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[writer,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m gitmem.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/commit_overhead.py
	$(BIN)/python bench/hook_latency.py
	$(BIN)/python bench/capture_eval.py

clean:
	rm -rf $(VENV)
