import XCTest

@testable import JSONText

/// The package's one JSON string escaper, in both styles, and the writer around it.
final class JSONWriterTests: XCTestCase {
    func testStandardStyle() {
        XCTAssertEqual(JSONWriter.quoted("a\"b\\c"), #""a\"b\\c""#)
        XCTAssertEqual(JSONWriter.quoted("\n\r\t\u{08}\u{0C}"), #""\n\r\t\b\f""#)
        XCTAssertEqual(JSONWriter.quoted("\u{01}\u{1F}\u{7F}"), "\"\\u0001\\u001f\u{7F}\"")
        // Valid JSON, but line ends in JavaScript: escaped, so a page's script keeps one string.
        XCTAssertEqual(JSONWriter.quoted("a\u{2028}b\u{2029}c"), #""a\u2028b\u2029c""#)
        XCTAssertEqual(JSONWriter.quoted("é😀/"), "\"é😀/\"")
    }

    /// What Python's `json.dumps` writes (the golden fixtures' `tojson` come from it).
    func testPythonStyle() {
        let plain = JSONWriter.Style.python(ensureASCII: false)
        let ascii = JSONWriter.Style.python(ensureASCII: true)
        XCTAssertEqual(JSONWriter.quoted("a\u{2028}b", style: plain), "\"a\u{2028}b\"")
        XCTAssertEqual(JSONWriter.quoted("\u{08}\u{0C}\u{01}", style: plain), #""\b\f\u0001""#)
        XCTAssertEqual(JSONWriter.quoted("é😀\u{7F}", style: ascii), #""\u00e9\ud83d\ude00\u007f""#)
        XCTAssertEqual(JSONWriter.quoted("é", style: plain), "\"é\"")
    }

    /// Whatever the text, the writer's string reads back as the same string.
    func testRoundTripThroughTheReader() throws {
        var random = SystemRandomNumberGenerator()
        let pool: [Unicode.Scalar] = ["a", "\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{2028}", "é", "😀", "\u{FFFF}", "/"]
        for _ in 0..<200 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0..<12, using: &random) { text.append(pool.randomElement(using: &random)!) }
            let string = String(text)
            for style in [JSONWriter.Style.standard, .python(ensureASCII: false), .python(ensureASCII: true)] {
                let node = try JSONReader.read(
                    JSONWriter.quoted(string, style: style), acceptsTruncation: false, repeatedKeys: .refuse)
                XCTAssertEqual(node.kind, .string(string), "\(style): \(string.debugDescription)")
            }
        }
        var json = JSONWriter()
        json.raw("{\"v\":")
        json.floats([1.5, .nan, 0.1])
        json.raw(",\"s\":")
        json.strings(["x", "y\u{2029}"])
        json.raw("}")
        XCTAssertEqual(json.text, #"{"v":[1.5,null,0.1],"s":["x","y\u2029"]}"#)
    }

    /// The structure calls place every comma and colon; nil strings are null.
    func testStructure() throws {
        var json = JSONWriter()
        json.beginObject()
        json.field("a", 1)
        json.field("b", "x\u{2028}")
        json.field("c", nil)
        json.key("d")
        json.beginArray()
        json.beginObject()
        json.endObject()
        json.integers([1, 2])
        json.bool(true)
        json.value(json: #"{"k":[]}"#)
        json.endArray()
        json.field("e", false)
        json.endObject()
        XCTAssertEqual(json.text, #"{"a":1,"b":"x\u2028","c":null,"d":[{},[1,2],true,{"k":[]}],"e":false}"#)
        XCTAssertNoThrow(try JSONReader.read(json.text, acceptsTruncation: false, repeatedKeys: .refuse))
    }
}
