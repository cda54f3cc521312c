import LinearAlgebra

/// An exact cosine-similarity index: every vector in one contiguous row-major `Float` matrix.
///
/// Vectors are scaled to unit length when added (a zero vector stays zero and scores 0 against
/// everything), so a search is one BLAS matrix-vector product followed by a bounded heap.
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

    /// The number of vectors.
    public var count: Int { ids.count }
    /// Whether the index holds no vectors.
    public var isEmpty: Bool { ids.isEmpty }

    /// An empty index of `dimension`-component vectors (`dimension` must be positive).
    public init(dimension: Int) {
        precondition(dimension > 0, "FlatIndex dimension must be positive")
        self.dimension = dimension
        self.ids = []
        self.rowForID = [:]
        self.storage = .owned([])
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
        return storage.withUnsafeValues { Array($0[(row * dimension)..<((row + 1) * dimension)]) }
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
            values.append(contentsOf: VectorMath.normalized(vector))
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
    }

    /// Removes the vector stored under `id`; returns whether it was there.
    /// - Complexity: O(n·D) (later rows move up to keep insertion order).
    @discardableResult
    public mutating func remove(id: String) -> Bool {
        guard let row = rowForID.removeValue(forKey: id) else { return false }
        var values = storage.takeOwned()
        values.removeSubrange((row * dimension)..<((row + 1) * dimension))
        storage = .owned(values)
        ids.remove(at: row)
        for r in row..<ids.count { rowForID[ids[r]] = r }
        return true
    }

    /// The `k` stored vectors most similar to `query` (cosine), best first.
    ///
    /// `k ≤ 0` gives no hits; `k > count` gives `count` hits. `isIncluded`, when given, filters by id.
    /// - Throws: `dimensionMismatch` or `nonFiniteValue` for a bad query.
    /// - Complexity: O(n·D + n log k).
    public func search(_ query: [Float], k: Int, isIncluded: ((String) -> Bool)? = nil) throws -> [SearchHit] {
        try validate(query, id: "<query>")
        guard k > 0, count > 0 else { return [] }
        let unit = VectorMath.normalized(query)
        var scores = [Float](repeating: 0, count: count)
        storage.withUnsafeValues { matrix in
            unit.withUnsafeBufferPointer { q in
                scores.withUnsafeMutableBufferPointer { s in
                    // s[n] = M[n, D] · q[D]
                    BLAS.gemv(.none, m: count, n: dimension, a: matrix.baseAddress!, lda: dimension,
                              x: q.baseAddress!, y: s.baseAddress!)
                }
            }
        }
        let filter = isIncluded.map { f in { (row: Int) in f(ids[row]) } }
        return TopK.select(from: scores, k: k, isIncluded: filter).map {
            SearchHit(id: ids[$0.index], score: $0.score, row: $0.index)
        }
    }

    /// `search` for many queries at once: matrix-matrix products over blocks of rows, so each
    /// block of the index is read from memory once for all the queries.
    /// - Complexity: O(Q·n·D + Q·n log k).
    public func search(batch queries: [[Float]], k: Int, isIncluded: ((String) -> Bool)? = nil) throws -> [[SearchHit]] {
        for query in queries { try validate(query, id: "<query>") }
        guard k > 0, count > 0, !queries.isEmpty else { return queries.map { _ in [] } }
        let q = queries.count
        var packed = [Float]()
        packed.reserveCapacity(q * dimension)
        for query in queries { packed.append(contentsOf: VectorMath.normalized(query)) }
        let filter = isIncluded.map { f in { (row: Int) in f(ids[row]) } }
        var heaps = (0..<q).map { _ in BoundedHeap(capacity: k) }
        // A block of scores Q × B stays in cache while the heaps consume it.
        let blockRows = max(1, min(count, (1 << 20) / max(1, q)))
        var scores = [Float](repeating: 0, count: q * blockRows)
        storage.withUnsafeValues { matrix in
            packed.withUnsafeBufferPointer { queryMatrix in
                scores.withUnsafeMutableBufferPointer { s in
                    var start = 0
                    while start < count {
                        let rows = min(blockRows, count - start)
                        // s[Q, rows] = queries[Q, D] · block[rows, D]ᵀ
                        BLAS.gemm(.none, .transposed, m: q, n: rows, k: dimension,
                                  a: queryMatrix.baseAddress!, lda: dimension,
                                  b: matrix.baseAddress! + start * dimension, ldb: dimension,
                                  c: s.baseAddress!, ldc: rows)
                        for i in 0..<q {
                            heaps[i].insert(
                                contentsOf: UnsafeBufferPointer(rebasing: s[(i * rows)..<(i * rows + rows)]),
                                indexOffset: start, isIncluded: filter)
                        }
                        start += rows
                    }
                }
            }
        }
        return heaps.map { heap in
            heap.sortedElements().map { SearchHit(id: ids[$0.index], score: $0.score, row: $0.index) }
        }
    }

    /// Calls `body` with the contiguous `count × dimension` unit vectors. The pointer must not escape.
    public func withUnsafeVectors<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try storage.withUnsafeValues(body)
    }

    private func validate(_ vector: [Float], id: String) throws {
        guard vector.count == dimension else {
            throw VectorIndexError.dimensionMismatch(expected: dimension, actual: vector.count)
        }
        if let bad = vector.firstIndex(where: { !$0.isFinite }) {
            throw VectorIndexError.nonFiniteValue(id: id, component: bad)
        }
    }
}

/// Where an index's vectors live: in an array it owns, or in a read-only mapped file.
enum VectorStorage: @unchecked Sendable {
    case owned([Float])
    /// `count` floats at `offset` bytes into a mapped file (read-only; copied on first change).
    case mapped(MappedFile, offset: Int, count: Int)

    func withUnsafeValues<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        switch self {
        case let .owned(values):
            return try values.withUnsafeBufferPointer(body)
        case let .mapped(file, offset, count):
            // The loader checked that offset is 4-byte aligned and that the floats fit in the file.
            let base = (file.bytes.baseAddress! + offset).assumingMemoryBound(to: Float.self)
            return try body(UnsafeBufferPointer(start: base, count: count))
        }
    }

    /// The values as an owned array, leaving `self` empty so the array is uniquely referenced
    /// and can be mutated without a copy.
    mutating func takeOwned() -> [Float] {
        let values = makeOwned()
        self = .owned([])
        return values
    }

    func makeOwned() -> [Float] {
        switch self {
        case let .owned(values): return values
        case .mapped: return withUnsafeValues { Array($0) }
        }
    }
}
