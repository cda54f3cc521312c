import Embeddings
import Foundation
import ModelTestSupport
import Retrieval
import TestSupport
import XCTest

/// The multilingual model through the `embeddings` executable: the held-out translation check,
/// token offsets on hostile input, and indexes that remember their model.
final class MultilingualCommandTests: XCTestCase {
    override func setUpWithError() throws {
        _ = try TestModel.multilingual()  // installs the packed file once
        _ = try TestModel.shared()
    }

    /// The acceptance check: on held-out everyday sentences, the nearest English sentence to a
    /// French, Portuguese, Spanish or German one is its translation at least 95% of the time.
    func testEmbedFindsTheTranslationOfHeldOutSentences() throws {
        let set = try TranslationSet(
            contentsOf: TestFixtures.folder.appendingPathComponent("eval/crosslingual-heldout.json"))
        XCTAssertEqual(Set(set.languages), ["en", "fr", "pt", "es", "de"])
        var lines = ""
        for language in set.languages {
            for (id, text) in zip(set.ids, set.texts[language]!) {
                let data = try JSONSerialization.data(withJSONObject: ["id": "\(language)/\(id)", "text": text])
                lines += String(decoding: data, as: UTF8.self) + "\n"
            }
        }
        let r = try embeddings(
            ["embed", "--model", "intfloat/multilingual-e5-small", "--input-type", "query", "--quiet"],
            input: Data(lines.utf8))
        XCTAssertEqual(r.status, 0, r.stderr)
        var vectors = [String: [Float]]()
        for line in r.stdout.split(separator: "\n") {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            vectors[try XCTUnwrap(object["id"] as? String)] = try XCTUnwrap(object["vector"] as? [Double]).map(
                Float.init)
        }
        XCTAssertEqual(vectors.count, set.ids.count * set.languages.count)
        let accuracy = try set.accuracy { texts in
            let language = set.languages.first { set.texts[$0]! == texts }!
            return set.ids.map { vectors["\(language)/\($0)"]! }
        }
        for a in accuracy {
            XCTAssertGreaterThanOrEqual(a.toPivot, 0.95, "\(a.language): \(a.misses)")
        }
        print(
            "held-out translation retrieval (embeddings embed): "
                + accuracy.map { String(format: "%@ %.1f%%", $0.language, $0.toPivot * 100) }.joined(separator: ", "))
    }

    /// Offsets slice back to the text for any input: invalid UTF-8 (repaired), NUL, controls,
    /// decomposed accents, emoji, special-token literals, right-to-left and CJK text.
    func testTokenizeOffsetsSliceBackToTheText() throws {
        var raw = Data()
        let texts: [[UInt8]] = [
            Array("Le chien dort sur le canapé.".utf8),
            [0x61, 0xFF, 0x62, 0x20, 0xC3, 0x28, 0x20, 0xE2, 0x82, 0x20, 0x63],  // invalid UTF-8
            Array("nul\u{0}inside and \u{1}control".utf8),
            Array("cafe\u{301} 日本語 👩‍👩‍👧 <mask> مرحبا שלום".utf8),
            Array("   \t\n  ".utf8),
            [],
        ]
        for (n, bytes) in texts.enumerated() {
            // JSON escapes for NUL and controls; raw bytes elsewhere (invalid sequences included).
            var escaped = [UInt8]()
            for b in bytes {
                switch b {
                case 0x00..<0x20: escaped += Array(String(format: "\\u%04x", b).utf8)
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): escaped += [UInt8(ascii: "\\"), b]
                default: escaped.append(b)
                }
            }
            raw += Data(#"{"id":"\#(n)","text":""#.utf8) + Data(escaped) + Data("\"}\n".utf8)
        }
        let r = try embeddings(["tokenize", "--model", "intfloat/multilingual-e5-small"], input: raw)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid UTF-8 repaired"), r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, texts.count)
        for (line, bytes) in zip(lines, texts) {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let text = Array(String(decoding: bytes, as: UTF8.self).utf8)  // the text as repaired
            let tokens = try XCTUnwrap(object["tokens"] as? [[String: Any]])
            XCTAssertEqual(tokens.first?["text"] as? String, "<s>")
            XCTAssertEqual(tokens.last?["text"] as? String, "</s>")
            var previousEnd = 0
            for token in tokens {
                let range = try XCTUnwrap(token["utf8"] as? [Int])
                XCTAssertTrue(
                    0 <= range[0] && range[0] <= range[1] && range[1] <= text.count, "\(range) in \(text.count) bytes")
                let slice = Array(text[range[0]..<range[1]])
                XCTAssertNotNil(String(bytes: slice, encoding: .utf8), "\(range) cuts a character")
                if range[0] < range[1] {
                    XCTAssertGreaterThanOrEqual(range[1], previousEnd)
                    previousEnd = range[1]
                }
            }
        }
    }

    func testPositionalTextAndBadArguments() throws {
        let r = try embeddings([
            "tokenize", "--model", "multilingual-e5-small", "--input-type", "passage", "Olá", "mundo",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        // The space before it, then the word.
        XCTAssertTrue(r.stdout.contains(#""text":"▁mundo","utf8":[4,10]"#), r.stdout)
        XCTAssertTrue(r.stdout.contains(#""text":"▁passage""#), r.stdout)
        let bad = try embeddings(
            ["embed", "--model", "intfloat/multilingual-e5-small", "--input-type", "question"], input: Data())
        XCTAssertEqual(bad.status, 64, bad.stderr)
        let unknown = try embeddings(["embed", "--model", "no-such-model"], input: Data())
        XCTAssertEqual(unknown.status, 66, unknown.stderr)
    }

    func testAnIndexRemembersItsModel() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("e5-index-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let index = folder.appendingPathComponent("cozinha.index").path
        let corpus = TestFixtures.folder.appendingPathComponent("corpus/licoes-cozinha").path
        let built = try embeddings([
            "index", corpus, "--out", index, "--model", "intfloat/multilingual-e5-small", "--quiet",
        ])
        XCTAssertEqual(built.status, 0, built.stderr)
        // No --model: search uses the model the index names.
        let found = try embeddings([
            "search", "--index", index, "--mode", "semantic", "--json", "Como deixar o arroz soltinho?",
        ])
        XCTAssertEqual(found.status, 0, found.stderr)
        XCTAssertTrue(found.stdout.contains("02-arroz-branco"), found.stdout)
        // Another model's questions against these vectors: an error, never mixed vectors.
        let mixed = try embeddings([
            "search", "--index", index, "--mode", "semantic", "--model", "sentence-transformers/all-MiniLM-L6-v2",
            "arroz",
        ])
        XCTAssertNotEqual(mixed.status, 0)
        XCTAssertTrue(mixed.stderr.contains("made by intfloat/multilingual-e5-small"), mixed.stderr)
    }
}
