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
    /// The tools the model may call.
    let tools: [any Tool]

    private struct State {
        var transcript: Transcript
        var isResponding = false
        var toolChoice = ToolCalling.Choice.automatic
    }
    private let state: Mutex<State>
    /// The decoder's cache of the conversation, used by one request at a time (on its engine thread).
    let conversation = Mutex<Conversation?>(nil)
    /// Where each turn borrows its decoder cache from, and gives it back to, when the session
    /// shares caches with others (`init(model:transcript:sharing:)`).
    let sharedCaches: ConversationCache?

    /// A session whose model follows `instructions` (a system message; nil: the chat template's
    /// default) and may call `tools`.
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], instructions: String? = nil)
    {
        var entries: [Transcript.Entry] = []
        if instructions != nil || !tools.isEmpty {
            entries.append(
                .instructions(
                    .init(
                        segments: instructions.map { [.text(.init(content: $0))] } ?? [],
                        toolDefinitions: tools.map { Transcript.ToolDefinition(tool: $0) })))
        }
        self.init(model: model, tools: tools, transcript: Transcript(entries: entries))
    }

    /// A session that continues `transcript` (its instructions, prompts, tool calls and
    /// responses), whose model may call `tools`.
    public init(model: SystemLanguageModel = .default, tools: [any Tool] = [], transcript: Transcript) {
        self.model = model
        self.tools = tools
        self.state = Mutex(State(transcript: transcript))
        self.sharedCaches = nil
    }

    /// A session that continues `transcript` with decoder caches borrowed from `caches` for each
    /// turn (the one closest to the turn's prompt) and given back after it, so that the turns of
    /// sessions that continue one another's conversations run only what is new. `package`: the
    /// chat endpoint makes one session per request.
    package init(model: SystemLanguageModel, transcript: Transcript, sharing caches: ConversationCache) {
        self.model = model
        self.tools = []
        self.state = Mutex(State(transcript: transcript))
        self.sharedCaches = caches
    }

    /// Everything said so far: instructions, then each prompt and response.
    public var transcript: Transcript { state.withOrderedLock { $0.transcript } }

    /// Which calls the model may make in a response's rounds before the last (default
    /// `.automatic`: its own choice); `package`, for the chat endpoint's `tool_choice` and tests.
    package var toolChoice: ToolCalling.Choice {
        get { state.withOrderedLock { $0.toolChoice } }
        set { state.withOrderedLock { $0.toolChoice = newValue } }
    }

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
                let entries =
                    Array(transcript)
                    + (promptPrefix.map { [.prompt(.init(segments: [.text(.init(content: $0))]))] } ?? [])
                guard !entries.isEmpty else { return }
                let prompt = try Self.prompt(entries, tools: toolDefinitions, model: model, addGenerationPrompt: false)
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

    /// The model's answer to `prompt` as a `Content` value, generated under `Content.generationSchema`:
    /// every guide holds, by construction (see `GenerationSchema`).
    /// - Parameters:
    ///   - prompt: the user's message for this turn.
    ///   - type: the type to generate (default: the `Content` the call site infers).
    ///   - includeSchemaInPrompt: whether the prompt shows the model the schema (as JSON
    ///     Schema); the output follows it either way.
    ///   - options: how tokens are picked and how many the response may have.
    /// - Throws: what `respond(to:options:)` throws; `.unsupportedGuide` before generating for a
    ///   guide that cannot be enforced; `.decodingFailure` when the response ran out of tokens
    ///   (`maximumResponseTokens`, the context) before the value was whole, or does not decode as
    ///   `Content`.
    @discardableResult
    public func respond<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<Content> {
        try await streamResponse(
            to: prompt, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options
        ).collect()
    }

    /// The model's answer to `prompt` as content of the shape `schema`, which may be built at run
    /// time (`DynamicGenerationSchema`); throws as `respond(to:generating:…)`.
    @discardableResult
    public func respond(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<GeneratedContent> {
        try await streamResponse(
            to: prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options
        )
        .collect()
    }

    /// The model's answer to `prompt` as it is produced: each element is the whole response so far.
    /// The request starts at once; iterate the stream (or `collect()` it) to follow it. Ending
    /// the iteration early stops generation.
    public func streamResponse(to prompt: String, options: GenerationOptions = GenerationOptions()) -> ResponseStream<
        String
    > {
        stream(prompt, schema: nil, includeSchemaInPrompt: false, options: options)
    }

    /// A `Content` value as it is generated: each element holds `Content.PartiallyGenerated` made
    /// from the JSON so far (elements whose JSON does not make one yet are skipped) and that JSON as
    /// `rawContent`.
    public func streamResponse<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<Content> {
        stream(prompt, schema: Content.generationSchema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    /// Content of the shape `schema` as it is generated.
    public func streamResponse(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<GeneratedContent> {
        stream(prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    /// Starts a request: text when `schema` is nil, else guided by it; with tools, rounds of calls
    /// (each turn generated on the engine's thread, each tool awaited on the request's task) until
    /// the model answers.
    private func stream<Content: Generable>(
        _ prompt: String, schema: GenerationSchema?, includeSchemaInPrompt: Bool, options: GenerationOptions
    ) -> ResponseStream<Content> {
        typealias Snapshot = ResponseStream<Content>.Snapshot
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Snapshot.self)
        let request = Request<Content>()
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
        let generationID = GenerationID()
        request.attach(
            Task.detached { [self] in
                var produced: [Transcript.Entry] = []
                var outcome: Result<Snapshot, any Error>
                do {
                    let sampling = try options.samplingParameters()
                    if let limit = options.maximumResponseTokens, limit < 1 {
                        throw GenerationError.invalidOptions("maximumResponseTokens \(limit) must be at least 1")
                    }
                    // The grammar first: an unsupported guide is refused before the model is touched.
                    let grammar = try schema.map { schema throws(GenerationError) in try JSONGrammar(schema) }
                    produced = [
                        .prompt(
                            .init(
                                segments: [.text(.init(content: prompt))], options: options,
                                responseFormat: schema.map {
                                    .init(schema: $0, includedInPrompt: includeSchemaInPrompt)
                                }
                            ))
                    ]
                    let guided = grammar != nil
                    var text = ""
                    var whole = true
                    for round in 0... {
                        let entries = produced
                        let choice: ToolCalling.Choice =
                            tools.isEmpty || round >= Self.maximumToolRounds ? .none : self.toolChoice
                        let turn = try await Engine.run { () throws -> Turn in
                            try self.turn(
                                Array(self.transcript) + entries, tools: self.toolDefinitions, choice: choice,
                                grammar: grammar, maximumTokens: options.maximumResponseTokens, sampling: sampling
                            ) { text in
                                if let text,
                                    let snapshot = Self.snapshot(
                                        Content.self, text, guided: guided, id: generationID, entries: entries)
                                {
                                    continuation.yield(snapshot)
                                }
                                return !request.isCancelled
                            }
                        }
                        if request.isCancelled {
                            // The transcript keeps the prompt and the part of the response produced
                            // (not a call cut short).
                            if case .text(let partial) = turn.outcome, !turn.isUnfinishedCall {
                                produced.append(
                                    .response(
                                        .init(
                                            assetIDs: [self.model.identifier],
                                            segments: [.text(.init(content: partial))])))
                            }
                            throw CancellationError()
                        }
                        if turn.isUnfinishedCall {
                            throw GenerationError.decodingFailure(
                                .init(
                                    debugDescription:
                                        "the tool call is not whole: the token limit (maximumResponseTokens) ended it"))
                        }
                        switch turn.outcome {
                        case .text(let answer):
                            (text, whole) = (answer, turn.isComplete)
                        case .toolCalls(let calls):
                            produced.append(.toolCalls(calls))
                            for call in calls { produced.append(.toolOutput(try await self.output(of: call))) }
                            continue
                        }
                        break
                    }
                    produced.append(
                        .response(.init(assetIDs: [self.model.identifier], segments: [.text(.init(content: text))])))
                    if !whole {
                        throw GenerationError.decodingFailure(
                            .init(
                                debugDescription:
                                    "the response ran out of tokens before its value was whole: \(text.prefix(200))"))
                    }
                    var raw = try Self.rawContent(text, guided: guided, id: generationID)
                    // Whole by the grammar (a number at the end of the text cannot go on).
                    raw = GeneratedContent(kind: raw.kind, id: generationID)
                    let content: Content
                    do { content = try Content(raw) } catch {
                        throw GenerationError.decodingFailure(
                            .init(debugDescription: "the response does not make a \(Content.self): \(error)"))
                    }
                    guard let partial = (content as? Content.PartiallyGenerated) ?? (try? .init(raw)) else {
                        throw GenerationError.decodingFailure(
                            .init(debugDescription: "the response does not make a \(Content.PartiallyGenerated.self)"))
                    }
                    outcome = .success(
                        Snapshot(content: partial, rawContent: raw, transcriptEntries: produced, whole: content))
                } catch {
                    outcome = .failure(request.isCancelled ? CancellationError() : error)
                }
                // A failed request leaves the transcript as it was; a cancelled one keeps what it produced.
                if case .failure(let error) = outcome {
                    if !(error is CancellationError) {
                        produced = []
                    } else if case .toolCalls? = produced.last {
                        // A call whose tool was cancelled has no output: it is not kept.
                        produced.removeLast()
                    }
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
            })
        return ResponseStream(stream: stream, request: request)
    }

    /// The most rounds of tool calls one response makes; the turn after the last round answers
    /// in text (tools still listed, no call allowed).
    public static let maximumToolRounds = 8

    /// The definitions of the session's tools, as the model is shown them.
    var toolDefinitions: [Transcript.ToolDefinition] { tools.map { Transcript.ToolDefinition(tool: $0) } }

    /// Runs the tool `call` names with its arguments; its output as a transcript entry.
    /// - Throws: `ToolCallError` when the tool throws or its arguments do not make its `Arguments`.
    private func output(of call: Transcript.ToolCall) async throws -> Transcript.ToolOutput {
        guard let tool = tools.first(where: { $0.name == call.toolName }) else {
            throw GenerationError.decodingFailure(
                .init(debugDescription: "the model called no tool of this session: \(call.toolName)"))
        }
        func invoke<T: Tool>(_ tool: T) async throws -> String {
            let arguments: T.Arguments
            do { arguments = try T.Arguments(call.arguments) } catch {
                throw ToolCallError(tool: tool, underlyingError: error)
            }
            do { return try await tool.call(arguments: arguments).promptRepresentation.text } catch is CancellationError
            {
                throw CancellationError()
            } catch {
                throw ToolCallError(tool: tool, underlyingError: error)
            }
        }
        let text = try await invoke(tool)
        return Transcript.ToolOutput(id: call.id, toolName: call.toolName, segments: [.text(.init(content: text))])
    }

    /// The response so far as content: a string, or the JSON written so far.
    private static func rawContent(_ text: String, guided: Bool, id: GenerationID) throws -> GeneratedContent {
        var raw: GeneratedContent
        if guided {
            do { raw = try GeneratedContent(generatedJSON: text) } catch {
                throw GenerationError.decodingFailure(.init(debugDescription: "the response is not JSON: \(error)"))
            }
        } else {
            raw = GeneratedContent(kind: .string(text))
        }
        raw.id = id
        return raw
    }

    /// A snapshot of the response so far, or nil while its JSON does not make a partial value yet.
    private static func snapshot<Content: Generable>(
        _ type: Content.Type, _ text: String, guided: Bool, id: GenerationID, entries: [Transcript.Entry]
    ) -> ResponseStream<Content>.Snapshot? {
        guard let raw = try? rawContent(text, guided: guided, id: id),
            let partial = try? Content.PartiallyGenerated(raw)
        else { return nil }
        return .init(content: partial, rawContent: raw, transcriptEntries: entries)
    }

    /// The last request's prompt tokens: found in the session's cache, and run through the model
    /// (nil before the first request). For tests of the cache's reuse.
    package var lastPromptTokenCounts: (reused: Int, run: Int)? {
        conversation.withOrderedLock { $0?.lastPrompt }
    }

    // MARK: - Requests, one at a time

    /// Marks the session busy; false when it already is.
    func begin() -> Bool {
        state.withOrderedLock { state in
            if state.isResponding { return false }
            state.isResponding = true
            return true
        }
    }

    /// Adds what a request produced to the transcript and marks the session free.
    func end(appending entries: [Transcript.Entry]) {
        state.withOrderedLock { state in
            state.transcript.append(contentsOf: entries)
            state.isResponding = false
        }
    }

    /// `entries` laid out by the model's chat template and tokenized, `tools` offered in the
    /// template's own tool format (or the Hermes layout for a template without one: see `ToolCalling`);
    /// `format`, when the caller has read it from the template already.
    static func prompt(
        _ entries: [Transcript.Entry], tools: [Transcript.ToolDefinition], model: LlamaModel,
        addGenerationPrompt: Bool, format: ToolCalling.Format? = nil
    ) throws(GenerationError) -> ChatPrompt {
        let format = format ?? ToolCalling.Format(templateSource: model.chatTemplateSource)
        let (messages, listed) = format.conversation(entries, tools: tools)
        return try decoding { () throws(LlamaDecoderError) in
            try model.chatPrompt(messageValues: messages, tools: listed, addGenerationPrompt: addGenerationPrompt)
        }
    }

    /// The session's decoder state, made on first use.
    static func conversation(_ held: inout Conversation?, model: LlamaModel) throws(GenerationError)
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
final class Request<Content: Generable>: Sendable {
    private struct State {
        var last: LanguageModelSession.ResponseStream<Content>.Snapshot?
        var ended = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let cancelled = Atomic<Bool>(false)
    private let state = Mutex(State())

    /// The task that runs the request (tool calls are awaited on it).
    private let task = Mutex<Task<Void, Never>?>(nil)

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        task.withOrderedLock { $0 }?.cancel()
    }

    /// Records the task that runs the request, cancelling it at once if the request already is.
    func attach(_ running: Task<Void, Never>) {
        task.withOrderedLock { $0 = running }
        if isCancelled { running.cancel() }
    }

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
