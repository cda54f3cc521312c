import Foundation
import LinearAlgebra
import LlamaDecoder
import Synchronization

/// A conversation with a language model: Apple's `LanguageModelSession`, on the project's decoder.
///
/// ```swift
/// let session = LanguageModelSession(instructions: "Answer in one sentence.")
/// let first = try await session.respond(to: "What is a closure?")
/// print(first.content)
/// for try await snapshot in session.streamResponse(to: "And a struct?") {
///     print(snapshot.content)          // the whole response so far
/// }
/// ```
///
/// A session answers one request at a time (a second one while `isResponding` throws
/// `.concurrentRequests`); open several sessions over one `SystemLanguageModel` to answer in
/// parallel (they share its weights). Each session keeps the model's key-value cache of the
/// conversation between requests, so a new turn runs only its own tokens through the model, not
/// the earlier turns again. The decoder runs on a thread of its own; cancelling the task that
/// waits for a response (or ending a stream's iteration) stops generation within one token, and
/// the transcript then keeps the prompt and the part of the response produced so far.
public final class LanguageModelSession: Sendable {
    /// The model this session talks to.
    public let model: SystemLanguageModel

    private struct State {
        var transcript: Transcript
        var isResponding = false
    }
    private let state: Mutex<State>
    /// The decoder's cache of the conversation, used by one request at a time (on its engine thread).
    private let conversation = Mutex<Conversation?>(nil)

    /// A session whose model follows `instructions` (a system message; nil: the chat template's default).
    public convenience init(model: SystemLanguageModel = .default, instructions: String? = nil) {
        let entries =
            instructions.map { [Transcript.Entry.instructions(.init(segments: [.text(.init(content: $0))]))] } ?? []
        self.init(model: model, transcript: Transcript(entries: entries))
    }

    /// A session that continues `transcript` (its instructions, prompts and responses).
    public init(model: SystemLanguageModel = .default, transcript: Transcript) {
        self.model = model
        self.state = Mutex(State(transcript: transcript))
    }

    /// Everything said so far: instructions, then each prompt and response.
    public var transcript: Transcript { state.withOrderedLock { $0.transcript } }

    /// Whether a request is being answered.
    public var isResponding: Bool { state.withOrderedLock { $0.isResponding } }

    /// Loads the model and runs the instructions (and `promptPrefix`, when given) through it
    /// ahead of the first request, on a thread of its own; returns at once. Does nothing while a
    /// request runs.
    public func prewarm(promptPrefix: String? = nil) {
        guard begin() else { return }
        Engine.start { [self] in
            defer { end(appending: []) }
            do {
                let model = try self.model.model()
                let messages = Self.messages(transcript, prompt: promptPrefix)
                guard !messages.isEmpty else { return }
                let prompt = try Self.decoding { () throws(LlamaDecoderError) in
                    try model.chatPrompt(messages, addGenerationPrompt: false)
                }
                try conversation.withOrderedLock { held in
                    let current = try Self.conversation(&held, model: model)
                    try current.prefill(prompt)
                }
            } catch {
                // A prewarm that fails leaves nothing behind; the request reports the error.
            }
        }
    }

    /// The model's answer to `prompt`, as text.
    /// - Throws: `GenerationError`: `.assetsUnavailable` (model not installed or unreadable),
    ///   `.exceededContextWindowSize`, `.concurrentRequests`, `.invalidGenerationOptions`;
    ///   `CancellationError` when the task is cancelled.
    @discardableResult
    public func respond(to prompt: String, options: GenerationOptions = GenerationOptions()) async throws -> Response<
        String
    > {
        try await streamResponse(to: prompt, options: options).collect()
    }

