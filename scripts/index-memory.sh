#!/usr/bin/env bash
# Peak resident memory of `embeddings index` on a large corpus: the built-in lessons copied
# COPIES times (default 112: 112 × 899 = 100,688 chunks of ~130 tokens), embedded with the
# default model. Prints the chunk count, the time and the peak RSS (from the kernel's
# accounting of the finished child, via /usr/bin/time or python3).
#
#   scripts/index-memory.sh [copies] [work-dir]
set -euo pipefail
copies="${1:-112}"
work="${2:-.build/index-memory}"
cd "$(dirname "$0")/.."
swift build -c release --product embeddings >/dev/null
rm -rf "$work"
mkdir -p "$work/corpus"
for i in $(seq -w 1 "$copies"); do
    cp -R Fixtures/corpus/swift-lessons "$work/corpus/copy-$i"
done
echo "corpus: $copies copies of Fixtures/corpus/swift-lessons in $work/corpus"
run=(.build/release/embeddings index "$work/corpus" --out "$work/corpus.index")
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "elapsed %e s, peak resident memory %M KiB" "${run[@]}"
else
    python3 - "${run[@]}" <<'PY'
import resource, subprocess, sys, time
start = time.time()
code = subprocess.call(sys.argv[1:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"elapsed {time.time() - start:.1f} s, peak resident memory {peak} KiB", file=sys.stderr)
sys.exit(code)
PY
fi
ls -l "$work/corpus.index"
