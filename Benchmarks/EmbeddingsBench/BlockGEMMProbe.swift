import Foundation
import LinearAlgebra

/// `embeddings-bench probe blockgemm`: the block-quantized products (BlockGEMM) on one thread
/// for the linear layers of SmolLM2-135M (hidden 576, intermediate 1536, vocabulary 49,152), on
/// every path this CPU runs, beside the int8 products (Int8GEMM) on the same shapes, as one JSON
/// line. Two row counts: 1 (decoding a token: memory-bound, reported as GB/s of weight bytes
/// read) and 128 (prefill: compute-bound, reported as GOP/s, 2·rows·outputs·inputs per second).
/// Each figure times `matmul` (quantizing the float activations included): the fastest of several
/// rounds, each round calling every contender (the block formats and Int8GEMM) in turn. At one
/// row the calls cycle through copies of the weights totalling at least 32 MB, so that each call
/// reads its weights from beyond the L2 cache, as decoding a whole model does.
/// Every path's result is checked against the generic path's before it is timed.
enum BlockGEMMProbe {
    /// A projection `y[rows, outputs] = x[rows, inputs] · Wᵀ`.
    struct Shape {
        var name: String
        var inputs: Int
        var outputs: Int
    }

    static let shapes = [
        Shape(name: "query-key-value", inputs: 576, outputs: 960),
        Shape(name: "attention output", inputs: 576, outputs: 576),
        Shape(name: "gate-up", inputs: 576, outputs: 3072),
        Shape(name: "down", inputs: 1536, outputs: 576),
        Shape(name: "output head", inputs: 576, outputs: 49_152),
    ]

    /// The weight formats timed: SmolLM2's GGUF Q4_1 (4-bit, minimums) and Q8_0 (8-bit, z 128).
    static let formats: [(name: String, bits: Int, zeroPoint: Int, mins: Bool)] = [
        ("Q4_1", 4, 0, true), ("Q8_0", 8, 128, false),
    ]

    struct PathFigure: Codable {
        var path: String
        /// Seconds per call of BlockGEMM.matmul, per format (`Q4_1`, `Q8_0`); nil: not timed.
        var blockSeconds: [String: Double]
        /// Rows 1: weight bytes read per second, in 10⁹ (codes, scales, minimums); rows 128: GOP/s.
        var blockRate: [String: Double]
        /// The same for Int8GEMM.matmul (int8 weights per output channel, packed).
        var int8Seconds: Double?
        var int8Rate: Double?
        /// Every block format within 1e-4 (relative to the largest output) of the generic path.
        var agrees: Bool
    }

    struct ShapeFigure: Codable {
        var name: String
        var rows: Int
        var inputs: Int
        var outputs: Int
        /// "GB/s" (rows 1) or "GOP/s" (rows 128).
        var unit: String
        /// Weight bytes one product reads, per format, and for Int8GEMM.
        var weightBytes: [String: Int]
        var int8WeightBytes: Int
        var paths: [PathFigure]
    }

    struct Result: Codable {
        var probe = "blockgemm"
        var cpu: String
        /// Vendor, family/model and the instruction-set extensions the paths depend on.
        var cpuSummary = CPUInfo.current.summary
        var threads = 1
        /// The path the decoder would run (BlockGEMM.defaultPath).
        var defaultPath: String
        var shapes: [ShapeFigure]
    }

    /// The bytes the copies cycled through at one row add up to at least this.
    static let coldBytes = 32 << 20

    static func run(quick: Bool) -> Result {
        let repeats = quick ? 3 : 10
        var rng = SystemRandomNumberGenerator()
        var figures = [ShapeFigure]()
        for shape in shapes {
            let (n, k) = (shape.outputs, shape.inputs)
            let blocks = n * k / BlockQuantizedMatrix.blockSize
            func halves() -> [UInt16] {
                (0..<blocks).map { _ in
                    HalfFloat.half(
                        Float.random(in: 1e-3...1e-2, using: &rng) * (Bool.random(using: &rng) ? 1 : -1))
                }
            }
            var matrices = [String: BlockQuantizedMatrix]()
            for format in formats {
                var codes = [UInt8](repeating: 0, count: n * k * format.bits / 8)
                codes.withUnsafeMutableBytes { bytes in
                    for i in stride(from: 0, to: bytes.count, by: 8) {
                        let word = rng.next()
                        for b in 0..<min(8, bytes.count - i) {
                            bytes[i + b] = UInt8(truncatingIfNeeded: word >> (8 * b))
                        }
                    }
                }
                matrices[format.name] = BlockQuantizedMatrix(
                    outputSize: n, inputSize: k, bits: format.bits, zeroPoint: format.zeroPoint,
                    codes: codes, scales: halves(), mins: format.mins ? halves() : nil)
            }
            let int8Codes = (0..<(n * k)).map { _ in Int8.random(in: -127...127, using: &rng) }
            let int8 = QuantizedMatrix(
                codes: int8Codes, scales: (0..<n).map { _ in Float.random(in: 1e-3...1e-2, using: &rng) },
                outputSize: n, inputSize: k)
            for rows in [1, 128] {
                figures.append(
                    measure(
                        shape, rows: rows, matrices: matrices, int8: int8, repeats: repeats, using: &rng))
            }
        }
        return Result(cpu: CPUInfo.current.modelName, defaultPath: BlockGEMM.defaultPath.description, shapes: figures)
    }

