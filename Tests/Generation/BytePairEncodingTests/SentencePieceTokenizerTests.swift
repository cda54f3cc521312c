import BytePairEncoding
import Foundation
import LlamaDecoder
import TestSupport
import XCTest

/// SentencePiece BPE vocabularies (`tokenizer.ggml.model = llama`: Llama 2, Mistral, Phi-3, Gemma)
/// against llama.cpp on the same GGUF files (Fixtures/generation/stage_spm.py): two 2,000-token
/// vocabularies trained on the project's corpus, with and without the `▁` prefix, over 1,015 texts
/// each (the hostile golden texts, the multilingual ones, and texts about spaces, byte fallback and
/// special tokens). The ids are llama.cpp's (checked there id for id); offsets are code points.
final class SentencePieceTokenizerTests: XCTestCase {
    // Fields named as the generator script writes the JSON keys.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct Fixture: Decodable {
        struct Case: Decodable {
            let variant: String, name: String, text: String, ids: [Int], offsets: [[Int]]
            let decoded: String?
            let ids_parse_special: [Int]?
        }
        let cases: [Case]
    }

    static let tokenizers: [String: BytePairTokenizer] = {
        var all: [String: BytePairTokenizer] = [:]
        for variant in ["prefix", "noprefix"] {
            let url = TestFixtures.folder.appendingPathComponent("generation/tiny-spm-\(variant).gguf")
            all[variant] = try? LlamaModel.tokenizer(contentsOf: url)
        }
        return all
    }()

    func testIdsOffsetsAndDecodingMatchLlamaCpp() throws {
        let fixture = try TestFixtures.decode(Fixture.self, from: "generation/spm-tokenizer.json")
        XCTAssertEqual(fixture.cases.count, 2030)
        var failures = 0
        for testCase in fixture.cases {
            let tokenizer = try XCTUnwrap(Self.tokenizers[testCase.variant], testCase.variant)
            XCTAssertNil(tokenizer.preTokenizer)
            XCTAssertEqual(tokenizer.addsSpacePrefix, testCase.variant == "prefix")
            let label = "\(testCase.variant)/\(testCase.name)"
            let tokens = tokenizer.tokenizeWithoutSpecialTokens(testCase.text)
            let scalars = Array(testCase.text.unicodeScalars.indices) + [testCase.text.endIndex]
            let offsets = tokens.map { token in
                [
                    scalars.firstIndex(of: token.range.lowerBound) ?? -1,
                    scalars.firstIndex(of: token.range.upperBound) ?? -1,
                ]
            }
            if tokens.map(\.id) != testCase.ids || offsets != testCase.offsets {
                failures += 1
                if failures <= 5 {
                    XCTFail(
                        "\(label): ids \(tokens.map(\.id)) vs \(testCase.ids), offsets \(offsets) vs \(testCase.offsets)"
                    )
                }
            }
            XCTAssertEqual(tokenizer.decode(testCase.ids), testCase.decoded ?? testCase.text, label)
            if let special = testCase.ids_parse_special {
                XCTAssertEqual(tokenizer.encode(testCase.text, parsingControlTokens: true).map(\.id), special, label)
            }
        }
        XCTAssertEqual(failures, 0, "cases whose ids or offsets differ from llama.cpp's")
    }

    func testScoresMustMatchTheVocabulary() {
        XCTAssertThrowsError(
            try BytePairTokenizer(sentencePieceTokens: ["a", "b"], scores: [0], addsSpacePrefix: true))
        XCTAssertThrowsError(
            try BytePairTokenizer(sentencePieceTokens: ["a", "b"], scores: [0, .nan], addsSpacePrefix: true))
    }
}
