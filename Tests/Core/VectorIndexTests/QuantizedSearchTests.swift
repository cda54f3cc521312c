import Foundation
import LinearAlgebra
import TestSupport
import XCTest

@testable import VectorIndex

/// int8 and binary codes: the scan kernels on every path against plain loops, codes in step with
/// every change, recall with rescoring, files, and bad arguments.
final class QuantizedSearchTests: XCTestCase {
    /// Points around `clusters` random centres, so that nearest neighbours mean something.
    func clustered(count: Int, dimension: Int, clusters: Int, spread: Float, seed: UInt64) -> [Float] {
        var rng = SeededGenerator(seed: seed)
        let centres = (0..<clusters).map { _ in (0..<dimension).map { _ in rng.gaussian() } }
        var values = [Float]()
        values.reserveCapacity(count * dimension)
        for i in 0..<count {
            let centre = centres[i % clusters]
            values += centre.map { $0 + spread * rng.gaussian() }
        }
        return values
    }

    func testInt8KernelsMatchTheReferenceOnEveryPath() {
        var rng = SeededGenerator(seed: 11)
        XCTAssertTrue(CodeKernels.int8Paths.contains(.generic))
        for dimension in [1, 7, 31, 32, 33, 63, 64, 65, 100, 384, 385] {
            for rows in [1, 2, 3, 5] {
                var codes = (0..<(rows * dimension)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                var query = (0..<dimension).map { _ in Int8.random(in: -63...63, using: &rng) }
                if dimension > 2 {  // the extremes, where 16-bit pair sums would overflow if unbounded
                    codes[0] = 255
                    codes[1] = 255
                    query[0] = 63
                    query[1] = 63
                    query[2] = -63
                }
                let expected = (0..<rows).map {
                    ReferenceKernels.int8Dot(Array(codes[($0 * dimension)..<(($0 + 1) * dimension)]), query)
                }
                for path in CodeKernels.int8Paths {
                    var out = [Int32](repeating: -1, count: rows)
                    let ran = CodeKernels.int8DotRows(
                        codes: codes, rows: rows, dimension: dimension, query: query, into: &out, path: path)
                    XCTAssertTrue(ran)
                    XCTAssertEqual(out, expected, "\(path) \(rows)×\(dimension)")
                }
            }
        }
        // A path the CPU lacks is refused, not run.
        for path in CodeKernels.Path.allCases where !CodeKernels.int8Paths.contains(path) {
            var out: [Int32] = [7]
            XCTAssertFalse(
                CodeKernels.int8DotRows(codes: [1], rows: 1, dimension: 1, query: [1], into: &out, path: path),
                "\(path)")
            XCTAssertEqual(out, [7])
        }
    }

    func testHammingKernelsMatchTheReferenceOnEveryPath() {
        var rng = SeededGenerator(seed: 12)
        XCTAssertTrue(CodeKernels.hammingPaths.contains(.generic))
        for words in [1, 2, 5, 6, 7] {
            for rows in [1, 2, 3] {
                let codes = (0..<(rows * words)).map { _ in rng.next() }
                var query = (0..<words).map { _ in rng.next() }
                query[0] = ~codes[0]  // all 64 bits differ
                let expected = (0..<rows).map {
                    ReferenceKernels.hamming(Array(codes[($0 * words)..<(($0 + 1) * words)]), query)
                }
                for path in CodeKernels.hammingPaths {
                    var out = [UInt32](repeating: 0, count: rows)
                    XCTAssertTrue(
                        CodeKernels.hammingRows(
                            codes: codes, rows: rows, words: words, query: query, into: &out, path: path))
                    XCTAssertEqual(out, expected, "\(path) \(rows)×\(words)")
                }
            }
        }
    }

    func testQuantizersEncodeCloselyAndClamp() throws {
        let dimension = 33
        let values = clustered(count: 200, dimension: dimension, clusters: 5, spread: 0.3, seed: 3)
        let index = try FlatIndex(dimension: dimension, ids: (0..<200).map { "v\($0)" }, rowMajorVectors: values)
        index.withUnsafeVectors { unit in
            let q = Int8Quantizer.train(.perDimension, vectors: unit, dimension: dimension)
            XCTAssertEqual(q.scheme, .perDimension)
            var codes = [UInt8](repeating: 0, count: dimension)
            for r in [0, 57, 199] {
                _ = codes.withUnsafeMutableBufferPointer {
                    q.encode(unit.baseAddress! + r * dimension, into: $0.baseAddress!)
                }
                for j in 0..<dimension {
                    let decoded = q.minimum[j] + q.step[j] * Float(codes[j])
                    XCTAssertEqual(decoded, unit[r * dimension + j], accuracy: q.step[j] / 2 + 1e-6)
                }
            }
            // Outside the learned range: clamped to 0 or 255.
            let outside: [Float] = (0..<dimension).map { (j: Int) -> Float in
                let low: Float = q.minimum[j] - 1
                let high: Float = q.minimum[j] + 255 * q.step[j] + 1
                return j % 2 == 0 ? low : high
            }
            _ = outside.withUnsafeBufferPointer { x in
                codes.withUnsafeMutableBufferPointer { q.encode(x.baseAddress!, into: $0.baseAddress!) }
            }
            XCTAssertEqual(codes, (0..<dimension).map { (j: Int) -> UInt8 in j % 2 == 0 ? 0 : 255 })
            let perVector = Int8Quantizer(perVectorDimension: dimension)
            let scale = codes.withUnsafeMutableBufferPointer {
                perVector.encode(unit.baseAddress!, into: $0.baseAddress!)
            }
            let largest = (0..<dimension).map { abs(unit[$0]) }.max()!
            XCTAssertEqual(scale, largest)
            for j in 0..<dimension {
                XCTAssertEqual((Float(codes[j]) - 128) / 127 * scale, unit[j], accuracy: scale / 254 + 1e-6)
            }
        }
        XCTAssertThrowsError(try Int8Quantizer(minimum: [0, 0], step: [1])) { XCTAssertTrue($0 is VectorIndexError) }
        XCTAssertThrowsError(try Int8Quantizer(minimum: [.nan], step: [1])) { XCTAssertTrue($0 is VectorIndexError) }
        XCTAssertThrowsError(try Int8Quantizer(minimum: [0], step: [-1])) { XCTAssertTrue($0 is VectorIndexError) }
    }

    /// On seeded clustered data: recall@10 against exact search, and exact scores on every hit.
    func testRecallWithRescoringAndExactScores() throws {
        let n = 6_000
        let dimension = 384  // large enough that the scans split over the cores
        let values = clustered(count: n, dimension: dimension, clusters: 300, spread: 0.7, seed: 5)
        var index = try FlatIndex(dimension: dimension, ids: (0..<n).map { "v\($0)" }, rowMajorVectors: values)
        index.buildCodes([.int8, .binary])
        XCTAssertEqual(index.precisions, [.exact, .int8, .binary])
        var rng = SeededGenerator(seed: 6)
        var found = [SearchPrecision: Int]()
        var total = 0
        var perVector = index
        perVector.buildCodes([.int8], int8Scheme: .perVector)
        var foundPerVector = 0
        for _ in 0..<40 {
            let base = Int.random(in: 0..<n, using: &rng)
            let query = (0..<dimension).map { values[base * dimension + $0] + 0.5 * rng.gaussian() }
            let exact = try index.search(query, k: 10)
            let exactScores = Dictionary(uniqueKeysWithValues: exact.map { ($0.id, $0.score) })
            total += exact.count
            for precision in [SearchPrecision.int8, .binary] {
                let hits = try index.search(query, k: 10, precision: precision)
                XCTAssertEqual(hits.count, 10)
                XCTAssertEqual(hits.map(\.score), hits.map(\.score).sorted(by: >), "best first")
                for hit in hits {
                    XCTAssertEqual(
                        hit.score,
                        index.vector(for: hit.id).map { VectorMath.dot($0, VectorMath.normalized(query)) } ?? .nan,
                        accuracy: 1e-5)
                    if let exactScore = exactScores[hit.id] {
                        XCTAssertEqual(hit.score, exactScore, "rescored with the same kernel")
                    }
                }
                found[precision, default: 0] += hits.filter { exactScores[$0.id] != nil }.count
            }
            foundPerVector += try perVector.search(query, k: 10, precision: .int8).filter { exactScores[$0.id] != nil }
                .count
            // With every row rescored, the codes cannot lose anything.
            XCTAssertEqual(try index.search(query, k: 10, precision: .binary, rescore: n).map(\.id), exact.map(\.id))
        }
        let int8Recall = Double(found[.int8]!) / Double(total)
        let binaryRecall = Double(found[.binary]!) / Double(total)
        XCTAssertGreaterThanOrEqual(int8Recall, 0.99, "int8 recall@10")
        XCTAssertGreaterThanOrEqual(Double(foundPerVector) / Double(total), 0.97, "int8 per-vector recall@10")
        XCTAssertGreaterThanOrEqual(binaryRecall, 0.90, "binary recall@10")
    }

    func testForcedPathsGiveTheSameHits() throws {
        let n = 500
        let dimension = 65
        let values = clustered(count: n, dimension: dimension, clusters: 20, spread: 0.5, seed: 8)
        var index = try FlatIndex(dimension: dimension, ids: (0..<n).map { "v\($0)" }, rowMajorVectors: values)
        index.buildCodes([.int8, .binary])
        let query = Array(values[0..<dimension])
        for precision in [SearchPrecision.int8, .binary] {
            let reference = try index.search(
                query, k: 7, precision: precision, rescore: 3, isIncluded: nil, int8Path: .generic,
                hammingPath: .generic)
            for path in precision == .int8 ? CodeKernels.int8Paths : CodeKernels.hammingPaths {
                let hits = try index.search(
                    query, k: 7, precision: precision, rescore: 3, isIncluded: nil,
                    int8Path: precision == .int8 ? path : nil, hammingPath: precision == .binary ? path : nil)
                XCTAssertEqual(hits, reference, "\(precision) on \(path)")
            }
        }
    }

    func testCodesFollowAddUpdateAndRemove() throws {
        let dimension = 70
        var rng = SeededGenerator(seed: 21)
        var index = FlatIndex(dimension: dimension)
        try index.add(contentsOf: (0..<50).map { ("a\($0)", rng.floats(dimension)) })
        index.buildCodes([.int8, .binary])
        let quantizer = try XCTUnwrap(index.int8Quantizer)
        try index.add(contentsOf: (0..<10).map { ("b\($0)", rng.floats(dimension)) })
        try index.update(id: "a3", vector: rng.floats(dimension))
        XCTAssertTrue(index.remove(id: "a7"))
        XCTAssertTrue(index.remove(id: "b9"))
        var fresh = index
        try fresh.buildInt8Codes(quantizer: quantizer)
        fresh.buildCodes([.binary])
        XCTAssertEqual(
            index.int8Table?.codes.withUnsafeBufferPointer(Array.init),
            fresh.int8Table?.codes.withUnsafeBufferPointer(Array.init))
        XCTAssertEqual(
            index.binaryTable?.codes.withUnsafeBufferPointer(Array.init),
            fresh.binaryTable?.codes.withUnsafeBufferPointer(Array.init))
        XCTAssertEqual(index.int8Table?.codes.count, index.count * dimension)
        XCTAssertEqual(index.binaryTable?.codes.count, index.count * 2)
        // Per-vector codes keep their scales in step too.
        var perVector = index
        perVector.buildCodes([.int8], int8Scheme: .perVector)
        try perVector.add(id: "c", vector: rng.floats(dimension))
        XCTAssertTrue(perVector.remove(id: "a0"))
        var refreshed = perVector
        refreshed.buildCodes([.int8], int8Scheme: .perVector)
        XCTAssertEqual(
            perVector.int8Table?.scales.withUnsafeBufferPointer(Array.init),
            refreshed.int8Table?.scales.withUnsafeBufferPointer(Array.init))
        XCTAssertEqual(
            perVector.int8Table?.codes.withUnsafeBufferPointer(Array.init),
            refreshed.int8Table?.codes.withUnsafeBufferPointer(Array.init))
        // A filter applies to the candidates.
        let query = try XCTUnwrap(index.vector(for: "a1"))
        let hits = try index.search(query, k: 5, precision: .int8, isIncluded: { $0.hasPrefix("b") })
        XCTAssertTrue(hits.allSatisfy { $0.id.hasPrefix("b") }, "\(hits)")
        XCTAssertEqual(hits.map(\.id), try index.search(query, k: 5, isIncluded: { $0.hasPrefix("b") }).map(\.id))
    }

    func testBadArgumentsAreTypedErrors() throws {
        var index = try FlatIndex(dimension: 3, ids: ["a", "b"], rowMajorVectors: [1, 0, 0, 0, 1, 0])
        XCTAssertThrowsError(try index.search([1, 0, 0], k: 1, precision: .int8)) {
            XCTAssertEqual($0 as? VectorIndexError, .codesMissing(.int8))
        }
        index.buildCodes([.int8])
        XCTAssertThrowsError(try index.search([1, 0, 0], k: 1, precision: .binary)) {
            XCTAssertEqual($0 as? VectorIndexError, .codesMissing(.binary))
        }
        XCTAssertThrowsError(try index.search([1, 0, 0], k: 1, precision: .int8, rescore: 0)) {
            guard case .invalidCodes = $0 as? VectorIndexError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try index.search([1, .nan, 0], k: 1, precision: .int8)) {
            XCTAssertEqual($0 as? VectorIndexError, .nonFiniteValue(id: "<query>", component: 1))
        }
        XCTAssertEqual(try index.search([1, 0, 0], k: 0, precision: .int8), [])
        XCTAssertEqual(try index.search([1, 0, 0], k: .max, precision: .int8).map(\.id), ["a", "b"])
        XCTAssertThrowsError(try index.buildInt8Codes(quantizer: Int8Quantizer(perVectorDimension: 4))) {
            guard case .invalidCodes = $0 as? VectorIndexError else { return XCTFail("\($0)") }
        }
        // An empty index with codes: nothing to find, nothing to crash on.
        var empty = FlatIndex(dimension: 3)
        empty.buildCodes([.int8, .binary])
        XCTAssertEqual(try empty.search([1, 0, 0], k: 3, precision: .binary), [])
        try empty.add(id: "x", vector: [0, 0, 1])
        XCTAssertEqual(try empty.search([0, 0, 1], k: 3, precision: .int8).map(\.id), ["x"])
    }
}

/// Codes in index files: round trip, older files, truncation and corruption, and opening
/// without reading the vectors.
final class QuantizedIndexFileTests: XCTestCase {
    var folder: URL!
    let fingerprint = IndexFingerprint(
        modelIdentifier: "test/model", dimension: 70, pooling: "mean", normalized: true, tokenizerHash: "abc")

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quantized-file-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    func makeIndex(count: Int, scheme: Int8Quantizer.Scheme = .perDimension) throws -> FlatIndex {
        var rng = SeededGenerator(seed: 31)
        var index = FlatIndex(dimension: 70)
        try index.add(contentsOf: (0..<count).map { ("id-\($0)", rng.floats(70)) })
        index.buildCodes([.int8, .binary], int8Scheme: scheme)
        return index
    }

