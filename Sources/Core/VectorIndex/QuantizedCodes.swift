import Foundation
import LinearAlgebra

/// How a search scores the stored vectors.
///
/// `int8` and `binary` scan compact codes kept beside the floats (a quarter and a thirty-second
/// of their bytes), keep the best `k × rescore` candidates, and rescore those with the float
/// vectors, so hits carry exact cosine scores; only candidates that the codes miss are lost.
public enum SearchPrecision: String, Sendable, CaseIterable, Codable {
    /// Every float vector: exact.
    case exact
    /// 8-bit scalar codes, then exact rescoring.
    case int8
    /// 1-bit sign codes compared by Hamming distance, then exact rescoring.
    case binary

    /// The rescore factor used when a search gives none (exact: 1). Measured on real embeddings
    /// (Docs/Benchmarks.md): recall@10 against exact ≥ 0.99 for int8 and ≥ 0.95 for binary.
    public var defaultRescore: Int {
        switch self {
        case .exact: return 1
        case .int8: return 4
        case .binary: return 10
        }
    }
}

/// Scalar quantization of unit vectors to unsigned 8-bit codes.
///
/// - `perDimension` (as FAISS SQ8 and sentence-transformers do): each component's range
///   `[minimum, minimum + 255·step]` is learned from the data; values outside are clamped.
/// - `perVector`: each vector is scaled by its own largest magnitude (symmetric), nothing learned.
public struct Int8Quantizer: Sendable, Equatable {
    /// How component values map to codes.
    public enum Scheme: String, Sendable, Codable, CaseIterable {
        /// A range per component, learned from the data.
        case perDimension
        /// Each vector scaled by its own largest magnitude.
        case perVector
    }

    /// How this quantizer maps values to codes.
    public let scheme: Scheme
    /// The number of components of the vectors it encodes.
    public let dimension: Int
    /// Per component, the value that code 0 stands for (perDimension only; empty for perVector).
    public let minimum: [Float]
    /// Per component, the value between neighbouring codes (perDimension only; empty for perVector).
    public let step: [Float]

    /// A per-dimension quantizer with these ranges.
    /// - Throws: `invalidCodes` when the arrays are empty or differ in length, or hold non-finite
    ///   values or negative steps.
    public init(minimum: [Float], step: [Float]) throws {
        guard !minimum.isEmpty, minimum.count == step.count else {
            throw VectorIndexError.invalidCodes("int8 ranges need one minimum and one step per dimension")
        }
        guard minimum.allSatisfy(\.isFinite), step.allSatisfy({ $0.isFinite && $0 >= 0 }) else {
            throw VectorIndexError.invalidCodes("int8 ranges must be finite, with non-negative steps")
        }
        self.init(checkedMinimum: minimum, step: step)
    }

    /// Ranges already known to be valid (learned from finite vectors).
    private init(checkedMinimum minimum: [Float], step: [Float]) {
        scheme = .perDimension
        dimension = minimum.count
        self.minimum = minimum
        self.step = step
    }

    /// A per-vector (symmetric) quantizer.
    public init(perVectorDimension dimension: Int) {
        precondition(dimension > 0, "dimension must be positive")
        scheme = .perVector
        self.dimension = dimension
        minimum = []
        step = []
    }

    /// Learns the ranges from the row-major vectors in `vectors` (`dimension` values each;
    /// perDimension); an empty matrix gives the range of unit vectors, [−1, 1]. The buffer is read
    /// only during the call.
    package static func train(_ scheme: Scheme, vectors: UnsafeBufferPointer<Float>, dimension: Int) -> Int8Quantizer {
        if scheme == .perVector { return Int8Quantizer(perVectorDimension: dimension) }
        let rows = vectors.count / dimension
        var low = [Float](repeating: rows == 0 ? -1 : .infinity, count: dimension)
        var high = [Float](repeating: rows == 0 ? 1 : -.infinity, count: dimension)
        for r in 0..<rows {
            let base = r * dimension
            for j in 0..<dimension {
                let x = vectors[base + j]
                low[j] = min(low[j], x)
                high[j] = max(high[j], x)
            }
        }
        let step = (0..<dimension).map { (high[$0] - low[$0]) / 255 }
        return Int8Quantizer(checkedMinimum: low, step: step)
    }

