import SentencePiece
import XCTest

/// The unigram model on small vocabularies written out by hand, where the best segmentation
/// can be worked out on paper.
final class UnigramModelTests: XCTestCase {
    func model(_ pieces: [(String, Float)], unknown: Int = 0) throws -> UnigramModel {
        var bytes = [UInt8]()
        var offsets: [Int32] = [0]
        for (piece, _) in pieces {
            bytes += Array(piece.utf8)
            offsets.append(Int32(bytes.count))
        }
        return try UnigramModel(bytes: bytes, offsets: offsets, scores: pieces.map(\.1), unknownID: unknown)
    }

    func segment(_ model: UnigramModel, _ word: String) -> [(Int, String)] {
        let bytes = Array(word.utf8)
        var boundaries = [0]
        for scalar in word.unicodeScalars { boundaries.append(boundaries.last! + UTF8.width(scalar)) }
        return bytes.withUnsafeBufferPointer { model.segment($0, boundaries: boundaries) }.map { segment in
            (segment.id, String(decoding: bytes[segment.bytes], as: UTF8.self))
        }
    }

    func testPicksTheHighestTotalScore() throws {
        // "abc": a+b+c = −3, ab+c = −2.5, a+bc = −1.5 (best), abc is not a piece.
        let m = try model([("<unk>", 0), ("a", -1), ("b", -1), ("c", -1), ("ab", -1.5), ("bc", -0.5)])
        XCTAssertEqual(segment(m, "abc").map(\.1), ["a", "bc"])
        XCTAssertEqual(segment(m, "abc").map(\.0), [1, 5])
    }

    func testEqualTotalsKeepTheLongerPiece() throws {
        // "ab" as one piece (−2) or a+b (−1 −1): tokenizers keeps the first candidate found, the longer piece.
        let m = try model([("<unk>", 0), ("a", -1), ("b", -1), ("ab", -2)])
        XCTAssertEqual(segment(m, "ab").map(\.1), ["ab"])
    }

    func testUnknownCharactersInARowBecomeOneToken() throws {
        let m = try model([("<unk>", 0), ("a", -1), ("b", -1)])
        XCTAssertEqual(m.unknownScore, -11)
        let s = segment(m, "aé€b")
        XCTAssertEqual(s.map(\.0), [1, 0, 2])
        XCTAssertEqual(s.map(\.1), ["a", "é€", "b"])
    }

    func testMultiByteScalarsAreWholeCharacters() throws {
        let m = try model([("<unk>", 0), ("日", -2), ("本", -2), ("日本", -3)])
        XCTAssertEqual(segment(m, "日本日").map(\.1), ["日本", "日"])
    }

    func testLookupAndPieces() throws {
        let m = try model([("<unk>", 0), ("▁hello", -3), ("lo", -4)])
        XCTAssertEqual(m.id(of: "▁hello"), 1)
        XCTAssertNil(m.id(of: "hello"))
        XCTAssertNil(m.id(of: ""))
        XCTAssertEqual(m.piece(2), "lo")
        XCTAssertEqual(m.longestPieceBytes, "▁hello".utf8.count)
    }

    func testBadVocabulariesAreTypedErrors() throws {
        func reason(_ body: () throws -> UnigramModel) -> String? {
            do {
                _ = try body()
                return nil
            } catch let error as SentencePieceError { return error.description } catch { return "untyped \(error)" }
        }
        XCTAssertNotNil(reason { try UnigramModel(bytes: [], offsets: [0], scores: [], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 1], scores: [0, 0], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 1, 3], scores: [0, 0], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 2, 2], scores: [0, 0], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 1, 2], scores: [0, .nan], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 1, 2], scores: [0, 0], unknownID: 2) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: Array("aa".utf8), offsets: [0, 1, 2], scores: [0, 0], unknownID: 0) })
        XCTAssertNotNil(
            reason { try UnigramModel(bytes: [0x61, 0xFF], offsets: [0, 1, 2], scores: [0, 0], unknownID: 0) })
        XCTAssertNil(
            reason { try UnigramModel(bytes: Array("ab".utf8), offsets: [0, 1, 2], scores: [0, 0], unknownID: 0) })
    }
}