    func testRoundTripKeepsCodesBitExact() throws {
        for scheme in Int8Quantizer.Scheme.allCases {
            let index = try makeIndex(count: 41, scheme: scheme)
            let url = folder.appendingPathComponent("codes-\(scheme).index")
            try IndexFile.write(StoredIndex(index: index, fingerprint: fingerprint), to: url)
            for verification in [IndexFile.Verification.full, .skippingVectors] {
                let loaded = try IndexFile.read(from: url, verification: verification).index
                XCTAssertEqual(loaded.precisions, [.exact, .int8, .binary])
                XCTAssertEqual(loaded.int8Quantizer, index.int8Quantizer)
                XCTAssertEqual(
                    loaded.int8Table?.codes.withUnsafeBufferPointer(Array.init),
                    index.int8Table?.codes.withUnsafeBufferPointer(Array.init))
                XCTAssertEqual(
                    loaded.int8Table?.scales.withUnsafeBufferPointer(Array.init),
                    index.int8Table?.scales.withUnsafeBufferPointer(Array.init))
                XCTAssertEqual(
                    loaded.binaryTable?.codes.withUnsafeBufferPointer(Array.init),
                    index.binaryTable?.codes.withUnsafeBufferPointer(Array.init))
                let query = try XCTUnwrap(index.vector(for: "id-5"))
                for precision in SearchPrecision.allCases {
                    XCTAssertEqual(
                        try loaded.search(query, k: 5, precision: precision),
                        try index.search(query, k: 5, precision: precision))
                }
                // Changing a loaded (mapped) index copies its codes and keeps them in step.
                var changed = loaded
                try changed.add(id: "new", vector: query)
                XCTAssertEqual(
                    try XCTUnwrap(changed.search(query, k: 1, precision: .int8).first).score, 1, accuracy: 1e-6)
            }
            // Without codes the file has none.
            var plain = index
            plain.removeCodes()
            try IndexFile.write(StoredIndex(index: plain, fingerprint: fingerprint), to: url)
            XCTAssertEqual(try IndexFile.read(from: url).index.precisions, [.exact])
        }
    }

