import Foundation
import LinearAlgebra

/// An exact cosine-similarity index: every vector in one contiguous row-major `Float` matrix.
///
/// Vectors are scaled to unit length when added (a zero vector stays zero and scores 0 against
/// everything), so a search is one vectorized pass of row dot products (split across cores when
/// the index is large) followed by a bounded heap; batch searches use BLAS matrix products.
/// Rows keep insertion order; removing a row shifts the later ones up, so equal scores always
/// rank the earlier insertion first.
///
/// ```swift
/// var index = FlatIndex(dimension: 3)
/// try index.add(id: "a", vector: [1, 0, 0])
/// try index.add(id: "b", vector: [0, 1, 0])
/// let hits = try index.search([1, 0.1, 0], k: 1)   // [SearchHit(id: "a", ...)]
/// ```
public struct FlatIndex: Sendable {
    /// The length of every vector.
    public let dimension: Int
    /// The ids, in row order.
    public private(set) var ids: [String]
    private var rowForID: [String: Int]
    var storage: VectorStorage
    /// Quantized codes kept beside the floats, in step with every change (see `buildCodes`).
    var int8Table: Int8Table?
    var binaryTable: BinaryTable?

    /// The number of vectors.
    public var count: Int { ids.count }
    /// Whether the index holds no vectors.
    public var isEmpty: Bool { ids.isEmpty }

    /// An empty index of `dimension`-component vectors.
    ///
    /// A dimension below 1 is a programmer mistake (the dimension comes from a model or a file
    /// header that was checked), so it traps here as it does in `init(dimension:ids:rowMajorVectors:)`.
    public init(dimension: Int) {
        Self.checkDimension(dimension)
        self.dimension = dimension
        self.ids = []
        self.rowForID = [:]
        self.storage = .owned([])
    }

    /// An index over a row-major `ids.count × dimension` matrix, added in one step (each row is
    /// normalized like `add`). Handy for loading vectors from other tools.
    /// `dimension` must be positive, as for `init(dimension:)`.
    /// - Throws: `dimensionMismatch` when the matrix size is not `ids.count × dimension`,
    ///   `nonFiniteValue`, or `duplicateID`.
    /// - Complexity: O(n·D).
    public init(dimension: Int, ids: [String], rowMajorVectors vectors: [Float]) throws {
        Self.checkDimension(dimension)
        guard vectors.count == ids.count * dimension else {
            throw VectorIndexError.dimensionMismatch(expected: ids.count * dimension, actual: vectors.count)
        }
        if let bad = vectors.firstIndex(where: { !$0.isFinite }) {
            throw VectorIndexError.nonFiniteValue(id: ids[bad / dimension], component: bad % dimension)
        }
        var values = vectors
        values.withUnsafeMutableBufferPointer { buffer in
            for row in 0..<ids.count { VectorMath.normalize(buffer.baseAddress! + row * dimension, count: dimension) }
        }
        try self.init(dimension: dimension, ids: ids, storage: .owned(values))
    }

    /// The one precondition on a dimension, shared by both public initializers.
    private static func checkDimension(_ dimension: Int) {
        precondition(dimension > 0, "FlatIndex dimension must be positive, got \(dimension)")
    }

    /// An index over existing rows, used by the file loader. The caller guarantees unique ids
    /// and `count × dimension` finite, unit-or-zero values.
    init(dimension: Int, ids: [String], storage: VectorStorage) throws {
        var rows = [String: Int](minimumCapacity: ids.count)
        for (row, id) in ids.enumerated() {
            guard rows.updateValue(row, forKey: id) == nil else { throw VectorIndexError.duplicateID(id) }
        }
        self.dimension = dimension
        self.ids = ids
        self.rowForID = rows
        self.storage = storage
    }

    /// Whether `id` is in the index.
    public func contains(_ id: String) -> Bool { rowForID[id] != nil }

    /// The stored (unit-normalized) vector for `id`.
    public func vector(for id: String) -> [Float]? {
        guard let row = rowForID[id] else { return nil }
        return storage.withUnsafeBufferPointer { Array($0[(row * dimension)..<((row + 1) * dimension)]) }
    }

    /// Adds one vector under a new id.
    /// - Throws: `dimensionMismatch`, `nonFiniteValue`, `duplicateID`; the index is unchanged.
    /// - Complexity: amortized O(D).
    public mutating func add(id: String, vector: [Float]) throws {
        try add(contentsOf: [(id, vector)])
    }

