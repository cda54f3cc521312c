import Foundation
import TestSupport
import VectorIndex
import XCTest

/// `IndexFile.Header`: its encoding pinned byte by byte, and shared by write, read and fingerprint(of:).
final class IndexFileHeaderTests: XCTestCase {
    let header = IndexFile.Header(
        version: 2, flags: 5, fingerprintLength: 0x65, count: 7, dimension: 5,
        idsLength: 0x62, metadataLength: 3, vectorsOffset: 0x140)

    func testEncodingIsPinned() {
        let expected: [UInt8] =
            Array("CEINDEX".utf8) + [0]
            + [2, 0, 0, 0] + [5, 0, 0, 0]
            + [0x65, 0, 0, 0, 0, 0, 0, 0] + [7, 0, 0, 0, 0, 0, 0, 0] + [5, 0, 0, 0, 0, 0, 0, 0]
            + [0x62, 0, 0, 0, 0, 0, 0, 0] + [3, 0, 0, 0, 0, 0, 0, 0] + [0x40, 0x01, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(header.encode(), expected)
        XCTAssertEqual(IndexFile.Header.size, 64)
    }

    func testParseReadsWhatEncodeWrites() throws {
        let parsed = try header.encode().withUnsafeBytes { try IndexFile.Header.parse($0, path: "h") }
        XCTAssertEqual(parsed, header)
    }

    func testAWrittenFileBeginsWithTheHeaderItsSectionsNeed() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("header-\(UUID().uuidString).index")
        defer { try? FileManager.default.removeItem(at: url) }
        var rng = SeededGenerator(seed: 4)
        var index = FlatIndex(dimension: 70)
        try index.add(contentsOf: (0..<3).map { ("row\($0)", rng.floats(70)) })
        index.buildCodes([.int8, .binary], int8Scheme: .perVector)
        let fingerprint = IndexFingerprint(
            modelIdentifier: "m", dimension: 70, pooling: "mean", normalized: true, tokenizerHash: "t")
        try IndexFile.write(StoredIndex(index: index, fingerprint: fingerprint, metadata: Data("abc".utf8)), to: url)
        let bytes = try Data(contentsOf: url)
        let parsed = try bytes.withUnsafeBytes { try IndexFile.Header.parse($0, path: url.path) }
        XCTAssertEqual(parsed.encode(), Array(bytes.prefix(64)))
        XCTAssertEqual(parsed.version, IndexFile.version)
        XCTAssertEqual(parsed.flags, 1 | 2 | 4, "int8, per vector, binary")
        XCTAssertEqual(parsed.fingerprintLength, try JSONEncoder().encode(fingerprint).count)
        XCTAssertEqual(parsed.count, 3)
        XCTAssertEqual(parsed.dimension, 70)
        XCTAssertEqual(parsed.idsLength, 3 * (4 + 4))
        XCTAssertEqual(parsed.metadataLength, 3)
        XCTAssertEqual(parsed.vectorsOffset, (64 + parsed.fingerprintLength + 24 + 3 + 63) / 64 * 64)
        XCTAssertEqual(try IndexFile.fingerprint(of: url), fingerprint)
    }

    func testParseErrors() {
        func parse(_ bytes: [UInt8], minimumFileSize: Int = 64) -> VectorIndexError? {
            do {
                _ = try bytes.withUnsafeBytes {
                    try IndexFile.Header.parse($0, path: "p", minimumFileSize: minimumFileSize)
                }
                return nil
            } catch {
                return error as? VectorIndexError
            }
        }
        var bytes = header.encode()
        XCTAssertEqual(parse(Array("CEINDEY".utf8)), .notAnIndexFile(path: "p"))
        XCTAssertEqual(parse([]), .notAnIndexFile(path: "p"))
        XCTAssertEqual(parse(Array(bytes.prefix(63))), .truncatedFile(path: "p", expectedBytes: 64, actualBytes: 63))
        XCTAssertEqual(parse(bytes, minimumFileSize: 80), .truncatedFile(path: "p", expectedBytes: 80, actualBytes: 64))
        bytes[8] = 3
        XCTAssertEqual(parse(bytes), .unsupportedVersion(path: "p", version: 3))
        bytes[8] = 1
        XCTAssertEqual(parse(bytes), .corruptFile(path: "p", reason: "reserved field is 5"))
        bytes[8] = 2
        bytes[12] = 2
        XCTAssertEqual(
            parse(bytes), .corruptFile(path: "p", reason: "unknown codes flags 2"), "per vector without int8")
        bytes[12] = 8
        XCTAssertEqual(parse(bytes), .corruptFile(path: "p", reason: "unknown codes flags 8"))
        bytes[12] = 0
        bytes[39] = 0x20
        XCTAssertEqual(
            parse(bytes), .corruptFile(path: "p", reason: "field at byte 32 is \(UInt64(0x20) << 56 | 5), too large"))
    }

    func testFingerprintOfATruncatedFileIsATypedError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("header-\(UUID().uuidString).index")
        defer { try? FileManager.default.removeItem(at: url) }
        let fingerprint = IndexFingerprint(
            modelIdentifier: "m", dimension: 2, pooling: "cls", normalized: false, tokenizerHash: "t")
        try IndexFile.write(StoredIndex(index: FlatIndex(dimension: 2), fingerprint: fingerprint), to: url)
        let whole = try Data(contentsOf: url)
        let jsonEnd = 64 + (try JSONEncoder().encode(fingerprint).count)
        for length in [0, 5, 63, 64, jsonEnd - 1] {
            try whole.prefix(length).write(to: url)
            XCTAssertThrowsError(try IndexFile.fingerprint(of: url), "length \(length)") {
                XCTAssertTrue($0 is VectorIndexError, "\($0)")
            }
        }
        try whole.prefix(jsonEnd).write(to: url)
        XCTAssertEqual(try IndexFile.fingerprint(of: url), fingerprint, "the header and fingerprint alone are enough")
    }
}
