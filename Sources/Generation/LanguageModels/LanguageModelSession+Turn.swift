import LlamaDecoder
import Synchronization

extension LanguageModelSession {
    /// One turn of the model's: what a response is made of, one round of tool calls at a time.
    /// `package`: the chat endpoint of `embeddings serve` generates turns for its clients.
    package struct Turn: Sendable {
        /// What the model said.
        package enum Outcome: Sendable, Equatable {
            /// An answer (free text, or JSON under the request's schema).
            case text(String)
            /// Calls to tools, to be answered with their outputs.
            case toolCalls(Transcript.ToolCalls)
        }
        package var outcome: Outcome
        /// Whether the text is whole: a guided value the grammar accepts (free text always is).
        package var isComplete: Bool
        /// The prompt's tokens (the whole conversation as the template lays it out).
        package var promptTokens: Int
        /// The prompt's tokens found in the decoder's cache, not run again.
        package var cachedPromptTokens: Int
        /// The tokens generated.
        package var completionTokens: Int
        /// Whether the token limit ended the turn.
        package var reachedTokenLimit: Bool
        /// Whether the text callback (or a cancelled task) stopped it.
        package var wasStopped: Bool
        /// Whether it was a call cut short (by the token limit, or stopped): `outcome` is then
        /// empty text, and nothing of the call is kept.
        package var isUnfinishedCall = false
    }

    /// Generates the model's next turn after `entries` on the calling thread (the engine's): text
    /// (under `grammar` when given) or, when `tools` are offered and `choice` allows, a call.
    /// - Parameter onText: the response so far after each token; nil while it is (or may be
    ///   becoming) a tool call, which is never shown as text (a free answer held back that way is
    ///   given once at the end). Returning false stops generation, nil or not.
    func turn(
        _ entries: [Transcript.Entry], tools: [Transcript.ToolDefinition], choice: ToolCalling.Choice,
        grammar: JSONGrammar?, maximumTokens: Int?, sampling: SamplingParameters, onText: @Sendable (String?) -> Bool
    ) throws -> Turn {
        let model = try self.model.model()
        let format = ToolCalling.Format(templateSource: model.chatTemplateSource)
        let rendered = try Self.prompt(entries, tools: tools, model: model, addGenerationPrompt: true, format: format)
        let offered: [Transcript.ToolDefinition]
        switch choice {
        case .none, .automatic, .required: offered = tools
        case .named(let name):
            offered = tools.filter { $0.name == name }
            guard !offered.isEmpty else {
                throw GenerationError.invalidOptions("no tool is named \(name)")
            }
        }
        if choice == .required, offered.isEmpty {
            throw GenerationError.invalidOptions("a call is required, but no tool is offered")
        }
        if let name = ToolCalling.conflict(in: offered) {
            throw GenerationError.unsupportedGuide(
                .init(debugDescription: "two tools define different argument shapes named \(name)"))
        }
        let callSchema = offered.isEmpty ? nil : format.callSchema(offered)
        let callGrammar = try callSchema.map { schema throws(GenerationError) in try JSONGrammar(schema) }
        let mode: ToolCallConstraint.Mode =
            switch choice {
            case .automatic: .optional
            case .none: .forbidden
            case .required, .named: .required
            }
        // The constraints are made inside the lock, with the cache they are used with.
        let (generation, isCall, opened, isComplete, cached) = try conversation.withOrderedLock { held in
            if held == nil, let sharedCaches { held = sharedCaches.take(for: rendered, of: model) }
            // A shared cache goes back when the turn ends, whatever it held by then.
            defer {
                if let sharedCaches, let lent = held {
                    held = nil
                    sharedCaches.give(back: lent)
                }
            }
            let current = try Self.conversation(&held, model: model)
            var calling: ToolCallConstraint?
            var guide: GuidedDecoding?
            if let callGrammar {
                calling = ToolCallConstraint(
                    callGrammar: callGrammar, answerGrammar: grammar, mode: mode, model: model, format: format)
            } else if let grammar {
                guide = GuidedDecoding(grammar: grammar, model: model)
            }
            var withheld = false
            let generation = try current.respond(
                rendered, maximumTokens: maximumTokens, sampling: sampling, constraint: calling ?? guide
            ) { text in
                if let calling, calling.isCall || format.mayBeCall(text) {
                    withheld = true
                    return onText(nil)
                }
                withheld = false
                return onText(text)
            }
            // A required call cut short before its opening was whole is a call too.
            let isCall = (calling?.isCall ?? false) || (calling != nil && mode == .required)
            // A free answer that never left the opening's prefix ("<tool") is text after all.
            if withheld, !isCall, !generation.text.isEmpty { _ = onText(generation.text) }
            return (
                generation, isCall, calling?.isCall ?? false, calling?.isComplete ?? guide?.isComplete ?? true,
                current.lastPrompt.reused
            )
        }
        var outcome = Turn.Outcome.text(generation.text)
        if isCall {
            if isComplete, let calls = try format.calls(in: generation.text, opened: opened) {
                outcome = .toolCalls(calls)
            } else {
                outcome = .text("")
            }
        }
        return Turn(
            outcome: outcome, isComplete: isComplete,
            promptTokens: rendered.ids.count, cachedPromptTokens: cached, completionTokens: generation.tokens.count,
            reachedTokenLimit: generation.stopReason == StopReason.maximumTokens,
            wasStopped: generation.stopReason == StopReason.cancelled, isUnfinishedCall: isCall && !isComplete)
    }
}