    /// Adds many vectors. All are checked first: on any error nothing is added.
    /// - Complexity: amortized O(n·D).
    public mutating func add(contentsOf items: [(id: String, vector: [Float])]) throws {
        var seen = Set<String>()
        for (id, vector) in items {
            try validate(vector, id: id)
            guard rowForID[id] == nil, seen.insert(id).inserted else { throw VectorIndexError.duplicateID(id) }
        }
        var values = storage.takeOwned()
        values.reserveCapacity(values.count + items.count * dimension)
        for (id, vector) in items {
            rowForID[id] = ids.count
            ids.append(id)
            let unit = VectorMath.normalized(vector)
            values.append(contentsOf: unit)
            int8Table?.append(unit)
            binaryTable?.append(unit)
        }
        storage = .owned(values)
    }

    /// Replaces the vector stored under an existing id, keeping its row.
    /// - Throws: `unknownID`, `dimensionMismatch`, `nonFiniteValue`; the index is unchanged.
    public mutating func update(id: String, vector: [Float]) throws {
        try validate(vector, id: id)
        guard let row = rowForID[id] else { throw VectorIndexError.unknownID(id) }
        var values = storage.takeOwned()
        let unit = VectorMath.normalized(vector)
        values.replaceSubrange((row * dimension)..<((row + 1) * dimension), with: unit)
        storage = .owned(values)
        int8Table?.replace(row: row, with: unit)
        binaryTable?.replace(row: row, with: unit)
    }

    /// Removes the vector stored under `id`; returns whether it was there.
    /// - Complexity: O(n·D) (later rows move up to keep insertion order).
    @discardableResult
    public mutating func remove(id: String) -> Bool {
        guard let row = rowForID.removeValue(forKey: id) else { return false }
        var values = storage.takeOwned()
        values.removeSubrange((row * dimension)..<((row + 1) * dimension))
        storage = .owned(values)
        int8Table?.remove(row: row)
        binaryTable?.remove(row: row)
        ids.remove(at: row)
        for r in row..<ids.count { rowForID[ids[r]] = r }
        return true
    }

    /// The `k` stored vectors most similar to `query` (cosine), best first.
    ///
    /// `k ≤ 0` gives no hits; `k > count` gives `count` hits. `isIncluded`, when given, filters by id.
    /// - Throws: `dimensionMismatch` or `nonFiniteValue` for a bad query.
    /// - Complexity: O(n·D + n log k).
    public func search(_ query: [Float], k: Int, isIncluded: (@Sendable (String) -> Bool)? = nil) throws -> [SearchHit]
    {
        try validate(query, id: "<query>")
        guard k > 0, count > 0 else { return [] }
        let scores = try scores(for: query)
        let filter: (@Sendable (Int) -> Bool)? = isIncluded.map { f in { @Sendable (row: Int) in f(ids[row]) } }
        return TopK.select(from: scores, k: k, isIncluded: filter).map {
            SearchHit(id: ids[$0.index], score: $0.score, row: $0.index)
        }
    }

    /// The cosine similarity of `query` to every stored vector, in row order (no selection).
    /// - Throws: `dimensionMismatch` or `nonFiniteValue` for a bad query.
    /// - Complexity: O(n·D), one pass of row dot products (split across cores when large).
    public func scores(for query: [Float]) throws -> [Float] {
        try validate(query, id: "<query>")
        var scores = [Float](repeating: 0, count: count)
        guard count > 0 else { return scores }
        let unit = VectorMath.normalized(query)
        storage.withUnsafeBufferPointer { matrix in
            unit.withUnsafeBufferPointer { q in
                scores.withUnsafeMutableBufferPointer { s in
                    Self.scores(
                        matrix: matrix.baseAddress!, rows: count, dimension: dimension, query: q.baseAddress!,
                        into: s.baseAddress!)
                }
            }
        }
        return scores
    }

    /// `scores[n] = M[n, D] · q[D]`, split into row blocks across the cores when the matrix is
    /// large (memory bandwidth, not arithmetic, bounds it; one core cannot saturate it). A plain
    /// vectorized row-dot pass: at 1,000,000 × 384 it measured 47–53 ms on 2 cores against
    /// 75–92 ms for OpenBLAS sgemv on the same split (Docs/Benchmarks.md).
    static func scores(
        matrix: UnsafePointer<Float>, rows: Int, dimension: Int, query: UnsafePointer<Float>,
        into scores: UnsafeMutablePointer<Float>
    ) {
        let pointers = WorkerShared(SendablePointers(matrix: matrix, query: query, scores: scores))
        _ = RowSplit.map(rows: rows, parts: RowSplit.parts(rows: rows, dimension: dimension)) { part in
            Kernels.dotRows(
                pointers.value.matrix + part.lowerBound * dimension, rows: part.count, columns: dimension,
                query: pointers.value.query, into: pointers.value.scores + part.lowerBound)
        }
    }

