import Foundation
import LanguageModels
import LinearAlgebra
import Retrieval
import Synchronization

/// The retrieval app's answer step (seed 002, step 3) over any `ChunkStore`: retrieve, keep the
/// best chunks within the context budget, prompt the model with them, stream its answer, and
/// cite exactly the chunks it read.
///
/// ```swift
/// let session = AnsweringSession(store: store)               // SystemLanguageModel.default
/// for try await answer in session.streamAnswer(to: "How do closures capture values?") {
///     print(answer.text)                                       // the whole answer so far
///     if answer.isComplete {
///         for source in answer.sources { print(source.chunk.id) }
///     }
/// }
/// let followUp = try await session.answer(to: "and in a struct?")   // the history goes along
/// ```
///
/// Each question:
/// 1. **Retrieve** `configuration.k` chunks (hybrid by default). A question that finds nothing is
///    searched again with the previous question in front of it ("and in a struct?" alone shares
///    little with the corpus).
/// 2. **Augment**: `ContextBuilder.select` keeps the best hits within the character budget (the
///    top hit always gets in); the prompt holds the last two exchanges, the `CONTEXT:` block and
///    the question (`ContextBuilder.augmentedPrompt`), and the instructions go in as the system
///    message. The window may drop the oldest exchange, then the last chunks; the sources are the
///    chunks that stayed.
/// 3. **Generate** on a new `LanguageModelSession` (the history is in the prompt, not in a
///    transcript), streaming cumulative snapshots; the sources are attached to the last one.
///
/// Nothing retrieved (or nothing at or above `configuration.minimumScore`) → no sources, the
/// general-knowledge instructions, and `Answer.Grounding.generalKnowledge`. No model (not
/// installed, or a file that does not load) → smart search: one answer holding the hits,
/// `.searchOnly`, and no error.
///
/// A session answers one question at a time; a second one while `isResponding` throws
/// `LanguageModelSession.GenerationError.concurrentRequests`. Retrieval blocks (encoding the
/// question, reading the store), so it runs on a thread of its own, as the decoder does.
public final class AnsweringSession: Sendable {
    /// Where the chunks come from.
    public let store: any ChunkStore
    /// The model that writes the answers.
    public let model: SystemLanguageModel
    /// Retrieval, context and generation settings.
    public let configuration: Configuration

    private struct State {
        var history: [ContextBuilder.Exchange]
        var previousQuestion: String?
        var isResponding = false
    }
    private let state: Mutex<State>

    /// A session over `store`, answered by `model`, continuing `history` (oldest first).
    public init(
        store: any ChunkStore, model: SystemLanguageModel = .default, configuration: Configuration = Configuration(),
        history: [ContextBuilder.Exchange] = []
    ) {
        self.store = store
        self.model = model
        self.configuration = configuration
        state = Mutex(State(history: history, previousQuestion: history.last?.question))
    }

    /// The exchanges so far, oldest first: every question the model answered, with its answer.
    /// The prompt carries the last two.
    public var history: [ContextBuilder.Exchange] { state.withOrderedLock { $0.history } }

    /// Whether a question is being answered.
    public var isResponding: Bool { state.withOrderedLock { $0.isResponding } }

    /// The answer to `question`, once finished (the last snapshot of `streamAnswer(to:)`).
    /// - Throws: as `streamAnswer(to:)`.
    public func answer(to question: String) async throws -> Answer {
        var last: Answer?
        for try await answer in streamAnswer(to: question) { last = answer }
        try Task.checkCancellation()
        guard let last, last.isComplete else { throw CancellationError() }
        return last
    }

