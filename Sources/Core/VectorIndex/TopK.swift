/// Selection of the `k` best-scoring items without sorting them all.
///
/// Order: higher score first; equal scores keep the lower index (earlier insertion) first. This is
/// the same order as a stable sort by descending score, which is what the reference
/// `ReferenceTopK.select` does and what the tests compare against.
public enum TopK {
    /// One selected item: its position in the scored collection and its score.
    public struct Element: Equatable, Sendable {
        /// The item's position among the scores (plus any index offset).
        public var index: Int
        /// The item's score.
        public var score: Float
        /// An element for the item at `index` with `score`.
        public init(index: Int, score: Float) {
            self.index = index
            self.score = score
        }
    }

    /// The `k` highest of `scores`, best first, keeping only indices where `isIncluded` is true.
    ///
    /// `k ≤ 0` gives no elements; `k` larger than the number of candidates gives all of them.
    /// NaN scores are never selected.
    /// ```swift
    /// TopK.select(from: [0.1, 0.9, 0.5], k: 2)  // [(1, 0.9), (2, 0.5)]
    /// ```
    /// - Complexity: O(n log k + k log k) with a bounded min-heap of `k` items.
    public static func select(from scores: [Float], k: Int, isIncluded: (@Sendable (Int) -> Bool)? = nil) -> [Element] {
        scores.withUnsafeBufferPointer { select(from: $0, k: k, isIncluded: isIncluded) }
    }

    /// `select(from:k:isIncluded:)` over a buffer, whose element `i` is reported (and filtered)
    /// as index `indexOffset + i`. The buffer is read only during the call.
    package static func select(
        from scores: UnsafeBufferPointer<Float>, k: Int, indexOffset: Int = 0,
        isIncluded: (@Sendable (Int) -> Bool)? = nil
    ) -> [Element] {
        var heap = BoundedHeap(capacity: k)
        heap.insert(contentsOf: scores, indexOffset: indexOffset, isIncluded: isIncluded)
        return heap.sortedElements()
    }
}

/// A min-heap that keeps the `capacity` best elements seen so far; its root is the worst kept.
struct BoundedHeap {
    let capacity: Int
    private(set) var storage: [TopK.Element] = []

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        storage.reserveCapacity(min(self.capacity, 1 << 16))
    }

    /// `a` ranks below `b`: lower score, or equal score and later index.
    @inline(__always)
    static func ranksBelow(_ a: TopK.Element, _ b: TopK.Element) -> Bool {
        a.score < b.score || (a.score == b.score && a.index > b.index)
    }

    mutating func insert(
        contentsOf scores: UnsafeBufferPointer<Float>, indexOffset: Int, isIncluded: (@Sendable (Int) -> Bool)?
    ) {
        guard capacity > 0 else { return }
        for i in 0..<scores.count {
            let score = scores[i]
            // Fast rejection: once full, anything not above the root cannot enter (equal scores
            // arrive with later indices, so they rank below the root too).
            if storage.count == capacity, !(score > storage[0].score) { continue }
            if score.isNaN { continue }
            let index = i + indexOffset
            if let isIncluded, !isIncluded(index) { continue }
            insert(TopK.Element(index: index, score: score))
        }
    }

    mutating func insert(_ element: TopK.Element) {
        if storage.count < capacity {
            storage.append(element)
            siftUp(storage.count - 1)
        } else if Self.ranksBelow(storage[0], element) {
            storage[0] = element
            siftDown(0)
        }
    }

    func sortedElements() -> [TopK.Element] {
        storage.sorted { Self.ranksBelow($1, $0) }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.ranksBelow(storage[child], storage[parent]) else { return }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let n = storage.count
        while true {
            let left = 2 * parent + 1
            guard left < n else { return }
            var lowest = left
            let right = left + 1
            if right < n, Self.ranksBelow(storage[right], storage[left]) { lowest = right }
            guard Self.ranksBelow(storage[lowest], storage[parent]) else { return }
            storage.swapAt(lowest, parent)
            parent = lowest
        }
    }
}

/// The obvious top-k: a stable sort of every score, then the first `k`. Used by tests and benchmarks.
package enum ReferenceTopK {
    /// The `k` best of `scores`, best first, ties by lower index; NaN scores are skipped.
    /// - Complexity: O(n log n).
    package static func select(from scores: [Float], k: Int, isIncluded: (@Sendable (Int) -> Bool)? = nil) -> [TopK
        .Element]
    {
        guard k > 0 else { return [] }
        let candidates = scores.indices.filter { !scores[$0].isNaN && (isIncluded?($0) ?? true) }
        let ordered = candidates.sorted { a, b in
            scores[a] > scores[b] || (scores[a] == scores[b] && a < b)
        }
        return ordered.prefix(k).map { TopK.Element(index: $0, score: scores[$0]) }
    }
}
