import SentencePiece
import XCTest

/// The normalizer's bookkeeping on a small table, step by step.
final class XLMRobertaNormalizerTests: XCTestCase {
    // Tab → space, U+0001 removed, ﬁ → "fi", NBSP → space.
    let normalizer = try! XLMRobertaNormalizer(table: [0x09: [0x20], 0x01: [], 0xFB01: [0x66, 0x69], 0xA0: [0x20]])

    func describe(_ text: String) -> (String, [[Int]]) {
        let n = normalizer.normalize(text[...])
        var s = String.UnicodeScalarView()
        s.append(contentsOf: n.scalars)
        return (String(s), n.alignments.map { [$0.lowerBound, $0.upperBound] })
    }

    func testMetaspaceIsPrependedAndAlignedToTheFirstCharacter() {
        let (text, alignments) = describe("ab c")
        XCTAssertEqual(text, "▁ab▁c")
        XCTAssertEqual(alignments, [[0, 1], [0, 1], [1, 2], [2, 3], [3, 4]])
        XCTAssertEqual(describe(" a").0, "▁a")
        XCTAssertEqual(describe("").0, "")
    }

    func testRunsOfSpacesCollapseOntoTheLastSpace() {
        let (text, alignments) = describe("a \t  b")
        XCTAssertEqual(text, "▁a▁b")
        XCTAssertEqual(alignments[2], [4, 5])
    }

    func testExpansionAlignsEveryOutputToTheSource() {
        let (text, alignments) = describe("ﬁx")
        XCTAssertEqual(text, "▁fix")
        XCTAssertEqual(alignments, [[0, 3], [0, 3], [0, 3], [3, 4]])
    }

    func testARemovedCharacterIsSkipped() {
        let (text, alignments) = describe("a\u{01}b")
        XCTAssertEqual(text, "▁ab")
        XCTAssertEqual(alignments, [[0, 1], [0, 1], [2, 3]])
    }

    func testARemovedFirstCharacterShiftsAlignmentsAsInTokenizers() {
        // tokenizers loses the removal of a text's first character, so each following character
        // takes the alignment of the one before it; the port keeps that for identical offsets.
        let (text, alignments) = describe("\u{01}ab")
        XCTAssertEqual(text, "▁ab")
        XCTAssertEqual(alignments, [[0, 1], [0, 1], [1, 2]])
    }

    func testDecomposedClusterComposesAndDropsWhatFollowsTheKey() {
        // e + U+0301 is a key of the map (the decomposition of é): the cluster becomes é.
        let (text, _) = describe("e\u{301}")
        XCTAssertEqual(text, "▁é")
    }

    func testBadTablesAreTypedErrors() {
        XCTAssertThrowsError(try XLMRobertaNormalizer(table: [0xD800: [0x20]]))
        XCTAssertThrowsError(try XLMRobertaNormalizer(table: [0x20: [0x110000]]))
    }
}
