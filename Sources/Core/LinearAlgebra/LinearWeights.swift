/// A linear layer `y = x·Wᵀ + b` in Hugging Face's layout: `weight: [out, in]`, `bias: [out]`
/// (empty: no bias). The encoder's and the decoder's projections are both this type.
/// Its weight is held in one form: `Float` (`weight`); or, once `quantizedToInt8()` has made it
/// so, 8-bit codes per output channel (`int8Weight`, with `weight` empty); or, for the decoder,
/// GGUF-style blocks of 32 (`blockWeight`, with `weight` empty).
package struct LinearWeights: Sendable {
    /// `[out, in]`, row-major; empty when the layer is quantized.
    package var weight: [Float]
    /// `[out]`, or empty for a layer without bias.
    package var bias: [Float]
    /// `in`: the length of an input row.
    package var inputSize: Int
    /// `out`: the length of an output row.
    package var outputSize: Int
    /// The weight quantized to int8 per output channel, packed for `Int8GEMM`; nil in `Float`.
    package private(set) var int8Weight: QuantizedMatrix?
    /// The weight in blocks of 32 with 4- or 8-bit codes, for `BlockGEMM`; nil in the other forms.
    package private(set) var blockWeight: BlockQuantizedMatrix?

    /// A layer in `Float`.
    package init(weight: [Float], bias: [Float], inputSize: Int, outputSize: Int) {
        self.weight = weight
        self.bias = bias
        self.inputSize = inputSize
        self.outputSize = outputSize
    }

    /// A layer whose weight is in blocks (`bias`: `[out]` or empty).
    package init(blockWeight: BlockQuantizedMatrix, bias: [Float]) {
        precondition(
            bias.isEmpty || bias.count == blockWeight.outputSize,
            "LinearWeights: \(bias.count) biases for \(blockWeight.outputSize) outputs")
        self.weight = []
        self.bias = bias
        self.inputSize = blockWeight.inputSize
        self.outputSize = blockWeight.outputSize
        self.blockWeight = blockWeight
    }

    /// The same layer with its weight quantized to int8 per output channel (symmetric), the
    /// `Float` copy dropped. A layer already quantized comes back as it is.
    /// - Throws: `QuantizedMatrix.InvalidWeight` for a NaN or infinite weight.
    package func quantizedToInt8() throws(QuantizedMatrix.InvalidWeight) -> LinearWeights {
        guard int8Weight == nil, blockWeight == nil else { return self }
        var layer = self
        layer.int8Weight = try QuantizedMatrix(weights: weight, outputSize: outputSize, inputSize: inputSize)
        layer.weight = []
        return layer
    }

    /// The bytes the weight and bias take in memory.
    package var byteCount: Int {
        (weight.count + bias.count) * MemoryLayout<Float>.size + (int8Weight?.byteCount ?? 0)
            + (blockWeight?.byteCount ?? 0)
    }
}

extension LinearWeights {
    /// `y[R, out] = (accumulate ? y : 0) + x[R, in] · Wᵀ + b`. `y` must not alias `x`.
    /// With `accumulate`, `y` holds the residual on entry and the sub-layer's sum on return.
    /// A quantized layer quantizes `x` into `buffer` first and runs `Int8GEMM`; a `Float` one
    /// runs sgemm and leaves `buffer` alone.
    package func apply(
        _ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>, accumulate: Bool = false,
        buffer: inout QuantizedRows
    ) {
        precondition(blockWeight == nil, "LinearWeights.apply: a block-quantized layer runs through BlockGEMM")
        if let int8Weight {
            bias.withUnsafeBufferPointer { b in
                let done = Int8GEMM.matmul(
                    activations: x, rows: rows, weights: int8Weight, bias: b.isEmpty ? nil : b.baseAddress,
                    into: y, accumulate: accumulate, buffer: &buffer)
                precondition(done, "Int8GEMM: the default path always runs")
            }
            return
        }
        // Put the bias in every row (onto the residual when accumulating), then add the product
        // onto it (beta = 1): the residual sum costs no pass of its own.
        bias.withUnsafeBufferPointer { b in
            for r in 0..<rows {
                if let bias = b.baseAddress, !b.isEmpty {
                    if accumulate {
                        Kernels.add(bias, into: y + r * outputSize, count: outputSize)
                    } else {
                        (y + r * outputSize).update(from: bias, count: outputSize)
                    }
                } else if !accumulate {
                    (y + r * outputSize).update(repeating: 0, count: outputSize)
                }
            }
        }
        weight.withUnsafeBufferPointer { w in
            BLAS.gemm(
                .none, .transposed, m: rows, n: outputSize, k: inputSize,
                a: x, lda: inputSize, b: w.baseAddress!, ldb: inputSize,
                beta: 1, c: y, ldc: outputSize)
        }
    }
}
