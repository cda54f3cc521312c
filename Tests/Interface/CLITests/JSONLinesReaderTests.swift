import Foundation
import XCTest

@testable import EmbeddingsCLI

/// `JSONLinesReader` on bytes handed over in reads of chosen sizes: the lines it returns, and
/// that it touches each byte a bounded number of times (a 5 MB line once took 3.7 s).
final class JSONLinesReaderTests: XCTestCase {
    /// A reader over `input`, handed over at most `chunk` bytes per read.
    func reader(_ input: [UInt8], chunk: Int) -> JSONLinesReader {
        var offset = 0
        return JSONLinesReader { wanted in
            let n = min(wanted, chunk, input.count - offset)
            defer { offset += n }
            return Data(input[offset..<(offset + n)])
        }
    }

    func lines(_ text: String, chunk: Int) -> [String] {
        var reader = reader(Array(text.utf8), chunk: chunk)
        var lines = [String]()
        while let line = reader.nextLine() { lines.append(String(decoding: line, as: UTF8.self)) }
        return lines
    }

    func testLinesAreTheSameWhateverTheReadSize() {
        let text = "first\n\nthird é\r\nlast without newline"
        for chunk in [1, 2, 3, 7, 1 << 16] {
            XCTAssertEqual(
                lines(text, chunk: chunk), ["first", "", "third é\r", "last without newline"], "reads of \(chunk)")
        }
        XCTAssertEqual(lines("", chunk: 4), [])
        XCTAssertEqual(lines("\n", chunk: 4), [""])
        XCTAssertEqual(lines("a\n", chunk: 1), ["a"], "no empty line after a final newline")
    }

    func testRecordsSkipBlankLinesAndCountLines() throws {
        let text = "{\"id\": \"a\", \"text\": \"x\"}\r\n \t\n{\"id\": \"b\", \"text\": \"y\"}"
        var reader = reader(Array(text.utf8), chunk: 5)
        XCTAssertEqual(try reader.next()?.id, "a")
        XCTAssertEqual(try reader.next()?.text, "y")
        XCTAssertEqual(reader.lineNumber, 3)
        XCTAssertNil(try reader.next())
    }

    func testOneLongLineIsSearchedOnce() throws {
        let text = "{\"id\": \"long\", \"text\": \"" + String(repeating: "word ", count: 1_000_000) + "\"}\n"
        let input = Array(text.utf8)
        var reader = reader(input, chunk: JSONLinesReader.readSize)
        let record = try XCTUnwrap(try reader.next())
        XCTAssertEqual(record.text.utf8.count, 5_000_000)
        XCTAssertNil(try reader.next())
        XCTAssertLessThanOrEqual(reader.bytesSearched, input.count, "each byte searched at most once")
        XCTAssertEqual(reader.bytesMoved, 0, "nothing consumed, nothing moved")
    }

    func testManyShortLinesMoveEachByteAtMostOnce() {
        let input = Array(String(repeating: "{\"id\":\"i\",\"text\":\"t\"}\n", count: 200_000).utf8)
        var reader = reader(input, chunk: JSONLinesReader.readSize)
        var count = 0
        while reader.nextLine() != nil { count += 1 }
        XCTAssertEqual(count, 200_000)
        XCTAssertLessThanOrEqual(reader.bytesSearched, input.count)
        XCTAssertLessThanOrEqual(reader.bytesMoved, input.count)
    }
}
