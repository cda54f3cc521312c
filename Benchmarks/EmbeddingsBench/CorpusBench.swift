import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import VectorIndex

/// Table 1, the encoder figures and Table 2: the seed's story measured on this machine.
struct CorpusBench {
    let embedding: ContextualEmbedding
    let texts: [String]
    let report: Report
    let quick: Bool
    let question = "How do I unwrap an optional value safely?"

    /// FLOPs of one forward pass over `t` tokens (matrix products only: projections, attention).
    func flops(tokens t: Int) -> Double {
        let c = (h: 384.0, i: 1536.0, layers: 6.0)
        let t = Double(t)
        return c.layers * (2 * t * c.h * (3 * c.h + c.h + 2 * c.i) + 4 * t * t * c.h)
    }

    struct EncoderFigures {
        var oneByOne: Double
        var oneByOnePlusNaive: Double
        var batched: Double
        var batchedBLASThreads: Double
        /// Batches of 16 with the int8 encoder (default threads), and that model's weight bytes.
        var int8Batched: Double
        var int8WeightBytes: Int
        var floatWeightBytes: Int
        var totalFLOPs: Double
        var tokenLengths: [Int]
        var naiveVectors: [[Double]]
        var fastVectors: [[Float]]
        var peakMemory: Int
    }

    func encoder() throws -> EncoderFigures {
        _ = try embedding.embeddingResults(for: Array(texts.prefix(8)), language: nil)
        resetPeakResident()
        let tokenizer = try embedding.tokenizer()
        let lengths = texts.map { tokenizer.tokenize($0).tokens.count }
        let totalFLOPs = lengths.reduce(0.0) { $0 + flops(tokens: $1) }
        // (b) token vectors only, one text at a time (one thread: nothing to split).
        let (_, oneByOne) = try timed {
            for text in texts { consume(try embedding.embeddingResult(for: text, language: nil)) }
        }
        // (c) one at a time, then the seed's naive mean pooling.
        var naive = [[Double]]()
        let (_, plusNaive) = try timed {
            for text in texts {
                naive.append(try embedding.embeddingResult(for: text, language: nil).meanVectorNaive() ?? [])
            }
        }
        // (e) batches of 16, fast mean pooling, normalization.
        var fast = [[Float]]()
        let (_, batched) = try timed { fast = try embedding.sentenceVectors(for: texts, batchSize: 16) }
        // The other way to use the cores: one thread, OpenBLAS's own threads inside each GEMM.
        guard let oneThread = ContextualEmbedding(modelIdentifier: embedding.modelIdentifier, parallelism: 1) else {
            throw EmbeddingsError.invalidModel("\(embedding.modelIdentifier) is unknown")
        }
        try oneThread.load()
        let savedThreads = BLAS.threadCount
        BLAS.threadCount = ProcessInfo.processInfo.activeProcessorCount
        let (_, blasThreads) = try timed { consume(try oneThread.sentenceVectors(for: texts, batchSize: 16)) }
        BLAS.threadCount = savedThreads
        oneThread.unload()
        let peakMemory = peakResidentBytes()
        // The int8 encoder on the same texts, same batches and threads (its peak memory is
        // `embeddings-bench int8`'s, measured in a process of its own).
        guard let int8 = ContextualEmbedding(modelIdentifier: embedding.modelIdentifier, quantization: .int8) else {
            throw EmbeddingsError.invalidModel("\(embedding.modelIdentifier) is unknown")
        }
        try int8.load()
        let int8Batched = try encoderSecondsPerChunk(int8, texts: texts) * Double(texts.count)
        let int8Bytes = try int8.weightBytes()
        int8.unload()
        return EncoderFigures(
            oneByOne: oneByOne, oneByOnePlusNaive: plusNaive, batched: batched, batchedBLASThreads: blasThreads,
            int8Batched: int8Batched, int8WeightBytes: int8Bytes, floatWeightBytes: try embedding.weightBytes(),
            totalFLOPs: totalFLOPs, tokenLengths: lengths, naiveVectors: naive, fastVectors: fast,
            peakMemory: peakMemory)
    }

