import LlamaDecoder

/// One session's decoder state: the sequence whose key-value cache holds the conversation so
/// far, and the text those tokens spell, so that a new request runs only what the cache lacks.
/// Used by one request at a time, on its engine thread: a session's lock (or, idle, a
/// `ConversationCache`'s) guards it, hence `@unchecked Sendable`.
final class Conversation: @unchecked Sendable {
    let sequence: LlamaSequence
    /// The text whose tokens the cache holds, or "" when that is not known.
    private var text = ""
    /// The last request's prompt: its tokens found in the cache, and those run through the model
    /// (together, the prompt's length).
    private(set) var lastPrompt = (reused: 0, run: 0)

    init(sequence: LlamaSequence) { self.sequence = sequence }

    /// The ids of `prompt` the cache does not hold yet, after dropping any cached tokens that
    /// `prompt` does not continue. At least one id, so that a request always has logits to start
    /// from.
    ///
    /// Two ways to reuse the cache. When the cached text is a prefix of the prompt's text and one
    /// of the prompt's tokens starts right where it ends (the usual case: the previous prompt and
    /// response, then the template's end-of-turn token), every cached token is kept, even where the
    /// response's generated tokens differ from how the tokenizer would split the same text.
    /// Otherwise the longest common prefix of ids is kept.
    /// - Complexity: O(prompt tokens).
    private func reuse(_ prompt: ChatPrompt) -> [Int] {
        let ids = prompt.ids
        if !text.isEmpty, prompt.text.utf8.starts(with: text.utf8) {
            let boundary = prompt.text.utf8.index(prompt.text.startIndex, offsetBy: text.utf8.count)
            if let first = prompt.tokens.firstIndex(where: { $0.range.lowerBound == boundary }) {
                lastPrompt = (first, ids.count - first)
                return Array(ids[first...])
            }
        }
        let held = sequence.tokens
        var kept = 0
        while kept < held.count, kept < ids.count, held[kept] == ids[kept] { kept += 1 }
        kept = min(kept, max(ids.count - 1, 0))
        sequence.truncate(to: kept)
        text = ""
        lastPrompt = (kept, ids.count - kept)
        return Array(ids[kept...])
    }

    /// Whether `prompt` carries on this cache's conversation: it continues what the cache holds
    /// (the cached text begins the prompt's, as the first reuse rule asks, or the cached ids begin
    /// its ids: a follow-up), or it begins with the whole of the last request's prompt (the same
    /// request again, or retried). `shared`: the ids the cache and the prompt begin with.
    func isCarriedOn(by prompt: ChatPrompt, shared: Int) -> Bool {
        if !text.isEmpty, prompt.text.utf8.starts(with: text.utf8) { return true }
        return sequence.count > 0 && (shared == sequence.count || shared >= lastPrompt.reused + lastPrompt.run)
    }

    /// Runs `prompt` into the cache without generating (prewarming).
    func prefill(_ prompt: ChatPrompt) throws(LanguageModelSession.GenerationError) {
        let ids = reuse(prompt)
        text = ""
        if !ids.isEmpty {
            _ = try LanguageModelSession.decoding { () throws(LlamaDecoderError) in try sequence.append(ids) }
        }
        text = prompt.text
    }

    /// Generates the answer to `prompt` (a chat prompt ending with the assistant's header), calling
    /// `onText` with the whole response so far after every token; false stops it.
    /// - Returns: the generation (its text, tokens and why it stopped).
    /// - Throws: `.exceededContextWindowSize` when the prompt leaves no room or the response fills
    ///   the context before the model ends its turn.
    func respond(
        _ prompt: ChatPrompt, maximumTokens: Int?, sampling: SamplingParameters,
        constraint: (any TokenConstraint)? = nil,
        onText: (String) -> Bool
    ) throws(LanguageModelSession.GenerationError) -> Generation {
        let ids = reuse(prompt)
        let room = sequence.contextSize - sequence.count - ids.count
        guard room >= 1 else {
            throw .exceededContextWindowSize(
                .init(
                    debugDescription:
                        "the conversation takes \(sequence.count + ids.count) tokens; the context holds \(sequence.contextSize)"
                ))
        }
        text = ""
        let model = sequence.model
        var response = ""
        let generation = try LanguageModelSession.decoding { () throws(LlamaDecoderError) in
            try model.generate(
                prompt: ids, in: sequence, maximumTokens: min(maximumTokens ?? room, room), sampling: sampling,
                constraint: constraint
            ) { piece in
                response += piece
                return onText(response)
            }
        }
        // The cache holds the prompt and the generated tokens that were run (all but the last one
        // sampled, unless the model ended its turn).
        let generatedHeld = sequence.count - prompt.ids.count
        if generatedHeld >= 0, generatedHeld <= generation.tokens.count {
            text = prompt.text + model.tokenizer.decode(generation.tokens.prefix(generatedHeld))
        }
        if generation.stopReason == .constrained {
            throw .decodingFailure(.init(debugDescription: "guided decoding left no token to choose"))
        }
        if generation.stopReason == .contextFull {
            throw .exceededContextWindowSize(
                .init(
                    debugDescription:
                        "the response filled the context of \(sequence.contextSize) tokens before the model ended its turn"
                ))
        }
        return generation
    }
}