    /// Encodes one vector into `dimension` codes; returns its scale (perVector: the largest
    /// magnitude; perDimension: 1).
    func encode(_ x: UnsafePointer<Float>, into codes: UnsafeMutablePointer<UInt8>) -> Float {
        switch scheme {
        case .perDimension:
            minimum.withUnsafeBufferPointer { low in
                step.withUnsafeBufferPointer { step in
                    for j in 0..<dimension {
                        let level = step[j] > 0 ? (x[j] - low[j]) / step[j] : 0
                        // Clamped to [0, 255], then rounded half up by truncating level + ½.
                        codes[j] = UInt8(min(255, max(0, level)) + 0.5)
                    }
                }
            }
            return 1
        case .perVector:
            var largest: Float = 0
            for j in 0..<dimension { largest = max(largest, abs(x[j])) }
            let scale = largest > 0 ? 127 / largest : 0
            for j in 0..<dimension {
                // x·127/largest lies in [−127, 127]: shifted to [1, 255] and rounded half up.
                codes[j] = UInt8(min(255, max(1, x[j] * scale + 128)) + 0.5)
            }
            return largest
        }
    }

    /// The query as signed codes within ±63 for `CodeKernels.int8DotRows`, and the sum of those
    /// codes (perVector scores subtract 128 × it).
    ///
    /// perDimension ranks by `Σ qⱼ·stepⱼ·codeⱼ` (the `Σ qⱼ·minimumⱼ` term is the same for every row).
    func queryCodes(_ unit: [Float]) -> (codes: [Int8], sum: Int32) {
        let weights = scheme == .perDimension ? (0..<dimension).map { unit[$0] * step[$0] } : unit
        let largest = weights.reduce(0) { max($0, abs($1)) }
        let limit = Float(CodeKernels.int8QueryLimit)
        let codes = weights.map { largest > 0 ? Int8(($0 / largest * limit).rounded()) : 0 }
        return (codes, codes.reduce(0) { $0 + Int32($1) })
    }
}

/// The int8 codes of an index: its quantizer, `count × dimension` codes, and per-row scales
/// (perVector only).
struct Int8Table: Sendable {
    var quantizer: Int8Quantizer
    var codes: StoredArray<UInt8>
    var scales: StoredArray<Float>

    init(quantizer: Int8Quantizer, codes: StoredArray<UInt8>, scales: StoredArray<Float>) {
        self.quantizer = quantizer
        self.codes = codes
        self.scales = scales
    }

    /// Codes for `rows` unit vectors.
    init(quantizer: Int8Quantizer, vectors: UnsafeBufferPointer<Float>) {
        self.quantizer = quantizer
        let d = quantizer.dimension
        let rows = vectors.count / d
        var codes = [UInt8](repeating: 0, count: rows * d)
        var scales = [Float](repeating: 1, count: quantizer.scheme == .perVector ? rows : 0)
        let perVector = quantizer.scheme == .perVector
        codes.withUnsafeMutableBufferPointer { c in
            scales.withUnsafeMutableBufferPointer { s in
                let shared = WorkerShared(EncodeTargets(vectors: vectors, codes: c.baseAddress, scales: s.baseAddress))
                forEachRowRange(rows: rows, dimension: d) { range in
                    for r in range {
                        let scale = quantizer.encode(
                            shared.value.vectors.baseAddress! + r * d, into: shared.value.codes! + r * d)
                        if perVector { shared.value.scales![r] = scale }
                    }
                }
            }
        }
        self.codes = .owned(codes)
        self.scales = .owned(scales)
    }

