import Foundation
import LinearAlgebra

/// `embeddings-bench probe int8gemm [rows]`: the int8 products (Int8GEMM) against float32 sgemm
/// on one thread, for the four projections of a MiniLM layer (hidden 384, intermediate 1536), as
/// one JSON line. Each int8 figure includes quantizing the float activations (the encoder's
/// input is float); `multiplyGOPs` is the product alone. Every path's floats are checked
/// bit-identical with the generic path's before they are timed.
enum Int8GEMMProbe {
    /// A projection `y[rows, outputs] = x[rows, inputs] · Wᵀ + b`.
    struct Shape {
        var name: String
        var inputs: Int
        var outputs: Int
    }

    static let shapes = [
        Shape(name: "query-key-value", inputs: 384, outputs: 1152),
        Shape(name: "attention output", inputs: 384, outputs: 384),
        Shape(name: "intermediate", inputs: 384, outputs: 1536),
        Shape(name: "output", inputs: 1536, outputs: 384),
    ]

    struct PathFigure: Codable {
        var path: String
        /// 2·rows·outputs·inputs / seconds of quantize + multiply, in 10⁹ per second.
        var gops: Double
        /// The same count over the multiply alone.
        var multiplyGOPs: Double
        /// `gops` over sgemm's GFLOP/s.
        var speedup: Double
        /// Bit-identical to the generic path.
        var agrees: Bool
    }

    struct ShapeFigure: Codable {
        var name: String
        var rows: Int
        var inputs: Int
        var outputs: Int
        var sgemmGFLOPs: Double
        var paths: [PathFigure]
    }

    struct Result: Codable {
        var probe = "int8gemm"
        var cpu: String
        var blas: String
        var threads = 1
        /// The path the encoder would run (Int8GEMM.defaultPath).
        var defaultPath: String
        var shapes: [ShapeFigure]
    }

    static func run(rows: Int, quick: Bool) -> Result {
        let repeats = quick ? 3 : 10
        var rng = SystemRandomNumberGenerator()
        func gaussian() -> Float {
            let u1 = Double.random(in: Double.ulpOfOne..<1, using: &rng)
            let u2 = Double.random(in: 0..<1, using: &rng)
            return Float((-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
        }
        var figures = [ShapeFigure]()
        for shape in shapes {
            let (m, n, k) = (rows, shape.outputs, shape.inputs)
            let operations = 2 * Double(m) * Double(n) * Double(k)
            let weights = (0..<(n * k)).map { _ in gaussian() * 0.05 }
            let bias = (0..<n).map { _ in gaussian() * 0.02 }
            let x = (0..<(m * k)).map { _ in gaussian() }
            // Random weights are finite by construction.
            guard let matrix = try? QuantizedMatrix(weights: weights, outputSize: n, inputSize: k) else { continue }
            var y = [Float](repeating: 0, count: m * n)

            let sgemmSeconds = BLAS.singleThreaded {
                best(repeats) {
                    BLAS.gemm(.none, .transposed, m: m, n: n, k: k, a: x, lda: k, b: weights, ldb: k, c: &y, ldc: n)
                }
            }
            consume(y)

            var buffer = QuantizedRows()
            var generic = [Float](repeating: 0, count: m * n)
            Int8GEMM.matmul(
                activations: x, rows: m, weights: matrix, bias: bias, into: &generic, buffer: &buffer, path: .generic)
            var paths = [PathFigure]()
            for path in Int8GEMM.paths {
                Int8GEMM.matmul(
                    activations: x, rows: m, weights: matrix, bias: bias, into: &y, buffer: &buffer, path: path)
                let agrees = y.map(\.bitPattern) == generic.map(\.bitPattern)
                let pathRepeats = path == .generic ? min(repeats, 3) : repeats
                let total = best(pathRepeats) {
                    Int8GEMM.matmul(
                        activations: x, rows: m, weights: matrix, bias: bias, into: &y, buffer: &buffer, path: path)
                }
                let multiply = best(pathRepeats) {
                    Int8GEMM.multiply(buffer, matrix, bias: bias, into: &y, path: path)
                }
                consume(y)
                paths.append(
                    PathFigure(
                        path: path.description, gops: operations / total / 1e9,
                        multiplyGOPs: operations / multiply / 1e9,
                        speedup: sgemmSeconds / total, agrees: agrees))
            }
            figures.append(
                ShapeFigure(
                    name: shape.name, rows: m, inputs: k, outputs: n, sgemmGFLOPs: operations / sgemmSeconds / 1e9,
                    paths: paths))
        }
        return Result(
            cpu: CPUInfo.current.modelName, blas: BLAS.libraryDescription,
            defaultPath: Int8GEMM.defaultPath.description, shapes: figures)
    }
}