    /// A version-1 file (no codes, one checksum), laid out by hand as the format describes.
    func testVersionOneFilesStillRead() throws {
        let ids = ["a", "bé"]
        let vectors: [Float] = [1, 0, 0, 0, 0.6, 0.8]
        let fingerprintJSON = try JSONEncoder().encode(
            IndexFingerprint(modelIdentifier: "m", dimension: 3, pooling: "mean", normalized: true, tokenizerHash: "h"))
        var idBytes = [UInt8]()
        for id in ids {
            withUnsafeBytes(of: UInt32(id.utf8.count).littleEndian) { idBytes += $0 }
            idBytes += Array(id.utf8)
        }
        let metadata = Array("m".utf8)
        let vectorsOffset = (64 + fingerprintJSON.count + idBytes.count + metadata.count + 63) / 64 * 64
        var file = Array("CEINDEX".utf8) + [0]
        func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { file += $0 } }
        append(UInt32(1))
        append(UInt32(0))
        append(UInt64(fingerprintJSON.count))
        append(UInt64(2))
        append(UInt64(3))
        append(UInt64(idBytes.count))
        append(UInt64(metadata.count))
        append(UInt64(vectorsOffset))
        file += Array(fingerprintJSON) + idBytes + metadata
        file += [UInt8](repeating: 0, count: vectorsOffset - file.count)
        vectors.withUnsafeBytes { file += $0 }
        let checksum = file.withUnsafeBytes { Checksum.of($0) }
        append(checksum)
        file += Array("CEIXEND".utf8) + [0]
        let url = folder.appendingPathComponent("v1.index")
        try Data(file).write(to: url)
        let loaded = try IndexFile.read(from: url)
        XCTAssertEqual(loaded.index.ids, ids)
        XCTAssertEqual(loaded.index.vector(for: "bé"), [0, 0.6, 0.8])
        XCTAssertEqual(loaded.index.precisions, [.exact])
        XCTAssertEqual(loaded.metadata, Data(metadata))
        // And a flipped byte in it is still caught.
        var bad = file
        bad[vectorsOffset + 5] ^= 0x40
        try Data(bad).write(to: url)
        XCTAssertThrowsError(try IndexFile.read(from: url)) {
            XCTAssertEqual($0 as? VectorIndexError, .checksumMismatch(path: url.path))
        }
    }

