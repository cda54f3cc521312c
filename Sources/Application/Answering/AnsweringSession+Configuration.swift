import LanguageModels
import Retrieval

extension AnsweringSession {
    /// How an `AnsweringSession` retrieves, builds its prompt and generates.
    ///
    /// ```swift
    /// var configuration = AnsweringSession.Configuration()
    /// configuration.context = ContextBuilder(budget: 2_000)
    /// configuration.options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 200)
    /// ```
    public struct Configuration: Sendable {
        /// The system instructions when chunks were retrieved.
        public var instructions = ContextBuilder.groundingInstructions
        /// The system instructions when nothing was retrieved.
        public var generalKnowledgeInstructions =
            "Nothing in the user's documents matches the question. Answer briefly from general knowledge."
        /// How chunks are matched to the question (hybrid by default).
        public var mode = RetrievalMode.hybrid
        /// How many chunks to retrieve before the context budget is applied.
        public var k = 4
        /// The context budget (characters of chunk text, default 1,400), the window and the
        /// tokens kept for the answer.
        public var context = ContextBuilder()
        /// Hits scoring below this are dropped before the session decides whether anything was
        /// retrieved ("no hit": the answer is general knowledge). 0, the default, keeps what the
        /// store returns: its hybrid search already returns nothing for a question that shares no
        /// term with the corpus or that no chunk resembles (`RetrievalSettings.offTopicSimilarity`,
        /// measured in Docs/Retrieval.md). Hybrid scores are relative to the best hit, so a floor
        /// here trims weak hits rather than deciding whether a question is on topic.
        public var minimumScore = 0.0
        /// How tokens are picked. A nil `maximumResponseTokens` becomes `context.answerTokens`,
        /// the room the prompt leaves.
        public var options = GenerationOptions()

        /// The defaults: hybrid, 4 chunks, 1,400 characters of context, nucleus sampling.
        public init() {}
    }
}
