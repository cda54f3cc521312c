import Foundation
import Hashing
import TestSupport
import XCTest

@testable import WordPiece

/// Tokenizer behaviour on a small hand-made vocabulary; parity with Hugging Face on the real one
/// is checked in EmbeddingsTests/GoldenParityTests.
final class BertTokenizerTests: XCTestCase {
    let vocabulary = Vocabulary(tokens: [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "un", "##aff", "##able",
        "cafe", "σ", "ο", "##σ", "##δ", "δ", "##ο", "東", "京", "a", "##a", ".", "[", "]", "sep",
    ])

    func tokenizer(maximumLength: Int = 512) throws -> BertTokenizer {
        try BertTokenizer(vocabulary: vocabulary, maximumLength: maximumLength)
    }

    func texts(_ t: TokenizedText) -> [String] { t.tokens.map(\.text) }

    func testEmptyAndWhitespaceOnlyGiveOnlySpecialTokens() throws {
        for text in ["", "   ", "\t\n\r ", "\u{00A0}\u{3000}"] {
            let t = try tokenizer().tokenize(text)
            XCTAssertEqual(texts(t), ["[CLS]", "[SEP]"], "\(text.debugDescription)")
            XCTAssertTrue(t.tokens.allSatisfy { $0.range.isEmpty })
        }
    }

    func testGreedyLongestMatchWithContinuations() throws {
        let t = try tokenizer().tokenize("Unaffable, hello!")
        XCTAssertEqual(texts(t), ["[CLS]", "un", "##aff", "##able", ",", "hello", "!", "[SEP]"])
        XCTAssertEqual(
            t.scalarOffsets.map { [$0.start, $0.end] },
            [[0, 0], [0, 2], [2, 5], [5, 9], [9, 10], [11, 16], [16, 17], [0, 0]])
    }

    func testRangesPointIntoTheOriginalString() throws {
        let text = "CAFÉ  Hello"
        let t = try tokenizer().tokenize(text)
        XCTAssertEqual(texts(t), ["[CLS]", "cafe", "hello", "[SEP]"])
        XCTAssertEqual(text[t.tokens[1].range], "CAFÉ")
        XCTAssertEqual(text[t.tokens[2].range], "Hello")
    }

    func testDecomposedAccentIsStrippedAndKeptInRange() throws {
        let text = "cafe\u{301}"
        let t = try tokenizer().tokenize(text)
        XCTAssertEqual(texts(t), ["[CLS]", "cafe", "[SEP]"])
        // Hugging Face reports [0, 4]: the combining mark was removed, so it is not in the token.
        XCTAssertEqual(t.scalarOffsets[1].start, 0)
        XCTAssertEqual(t.scalarOffsets[1].end, 4)
    }

    func testFinalCapitalSigmaLowercasesToSigmaNotFinalSigma() throws {
        let t = try tokenizer().tokenize("ΟΔΟΣ")
        XCTAssertEqual(texts(t), ["[CLS]", "ο", "##δ", "##ο", "##σ", "[SEP]"])
        let normalized = BertNormalizer().normalize(
            "Σ".unicodeScalars.enumerated().map { AlignedScalar(scalar: $0.element, origin: $0.offset) })
        XCTAssertEqual(normalized.map(\.scalar), ["σ"])
    }

    func testControlAndFormatCharactersAreRemovedAndOddSpacesSplit() throws {
        let t = try tokenizer().tokenize("hel\u{00AD}lo\u{200B}\u{0000}\u{FEFF}\u{00A0}world")
        XCTAssertEqual(texts(t), ["[CLS]", "hello", "world", "[SEP]"])
    }

    func testChineseCharactersAreSplitOnePerToken() throws {
        let t = try tokenizer().tokenize("東京")
        XCTAssertEqual(texts(t), ["[CLS]", "東", "京", "[SEP]"])
        XCTAssertEqual(t.scalarOffsets.map { [$0.start, $0.end] }, [[0, 0], [0, 1], [1, 2], [0, 0]])
    }

    func testLiteralSpecialTokensMatchOnlyExactly() throws {
        let t = try tokenizer().tokenize("hello[SEP]world [sep]")
        XCTAssertEqual(texts(t), ["[CLS]", "hello", "[SEP]", "world", "[", "sep", "]", "[SEP]"])
        XCTAssertEqual(t.tokens[2].id, 3)
        XCTAssertFalse(t.tokens[2].isSpecial, "a literal [SEP] is text the caller wrote, with a real range")
        XCTAssertEqual(t.scalarOffsets[2].start, 5)
        XCTAssertEqual(t.scalarOffsets[2].end, 10)
    }

    func testWordsOverOneHundredScalarsBecomeUnknown() throws {
        let exactly100 = String(repeating: "a", count: 100)
        let t100 = try tokenizer().tokenize(exactly100)
        XCTAssertEqual(t100.tokens.count, 2 + 100, "a + 99 × ##a")
        let t101 = try tokenizer().tokenize(exactly100 + "a")
        XCTAssertEqual(texts(t101), ["[CLS]", "[UNK]", "[SEP]"])
        XCTAssertEqual(t101.scalarOffsets[1].end, 101)
    }

    func testUnmatchableWordIsOneUnknownCoveringTheWord() throws {
        let t = try tokenizer().tokenize("hello xyz!")
        XCTAssertEqual(texts(t), ["[CLS]", "hello", "[UNK]", "!", "[SEP]"])
        XCTAssertEqual(t.scalarOffsets[2].start, 6)
        XCTAssertEqual(t.scalarOffsets[2].end, 9)
    }