    /// The answer to `question` as it is produced: each element holds the whole text so far; the
    /// last one (`isComplete`) carries the sources and the metrics. A search-only answer is one
    /// element. Ending the iteration early stops generation.
    ///
    /// The stream throws the store's errors (`RetrievalError`, `VectorIndexError`, a database's),
    /// `LanguageModelSession.GenerationError` other than `.assetsUnavailable` (which becomes a
    /// search-only answer), `.concurrentRequests` while another question is answered, and
    /// `CancellationError`.
    public func streamAnswer(to question: String) -> AsyncThrowingStream<Answer, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Answer.self)
        guard begin() else {
            continuation.finish(
                throwing: LanguageModelSession.GenerationError.concurrentRequests(
                    .init(debugDescription: "this session is already answering a question")))
            return stream
        }
        let task = Task { [self] in
            // The session is free (and its history current) before the caller hears the end.
            do {
                let last = try await respond(to: question) { continuation.yield($0) }
                end(recording: (question, last))
                continuation.yield(last)
                continuation.finish()
            } catch {
                end(recording: nil)
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return stream
    }

    // MARK: - One question

    /// Retrieves, prompts and generates; `partial` gets every snapshot before the last, which is
    /// returned.
    private func respond(to question: String, partial: (Answer) -> Void) async throws -> Answer {
        let clock = ContinuousClock()
        let asked = clock.now
        func since(_ instant: ContinuousClock.Instant) -> Double {
            let elapsed = instant.duration(to: clock.now).components
            return Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
        }
        let (history, previous) = state.withOrderedLock { ($0.history, $0.previousQuestion) }
        let (hits, searched) = try await retrieve(question, previousQuestion: previous)
        var answer = Answer(
            question: question, searchedText: searched, text: "", grounding: .context, hits: hits, sources: [],
            instructions: nil, prompt: nil, isComplete: false, metrics: Answer.Metrics())
        answer.metrics.retrievalSeconds = since(asked)

        func searchOnly(_ reason: String) -> Answer {
            var result = answer
            result.grounding = .searchOnly(reason: reason)
            result.isComplete = true
            result.metrics.totalSeconds = since(asked)
            return result
        }
        if case .unavailable(let reason) = model.availability {
            return searchOnly("\(model.identifier) is unavailable (\(reason)): showing search results only")
        }

        let builder = configuration.context
        let included = builder.select(hits)
        answer.grounding = included.isEmpty ? .generalKnowledge : .context
        let instructions = included.isEmpty ? configuration.generalKnowledgeInstructions : configuration.instructions
        let prompt = builder.augmentedPrompt(
            question: question, included: included, history: history, instructions: nil)
        answer.instructions = instructions
        answer.prompt = prompt

        var options = configuration.options
        if options.maximumResponseTokens == nil { options.maximumResponseTokens = builder.answerTokens }
        let session = LanguageModelSession(model: model, instructions: instructions)
        do {
            for try await snapshot in session.streamResponse(to: prompt.text, options: options) {
                guard snapshot.content != answer.text else { continue }
                if answer.metrics.firstTokenSeconds == nil { answer.metrics.firstTokenSeconds = since(asked) }
                answer.text = snapshot.content
                partial(answer)
            }
        } catch LanguageModelSession.GenerationError.assetsUnavailable(let context) {
            return searchOnly(
                "\(model.identifier) could not be loaded (\(context.debugDescription)): showing search results only")
        }
        try Task.checkCancellation()
        answer.metrics.totalSeconds = since(asked)
        answer.metrics.promptTokens = session.lastPromptTokenCounts.map { $0.reused + $0.run }
        answer.metrics.answerTokens = answer.text.isEmpty ? 0 : (try? await model.tokenCount(for: answer.text))
        answer.sources = prompt.sources
        answer.isComplete = true
        return answer
    }

    /// The follow-up search (`ChunkStore.followUpSearch`), on a thread of its own: stores block.
    private func retrieve(_ question: String, previousQuestion: String?) async throws -> (
        hits: [RetrievalHit], searched: String
    ) {
        let store = store
        let mode = configuration.mode
        let k = configuration.k
        let floor = configuration.minimumScore
        return try await Engine.run { () throws -> ([RetrievalHit], String) in
            try store.followUpSearch(
                question, previousQuestion: previousQuestion, mode: mode, k: k, minimumScore: floor)
        }
    }

    // MARK: - One question at a time

    private func begin() -> Bool {
        state.withOrderedLock { state in
            if state.isResponding { return false }
            state.isResponding = true
            return true
        }
    }

    /// Marks the session free; with a finished answer, remembers its question for the next
    /// follow-up, and the exchange when the model answered.
    private func end(recording finished: (question: String, answer: Answer)?) {
        state.withOrderedLock { state in
            state.isResponding = false
            guard let (question, answer) = finished else { return }
            state.previousQuestion = question
            if case .searchOnly = answer.grounding { return }
            state.history.append(ContextBuilder.Exchange(question: question, answer: answer.text))
        }
    }
}
