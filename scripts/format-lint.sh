#!/usr/bin/env bash
# The formatter's check (issue 28, item 8): swift-format, from the Swift toolchain, with the
# repository's .swift-format (4-space indentation, lines of 120 columns at most, the toolchain's
# default rules otherwise), over Sources, Tests, Benchmarks, Fuzz and Examples.
#
#   scripts/format-lint.sh           lint, strict: exit 1 on any finding (`make lint`; .ci/run runs it),
#                                    and the house rule swift-format cannot check: every Mutex is taken
#                                    with `withOrderedLock` (Docs/Architecture.md), never `withLock`
#   scripts/format-lint.sh --count   the number of findings per rule, and exit 0
#   scripts/format-lint.sh --fix     format the files in place (`make format`)
#
# A rule is set aside only where a name must be written as its source writes it, on that
# declaration, with the reason above it: `// swift-format-ignore: AlwaysUseLowerCamelCase`.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Sources Tests Benchmarks Fuzz Examples)
case "${1:-}" in
  "")
    swift format lint --strict --recursive --parallel "${paths[@]}"
    # (The package's own code: Examples/ is a user's package, which has no withOrderedLock.)
    if grep -rn --include='*.swift' --exclude-dir=.build '\.withLock\b' Sources Tests Benchmarks Fuzz \
      | grep -v '^Sources/Core/LinearAlgebra/LockOrdering.swift:'; then
      echo "error: take a Mutex with withOrderedLock (LinearAlgebra/LockOrdering.swift), not withLock" >&2
      exit 1
    fi
    ;;
  --count)
    swift format lint --recursive --parallel "${paths[@]}" 2>&1 \
      | sed -n 's/.*warning: \[\([A-Za-z]*\)\].*/\1/p' | sort | uniq -c | sort -rn
    ;;
  --fix) swift format format --in-place --recursive --parallel "${paths[@]}" ;;
  *) echo "usage: scripts/format-lint.sh [--count|--fix]" >&2; exit 64 ;;
esac
