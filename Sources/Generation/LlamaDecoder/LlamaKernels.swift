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

    /// `h[r][i] = act(g[r][i]) · u[r][i]` for `gu: [rows, 2F]` (gate then up) into `h: [rows, F]`:
    /// `silu(g) = g / (1 + e^−g)`, or `gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³)))`
    /// (PyTorch's `gelu(approximate="tanh")`).
    static func gate(
        _ gateUp: UnsafePointer<Float>, rows: Int, width: Int, activation: LlamaConfiguration.Activation,
        into h: UnsafeMutablePointer<Float>
    ) {
        let root: Float = 0.797_884_560_802_865_4  // √(2/π)
        for r in 0..<rows {
            let gate = gateUp + r * 2 * width
            let up = gate + width
            let out = h + r * width
            switch activation {
            case .silu:
                for i in 0..<width {
                    let g = gate[i]
                    out[i] = g / (1 + expf(-g)) * up[i]
                }
            case .geluTanh:
                for i in 0..<width {
                    let g = gate[i]
                    out[i] = 0.5 * g * (1 + tanhf(root * (g + 0.044_715 * g * g * g))) * up[i]
                }
            }
        }
    }

    /// `x[i] *= factor` for `x: [count]`.
    static func scale(_ x: UnsafeMutablePointer<Float>, count: Int, by factor: Float) {
        for i in 0..<count { x[i] *= factor }
    }

    /// `x[i] = cap · tanh(x[i] / cap)` for `x: [count]` (Gemma 2's soft-capping of scores and logits).
    static func softcap(_ x: UnsafeMutablePointer<Float>, count: Int, cap: Float) {
        for i in 0..<count { x[i] = cap * tanhf(x[i] / cap) }
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
