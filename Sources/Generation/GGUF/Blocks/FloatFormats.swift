#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// F32: little-endian IEEE singles, copied as they are (infinities and NaN included).
///
///     offset  size  field
///     0       4     x   f32
enum FloatF32: BlockFormat {
    static let type = GGMLType.f32

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        output[0] = Float(bitPattern: UInt32(littleEndian: block.loadUnaligned(as: UInt32.self)))
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        #if _endian(little)
            memcpy(output, blocks, count * 4)
        #else
            for i in 0..<count { referenceDequantize(blocks + 4 * i, into: output + i) }
        #endif
    }
}

/// F16: little-endian IEEE halves, converted exactly (subnormals, infinities, NaN payloads).
///
///     offset  size  field
///     0       2     x   f16
enum FloatF16: BlockFormat {
    static let type = GGMLType.f16

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        output[0] = block.half(at: 0)
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for i in 0..<count {
            let bits = UInt16(littleEndian: blocks.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
            output[i] = HalfPrecision.fastFloat(fromHalf: bits)
        }
    }
}

/// BF16: little-endian bfloat16, the top half of an IEEE single.
///
///     offset  size  field
///     0       2     x   bf16
enum FloatBF16: BlockFormat {
    static let type = GGMLType.bf16

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        output[0] = HalfPrecision.float(fromBFloat16: UInt16(littleEndian: block.loadUnaligned(as: UInt16.self)))
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let vectors = count / 8
        for v in 0..<vectors {
            let halves = SIMD8<UInt16>(
                littleEndian: blocks.loadUnaligned(fromByteOffset: 16 * v, as: SIMD8<UInt16>.self))
            let bits = SIMD8<UInt32>(truncatingIfNeeded: halves) &<< 16
            UnsafeMutableRawPointer(output + 8 * v).storeBytes(
                of: unsafeBitCast(bits, to: SIMD8<Float>.self), as: SIMD8<Float>.self)
        }
        for i in (8 * vectors)..<count { referenceDequantize(blocks + 2 * i, into: output + i) }
    }
}

extension SIMD8<UInt16> {
    /// Lanes read from little-endian storage (a no-op on little-endian machines).
    @inline(__always)
    init(littleEndian value: SIMD8<UInt16>) {
        #if _endian(little)
            self = value
        #else
            self = SIMD8<UInt16>((0..<8).map { UInt16(littleEndian: value[$0]) })
        #endif
    }
}
