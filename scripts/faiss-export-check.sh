#!/usr/bin/env bash
# Exported vectors load elsewhere: FAISS (faiss-cpu from PyPI, in a small venv under
# .build/faiss-venv) finds the same top-10 ids in the npy and fvecs exports of the built-in
# corpus's index as `embeddings search --mode semantic`. See Benchmarks/peers/faiss_export_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=".build/faiss-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import faiss, numpy" 2>/dev/null; then
    echo "faiss-export-check: installing faiss-cpu and numpy into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "faiss-cpu==1.9.0.post1" "numpy<2.3"
fi
bin=".build/release/embeddings"
[ -x "$bin" ] || swift build -c release --product embeddings >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" index Fixtures/corpus/swift-lessons --out "$work/lessons.index" --quiet
"$venv/bin/python" Benchmarks/peers/faiss_export_check.py "$bin" "$work/lessons.index" "$work" \
    "How do I unwrap an optional safely?" "What does a closure capture?" "How do actors prevent data races?" \
    "When should I use a struct instead of a class?" "How do I iterate over a dictionary?"
