import ModelTestSupport
import TestSupport
import XCTest

@testable import BytePairEncoding

final class IncrementalDecoderTests: XCTestCase {
    /// Streaming the tokens of multilingual text gives, joined, the text itself, and no piece ever
    /// holds part of a character (no U+FFFD in any piece of valid text).
    func testStreamedPiecesJoinToTheText() throws {
        let tokenizer = try TestLanguageModel.tokenizer()
        let texts = ["Héllo wörld", "日本語のテキストです。", "emoji 🦩🧑🏽‍🚀 and flags 🇵🇹", "Ελληνικά και русский", "tab\tnew\nline"]
        for text in texts {
            let ids = tokenizer.tokenizeWithoutSpecialTokens(text).map(\.id)
            var decoder = IncrementalDecoder(tokenizer: tokenizer)
            var pieces: [String] = []
            for id in ids { pieces.append(decoder.append(id)) }
            pieces.append(decoder.finish())
            XCTAssertEqual(pieces.joined(), text)
            XCTAssertEqual(pieces.joined(), tokenizer.decode(ids))
            XCTAssertFalse(pieces.contains { $0.unicodeScalars.contains("\u{FFFD}") }, text)
        }
    }

    /// Byte by byte: a character appears when its last byte arrives; bytes that can never be
    /// UTF-8 come out as U+FFFD at once, as `String(decoding:)` repairs them; an unfinished
    /// sequence at the end becomes U+FFFD.
    func testBytesOneByOne() throws {
        let tokenizer = try TestLanguageModel.tokenizer()
        var decoder = IncrementalDecoder(tokenizer: tokenizer)
        let bytes = Array("aé€🦩".utf8)
        var out: [String] = []
        for byte in bytes { out.append(decoder.append(bytes: [byte])) }
        XCTAssertEqual(out, ["a", "", "é", "", "", "€", "", "", "", "🦩"])
        XCTAssertEqual(decoder.append(bytes: [0xFF]), "\u{FFFD}")
        XCTAssertEqual(decoder.append(bytes: [0xE2, 0x82]), "")
        XCTAssertEqual(decoder.finish(), "\u{FFFD}")
        XCTAssertEqual(decoder.finish(), "")
        // A lead byte followed by a byte that cannot continue it: both repaired right away.
        XCTAssertEqual(decoder.append(bytes: [0xE0, 0x80]), String(decoding: [0xE0, 0x80] as [UInt8], as: UTF8.self))
        var random = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let junk = (0..<Int.random(in: 1...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random)
            }
            var d = IncrementalDecoder(tokenizer: tokenizer)
            var joined = ""
            var i = 0
            while i < junk.count {
                let n = Int.random(in: 1...3, using: &random)
                joined += d.append(bytes: junk[i..<min(junk.count, i + n)])
                i += n
            }
            joined += d.finish()
            XCTAssertEqual(joined, String(decoding: junk, as: UTF8.self), "\(junk)")
        }
    }
}
