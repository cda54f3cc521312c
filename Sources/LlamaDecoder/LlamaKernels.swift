import Foundation

/// The decoder's element-wise steps, as plain loops over rows (the compiler vectorizes them; the
/// matrix products are elsewhere). Each opens with its shapes.
enum LlamaKernels {
    /// `y[r] = x[r] / √(mean(x[r]²) + ε) · w` for `x, y: [rows, H]`, `w: [H]` (as Hugging Face's
    /// `LlamaRMSNorm`: the mean in `Float`, the scale applied to the normalized row).
    static func rmsNorm(
        _ x: UnsafePointer<Float>, rows: Int, width: Int, weight: UnsafePointer<Float>, epsilon: Float,
        into y: UnsafeMutablePointer<Float>
    ) {
        for r in 0..<rows {
            let row = x + r * width
            let out = y + r * width
            var sum: Float = 0
            for i in 0..<width { sum += row[i] * row[i] }
            let scale = 1 / (sum / Float(width) + epsilon).squareRoot()
            for i in 0..<width { out[i] = weight[i] * (row[i] * scale) }
        }
    }

    /// `h[r][i] = silu(g[r][i]) · u[r][i]` for `gu: [rows, 2F]` (gate then up) into `h: [rows, F]`,
    /// `silu(g) = g / (1 + e^−g)`.
    static func siluGate(_ gateUp: UnsafePointer<Float>, rows: Int, width: Int, into h: UnsafeMutablePointer<Float>) {
        for r in 0..<rows {
            let gate = gateUp + r * 2 * width
            let up = gate + width
            let out = h + r * width
            for i in 0..<width {
                let g = gate[i]
                out[i] = g / (1 + expf(-g)) * up[i]
            }
        }
    }

    /// Rotates `heads` heads of width `D` in place, the first `2·frequencies.count` elements of
    /// each, by `position · frequency`: `x: [heads, D]` at `x`, pairs as `pairing` says.
    static func rope(
        _ x: UnsafeMutablePointer<Float>, heads: Int, headDimension: Int, cosines: UnsafePointer<Float>,
        sines: UnsafePointer<Float>, pairs: Int, pairing: LlamaConfiguration.RotaryPairing
    ) {
        for h in 0..<heads {
            let head = x + h * headDimension
            switch pairing {
            case .adjacent:
                for i in 0..<pairs {
                    let a = head[2 * i]
                    let b = head[2 * i + 1]
                    head[2 * i] = a * cosines[i] - b * sines[i]
                    head[2 * i + 1] = a * sines[i] + b * cosines[i]
                }
            case .halves:
                for i in 0..<pairs {
                    let a = head[i]
                    let b = head[i + pairs]
                    head[i] = a * cosines[i] - b * sines[i]
                    head[i + pairs] = b * cosines[i] + a * sines[i]
                }
            }
        }
    }
}
