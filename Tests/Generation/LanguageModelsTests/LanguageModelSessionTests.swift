import ChatTemplates
import Foundation
import LanguageModels
import LlamaDecoder
import ModelTestSupport
import TestSupport
import XCTest

/// Sessions over the real default model and the small generated ones: availability, responses
/// equal to the decoder's own, streaming snapshots, the cache kept between turns, one request at
/// a time, cancellation, options and their errors, the context window.
final class LanguageModelSessionTests: XCTestCase {
    /// SmolLM2, installed as a user's first run installs it.
    static let smol = Result { () throws -> SystemLanguageModel in
        SystemLanguageModel(contentsOf: try TestLanguageModel.file())
    }
    /// The tiny qwen2 file (context 256, ChatML): fast, for the mechanics.
    static let tiny = SystemLanguageModel(
        contentsOf: TestFixtures.folder.appendingPathComponent("generation/tiny-qwen2.gguf"))

    func testAvailability() throws {
        XCTAssertEqual(try Self.smol.get().availability, .available)
        XCTAssertTrue(Self.tiny.isAvailable)
        XCTAssertEqual(try Self.tiny.contextSize, 256)
        let missing = SystemLanguageModel(contentsOf: URL(fileURLWithPath: "/nonexistent/model.gguf"))
        XCTAssertEqual(missing.availability, .unavailable(.modelNotReady))
        XCTAssertFalse(missing.isAvailable)
        XCTAssertThrowsError(try missing.contextSize) { error in
            guard case .assetsUnavailable = error as? LanguageModelSession.GenerationError else {
                return XCTFail("\(error)")
            }
        }
        // The default model is the catalog's, installed in CI before the tests.
        XCTAssertEqual(SystemLanguageModel.default.identifier, "HuggingFaceTB/SmolLM2-135M-Instruct")
    }

    func testMissingModelIsAssetsUnavailable() async throws {
        let session = LanguageModelSession(
            model: SystemLanguageModel(contentsOf: URL(fileURLWithPath: "/nonexistent/model.gguf")))
        do {
            try await session.respond(to: "Hello")
            XCTFail("answered without a model")
        } catch let error as LanguageModelSession.GenerationError {
            guard case .assetsUnavailable = error else { return XCTFail("\(error)") }
            XCTAssertTrue(error.description.contains("not installed"), error.description)
        }
        XCTAssertFalse(session.isResponding)
        XCTAssertEqual(session.transcript.count, 0)
        // A file that is not a model: the decoder's error, as assetsUnavailable.
        let notAModel = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-model-\(UUID()).gguf")
        try Data("GGUF but not really".utf8).write(to: notAModel)
        defer { try? FileManager.default.removeItem(at: notAModel) }
        do {
            try await LanguageModelSession(model: SystemLanguageModel(contentsOf: notAModel)).respond(to: "Hi")
            XCTFail("answered from a broken file")
        } catch LanguageModelSession.GenerationError.assetsUnavailable(let context) {
            XCTAssertTrue(context.debugDescription.contains(notAModel.lastPathComponent), context.debugDescription)
            // The cause survives the two wraps: the decoder's error, and in it the GGUF reader's.
            let decoder = try XCTUnwrap(context.underlyingErrors.first as? LlamaDecoderError, "\(context)")
            XCTAssertEqual(decoder.code, .invalidFile)
            let file = try XCTUnwrap(decoder.cause)
            XCTAssertEqual(file.code, .unsupportedVersion)
            XCTAssertEqual(file.path, notAModel.path)
            XCTAssertTrue(context.debugDescription.contains("byte 4: version"), context.debugDescription)
            XCTAssertTrue(context.debugDescription.contains("(unsupportedVersion)"), context.debugDescription)
        }
    }

    /// A greedy response is exactly what the decoder generates for the same chat prompt, and the
    /// transcript holds instructions, prompt and response.
    func testGreedyResponseIsTheDecodersAndTheTranscriptRecordsIt() async throws {
        let model = try Self.smol.get()
        let session = LanguageModelSession(model: model, instructions: "Answer in one short sentence.")
        let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 40)
        let response = try await session.respond(to: "What is the capital of France?", options: options)
        XCTAssertFalse(response.content.isEmpty)
        XCTAssertEqual(response.transcriptEntries.count, 2)

