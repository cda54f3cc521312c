import Foundation
import LlamaDecoder

/// One assistant turn after a whole conversation, with the counts an HTTP API reports (the
/// prompt's tokens, the response's, why it ended), for servers that receive the conversation
/// with every request (`embeddings serve`'s `/v1/chat/completions`). `package`: the public API
/// is `LanguageModelSession`, which keeps the conversation itself.
///
/// Made by `SystemLanguageModel.turn(after:schema:includeSchemaInPrompt:options:)`, which renders
/// and checks the prompt; `run(onText:)` then generates. Both block: call them on an engine
/// thread (`Engine.start`). Each turn has a key-value cache of its own, dropped at the end.
package final class AssistantTurn {
    /// Why a turn ended.
    package enum FinishReason: Sendable, Equatable {
        /// The model ended its turn (or a guided value was whole).
        case endOfTurn
        /// `maximumResponseTokens` was reached, or the context filled.
        case maximumTokens
        /// `onText` returned false.
        case stopped
    }

    /// What a turn produced.
    package struct Outcome: Sendable {
        /// The response's text.
        package var text: String
        /// Tokens generated (a stop token not counted).
        package var completionTokens: Int
        /// Why it ended.
        package var finishReason: FinishReason
    }

    /// The rendered conversation's tokens (chat template included).
    package let promptTokens: Int
    private let model: LlamaModel
    private let prompt: ChatPrompt
    private let sampling: SamplingParameters
    private let maximumTokens: Int
    private let grammar: JSONGrammar?

    fileprivate init(
        model: LlamaModel, prompt: ChatPrompt, sampling: SamplingParameters, maximumTokens: Int, grammar: JSONGrammar?
    ) {
        self.model = model
        self.prompt = prompt
        self.sampling = sampling
        self.maximumTokens = maximumTokens
        self.grammar = grammar
        promptTokens = prompt.ids.count
    }

    /// Generates the response, calling `onText` with each new piece of text (possibly empty while
    /// a character is incomplete) after every token; false stops generation at once.
    /// - Throws: `.decodingFailure` when guided decoding is left no token (a grammar fault).
    package func run(onText: (String) -> Bool) throws(LanguageModelSession.GenerationError) -> Outcome {
        let guide = grammar.map { GuidedDecoding(grammar: $0, model: model) }
        let generation = try LanguageModelSession.decoding { () throws(LlamaDecoderError) in
            let sequence = try model.makeSequence()
            return try model.generate(
                prompt: prompt.ids, in: sequence, maximumTokens: maximumTokens, sampling: sampling, constraint: guide,
                onText: onText)
        }
        let reason: FinishReason
        switch generation.stopReason {
        case .stopToken: reason = .endOfTurn
        case .maximumTokens, .contextFull: reason = .maximumTokens
        case .cancelled: reason = .stopped
        case .constrained:
            throw .decodingFailure(.init(debugDescription: "guided decoding left no token to choose"))
        }
        return Outcome(text: generation.text, completionTokens: generation.tokens.count, finishReason: reason)
    }
}

extension SystemLanguageModel {
    /// The next assistant turn after `transcript`, whose last entry is the prompt to answer
    /// (instructions, prompts and responses before it are the conversation so far), rendered with
    /// the model's chat template and checked; loads the model on first use (blocking).
    /// - Parameters:
    ///   - schema: the shape of a guided response (nil: text). With `includeSchemaInPrompt`, the
    ///     last prompt shows it as the session does (`Transcript.ResponseFormat`).
    ///   - options: sampling and `maximumResponseTokens` (nil: until the context is full).
    /// - Throws: `GenerationError`: `.assetsUnavailable`, `.invalidGenerationOptions`,
    ///   `.unsupportedGuide` (a schema the grammar cannot enforce), `.exceededContextWindowSize`
    ///   when the prompt leaves no room for one token.
    package func turn(
        after transcript: Transcript, schema: GenerationSchema?, includeSchemaInPrompt: Bool,
        options: GenerationOptions
    ) throws(LanguageModelSession.GenerationError) -> AssistantTurn {
        precondition(
            transcript.last.map { if case .prompt = $0 { true } else { false } } ?? false,
            "a turn answers the transcript's last entry, a prompt")
        let sampling = try options.samplingParameters()
        if let limit = options.maximumResponseTokens, limit < 1 {
            throw .invalidOptions("maximumResponseTokens \(limit) must be at least 1")
        }
        let grammar = try schema.map { schema throws(LanguageModelSession.GenerationError) in try JSONGrammar(schema) }
        var entries = Array(transcript)
        if case .prompt(var last) = entries[entries.count - 1] {
            last.options = options
            last.responseFormat = schema.map { .init(schema: $0, includedInPrompt: includeSchemaInPrompt) }
            entries[entries.count - 1] = .prompt(last)
        }
        let model = try self.model()
        let prompt = try LanguageModelSession.decoding { () throws(LlamaDecoderError) in
            try model.chatPrompt(
                LanguageModelSession.messages(Transcript(entries: entries), prompt: nil), addGenerationPrompt: true)
        }
        let room = model.configuration.contextLength - prompt.ids.count
        guard room >= 1 else {
            throw .exceededContextWindowSize(
                .init(
                    debugDescription:
                        "the conversation takes \(prompt.ids.count) tokens; the context holds \(model.configuration.contextLength)"
                ))
        }
        return AssistantTurn(
            model: model, prompt: prompt, sampling: sampling,
            maximumTokens: min(options.maximumResponseTokens ?? room, room), grammar: grammar)
    }
}
