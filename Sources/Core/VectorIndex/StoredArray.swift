/// Elements owned in an array, or read-only in a memory-mapped file (copied on the first change):
/// how an index holds its float vectors and its codes.
enum StoredArray<Element: BitwiseCopyable & Sendable>: Sendable {
    case owned([Element])
    /// `count` elements at `offset` bytes into a mapped file (the loader checked alignment and bounds).
    case mapped(MappedFile, offset: Int, count: Int)

    var count: Int {
        switch self {
        case .owned(let values): return values.count
        case .mapped(_, _, let count): return count
        }
    }

    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R {
        switch self {
        case .owned(let values):
            return try values.withUnsafeBufferPointer(body)
        case .mapped(let file, let offset, let count):
            let base = (file.bytes.baseAddress! + offset).assumingMemoryBound(to: Element.self)
            return try body(UnsafeBufferPointer(start: base, count: count))
        }
    }

    /// The elements as an owned array, leaving `self` empty so the array is uniquely referenced
    /// and can be mutated without a copy.
    mutating func takeOwned() -> [Element] {
        let values = makeOwned()
        self = .owned([])
        return values
    }

    func makeOwned() -> [Element] {
        switch self {
        case .owned(let values): return values
        case .mapped: return withUnsafeBufferPointer { Array($0) }
        }
    }

    /// Changes the elements in place (a mapped array is copied first).
    mutating func mutate(_ body: (inout [Element]) -> Void) {
        var values = takeOwned()
        body(&values)
        self = .owned(values)
    }
}

/// An index's float vectors.
typealias VectorStorage = StoredArray<Float>
