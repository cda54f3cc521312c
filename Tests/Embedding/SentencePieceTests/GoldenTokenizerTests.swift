import Embeddings
import Foundation
import ModelTestSupport
import SentencePiece
import TestSupport
import Tokenization
import XCTest

/// Parity with Hugging Face `tokenizers` (Fixtures/golden/xlmr/tokens.json, from
/// Fixtures/golden/xlmr/generate.py): ids, offsets and token texts on texts written for the project.
final class GoldenTokenizerTests: XCTestCase {
    // Fields named as the generator script writes the JSON keys (Decodable reads them by name).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct Golden: Decodable {
        struct Case: Decodable {
            var name: String
            var text: String
            var ids: [Int]
            var tokens: [String]
            var offsets: [[Int]]
            var utf8_offsets: [[Int]]
            var truncated: Bool
        }
        var max_length: Int
        var cases: [Case]
    }

    static let golden = Result { try TestFixtures.decode(Golden.self, from: "golden/xlmr/tokens.json") }

    func golden() throws -> Golden { try Self.golden.get() }

    func tokenizer() throws -> any TextTokenizer { try TestModel.multilingual().tokenizer() }

    func testTheCasesCoverTenScripts() throws {
        let cases = try golden().cases
        XCTAssertGreaterThanOrEqual(cases.count, 200)
        // Scripts by scalar range: Latin with accents, Cyrillic, Greek, Arabic, Hebrew, Devanagari,
        // Thai, CJK, Hangul, emoji.
        let ranges: [String: ClosedRange<UInt32>] = [
            "latin-accents": 0xC0...0x24F, "greek": 0x370...0x3FF, "cyrillic": 0x400...0x4FF, "hebrew": 0x590...0x5FF,
            "arabic": 0x600...0x6FF, "devanagari": 0x900...0x97F, "thai": 0xE00...0xE7F, "cjk": 0x4E00...0x9FFF,
            "hangul": 0xAC00...0xD7AF, "emoji": 0x1F300...0x1FAFF,
        ]
        for (script, range) in ranges {
            let count = cases.filter { $0.text.unicodeScalars.contains { range.contains($0.value) } }.count
            XCTAssertGreaterThanOrEqual(count, 3, script)
        }
    }

    func testIdsOffsetsAndTokensAreIdentical() throws {
        let tokenizer = try tokenizer()
        let golden = try golden()
        XCTAssertEqual(tokenizer.maximumLength, golden.max_length)
        var failures = 0
        for c in golden.cases {
            let tokens = tokenizer.tokenize(c.text)
            if tokens.ids != c.ids {
                let first = firstDifference(tokens.ids, c.ids) ?? 0
                XCTFail(
                    "\(c.name): ids differ first at token \(first): ours \(Array(tokens.ids.dropFirst(first).prefix(5))) \(Array(tokens.tokens.dropFirst(first).prefix(5).map(\.text))) vs \(Array(c.ids.dropFirst(first).prefix(5))) \(Array(c.tokens.dropFirst(first).prefix(5))) (counts \(tokens.ids.count)/\(c.ids.count))"
                )
                failures += 1
                continue
            }
            let offsets = tokens.scalarOffsets.map { [$0.start, $0.end] }
            if offsets != c.offsets {
                let first = firstDifference(offsets, c.offsets) ?? 0
                XCTFail(
                    "\(c.name): offsets differ first at token \(first) (\(c.tokens[first])): ours \(offsets[first]) vs \(c.offsets[first])"
                )
                failures += 1
                continue
            }
            let utf8 = c.text.utf8
            let bytes = tokens.tokens.map { t in
                t.isSpecial
                    ? [0, 0]
                    : [
                        utf8.distance(from: utf8.startIndex, to: t.range.lowerBound),
                        utf8.distance(from: utf8.startIndex, to: t.range.upperBound),
                    ]
            }
            XCTAssertEqual(bytes, c.utf8_offsets, c.name)
            XCTAssertEqual(tokens.tokens.map(\.text), c.tokens, c.name)
            XCTAssertEqual(tokens.isTruncated, c.truncated, c.name)
        }
        XCTAssertEqual(failures, 0)
    }

    func testRangesSliceBackToTheText() throws {
        // Every content token's range lies inside the text, on scalar boundaries, in order; the
        // ranges of the tokens of a word follow each other.
        let tokenizer = try tokenizer()
        var generator = SeededGenerator(seed: 14)
        let alphabet: [String] = [
            "a", "é", "e\u{301}", " ", "  ", "\t", "\n", "\u{0}", "\u{1}", "日本", "😀", "👨‍👩‍👧", "ß", "ﬁ", "Ａ", "<s>",
            "<mask>", " <mask>", "\u{200D}", "\u{FEFF}", "ש", "ع", "ก", "ä\u{301}", "\u{10331}", "\u{20000}", ".",
        ]
        for _ in 0..<400 {
            let text = (0..<Int.random(in: 0...30, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }.joined()
            let tokens = tokenizer.tokenize(text)
            var previous = text.startIndex
            for token in tokens.tokens where !token.isSpecial {
                XCTAssertTrue(token.range.lowerBound >= text.startIndex && token.range.upperBound <= text.endIndex)
                XCTAssertNotNil(
                    token.range.lowerBound.samePosition(in: text.unicodeScalars), "\(text.debugDescription)")
                XCTAssertNotNil(
                    token.range.upperBound.samePosition(in: text.unicodeScalars), "\(text.debugDescription)")
                XCTAssertGreaterThanOrEqual(token.range.upperBound, previous, "\(text.debugDescription) \(token.text)")
                previous = max(previous, token.range.lowerBound)
            }
        }
    }

    func testBlocksGiveTheTokensOfTheWholeText() throws {
        // Cutting before every eligible space (blocks of one byte) changes nothing, on the golden
        // texts and on random ones built to put spaces, tabs, <mask> and joiners around the cuts.
        let tokenizer = try XCTUnwrap(try tokenizer() as? XLMRobertaTokenizer)
        var texts = try golden().cases.map(\.text)
        var generator = SeededGenerator(seed: 5)
        let alphabet: [String] = [
            "a", "b.", " ", "  ", "\t", "\n", "<mask>", " <mask>", "\u{0600}", "\u{301}", "é", "日", "\u{1}", "\u{200D}",
            "!", "<s>",
        ]
        for _ in 0..<300 {
            texts.append(
                (0..<Int.random(in: 1...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
                    .joined())
        }
        for text in texts {
            let whole = tokenizer.contentTokens(of: text, prefix: "", limit: nil, blockBytes: Int.max / 2)
            let blocks = tokenizer.contentTokens(of: text, prefix: "", limit: nil, blockBytes: 1)
            XCTAssertEqual(blocks, whole, text.debugDescription)
            XCTAssertEqual(Array(IteratorSequence(tokenizer.lazyContentTokens(of: text))), whole, text.debugDescription)
            XCTAssertEqual(
                tokenizer.contentTokens(of: text, prefix: "query: ", limit: nil, blockBytes: 1),
                tokenizer.contentTokens(of: text, prefix: "query: ", limit: nil, blockBytes: Int.max / 2),
                text.debugDescription)
        }
    }

    func testAPrependedConcatenationMarkBeforeMaskDoesNotTrap() throws {
        // U+0600 joins the following "<" into one Character; the left strip steps by scalars.
        let tokenizer = try tokenizer()
        for text in ["\u{0600}<mask>", " \u{0600}<mask>", "\u{0600} <mask>", "\u{06DD}  <mask>x"] {
            let tokens = tokenizer.tokenize(text)
            XCTAssertTrue(tokens.ids.contains(250_001), text.debugDescription)
        }
        XCTAssertEqual(tokenizer.tokenize("\u{0600} <mask>").tokens.first { $0.id == 250_001 }?.text, " <mask>")
    }

    func testAHugeTextIsReadOnlyUpToTheLimit() throws {
        let tokenizer = try tokenizer()
        let text = String(repeating: "palavra ", count: 2_000_000)  // 16 MB
        let start = Date()
        let tokens = tokenizer.tokenize(text)
        XCTAssertTrue(tokens.isTruncated)
        XCTAssertEqual(tokens.tokens.count, 512)
        // Not a timing assertion: reading only the first block means a fraction of a second here.
        print("16 MB text tokenized to the limit in \(Date().timeIntervalSince(start)) s")
    }

    func testInvalidUTF8IsRepairedBeforeTokenizing() throws {
        let tokenizer = try tokenizer()
        let text = String(decoding: [0x61, 0xFF, 0x62, 0xC3, 0x28, 0x00, 0x63] as [UInt8], as: UTF8.self)
        let tokens = tokenizer.tokenize(text)
        let slices = tokens.tokens.filter { !$0.isSpecial }.map { String(text[$0.range]) }
        XCTAssertEqual(slices.joined(), text)  // nothing lost, nothing invented: the ranges tile the text
    }
}
