#!/usr/bin/env bash
# Creates Benchmarks/peers/.venv and installs requirements.txt into it.
# Idempotent: does nothing when the environment already holds exactly these requirements.
# PYTHON=python3.11 ./Benchmarks/peers/setup.sh picks another interpreter (3.10 or later).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
requirements="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "peers: $venv is up to date"
    exit 0
fi
if [[ ! -x "$venv/bin/python" ]]; then
    echo "peers: creating $venv with $("$python" --version 2>&1)"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --requirement "$requirements"
echo "$want" > "$stamp"
echo "peers: ready. Run: $venv/bin/python $here/peers.py"
