/// One ggml block layout and its dequantization to `Float`.
///
/// Each layout has a plain-loop reference, written like ggml's `dequantize_row_*`, beside a fast
/// version over whole runs of blocks; the two agree bit for bit (they do the same float
/// operations in the same order, without fused multiply-adds), which the tests check on random
/// blocks. A float type is a "block" of one element with no scale.
protocol BlockFormat {
    /// The ggml type the layout belongs to; its `blockSize` and `blockByteCount` describe the block.
    static var type: GGMLType { get }

    /// The name of the first scale or minimum field of `block` that is infinite or NaN, or nil
    /// when all are finite (always nil for a type without scales).
    static func nonFiniteScale(in block: UnsafeRawPointer) -> String?

    /// Dequantizes one block into `type.blockSize` floats, the simple way.
    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>)

    /// Dequantizes `count` consecutive blocks into `count × type.blockSize` floats, fast.
    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>)
}

extension BlockFormat {
    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? { nil }
}

/// Which implementation dequantizes: the fast one the reader uses, or the reference the tests
/// compare it with.
package enum DequantizationKernel: Sendable {
    /// The vectorized implementation.
    case fast
    /// The plain loops.
    case reference
}

/// Dequantization by ggml type, over raw blocks.
package enum Dequantization {
    /// The layout of a supported type, nil for the others.
    static func format(of type: GGMLType) -> (any BlockFormat.Type)? {
        switch type {
        case .f32: return FloatF32.self
        case .f16: return FloatF16.self
        case .bf16: return FloatBF16.self
        case .q4_0: return BlockQ4_0.self
        case .q4_1: return BlockQ4_1.self
        case .q5_0: return BlockQ5_0.self
        case .q5_1: return BlockQ5_1.self
        case .q8_0: return BlockQ8_0.self
        case .q2_K: return BlockQ2_K.self
        case .q3_K: return BlockQ3_K.self
        case .q4_K: return BlockQ4_K.self
        case .q5_K: return BlockQ5_K.self
        case .q6_K: return BlockQ6_K.self
        case .iq4_nl: return BlockIQ4_NL.self
        case .iq4_xs: return BlockIQ4_XS.self
        default: return nil
        }
    }

    /// Dequantizes `count` blocks of `type` from `blocks` into `count × type.blockSize` floats,
    /// without checking the scales.
    /// - Precondition: `type.isSupported`; `blocks` holds `count × type.blockByteCount` bytes.
    package static func dequantize(
        _ type: GGMLType, _ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>,
        kernel: DequantizationKernel = .fast
    ) {
        guard let format = format(of: type) else { preconditionFailure("\(type.name) is not supported") }
        switch kernel {
        case .fast:
            format.dequantize(blocks, count: count, into: output)
        case .reference:
            for b in 0..<count {
                format.referenceDequantize(blocks + b * type.blockByteCount, into: output + b * type.blockSize)
            }
        }
    }

    /// The first of `count` blocks whose scale or minimum is infinite or NaN, and the field's name.
    /// - Precondition: `type.isSupported`; `blocks` holds `count × type.blockByteCount` bytes.
    package static func firstNonFiniteScale(_ type: GGMLType, _ blocks: UnsafeRawPointer, count: Int) -> (
        block: Int, field: String
    )? {
        guard let format = format(of: type) else { preconditionFailure("\(type.name) is not supported") }
        guard type.blockSize > 1 else { return nil }
        for b in 0..<count {
            if let field = format.nonFiniteScale(in: blocks + b * type.blockByteCount) { return (b, field) }
        }
        return nil
    }
}
