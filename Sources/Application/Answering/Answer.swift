import Retrieval

/// An answer to one question, as it is produced: each snapshot of
/// `AnsweringSession.streamAnswer(to:)` is one of these, with the whole text so far.
///
/// The sources come last: they are empty until `isComplete`, so that citations never show under
/// a half-written answer, and they are then exactly the chunks whose text was in the prompt
/// (`prompt.sources`).
///
/// ```swift
/// for try await answer in session.streamAnswer(to: "How do closures capture values?") {
///     print(answer.text)                          // the answer so far
///     if answer.isComplete { print(answer.sources.map(\.chunk.id)) }
/// }
/// ```
public struct Answer: Sendable {
    /// What an answer rests on.
    public enum Grounding: Sendable, Equatable {
        /// The model answered from retrieved chunks: `sources` lists them.
        case context
        /// Nothing was retrieved: the model answered from general knowledge, with no sources.
        case generalKnowledge
        /// No model could answer (not installed, or its file unreadable): `hits` are the search
        /// results and `text` is empty. `reason` says why, for people.
        case searchOnly(reason: String)
    }

    /// How long each step took, and how many tokens it handled.
    public struct Metrics: Sendable, Equatable {
        /// Seconds to retrieve (with the retry of a follow-up).
        public var retrievalSeconds: Double = 0
        /// Seconds from the question to the first character of the answer (retrieval, loading
        /// the model on first use, and reading the prompt included); nil before it arrives, and
        /// when nothing was generated.
        public var firstTokenSeconds: Double?
        /// Seconds from the question to the answer's end; nil until it ends.
        public var totalSeconds: Double?
        /// The prompt's tokens as the model read them (chat template and instructions included).
        public var promptTokens: Int?
        /// The answer's tokens (its text tokenized again, which gives the generated count but
        /// for rare merges); nil until it ends.
        public var answerTokens: Int?

        /// Tokens per second after the first: `(answerTokens − 1) ÷ (totalSeconds −
        /// firstTokenSeconds)`, the decode rate; nil with fewer than 2 tokens.
        public var tokensPerSecond: Double? {
            guard let answerTokens, answerTokens > 1, let firstTokenSeconds, let totalSeconds,
                totalSeconds > firstTokenSeconds
            else { return nil }
            return Double(answerTokens - 1) / (totalSeconds - firstTokenSeconds)
        }

        /// Metrics of nothing yet.
        public init() {}
    }

    /// The question as asked.
    public var question: String
    /// The text the retrieval searched for: the question, or the previous question and this one
    /// when the question alone found nothing (a follow-up).
    public var searchedText: String
    /// The answer so far (empty when `grounding` is `.searchOnly`).
    public var text: String
    /// What the answer rests on.
    public var grounding: Grounding
    /// Every hit the retrieval returned, best first (for `.searchOnly`: the results to show).
    public var hits: [RetrievalHit]
    /// The chunks the model read, in prompt order: empty until `isComplete`, and for general
    /// knowledge or search only.
    public var sources: [RetrievalHit]
    /// The system instructions the model was given; nil for search only.
    public var instructions: String?
    /// The prompt the model was given, with the chunks and exchanges it holds; nil for search only.
    public var prompt: ContextBuilder.AugmentedPrompt?
    /// Whether this is the finished answer (the last snapshot).
    public var isComplete: Bool
    /// Timings and token counts so far.
    public var metrics: Metrics

    /// Whether the model answered from retrieved chunks.
    public var usedContext: Bool { grounding == .context }
}