    func testTruncationAtExactlyTheMaximumLength() throws {
        let tokenizer = try tokenizer(maximumLength: 5)
        let fits = tokenizer.tokenize("hello world !")
        XCTAssertEqual(texts(fits), ["[CLS]", "hello", "world", "!", "[SEP]"])
        XCTAssertFalse(fits.isTruncated)
        let over = tokenizer.tokenize("hello world ! hello")
        XCTAssertEqual(texts(over), ["[CLS]", "hello", "world", "!", "[SEP]"])
        XCTAssertTrue(over.isTruncated)
        XCTAssertEqual(tokenizer.tokenizeWithoutSpecialTokens("hello world ! hello").count, 4)
    }

    func testMissingSpecialTokenIsATypedError() {
        XCTAssertThrowsError(try BertTokenizer(vocabulary: Vocabulary(tokens: ["[PAD]", "[UNK]"]))) {
            guard case WordPieceError.invalidVocabulary = $0 else { return XCTFail("\($0)") }
        }
    }

    func testVocabularyFileErrors() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vocab-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let empty = folder.appendingPathComponent("empty.txt")
        try Data().write(to: empty)
        XCTAssertThrowsError(try Vocabulary(contentsOf: empty))
        let binary = folder.appendingPathComponent("binary.txt")
        try Data([0xFF, 0xFE, 0x00, 0xC3]).write(to: binary)
        XCTAssertThrowsError(try Vocabulary(contentsOf: binary))
        XCTAssertThrowsError(try Vocabulary(contentsOf: folder.appendingPathComponent("missing.txt")))
        let crlf = folder.appendingPathComponent("crlf.txt")
        try Data("[PAD]\r\n[UNK]\r\nhello\r\n".utf8).write(to: crlf)
        XCTAssertEqual(try Vocabulary(contentsOf: crlf).tokens, ["[PAD]", "[UNK]", "hello"])
    }

    func testArbitraryUnicodeNeverCrashesAndRangesStayInside() throws {
        var rng = SeededGenerator(seed: 99)
        let tokenizer = try tokenizer(maximumLength: 64)
        for _ in 0..<300 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...40, using: &rng) {
                let value = UInt32.random(in: 0...0x2FFFF, using: &rng)
                if let s = Unicode.Scalar(value) { scalars.append(s) }
            }
            let text = String(scalars)
            let t = tokenizer.tokenize(text)
            XCTAssertLessThanOrEqual(t.tokens.count, 64)
            for token in t.tokens {
                XCTAssertTrue(token.range.lowerBound >= text.startIndex && token.range.upperBound <= text.endIndex)
            }
        }
    }

    func testBlockwiseTokensEqualTheWholeTextReference() throws {
        // Blocks cut at ASCII whitespace must give exactly the tokens (ids and ranges) of the
        // whole text, whatever the block size, including marks after spaces, CRLF, literal
        // special tokens, CJK and over-long words next to a cut.
        var rng = SeededGenerator(seed: 7)
        let tokenizer = try tokenizer()
        let pieces = [
            "hello", "world", " ", "  ", "\n", "\r\n", "\t", ",", "!", "unaffable", "Cafe\u{301}", " \u{301}a",
            "[SEP]", "[sep]", "[", "]", "[SE", "P]", "<m a>", "<m", "a>", "東京", "ΣΟΣ", "\u{0}", "\u{85}", "\u{A0}",
            "\u{3000}",
            String(repeating: "a", count: 120), "é", "👍🏽", ".\u{301}", "a.b", "x==y", "-", "'", "~",
        ]
        // A special token containing a space and "<": neither may then be a cut.
        var special = vocabulary.tokens
        special.append("<m a>")
        let spaced = try BertTokenizer(vocabulary: Vocabulary(tokens: special), maximumLength: 512, maskToken: "<m a>")
        for round in 0..<400 {
            var text = ""
            for _ in 0..<Int.random(in: 0...60, using: &rng) { text += pieces.randomElement(using: &rng)! }
            for t in [tokenizer, spaced] {
                let reference = t.referenceContentTokens(of: text)
                for block in [1, 2, 3, 7, 64, 16_384] {
                    let streamed = Array(t.contentTokens(of: text, blockScalars: block))
                    XCTAssertEqual(streamed, reference, "round \(round), block \(block): \(text.debugDescription)")
                }
            }
        }
        XCTAssertTrue(spaced.referenceContentTokens(of: "x <m a> y").contains { $0.text == "<m a>" })
        // tokenize() stops reading once the limit is reached and still reports truncation.
        let short = try self.tokenizer(maximumLength: 4)
        let long = String(repeating: "hello world ", count: 100_000)
        let t = short.tokenize(long)
        XCTAssertEqual(texts(t), ["[CLS]", "hello", "world", "[SEP]"])
        XCTAssertTrue(t.isTruncated)
        XCTAssertFalse(short.tokenize("hello world").isTruncated)
    }

    func testSHA256KnownAnswers() {
        XCTAssertEqual(
            SHA256.hex(of: Array("".utf8)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(
            SHA256.hex(of: Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        XCTAssertEqual(SHA256.hex(of: million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        var streamed = SHA256()
        million.withUnsafeBytes { bytes in
            streamed.update(UnsafeRawBufferPointer(rebasing: bytes[0..<333_333]))
            streamed.update(UnsafeRawBufferPointer(rebasing: bytes[333_333...]))
        }
        XCTAssertEqual(streamed.finalizeHex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
