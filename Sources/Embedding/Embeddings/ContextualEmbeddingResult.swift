import Foundation
import LinearAlgebra

/// One vector per token of a string, each tied to the token's range in that string.
///
/// The mirror of Apple's `NLContextualEmbeddingResult`, plus what Apple leaves out: a public
/// initializer (wrap vectors from any source, including Apple's, and unit-test pooling), token ids,
/// zero-copy `Float` access to the `T × D` matrix, and pooling (`ContextualEmbeddingResult+Pooling`).
///
/// ```swift
/// let result = try embedding.embeddingResult(for: "A river bank.", language: "en")
/// result.enumerateTokenVectors(in: result.string.startIndex..<result.string.endIndex) { vector, range in
///     print(result.string[range], vector.count)
///     return true
/// }
/// ```
public struct ContextualEmbeddingResult: Sendable {
    /// The string that was embedded, exactly as given.
    public let string: String
    /// The BCP-47 language the caller declared, if any.
    public let language: String?
    /// Each token's range in `string`. Special tokens such as `[CLS]` have empty ranges.
    public let tokenRanges: [Range<String.Index>]
    /// Each token's vocabulary id, when the result came from a model.
    public let tokenIDs: [Int]?
    /// Each token as spelled in the vocabulary (`##` continuations included), when the result came
    /// from a model.
    public let tokenTexts: [String]?
    /// For each token, whether it is a special token (`[CLS]`, `[SEP]`) added by the model.
    public let isSpecialToken: [Bool]
    /// The `T × D` token vectors, row `t` for token `t`.
    public let tokenVectors: Matrix

    /// The number of tokens, `T`.
    public var sequenceLength: Int { tokenRanges.count }
    /// The length of each token vector, `D`.
    public var dimension: Int { tokenVectors.columns }

    /// Wraps token vectors from any source.
    ///
    /// - Parameters:
    ///   - string: the text the tokens come from.
    ///   - language: an optional BCP-47 language tag.
    ///   - tokenRanges: one range in `string` per token, on Unicode scalar boundaries.
    ///   - tokenVectors: one vector per token, all of the same non-zero length, all finite.
    ///   - tokenIDs: optional vocabulary ids, one per token.
    ///   - isSpecialToken: optional flags marking special tokens; all `false` when omitted.
    /// - Throws: `EmbeddingsError.countMismatch`, `.rangeOutOfBounds`, `.inconsistentDimension`
    ///   or `.nonFiniteValue`, naming the first offending token.
    /// - Complexity: O(T·D).
    public init(
        string: String, language: String? = nil,
        tokenRanges: [Range<String.Index>], tokenVectors: [[Double]],
        tokenIDs: [Int]? = nil, isSpecialToken: [Bool]? = nil
    ) throws {
        guard tokenRanges.count == tokenVectors.count else {
            throw EmbeddingsError.countMismatch(ranges: tokenRanges.count, vectors: tokenVectors.count)
        }
        let dimension = tokenVectors.first?.count ?? 0
        var values = [Float]()
        values.reserveCapacity(tokenVectors.count * dimension)
        for (t, vector) in tokenVectors.enumerated() {
            guard vector.count == dimension, dimension > 0 else {
                throw EmbeddingsError.inconsistentDimension(token: t, expected: max(dimension, 1), actual: vector.count)
            }
            for (j, v) in vector.enumerated() {
                let f = Float(v)
                guard f.isFinite else { throw EmbeddingsError.nonFiniteValue(token: t, component: j) }
                values.append(f)
            }
        }
        try self.init(
            string: string, language: language, tokenRanges: tokenRanges,
            tokenVectors: Matrix(rows: tokenVectors.count, columns: dimension, values: values),
            tokenIDs: tokenIDs, isSpecialToken: isSpecialToken)
    }

