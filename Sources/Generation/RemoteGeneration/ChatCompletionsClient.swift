import Foundation
import JSONText
import LinearAlgebra
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why a request to an OpenAI-compatible server failed: what happened, the URL asked (never the
/// API key, nor credentials or a query in the URL), and the server's or the system's words.
package struct ChatCompletionsError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// Nothing answered: connection refused, host not found, network unreachable.
        case cannotConnect
        /// No byte arrived for `seconds`: before the response's head, or between two events.
        case timedOut(seconds: Double)
        /// 429: the server asks to wait (`Retry-After` in seconds, when it said).
        case rateLimited(retryAfter: Double?)
        /// Any other status that is not 2xx (a 5xx after the retries allowed).
        case status(Int)
        /// The connection ended in the middle of the answer (some of it may have been delivered).
        case streamCut
        /// The body is not what was asked for: not JSON, or not an event stream of JSON.
        case invalidResponse
    }

    package let kind: Kind
    /// The URL asked, as printable: scheme, host, port and path.
    package let url: String
    /// The server's message (OpenAI's `error.message`) or the system's.
    package let detail: String

    package init(_ kind: Kind, url: String, detail: String) {
        self.kind = kind
        self.url = url
        self.detail = detail
    }

    package var description: String {
        let what: String
        switch kind {
        case .cannotConnect: what = "cannot connect"
        case .timedOut(let seconds): what = "no answer within \(Self.seconds(seconds))"
        case .rateLimited(let after?): what = "rate limited (429): retry after \(Self.seconds(after))"
        case .rateLimited(nil): what = "rate limited (429)"
        case .status(let code): what = "HTTP \(code)"
        case .streamCut: what = "the stream ended in the middle of the answer"
        case .invalidResponse: what = "the response is not what an OpenAI-compatible server sends"
        }
        return detail.isEmpty ? "\(url): \(what)" : "\(url): \(what): \(detail)"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }
}