        let decoder = try TestLanguageModel.shared()
        let prompt = try decoder.chatPrompt([
            ChatMessage(role: .system, content: "Answer in one short sentence."),
            ChatMessage(role: .user, content: "What is the capital of France?"),
        ])
        let expected = try decoder.generate(
            prompt: prompt.ids, in: decoder.makeSequence(), maximumTokens: 40, sampling: .greedy)
        XCTAssertEqual(response.content, expected.text)

        let transcript = session.transcript
        XCTAssertEqual(transcript.count, 3)
        guard case .instructions = transcript[0], case .prompt = transcript[1],
            case .response(let answer) = transcript[2]
        else {
            return XCTFail("\(transcript)")
        }
        XCTAssertEqual(answer.segments, [.text(.init(id: answer.segments[0].id, content: response.content))])
        XCTAssertEqual(answer.assetIDs, [model.identifier])
        guard case .prompt(let asked) = transcript[1] else { return XCTFail() }
        XCTAssertEqual(asked.options, options)
        XCTAssertFalse(session.isResponding)
        // A transcript is saved and read back as it was.
        let saved = try JSONEncoder().encode(transcript)
        XCTAssertEqual(try JSONDecoder().decode(Transcript.self, from: saved), transcript)
    }

    /// Turn 2 runs only its own tokens: the cache keeps turn 1's prompt and response. And what it
    /// answers equals a fresh session given the same transcript (which runs everything).
    func testSecondTurnReusesTheCache() async throws {
        let model = try Self.smol.get()
        let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 24)
        let session = LanguageModelSession(model: model, instructions: "You are brief.")
        try await session.respond(to: "Name a fruit.", options: options)
        let first = try XCTUnwrap(session.lastPromptTokenCounts)
        XCTAssertEqual(first.reused, 0)
        let second = try await session.respond(to: "Name another one.", options: options)
        let counts = try XCTUnwrap(session.lastPromptTokenCounts)
        // Everything before the new turn came from the cache: at most the end-of-turn marker and
        // the new turn itself (under 20 tokens) were run.
        XCTAssertGreaterThan(counts.reused, first.run)
        XCTAssertLessThan(counts.run, 20, "\(counts)")

        let replay = LanguageModelSession(model: model, transcript: Transcript(entries: session.transcript.prefix(3)))
        let replayed = try await replay.respond(to: "Name another one.", options: options)
        XCTAssertEqual(try XCTUnwrap(replay.lastPromptTokenCounts).reused, 0)
        XCTAssertEqual(replayed.content, second.content)
    }

    /// Sessions sharing decoder caches (the chat endpoint's one session per request): a session
    /// continuing another's conversation finds it in a kept cache, runs only what is new, and
    /// answers as a session without one; a store of capacity 0 keeps nothing.
    func testSessionsSharingCachesContinueEachOthersConversations() throws {
        let model = try Self.smol.get()
        let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 12)
        func prompt(_ text: String) -> Transcript.Entry { .prompt(.init(segments: [.text(.init(content: text))])) }
        func turn(_ session: LanguageModelSession) throws -> LanguageModelSession.Turn {
            try session.generateTurn(tools: [], choice: .automatic, schema: nil, options: options) { _ in true }
        }
        let caches = ConversationCache(capacity: 1)
        let first = LanguageModelSession(
            model: model, transcript: Transcript(entries: [prompt("Name a fruit.")]), sharing: caches)
        let opening = try turn(first)
        XCTAssertEqual(opening.cachedPromptTokens, 0)
        XCTAssertEqual(caches.count, 1, "the cache is given back when the turn ends")
        let next = Transcript(entries: Array(first.transcript) + [prompt("Name another one.")])
        let warm = try turn(LanguageModelSession(model: model, transcript: next, sharing: caches))
        XCTAssertGreaterThanOrEqual(warm.cachedPromptTokens, opening.promptTokens)
        XCTAssertLessThan(warm.promptTokens - warm.cachedPromptTokens, 20)
        XCTAssertEqual(caches.count, 1)
        let cold = try turn(LanguageModelSession(model: model, transcript: next))
        XCTAssertEqual(cold.cachedPromptTokens, 0)
        XCTAssertEqual(cold.outcome, warm.outcome, "the same greedy answer with and without a kept cache")

        let none = ConversationCache(capacity: 0)
        _ = try turn(LanguageModelSession(model: model, transcript: next, sharing: none))
        XCTAssertEqual(none.count, 0)

        // Two conversations taking turns keep a cache each (capacity 2): neither evicts the other.
        let two = ConversationCache(capacity: 2)
        var transcripts = ["Name a fruit.", "Name a color."].map { Transcript(entries: [prompt($0)]) }
        var firstTurns: [LanguageModelSession.Turn] = []
        for index in transcripts.indices {
            let session = LanguageModelSession(model: model, transcript: transcripts[index], sharing: two)
            firstTurns.append(try turn(session))
            transcripts[index] = session.transcript
        }
        XCTAssertEqual(two.count, 2, "the second conversation started a cache of its own")
        for index in transcripts.indices {
            let follow = Transcript(entries: Array(transcripts[index]) + [prompt("One more.")])
            let again = try turn(LanguageModelSession(model: model, transcript: follow, sharing: two))
            XCTAssertGreaterThanOrEqual(
                again.cachedPromptTokens, firstTurns[index].promptTokens, "conversation \(index)")
        }
        // Full, a new conversation takes the cache sharing the most with it and keeps that much.
        let third = try turn(
            LanguageModelSession(model: model, transcript: Transcript(entries: [prompt("Name a tree.")]), sharing: two))
        XCTAssertGreaterThan(third.cachedPromptTokens, 0, "the chat template's start")
        XCTAssertLessThan(third.cachedPromptTokens, third.promptTokens)
        XCTAssertEqual(two.count, 2)
    }

    /// Snapshots are cumulative: each is a prefix of the next, and the last is the response.
    func testStreamingSnapshotsAreCumulative() async throws {
        let session = LanguageModelSession(model: try Self.smol.get())
        let stream = session.streamResponse(
            to: "Count from one to five.", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 30))
        var snapshots: [String] = []
        for try await snapshot in stream { snapshots.append(snapshot.content) }
        XCTAssertGreaterThan(snapshots.count, 5)
        for (earlier, later) in zip(snapshots, snapshots.dropFirst()) {
            XCTAssertTrue(later.hasPrefix(earlier), "\(earlier) → \(later)")
        }
        let again = try await LanguageModelSession(model: try Self.smol.get())
            .respond(
                to: "Count from one to five.", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 30))
        XCTAssertEqual(snapshots.last, again.content)
        // collect() on a finished stream returns the same response.
        let collected = try await stream.collect()
        XCTAssertEqual(collected.content, again.content)
    }

    /// One request at a time: a second one while the first runs fails with concurrentRequests,
    /// and the first is unaffected.
    func testConcurrentRequestsAreRefused() async throws {
        let session = LanguageModelSession(model: Self.tiny)
        let stream = session.streamResponse(
            to: "hello", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 100))
        XCTAssertTrue(session.isResponding)
        do {
            try await session.respond(to: "again")
            XCTFail("a second request ran")
        } catch LanguageModelSession.GenerationError.concurrentRequests {}
        let response = try await stream.collect()
        XCTAssertFalse(response.content.isEmpty)
        XCTAssertFalse(session.isResponding)
        XCTAssertEqual(session.transcript.count, 2)
    }

    /// Ending the iteration stops generation: the session frees itself, and the transcript keeps
    /// the part produced.
    func testBreakingOutOfAStreamStopsGeneration() async throws {
        let session = LanguageModelSession(model: Self.tiny)
        let limit = 200
        var seen = 0
        for try await _ in session.streamResponse(
            to: "hello", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: limit))
        {
            seen += 1
            if seen == 3 { break }
        }
        while session.isResponding { await Task.yield() }
        guard case .response(let answer)? = session.transcript.last else { return XCTFail("no response entry") }
        let tokens = try LlamaModel.tokenizer(
            contentsOf: TestFixtures.folder.appendingPathComponent("generation/tiny-qwen2.gguf")
        )
        .encode(
            answer.segments.map { if case .text(let t) = $0 { t.content } else { "" } }.joined(),
            parsingControlTokens: false)
        XCTAssertLessThan(tokens.count, limit / 2, "generation went on after the stream ended")
    }

    /// Cancelling the task that waits stops generation and throws CancellationError.
    func testCancellingTheTaskStopsGeneration() async throws {
        let session = LanguageModelSession(model: Self.tiny)
        let task = Task {
            try await session.respond(
                to: "hello", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 200))
        }
        // Wait until the request runs (or, on a very fast machine, has already finished).
        while !session.isResponding, session.transcript.isEmpty { await Task.yield() }
        task.cancel()
        do {
            _ = try await task.value
        } catch is CancellationError {}
        XCTAssertFalse(session.isResponding)
        XCTAssertEqual(session.transcript.count, 2, "the prompt and the part of the response produced")
    }

    func testSeedsRepeatAndOptionsAreChecked() async throws {
        let model = Self.tiny
        let seeded = GenerationOptions(
            sampling: .random(top: 20, seed: 42), temperature: 0.9, maximumResponseTokens: 20)
        let a = try await LanguageModelSession(model: model).respond(to: "hello", options: seeded).content
        let b = try await LanguageModelSession(model: model).respond(to: "hello", options: seeded).content
        XCTAssertEqual(a, b)
        let nucleus = GenerationOptions(
            sampling: .random(probabilityThreshold: 0.8, seed: 7), maximumResponseTokens: 20)
        let c = try await LanguageModelSession(model: model).respond(to: "hello", options: nucleus).content
        let d = try await LanguageModelSession(model: model).respond(to: "hello", options: nucleus).content
        XCTAssertEqual(c, d)

        for bad in [
            GenerationOptions(temperature: -1), GenerationOptions(temperature: .nan),
            GenerationOptions(sampling: .random(top: 0)),
            GenerationOptions(sampling: .random(probabilityThreshold: 1.5)),
            GenerationOptions(maximumResponseTokens: 0),
        ] {
            let session = LanguageModelSession(model: model)
            do {
                try await session.respond(to: "hello", options: bad)
                XCTFail("\(bad) accepted")
            } catch LanguageModelSession.GenerationError.invalidGenerationOptions(let context) {
                XCTAssertFalse(context.debugDescription.isEmpty)
            }
            XCTAssertEqual(session.transcript.count, 0, "nothing recorded for \(bad)")
            XCTAssertFalse(session.isResponding)
        }
    }

    /// A token limit ends the response where the decoder's own limit ends it.
    func testMaximumResponseTokens() async throws {
        let session = LanguageModelSession(model: Self.tiny)
        let response = try await session.respond(
            to: "hello", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 5))
        let decoder = try LlamaModel(
            contentsOf: TestFixtures.folder.appendingPathComponent("generation/tiny-qwen2.gguf"))
        let prompt = try decoder.chatPrompt([ChatMessage(role: .user, content: "hello")])
        let expected = try decoder.generate(
            prompt: prompt.ids, in: decoder.makeSequence(), maximumTokens: 5, sampling: .greedy)
        XCTAssertEqual(expected.tokens.count, 5)
        XCTAssertEqual(response.content, expected.text)
    }

    /// A prompt beyond the context window, and a conversation that outgrows it.
    func testExceededContextWindow() async throws {
        let session = LanguageModelSession(model: Self.tiny)
        do {
            try await session.respond(to: String(repeating: "words and more words ", count: 100))
            XCTFail("a prompt longer than the context ran")
        } catch LanguageModelSession.GenerationError.exceededContextWindowSize(let context) {
            XCTAssertTrue(context.debugDescription.contains("256"), context.debugDescription)
        }
        // A response that fills the window before the model ends its turn.
        let filling = LanguageModelSession(model: Self.tiny)
        do {
            try await filling.respond(to: "hello", options: GenerationOptions(sampling: .greedy))
        } catch LanguageModelSession.GenerationError.exceededContextWindowSize {}
        XCTAssertFalse(filling.isResponding)
    }

    func testTokenCountAndPrewarm() async throws {
        let model = try Self.smol.get()
        let count = try await model.tokenCount(for: "Hello, world!")
        XCTAssertEqual(
            count, try TestLanguageModel.tokenizer().encode("Hello, world!", parsingControlTokens: false).count)
        let session = LanguageModelSession(model: model, instructions: "Be brief.")
        session.prewarm()
        while session.isResponding { await Task.yield() }
        try await session.respond(to: "Hi", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 8))
        let counts = try XCTUnwrap(session.lastPromptTokenCounts)
        XCTAssertGreaterThan(counts.reused, 0, "the instructions ran at prewarm")
    }
}
