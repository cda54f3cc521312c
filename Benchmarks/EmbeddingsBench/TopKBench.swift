import Foundation
import LinearAlgebra
import Synchronization
import VectorIndex

/// Table 3: top-10 over n random 384-d unit vectors, against the floor of a scan: the matrix's
/// bytes ÷ the read bandwidth of a read-only pass over those same bytes, split over the cores as
/// the scan is (`readBandwidth`). A scan only reads: memcpy's copy bandwidth (bytes read plus
/// written, the floor before issue #28) is not its limit, and the 1M exact scan showed "0.45×"
/// that floor on a Zen 4.
struct TopKBench {
    let report: Report
    let sizes: [Int]
    let dimension = 384
    let batch = 32

    /// Bytes moved per second by a large `memcpy` (each byte read once and written once, so
    /// `2 × size / time`), best of a few, on one thread. Reported beside the read bandwidth; not a
    /// floor for a scan (a scan only reads, and splits over the cores).
    static func copyBandwidth() -> Double {
        let bytes = 256 << 20
        let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let target = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer {
            source.deallocate()
            target.deallocate()
        }
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

    /// Bytes read per second by a read-only pass over `index`'s matrix (every byte loaded once,
    /// 64 at a time, folded into a checksum the optimizer cannot drop), cut into the parts the
    /// exact scan uses (`RowSplit.parts`) and read at once on as many threads; best of `repeats`.
    /// The same bytes, the same split: the fastest a one-query scan could go. For matrices that
    /// fit in cache it measures the cache, as the scan then runs from it too.
    static func readBandwidth(of index: FlatIndex, repeats: Int) -> Double {
        let n = index.count
        let d = index.dimension
        let parts = RowSplit.parts(rows: n, dimension: d)
        var checksum: UInt64 = 0
        let seconds = best(repeats) {
            index.withUnsafeVectors { matrix in
                let shared = WorkerShared(UnsafeRawPointer(matrix.baseAddress!))
                let sums = RowSplit.map(rows: n, parts: parts) { rows in
                    readOnlyPass(shared.value + rows.lowerBound * d * 4, bytes: rows.count * d * 4)
                }
                checksum &+= sums.reduce(0, &+)
            }
        }
        consume(checksum)
        return Double(n * d * 4) / seconds
    }

    /// Bytes read per second by a read-only pass over a buffer of `bytes` bytes (filled first, so
    /// that its pages are real), cut into `threads` equal parts read at once on as many threads;
    /// best of `repeats`. The decoder's bound: a token reads every weight byte once.
    static func readBandwidth(bytes: Int, threads: Int, repeats: Int) -> Double {
        let size = max(64, bytes / 64 * 64)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { buffer.deallocate() }
        memset(buffer, 1, size)
        let part = (size / 64 + threads - 1) / threads * 64
        let shared = WorkerShared(UnsafeRawPointer(buffer))
        let sums = Mutex<UInt64>(0)
        let seconds = best(repeats) {
            DispatchQueue.concurrentPerform(iterations: threads) { i in
                let start = min(size, i * part)
                let sum = readOnlyPass(shared.value + start, bytes: min(size, start + part) - start)
                sums.withOrderedLock { $0 &+= sum }
            }
        }
        consume(sums.withOrderedLock { $0 })
        return Double(size) / seconds
    }

    /// Loads every byte of `bytes` at `base` once, 64 bytes per load (the tail 8 at a time), and
    /// returns their bitwise fold.
    @inline(never)
    static func readOnlyPass(_ base: UnsafeRawPointer, bytes: Int) -> UInt64 {
        var fold = SIMD8<UInt64>()
        var offset = 0
        while offset + 64 <= bytes {
            fold |= base.loadUnaligned(fromByteOffset: offset, as: SIMD8<UInt64>.self)
            offset += 64
        }
        var tail: UInt64 = 0
        while offset + 8 <= bytes {
            tail |= base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        return fold.wrappedSum() &+ tail
    }

    /// xorshift uniform values in [-1, 1): fast enough to fill a billion floats.
    static func fill(_ values: inout [Float], seed: UInt64) {
        var state = seed | 1
        values.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<buffer.count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                buffer[i] = Float(Int32(truncatingIfNeeded: state >> 16)) * (1 / 2_147_483_648)
            }
        }
    }

    /// One figure of the `topk --json` contract.
    struct Figure: Encodable {
        var vectors: Int
        var method: String
        var msPerQuery: Double
        var recallAt10: Double?

