import Answering
import Foundation
import LanguageModels
import ModelTestSupport
import Retrieval
import TestSupport
import XCTest

/// The answer step over the built-in corpus with the real models (MiniLM for retrieval,
/// SmolLM2-135M for answers, greedy and short): sources are exactly what the prompt held, an
/// off-topic question is general knowledge, no model means search results only, a follow-up is
/// retried with the previous question, and the prompt carries the last two exchanges.
final class AnsweringSessionTests: XCTestCase {
    /// The built-in lessons, indexed once for the process (hybrid search needs vectors).
    static let corpus = Result { () throws -> (store: EmbeddingStore, chunks: [Chunk]) in
        let folder = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")
        let store = EmbeddingStore(embedding: try TestModel.shared())
        _ = try store.index(folder: folder)
        return (store, try MarkdownChunker().chunks(ofFolder: folder).0)
    }
    static let smol = Result { () throws -> SystemLanguageModel in
        SystemLanguageModel(contentsOf: try TestLanguageModel.file())
    }

    /// Greedy and short: the same text every run, a fraction of a second per answer.
    static func configuration(maximumTokens: Int = 12) -> AnsweringSession.Configuration {
        var configuration = AnsweringSession.Configuration()
        configuration.options = GenerationOptions(sampling: .greedy, maximumResponseTokens: maximumTokens)
        return configuration
    }

    func session(history: [ContextBuilder.Exchange] = []) throws -> AnsweringSession {
        AnsweringSession(
            store: try Self.corpus.get().store, model: try Self.smol.get(), configuration: Self.configuration(),
            history: history)
    }

    /// Every snapshot of a streamed answer.
    func snapshots(_ session: AnsweringSession, _ question: String) async throws -> [Answer] {
        var all = [Answer]()
        for try await answer in session.streamAnswer(to: question) { all.append(answer) }
        return all
    }

