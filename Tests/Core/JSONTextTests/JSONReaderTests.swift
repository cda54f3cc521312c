import Foundation
import JSONText
import XCTest

/// The one JSON reader behind `JinjaValue(json:)` and `GeneratedContent(json:)`: strict reading,
/// reading text cut short, repeated keys, numbers as written, and its bounds.
final class JSONReaderTests: XCTestCase {
    private let documents = [
        #"{"name": "Zoë 🐱", "age": 3, "tags": ["calm", "grey"], "owner": null, "indoor": true, "w": -4.25e-1}"#,
        #"[1, -2, 3.5, 1E3, 0, -0.0, "a\"b\\c\n\u0001\/", [], {}, false]"#,
        #""snow ❄️ and 𝄞 \ud834\udd1e""#,
        " \t\n 42 \r\n",
    ]

    private func strict(_ text: String) throws(JSONReadError) -> JSONNode {
        try JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .refuse)
    }

    private func cutShort(_ text: String) throws(JSONReadError) -> JSONNode {
        try JSONReader.read(text, acceptsTruncation: true, repeatedKeys: .refuse)
    }

    /// Whole documents read the same in both modes and as Foundation reads them.
    func testWholeDocumentsAgreeWithFoundation() throws {
        for text in documents {
            let node = try strict(text)
            XCTAssertTrue(node.isComplete || text.trimmingCharacters(in: .whitespacesAndNewlines) == "42", text)
            let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            XCTAssertTrue(Self.same(node, foundation), text)
            // Read allowing truncation, only a number the text ends in may still go on.
            XCTAssertEqual(try cutShort(text).kind, node.kind, text)
        }
        XCTAssertFalse(try cutShort("42").isComplete, "a number at the end may go on")
        XCTAssertTrue(try strict("42").isComplete)
    }

    /// Every byte prefix of a document: allowing truncation, it reads, marked incomplete; strictly,
    /// it is an error unless it is itself whole JSON.
    func testEveryPrefixReadsCutShortAndIsAnErrorStrictly() throws {
        for text in documents.prefix(3) {
            let bytes = Array(text.utf8)
            for end in 1..<bytes.count {
                let prefix = String(decoding: bytes[..<end], as: UTF8.self)
                if prefix.utf8.count != end { continue }  // a character split: not text of its own
                let node: JSONNode
                do { node = try cutShort(prefix) } catch { return XCTFail("\(end) bytes of \(text): \(error)") }
                XCTAssertFalse(node.isComplete, "\(end) bytes of \(text)")
                XCTAssertThrowsError(try strict(prefix), "\(end) bytes of \(text)") { error in
                    XCTAssertTrue((error as? JSONReadError)?.offset ?? -1 <= end)
                }
            }
        }
        // A number's start is kept as written.
        for start in ["-", "1.", "2e", "2e+", "-0.5E-"] {
            XCTAssertEqual(
                try cutShort(start),
                JSONNode(kind: .number(start, isInteger: !start.contains { "eE.".contains($0) }), isComplete: false),
                start)
        }
    }

    func testMalformedTextIsAnErrorWithItsOffset() {
        let cases: [(String, Int)] = [
            ("", 0), ("   ", 3), ("}", 0), (#"{"a" 1}"#, 5), ("[1 2]", 3), ("tru e", 3), ("01", 0), (#""\x""#, 2),
            ("[1,]", 3), ("[1] x", 4), (#""\uDC00""#, 7), ("\"\u{01}\"", 1), ("-a", 1), ("1.e5", 2), ("{1: 2}", 1),
            (#""\ud800\u0041""#, 13),
        ]
        for (text, offset) in cases {
            for truncation in [false, true] {
                XCTAssertThrowsError(
                    try JSONReader.read(text, acceptsTruncation: truncation, repeatedKeys: .keepLast), text
                ) { error in
                    XCTAssertEqual((error as? JSONReadError)?.offset, offset, "\(text): \(error)")
                }
            }
        }
    }

    func testRepeatedKeysKeepTheFirstPlaceAndTheLastValueOrAreRefused() throws {
        let text = #"{"a": 1, "b": 2, "a": 3}"#
        let node = try JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .keepLast)
        guard case .object(let members) = node.kind else { return XCTFail("not an object") }
        XCTAssertEqual(members.map(\.key), ["a", "b"])
        XCTAssertEqual(members[0].value.kind, .number("3", isInteger: true))
        XCTAssertThrowsError(try strict(text)) { error in
            XCTAssertEqual((error as? JSONReadError)?.message, "a repeated property 'a'")
        }
    }

    func testNestingIsBounded() throws {
        let limit = JSONReader.maximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        XCTAssertNoThrow(try strict(deepest))
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        XCTAssertThrowsError(try strict(tooDeep))
        XCTAssertThrowsError(try cutShort(String(repeating: "{\"a\":", count: 100_000)))
    }

    /// Whether a node holds what Foundation read from the same text.
    private static func same(_ node: JSONNode, _ value: Any) -> Bool {
        switch node.kind {
        case .null: return value is NSNull
        case .bool(let b): return value as? Bool == b
        case .number(let text, _): return (value as? NSNumber)?.doubleValue == Double(text)
        case .string(let s): return value as? String == s
        case .array(let elements):
            guard let array = value as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let object = value as? [String: Any], object.count == members.count else { return false }
            return members.allSatisfy { member in object[member.key].map { same(member.value, $0) } ?? false }
        }
    }
}
