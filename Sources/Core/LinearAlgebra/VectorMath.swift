/// Dot products, norms, cosine similarity and normalization on `Float` vectors, through BLAS.
///
/// Behaviour on edge cases, relied on throughout the package:
/// - the cosine similarity of anything with a zero vector is 0 (so its distance is 1), never NaN;
/// - normalizing a zero vector leaves it zero;
/// - the caller checks finiteness (the index and the embedding result reject NaN and ∞ with errors).
package enum VectorMath {
    /// The dot product `Σ aᵢ·bᵢ`. Both vectors must have the same length.
    /// - Complexity: O(n).
    package static func dot(_ a: [Float], _ b: [Float]) -> Float {
        precondition(a.count == b.count, "dot: lengths \(a.count) and \(b.count) differ")
        return a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                BLAS.dot(pa.baseAddress!, pb.baseAddress!, count: a.count)
            }
        }
    }

    /// The Euclidean (L2) norm.
    /// - Complexity: O(n).
    package static func norm(_ a: [Float]) -> Float {
        a.withUnsafeBufferPointer { BLAS.norm($0.baseAddress!, count: a.count) }
    }

    /// Cosine similarity `a·b / (|a|·|b|)` in [−1, 1]; 0 when either vector is zero.
    /// - Complexity: O(n).
    package static func cosineSimilarity(_ a: [Float], _ b: [Float]) -> Float {
        let denominator = norm(a) * norm(b)
        guard denominator > 0 else { return 0 }
        return min(1, max(-1, dot(a, b) / denominator))
    }

    /// Cosine distance, `1 − cosineSimilarity(a, b)`, in [0, 2].
    package static func cosineDistance(_ a: [Float], _ b: [Float]) -> Float {
        1 - cosineSimilarity(a, b)
    }

    /// `a` scaled to unit length; a zero vector, or one already of unit length (to 8 ulps), is
    /// returned unchanged.
    /// ```swift
    /// VectorMath.normalized([3, 4])  // [0.6, 0.8]
    /// VectorMath.normalized([0, 0])  // [0, 0]
    /// ```
    /// - Complexity: O(n).
    package static func normalized(_ a: [Float]) -> [Float] {
        var copy = a
        copy.withUnsafeMutableBufferPointer { normalize($0.baseAddress!, count: $0.count) }
        return copy
    }

    /// Scales `count` values at `x` to unit length in place; a zero vector stays zero, and so
    /// does a vector whose length is already 1 to within 8 ulps: normalizing twice changes
    /// nothing (a stored unit vector survives being indexed again bit for bit; rescaling it
    /// by 1/0.99999994 would move its last bits).
    package static func normalize(_ x: UnsafeMutablePointer<Float>, count: Int) {
        let n = BLAS.norm(UnsafePointer(x), count: count)
        guard n > 0, n.isFinite, abs(n - 1) > 8 * Float.ulpOfOne else { return }
        BLAS.scale(x, count: count, by: 1 / n)
    }
}
