# Two set-up commands on a fresh machine: `make run` (answers from the demo corpus) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
Q ?= How much folic acid should I take before and during pregnancy?
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: install run ask test lint clean-index

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# Ingest the bundled demo corpus (incremental: a no-op when unchanged) and answer a question.
run: install
	$(BIN)/chatbot ingest corpus/demo/cards --quiet
	$(BIN)/chatbot ask "$(Q)"

ask: install
	$(BIN)/chatbot ask "$(Q)" --trace

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

clean-index:
	rm -rf "$${XDG_DATA_HOME:-$$HOME/.local/share}/certified-chatbot/chroma"
