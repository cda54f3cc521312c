#!/usr/bin/env bash
# Creates Benchmarks/peers/.venv-llama with llama-cpp-python built from its source distribution
# for this CPU (GGML_NATIVE: the same instruction sets our kernels pick at run time; AMX off, since
# some Xeons here list AMX in cpuid but fault on its instructions), to time
# llama.cpp beside the project's decoder on the same GGUF file. Building llama.cpp takes 15-30
# minutes on 2 cores; it happens once per environment. CI does not run it.
# Idempotent: does nothing when the environment already holds exactly this version.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-llama"
version="0.3.36"
python="${PYTHON:-python3}"
stamp="$venv/.llama-cpp-python-$version"
if [[ -x "$venv/bin/python" && -f "$stamp" ]]; then
    echo "llama peer: $venv is up to date"
    exit 0
fi
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet numpy==2.4.6
echo "llama peer: building llama-cpp-python $version from source (GGML_NATIVE=ON); this takes a while" >&2
CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-binary llama-cpp-python "llama-cpp-python==$version"
touch "$stamp"
echo "llama peer: ready"