    /// `search` for many queries at once: matrix-matrix products over blocks of rows, so each
    /// block of the index is read from memory once for all the queries.
    /// - Complexity: O(Q·n·D + Q·n log k).
    public func search(batch queries: [[Float]], k: Int, isIncluded: (@Sendable (String) -> Bool)? = nil) throws
        -> [[SearchHit]]
    {
        for query in queries { try validate(query, id: "<query>") }
        guard k > 0, count > 0, !queries.isEmpty else { return queries.map { _ in [] } }
        let q = queries.count
        var packed = [Float]()
        packed.reserveCapacity(q * dimension)
        for query in queries { packed.append(contentsOf: VectorMath.normalized(query)) }
        let filter: (@Sendable (Int) -> Bool)? = isIncluded.map { f in { @Sendable (row: Int) in f(ids[row]) } }
        // Large indexes: each core scans its own range of rows into its own heaps; merged below
        // (or one part on OpenBLAS's own threads: RowSplit.blasParts).
        let parts = RowSplit.blasParts(rows: count, dimension: dimension)
        let scan = {
            storage.withUnsafeBufferPointer { matrix in
                packed.withUnsafeBufferPointer { queryMatrix in
                    let shared = WorkerShared(
                        SharedBatch(matrix: matrix.baseAddress!, queries: queryMatrix.baseAddress!))
                    return RowSplit.map(rows: count, parts: parts) { rows in
                        Self.scanBlocks(
                            matrix: shared.value.matrix, rows: rows, dimension: dimension,
                            queries: shared.value.queries, queryCount: q, k: k, isIncluded: filter)
                    }
                }
            }
        }
        let partHeaps = parts > 1 ? BLAS.singleThreaded(scan) : scan()
        return (0..<q).map { i in
            var merged = partHeaps[0][i]
            for part in partHeaps.dropFirst() {
                for element in part[i].storage { merged.insert(element) }
            }
            return merged.sortedElements().map { SearchHit(id: ids[$0.index], score: $0.score, row: $0.index) }
        }
    }

    /// Top-k heaps for `queryCount` queries over `rows` of the matrix, block by block: a block of
    /// Q × B scores stays in cache while the heaps consume it.
    private static func scanBlocks(
        matrix: UnsafePointer<Float>, rows: Range<Int>, dimension: Int, queries: UnsafePointer<Float>,
        queryCount q: Int, k: Int, isIncluded: (@Sendable (Int) -> Bool)?
    ) -> [BoundedHeap] {
        var heaps = (0..<q).map { _ in BoundedHeap(capacity: k) }
        let blockRows = max(1, min(rows.count, (1 << 18) / max(1, q)))
        var scores = [Float](repeating: 0, count: q * blockRows)
        scores.withUnsafeMutableBufferPointer { s in
            var start = rows.lowerBound
            while start < rows.upperBound {
                let n = min(blockRows, rows.upperBound - start)
                // s[Q, n] = queries[Q, D] · block[n, D]ᵀ
                BLAS.gemm(
                    .none, .transposed, m: q, n: n, k: dimension, a: queries, lda: dimension,
                    b: matrix + start * dimension, ldb: dimension, c: s.baseAddress!, ldc: n)
                for i in 0..<q {
                    heaps[i].insert(
                        contentsOf: UnsafeBufferPointer(rebasing: s[(i * n)..<(i * n + n)]),
                        indexOffset: start, isIncluded: isIncluded)
                }
                start += n
            }
        }
        return heaps
    }

    /// Calls `body` with the contiguous `count × dimension` unit vectors. The pointer must not escape.
    public func withUnsafeVectors<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer(body)
    }

    func validate(_ vector: [Float], id: String) throws {
        guard vector.count == dimension else {
            throw VectorIndexError.dimensionMismatch(expected: dimension, actual: vector.count)
        }
        if let bad = vector.firstIndex(where: { !$0.isFinite }) {
            throw VectorIndexError.nonFiniteValue(id: id, component: bad)
        }
    }
}

/// Pointers shared by the workers of one parallel scoring pass; each writes its own range of `scores`.
private struct SendablePointers {
    let matrix: UnsafePointer<Float>
    let query: UnsafePointer<Float>
    let scores: UnsafeMutablePointer<Float>
}

/// The inputs of one parallel batch search (read only).
private struct SharedBatch {
    let matrix: UnsafePointer<Float>
    let queries: UnsafePointer<Float>
}
