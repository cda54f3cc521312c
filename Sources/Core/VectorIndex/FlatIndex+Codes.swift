import Foundation
import LinearAlgebra

/// Search through quantized codes with exact rescoring.
///
/// ```swift
/// var index = try FlatIndex(dimension: 384, ids: ids, rowMajorVectors: vectors)
/// index.buildCodes([.int8, .binary])          // learns int8 ranges from these vectors
/// let hits = try index.search(query, k: 10, precision: .int8)   // exact scores, fewer bytes read
/// ```
extension FlatIndex {
    /// The precisions this index can search with: `exact` always, plus the codes it keeps.
    public var precisions: Set<SearchPrecision> {
        var result: Set<SearchPrecision> = [.exact]
        if int8Table != nil { result.insert(.int8) }
        if binaryTable != nil { result.insert(.binary) }
        return result
    }

    /// The int8 quantizer in use (nil when the index keeps no int8 codes).
    package var int8Quantizer: Int8Quantizer? { int8Table?.quantizer }

    /// Builds codes for every stored vector (replacing any kept before); `exact` in the set is
    /// ignored. int8 ranges (perDimension) are learned from the vectors stored now: vectors added
    /// later are encoded with those ranges (clamped), so call this again after the collection
    /// has changed a lot. Codes then follow every `add`, `update` and `remove`.
    /// - Complexity: O(n·D).
    public mutating func buildCodes(
        _ precisions: Set<SearchPrecision>, int8Scheme: Int8Quantizer.Scheme = .perDimension
    ) {
        let d = dimension
        if precisions.contains(.int8) {
            int8Table = storage.withUnsafeBufferPointer { values in
                Int8Table(quantizer: .train(int8Scheme, vectors: values, dimension: d), vectors: values)
            }
        }
        if precisions.contains(.binary) {
            binaryTable = storage.withUnsafeBufferPointer { BinaryTable(dimension: d, vectors: $0) }
        }
    }

    /// Builds int8 codes with given ranges (for instance those of another index).
    /// - Throws: `invalidCodes` when the quantizer's dimension differs from the index's.
    package mutating func buildInt8Codes(quantizer: Int8Quantizer) throws {
        guard quantizer.dimension == dimension else {
            throw VectorIndexError.invalidCodes(
                "quantizer has \(quantizer.dimension) dimensions, the index \(dimension)")
        }
        int8Table = storage.withUnsafeBufferPointer { Int8Table(quantizer: quantizer, vectors: $0) }
    }

    /// Drops every kept code (searches are exact only).
    public mutating func removeCodes() {
        int8Table = nil
        binaryTable = nil
    }

    /// The `k` stored vectors most similar to `query`, best first, with exact cosine scores.
    ///
    /// With `int8` or `binary`, the codes choose `k × rescore` candidates (default
    /// `precision.defaultRescore`) and the float vectors rescore them; the order among hits is
    /// the exact one (ties: earlier insertion first), and a hit is missed only when the codes
    /// ranked it below every candidate.
    /// - Throws: `codesMissing` when the index keeps no such codes; `invalidCodes` for a rescore
    ///   factor below 1; `dimensionMismatch` or `nonFiniteValue` for a bad query.
    /// - Complexity: O(n·D) over bytes (int8) or bits (binary), plus O(k·rescore·D) rescoring.
    public func search(
        _ query: [Float], k: Int, precision: SearchPrecision, rescore: Int? = nil,
        isIncluded: (@Sendable (String) -> Bool)? = nil
    ) throws -> [SearchHit] {
        try search(
            query, k: k, precision: precision, rescore: rescore, isIncluded: isIncluded, int8Path: nil, hammingPath: nil
        )
    }

    /// Refuses a rescore factor below 1, the one check every store's precision setting shares.
    /// - Throws: `VectorIndexError.invalidCodes`.
    package static func checkRescore(_ factor: Int) throws {
        guard factor >= 1 else {
            throw VectorIndexError.invalidCodes("rescore factor must be at least 1, got \(factor)")
        }
    }

    /// `search(_:k:precision:rescore:isIncluded:)` on chosen kernel paths (tests force each one).
    func search(
        _ query: [Float], k: Int, precision: SearchPrecision, rescore: Int?, isIncluded: (@Sendable (String) -> Bool)?,
        int8Path: CodeKernels.Path?, hammingPath: CodeKernels.Path?
    ) throws -> [SearchHit] {
        if precision == .exact { return try search(query, k: k, isIncluded: isIncluded) }
        try validate(query, id: "<query>")
        let factor = rescore ?? precision.defaultRescore
        try Self.checkRescore(factor)
        guard precisions.contains(precision) else { throw VectorIndexError.codesMissing(precision) }
        guard k > 0, count > 0 else { return [] }
        let unit = VectorMath.normalized(query)
        let filter: (@Sendable (Int) -> Bool)? = isIncluded.map { f in { @Sendable (row: Int) in f(ids[row]) } }
        let (wanted, overflow) = k.multipliedReportingOverflow(by: factor)
        let rows = candidates(
            unit: unit, count: overflow ? count : min(count, wanted), precision: precision, filter: filter,
            int8Path: int8Path, hammingPath: hammingPath)
        var heap = BoundedHeap(capacity: k)
        let d = dimension
        storage.withUnsafeBufferPointer { matrix in
            unit.withUnsafeBufferPointer { q in
                var score: Float = 0
                for row in rows.sorted() {
                    Kernels.dotRows(
                        matrix.baseAddress! + row * d, rows: 1, columns: d, query: q.baseAddress!, into: &score)
                    heap.insert(TopK.Element(index: row, score: score))
                }
            }
        }
        return heap.sortedElements().map { SearchHit(id: ids[$0.index], score: $0.score, row: $0.index) }
    }

