#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (swiftc -sanitize=fuzzer,address).
#
#   scripts/fuzz.sh [target|all] [seconds-per-target | smoke]
#
# `smoke` (what CI runs) is a deterministic 20,000 executions per target with seed 1, so it
# passes or fails the same way every time.
# Targets: tokenizer sentencepiece safetensors indexfile chunker jsonlines gguf jinja jsonreader jsonschema
# guidedpattern bytepair events. Each target is compiled from the
# module sources it exercises (imports between them stripped, so they form one module) plus
# Fuzz/Fuzz<Target>.swift. Corpora and crash artifacts go to .build/fuzz/. A crash stops the
# target with a non-zero exit and leaves the input in .build/fuzz/artifacts-<target>/; keep each
# finding as a named regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
which="${1:-all}"
seconds="${2:-60}"
out="${FUZZ_OUT:-.build/fuzz}"
mkdir -p "$out"
vocab="${XDG_CACHE_HOME:-$HOME/.cache}/contextual-embeddings/models/sentence-transformers/all-MiniLM-L6-v2/vocab.txt"
# The byte-level BPE target's vocabulary: the installed default language model's (SmolLM2), else a fixture's.
gguf="$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/contextual-embeddings/models/HuggingFaceTB/SmolLM2-135M-Instruct/*.gguf 2>/dev/null | head -1 || true)"

