import CKernels

/// A linear layer's weight matrix `W: [out, in]` quantized to signed 8 bits per output channel
/// (symmetric: `W[j][k] ≈ scales[j] · q[j][k]`, `q` in −127 … 127) and packed once in the layout
/// every `Int8GEMM` path reads, with the column sums the activations' zero points need.
///
/// ```swift
/// let w = try QuantizedMatrix(weights: linear.weight, outputSize: 384, inputSize: 384)
/// Int8GEMM.matmul(activations: x, rows: t, weights: w, bias: b, into: y, buffer: &rows)
/// ```
/// - Complexity: O(out·in) to build; `byteCount` is about a quarter of the float32 matrix.
package struct QuantizedMatrix: Sendable {
    /// A weight that is NaN or infinite: such a layer cannot be quantized.
    package struct InvalidWeight: Error, Equatable, CustomStringConvertible {
        /// Output channel (row of `W`) and input (column) of the first non-finite weight.
        package let row: Int, column: Int
        package init(row: Int, column: Int) {
            self.row = row
            self.column = column
        }
        package var description: String { "weight [\(row), \(column)] is not finite" }
    }

    /// Output columns per packed panel: a column range a product is split at must start at a multiple of it.
    package static let panelWidth = Int(CE_GEMM_PANEL)

    /// `out`: rows of `W`, columns of the product.
    package let outputSize: Int
    /// `in`: columns of `W`, the depth of the product (at most `Int8GEMM.maximumDepth`).
    package let inputSize: Int
    /// `[out]`: each output channel's scale.
    package let scales: [Float]
    /// `[out]`: `Σₖ q[j][k]`, for the zero-point correction `Σ (a − z)·q = Σ a·q − z·Σ q`.
    package let columnSums: [Int32]
    private let packed: PackedBytes

    /// Quantizes `weights` (`[out, in]`, row-major, Hugging Face's layout) per output channel:
    /// `scale = max|W[j]| / 127`, `q = round(W / scale)` to nearest even (a zero row: scale 1, codes 0).
    /// - Throws: `InvalidWeight` for the first NaN or infinite weight.
    package init(weights: [Float], outputSize: Int, inputSize: Int) throws(InvalidWeight) {
        precondition(
            outputSize >= 0 && inputSize >= 0 && weights.count == outputSize * inputSize,
            "QuantizedMatrix: \(weights.count) weights for \(outputSize)×\(inputSize)")
        var codes = [Int8](repeating: 0, count: weights.count)
        var scales = [Float](repeating: 1, count: outputSize)
        for j in 0..<outputSize {
            let row = weights[(j * inputSize)..<((j + 1) * inputSize)]
            if let bad = row.firstIndex(where: { !$0.isFinite }) {
                throw InvalidWeight(row: j, column: bad - j * inputSize)
            }
            let (values, scale) = Self.quantizedChannel(row)
            codes.replaceSubrange((j * inputSize)..<((j + 1) * inputSize), with: values)
            scales[j] = scale
        }
        self.init(codes: codes, scales: scales, outputSize: outputSize, inputSize: inputSize)
    }

    /// Packs codes that are already quantized (`codes: [out, in]`, any `Int8` values, −128
    /// included): for tests of the kernels at the extremes.
    package init(codes: [Int8], scales: [Float], outputSize: Int, inputSize: Int) {
        precondition(
            outputSize >= 0 && inputSize >= 0 && codes.count == outputSize * inputSize && scales.count == outputSize,
            "QuantizedMatrix: \(codes.count) codes, \(scales.count) scales for \(outputSize)×\(inputSize)")
        precondition(
            inputSize <= Int8GEMM.maximumDepth, "QuantizedMatrix: depth \(inputSize) over \(Int8GEMM.maximumDepth)")
        self.outputSize = outputSize
        self.inputSize = inputSize
        self.scales = scales
        let packed = PackedBytes(count: ce_gemm_packed_size(outputSize, inputSize))
        var sums = [Int32](repeating: 0, count: outputSize)
        codes.withUnsafeBufferPointer { c in
            sums.withUnsafeMutableBufferPointer { s in
                if let source = c.baseAddress, let out = s.baseAddress {
                    ce_gemm_pack_s8(source, outputSize, inputSize, packed.bytes, out)
                }
            }
        }
        self.columnSums = sums
        self.packed = packed
    }

    /// One output channel quantized symmetrically: `scale = max|w| / 127`, `q = round(w / scale)`.
    /// Values must be finite.
    package static func quantizedChannel<C: Collection<Float>>(_ w: C) -> (values: [Int8], scale: Float) {
        let largest = w.reduce(Float(0)) { max($0, abs($1)) }
        let scale = largest / 127
        // Below the smallest normal float the row is zero to within 1e-38: codes 0, scale 1.
        guard scale >= Float.leastNormalMagnitude else { return ([Int8](repeating: 0, count: w.count), 1) }
        return (w.map { Int8(max(-127, min(127, ($0 / scale).rounded(.toNearestOrEven)))) }, scale)
    }

    /// Bytes held: packed codes, scales and column sums (the float32 matrix takes 4·out·in).
    package var byteCount: Int { packed.count + 8 * outputSize }

    /// Calls `body` with the packed codes (64-byte aligned, `ce_gemm_packed_size` bytes). The
    /// pointer must not escape `body`.
    package func withPackedCodes<R>(_ body: (UnsafePointer<Int8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(packed) { try body(UnsafePointer(packed.bytes)) }
    }
}

/// One 64-byte-aligned allocation of packed codes, written once by `QuantizedMatrix.init` and
/// only read afterwards, freed with the last matrix that shares it.
// @unchecked Sendable: the pointer is not Sendable, but the bytes behind it are immutable after
// init (like MappedFile's mapping), so reads from any number of threads cannot race.
private final class PackedBytes: @unchecked Sendable {
    let bytes: UnsafeMutablePointer<Int8>
    let count: Int

    init(count: Int) {
        self.count = count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 64)
        bytes = raw.initializeMemory(as: Int8.self, repeating: 0, count: max(count, 1))
    }

    deinit { UnsafeMutableRawPointer(bytes).deallocate() }
}