    func testTruncatedOrCorruptedCodesAreTypedErrors() throws {
        let index = try makeIndex(count: 3)
        let url = folder.appendingPathComponent("c.index")
        try IndexFile.write(StoredIndex(index: index, fingerprint: fingerprint), to: url)
        let bytes = try Data(contentsOf: url)
        let bad = folder.appendingPathComponent("bad.index")
        for length in stride(from: 0, to: bytes.count, by: 7) {
            try bytes.prefix(length).write(to: bad)
            XCTAssertThrowsError(try IndexFile.read(from: bad), "length \(length)") {
                XCTAssertTrue($0 is VectorIndexError, "\($0)")
            }
        }
        let vectorsOffset = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 56, as: UInt64.self) })
        let vectorsEnd = vectorsOffset + 3 * 70 * 4
        var skippedUndetected = 0
        for position in 0..<bytes.count {
            var copy = bytes
            copy[position] ^= 0x5A
            try copy.write(to: bad)
            XCTAssertThrowsError(try IndexFile.read(from: bad), "byte \(position)") {
                XCTAssertTrue($0 is VectorIndexError, "\($0)")
            }
            // Skipping the vectors' checks misses changes to the vectors only.
            let insideVectors =
                (vectorsOffset..<vectorsEnd).contains(position)
                || (bytes.count - 16..<bytes.count - 8).contains(position)
            if (try? IndexFile.read(from: bad, verification: .skippingVectors)) != nil {
                XCTAssertTrue(insideVectors, "byte \(position) outside the vectors went undetected")
                skippedUndetected += 1
            }
        }
        XCTAssertEqual(skippedUndetected, vectorsEnd - vectorsOffset + 8)
        // Unknown code flags.
        var flags = bytes
        flags[12] = 0x08
        try flags.write(to: bad)
        XCTAssertThrowsError(try IndexFile.read(from: bad)) {
            guard case .corruptFile = $0 as? VectorIndexError else { return XCTFail("\($0)") }
        }
    }
}
