#!/usr/bin/env bash
# The DocC build (issue 28, item 8): the Embeddings catalog (Sources/Embedding/Embeddings/Embeddings.docc)
# converted by the toolchain's `docc` with --warnings-as-errors, so a broken symbol link, a
# parameter left undocumented or a bad code listing fails the run. swift-docc-plugin is not used
# (it is a package dependency to fetch); the symbol graph comes from the release build's module
# with `swift symbolgraph-extract`, as the plugin would produce it.
#
#   scripts/docs.sh [OUTPUT]    the archive goes to OUTPUT (default .build/docs/Embeddings.doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/docs/Embeddings.doccarchive}"
docc="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
[ -x "$docc" ] || docc="$(command -v docc || true)"
if [ -z "$docc" ] || [ ! -x "$docc" ]; then
  echo "error: docc not found beside swift or on PATH" >&2
  exit 1
fi

# A no-op when `make release` (or `make bench-quick`) already built it.
swift build -c release --target Embeddings >/dev/null
bin="$(swift build -c release --show-bin-path)"
graphs="$(mktemp -d)"
trap 'rm -rf "$graphs"' EXIT
# Embeddings re-exports Tokenization and a few LinearAlgebra and ModelAssets types (Exports.swift):
# they belong to its documentation as they belong to its API.
swift symbolgraph-extract -module-name Embeddings -target "$(uname -m)-unknown-linux-gnu" \
  -I "$bin/Modules" -I Sources/System/CBLAS -I Sources/System/CZlib \
  -Xcc -fmodule-map-file="$bin/CKernels.build/module.modulemap" -Xcc -I -Xcc Sources/Core/CKernels/include \
  -experimental-allowed-reexported-modules=Tokenization,LinearAlgebra,ModelAssets \
  -minimum-access-level public -output-dir "$graphs"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$docc" convert Sources/Embedding/Embeddings/Embeddings.docc --additional-symbol-graph-dir "$graphs" --output-dir "$out" \
  --fallback-display-name Embeddings --fallback-bundle-identifier org.contextual-embeddings.Embeddings \
  --warnings-as-errors
echo "docs: $out"
