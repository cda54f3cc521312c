import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// `embeddings ask` and `chat` as users run them, over an index of a few built-in lessons, with
/// SmolLM2 (greedy, a few tokens): the JSON object, the streamed text and its sources, general
/// knowledge, search results when the model cannot load, a conversation, and bad arguments.
final class AskCommandTests: XCTestCase {
    /// An index of three lessons, written once for the class.
    static let index = Result { () throws -> String in
        _ = try TestModel.shared()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ask-\(getpid())")
        let docs = folder.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        let lessons = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")
        for name in ["010-sets.md", "015-switch.md", "022-returning-values.md"] {
            try FileManager.default.copyItem(
                at: lessons.appendingPathComponent(name), to: docs.appendingPathComponent(name))
        }
        let index = folder.appendingPathComponent("lessons.index").path
        let run = try ChildProcess.run(CLITests.executable, ["index", docs.path, "--out", index, "--quiet"])
        guard run.status == 0 else { throw FixtureError(message: "index failed: \(run.stderr)") }
        return index
    }

    static let question = "What is the fallthrough keyword for in a Swift switch?"

    func ask(_ arguments: [String], input: Data? = nil) throws -> ProcessResult {
        let model = try TestLanguageModel.file().path
        return try embeddings(
            ["ask", "--index", try Self.index.get(), "--model", model, "--greedy", "--max-tokens", "8"] + arguments,
            input: input)
    }

    func object(_ run: ProcessResult) throws -> [String: Any] {
        XCTAssertEqual(run.status, 0, run.stderr)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
    }

    func testJSONHasTheAnswerItsSourcesTokensAndTimings() throws {
        let object = try object(try ask(["--json", Self.question]))
        XCTAssertEqual(object["question"] as? String, Self.question)
        XCTAssertEqual(object["grounding"] as? String, "context")
        XCTAssertEqual(object["used_context"] as? Bool, true)
        XCTAssertFalse((object["answer"] as? String ?? "").isEmpty)
        let sources = try XCTUnwrap(object["sources"] as? [[String: Any]])
        XCTAssertFalse(sources.isEmpty)
        XCTAssertEqual((sources[0]["id"] as? String)?.hasPrefix("015-switch#"), true, "\(sources)")
        XCTAssertNotNil(sources[0]["title"] as? String)
        XCTAssertNotNil(sources[0]["score"] as? Double)
        let hits = try XCTUnwrap(object["hits"] as? [[String: Any]])
        XCTAssertEqual(hits.first?["id"] as? String, sources[0]["id"] as? String, "the top hit is the first source")
        let tokens = try XCTUnwrap(object["tokens"] as? [String: Any])
        XCTAssertGreaterThan(tokens["prompt"] as? Int ?? 0, 50)
        XCTAssertLessThanOrEqual(tokens["answer"] as? Int ?? 99, 9)
        let timings = try XCTUnwrap(object["timings"] as? [String: Any])
        XCTAssertGreaterThan(
            timings["first_token_seconds"] as? Double ?? 0, timings["retrieval_seconds"] as? Double ?? 1)
        XCTAssertNotNil(timings["total_seconds"] as? Double)
        // The same greedy answer again.
        XCTAssertEqual(
            try self.object(try ask(["--json", Self.question]))["answer"] as? String, object["answer"] as? String)
    }

    func testTextStreamsTheAnswerThenItsSources() throws {
        let run = try ask([Self.question])
        XCTAssertEqual(run.status, 0, run.stderr)
        let parts = run.stdout.components(separatedBy: "\n\nSources:\n")
        XCTAssertEqual(parts.count, 2, run.stdout)
        XCTAssertFalse(parts[0].isEmpty)
        XCTAssertTrue(parts[1].hasPrefix("  1. 015-switch#"), run.stdout)
        let json = try object(try ask(["--json", Self.question]))
        XCTAssertEqual(parts[0], json["answer"] as? String, "the streamed text is the answer")
    }

    func testOffTopicQuestionIsGeneralKnowledgeWithoutSources() throws {
        let object = try object(try ask(["--json", "knitting wool scarves"]))
        XCTAssertEqual(object["grounding"] as? String, "general_knowledge")
        XCTAssertEqual(object["used_context"] as? Bool, false)
        XCTAssertEqual((object["sources"] as? [Any])?.count, 0)
        let text = try ask(["knitting wool scarves"])
        XCTAssertTrue(
            text.stdout.hasSuffix(
                "(No source: nothing in the index matches the question; answered from general knowledge.)\n"),
            text.stdout)
    }

    /// A model file that does not load: the search results, a warning, exit 0.
    func testModelThatCannotLoadGivesSearchResults() throws {
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(getpid()).gguf")
        try Data("GGUF but not really".utf8).write(to: broken)
        defer { try? FileManager.default.removeItem(at: broken) }
        let arguments = ["ask", "--index", try Self.index.get(), "--model", broken.path]
        let object = try object(try embeddings(arguments + ["--json", Self.question]))
        XCTAssertEqual(object["grounding"] as? String, "search_only")
        XCTAssertTrue((object["reason"] as? String ?? "").contains(broken.lastPathComponent))
        XCTAssertEqual(object["answer"] as? String, "")
        XCTAssertEqual((object["sources"] as? [Any])?.count, 0)
        XCTAssertEqual(((object["hits"] as? [[String: Any]])?.first?["id"] as? String)?.hasPrefix("015-switch#"), true)
        let text = try embeddings(arguments + [Self.question])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stderr.hasPrefix("warning: "), text.stderr)
        XCTAssertTrue(text.stdout.hasPrefix("1. 015-switch#"), text.stdout)
    }

    /// Two lines of standard input: two answers; the second, a follow-up that finds nothing
    /// alone, is answered from the first question's chunks.
    func testChatAnswersEachLineWithHistory() throws {
        let model = try TestLanguageModel.file().path
        let run = try embeddings(
            ["chat", "--index", try Self.index.get(), "--model", model, "--greedy", "--max-tokens", "8"],
            input: Data("\(Self.question)\n\nand the other way?\n".utf8))
        XCTAssertEqual(run.status, 0, run.stderr)
        let answers = run.stdout.components(separatedBy: "\n\nSources:\n")
        XCTAssertEqual(answers.count, 3, "two answers with sources: \(run.stdout)")
        XCTAssertTrue(answers[2].hasPrefix("  1. 015-switch#"), run.stdout)
    }

    func testBadArgumentsUseTheCLIsExitCodes() throws {
        let index = try Self.index.get()
        let cases: [([String], Int32)] = [
            (["ask", "--index", index], 64),
            (["ask", "--index", index, "  "], 64),
            (["ask", Self.question], 64),
            (["ask", "--index", index, "--store", "postgresql://", Self.question], 64),
            (["ask", "--index", index, "--max-tokens", "0", Self.question], 64),
            (["ask", "--index", index, "--mode", "fuzzy", Self.question], 64),
            (["chat", "--index", index, "a question"], 64),
            (["ask", "--index", "/no/such.index", Self.question], 66),
            (["ask", "--index", index, "--model", "/nonexistent/model.gguf", Self.question], 66),
        ]
        for (arguments, status) in cases {
            let run = try embeddings(arguments)
            XCTAssertEqual(run.status, status, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("error: "), "\(arguments): \(run.stderr)")
            XCTAssertEqual(run.stdout, "", "\(arguments)")
        }
    }
}