sources_for() {
  case "$1" in
    tokenizer) echo Sources/Core/Hashing/*.swift Sources/Core/Tokenization/*.swift $(ls Sources/Embedding/WordPiece/*.swift | grep -v Exports.swift) ;;
    sentencepiece) echo Sources/Core/Hashing/*.swift Sources/Core/Tokenization/*.swift Sources/Embedding/SentencePiece/*.swift ;;
    safetensors) echo Sources/Embedding/BertEncoder/Safetensors.swift Sources/Embedding/BertEncoder/EncoderError.swift Sources/Core/LinearAlgebra/HalfFloat.swift ;;
    indexfile) echo Sources/Core/LinearAlgebra/*.swift Sources/Core/LinearAlgebra/Reference/*.swift Sources/Core/VectorIndex/*.swift ;;
    chunker) echo Sources/Application/Retrieval/MarkdownChunker.swift Sources/Application/Retrieval/CountedText.swift Sources/Application/Retrieval/Chunk.swift Sources/Application/Retrieval/Page.swift Sources/Application/Retrieval/RetrievalError.swift ;;
    gguf) echo Sources/Generation/GGUF/*.swift Sources/Generation/GGUF/Blocks/*.swift ;;
    jinja) echo Sources/Generation/ChatTemplates/*.swift Sources/Core/JSONText/*.swift ;;
    jsonreader) echo Sources/Core/JSONText/*.swift ;;
    jsonschema) echo Sources/Core/JSONText/*.swift $(for f in GenerationSchema GenerationSchema+JSONSchema GeneratedContent GeneratedContent+Conversions GenerationGuide Generable GenerationError GuidedPattern JSONGrammar JSONGrammar+State JSONGrammar+Scans; do echo Sources/Generation/LanguageModels/$f.swift; done) ;;
    guidedpattern) echo Sources/Generation/LanguageModels/GuidedPattern.swift ;;
    bytepair) echo Sources/Core/Hashing/*.swift Sources/Core/Tokenization/*.swift Sources/Generation/BytePairEncoding/*.swift Sources/Generation/GGUF/*.swift Sources/Generation/GGUF/Blocks/*.swift ;;
    events) echo Sources/Generation/RemoteGeneration/ServerSentEvents.swift ;;
    jsonlines) echo Sources/Interface/EmbeddingsCLI/JSONLinesReader.swift Sources/Interface/EmbeddingsCLI/CommandLineSupport.swift Sources/Interface/CommandLineOptions/*.swift Sources/Core/LinearAlgebra/LockOrdering.swift ;;
  esac
}

build() {
  local target="$1" name dir
  name="$(echo "${target:0:1}" | tr a-z A-Z)${target:1}"
  case "$target" in
    indexfile) name=IndexFile ;; jsonlines) name=JSONLines ;; sentencepiece) name=SentencePiece ;; gguf) name=GGUF ;;
    jsonreader) name=JSONReader ;; jsonschema) name=JSONSchema ;; guidedpattern) name=GuidedPattern ;; bytepair) name=BytePair ;;
    events) name=ServerSentEvents ;;
  esac
  dir="$out/src-$target"
  rm -rf "$dir"; mkdir -p "$dir"
  for f in $(sources_for "$target"); do
    # One module: the package's own imports go, and so does the CLI's alias of the parser's error type.
    sed -E -e '/^(@_exported )?import (Hashing|Tokenization|WordPiece|SentencePiece|LinearAlgebra|VectorIndex|BertEncoder|ModelAssets|Embeddings|Retrieval|CommandLineOptions|JSONText|ChatTemplates|GGUF|BytePairEncoding|LlamaDecoder)$/d' \
      -e '/^typealias CLIError = CommandLineOptions\.CLIError$/d' "$f" > "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  cp "Fuzz/Fuzz$name.swift" "$dir/"
  local extra=()
  if [ "$target" = indexfile ] || [ "$target" = jsonlines ] || [ "$target" = gguf ] || [ "$target" = bytepair ] || [ "$target" = safetensors ]; then
    mkdir -p "$dir/ckernels"
    cp Sources/Core/CKernels/include/*.h "$dir/ckernels/"
    printf 'module CKernels {\n    header "ckernels.h"\n    export *\n}\n' > "$dir/ckernels/module.modulemap"
    local objects=()
    for c in Sources/Core/CKernels/*.c; do
      clang -O2 -fsanitize=address -c "$c" -I Sources/Core/CKernels/include -o "$dir/$(basename "$c" .c).o"
      objects+=("$dir/$(basename "$c" .c).o")
    done
    extra=(-I "$dir/ckernels" -I Sources/System/CBLAS $(pkg-config --cflags openblas | sed 's/-I/-Xcc -I/g') "${objects[@]}" $(pkg-config --libs openblas))
  fi
  swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name ContextualEmbeddings -module-name Fuzz$name "$dir"/*.swift "${extra[@]}" -o "$out/fuzz-$target" 2>&1 | { grep -v "Cannot export local symbol" || true; }
}

run() {
  local target="$1"
  local limit=(-max_total_time="$seconds")
  if [ "$seconds" = smoke ]; then limit=(-runs=20000 -seed=1); fi
  echo "== fuzz $target (${limit[*]})"
  build "$target"
  mkdir -p "$out/corpus-$target" "$out/artifacts-$target"
  # GGUF starts from the small Python-written fixture rather than from nothing.
  # The text parsers start from the project's own fixtures where it has them.
  case "$target" in
    gguf) cp Fixtures/gguf/types.gguf "$out/corpus-$target/" ;;
    jinja) python3 scripts/fuzz-seeds.py jinja "$out/corpus-$target" ;;
    jsonreader | jsonschema) python3 scripts/fuzz-seeds.py "$target" "$out/corpus-$target" ;;
    guidedpattern) python3 scripts/fuzz-seeds.py guidedpattern "$out/corpus-$target" ;;
    bytepair) python3 scripts/fuzz-seeds.py bytepair "$out/corpus-$target" ;;
  esac
  LSAN_OPTIONS="suppressions=$(pwd)/Fuzz/lsan.supp" SWIFT_BACKTRACE=enable=no FUZZ_VOCAB="$vocab" FUZZ_GGUF="$gguf" "$out/fuzz-$target" "${limit[@]}" -rss_limit_mb=4096 -max_len=65536 -timeout=20 \
    -artifact_prefix="$out/artifacts-$target/" -print_final_stats=1 "$out/corpus-$target" 2>&1 \
    | grep -E "^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" || true
  # libFuzzer's own exit status is lost in the pipe: a crash leaves an artifact.
  if ls "$out/artifacts-$target"/crash-* "$out/artifacts-$target"/leak-* "$out/artifacts-$target"/oom-* \
    "$out/artifacts-$target"/timeout-* >/dev/null 2>&1; then
    echo "error: fuzz $target found a failure: $(ls "$out/artifacts-$target"/)" >&2
    return 1
  fi
}

if [ "$which" = all ]; then
  for t in tokenizer sentencepiece safetensors indexfile chunker jsonlines gguf jinja jsonreader jsonschema guidedpattern bytepair events; do
    run "$t"
  done
else
  run "$which"
fi
