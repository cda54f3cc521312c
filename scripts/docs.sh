#!/usr/bin/env bash
# The DocC build: the catalog of every module a library product names (Sources/<layer>/<Module>/
# <Module>.docc), converted by the toolchain's `docc` with --warnings-as-errors, so a broken symbol
# link, a parameter left undocumented or a bad code listing fails the run. swift-docc-plugin is not
# used (it is a package dependency to fetch); each symbol graph comes from the release build's
# module with `swift symbolgraph-extract`, as the plugin would produce it. Internal modules (their
# API is `package`, scripts/public-face.py) have no catalog.
#
#   scripts/docs.sh [OUTPUT] [MODULE...]   archives go to OUTPUT/<Module>.doccarchive
#                                          (default .build/docs; every product module)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/docs}"
shift || true
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  modules=(Embeddings Tokenization WordPiece SentencePiece VectorIndex Retrieval PostgresStorage LanguageModels Answering)
fi
docc="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
[ -x "$docc" ] || docc="$(command -v docc || true)"
if [ -z "$docc" ] || [ ! -x "$docc" ]; then
  echo "error: docc not found beside swift or on PATH" >&2
  exit 1
fi

# A no-op when `make release` (or `make bench-quick`) already built them.
for module in "${modules[@]}"; do
  swift build -c release --target "$module" >/dev/null
done
bin="$(swift build -c release --show-bin-path)"
graphs="$(mktemp -d)"
trap 'rm -rf "$graphs"' EXIT
for module in "${modules[@]}"; do
  catalog="$(find Sources -maxdepth 3 -type d -name "$module.docc" | head -1)"
  if [ -z "$catalog" ]; then
    echo "error: $module names a product but has no $module.docc catalog" >&2
    exit 1
  fi
  # A product's re-exports (its Exports.swift) belong to its documentation as they belong to its API.
  exported=""
  exports="$(dirname "$catalog")/Exports.swift"
  if [ -f "$exports" ]; then
    exported="$(sed -nE 's/^@_exported import ([a-z]+ )?([A-Za-z]+).*/\2/p' "$exports" | sort -u | paste -sd, -)"
  fi
  mkdir -p "$graphs/$module"
  swift symbolgraph-extract -module-name "$module" -target "$(uname -m)-unknown-linux-gnu" \
    -I "$bin/Modules" -I Sources/System/CBLAS -I Sources/System/CZlib -I Sources/System/CPostgres \
    $(pkg-config --cflags-only-I libpq 2>/dev/null | sed 's/-I/-Xcc -I -Xcc /g') \
    -Xcc -fmodule-map-file="$bin/CKernels.build/module.modulemap" -Xcc -I -Xcc Sources/Core/CKernels/include \
    ${exported:+-experimental-allowed-reexported-modules=$exported} \
    -minimum-access-level public -output-dir "$graphs/$module"
  rm -rf "$out/$module.doccarchive"
  mkdir -p "$out"
  "$docc" convert "$catalog" --additional-symbol-graph-dir "$graphs/$module" --output-dir "$out/$module.doccarchive" \
    --fallback-display-name "$module" --fallback-bundle-identifier "org.contextual-embeddings.$module" \
    --warnings-as-errors
  echo "docs: $out/$module.doccarchive"
done
