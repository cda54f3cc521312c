import LinearAlgebra

extension ContextualEmbeddingResult {
    /// The pooled vector for `strategy`; see the individual methods.
    public func pooled(_ strategy: PoolingStrategy) -> [Float] {
        switch strategy {
        case .mean: return meanPooled()
        case .meanExcludingSpecialTokens: return meanPooled(excludingSpecialTokens: true)
        case .max: return maxPooled()
        case .cls: return clsPooled()
        }
    }

    /// The mean of the token vectors, in one vectorized pass over the matrix.
    ///
    /// With `excludingSpecialTokens`, `[CLS]`/`[SEP]` are left out (if that leaves nothing, the
    /// result is the zero vector). An empty result gives the zero vector of length `dimension`.
    /// - Complexity: O(T·D).
    public func meanPooled(excludingSpecialTokens: Bool = false) -> [Float] {
        guard excludingSpecialTokens else { return weightedMean(nil) }
        return weightedMean(isSpecialToken.map { $0 ? 0 : 1 })
    }

    /// The mean weighted per token: `Σ wₜ·vₜ / Σ wₜ`. An attention mask is weights of 0 and 1.
    ///
    /// - Throws: `EmbeddingsError.invalidWeights` when the count differs from `sequenceLength`
    ///   or a weight is negative or not finite. All-zero weights give the zero vector.
    /// - Complexity: O(T·D).
    public func meanPooled(weights: [Float]) throws -> [Float] {
        guard weights.count == sequenceLength else {
            throw EmbeddingsError.invalidWeights("\(weights.count) weights for \(sequenceLength) tokens")
        }
        if let bad = weights.firstIndex(where: { !$0.isFinite || $0 < 0 }) {
            throw EmbeddingsError.invalidWeights("weight \(bad) is \(weights[bad])")
        }
        return weightedMean(weights)
    }

    /// The mean over the tokens of a sub-range of `string` (the basis of late chunking): every
    /// non-special token that overlaps `range`. No such token gives the zero vector.
    /// - Complexity: O(T·D).
    public func meanPooled(over range: Range<String.Index>) -> [Float] {
        let weights: [Float] = (0..<sequenceLength).map { t in
            !isSpecialToken[t] && !tokenRanges[t].isEmpty && token(t, overlaps: range) ? 1 : 0
        }
        return weightedMean(weights)
    }

    /// The component-wise maximum over all tokens; the zero vector when there are no tokens.
    /// - Complexity: O(T·D).
    public func maxPooled() -> [Float] {
        guard sequenceLength > 0 else { return [Float](repeating: 0, count: dimension) }
        let d = dimension
        return tokenVectors.withUnsafeBufferPointer { m in
            var out = Array(m[0..<d])
            for t in 1..<sequenceLength {
                let row = t * d
                for j in 0..<d where m[row + j] > out[j] { out[j] = m[row + j] }
            }
            return out
        }
    }

    /// The first token's vector (`[CLS]` for BERT models); the zero vector when there are no tokens.
    public func clsPooled() -> [Float] {
        sequenceLength > 0 ? tokenVectors.row(0) : [Float](repeating: 0, count: dimension)
    }

    /// The seed's mean pooling, kept as the reference the fast path is tested and timed against:
    /// an optional running sum of `[Double]` filled from `enumerateTokenVectors`, divided at the end.
    /// Returns `nil` when there is no token to average.
    /// - Complexity: O(T·D), with one array allocation per token.
    package func meanVectorNaive() -> [Double]? {
        var sum: [Double]? = nil
        var count = 0
        enumerateTokenVectors(in: string.startIndex..<string.endIndex) { vector, _ in
            if var running = sum {
                for j in running.indices { running[j] += vector[j] }
                sum = running
            } else {
                sum = vector
            }
            count += 1
            return true
        }
        guard let total = sum, count > 0 else { return nil }
        return total.map { $0 / Double(count) }
    }

    /// `Σ wₜ·rowₜ / Σ wₜ` in one vectorized pass over the token matrix (`nil` weights: all ones).
    private func weightedMean(_ weights: [Float]?) -> [Float] {
        var out = [Float](repeating: 0, count: dimension)
        let total = weights.map { $0.reduce(0, +) } ?? Float(sequenceLength)
        guard sequenceLength > 0, dimension > 0, total > 0 else { return out }
        tokenVectors.withUnsafeBufferPointer { m in
            out.withUnsafeMutableBufferPointer { y in
                if let weights {
                    weights.withUnsafeBufferPointer { w in
                        Kernels.weightedColumnSum(
                            m.baseAddress!, rows: sequenceLength, columns: dimension,
                            weights: w.baseAddress!, scale: 1 / total, into: y.baseAddress!)
                    }
                } else {
                    Kernels.weightedColumnSum(
                        m.baseAddress!, rows: sequenceLength, columns: dimension,
                        weights: nil, scale: 1 / total, into: y.baseAddress!)
                }
            }
        }
        return out
    }
}

extension Array where Element == Float {
    /// This vector scaled to unit L2 norm; a zero vector stays zero (never NaN).
    public var normalizedToUnitLength: [Float] { VectorMath.normalized(self) }
}