    static func measure(
        _ shape: Shape, rows m: Int, matrices: [String: BlockQuantizedMatrix], int8: QuantizedMatrix, repeats: Int,
        using rng: inout SystemRandomNumberGenerator
    ) -> ShapeFigure {
        let (n, k) = (shape.outputs, shape.inputs)
        let operations = 2 * Double(m) * Double(n) * Double(k)
        let x = (0..<(m * k)).map { _ in Float.random(in: -1...1, using: &rng) }
        var y = [Float](repeating: 0, count: m * n)
        var buffer = BlockQuantizedRows()
        var int8Buffer = QuantizedRows()
        // Copies of the weights to cycle through at one row (arrays are shared on copy: these are
        // real copies of the bytes). At 128 rows each call reads its weights many times anyway.
        func copies<T>(_ matrix: T, bytes: Int, _ copy: (T) -> T) -> [T] {
            let count = m == 1 ? max(1, (coldBytes + bytes - 1) / bytes) : 1
            return [matrix] + (1..<count).map { _ in copy(matrix) }
        }
        var blockCopies = [String: [BlockQuantizedMatrix]]()
        for (name, w) in matrices {
            blockCopies[name] = copies(w, bytes: w.byteCount) { w in
                BlockQuantizedMatrix(
                    outputSize: w.outputSize, inputSize: w.inputSize, bits: w.bits, zeroPoint: w.zeroPoint,
                    codes: w.codes.map { $0 }, scales: w.scales.map { $0 }, mins: w.mins.map { $0.map { $0 } })
            }
        }
        let int8Copies = copies(int8, bytes: int8.byteCount) { _ in
            QuantizedMatrix(
                codes: (0..<(n * k)).map { Int8(truncatingIfNeeded: $0 &* 7) }, scales: int8.scales, outputSize: n,
                inputSize: k)
        }
        // Large products on the generic path take seconds: at 128 rows it runs only the small ones.
        let genericRuns = m == 1 || Double(n) * Double(k) <= 4_000_000
        // The generic path's outputs, on the rows that are checked (at most 4: plain loops are slow).
        let checkedRows = min(m, 4)
        var reference = [String: [Float]]()
        for (name, w) in matrices {
            var r = [Float](repeating: 0, count: checkedRows * n)
            BlockGEMM.matmul(
                activations: x, rows: checkedRows, weights: w, bias: nil, into: &r, buffer: &buffer, path: .generic)
            reference[name] = r
        }
        var paths = [PathFigure]()
        for path in BlockGEMM.paths where path != .generic || genericRuns {
            var figure = PathFigure(path: path.description, blockSeconds: [:], blockRate: [:], agrees: true)
            for format in formats {
                guard let w = matrices[format.name], let expected = reference[format.name] else { continue }
                BlockGEMM.matmul(activations: x, rows: m, weights: w, bias: nil, into: &y, buffer: &buffer, path: path)
                let scale = expected.reduce(Float(0)) { max($0, abs($1)) }
                let checked = zip(y.prefix(checkedRows * n), expected).allSatisfy { abs($0 - $1) <= 1e-4 * scale }
                figure.agrees = figure.agrees && checked
            }
            // Contender c < formats.count: that block format; c = formats.count: Int8GEMM. Rounds
            // interleave them call by call, so that a busy moment of a shared machine slows all
            // alike; each keeps its fastest call.
            func run(_ c: Int, copy i: Int) {
                if c < formats.count, let ring = blockCopies[formats[c].name] {
                    BlockGEMM.matmul(
                        activations: x, rows: m, weights: ring[i % ring.count], bias: nil, into: &y, buffer: &buffer,
                        path: path)
                } else {
                    Int8GEMM.matmul(
                        activations: x, rows: m, weights: int8Copies[i % int8Copies.count], bias: nil, into: &y,
                        buffer: &int8Buffer, path: path)
                }
            }
            let calls = max(blockCopies.values.map(\.count).max() ?? 1, int8Copies.count)
            var fastest = [Double](repeating: .infinity, count: formats.count + 1)
            for _ in 0..<(path == .generic ? min(repeats, m == 1 ? 3 : 1) : repeats) {
                for i in 0..<calls {
                    for c in fastest.indices { fastest[c] = min(fastest[c], best(1) { run(c, copy: i) }) }
                }
            }
            consume(y)
            for (c, format) in formats.enumerated() {
                guard let w = matrices[format.name] else { continue }
                figure.blockSeconds[format.name] = fastest[c]
                figure.blockRate[format.name] =
                    m == 1 ? Double(w.byteCount) / fastest[c] / 1e9 : operations / fastest[c] / 1e9
            }
            let int8Seconds = fastest[formats.count]
            figure.int8Seconds = int8Seconds
            figure.int8Rate = m == 1 ? Double(int8.byteCount) / int8Seconds / 1e9 : operations / int8Seconds / 1e9
            paths.append(figure)
        }
        return ShapeFigure(
            name: shape.name, rows: m, inputs: k, outputs: n, unit: m == 1 ? "GB/s" : "GOP/s",
            weightBytes: matrices.mapValues(\.byteCount), int8WeightBytes: int8.byteCount, paths: paths)
    }
}
