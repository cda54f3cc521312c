import JSONText
import XCTest

/// `JSONNodeDecoder`: typed fields from a tree read once, with a `JSONNode` field kept as read
/// (key order included), and the standard errors with their coding paths.
final class JSONNodeDecoderTests: XCTestCase {
    private struct Request: Decodable, Equatable {
        let name: String
        let count: Int
        let ratio: Double?
        let flags: [Bool]
        let nested: Nested?
        let schema: JSONNode?

        struct Nested: Decodable, Equatable {
            let id: UInt8
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONNodeDecoder().decode(
            type, from: JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .keepLast))
    }

    private func path(_ error: any Error) -> String {
        let context: DecodingError.Context
        switch error as? DecodingError {
        case .keyNotFound(let key, let c)?: return (c.codingPath + [key]).map(\.stringValue).joined(separator: ".")
        case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?, .dataCorrupted(let c)?: context = c
        default: return "not a DecodingError: \(error)"
        }
        return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    func testFieldsAndANodeKeptInKeyOrder() throws {
        let request = try decode(
            Request.self,
            #"{"name": "a", "count": 2.0, "flags": [true, false], "nested": {"id": 7},"#
                + #" "schema": {"z": 1, "a": {"y": null, "b": [1.50]}}, "unknown": "ignored"}"#)
        XCTAssertEqual(request.name, "a")
        XCTAssertEqual(request.count, 2)
        XCTAssertNil(request.ratio)
        XCTAssertEqual(request.flags, [true, false])
        XCTAssertEqual(request.nested, .init(id: 7))
        guard case .object(let members)? = request.schema?.kind else { return XCTFail("schema not an object") }
        XCTAssertEqual(members.map(\.key), ["z", "a"])
        guard case .object(let inner) = members[1].value.kind, case .array(let numbers) = inner[1].value.kind else {
            return XCTFail("nested members lost")
        }
        XCTAssertEqual(inner.map(\.key), ["y", "b"])
        XCTAssertEqual(numbers.first?.kind, .number("1.50", isInteger: false))
    }

    func testNullOptionalAndRepeatedKey() throws {
        let request = try decode(
            Request.self, #"{"name": "x", "name": "y", "count": -3, "ratio": null, "flags": [], "schema": null}"#)
        XCTAssertEqual(request.name, "y")
        XCTAssertEqual(request.count, -3)
        XCTAssertNil(request.ratio)
        XCTAssertNil(request.schema)
    }

    func testErrorsNameTheirPath() {
        let cases: [(String, String)] = [
            (#"{"count": 1, "flags": []}"#, "name"),  // missing key
            (#"{"name": 1, "count": 1, "flags": []}"#, "name"),  // wrong type
            (#"{"name": "a", "count": 1.5, "flags": []}"#, "count"),  // not whole
            (#"{"name": "a", "count": 1e30, "flags": []}"#, "count"),  // out of range
            (#"{"name": "a", "count": 1, "flags": [true, 3]}"#, "flags.1"),
            (#"{"name": "a", "count": 1, "flags": [], "nested": {"id": 300}}"#, "nested.id"),
            (#"{"name": "a", "count": 1, "flags": [], "nested": {"id": null}}"#, "nested.id"),
            (#"{"name": "a", "count": 1, "flags": [], "ratio": 1e999}"#, "ratio"),
            (#"[1]"#, ""),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try decode(Request.self, text), text) { error in
                XCTAssertEqual(path(error), expected, text)
            }
        }
    }

    func testNullIsValueNotFoundAndNodesNeedThisDecoder() {
        XCTAssertThrowsError(try decode(Request.self, #"{"name": null, "count": 1, "flags": []}"#)) { error in
            guard case .valueNotFound? = error as? DecodingError else { return XCTFail("\(error)") }
        }
        // Another decoder cannot hand over a node.
        XCTAssertThrowsError(try JSONDecoder().decode(JSONNode.self, from: Data("{}".utf8)))
    }

    func testUnkeyedNilAndScalars() throws {
        XCTAssertEqual(try decode([Int?].self, "[1, null, 3]"), [1, nil, 3])
        XCTAssertEqual(try decode(String.self, #""ü\n""#), "ü\n")
        XCTAssertEqual(try decode(Float.self, "0.25"), 0.25)
        XCTAssertEqual(try decode(Int64.self, "-9223372036854775808"), Int64.min)
        XCTAssertThrowsError(try decode(UInt.self, "-1"))
        XCTAssertThrowsError(try decode([Int].self, "{}"))
    }
}
