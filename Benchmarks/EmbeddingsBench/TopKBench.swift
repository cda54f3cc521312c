import Foundation
import LinearAlgebra
import VectorIndex

/// Table 3: top-10 over n random 384-d unit vectors, against the memory-bandwidth floor.
struct TopKBench {
    let report: Report
    let sizes: [Int]
    let dimension = 384
    let batch = 32

    /// Bytes moved per second by a large `memcpy` (each byte read once and written once, so
    /// `2 × size / time`), best of a few. Reading a matrix once can go no faster than this.
    static func copyBandwidth() -> Double {
        let bytes = 256 << 20
        let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let target = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { source.deallocate(); target.deallocate() }
        memset(source, 1, bytes)
        memset(target, 0, bytes)
        var sink: UInt8 = 0
        let seconds = best(5) {
            copyBytes(target, source, bytes)
            sink &+= target.load(fromByteOffset: bytes / 2, as: UInt8.self)
        }
        consume(sink)
        return 2 * Double(bytes) / seconds
    }

    /// xorshift uniform values in [-1, 1): fast enough to fill a billion floats.
    static func fill(_ values: inout [Float], seed: UInt64) {
        var state = seed | 1
        values.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<buffer.count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                buffer[i] = Float(Int32(truncatingIfNeeded: state >> 16)) * (1 / 2_147_483_648)
            }
        }
    }

    func run() throws -> String {
        let bandwidth = Self.copyBandwidth()
        report.add("table3", "copy bandwidth", bandwidth / 1e9, "GB/s")
        var rows = [[String]]()
        for n in sizes {
            var values = [Float](repeating: 0, count: n * dimension)
            Self.fill(&values, seed: UInt64(n))
            let index = try FlatIndex(dimension: dimension, ids: (0..<n).map { "v\($0)" }, rowMajorVectors: values)
            values = []
            var queries = [[Float]]()
            for q in 0..<batch {
                var v = [Float](repeating: 0, count: dimension)
                Self.fill(&v, seed: UInt64(1000 + q))
                queries.append(VectorMath.normalized(v))
            }
            let query = queries[0]
            let repeats = n >= 1_000_000 ? 3 : n >= 100_000 ? 5 : 20
            // Naive: a plain loop of dot products, then sort every score.
            var naiveTop = [Int]()
            let naive = best(n >= 1_000_000 ? 1 : 3) {
                var scores = [Float](repeating: 0, count: n)
                index.withUnsafeVectors { m in
                    for r in 0..<n {
                        var s: Float = 0
                        for j in 0..<dimension { s += m[r * dimension + j] * query[j] }
                        scores[r] = s
                    }
                }
                let order = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
                naiveTop = Array(order.prefix(10))
            }
            var hits = [SearchHit]()
            let single = best(repeats) { hits = (try? index.search(query, k: 10)) ?? [] }
            let batched = best(max(1, repeats / 2)) { consume(try? index.search(batch: queries, k: 10)) } / Double(batch)
            let overlap = Set(hits.map(\.row)).intersection(naiveTop).count
            guard overlap >= 9 else { throw BenchFailure(message: "top-k at \(n): BLAS+heap and naive agree on only \(overlap) of 10") }
            let floor = Double(n * dimension * 4) / bandwidth
            let name = "\(n)"
            report.add("table3", "\(name) naive loop + sort", naive, "s")
            report.add("table3", "\(name) scan + heap, one query", single, "s")
            report.add("table3", "\(name) batch of \(batch), per query", batched, "s")
            report.add("table3", "\(name) bandwidth floor", floor, "s")
            report.add("table3", "\(name) one query / floor", single / floor, "×")
            let ratio = { (s: Double) in String(format: "%.1f×", s / floor) }
            rows.append([n.formatted(), duration(naive) + " (" + ratio(naive) + ")", duration(single) + " (" + ratio(single) + ")",
                         duration(batched) + " (" + ratio(batched) + ")", duration(floor)])
        }
        var out = "### Table 3 — top-10 over random 384-d unit vectors on \(CPUInfo.current.modelName), OpenBLAS core \(BLAS.coreInUse ?? "?") (time, and ratio to the floor)\n\n"
        out += table(["Vectors", "Naive loop + sort", "Vectorized scan + heap, 1 query", "Batch of \(batch), per query", "Bandwidth floor"], rows)
        out += "\nFloor = matrix bytes ÷ copy bandwidth (bytes read + written per second by memcpy) measured in this run (\(String(format: "%.1f", bandwidth / 1e9)) GB/s). Below a few MB the matrix sits in cache, so the floor is only meaningful from 100,000 vectors up.\n"
        return out
    }
}

/// A copy the optimizer cannot remove (its result is read through a pointer it cannot see through).
@inline(never)
func copyBytes(_ target: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
    memcpy(target, source, count)
}
