import Dispatch
import Embeddings
import LinearAlgebra
import Synchronization

/// Dynamic batching, as text-embeddings-inference does it: requests that arrive while the
/// encoder is busy wait in a queue, and the next batch takes as many of them (whole requests,
/// oldest first, of one input type) as fit in `maximumTokens`. Batches run one after another on
/// the encoder's own serial queue, each spread over the model's threads; never on the HTTP
/// library's thread.
final class EncodingBatcher: Sendable {
    /// One request's texts.
    struct Job: Sendable {
        let texts: [String]
        /// Their tokens, special tokens included (counted by the caller's tokenization).
        let tokens: Int
        let inputType: ContextualEmbedding.InputType
        /// Called on the encoder's queue with the texts' results, in order.
        let completion: @Sendable (Result<[ContextualEmbeddingResult], any Error>) -> Void
    }

    private struct State {
        var waiting: [Job] = []
        var running = false
    }

    let embedding: ContextualEmbedding
    let maximumTokens: Int
    let maximumQueue: Int
    private let metrics: ServerMetrics
    private let state = Mutex(State())
    private let encoder = DispatchQueue(label: "embeddings.serve.encoder")

    init(embedding: ContextualEmbedding, maximumTokens: Int, maximumQueue: Int, metrics: ServerMetrics) {
        self.embedding = embedding
        self.maximumTokens = maximumTokens
        self.maximumQueue = maximumQueue
        self.metrics = metrics
    }

    /// Requests waiting (not counting the batch being encoded).
    var queueDepth: Int { state.withOrderedLock { $0.waiting.count } }

    /// Queues `job`; false when `maximumQueue` requests are already waiting (the caller answers 503).
    func submit(_ job: Job) -> Bool {
        let start = state.withOrderedLock { state -> Bool? in
            guard state.waiting.count < maximumQueue else { return nil }
            state.waiting.append(job)
            defer { state.running = true }
            return !state.running
        }
        guard let start else { return false }
        if start { encoder.async { self.drain() } }
        return true
    }

    /// Encodes batches until the queue is empty.
    private func drain() {
        while let batch = nextBatch() {
            let texts = batch.flatMap(\.texts)
            metrics.batch(inputs: texts.count, tokens: batch.reduce(0) { $0 + $1.tokens })
            let outcome = Result {
                try embedding.embeddingResults(for: texts, language: nil, inputType: batch[0].inputType)
            }
            var start = 0
            for job in batch {
                let range = start..<(start + job.texts.count)
                start = range.upperBound
                job.completion(outcome.map { Array($0[range]) })
            }
        }
    }

    /// The oldest waiting jobs of the first one's input type that fit in `maximumTokens` (the
    /// first one always: requests over the limit are refused before they get here); nil, and the
    /// drain ends, when nothing waits.
    private func nextBatch() -> [Job]? {
        state.withOrderedLock { state -> [Job]? in
            guard let first = state.waiting.first else {
                state.running = false
                return nil
            }
            var batch = [first]
            var tokens = first.tokens
            var rest = [Job]()
            for job in state.waiting.dropFirst() {
                if job.inputType == first.inputType, tokens + job.tokens <= maximumTokens {
                    batch.append(job)
                    tokens += job.tokens
                } else {
                    rest.append(job)
                }
            }
            state.waiting = rest
            return batch
        }
    }
}
