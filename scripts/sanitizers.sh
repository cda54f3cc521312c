#!/usr/bin/env bash
# The test suite under AddressSanitizer and ThreadSanitizer (release builds, so the real model
# runs at a bearable speed). EvaluationTests (indexes the whole corpus twice) is skipped here:
# it is the same code paths as StoreTests at 450× the work.
#
#   scripts/sanitizers.sh [address|thread|all]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
which="${1:-all}"
for sanitizer in address thread; do
  if [ "$which" != all ] && [ "$which" != "$sanitizer" ]; then continue; fi
  echo "== swift test --sanitize=$sanitizer"
  CE_SANITIZER="$sanitizer" TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=0" \
    swift test -c release --sanitize="$sanitizer" --build-path ".build/sanitize-$sanitizer" --skip EvaluationTests
done
