// swift-format-ignore: AlwaysUseLowerCamelCase
// The cases keep ggml's names (Q4_K is `q4_K`), so they read like the reference.
/// The element type of a tensor: ggml's type ids (`enum ggml_type` in ggml.h), with each type's
/// block size and block byte size.
///
/// A quantized type stores its weights in blocks of ``blockSize`` weights taking
/// ``blockByteCount`` bytes; a float or integer type is a "block" of one element. Ids 4, 5 and
/// 31–33, 36–38 were removed from ggml and are unknown here, like any other id not listed.
package enum GGMLType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    /// IEEE single precision.
    case f32 = 0
    /// IEEE half precision.
    case f16 = 1
    /// 32 weights of 4 bits around 8, one f16 scale.
    case q4_0 = 2
    /// 32 weights of 4 bits, an f16 scale and minimum.
    case q4_1 = 3
    /// 32 weights of 5 bits around 16, one f16 scale.
    case q5_0 = 6
    /// 32 weights of 5 bits, an f16 scale and minimum.
    case q5_1 = 7
    /// 32 weights of 8 bits, one f16 scale.
    case q8_0 = 8
    /// 32 weights of 8 bits, an f16 scale and sum (for activations).
    case q8_1 = 9
    /// K-quant: 256 weights of 2 bits in sub-blocks of 16.
    case q2_K = 10
    /// K-quant: 256 weights of 3 bits in sub-blocks of 16.
    case q3_K = 11
    /// K-quant: 256 weights of 4 bits in sub-blocks of 32 with 6-bit scales and minimums.
    case q4_K = 12
    /// K-quant: 256 weights of 5 bits in sub-blocks of 32 with 6-bit scales and minimums.
    case q5_K = 13
    /// K-quant: 256 weights of 6 bits in sub-blocks of 16 with 8-bit scales.
    case q6_K = 14
    /// K-quant: 256 weights of 8 bits with an f32 scale (for activations).
    case q8_K = 15
    /// Importance-matrix quant, 2.06 bits a weight.
    case iq2_xxs = 16
    /// Importance-matrix quant, 2.31 bits a weight.
    case iq2_xs = 17
    /// Importance-matrix quant, 3.06 bits a weight.
    case iq3_xxs = 18
    /// Importance-matrix quant, 1.56 bits a weight.
    case iq1_s = 19
    /// Importance-matrix quant, 4 bits on a non-linear grid, blocks of 32.
    case iq4_nl = 20
    /// Importance-matrix quant, 3.44 bits a weight.
    case iq3_s = 21
    /// Importance-matrix quant, 2.56 bits a weight.
    case iq2_s = 22
    /// Importance-matrix quant, 4.25 bits a weight.
    case iq4_xs = 23
    /// Signed 8-bit integers.
    case i8 = 24
    /// Signed 16-bit integers.
    case i16 = 25
    /// Signed 32-bit integers.
    case i32 = 26
    /// Signed 64-bit integers.
    case i64 = 27
    /// IEEE double precision.
    case f64 = 28
    /// Importance-matrix quant, 1.75 bits a weight.
    case iq1_m = 29
    /// bfloat16: the top half of an IEEE single.
    case bf16 = 30
    /// Ternary quant, 1.69 bits a weight.
    case tq1_0 = 34
    /// Ternary quant, 2.06 bits a weight.
    case tq2_0 = 35
    /// Microscaling 4-bit floats with a shared 8-bit exponent, blocks of 32.
    case mxfp4 = 39
    /// 4-bit floats with 8-bit float scales, blocks of 64.
    case nvfp4 = 40
    /// 1-bit quant, blocks of 128.
    case q1_0 = 41

    /// The types ``GGUFFile/dequantize(_:)`` converts to `Float`.
    package static let supported: [GGMLType] = [
        .f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_nl, .iq4_xs,
    ]

    /// Whether ``GGUFFile/dequantize(_:)`` converts this type.
    package var isSupported: Bool {
        switch self {
        case .f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_nl, .iq4_xs:
            return true
        default: return false
        }
    }

    /// ggml's name for the type, as in `Q4_K` or `BF16`.
    package var name: String {
        switch self {
        case .f32: return "F32"
        case .f16: return "F16"
        case .q4_0: return "Q4_0"
        case .q4_1: return "Q4_1"
        case .q5_0: return "Q5_0"
        case .q5_1: return "Q5_1"
        case .q8_0: return "Q8_0"
        case .q8_1: return "Q8_1"
        case .q2_K: return "Q2_K"
        case .q3_K: return "Q3_K"
        case .q4_K: return "Q4_K"
        case .q5_K: return "Q5_K"
        case .q6_K: return "Q6_K"
        case .q8_K: return "Q8_K"
        case .iq2_xxs: return "IQ2_XXS"
        case .iq2_xs: return "IQ2_XS"
        case .iq3_xxs: return "IQ3_XXS"
        case .iq1_s: return "IQ1_S"
        case .iq4_nl: return "IQ4_NL"
        case .iq3_s: return "IQ3_S"
        case .iq2_s: return "IQ2_S"
        case .iq4_xs: return "IQ4_XS"
        case .i8: return "I8"
        case .i16: return "I16"
        case .i32: return "I32"
        case .i64: return "I64"
        case .f64: return "F64"
        case .iq1_m: return "IQ1_M"
        case .bf16: return "BF16"
        case .tq1_0: return "TQ1_0"
        case .tq2_0: return "TQ2_0"
        case .mxfp4: return "MXFP4"
        case .nvfp4: return "NVFP4"
        case .q1_0: return "Q1_0"
        }
    }

    /// The same as ``name``.
    package var description: String { name }

    /// The number of weights in one block (1 for float and integer types).
    package var blockSize: Int { layout.elements }

    /// The number of bytes one block takes.
    package var blockByteCount: Int { layout.bytes }

    // Sizes from ggml's type traits; 256 is QK_K, the K-quant super-block.
    private var layout: (elements: Int, bytes: Int) {
        switch self {
        case .f32: return (1, 4)
        case .f16: return (1, 2)
        case .q4_0: return (32, 18)
        case .q4_1: return (32, 20)
        case .q5_0: return (32, 22)
        case .q5_1: return (32, 24)
        case .q8_0: return (32, 34)
        // ggml's block_q8_1 is two halves and 32 bytes; the gguf Python package still says 40.
        case .q8_1: return (32, 36)
        case .q2_K: return (256, 84)
        case .q3_K: return (256, 110)
        case .q4_K: return (256, 144)
        case .q5_K: return (256, 176)
        case .q6_K: return (256, 210)
        case .q8_K: return (256, 292)
        case .iq2_xxs: return (256, 66)
        case .iq2_xs: return (256, 74)
        case .iq3_xxs: return (256, 98)
        case .iq1_s: return (256, 50)
        case .iq4_nl: return (32, 18)
        case .iq3_s: return (256, 110)
        case .iq2_s: return (256, 82)
        case .iq4_xs: return (256, 136)
        case .i8: return (1, 1)
        case .i16: return (1, 2)
        case .i32: return (1, 4)
        case .i64: return (1, 8)
        case .f64: return (1, 8)
        case .iq1_m: return (256, 56)
        case .bf16: return (1, 2)
        case .tq1_0: return (256, 54)
        case .tq2_0: return (256, 66)
        case .mxfp4: return (32, 17)
        case .nvfp4: return (64, 36)
        case .q1_0: return (128, 18)
        }
    }

    /// The supported types' names, for error messages.
    package static var supportedNames: String { supported.map(\.name).joined(separator: ", ") }
}
