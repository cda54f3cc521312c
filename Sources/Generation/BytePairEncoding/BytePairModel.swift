/// The merge step of byte-level BPE (Hugging Face's `BPE` model): a piece's bytes start as one
/// symbol each, and the adjacent pair with the lowest merge rank is merged until no pair has a
/// rank. Ties go to the leftmost pair.
///
/// A byte whose one-symbol token is not in the vocabulary (SmolLM2's lacks 21 of them: six
/// control characters and bytes that never occur in UTF-8) is left out, as Hugging Face's BPE
/// does when the model has no unknown token: its neighbours become adjacent.
struct BytePairModel: Sendable {
    /// `merges[pairKey(left, right)]`: the pair's rank (its line in the merges list) and the id of the merged token.
    let merges: [UInt64: (rank: Int32, id: Int32)]
    /// `byteTokens[b]`: the id of the one-symbol token for byte `b`, or −1 when the vocabulary lacks it.
    let byteTokens: [Int32]

    static func pairKey(_ left: Int32, _ right: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
    }

    /// The tokens of one piece as (id, byte offset in the piece) pairs, in order.
    ///
    /// Symbols form a linked list; candidate pairs wait in a min-heap on (rank, position) and are
    /// checked when popped, since merging may have consumed either side.
    /// - Complexity: O(n log n) in the piece's bytes.
    func encode(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [(id: Int32, start: Int)]) {
        var ids: [Int32] = []
        var starts: [Int] = []
        ids.reserveCapacity(bytes.count)
        starts.reserveCapacity(bytes.count)
        for (offset, byte) in bytes.enumerated() where byteTokens[Int(byte)] >= 0 {
            ids.append(byteTokens[Int(byte)])
            starts.append(offset)
        }
        let n = ids.count
        guard n > 1 else {
            if n == 1 { output.append((ids[0], starts[0])) }
            return
        }
        var next = Array(1...n)  // n: none
        var previous = Array(-1..<(n - 1))  // -1: none
        var alive = [Bool](repeating: true, count: n)
        var heap = MergeHeap()
        for i in 0..<(n - 1) {
            if let merge = merges[Self.pairKey(ids[i], ids[i + 1])] {
                heap.push(.init(rank: merge.rank, position: Int32(i), left: ids[i], right: ids[i + 1]))
            }
        }
        while let candidate = heap.pop() {
            let i = Int(candidate.position)
            let j = next[i]
            // Stale: a side was merged away or changed since the pair was queued.
            guard alive[i], j < n, ids[i] == candidate.left, ids[j] == candidate.right,
                let merge = merges[Self.pairKey(ids[i], ids[j])], merge.rank == candidate.rank
            else { continue }
            ids[i] = merge.id
            alive[j] = false
            next[i] = next[j]
            if next[j] < n { previous[next[j]] = i }
            let before = previous[i]
            if before >= 0, let left = merges[Self.pairKey(ids[before], ids[i])] {
                heap.push(.init(rank: left.rank, position: Int32(before), left: ids[before], right: ids[i]))
            }
            let after = next[i]
            if after < n, let right = merges[Self.pairKey(ids[i], ids[after])] {
                heap.push(.init(rank: right.rank, position: Int32(i), left: ids[i], right: ids[after]))
            }
        }
        var i = 0
        while i < n {
            output.append((ids[i], starts[i]))
            i = next[i]
        }
    }

    /// The plain loop the merge step is checked against: find the lowest-ranked adjacent pair
    /// (leftmost on ties), merge it, repeat. O(n²) per piece.
    func referenceEncode(_ bytes: [UInt8]) -> [(id: Int32, start: Int)] {
        var symbols = bytes.enumerated().map { (id: byteTokens[Int($0.element)], start: $0.offset) }.filter {
            $0.id >= 0
        }
        while symbols.count > 1 {
            var best: (rank: Int32, index: Int, id: Int32)?
            for k in 0..<(symbols.count - 1) {
                if let merge = merges[Self.pairKey(symbols[k].id, symbols[k + 1].id)], merge.rank < (best?.rank ?? .max)
                {
                    best = (merge.rank, k, merge.id)
                }
            }
            guard let best else { break }
            symbols[best.index].id = best.id
            symbols.remove(at: best.index + 1)
        }
        return symbols
    }
}

/// A binary min-heap of merge candidates ordered by (rank, position).
struct MergeHeap {
    struct Candidate {
        var rank: Int32, position: Int32, left: Int32, right: Int32
        func precedes(_ other: Candidate) -> Bool {
            rank != other.rank ? rank < other.rank : position < other.position
        }
    }

    private var items: [Candidate] = []

    mutating func push(_ candidate: Candidate) {
        items.append(candidate)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].precedes(items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Candidate? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count, items[left].precedes(items[smallest]) { smallest = left }
                if right < items.count, items[right].precedes(items[smallest]) { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