/// An HTTP client of one OpenAI-compatible server (vLLM, llama.cpp's `llama-server`, Ollama,
/// text-generation-inference, OpenAI): JSON posts, whole or read as server-sent events.
///
/// Foundation's `URLSession` carries it (on Linux, over libcurl): its data delegate hands the
/// body over as it arrives, so an event stream is read event by event. No byte for `idleTimeout`
/// seconds (before the head, or between two pieces of the body) ends the request with
/// `.timedOut`. A 429 and a 502/503/504 are tried again, at most `maximumAttempts` times in all,
/// after the server's `Retry-After` or a doubling pause — only while nothing was delivered, and
/// never when the server asks to wait longer than `maximumRetryDelay`. A cancelled task cancels
/// the transfer, which closes the connection.
package final class ChatCompletionsClient: Sendable {
    /// The API's root, such as `http://127.0.0.1:8080/v1`.
    package let baseURL: URL
    private let apiKey: String?
    package let idleTimeout: Double
    package let maximumAttempts: Int
    package let maximumRetryDelay: Double
    /// The largest whole (not streamed) body read.
    package static let maximumBodyBytes = 64 << 20

    package init(
        baseURL: URL, apiKey: String?, idleTimeout: Double = 60, maximumAttempts: Int = 3,
        maximumRetryDelay: Double = 30
    ) {
        self.baseURL = baseURL
        self.apiKey = apiKey.flatMap { $0.isEmpty ? nil : $0 }
        self.idleTimeout = idleTimeout
        self.maximumAttempts = max(1, maximumAttempts)
        self.maximumRetryDelay = maximumRetryDelay
    }

    /// `baseURL` + `path` as errors print it: no user, password, query or fragment.
    package func printable(_ path: String) -> String {
        let url = endpoint(path)
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(a URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? "(a URL)"
    }

    private func endpoint(_ path: String) -> URL {
        path.split(separator: "/").reduce(baseURL) { $0.appendingPathComponent(String($1)) }
    }

    /// Posts `body` (JSON) to `path` and reads the whole reply as JSON.
    /// - Throws: `ChatCompletionsError`, or `CancellationError` when the task is cancelled.
    package func post(_ path: String, body: Data) async throws -> JSONNode {
        let data = try await withRetries(path) { _ in
            try await self.transfer(path, body: body, onEvent: nil)
        }
        do {
            return try JSONReader.read(
                String(decoding: data, as: UTF8.self), acceptsTruncation: false, repeatedKeys: .keepLast)
        } catch {
            throw ChatCompletionsError(
                .invalidResponse, url: printable(path), detail: "not JSON (\(error.message) at byte \(error.offset))")
        }
    }

    /// Posts `body` (JSON with `"stream": true`) to `path` and hands each event's data to
    /// `onEvent` as it arrives, until `data: [DONE]`; `onEvent` returning false stops early
    /// (the connection is closed).
    /// - Throws: `ChatCompletionsError` (`.streamCut` when the stream ends without `[DONE]`),
    ///   what `onEvent` throws, or `CancellationError`.
    package func stream(
        _ path: String, body: Data, onEvent: @escaping @Sendable (ServerSentEvents.Event) throws -> Bool
    ) async throws {
        _ = try await withRetries(path) { delivered in
            try await self.transfer(
                path, body: body,
                onEvent: { event in
                    delivered.value.store(true, ordering: .relaxed)
                    return try onEvent(event)
                })
        }
    }

    /// `attempt`, tried again after a 429 or a 502/503/504 while nothing was delivered.
    private func withRetries(
        _ path: String, _ attempt: @Sendable (_ delivered: Flag) async throws -> Data
    ) async throws -> Data {
        var pause = 0.5
        var round = 1
        while true {
            let delivered = Flag()
            do {
                return try await attempt(delivered)
            } catch let error as ChatCompletionsError {
                guard round < maximumAttempts, !delivered.value.load(ordering: .relaxed) else { throw error }
                let wait: Double
                switch error.kind {
                case .rateLimited(let after): wait = after ?? pause
                case .status(let code) where [502, 503, 504].contains(code): wait = pause
                default: throw error
                }
                guard wait <= maximumRetryDelay else { throw error }
                try await Task.sleep(nanoseconds: UInt64(max(0, wait) * 1e9))
                pause *= 2
                round += 1
            }
        }
    }

    /// One request: the whole body (2xx), or the events handed to `onEvent` (2xx, streamed).
    private func transfer(
        _ path: String, body: Data, onEvent: (@Sendable (ServerSentEvents.Event) throws -> Bool)?
    ) async throws -> Data {
        var request = URLRequest(url: endpoint(path))
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(onEvent == nil ? "application/json" : "text/event-stream", forHTTPHeaderField: "Accept")
        if let apiKey { request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = idleTimeout
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let transfer = Transfer(url: printable(path), idleTimeout: idleTimeout, onEvent: onEvent)
        let session = URLSession(configuration: configuration, delegate: transfer, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.start(task, continuation)
            }
        } onCancel: {
            transfer.cancel()
        }
    }
}

/// Whether a request delivered anything (then it is not tried again).
private final class Flag: Sendable {
    let value = Atomic(false)
}

/// One transfer's delegate: the head, the body or its events, and the outcome, resumed once.
private final class Transfer: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var task: URLSessionDataTask?
        var continuation: CheckedContinuation<Data, any Error>?
        var status = 0
        var retryAfter: Double?
        var body = Data()
        var events = ServerSentEvents()
        var sawDone = false
        var failure: (any Error)?
        var cancelled = false
    }

    let url: String
    let idleTimeout: Double
    let onEvent: (@Sendable (ServerSentEvents.Event) throws -> Bool)?
    private let state = Mutex(State())

    init(url: String, idleTimeout: Double, onEvent: (@Sendable (ServerSentEvents.Event) throws -> Bool)?) {
        self.url = url
        self.idleTimeout = idleTimeout
        self.onEvent = onEvent
    }

    func start(_ task: URLSessionDataTask, _ continuation: CheckedContinuation<Data, any Error>) {
        let cancelled = state.withOrderedLock { state in
            state.task = task
            state.continuation = continuation
            return state.cancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    func cancel() {
        let task = state.withOrderedLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    private func error(_ kind: ChatCompletionsError.Kind, _ detail: String) -> ChatCompletionsError {
        ChatCompletionsError(kind, url: url, detail: detail)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        state.withOrderedLock { state in
            state.status = http?.statusCode ?? 0
            state.retryAfter = http?.value(forHTTPHeaderField: "Retry-After").flatMap { Double($0) }
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        var stop = false
        state.withOrderedLock { state in
            guard state.failure == nil, !state.sawDone else { return }
            guard (200..<300).contains(state.status), onEvent != nil else {
                // A whole body, or an error's body (read for its message).
                if state.body.count + data.count > ChatCompletionsClient.maximumBodyBytes {
                    state.failure = error(.invalidResponse, "the body is larger than 64 MiB")
                    stop = true
                } else {
                    state.body.append(data)
                }
                return
            }
        }
        guard !stop else { return dataTask.cancel() }
        guard let onEvent else { return }
        // Events are handed over outside the lock, in order (the delegate queue is serial).
        let events: [ServerSentEvents.Event]
        do {
            events = try state.withOrderedLock { state throws(ServerSentEvents.LineTooLong) in
                guard (200..<300).contains(state.status), state.failure == nil, !state.sawDone else { return [] }
                return try state.events.read(data)
            }
        } catch {
            let limit = (error as? ServerSentEvents.LineTooLong)?.limit ?? 0
            state.withOrderedLock {
                $0.failure = self.error(.invalidResponse, "an event line longer than \(limit) bytes")
            }
            return dataTask.cancel()
        }
        for event in events {
            if event.data.trimmingCharacters(in: .whitespaces) == "[DONE]" {
                state.withOrderedLock { $0.sawDone = true }
                return dataTask.cancel()
            }
            do {
                guard try onEvent(event) else {
                    state.withOrderedLock { $0.sawDone = true }
                    return dataTask.cancel()
                }
            } catch {
                state.withOrderedLock { $0.failure = error }
                return dataTask.cancel()
            }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError completion: (any Error)?) {
        let (continuation, outcome) = state.withOrderedLock {
            state -> (CheckedContinuation<Data, any Error>?, Result<Data, any Error>) in
            defer { state.continuation = nil }
            return (state.continuation, self.outcome(of: &state, completion))
        }
        continuation?.resume(with: outcome)
    }

    private func outcome(of state: inout State, _ completion: (any Error)?) -> Result<Data, any Error> {
        if let failure = state.failure { return .failure(failure) }
        if state.sawDone { return .success(Data()) }
        if state.cancelled { return .failure(CancellationError()) }
        if let completion {
            let code = (completion as? URLError)?.code
            let detail = (completion as NSError).localizedDescription
            switch code {
            case .timedOut?:
                return .failure(
                    error(
                        .timedOut(seconds: idleTimeout),
                        state.status == 0 ? "before the response's head" : "in the body"))
            case .cannotConnectToHost?, .cannotFindHost?, .notConnectedToInternet?, .dnsLookupFailed?:
                return .failure(error(.cannotConnect, detail))
            default:
                if state.status == 0 { return .failure(error(.cannotConnect, detail)) }
                return .failure(error(.streamCut, detail))
            }
        }
        guard (200..<300).contains(state.status) else {
            let message = Self.message(in: state.body)
            if state.status == 429 { return .failure(error(.rateLimited(retryAfter: state.retryAfter), message)) }
            return .failure(error(.status(state.status), message))
        }
        if onEvent != nil {
            return .failure(error(.streamCut, state.events.holdsPartialEvent ? "inside an event" : "before [DONE]"))
        }
        return .success(state.body)
    }

    /// OpenAI's `{"error": {"message": …}}` (or a short text body), for the error's detail.
    private static func message(in body: Data) -> String {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        if let node = try? JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .keepLast),
            case .object(let members) = node.kind
        {
            for (key, value) in members where key == "error" || key == "message" || key == "detail" {
                switch value.kind {
                case .string(let message): return message
                case .object(let inner):
                    if case .string(let message)? = inner.first(where: { $0.key == "message" })?.value.kind {
                        return message
                    }
                default: break
                }
            }
        }
        let printable = text.unicodeScalars.filter { $0.value >= 0x20 || $0 == "\n" }.prefix(200)
        return String(String.UnicodeScalarView(printable)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