    /// One vector's codes and scale.
    private func encoded(_ unit: [Float]) -> (codes: [UInt8], scale: Float) {
        var row = [UInt8](repeating: 0, count: quantizer.dimension)
        let scale = unit.withUnsafeBufferPointer { x in
            row.withUnsafeMutableBufferPointer { quantizer.encode(x.baseAddress!, into: $0.baseAddress!) }
        }
        return (row, scale)
    }

    mutating func append(_ unit: [Float]) {
        let (row, scale) = encoded(unit)
        codes.mutate { $0.append(contentsOf: row) }
        if quantizer.scheme == .perVector { scales.mutate { $0.append(scale) } }
    }

    mutating func replace(row: Int, with unit: [Float]) {
        let d = quantizer.dimension
        let (encoded, scale) = encoded(unit)
        codes.mutate { $0.replaceSubrange((row * d)..<((row + 1) * d), with: encoded) }
        if quantizer.scheme == .perVector { scales.mutate { $0[row] = scale } }
    }

    mutating func remove(row: Int) {
        let d = quantizer.dimension
        codes.mutate { $0.removeSubrange((row * d)..<((row + 1) * d)) }
        if quantizer.scheme == .perVector { scales.mutate { $0.remove(at: row) } }
    }
}

/// The 1-bit sign codes of an index: bit j of a row is set when component j is positive.
struct BinaryTable: Sendable {
    let words: Int
    var codes: StoredArray<UInt64>

    init(words: Int, codes: StoredArray<UInt64>) {
        self.words = words
        self.codes = codes
    }

    init(dimension: Int, vectors: UnsafeBufferPointer<Float>) {
        words = (dimension + 63) / 64
        let rows = vectors.count / dimension
        var codes = [UInt64](repeating: 0, count: rows * words)
        let words = self.words
        codes.withUnsafeMutableBufferPointer { c in
            let shared = WorkerShared(EncodeTargets(vectors: vectors, bits: c.baseAddress))
            forEachRowRange(rows: rows, dimension: dimension) { range in
                for r in range {
                    Self.encode(
                        shared.value.vectors.baseAddress! + r * dimension, count: dimension,
                        into: shared.value.bits! + r * words)
                }
            }
        }
        self.codes = .owned(codes)
    }

    /// Sets bit j of `codes` (zeroed by the caller) when `x[j] > 0`.
    static func encode(_ x: UnsafePointer<Float>, count: Int, into codes: UnsafeMutablePointer<UInt64>) {
        for j in 0..<count where x[j] > 0 { codes[j / 64] |= 1 << UInt64(j % 64) }
    }

    static func code(of unit: [Float]) -> [UInt64] {
        var code = [UInt64](repeating: 0, count: (unit.count + 63) / 64)
        unit.withUnsafeBufferPointer { x in
            code.withUnsafeMutableBufferPointer { encode(x.baseAddress!, count: unit.count, into: $0.baseAddress!) }
        }
        return code
    }

    mutating func append(_ unit: [Float]) {
        let code = Self.code(of: unit)
        codes.mutate { $0.append(contentsOf: code) }
    }

    mutating func replace(row: Int, with unit: [Float]) {
        let code = Self.code(of: unit)
        codes.mutate { $0.replaceSubrange((row * words)..<((row + 1) * words), with: code) }
    }

    mutating func remove(row: Int) {
        codes.mutate { $0.removeSubrange((row * words)..<((row + 1) * words)) }
    }
}

/// Runs `body` over contiguous row ranges, one per core for large matrices.
private func forEachRowRange(rows: Int, dimension: Int, _ body: @Sendable (Range<Int>) -> Void) {
    _ = RowSplit.map(rows: rows, parts: RowSplit.parts(rows: rows, dimension: dimension), body)
}

/// Where the encoders of one table write; each worker writes only its own rows.
private struct EncodeTargets {
    let vectors: UnsafeBufferPointer<Float>
    var codes: UnsafeMutablePointer<UInt8>? = nil
    var scales: UnsafeMutablePointer<Float>? = nil
    var bits: UnsafeMutablePointer<UInt64>? = nil
}
