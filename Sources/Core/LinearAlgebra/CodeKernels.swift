import CKernels

/// Scans over quantized vector codes (see `VectorIndex`'s int8 and binary search): unsigned
/// 8-bit codes against a signed 8-bit query, and Hamming distances between 1-bit sign codes.
///
/// Each scan has a generic version and vectorized ones — AVX2 (`vpmaddubsw`) and AVX-512 VNNI
/// (`vpdpbusd`) for int8, hardware `popcnt` for Hamming — chosen at run time. Every path gives
/// the same exact integers; tests force each one the CPU runs and compare with plain loops.
package enum CodeKernels {
    /// One implementation of a scan.
    package enum Path: Int32, CaseIterable, Sendable, CustomStringConvertible {
        case generic = 0
        case avx2 = 1
        case avx512VNNI = 2
        case popcnt = 3

        package var description: String {
            switch self {
            case .generic: return "generic"
            case .avx2: return "AVX2"
            case .avx512VNNI: return "AVX-512 VNNI"
            case .popcnt: return "popcnt"
            }
        }
    }

    /// The largest magnitude a query component may have in `int8DotRows` (pairs of products of
    /// a code and a query value must fit 16 bits on the AVX2 path).
    package static let int8QueryLimit: Int8 = 63

    /// The int8 paths this CPU runs, slowest first.
    package static var int8Paths: [Path] {
        let mask = ce_int8_paths()
        return [.generic, .avx2, .avx512VNNI].filter { mask & (1 << $0.rawValue) != 0 }
    }

    /// The Hamming paths this CPU runs, slowest first.
    package static var hammingPaths: [Path] {
        let mask = ce_hamming_paths()
        return [.generic, .popcnt].filter { mask & (1 << $0.rawValue) != 0 }
    }

    /// `out[r] = Σⱼ codes[r·dimension + j] · query[j]` (exact, in `Int32`). Query values must lie
    /// in ±`int8QueryLimit`. `path` nil: the fastest this CPU runs.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    @discardableResult
    package static func int8DotRows(
        codes: UnsafePointer<UInt8>, rows: Int, dimension: Int, query: UnsafePointer<Int8>,
        into out: UnsafeMutablePointer<Int32>, path: Path? = nil
    ) -> Bool {
        precondition(rows >= 0 && dimension >= 0, "int8DotRows: bad shape")
        return ce_u8s8_dot_rows(codes, rows, dimension, query, out, path.map { $0.rawValue } ?? -1) == 0
    }

    /// `out[r] = popcount(codes[r·words …] ⊕ query)`: the Hamming distance of each row's bits.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    @discardableResult
    package static func hammingRows(
        codes: UnsafePointer<UInt64>, rows: Int, words: Int, query: UnsafePointer<UInt64>,
        into out: UnsafeMutablePointer<UInt32>, path: Path? = nil
    ) -> Bool {
        precondition(rows >= 0 && words >= 0, "hammingRows: bad shape")
        return ce_hamming_rows(codes, rows, words, query, out, path.map { $0.rawValue } ?? -1) == 0
    }
}
