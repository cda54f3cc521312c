import Foundation
import LanguageModels
import TestSupport
import XCTest

/// JSON in and out of `GeneratedContent`, whole and cut short at every byte, and the conversions.
final class GeneratedContentTests: XCTestCase {
    func testWholeDocumentsRoundTrip() throws {
        let documents = [
            #"{"name":"Mia","age":3,"tags":["calm","grey"],"owner":null,"indoor":true,"weight":4.25}"#,
            #"[1,-2,3.5,1e3,"a\"b\\c\n\u0001",[],{}]"#,
            #""snow ❄️ and 𝄞""#,
            "false", "null",
        ]
        for text in documents {
            let content = try GeneratedContent(json: text)
            XCTAssertTrue(content.isComplete || text.allSatisfy { $0.isNumber }, text)
            let again = try GeneratedContent(json: content.jsonString)
            XCTAssertEqual(again.kind, content.kind, text)
            // The same values as Foundation reads.
            let ours = try JSONSerialization.jsonObject(with: Data(content.jsonString.utf8), options: .fragmentsAllowed)
            let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            XCTAssertEqual(ours as? NSObject, theirs as? NSObject, text)
        }
        let object = try GeneratedContent(json: #"{"b": 1, "a": 2}"#)
        guard case .structure(_, let keys) = object.kind else { return XCTFail() }
        XCTAssertEqual(keys, ["b", "a"], "keys keep their order")
        XCTAssertEqual(object.jsonString, #"{"b":1,"a":2}"#)
    }

    /// Every prefix of a document reads, as incomplete content whose JSON is valid, and the
    /// properties already closed keep their final values.
    func testEveryPrefixReads() throws {
        let text =
            #"{"name": "Zoë 🐱", "age": 12, "scores": [1.5, -2e2, 3], "nested": {"ok": false, "note": "a\"b\u00e9"}}"#
        let bytes = Array(text.utf8)
        for end in 0..<bytes.count {
            let prefix = String(decoding: bytes[..<end], as: UTF8.self)
            guard !prefix.isEmpty, !prefix.allSatisfy(\.isWhitespace) else { continue }
            let content: GeneratedContent
            do { content = try GeneratedContent(json: prefix) } catch {
                return XCTFail("prefix of \(end) bytes: \(error)")
            }
            XCTAssertFalse(content.isComplete, "prefix of \(end) bytes")
            XCTAssertNoThrow(
                try JSONSerialization.jsonObject(with: Data(content.jsonString.utf8), options: .fragmentsAllowed),
                "\(end): \(content.jsonString)")
            if end > 20, case .structure(let properties, _) = content.kind {
                XCTAssertEqual(properties["name"], GeneratedContent(kind: .string("Zoë 🐱")))
            }
        }
        XCTAssertTrue(try GeneratedContent(json: text).isComplete)
    }

    func testInvalidJSONIsATypedError() {
        for bad in [
            "", "{", "}", #"{"a" 1}"#, "[1 2]", "tru e", "01", #""\x""#, #"{"a":1,"a":2}"#, "[1,]x", #""\uDC00""#,
            "\u{01}",
        ] {
            if bad == "{" {
                XCTAssertNoThrow(try GeneratedContent(json: bad))
                continue
            }
            XCTAssertThrowsError(try GeneratedContent(json: bad), bad) { error in
                XCTAssertTrue(error is GeneratedContentError, "\(bad): \(error)")
            }
        }
        let deep = String(repeating: "[", count: 10_000)
        XCTAssertThrowsError(try GeneratedContent(json: deep))
    }

    func testValuesAndProperties() throws {
        let content = try GeneratedContent(json: #"{"name":"Mia","age":3,"weight":4.5,"tags":["a","b"],"owner":null}"#)
        XCTAssertEqual(try content.value(String.self, forProperty: "name"), "Mia")
        XCTAssertEqual(try content.value(Int.self, forProperty: "age"), 3)
        XCTAssertEqual(try content.value(Double.self, forProperty: "weight"), 4.5)
        XCTAssertEqual(try content.value([String].self, forProperty: "tags"), ["a", "b"])
        XCTAssertEqual(try content.value(String?.self, forProperty: "owner"), nil)
        XCTAssertEqual(try content.value(String?.self, forProperty: "missing"), nil)
        XCTAssertThrowsError(try content.value(Int.self, forProperty: "weight"))
        XCTAssertThrowsError(try content.value(String.self, forProperty: "missing"))
        XCTAssertThrowsError(try content.value(String.self))
        let made = GeneratedContent(properties: ["name": "Mia", "age": 3, "tags": ["a", "b"]])
        XCTAssertEqual(made.jsonString, #"{"name":"Mia","age":3,"tags":["a","b"]}"#)
        XCTAssertEqual(
            GeneratedContent(elements: [1, "x"] as [any ConvertibleToGeneratedContent]).jsonString, #"[1,"x"]"#)
    }
}
