import Foundation
import LlamaDecoder
import ModelTestSupport
import XCTest

@testable import LanguageModels

/// Maps and "any JSON": an object of any keys read byte by byte in the grammar's one layout, a
/// walk down to the depth bound that always finds its way out, random logits over the real
/// vocabulary whose every finished output `JSONSerialization` reads as an object, and a session
/// of SmolLM2 under `GenerationSchema.anyJSONObject`.
final class AnyJSONTests: XCTestCase {
    private func reads(_ grammar: JSONGrammar, _ text: String) -> Bool {
        grammar.accepts(grammar.advance(grammar.initialState, Array(text.utf8)))
    }

    /// The levels of nesting of a value `JSONSerialization` read (1 for a scalar, `[]` or `{}`).
    private static func depth(_ value: Any) -> Int {
        if let object = value as? [String: Any] { return 1 + (object.values.map(depth).max() ?? 0) }
        if let array = value as? [Any] { return 1 + (array.map(depth).max() ?? 0) }
        return 1
    }

    func testAnyObjectAcceptsObjectsInTheOneLayoutOnly() throws {
        let grammar = try JSONGrammar(.anyJSONObject)
        for text in [
            "{}", #"{"a": 1, "b": [true, null, {"c": "d"}]}"#, #"{"": {}}"#, #"{"a\"b\u00e9": -1.5, "é😀": []}"#,
            #"{"a": {"a": {"a": [[], {}, "x", 0]}}}"#, #"{"a": 1, "a": 2}"#,
        ] {
            XCTAssertTrue(reads(grammar, text), text)
        }
        for text in [
            #"{"a"}"#, "{a: 1}", #"{"a":1}"#, #"{"a" : 1}"#, #"{"a": 1,}"#, #"{"a": 1, }"#, "{ }", #"{"a": 1 }"#,
            #"{"a": 1,"b": 2}"#, "{,}", "[]", #""x""#, "1", "null", #"{"a": 1}}"#, #"{"a": 01}"#, #"{"a": tru}"#,
            #"{"a": [1,2]}"#, "{\"a\u{1}\": 1}",
        ] {
            XCTAssertFalse(reads(grammar, text), text)
        }
        // A repeated key is still JSON to JSONSerialization (the last value wins), though not to
        // GeneratedContent (Docs/LanguageModels.md, "Any object").
        let repeated = try JSONSerialization.jsonObject(with: Data(#"{"a": 1, "a": 2}"#.utf8))
        XCTAssertEqual((repeated as? [String: Any])?.count, 1)
        XCTAssertThrowsError(try GeneratedContent(json: #"{"a": 1, "a": 2}"#))
        // A whole object ends the response; an open one does not.
        XCTAssertTrue(grammar.isFinished(grammar.advance(grammar.initialState, Array("{}".utf8))))
        XCTAssertFalse(grammar.accepts(grammar.advance(grammar.initialState, Array(#"{"a": 1"#.utf8))))
        XCTAssertTrue(grammar.advance(grammar.initialState, Array(#"{"a": 1}x"#.utf8)).isDead)

        let value = try JSONGrammar(.anyJSONValue)
        for text in ["{}", "[]", #""x""#, "-0.5", "true", "null", #"[{"a": [1, {"b": null}]}, "c"]"#] {
            XCTAssertTrue(reads(value, text), text)
        }
        XCTAssertFalse(reads(value, "[1,2]"))
        XCTAssertFalse(reads(value, "nul"))

        // A map's values follow its value shape.
        let counts = try JSONGrammar(
            GenerationSchema(root: .map(value: .integer(rules: [.minimum(0), .maximum(9)]))))
        XCTAssertTrue(reads(counts, #"{"a": 3, "b": 9}"#))
        XCTAssertFalse(reads(counts, #"{"a": "3"}"#))
        XCTAssertFalse(reads(counts, #"{"a": 10}"#))
    }

    /// A walker that always opens another level when it may (an array or an object, as
    /// `preferred` says): it reaches the 64th level, where only `{}` or `[]` is left, and every
    /// state on the way out still has a way to finish.
    func testDepthBoundIsReachedWithoutADeadEnd() throws {
        let grammar = try JSONGrammar(.anyJSONObject)
        for opener in [UInt8(ascii: "{"), UInt8(ascii: "[")] {
            let preferred = [opener, UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: " ")]
            var state = grammar.initialState
            var text: [UInt8] = []
            var inString = false
            while !grammar.isFinished(state) {
                let allowed = (0...255).map(UInt8.init).filter { !grammar.advance(state, $0).isDead }
                guard !allowed.isEmpty else {
                    return XCTFail("a dead end after \(String(decoding: text, as: UTF8.self))")
                }
                // Deeper when possible, else close (never `,`: the walk must end); keys are empty.
                let closing = allowed.filter { $0 == UInt8(ascii: "}") || $0 == UInt8(ascii: "]") }
                let next = preferred.first(where: allowed.contains) ?? closing.first ?? allowed[0]
                let byte = inString ? UInt8(ascii: "\"") : next
                if byte == UInt8(ascii: "\"") { inString.toggle() }
                state = grammar.advance(state, byte)
                text.append(byte)
                XCTAssertLessThan(text.count, 10_000)
                if text.count >= 10_000 { break }
            }
            let value = try JSONSerialization.jsonObject(with: Data(text))
            XCTAssertTrue(value is [String: Any], String(decoding: text, as: UTF8.self))
            XCTAssertEqual(Self.depth(value), JSONGrammar.maximumDepth, String(decoding: text, as: UTF8.self))
        }
        // At the bound a map opens but takes no key.
        let deepest = String(repeating: #"{"": "#, count: JSONGrammar.maximumDepth - 1) + "{"
        let state = grammar.advance(grammar.initialState, Array(deepest.utf8))
        XCTAssertFalse(state.isDead)
        XCTAssertTrue(grammar.advance(state, UInt8(ascii: "\"")).isDead)
        XCTAssertFalse(grammar.advance(state, UInt8(ascii: "}")).isDead)
    }

    /// Random logits over SmolLM2's vocabulary under the any-object grammar: every output that
    /// finishes is an object `JSONSerialization` reads (and, without a repeated key,
    /// `GeneratedContent` too); every one cut short is the start of one.
    func testRandomWalksOverTheVocabularyWriteObjects() throws {
        let model = try TestLanguageModel.shared()
        let favour = GuidedGenerationTests.favour(model)
        let grammar = try JSONGrammar(.anyJSONObject)
        var finished = 0
        var repeated = 0
        var withMembers = 0
        var deepest = 0
        for seed in 0..<200 {
            let outcome = try GuidedGenerationTests.drive(
                grammar, model: model, seed: UInt64(seed) &+ 77, budget: 300, favour: favour)
            if outcome.complete {
                finished += 1
                let value = try JSONSerialization.jsonObject(with: Data(outcome.text.utf8))
                XCTAssertTrue(value is [String: Any], outcome.text)
                if let object = value as? [String: Any], !object.isEmpty { withMembers += 1 }
                deepest = max(deepest, Self.depth(value))
                do {
                    let content = try GeneratedContent(json: outcome.text)
                    XCTAssertTrue(content.isComplete, outcome.text)
                } catch {
                    repeated += 1
                    XCTAssertTrue("\(error)".contains("duplicate"), "\(outcome.text): \(error)")
                }
            } else {
                XCTAssertNoThrow(try GeneratedContent(json: outcome.text), outcome.text)
            }
        }
        print(
            "any-object walk: \(finished)/200 finished within 300 tokens, \(withMembers) with members, "
                + "\(deepest) levels at most, \(repeated) with a repeated key")
        XCTAssertGreaterThan(finished, 100)
        // The walk explores: not only `{}`.
        XCTAssertGreaterThan(withMembers, 20)
        XCTAssertGreaterThanOrEqual(deepest, 3)
    }

    /// SmolLM2 asked for an object of its choosing writes one.
    func testSessionRespondsWithAnObject() async throws {
        let session = LanguageModelSession(model: try LanguageModelSessionTests.smol.get())
        let response = try await session.respond(
            to: "Describe a cat as a JSON object with its name and age.", schema: .anyJSONObject,
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 200))
        guard case .structure(let properties, _) = response.content.kind else {
            return XCTFail("not an object: \(response.content.jsonString)")
        }
        XCTAssertFalse(properties.isEmpty, response.content.jsonString)
        let parsed = try JSONSerialization.jsonObject(with: Data(response.rawContent.jsonString.utf8))
        XCTAssertTrue(parsed is [String: Any], response.rawContent.jsonString)
    }
}