        enum CodingKeys: String, CodingKey {
            case vectors, method
            case msPerQuery = "ms_per_query"
            case recallAt10 = "recall_at_10"
        }
    }

    /// `queries` × the top-10 of each, gemm only (no heaps), over the matrix split like the batch
    /// search: the arithmetic the batch search cannot go below.
    static func gemmOnlySeconds(_ index: FlatIndex, queries: [[Float]]) -> Double {
        let n = index.count
        let d = index.dimension
        let q = queries.count
        let packed = queries.flatMap { $0 }
        let parts = RowSplit.blasParts(rows: n, dimension: d)
        let blockRows = max(1, (1 << 18) / q)
        return best(2) {
            index.withUnsafeVectors { matrix in
                packed.withUnsafeBufferPointer { queryMatrix in
                    let shared = WorkerShared(GemmShare(matrix: matrix.baseAddress!, queries: queryMatrix.baseAddress!))
                    DispatchQueue.concurrentPerform(iterations: parts) { part in
                        var scores = [Float](repeating: 0, count: q * blockRows)
                        var start = n * part / parts
                        let end = n * (part + 1) / parts
                        scores.withUnsafeMutableBufferPointer { s in
                            while start < end {
                                let m = min(blockRows, end - start)
                                BLAS.gemm(
                                    .none, .transposed, m: q, n: m, k: d, a: shared.value.queries, lda: d,
                                    b: shared.value.matrix + start * d, ldb: d, c: s.baseAddress!, ldc: m)
                                start += m
                            }
                        }
                        consume(scores)
                    }
                }
            }
        }
    }

    /// `n` random unit vectors and `queries` random unit queries, the same for every caller.
    static func randomIndex(vectors n: Int, dimension: Int, queries: Int) throws -> (FlatIndex, [[Float]]) {
        var values = [Float](repeating: 0, count: n * dimension)
        fill(&values, seed: UInt64(n))
        let index = try FlatIndex(dimension: dimension, ids: (0..<n).map { "v\($0)" }, rowMajorVectors: values)
        let queryVectors = (0..<queries).map { q -> [Float] in
            var v = [Float](repeating: 0, count: dimension)
            fill(&v, seed: UInt64(1000 + q))
            return VectorMath.normalized(v)
        }
        return (index, queryVectors)
    }