    /// Wraps a `T × D` matrix of token vectors (no copy). Validates like the `[[Double]]` initializer.
    public init(
        string: String, language: String? = nil,
        tokenRanges: [Range<String.Index>], tokenVectors: Matrix,
        tokenIDs: [Int]? = nil, isSpecialToken: [Bool]? = nil
    ) throws {
        guard tokenRanges.count == tokenVectors.rows else {
            throw EmbeddingsError.countMismatch(ranges: tokenRanges.count, vectors: tokenVectors.rows)
        }
        if tokenVectors.rows > 0, tokenVectors.columns == 0 {
            throw EmbeddingsError.inconsistentDimension(token: 0, expected: 1, actual: 0)
        }
        if let ids = tokenIDs, ids.count != tokenRanges.count {
            throw EmbeddingsError.countMismatch(ranges: tokenRanges.count, vectors: ids.count)
        }
        if let flags = isSpecialToken, flags.count != tokenRanges.count {
            throw EmbeddingsError.countMismatch(ranges: tokenRanges.count, vectors: flags.count)
        }
        let scalars = string.unicodeScalars
        for (t, range) in tokenRanges.enumerated() {
            guard range.lowerBound >= string.startIndex, range.upperBound <= string.endIndex,
                String.Index(range.lowerBound, within: scalars) != nil,
                String.Index(range.upperBound, within: scalars) != nil
            else { throw EmbeddingsError.rangeOutOfBounds(token: t) }
        }
        if let bad = tokenVectors.values.firstIndex(where: { !$0.isFinite }) {
            throw EmbeddingsError.nonFiniteValue(
                token: bad / tokenVectors.columns, component: bad % tokenVectors.columns)
        }
        self.init(
            uncheckedString: string, language: language, tokenRanges: tokenRanges, tokenVectors: tokenVectors,
            tokenIDs: tokenIDs, tokenTexts: nil,
            isSpecialToken: isSpecialToken ?? [Bool](repeating: false, count: tokenRanges.count))
    }

    /// The encoder's own path: its output is valid by construction.
    init(
        uncheckedString string: String, language: String?, tokenRanges: [Range<String.Index>],
        tokenVectors: Matrix, tokenIDs: [Int]?, tokenTexts: [String]?, isSpecialToken: [Bool]
    ) {
        self.tokenTexts = tokenTexts
        self.string = string
        self.language = language
        self.tokenRanges = tokenRanges
        self.tokenVectors = tokenVectors
        self.tokenIDs = tokenIDs
        self.isSpecialToken = isSpecialToken
    }

    /// Whether token `t` overlaps `range`.
    ///
    /// A token with a non-empty range overlaps when the two ranges share a character (for an empty
    /// `range`, when the token contains its position). A token with an empty range (a special
    /// token) at position `p` overlaps when `range.lowerBound ≤ p ≤ range.upperBound`.
    public func token(_ t: Int, overlaps range: Range<String.Index>) -> Bool {
        let token = tokenRanges[t]
        if token.isEmpty {
            return range.lowerBound <= token.lowerBound && token.lowerBound <= range.upperBound
        }
        if range.isEmpty {
            return token.lowerBound <= range.lowerBound && range.lowerBound < token.upperBound
        }
        return token.lowerBound < range.upperBound && range.lowerBound < token.upperBound
    }

    /// Visits, in order, the tokens that overlap `range`, with each token's vector and range,
    /// until `block` returns `false`.
    ///
    /// - Complexity: O(T + V·D), where V is the number of tokens visited.
    public func enumerateTokenVectors(
        in range: Range<String.Index>, using block: ([Double], Range<String.Index>) -> Bool
    ) {
        for t in 0..<sequenceLength where token(t, overlaps: range) {
            let vector = tokenVectors.withUnsafeBufferPointer { buffer in
                (0..<dimension).map { Double(buffer[t * dimension + $0]) }
            }
            if !block(vector, tokenRanges[t]) { return }
        }
    }

    /// The vector and range of the token that contains `index`, or `nil` when no token does
    /// (white space, removed characters, or an index outside the string).
    /// - Complexity: O(T + D).
    public func tokenVector(at index: String.Index) -> ([Double], Range<String.Index>)? {
        guard let t = tokenRanges.firstIndex(where: { !$0.isEmpty && $0.contains(index) }) else { return nil }
        return (tokenVectors.row(t).map(Double.init), tokenRanges[t])
    }

    /// Calls `body` with the contiguous `T × D` token matrix, row-major. The pointer must not escape.
    public func withUnsafeTokenVectors<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try tokenVectors.withUnsafeBufferPointer(body)
    }

    /// The `[start, end)` UTF-8 byte offsets of each token's range in `string`.
    public var utf8Offsets: [(start: Int, end: Int)] {
        let utf8 = string.utf8
        return tokenRanges.map { range in
            (
                utf8.distance(from: utf8.startIndex, to: range.lowerBound),
                utf8.distance(from: utf8.startIndex, to: range.upperBound)
            )
        }
    }
}