    /// The rows the codes rank best for `unit` (at most `count`), unordered.
    func candidates(
        unit: [Float], count wanted: Int, precision: SearchPrecision, filter: (@Sendable (Int) -> Bool)?,
        int8Path: CodeKernels.Path?, hammingPath: CodeKernels.Path?
    ) -> [Int] {
        let d = dimension
        switch precision {
        case .exact:
            return []
        case .int8:
            guard let table = int8Table else { return [] }
            let (query, sum) = table.quantizer.queryCodes(unit)
            let perVector = table.quantizer.scheme == .perVector
            return table.codes.withUnsafeBufferPointer { codes in
                table.scales.withUnsafeBufferPointer { scales in
                    query.withUnsafeBufferPointer { q in
                        let shared = WorkerShared(
                            CodeOperands(
                                codes: UnsafeRawPointer(codes.baseAddress!), scales: scales.baseAddress,
                                query: UnsafeRawPointer(q.baseAddress!)))
                        return bestRows(wanted: wanted, filter: filter) { start, m, ranks in
                            var dots = [Int32](repeating: 0, count: m)
                            dots.withUnsafeMutableBufferPointer { out in
                                _ = CodeKernels.int8DotRows(
                                    codes: shared.value.codes.assumingMemoryBound(to: UInt8.self) + start * d, rows: m,
                                    dimension: d,
                                    query: shared.value.query.assumingMemoryBound(to: Int8.self),
                                    into: out.baseAddress!, path: int8Path)
                            }
                            if perVector, let scales = shared.value.scales {
                                for i in 0..<m { ranks[i] = scales[start + i] * Float(dots[i] - 128 * sum) }
                            } else {
                                for i in 0..<m { ranks[i] = Float(dots[i]) }
                            }
                        }
                    }
                }
            }
        case .binary:
            guard let table = binaryTable else { return [] }
            let query = BinaryTable.code(of: unit)
            let words = table.words
            return table.codes.withUnsafeBufferPointer { codes in
                query.withUnsafeBufferPointer { q in
                    let shared = WorkerShared(
                        CodeOperands(
                            codes: UnsafeRawPointer(codes.baseAddress!), scales: nil,
                            query: UnsafeRawPointer(q.baseAddress!)))
                    return bestRows(wanted: wanted, filter: filter) { start, m, ranks in
                        var distances = [UInt32](repeating: 0, count: m)
                        distances.withUnsafeMutableBufferPointer { out in
                            _ = CodeKernels.hammingRows(
                                codes: shared.value.codes.assumingMemoryBound(to: UInt64.self) + start * words, rows: m,
                                words: words,
                                query: shared.value.query.assumingMemoryBound(to: UInt64.self), into: out.baseAddress!,
                                path: hammingPath)
                        }
                        for i in 0..<m { ranks[i] = -Float(distances[i]) }
                    }
                }
            }
        }
    }

    /// The `wanted` rows of highest rank (unordered): `rank(start, m, ranks)` writes the ranks of
    /// rows `start..<start + m` (blocks of 8,192), called from one worker per core for large indexes.
    private func bestRows(
        wanted: Int, filter: (@Sendable (Int) -> Bool)?, rank: @Sendable (Int, Int, UnsafeMutablePointer<Float>) -> Void
    ) -> [Int] {
        let block = 8192
        // Each worker makes its own heap: heaps copied from one value would share one buffer
        // that every worker's first insert copies away from.
        let heaps = RowSplit.map(rows: count, parts: RowSplit.parts(rows: count, dimension: dimension)) { rows in
            var heap = BoundedHeap(capacity: wanted)
            var ranks = [Float](repeating: 0, count: block)
            var start = rows.lowerBound
            while start < rows.upperBound {
                let m = min(block, rows.upperBound - start)
                ranks.withUnsafeMutableBufferPointer { r in
                    rank(start, m, r.baseAddress!)
                    heap.insert(
                        contentsOf: UnsafeBufferPointer(rebasing: r[0..<m]), indexOffset: start, isIncluded: filter)
                }
                start += m
            }
            return heap
        }
        var merged = heaps[0]
        for heap in heaps.dropFirst() {
            for element in heap.storage { merged.insert(element) }
        }
        return merged.storage.map(\.index)
    }
}

/// The code and query pointers of one scan, shared by its workers (read only).
private struct CodeOperands {
    let codes: UnsafeRawPointer
    let scales: UnsafePointer<Float>?
    let query: UnsafeRawPointer
}