    /// The seed's NLEmbedding-style distance: embeds both texts on every call.
    func reembeddingDistance(_ a: String, _ b: String, naive: Bool) throws -> Double {
        let ra = try embedding.embeddingResult(for: a, language: nil)
        let rb = try embedding.embeddingResult(for: b, language: nil)
        if naive {
            return 1 - naiveCosine(ra.meanVectorNaive() ?? [], rb.meanVectorNaive() ?? [])
        }
        return Double(VectorMath.cosineDistance(ra.meanPooled(), rb.meanPooled()))
    }

    func naiveCosine(_ a: [Double], _ b: [Double]) -> Double {
        var dot = 0.0
        var na = 0.0
        var nb = 0.0
        for i in 0..<min(a.count, b.count) {
            dot += a[i] * b[i]
            na += a[i] * a[i]
            nb += b[i] * b[i]
        }
        return na > 0 && nb > 0 ? dot / (na.squareRoot() * nb.squareRoot()) : 0
    }

    /// How many comparisons `sorted(by:)` makes on `n` items in this order.
    func comparisonCount(_ distances: [Double]) -> Int {
        var count = 0
        _ = distances.indices.sorted {
            count += 1
            return distances[$0] < distances[$1]
        }
        return count
    }

    func run() throws -> (EncoderFigures, String) {
        let n = texts.count
        let e = try encoder()
        let perText = e.oneByOne / Double(n)
        // Samples of the re-embedding distance, extrapolated.
        let sample = Array(texts.prefix(quick ? 4 : 12))
        let (_, sampleFast) = try timed {
            for t in sample { consume(try reembeddingDistance(question, t, naive: false)) }
        }
        let (_, sampleNaive) = try timed {
            for t in sample { consume(try reembeddingDistance(question, t, naive: true)) }
        }
        let perDistanceFast = sampleFast / Double(sample.count)
        let perDistanceNaive = sampleNaive / Double(sample.count)
        // (d) cached naive vectors: distances and a full sort, measured.
        let questionNaive = try embedding.embeddingResult(for: question, language: nil).meanVectorNaive() ?? []
        var cachedDistances = [Double]()
        let (_, naiveDistanceTime) = timed {
            cachedDistances = e.naiveVectors.map { 1 - naiveCosine(questionNaive, $0) }
        }
        let comparisons = comparisonCount(cachedDistances)
        let (_, naiveSortTime) = timed {
            consume(cachedDistances.indices.sorted { cachedDistances[$0] < cachedDistances[$1] })
        }
        // (e) fast: gemv over the normalized vectors, then the heap.
        let index = try FlatIndex(
            dimension: 384, ids: (0..<n).map { "c\($0)" }, rowMajorVectors: e.fastVectors.flatMap { $0 })
        let q = try embedding.sentenceVector(for: question, inputType: .query)
        var scores = [Float](repeating: 0, count: n)
        let gemvTime = best(20) { scores = (try? index.scores(for: q)) ?? [] }
        let heapTime = best(20) { consume(TopK.select(from: scores, k: 10)) }
        // Agreement: fast pooled vectors equal the naive ones (after normalization).
        var worst = 0.0
        for (f, nv) in zip(e.fastVectors, e.naiveVectors) {
            let norm = nv.reduce(0) { $0 + $1 * $1 }.squareRoot()
            for (x, y) in zip(f, nv) { worst = max(worst, abs(Double(x) - y / norm)) }
        }
        report.add("agreement", "fast vs naive mean pooling, max |Δ| on unit vectors", worst, "")
        guard worst <= 1e-5 else { throw BenchFailure(message: "fast and naive pooling disagree: max |Δ| \(worst)") }
        let heapIDs = TopK.select(from: scores, k: 10).map(\.index)
        let naiveIDs = cachedDistances.indices.sorted { cachedDistances[$0] < cachedDistances[$1] }.prefix(10)
        report.add(
            "agreement", "top-10 overlap, fast vs naive", Double(Set(heapIDs).intersection(naiveIDs).count), "of 10")

        let t = "table1"
        report.add(t, "a calc vectors (embed + pool, one by one)", e.oneByOne, "s")
        report.add(
            t, "a calc distances (re-embed both per distance)", perDistanceFast * Double(n), "s", estimated: true)
        report.add(
            t, "a sort (re-embed per comparison)", perDistanceFast * 2 * Double(comparisons), "s", estimated: true)
        report.add(t, "b calc vectors (token vectors only)", e.oneByOne, "s")
        report.add(t, "c calc vectors (+ naive mean pooling)", e.oneByOnePlusNaive, "s")
        report.add(t, "c calc distances (re-embed + naive pool)", perDistanceNaive * Double(n), "s", estimated: true)
        report.add(
            t, "c sort (re-embed + naive pool per comparison)", perDistanceNaive * 2 * Double(comparisons), "s",
            estimated: true)
        report.add(t, "d calc distances (cached naive vectors)", naiveDistanceTime, "s")
        report.add(t, "d sort (full sort)", naiveSortTime, "s")
        report.add(t, "e calc vectors (batched encoder + fast pooling)", e.batched, "s")
        report.add(t, "e calc distances (one gemv)", gemvTime, "s")
        report.add(t, "e sort (top-10 heap)", heapTime, "s")
        report.add(t, "comparisons in the sort", Double(comparisons), "")

        let ms = { (s: Double) in String(format: "%.2f", s * 1000 / Double(n)) }
        var out =
            "### Table 1 — \(n) chunks on \(CPUInfo.current.modelName), OpenBLAS core \(BLAS.coreInUse ?? "?") (seed: 722 chunks on an Apple silicon laptop)\n\n"
        out += table(
            ["Setup", "Calc vectors", "Calc distances", "Sort", "ms/vector", "Seed"],
            [
                [
                    "(a) re-embedding per comparison (NLEmbedding pattern)", duration(e.oneByOne),
                    duration(perDistanceFast * Double(n), estimated: true),
                    duration(perDistanceFast * 2 * Double(comparisons), estimated: true), ms(e.oneByOne),
                    "35 s · 70 s · 1,554 s · 49",
                ],
                ["(b) token vectors only", duration(e.oneByOne), "", "", ms(e.oneByOne), "5.2 s · · · 7.26"],
                [
                    "(c) + naive mean pooling", duration(e.oneByOnePlusNaive),
                    duration(perDistanceNaive * Double(n), estimated: true),
                    duration(perDistanceNaive * 2 * Double(comparisons), estimated: true), ms(e.oneByOnePlusNaive),
                    "17 s · 34 s · 717 s · 23.71",
                ],
                [
                    "(d) + naive pooling, vectors cached", duration(e.oneByOnePlusNaive), duration(naiveDistanceTime),
                    duration(naiveSortTime), ms(e.oneByOnePlusNaive), "17 s · 74 ms · 1 ms · 23.71",
                ],
                [
                    "(e) batched encoder + fast pooling + vectorized top-k", duration(e.batched), duration(gemvTime),
                    duration(heapTime), ms(e.batched), "—",
                ],
            ])
        out +=
            "\nSorting \(n) items made \(comparisons) comparisons; \"est.\" rows time \(sample.count) real re-embedding distances (\(String(format: "%.1f", perDistanceFast * 1000)) ms each, \(String(format: "%.1f", perDistanceNaive * 1000)) ms with naive pooling) and multiply. Fast vs naive pooling: max |Δ| \(String(format: "%.1e", worst)) on unit vectors.\n"
        _ = perText
        return (e, out)
    }