extension LanguageModelSession {
    /// The model's next turn after the transcript as it stands (ending with a prompt, or with
    /// tool outputs), for a client that runs its tools itself (the chat endpoint of
    /// `embeddings serve`): text, or calls to `tools` that are returned, not run. The turn is
    /// appended to the transcript (a response, or the calls). Blocks: call it on a thread that
    /// may (an engine thread); `nextTurn` is the same from a task.
    /// - Parameters:
    ///   - schema: the shape of a text answer (nil: free text).
    ///   - onText: the answer so far after each token (never a call's text); false stops generation.
    ///   - shouldContinue: asked after each token while the text is held back (a call, or what may
    ///     become one); false stops generation.
    /// - Returns: the turn; a call cut short (the token limit, stopped) is `isUnfinishedCall`,
    ///   and nothing is appended for it.
    /// - Throws: `GenerationError` (`.concurrentRequests` while a request runs).
    package func generateTurn(
        tools: [Transcript.ToolDefinition], choice: ToolCalling.Choice, schema: GenerationSchema?,
        options: GenerationOptions, shouldContinue: @escaping @Sendable () -> Bool = { true },
        onText: @escaping @Sendable (String) -> Bool
    ) throws -> Turn {
        let sampling = try options.samplingParameters()
        if let limit = options.maximumResponseTokens, limit < 1 {
            throw GenerationError.invalidOptions("maximumResponseTokens \(limit) must be at least 1")
        }
        let grammar = try schema.map { schema throws(GenerationError) in try JSONGrammar(schema) }
        guard begin() else {
            throw GenerationError.concurrentRequests(
                .init(debugDescription: "this session is already answering a request"))
        }
        let outcome = Result { () throws -> Turn in
            try turn(
                Array(transcript), tools: tools, choice: choice, grammar: grammar,
                maximumTokens: options.maximumResponseTokens, sampling: sampling
            ) { text in text.map(onText) ?? shouldContinue() }
        }
        var produced: [Transcript.Entry] = []
        if case .success(let turn) = outcome, !turn.isUnfinishedCall {
            switch turn.outcome {
            case .text(let text):
                produced = [.response(.init(assetIDs: [model.identifier], segments: [.text(.init(content: text))]))]
            case .toolCalls(let calls): produced = [.toolCalls(calls)]
            }
        }
        end(appending: produced)
        return try outcome.get()
    }

    /// `generateTurn` from a task: runs on an engine thread; cancelling the task stops generation
    /// within a token.
    package func nextTurn(
        tools: [Transcript.ToolDefinition], choice: ToolCalling.Choice, schema: GenerationSchema?,
        options: GenerationOptions, onText: @escaping @Sendable (String) -> Bool
    ) async throws -> Turn {
        let stopped = Atomic<Bool>(false)
        return try await withTaskCancellationHandler {
            try await Engine.run { () throws -> Turn in
                try self.generateTurn(
                    tools: tools, choice: choice, schema: schema, options: options,
                    shouldContinue: { !stopped.load(ordering: .relaxed) }
                ) { text in
                    !stopped.load(ordering: .relaxed) && onText(text)
                }
            }
        } onCancel: {
            stopped.store(true, ordering: .relaxed)
        }
    }
}
