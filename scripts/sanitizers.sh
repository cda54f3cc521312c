#!/usr/bin/env bash
# The test suite under AddressSanitizer and ThreadSanitizer (release builds, so the real model
# runs at a bearable speed). EvaluationTests (indexes the whole corpus twice) is skipped here:
# it is the same code paths as StoreTests at 450× the work. Either suite stops at its first
# report and fails (halt_on_error=1).
#
#   scripts/sanitizers.sh [address|thread|all]    the whole suite (the PostgreSQL tests need CE_POSTGRES_URL)
#   scripts/sanitizers.sh concurrency             ThreadSanitizer over the tests that run code on
#                                                 several threads at once (CI runs this one)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
which="${1:-all}"

# Parallel scans and code builds, the encoder's batch groups and shared models, BLAS thread
# scopes, concurrent installs, both stores searched while they index, and the server draining
# a refused body on its own queue (its child process is built with the same sanitizer), one
# language model decoding many sequences at once, block products split over threads, and
# the remote-model client (URLSession delegate threads, cancellation, a fault server), language-model sessions (engine threads, streams, cancellation, one request at a time, tool
# calls awaited between turns), the answer step over them, and the chat endpoint (streams
# suspended and resumed, clients leaving, SIGTERM mid-stream; its server child built with the
# same sanitizer).
concurrency_tests='LargeIndexTests|RowSplitTests|GoldenParityTests.testSentenceVectorsIndependentOfBatchingAndThreads'
concurrency_tests+='|SentenceEmbeddingTests.testBatchGroups|SentenceEmbeddingTests.testOneModelSharedByConcurrentTasks'
concurrency_tests+='|SafetensorsTests.testForwardOnCallingThreadEqualsForward|BLASThreadsTests'
concurrency_tests+='|ModelAssetsTests.testTwoConcurrentInstallsBothSucceed|Int8EncoderTests.testOneInt8ModelSharedByConcurrentThreads'
concurrency_tests+='|StoreTests.testConcurrentSearchesWhileDocumentsChange|StoreTests.testSearchAnswersWhileAnIndexingRunEmbeds'
concurrency_tests+='|PostgresStoreTests.testConcurrentIndexRunsWaitForEachOther|PostgresStoreTests.testSearchOnTheSameStoreAnswersDuringAnIndexingRun'
concurrency_tests+='|ServerTests.testAnEarlyAnswerReachesAClientStillSendingItsBody'
concurrency_tests+='|DecoderConcurrencyTests|BlockGEMMTests.testColumnSplitsAcrossThreads|LanguageModelSessionTests'
concurrency_tests+='|ToolTests.testRequiredCallRunsTheToolAndAnswersWithItsOutput|ToolTests.testNextTurnReturnsCallsWithoutRunningThem'
concurrency_tests+='|ToolTests.testFailingToolIsToolCallError|AnsweringTests|ServerChatTests|RemoteGenerationTests'

run() {
  local sanitizer="$1"; shift
  echo "== swift test --sanitize=$sanitizer $*"
  CE_SANITIZER="$sanitizer" TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=0" \
    swift test -c release --sanitize="$sanitizer" --build-path ".build/sanitize-$sanitizer" "$@"
}

case "$which" in
  concurrency) run thread --filter "$concurrency_tests" ;;
  address|thread) run "$which" --skip EvaluationTests ;;
  all) run address --skip EvaluationTests; run thread --skip EvaluationTests ;;
  *) echo "usage: scripts/sanitizers.sh [address|thread|all|concurrency]" >&2; exit 64 ;;
esac
