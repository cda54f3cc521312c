/// Plain-loop twins of `BlockGEMM`: what the quantizer and the products compute, one value at a time.
extension ReferenceKernels {
    /// One row quantized as `BlockGEMM.quantize` does it, in the same `Float` operations, per block
    /// of 32: `d_a = max|x| / 127`, `a = clamp(round(x / d_a), −127, 127)` to nearest even,
    /// `s_a = Σ a`; a block whose `d_a` is not above 0 gets `d_a = 0` and codes 0. Codes in
    /// element order. `x.count` a multiple of 32; values finite.
    package static func blockQuantizedRow(_ x: [Float]) -> (codes: [Int8], scales: [Float], sums: [Int32]) {
        let size = BlockQuantizedMatrix.blockSize
        precondition(x.count % size == 0, "blockQuantizedRow: \(x.count) values")
        var codes = [Int8](repeating: 0, count: x.count)
        var scales = [Float]()
        var sums = [Int32]()
        for b in 0..<(x.count / size) {
            let block = x[(b * size)..<((b + 1) * size)]
            let d = block.reduce(Float(0)) { max($0, abs($1)) } / 127
            guard d > 0 else {
                scales.append(0)
                sums.append(0)
                continue
            }
            var sum: Int32 = 0
            for (k, v) in zip(block.indices, block) {
                let a = Int8(max(-127, min(127, (v / d).rounded(.toNearestOrEven))))
                codes[k] = a
                sum += Int32(a)
            }
            scales.append(d)
            sums.append(sum)
        }
        return (codes, scales, sums)
    }

    /// `I[t][j − first][b] = Σᵢ u[j][32b + i] · a[t][32b + i] − z · Σᵢ a[t][32b + i]` for activation
    /// codes `a: [T, in]` (element order) and the columns `columns` of `w`, by the plain loops in
    /// `Int32` (which trap on overflow): `[T, columns.count, in / 32]`.
    package static func blockIntegers(_ a: [Int8], rows: Int, _ w: BlockQuantizedMatrix, columns: Range<Int>) -> [Int32]
    {
        let k = w.inputSize
        let size = BlockQuantizedMatrix.blockSize
        let blocks = w.blocksPerRow
        precondition(a.count == rows * k, "blockIntegers: \(a.count) codes for \(rows)×\(k)")
        var result = [Int32](repeating: 0, count: rows * columns.count * blocks)
        for (column, j) in columns.enumerated() {
            let u = (0..<k).map { Int32(w.code(row: j, column: $0)) }
            for t in 0..<rows {
                for b in 0..<blocks {
                    var dot: Int32 = 0
                    var sum: Int32 = 0
                    for i in (b * size)..<((b + 1) * size) {
                        let x = Int32(a[t * k + i])
                        dot += u[i] * x
                        sum += x
                    }
                    result[(t * columns.count + column) * blocks + b] = dot - Int32(w.zeroPoint) * sum
                }
            }
        }
        return result
    }

    /// The product `BlockGEMM.multiply` approximates, in `Double`, for activation codes
    /// `a: [T, in]` (element order) with scales `[T, in / 32]`, over the columns `columns` of `w`:
    /// `value[t][j − first] = residual[t][j] + bias[j] + Σ_b (d·d_a·I + m·d_a·s_a)`, and beside it
    /// `magnitude`, the same sum of absolute terms — the scale a `Float` result's rounding error
    /// is measured against. `residual: [T, out]` (nil: none). `integers`, when given, are
    /// `blockIntegers(a, rows:, w, columns:)` computed before.
    package static func blockMatMul(
        _ a: [Int8], scales aScales: [Float], rows: Int, _ w: BlockQuantizedMatrix, columns: Range<Int>,
        bias: [Float]?, residual: [Float]?, integers: [Int32]? = nil
    ) -> (values: [Double], magnitudes: [Double]) {
        let blocks = w.blocksPerRow
        let size = BlockQuantizedMatrix.blockSize
        let integers = integers ?? blockIntegers(a, rows: rows, w, columns: columns)
        var values = [Double]()
        var magnitudes = [Double]()
        for t in 0..<rows {
            let sums = (0..<blocks).map { b in
                (0..<size).reduce(0.0) { $0 + Double(a[t * w.inputSize + b * size + $1]) }
            }
            for (column, j) in columns.enumerated() {
                var value = 0.0
                var magnitude = 0.0
                func add(_ term: Double) {
                    value += term
                    magnitude += abs(term)
                }
                if let residual { add(Double(residual[t * w.outputSize + j])) }
                if let bias { add(Double(bias[j])) }
                for b in 0..<blocks {
                    let da = Double(aScales[t * blocks + b])
                    let d = Double(HalfFloat.float(fromHalf: w.scales[j * blocks + b]))
                    add(d * da * Double(integers[(t * columns.count + column) * blocks + b]))
                    if let mins = w.mins {
                        add(Double(HalfFloat.float(fromHalf: mins[j * blocks + b])) * da * sums[b])
                    }
                }
                values.append(value)
                magnitudes.append(magnitude)
            }
        }
        return (values, magnitudes)
    }

    /// The product of the dequantized values in `Double`: `Σₖ d_a·a[t][k] · W[j][k] + bias[j]`,
    /// with `W[j][k] = d·(u − z) + m` — the same number as `blockMatMul` by another route, so
    /// that the two references check each other.
    package static func blockDequantizedMatMul(
        _ a: [Int8], scales aScales: [Float], rows: Int, _ w: BlockQuantizedMatrix, columns: Range<Int>, bias: [Float]?
    ) -> [Double] {
        let blocks = w.blocksPerRow
        let size = BlockQuantizedMatrix.blockSize
        var values = [Double]()
        for t in 0..<rows {
            for j in columns {
                var value = bias.map { Double($0[j]) } ?? 0
                for k in 0..<w.inputSize {
                    value +=
                        Double(aScales[t * blocks + k / size]) * Double(a[t * w.inputSize + k])
                        * w.value(row: j, column: k)
                }
                values.append(value)
            }
        }
        return values
    }
}