    /// The Markdown table, and every figure for `topk --json`.
    func run() throws -> (table: String, figures: [Figure]) {
        var figures = [Figure]()
        let copyBandwidth = Self.copyBandwidth()
        report.add("table3", "copy bandwidth", copyBandwidth / 1e9, "GB/s")
        var readBandwidths = [String]()
        var rows = [[String]]()
        var notes = [String]()
        for n in sizes {
            var (index, queries) = try Self.randomIndex(vectors: n, dimension: dimension, queries: batch)
            let (_, codeSeconds) = timed { index.buildCodes([.int8, .binary]) }
            let query = queries[0]
            let repeats = n >= 1_000_000 ? 3 : n >= 100_000 ? 5 : 20
            resetPeakResident()
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
            let int8 = best(repeats) { consume(try? index.search(query, k: 10, precision: .int8)) }
            let binary = best(repeats) { consume(try? index.search(query, k: 10, precision: .binary)) }
            let batched =
                best(max(1, repeats / 2)) { consume(try? index.search(batch: queries, k: 10)) } / Double(batch)
            let searchPeak = peakResidentBytes()
            let gemmOnly = Self.gemmOnlySeconds(index, queries: queries) / Double(batch)
            // Recall@10 of the codes (with their default rescoring) against exact, over the batch's queries.
            var found = [SearchPrecision: Int]()
            var wanted = 0
            for q in queries {
                let exact = Set(try index.search(q, k: 10).map(\.row))
                wanted += exact.count
                for precision in [SearchPrecision.int8, .binary] {
                    found[precision, default: 0] += try index.search(q, k: 10, precision: precision).filter {
                        exact.contains($0.row)
                    }.count
                }
            }
            let recall8 = Double(found[.int8] ?? 0) / Double(max(1, wanted))
            let recallBinary = Double(found[.binary] ?? 0) / Double(max(1, wanted))
            let overlap = Set(hits.map(\.row)).intersection(naiveTop).count
            guard overlap >= 9 else {
                throw BenchFailure(message: "top-k at \(n): BLAS+heap and naive agree on only \(overlap) of 10")
            }
            let bandwidth = Self.readBandwidth(of: index, repeats: max(repeats, 5))
            let floor = Double(n * dimension * 4) / bandwidth
            let name = "\(n)"
            report.add("table3", "\(name) read bandwidth", bandwidth / 1e9, "GB/s")
            readBandwidths.append("\(n.formatted()) \(String(format: "%.1f", bandwidth / 1e9))")
            report.add("table3", "\(name) naive loop + sort", naive, "s")
            report.add("table3", "\(name) scan + heap, one query", single, "s")
            report.add("table3", "\(name) int8 + rescore, one query", int8, "s")
            report.add("table3", "\(name) binary + rescore, one query", binary, "s")
            report.add("table3", "\(name) int8 recall@10 vs exact", recall8, "")
            report.add("table3", "\(name) binary recall@10 vs exact", recallBinary, "")
            report.add("table3", "\(name) batch of \(batch), per query", batched, "s")
            report.add("table3", "\(name) batch gemm only, per query", gemmOnly, "s")
            report.add("table3", "\(name) bandwidth floor", floor, "s")
            report.add("table3", "\(name) one query / floor", single / floor, "×")
            figures += [
                Figure(vectors: n, method: "exact", msPerQuery: single * 1000, recallAt10: 1),
                Figure(vectors: n, method: "int8", msPerQuery: int8 * 1000, recallAt10: recall8),
                Figure(vectors: n, method: "binary", msPerQuery: binary * 1000, recallAt10: recallBinary),
                Figure(vectors: n, method: "batch32", msPerQuery: batched * 1000, recallAt10: 1),
            ]
            let ratio = { (s: Double) in String(format: "%.2f×", s / floor) }
            rows.append([
                n.formatted(), duration(naive) + " (" + ratio(naive) + ")",
                duration(single) + " (" + ratio(single) + ")",
                duration(int8) + String(format: " (%.2f× exact, r@10 %.3f)", int8 / single, recall8),
                duration(binary) + String(format: " (%.2f× exact, r@10 %.3f)", binary / single, recallBinary),
                duration(batched) + " (" + ratio(batched) + ")", duration(floor),
            ])
            if n >= 100_000 {
                let bound = max(gemmOnly, floor / Double(batch))
                notes.append(
                    "\(n.formatted()): batch of \(batch) \(duration(batched)) per query, gemm alone \(duration(gemmOnly)), matrix bytes ÷ bandwidth ÷ \(batch) \(duration(floor / Double(batch))): \(String(format: "%.2f", batched / bound))× the larger; codes built in \(duration(codeSeconds))"
                )
                report.add("table3", "\(name) batch / max(gemm, floor/\(batch))", batched / bound, "×")
                report.add(
                    "table3", "\(name) peak resident memory while searching", Double(searchPeak) / 1_048_576, "MiB")
                notes.append(
                    "peak resident memory while searching (naive, exact, int8, binary, batch) \(String(format: "%.0f", Double(searchPeak) / 1_048_576)) MiB"
                )
            }
        }
        var out =
            "### Table 3 — top-10 over random 384-d unit vectors on \(CPUInfo.current.modelName), OpenBLAS core \(BLAS.coreInUse ?? "?") (time, and ratio to the floor)\n\n"
        out += table(
            [
                "Vectors", "Naive loop + sort", "Vectorized scan + heap, 1 query", "int8 codes + rescore ×4, 1 query",
                "binary codes + rescore ×10, 1 query",
                "Batch of \(batch), per query", "Bandwidth floor",
            ], rows)
        out +=
            "\nFloor = matrix bytes ÷ read bandwidth: a read-only pass over the same matrix, split over the cores as the exact scan is, measured in this run (GB/s: \(readBandwidths.joined(separator: ", ")); memcpy, one thread, bytes read + written: \(String(format: "%.1f", copyBandwidth / 1e9))). Small matrices sit in cache, and so does their pass. int8 and binary scan codes of a quarter and a thirty-second of the floats' bytes, then rescore the best k × 4 (int8) or k × 10 (binary) with the floats; recall@10 is against exact search over the \(batch) queries (random vectors are the hard case for codes: their neighbours are barely nearer than anything else — real embeddings: `embeddings-bench quantization`).\n"
        if !notes.isEmpty { out += "\nBatches at GEMM speed — " + notes.joined(separator: "; ") + ".\n" }
        return (out, figures)
    }
}

/// The operands of one parallel gemm-only pass.
private struct GemmShare {
    let matrix: UnsafePointer<Float>
    let queries: UnsafePointer<Float>
}

/// A copy the optimizer cannot remove (its result is read through a pointer it cannot see through).
@inline(never)
func copyBytes(_ target: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
    memcpy(target, source, count)
}
