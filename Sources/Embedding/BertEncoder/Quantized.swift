import Foundation
import LinearAlgebra

/// A matrix stored in Q4_0 blocks, the 4-bit format of llama.cpp-style model files: each run of
/// 32 values in a row is one 18-byte block, an IEEE half-precision scale `d` followed by 16
/// bytes whose low nibbles are values 0…15 and high nibbles values 16…31, each `(q − 8)·d`.
package struct Q4Matrix: Sendable {
    /// The values in one block.
    package static let blockValues = 32
    /// The bytes of one block.
    package static let blockBytes = 18

    /// The number of rows.
    package let rows: Int
    /// The number of columns (a multiple of 32).
    package let columns: Int
    /// `rows · columns / 32` blocks, row-major.
    package let blocks: [UInt8]

    /// A matrix from its blocks.
    /// - Throws: `EncoderError.invalidConfiguration` when the sizes do not fit (`path` names the file).
    package init(rows: Int, columns: Int, blocks: [UInt8], path: String, name: String) throws {
        guard rows > 0, columns > 0, columns % Self.blockValues == 0 else {
            throw EncoderError.invalidConfiguration(
                path: path, reason: "tensor '\(name)': \(columns) columns are not a multiple of 32")
        }
        guard blocks.count == rows * columns / Self.blockValues * Self.blockBytes else {
            throw EncoderError.invalidConfiguration(
                path: path, reason: "tensor '\(name)': \(blocks.count) bytes for \(rows)×\(columns) 4-bit values")
        }
        self.rows = rows
        self.columns = columns
        self.blocks = blocks
        // A NaN or infinite scale would poison every vector that gathers the row.
        let blockCount = blocks.count / Self.blockBytes
        for b in 0..<blockCount {
            let bits = UInt16(blocks[b * Self.blockBytes]) | UInt16(blocks[b * Self.blockBytes + 1]) << 8
            guard bits & 0x7C00 != 0x7C00 else {
                throw EncoderError.invalidConfiguration(
                    path: path, reason: "tensor '\(name)': block \(b) has a non-finite scale")
            }
        }
    }

    /// Writes row `r`, dequantized, to `out[0..<columns]`.
    package func row(_ r: Int, into out: UnsafeMutablePointer<Float>) {
        let blocksPerRow = columns / Self.blockValues
        blocks.withUnsafeBufferPointer { b in
            var p = b.baseAddress! + r * blocksPerRow * Self.blockBytes
            var o = out
            for _ in 0..<blocksPerRow {
                let d = HalfFloat.float(fromHalf: UInt16(p[0]) | UInt16(p[1]) << 8)
                for j in 0..<16 {
                    let q = p[2 + j]
                    o[j] = Float(Int(q & 0x0F) - 8) * d
                    o[j + 16] = Float(Int(q >> 4) - 8) * d
                }
                p += Self.blockBytes
                o += Self.blockValues
            }
        }
    }

    /// The whole matrix in full precision, row-major.
    package func dequantized() -> [Float] {
        [Float](unsafeUninitializedCapacity: rows * columns) { buffer, count in
            for r in 0..<rows { row(r, into: buffer.baseAddress! + r * columns) }
            count = rows * columns
        }
    }

}

/// A model's word-embedding table: full precision, or 4-bit blocks dequantized a row at a time
/// (multilingual-e5-small's 250,037 × 384 table takes 54 MB that way instead of 384 MB).
package enum EmbeddingTable: Sendable {
    /// `[V, H]` row-major floats.
    case dense([Float], columns: Int)
    /// `[V, H]` in Q4_0 blocks.
    case q4(Q4Matrix)

    /// Writes row `r` to `out[0..<H]`.
    package func row(_ r: Int, into out: UnsafeMutablePointer<Float>) {
        switch self {
        case .dense(let values, let columns):
            values.withUnsafeBufferPointer { v in out.update(from: v.baseAddress! + r * columns, count: columns) }
        case .q4(let matrix):
            matrix.row(r, into: out)
        }
    }

    /// The bytes the table takes.
    package var byteCount: Int {
        switch self {
        case .dense(let values, _): return values.count * MemoryLayout<Float>.size
        case .q4(let matrix): return matrix.blocks.count
        }
    }
}
