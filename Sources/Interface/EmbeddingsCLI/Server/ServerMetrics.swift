import Foundation
import LinearAlgebra
import Synchronization

/// The counters `GET /metrics` prints in Prometheus's text format: requests by route and status,
/// request latency, batch sizes (inputs and tokens) and the encoder's queue depth.
final class ServerMetrics: Sendable {
    /// Latency buckets, seconds.
    static let latencyBuckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Batch-size buckets: inputs per batch and tokens per batch.
    static let inputBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    static let tokenBuckets: [Double] = [16, 64, 256, 1024, 4096, 16384, 65536]

    private struct Histogram {
        let bounds: [Double]
        var counts: [Int]
        var sum = 0.0
        var count = 0

        init(_ bounds: [Double]) {
            self.bounds = bounds
            counts = Array(repeating: 0, count: bounds.count)
        }

        mutating func observe(_ value: Double) {
            for (i, bound) in bounds.enumerated() where value <= bound { counts[i] += 1 }
            sum += value
            count += 1
        }

        func text(_ name: String) -> String {
            var lines = ""
            for (bound, count) in zip(bounds, counts) { lines += "\(name)_bucket{le=\"\(bound)\"} \(count)\n" }
            lines += "\(name)_bucket{le=\"+Inf\"} \(count)\n\(name)_sum \(sum)\n\(name)_count \(count)\n"
            return lines
        }
    }

    private struct State {
        var requests: [String: Int] = [:]
        var latency = Histogram(ServerMetrics.latencyBuckets)
        var batchInputs = Histogram(ServerMetrics.inputBuckets)
        var batchTokens = Histogram(ServerMetrics.tokenBuckets)
        var inputs = 0
        /// Chat completions by finish reason (`stop`, `length`, `tool_calls`, `cancelled`, `error`), and tokens.
        var chats: [String: Int] = [:]
        var promptTokens = 0
        var cachedTokens = 0
        var completionTokens = 0
    }

    private let state = Mutex(State())

    /// One answered request. `route` is a known route's path or `other` (unknown paths are not
    /// labels of their own: a scan of random paths must not grow the table).
    func request(route: String, status: Int, seconds: Double, inputs: Int) {
        state.withOrderedLock { state in
            state.requests["route=\"\(route)\",status=\"\(status)\"", default: 0] += 1
            state.latency.observe(seconds)
            state.inputs += inputs
        }
    }

    /// One batch the encoder ran.
    func batch(inputs: Int, tokens: Int) {
        state.withOrderedLock { state in
            state.batchInputs.observe(Double(inputs))
            state.batchTokens.observe(Double(tokens))
        }
    }

    /// One chat completion that ran: how it ended (`stop`, `length`, `tool_calls`, `cancelled` when the client
    /// went away or the server stopped, `error`) and its tokens (`cachedTokens` of the prompt's
    /// were found in a kept decoder cache).
    func chat(finish: String, promptTokens: Int, cachedTokens: Int, completionTokens: Int) {
        state.withOrderedLock { state in
            state.chats[finish, default: 0] += 1
            state.promptTokens += promptTokens
            state.cachedTokens += cachedTokens
            state.completionTokens += completionTokens
        }
    }

    /// The Prometheus text exposition (version 0.0.4); `chatWaiting` and `chatRunning` are the
    /// chat completions waiting and generating now.
    func text(queueDepth: Int, chatWaiting: Int = 0, chatRunning: Int = 0) -> String {
        state.withOrderedLock { state in
            var text =
                "# HELP embeddings_requests_total Requests answered, by route and status.\n# TYPE embeddings_requests_total counter\n"
            for key in state.requests.keys.sorted() {
                text += "embeddings_requests_total{\(key)} \(state.requests[key] ?? 0)\n"
            }
            text +=
                "# HELP embeddings_request_duration_seconds Time from the request's headers to its response.\n# TYPE embeddings_request_duration_seconds histogram\n"
            text += state.latency.text("embeddings_request_duration_seconds")
            text +=
                "# HELP embeddings_inputs_total Texts received in answered requests.\n# TYPE embeddings_inputs_total counter\nembeddings_inputs_total \(state.inputs)\n"
            text +=
                "# HELP embeddings_batch_inputs Texts per encoder batch.\n# TYPE embeddings_batch_inputs histogram\n"
            text += state.batchInputs.text("embeddings_batch_inputs")
            text +=
                "# HELP embeddings_batch_tokens Tokens per encoder batch.\n# TYPE embeddings_batch_tokens histogram\n"
            text += state.batchTokens.text("embeddings_batch_tokens")
            text +=
                "# HELP embeddings_queue_depth Requests waiting for the encoder.\n# TYPE embeddings_queue_depth gauge\nembeddings_queue_depth \(queueDepth)\n"
            text +=
                "# HELP embeddings_chat_completions_total Chat completions generated, by how they ended.\n# TYPE embeddings_chat_completions_total counter\n"
            for key in state.chats.keys.sorted() {
                text += "embeddings_chat_completions_total{finish_reason=\"\(key)\"} \(state.chats[key] ?? 0)\n"
            }
            text +=
                "# HELP embeddings_chat_tokens_total Chat completion tokens: of prompts, of those found in a kept decoder cache, and of completions.\n# TYPE embeddings_chat_tokens_total counter\nembeddings_chat_tokens_total{kind=\"prompt\"} \(state.promptTokens)\nembeddings_chat_tokens_total{kind=\"cached\"} \(state.cachedTokens)\nembeddings_chat_tokens_total{kind=\"completion\"} \(state.completionTokens)\n"
            text +=
                "# HELP embeddings_chat_waiting Chat completions waiting to generate.\n# TYPE embeddings_chat_waiting gauge\nembeddings_chat_waiting \(chatWaiting)\n"
            text +=
                "# HELP embeddings_chat_running Chat completions generating.\n# TYPE embeddings_chat_running gauge\nembeddings_chat_running \(chatRunning)\n"
            return text
        }
    }
}
