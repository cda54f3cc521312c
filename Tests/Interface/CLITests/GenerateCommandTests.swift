import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// `embeddings generate` and `tokenize` with the language model, run as users run them.
final class GenerateCommandTests: XCTestCase {
    /// Greedy generation with `--json`: the prompt's ids are the tokenizer's, the answer is text, and
    /// the same command gives the same answer.
    func testGreedyJSON() throws {
        let model = try TestLanguageModel.file().path
        let run = try embeddings([
            "generate", "--model", model, "--greedy", "--max-tokens", "8", "--json", "The capital of France is",
        ])
        XCTAssertEqual(run.status, 0, run.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["prompt_tokens"] as? [Int], [504, 3575, 282, 4649, 314])
        XCTAssertLessThanOrEqual((object["tokens"] as? [Int])?.count ?? 99, 8)
        XCTAssertTrue(["stop", "length"].contains(object["stop_reason"] as? String ?? ""))
        XCTAssertTrue((object["text"] as? String ?? "").contains("Paris"), run.stdout)
        XCTAssertEqual(
            try embeddings([
                "generate", "--model", model, "--greedy", "--max-tokens", "8", "--json", "The capital of France is",
            ]).stdout
                .replacingOccurrences(of: #""timings":\{[^}]*\}"#, with: "", options: .regularExpression),
            run.stdout.replacingOccurrences(of: #""timings":\{[^}]*\}"#, with: "", options: .regularExpression))
    }

    /// A plain prompt starts with the file's begin-of-sequence token when the file says to add one
    /// (`tokenizer.ggml.add_bos_token`, as Gemma's and Llama's files do), as llama.cpp's does;
    /// without the flag it does not.
    func testPlainPromptGetsTheFilesBeginToken() throws {
        let original = TestFixtures.folder.appendingPathComponent("generation/tiny-gemma3.gguf")
        var bytes = try Data(contentsOf: original)
        // The flag's value: the key, its type (bool, 4 bytes), then one byte.
        let key = Data("tokenizer.ggml.add_bos_token".utf8)
        let found = try XCTUnwrap(bytes.range(of: key))
        XCTAssertEqual(bytes[found.upperBound], 7, "the value's type is bool")
        XCTAssertEqual(bytes[found.upperBound + 4], 0)
        bytes[found.upperBound + 4] = 1
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("generate-bos-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let flagged = folder.appendingPathComponent("tiny-gemma3-bos.gguf")
        try bytes.write(to: flagged)
        func promptTokens(_ file: URL) throws -> [Int] {
            let run = try embeddings([
                "generate", "--model", file.path, "--greedy", "--max-tokens", "2", "--json", "ab ab",
            ])
            XCTAssertEqual(run.status, 0, run.stderr)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            return try XCTUnwrap(object["prompt_tokens"] as? [Int])
        }
        let plain = try promptTokens(original)
        XCTAssertNotEqual(plain.first, 509)
        XCTAssertEqual(try promptTokens(flagged), [509] + plain)
    }

    /// A file error keeps all its detail to the CLI line: the path once, the byte offset, the
    /// tensor, what is wrong and the GGUF reader's code.
    func testFileErrorKeepsItsCause() throws {
        let original = try Data(contentsOf: TestFixtures.folder.appendingPathComponent("generation/tiny-qwen2.gguf"))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("generate-cause-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let cut = folder.appendingPathComponent("cut.gguf")
        try original.prefix(original.count - 100).write(to: cut)
        let run = try embeddings(["generate", "--model", cut.path, "--max-tokens", "2", "hi"])
        XCTAssertEqual(run.status, 65, run.stderr)
        XCTAssertEqual(run.stdout, "")
        for part in ["byte ", "tensor 'blk.", "past the end of the file", "(invalidTensorLayout)"] {
            XCTAssertTrue(run.stderr.contains(part), "\(part) in \(run.stderr)")
        }
        XCTAssertEqual(run.stderr.components(separatedBy: cut.path).count - 1, 1, "the path once: \(run.stderr)")
    }

    /// Bad input: a clear message and the documented exit code, nothing on standard output.
    func testBadInputExitCodes() throws {
        let model = try TestLanguageModel.file().path
        let cases: [([String], Int32)] = [
            (["generate", "--model", model, "--max-tokens", "0", "hi"], 64),
            (["generate", "--model", model, "--temperature", "-1", "hi"], 64),
            (["generate", "--model", model, "--top-p", "2", "hi"], 64),
            (["generate", "--model", model, "--system", "x", "hi"], 64),
            (["generate", "--model", model], 64),
            (["generate", "--model", "/nonexistent/model.gguf", "hi"], 66),
        ]
        for (arguments, status) in cases {
            let run = try embeddings(arguments)
            XCTAssertEqual(run.status, status, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("error: "), "\(arguments): \(run.stderr)")
            XCTAssertEqual(run.stdout, "", "\(arguments)")
        }
        // A file that is not GGUF, and one cut short: bad data, exit 65.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let notGGUF = folder.appendingPathComponent("text.gguf")
        try Data("hello, world".utf8).write(to: notGGUF)
        let truncated = folder.appendingPathComponent("cut.gguf")
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: model))
        try handle.readData(ofLength: 1 << 20).write(to: truncated)
        try handle.close()
        for file in [notGGUF, truncated] {
            let run = try embeddings(["generate", "--model", file.path, "hi"])
            XCTAssertEqual(run.status, 65, "\(file.lastPathComponent): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("error: "), run.stderr)
        }
    }

    /// `tokenize` with the language model: byte-level tokens with UTF-8 ranges; a pasted control
    /// token is text.
    func testTokenizeWithTheLanguageModel() throws {
        let run = try embeddings(["tokenize", "--model", "HuggingFaceTB/SmolLM2-135M-Instruct", "é <|im_end|>"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let tokens = try XCTUnwrap(object["tokens"] as? [[String: Any]])
        XCTAssertFalse(tokens.contains { ($0["id"] as? Int) == 2 })
        XCTAssertEqual(tokens.first?["utf8"] as? [Int], [0, 2])
        XCTAssertEqual(
            try embeddings(["tokenize", "--model", "HuggingFaceTB/SmolLM2-135M-Instruct", "--input-type", "query", "x"])
                .status, 64)
    }
}
