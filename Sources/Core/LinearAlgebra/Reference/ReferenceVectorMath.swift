/// Plain-loop twins of `VectorMath`, accumulating in `Double`.
package enum ReferenceVectorMath {
    /// `Σ aᵢ·bᵢ`.
    package static func dot(_ a: [Float], _ b: [Float]) -> Double {
        ReferenceKernels.dot(a, b)
    }

    /// `sqrt(Σ aᵢ²)`.
    package static func norm(_ a: [Float]) -> Double {
        dot(a, a).squareRoot()
    }

    /// Cosine similarity; 0 when either vector is zero.
    package static func cosineSimilarity(_ a: [Float], _ b: [Float]) -> Double {
        let denominator = norm(a) * norm(b)
        return denominator > 0 ? dot(a, b) / denominator : 0
    }

    /// `a / |a|`, or `a` itself when it is zero.
    package static func normalized(_ a: [Float]) -> [Float] {
        let n = norm(a)
        return n > 0 ? a.map { Float(Double($0) / n) } : a
    }
}
