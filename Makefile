# Two entry points: `make demo` and `make test`. Both create .venv/ when missing.
# `make lint` (CI runs it before the tests), `make train` and `make eval` rebuild and score the writer.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench eval train clean

# gitmem runs on Python 3.11 (pyproject.toml): a venv of another version is removed, with a message,
# so that no later run is stuck on it.
IS_311 := -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	@$(BIN)/python $(IS_311) || { echo "gitmem needs Python 3.11; .venv has $$($(BIN)/python --version 2>&1)." \
	  "Install python3.11 (or run make PYTHON=/path/to/python3.11); .venv is removed."; rm -rf $(VENV); exit 1; }
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
	$(BIN)/python bench/readonly_scaling.py
	$(BIN)/python bench/encoder_pass.py
	$(BIN)/python bench/encoder_threads.py

eval: $(STAMP)
	$(BIN)/python training/eval.py

# Rebuild the shipped judge (gitmem/judge/data/writer-lora.gguf, writer-head.npz) from the corpus
# and the real-turn labels: LoRA fine-tune (torch, CPU), export for llama.cpp, threshold on dev;
# the frozen-encoder fallback head (head.npz);
# then the trust gate's detector (gate-lora.gguf, gate.npz) from training/gate/.
TRAIN_RUN ?= .git/gitmem/train-run
GATE_RUN ?= .git/gitmem/gate-run
train: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[writer,test,lint,train]'
	$(BIN)/python training/finetune.py --out $(TRAIN_RUN) --corpus-turns 1000 --real-repeat 2 --resume
	$(BIN)/python training/export_lora.py --run $(TRAIN_RUN) --out gitmem/judge/data --outtype f16
	$(BIN)/python training/threshold.py
	$(BIN)/python training/train.py
	$(BIN)/python training/gate/finetune_gate.py --out $(GATE_RUN)

clean:
	rm -rf $(VENV)
