import Foundation

/// A SentencePiece unigram model as Hugging Face `tokenizers` runs it: every piece has a
/// log-probability score, and a word is split into the pieces whose scores add up highest
/// (Viterbi over the word's characters).
///
/// A character that begins no piece of its own becomes the unknown piece, scored
/// `min(scores) − 10` as in `tokenizers`; unknown characters in a row are fused into one token.
/// On equal totals the longer piece wins (the first candidate found), as in `tokenizers`.
///
/// Pieces live in one byte buffer with an open-addressing hash table over it: 250,002 pieces
/// take about 7 MB, and no `String` is made until a token is returned.
public struct UnigramModel: Sendable {
    /// How many pieces the vocabulary holds.
    public let count: Int
    /// The id of the unknown piece (`<unk>`).
    public let unknownID: Int
    /// The score an unknown character gets: the lowest piece score minus 10.
    public let unknownScore: Double
    /// The longest piece, in UTF-8 bytes.
    public let longestPieceBytes: Int

    private let bytes: [UInt8]
    /// `count + 1` offsets into `bytes`: piece `i` is `bytes[offsets[i]..<offsets[i + 1]]`.
    private let offsets: [Int32]
    private let scores: [Float]
    /// Piece index + 1 per slot, 0 for an empty slot; the size is a power of two.
    private let slots: [Int32]