    /// Table 2: the seed's 21,730-chunk site, pooling measured over token matrices drawn from the
    /// corpus's own token-length distribution.
    /// A result of `tokens` random token vectors over a string of one character per token.
    func synthetic(tokens t: Int, dimension d: Int, rng: inout SystemRandomNumberGenerator) throws
        -> ContextualEmbeddingResult
    {
        let text = String(repeating: "x", count: t)
        var ranges = [Range<String.Index>]()
        var i = text.startIndex
        for _ in 0..<t {
            let j = text.index(after: i)
            ranges.append(i..<j)
            i = j
        }
        let values = (0..<(t * d)).map { _ in Float.random(in: -1...1, using: &rng) }
        return try ContextualEmbeddingResult(
            string: text, tokenRanges: ranges, tokenVectors: Matrix(rows: t, columns: d, values: values))
    }

    func table2(_ e: EncoderFigures, count: Int) throws -> String {
        var rng = SystemRandomNumberGenerator()
        let d = 384
        var byLength = [Int: ContextualEmbeddingResult]()
        for t in Set(e.tokenLengths) { byLength[t] = try synthetic(tokens: t, dimension: d, rng: &rng) }
        let lengths = (0..<count).map { _ in e.tokenLengths.randomElement(using: &rng)! }
        var naiveVectors = [[Double]]()
        naiveVectors.reserveCapacity(count)
        let (_, naiveTime) = timed { for t in lengths { naiveVectors.append(byLength[t]!.meanVectorNaive()!) } }
        var fastVectors = [Float]()
        fastVectors.reserveCapacity(count * d)
        let (_, fastTime) = timed { for t in lengths { fastVectors.append(contentsOf: byLength[t]!.meanPooled()) } }
        let query = naiveVectors[0]
        var distances = [Double]()
        let (_, naiveDistance) = timed { distances = naiveVectors.map { 1 - naiveCosine(query, $0) } }
        let (_, fullSort) = timed { consume(distances.indices.sorted { distances[$0] < distances[$1] }) }
        let index = try? FlatIndex(dimension: d, ids: (0..<count).map { "r\($0)" }, rowMajorVectors: fastVectors)
        let q = query.map(Float.init)
        var scores = [Float](repeating: 0, count: count)
        let gemv = best(10) { scores = (try? index?.scores(for: q)) ?? [] }
        let heap = best(10) { consume(TopK.select(from: scores, k: 10)) }
        // The issue's fixed case: one 180 × 384 matrix, naive vs fast, best of many.
        let fixed = try synthetic(tokens: 180, dimension: d, rng: &rng)
        let naive180 = best(200) { consume(fixed.meanVectorNaive()) }
        let fast180 = best(2000) { consume(fixed.meanPooled()) }
        report.add("pooling", "180x384 naive mean", naive180 * 1e6, "µs")
        report.add("pooling", "180x384 fast mean", fast180 * 1e6, "µs")
        report.add("pooling", "180x384 speed-up", naive180 / fast180, "×")
        let perChunkBatched = e.batched / Double(texts.count)
        let perChunkOne = e.oneByOne / Double(texts.count)
        let t = "table2"
        report.add(t, "embedding, one by one", perChunkOne * 21_730, "s", estimated: true)
        report.add(t, "embedding, batched", perChunkBatched * 21_730, "s", estimated: true)
        report.add(t, "naive mean pooling", naiveTime * 21_730 / Double(count), "s", estimated: count != 21_730)
        report.add(t, "fast mean pooling", fastTime * 21_730 / Double(count), "s", estimated: count != 21_730)
        report.add(t, "distances, naive loop", naiveDistance * 21_730 / Double(count), "s", estimated: count != 21_730)
        report.add(t, "distances, gemv", gemv * 21_730 / Double(count), "s", estimated: count != 21_730)
        report.add(t, "full sort", fullSort, "s", estimated: count != 21_730)
        report.add(t, "top-10 heap", heap, "s", estimated: count != 21_730)
        let est = count != 21_730
        var out = "### Table 2 — 21,730 chunks (the seed's full site) on \(CPUInfo.current.modelName)\n\n"
        out += table(
            ["Step", "Naive", "Fast", "Speed-up", "Seed"],
            [
                [
                    "Embedding (\(texts.count)-chunk sample, extrapolated)",
                    duration(perChunkOne * 21_730, estimated: true) + " one by one",
                    duration(perChunkBatched * 21_730, estimated: true) + " batched",
                    String(format: "%.1f×", perChunkOne / perChunkBatched), "158 s (7.3 ms each)",
                ],
                [
                    "Mean pooling (token lengths drawn from the corpus)",
                    duration(naiveTime * 21_730 / Double(count), estimated: est),
                    duration(fastTime * 21_730 / Double(count), estimated: est),
                    String(format: "%.0f×", naiveTime / fastTime), "329 s naive (15.2 ms each), 159 s vDSP",
                ],
                [
                    "Distances", duration(naiveDistance * 21_730 / Double(count), estimated: est),
                    duration(gemv * 21_730 / Double(count), estimated: est),
                    String(format: "%.0f×", naiveDistance / gemv), "2.165 s",
                ],
                [
                    "Sort / top-10", duration(fullSort, estimated: est) + " full sort",
                    duration(heap, estimated: est) + " heap", String(format: "%.0f×", fullSort / heap), "49 ms",
                ],
            ])
        out +=
            "\nMean pooling of one 180 × 384 token matrix (best of many): naive \(String(format: "%.1f", naive180 * 1e6)) µs, fast \(String(format: "%.2f", fast180 * 1e6)) µs, \(String(format: "%.0f", naive180 / fast180))× faster.\n"
        return out
    }