    func testAnswerCitesExactlyTheChunksInItsPrompt() async throws {
        let session = try session()
        let all = try await snapshots(session, "What is the fallthrough keyword for in a Swift switch?")
        let answer = try XCTUnwrap(all.last)
        XCTAssertTrue(answer.isComplete)
        XCTAssertEqual(answer.grounding, .context)
        XCTAssertTrue(answer.usedContext)
        XCTAssertFalse(answer.text.isEmpty)
        XCTAssertEqual(
            all.dropLast().filter { $0.isComplete || !$0.sources.isEmpty }.count, 0, "sources only once the answer ends"
        )
        let prompt = try XCTUnwrap(answer.prompt)
        XCTAssertEqual(answer.sources, prompt.sources)
        XCTAssertFalse(answer.sources.isEmpty)
        XCTAssertEqual(answer.sources.first, answer.hits.first, "the top hit always gets in")
        XCTAssertTrue(answer.sources.allSatisfy(answer.hits.contains))
        XCTAssertEqual(
            answer.sources.first?.chunk.id.hasPrefix("015-switch"), true, "\(answer.sources.map(\.chunk.id))")
        // Every source's text is in the prompt, and no other chunk of the store is.
        for source in answer.sources { XCTAssertTrue(prompt.text.contains(source.chunk.text), source.chunk.id) }
        let cited = Set(answer.sources.map(\.chunk.id))
        let leaked = try Self.corpus.get().chunks.filter { !cited.contains($0.id) && prompt.text.contains($0.text) }
        XCTAssertEqual(leaked.map(\.id), [])
        XCTAssertTrue(
            prompt.text.contains("CONTEXT:\n")
                && prompt.text.hasSuffix("QUESTION: What is the fallthrough keyword for in a Swift switch?\nANSWER:"))
        XCTAssertLessThanOrEqual(
            answer.sources.dropFirst().reduce(answer.sources[0].chunk.text.count + 4) { $0 + $1.chunk.text.count + 4 },
            max(1_400, answer.sources[0].chunk.text.count + 4), "within the budget")
        XCTAssertEqual(answer.instructions, ContextBuilder.groundingInstructions)
        // Metrics: the first character came after retrieval, and the counts are the model's.
        let metrics = answer.metrics
        XCTAssertGreaterThan(try XCTUnwrap(metrics.firstTokenSeconds), metrics.retrievalSeconds)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(metrics.totalSeconds), try XCTUnwrap(metrics.firstTokenSeconds))
        XCTAssertGreaterThan(try XCTUnwrap(metrics.promptTokens), prompt.text.count / 8)
        let answerTokens = try await Self.smol.get().tokenCount(for: answer.text)
        XCTAssertEqual(metrics.answerTokens, answerTokens)
        XCTAssertLessThanOrEqual(try XCTUnwrap(metrics.answerTokens), 12 + 1)
        XCTAssertEqual(session.history, [.init(question: answer.question, answer: answer.text)])
        // Greedy: the same answer again.
        let again = try await self.session().answer(to: "What is the fallthrough keyword for in a Swift switch?")
        XCTAssertEqual(again.text, answer.text)
        XCTAssertEqual(again.sources, answer.sources)
    }

    func testOffTopicQuestionHasNoSourcesAndIsGeneralKnowledge() async throws {
        let answer = try await session().answer(to: "knitting wool scarves")
        XCTAssertEqual(answer.grounding, .generalKnowledge)
        XCTAssertFalse(answer.usedContext)
        XCTAssertEqual(answer.hits, [])
        XCTAssertEqual(answer.sources, [])
        XCTAssertFalse(answer.text.isEmpty, "the model still answers, from general knowledge")
        let prompt = try XCTUnwrap(answer.prompt)
        XCTAssertEqual(prompt.text, "QUESTION: knitting wool scarves\nANSWER:")
        XCTAssertEqual(answer.instructions, AnsweringSession.Configuration().generalKnowledgeInstructions)
    }

    /// A minimum score above every hybrid score: nothing counts as retrieved.
    func testMinimumScoreDecidesWhatCountsAsAHit() async throws {
        var configuration = Self.configuration(maximumTokens: 4)
        configuration.minimumScore = 2
        let session = AnsweringSession(
            store: try Self.corpus.get().store, model: try Self.smol.get(), configuration: configuration)
        let answer = try await session.answer(to: "What is the fallthrough keyword for in a Swift switch?")
        XCTAssertEqual(answer.grounding, .generalKnowledge)
        XCTAssertEqual(answer.sources, [])
    }

    func testWithoutAModelTheAnswerIsTheHitsAndNoError() async throws {
        let store = try Self.corpus.get().store
        let question = "What is the fallthrough keyword for in a Swift switch?"
        let expected = try store.search(question, mode: .hybrid, k: 4)
        // Not installed: availability says so before anything loads.
        let missing = SystemLanguageModel(contentsOf: URL(fileURLWithPath: "/nonexistent/model.gguf"))
        let session = AnsweringSession(store: store, model: missing, configuration: Self.configuration())
        let all = try await snapshots(session, question)
        XCTAssertEqual(all.count, 1, "one answer: the search results")
        let answer = try XCTUnwrap(all.first)
        guard case .searchOnly(let reason) = answer.grounding else { return XCTFail("\(answer.grounding)") }
        XCTAssertTrue(reason.contains("unavailable"), reason)
        XCTAssertTrue(answer.isComplete)
        XCTAssertEqual(answer.hits, expected)
        XCTAssertEqual(answer.sources, [])
        XCTAssertEqual(answer.text, "")
        XCTAssertNil(answer.prompt)
        XCTAssertEqual(session.history, [], "no exchange without an answer")
        XCTAssertFalse(session.isResponding)
        // A file that is there but is not a model: it fails to load, and the answer is search only too.
        let notAModel = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-model-\(UUID()).gguf")
        try Data("GGUF but not really".utf8).write(to: notAModel)
        defer { try? FileManager.default.removeItem(at: notAModel) }
        let broken = AnsweringSession(
            store: store, model: SystemLanguageModel(contentsOf: notAModel), configuration: Self.configuration())
        let fallback = try await broken.answer(to: question)
        guard case .searchOnly(let why) = fallback.grounding else { return XCTFail("\(fallback.grounding)") }
        XCTAssertTrue(why.contains(notAModel.lastPathComponent), why)
        XCTAssertEqual(fallback.hits, expected)
    }

    func testFollowUpThatFindsNothingIsRetriedWithThePreviousQuestion() async throws {
        let store = try Self.corpus.get().store
        let first = "What is the fallthrough keyword for in a Swift switch?"
        let followUp = "and the other way?"
        XCTAssertEqual(try store.search(followUp, mode: .hybrid, k: 4), [], "the follow-up alone retrieves nothing")
        let session = try session()
        let answer = try await session.answer(to: first)
        XCTAssertEqual(answer.searchedText, first, "a question that finds something is searched alone")
        let next = try await session.answer(to: followUp)
        XCTAssertEqual(next.searchedText, first + " " + followUp)
        XCTAssertEqual(next.grounding, .context)
        XCTAssertEqual(next.hits, try store.search(first + " " + followUp, mode: .hybrid, k: 4))
        XCTAssertFalse(next.sources.isEmpty)
        XCTAssertTrue(
            try XCTUnwrap(next.prompt).text.hasSuffix("QUESTION: \(followUp)\nANSWER:"),
            "the prompt asks the question as asked")
        // The first question of a session has nothing to retry with.
        let fresh = try await self.session().answer(to: followUp)
        XCTAssertEqual(fresh.searchedText, followUp)
        XCTAssertEqual(fresh.grounding, .generalKnowledge)
    }

    func testPromptCarriesTheLastTwoExchanges() async throws {
        let questions = [
            "What is the fallthrough keyword for in a Swift switch?",
            "When should I put @discardableResult on a function?",
            "What does symmetricDifference give me when comparing two sets?",
        ]
        let session = try session()
        var answers = [Answer]()
        for question in questions { answers.append(try await session.answer(to: question)) }
        let exchanges = answers.map { ContextBuilder.Exchange(question: $0.question, answer: $0.text) }
        XCTAssertEqual(session.history, exchanges)
        XCTAssertEqual(answers[0].prompt?.history, [])
        XCTAssertEqual(answers[1].prompt?.history, Array(exchanges[..<1]))
        XCTAssertEqual(answers[2].prompt?.history, Array(exchanges[..<2]))
        let fourth = try await session.answer(to: "What does isMultiple(of:) return when both numbers are zero?")
        let prompt = try XCTUnwrap(fourth.prompt)
        XCTAssertEqual(prompt.history, Array(exchanges[1...]), "only the last two exchanges")
        XCTAssertFalse(prompt.text.contains(questions[0]))
        XCTAssertTrue(
            prompt.text.hasPrefix(
                "Q: \(questions[1])\nA: \(answers[1].text)\n\nQ: \(questions[2])\nA: \(answers[2].text)\n\nCONTEXT:\n"))
        // A session continuing a saved history carries it the same way.
        let resumed = try self.session(history: exchanges)
        let again = try await resumed.answer(to: "What does isMultiple(of:) return when both numbers are zero?")
        XCTAssertEqual(again.prompt, prompt)
        XCTAssertEqual(again.text, fourth.text)
    }

    func testOneQuestionAtATime() async throws {
        let session = try session()
        let running = session.streamAnswer(to: "What is the fallthrough keyword for in a Swift switch?")
        XCTAssertTrue(session.isResponding)
        do {
            _ = try await session.answer(to: "When should I put @discardableResult on a function?")
            XCTFail("answered two questions at once")
        } catch LanguageModelSession.GenerationError.concurrentRequests {}
        var last: Answer?
        for try await answer in running { last = answer }
        XCTAssertEqual(last?.isComplete, true)
        XCTAssertFalse(session.isResponding, "free once the answer has ended")
        XCTAssertEqual(session.history.count, 1)
    }
}