    /// A model from its pieces' UTF-8 bytes, back to back, and their scores.
    /// - Parameters:
    ///   - bytes: every piece's UTF-8 bytes, concatenated in id order.
    ///   - offsets: `scores.count + 1` ascending offsets into `bytes`, starting at 0.
    ///   - scores: one finite log-probability per piece.
    ///   - unknownID: the id of the unknown piece.
    /// - Throws: `SentencePieceError.invalidVocabulary` for offsets out of order or out of range,
    ///   a piece that is empty or not UTF-8, a duplicate piece, a non-finite score or a bad `unknownID`.
    public init(bytes: [UInt8], offsets: [Int32], scores: [Float], unknownID: Int) throws {
        func invalid(_ reason: String) -> SentencePieceError { .invalidVocabulary(reason: reason) }
        guard !scores.isEmpty else { throw invalid("no pieces") }
        guard offsets.count == scores.count + 1 else {
            throw invalid("\(offsets.count) offsets for \(scores.count) pieces")
        }
        guard offsets[0] == 0, Int(offsets[scores.count]) == bytes.count else {
            throw invalid("piece offsets do not span the piece bytes")
        }
        guard (0..<scores.count).contains(unknownID) else {
            throw invalid("unknown piece id \(unknownID) out of range")
        }
        var longest = 1
        var lowest = Double.infinity
        for i in 0..<scores.count {
            let length = Int(offsets[i + 1]) - Int(offsets[i])
            guard length > 0 else { throw invalid("piece \(i) is empty or its offsets go backwards") }
            guard scores[i].isFinite else { throw invalid("piece \(i) has a non-finite score") }
            longest = max(longest, length)
            lowest = min(lowest, Double(scores[i]))
        }
        // Every piece must be valid UTF-8: token texts are made from these bytes.
        for i in 0..<scores.count {
            var iterator = bytes[Int(offsets[i])..<Int(offsets[i + 1])].makeIterator()
            var decoder = UTF8()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: break decoding
                case .error: throw invalid("piece \(i) is not valid UTF-8")
                }
            }
        }
        var size = 1
        while size < scores.count * 2 { size <<= 1 }
        var slots = [Int32](repeating: 0, count: size)
        let mask = size - 1
        bytes.withUnsafeBufferPointer { b in
            for i in 0..<scores.count {
                let start = Int(offsets[i])
                let end = Int(offsets[i + 1])
                var slot = Int(truncatingIfNeeded: Self.hash(b.baseAddress! + start, count: end - start)) & mask
                while slots[slot] != 0 { slot = (slot + 1) & mask }
                slots[slot] = Int32(i + 1)
            }
        }
        self.count = scores.count
        self.unknownID = unknownID
        self.unknownScore = lowest - 10
        self.longestPieceBytes = longest
        self.bytes = bytes
        self.offsets = offsets
        self.scores = scores
        self.slots = slots
        // Duplicates would make lookups ambiguous: each piece must find itself.
        for i in 0..<scores.count {
            let found = bytes.withUnsafeBufferPointer { b in
                lookup(b.baseAddress! + Int(offsets[i]), count: Int(offsets[i + 1] - offsets[i]))
            }
            guard found == i else { throw invalid("piece \(i) duplicates piece \(found ?? -1)") }
        }
    }

    /// The score of piece `id`.
    public func score(of id: Int) -> Float { scores[id] }

    /// The text of piece `id`.
    public func piece(_ id: Int) -> String {
        String(decoding: bytes[Int(offsets[id])..<Int(offsets[id + 1])], as: UTF8.self)
    }

    /// The id of `piece`, or `nil` when the vocabulary lacks it.
    public func id(of piece: String) -> Int? {
        var utf8 = Array(piece.utf8)
        return utf8.withUnsafeMutableBufferPointer { b in
            b.isEmpty ? nil : lookup(UnsafePointer(b.baseAddress!), count: b.count)
        }
    }

    /// 64-bit FNV-1a over `count` bytes.
    private static func hash(_ p: UnsafePointer<UInt8>, count: Int) -> UInt64 {
        var h = hashBasis
        for i in 0..<count { h = hash(h, adding: p[i]) }
        return h
    }

    private func lookup(_ p: UnsafePointer<UInt8>, count n: Int) -> Int? {
        lookup(p, count: n, hash: Self.hash(p, count: n))
    }

    /// FNV-1a's offset basis and one step, for hashes grown a byte at a time.
    private static let hashBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    private static func hash(_ h: UInt64, adding byte: UInt8) -> UInt64 { (h ^ UInt64(byte)) &* 0x100_0000_01b3 }

    private func lookup(_ p: UnsafePointer<UInt8>, count n: Int, hash: UInt64) -> Int? {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        return bytes.withUnsafeBufferPointer { b in
            while true {
                let v = Int(slots[slot])
                if v == 0 { return nil }
                let start = Int(offsets[v - 1])
                let end = Int(offsets[v])
                if end - start == n, memcmp(b.baseAddress! + start, p, n) == 0 { return v - 1 }
                slot = (slot + 1) & mask
            }
        }
    }

    /// One token of a segmented word: its id and the bytes of the word it covers.
    public struct Segment: Equatable, Sendable {
        /// The piece id (`unknownID` for unknown characters, fused).
        public var id: Int
        /// The byte range in the word.
        public var bytes: Range<Int>
    }

    /// The best segmentation of one word's UTF-8 bytes, whose character boundaries are
    /// `boundaries` (ascending byte offsets, starting at 0 and ending at the word's length).
    /// - Complexity: O(c·L) for c characters and pieces of at most L bytes.
    public func segment(_ word: UnsafeBufferPointer<UInt8>, boundaries: [Int]) -> [Segment] {
        let n = boundaries.count - 1
        guard n > 0, let base = word.baseAddress else { return [] }
        var best = [Double](repeating: -.infinity, count: n + 1)
        var piece = [Int](repeating: -1, count: n + 1)
        var from = [Int](repeating: -1, count: n + 1)
        best[0] = 0
        for i in 0..<n where best[i] > -.infinity {
            let start = boundaries[i]
            var hasSingle = false
            var e = i + 1
            // The candidate's hash grows with it: each byte is hashed once per start.
            var h = Self.hashBasis
            while e <= n, boundaries[e] - start <= longestPieceBytes {
                for b in boundaries[e - 1]..<boundaries[e] { h = Self.hash(h, adding: base[b]) }
                if let id = lookup(base + start, count: boundaries[e] - start, hash: h) {
                    if e == i + 1 { hasSingle = true }
                    let candidate = best[i] + Double(scores[id])
                    if from[e] < 0 || candidate > best[e] {
                        best[e] = candidate
                        piece[e] = id
                        from[e] = i
                    }
                }
                e += 1
            }
            if !hasSingle {
                let candidate = best[i] + unknownScore
                if from[i + 1] < 0 || candidate > best[i + 1] {
                    best[i + 1] = candidate
                    piece[i + 1] = -1
                    from[i + 1] = i
                }
            }
        }
        var reversed = [Segment]()
        var e = n
        while e > 0 {
            let s = from[e]
            let id = piece[e] < 0 ? unknownID : piece[e]
            let range = boundaries[s]..<boundaries[e]
            // Unknown tokens in a row become one token.
            if id == unknownID, let last = reversed.last, last.id == unknownID {
                reversed[reversed.count - 1].bytes = range.lowerBound..<last.bytes.upperBound
            } else {
                reversed.append(Segment(id: id, bytes: range))
            }
            e = s
        }
        return reversed.reversed()
    }
}