    func encoderTable(_ e: EncoderFigures, peaks: KernelBench.Peaks) -> String {
        let n = Double(texts.count)
        let meanTokens = Double(e.tokenLengths.reduce(0, +)) / n
        let workers = embedding.parallelism
        let int8Name = "batches of 16, \(workers) threads, int8 (\(Int8GEMM.defaultPath))"
        let rows: [(String, Double)] = [
            ("one text per call, 1 thread", e.oneByOne),
            (
                "batches of 16, 1 thread × \(ProcessInfo.processInfo.activeProcessorCount) OpenBLAS threads",
                e.batchedBLASThreads
            ),
            ("batches of 16, \(workers) threads × 1 OpenBLAS thread (default)", e.batched),
            (int8Name, e.int8Batched),
        ]
        var out =
            "### Encoder — \(texts.count) chunks, mean \(String(format: "%.0f", meanTokens)) tokens, on \(CPUInfo.current.modelName) (OpenBLAS core \(BLAS.coreInUse ?? "?"))\n\n"
        out += table(
            ["Mode", "ms/chunk", "GFLOP/s (int8: GOP/s)", "of best-core sgemm peak (\(peaks.bestCore))"],
            rows.map { name, seconds in
                let gflops = e.totalFLOPs / seconds / 1e9
                report.add("encoder", name + " ms/chunk", seconds * 1000 / n, "ms")
                report.add("encoder", name + " GFLOP/s", gflops, "GFLOP/s")
                report.add("encoder", name + " share of best-core sgemm peak", gflops / peaks.best, "")
                return [
                    name, String(format: "%.2f", seconds * 1000 / n), String(format: "%.0f", gflops),
                    String(format: "%.0f%%", 100 * gflops / peaks.best),
                ]
            })
        report.add("encoder", "int8 / float32 ms/chunk, batches of 16", e.int8Batched / e.batched, "×")
        report.add("encoder", "weights in memory, float32", Double(e.floatWeightBytes) / 1_048_576, "MiB")
        report.add("encoder", "weights in memory, int8", Double(e.int8WeightBytes) / 1_048_576, "MiB")
        out += String(
            format:
                "\nint8 against float32 in this run: %.2f× the time per chunk; weights %.1f MiB against %.1f MiB (the word table stays float32). The int8 row counts the same operations as the float rows (its projections are integer multiply-adds); `embeddings-bench int8` measures what int8 costs in quality and memory.\n",
            e.int8Batched / e.batched, Double(e.int8WeightBytes) / 1_048_576, Double(e.floatWeightBytes) / 1_048_576)
        report.add("encoder", "sgemm peak 2048x1536x384, core in use", peaks.inUse, "GFLOP/s")
        report.add("encoder", "sgemm 180x1536x384, core in use", peaks.inUseSmall, "GFLOP/s")
        report.add("encoder", "peak resident memory while encoding", Double(e.peakMemory) / 1_048_576, "MiB")
        out +=
            "\nsgemm in the same run: \(String(format: "%.0f", peaks.inUse)) GFLOP/s at 2048×1536×384 on the core in use (\(String(format: "%.0f", peaks.inUseSmall)) at 180×1536×384); the best core this OpenBLAS runs on this CPU, \(peaks.bestCore), reaches \(String(format: "%.0f", peaks.best)). Peak resident memory while encoding: \(String(format: "%.0f", Double(e.peakMemory) / 1_048_576)) MiB.\n"
        return out
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
