/// The merge step of SentencePiece's BPE as GGUF vocabularies of `tokenizer.ggml.model = llama`
/// carry it (Llama 2, Mistral, Phi-3, Gemma): the text, spaces written as `▁` (U+2581), starts as
/// one symbol per character; the adjacent pair whose joined text is a token with the highest score
/// is merged (the leftmost on ties) until no joined pair is a token. A character that is not a
/// token becomes its UTF-8 bytes' `<0xAB>` tokens (byte fallback), or the unknown token when the
/// vocabulary has no byte tokens.
///
/// Scores become ranks (the best score rank 0, equal scores equal ranks), so that the same heap
/// as byte-level BPE orders candidates: by rank, then position.
struct SentencePieceModel: Sendable {
    /// `ranks[id]`: the rank of token `id`'s score among all the vocabulary's (llama.cpp merges into
    /// a token of any type).
    let ranks: [Int32]
    /// `byteTokens[b]`: the id of `<0xAB>` for byte `b`, or −1.
    let byteTokens: [Int32]
    /// The unknown token, for a character without a token when there is no byte token either.
    let unknownID: Int32?

    init(scores: [Float], byteTokens: [Int32], unknownID: Int32?) {
        let distinct = Set(scores).sorted(by: >)
        var rankOfScore: [Float: Int32] = [:]
        for (rank, score) in distinct.enumerated() { rankOfScore[score] = Int32(rank) }
        ranks = scores.map { rankOfScore[$0] ?? -1 }
        self.byteTokens = byteTokens
        self.unknownID = unknownID
    }

    /// The tokens of `bytes` (escaped text: spaces already `▁`) as (id, byte offset, byte count), in
    /// order; `lookup` finds the token whose text is the given bytes.
    /// - Complexity: O(n log n) in the characters of `bytes`, with one lookup per candidate pair.
    func encode(
        _ bytes: UnsafeBufferPointer<UInt8>, lookup: (UnsafeBufferPointer<UInt8>) -> Int32?,
        into output: inout [(id: Int32, start: Int, count: Int)]
    ) {
        // Symbols: one per UTF-8 character (a stray continuation byte stands alone).
        var starts: [Int] = []
        var k = 0
        while k < bytes.count {
            starts.append(k)
            k += 1
            while k < bytes.count, bytes[k] & 0xC0 == 0x80, k - starts[starts.count - 1] < 4 { k += 1 }
        }
        let n = starts.count
        guard n > 0 else { return }
        var counts = (0..<n).map { i in (i + 1 < n ? starts[i + 1] : bytes.count) - starts[i] }
        var next = Array(1...n)  // n: none
        var previous = Array(-1..<(n - 1))  // -1: none
        var heap = MergeHeap()
        func token(_ start: Int, _ count: Int) -> Int32? {
            lookup(UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]))
        }
        func queue(_ left: Int, _ right: Int) {
            guard left >= 0, right < n, let id = token(starts[left], counts[left] + counts[right]),
                ranks[Int(id)] >= 0
            else { return }
            // `left` and `right` carry the pair's byte length, to recognize a stale candidate.
            heap.push(
                .init(
                    rank: ranks[Int(id)], position: Int32(left), left: Int32(counts[left] + counts[right]),
                    right: id))
        }
        for i in 0..<(n - 1) { queue(i, i + 1) }
        while let candidate = heap.pop() {
            let i = Int(candidate.position)
            let j = next[i]
            // Stale: a side was merged away or grew since the pair was queued.
            guard counts[i] > 0, j < n, counts[j] > 0, counts[i] + counts[j] == Int(candidate.left) else { continue }
            counts[i] += counts[j]
            counts[j] = 0
            next[i] = next[j]
            if next[j] < n { previous[next[j]] = i }
            queue(previous[i], i)
            queue(i, next[i])
        }
        var i = 0
        while i < n {
            if let id = token(starts[i], counts[i]) {
                output.append((id, starts[i], counts[i]))
            } else if byteTokens.contains(where: { $0 >= 0 }) {
                for b in starts[i]..<(starts[i] + counts[i]) where byteTokens[Int(bytes[b])] >= 0 {
                    output.append((byteTokens[Int(bytes[b])], b, 1))
                }
            } else if let unknownID {
                output.append((unknownID, starts[i], counts[i]))
            }
            i = next[i]
        }
    }
}