    /// The model's answer to `prompt` as it is produced: each element is the whole response so far.
    /// The request starts at once; iterate the stream (or `collect()` it) to follow it. Ending
    /// the iteration early stops generation.
    public func streamResponse(to prompt: String, options: GenerationOptions = GenerationOptions()) -> ResponseStream<
        String
    > {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ResponseStream<String>.Snapshot.self)
        let request = Request<String>()
        continuation.onTermination = { termination in
            if case .cancelled = termination { request.cancel() }
        }
        guard begin() else {
            request.end(nil)
            continuation.finish(
                throwing: GenerationError.concurrentRequests(
                    .init(debugDescription: "this session is already answering a request")))
            return ResponseStream(stream: stream, request: request)
        }
        Engine.start { [self] in
            var produced: [Transcript.Entry] = []
            var outcome: Result<ResponseStream<String>.Snapshot, any Error>
            do {
                let sampling = try options.samplingParameters()
                if let limit = options.maximumResponseTokens, limit < 1 {
                    throw GenerationError.invalidOptions("maximumResponseTokens \(limit) must be at least 1")
                }
                let model = try self.model.model()
                let promptEntry = Transcript.Entry.prompt(
                    .init(segments: [.text(.init(content: prompt))], options: options))
                let rendered = try Self.decoding { () throws(LlamaDecoderError) in
                    try model.chatPrompt(Self.messages(transcript, prompt: prompt), addGenerationPrompt: true)
                }
                let text = try conversation.withOrderedLock { held in
                    let current = try Self.conversation(&held, model: model)
                    return try current.respond(
                        rendered, maximumTokens: options.maximumResponseTokens, sampling: sampling
                    ) { text in
                        continuation.yield(.init(content: text, transcriptEntries: [promptEntry]))
                        return !request.isCancelled
                    }
                }
                produced = [
                    promptEntry,
                    .response(.init(assetIDs: [self.model.identifier], segments: [.text(.init(content: text))])),
                ]
                outcome =
                    request.isCancelled
                    ? .failure(CancellationError())
                    : .success(.init(content: text, transcriptEntries: produced, isComplete: true))
            } catch {
                outcome = .failure(error)
            }
            // The session is free (and its transcript current) before the caller hears the end.
            end(appending: produced)
            request.end(try? outcome.get())
            switch outcome {
            case .success(let last):
                continuation.yield(last)
                continuation.finish()
            case .failure(let error):
                continuation.finish(throwing: error)
            }
        }
        return ResponseStream(stream: stream, request: request)
    }

    /// The last request's prompt tokens: found in the session's cache, and run through the model
    /// (nil before the first request). For tests of the cache's reuse.
    package var lastPromptTokenCounts: (reused: Int, run: Int)? {
        conversation.withOrderedLock { $0?.lastPrompt }
    }

    // MARK: - Requests, one at a time

    /// Marks the session busy; false when it already is.
    private func begin() -> Bool {
        state.withOrderedLock { state in
            if state.isResponding { return false }
            state.isResponding = true
            return true
        }
    }

    /// Adds what a request produced to the transcript and marks the session free.
    private func end(appending entries: [Transcript.Entry]) {
        state.withOrderedLock { state in
            state.transcript.append(contentsOf: entries)
            state.isResponding = false
        }
    }

    /// The chat messages for `transcript` followed by `prompt` (a user message) when given.
    static func messages(_ transcript: Transcript, prompt: String?) -> [ChatMessage] {
        var messages: [ChatMessage] = transcript.map { entry in
            switch entry {
            case .instructions: return ChatMessage(role: .system, content: entry.text)
            case .prompt: return ChatMessage(role: .user, content: entry.text)
            case .response: return ChatMessage(role: .assistant, content: entry.text)
            }
        }
        if let prompt { messages.append(ChatMessage(role: .user, content: prompt)) }
        return messages
    }

    /// The session's decoder state, made on first use.
    private static func conversation(_ held: inout Conversation?, model: LlamaModel) throws(GenerationError)
        -> Conversation
    {
        if let held, held.sequence.model === model { return held }
        let made = try decoding { () throws(LlamaDecoderError) in try Conversation(sequence: model.makeSequence()) }
        held = made
        return made
    }

    /// `body()`, its decoder error as the session reports it.
    static func decoding<T>(_ body: () throws(LlamaDecoderError) -> T) throws(GenerationError) -> T {
        do { return try body() } catch { throw GenerationError(error) }
    }
}

/// One request's state shared by its stream and its engine thread: whether it was cancelled,
/// its finished response (for `collect()` after the stream was iterated to its end), and who
/// waits for it to end.
final class Request<Content: Sendable>: Sendable {
    private struct State {
        var last: LanguageModelSession.ResponseStream<Content>.Snapshot?
        var ended = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let cancelled = Atomic<Bool>(false)
    private let state = Mutex(State())

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
    func cancel() { cancelled.store(true, ordering: .releasing) }

    /// The finished response, once there is one.
    var response: LanguageModelSession.ResponseStream<Content>.Snapshot? { state.withOrderedLock { $0.last } }

    /// Records the end of the request (and its response when it finished) and wakes its waiters.
    func end(_ last: LanguageModelSession.ResponseStream<Content>.Snapshot?) {
        let waiting = state.withOrderedLock { state in
            state.last = last
            state.ended = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once the request has ended (the session free again), even in a cancelled task.
    func ended() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withOrderedLock { state in
                if !state.ended { state.waiting.append(continuation) }
                return state.ended
            }
            if done { continuation.resume() }
        }
    }
}
