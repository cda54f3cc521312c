import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import VectorIndex

/// OpenBLAS's sgemm speed with its threads on every core: GFLOP/s of `C = A·Bᵀ` (m × k by n × k).
func sgemmGFLOPs(m: Int, n: Int, k: Int, repeats: Int) -> Double {
    let saved = BLAS.threadCount
    BLAS.threadCount = ProcessInfo.processInfo.activeProcessorCount
    defer { BLAS.threadCount = saved }
    let a = [Float](repeating: 0.5, count: m * k)
    let b = [Float](repeating: 0.25, count: k * n)
    var c = [Float](repeating: 0, count: m * n)
    let seconds = best(repeats) {
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                c.withUnsafeMutableBufferPointer { pc in
                    BLAS.gemm(
                        .none, .transposed, m: m, n: n, k: k, a: pa.baseAddress!, lda: k, b: pb.baseAddress!, ldb: k,
                        c: pc.baseAddress!, ldc: n)
                }
            }
        }
    }
    consume(c)
    return 2 * Double(m * n * k) / seconds / 1e9
}

/// Batch top-10 (32 queries, blocks through sgemm) over `vectors` random 384-d unit vectors: seconds per query.
func batchTopKSecondsPerQuery(vectors n: Int, repeats: Int) throws -> Double {
    let batch = 32
    let (index, queries) = try TopKBench.randomIndex(vectors: n, dimension: 384, queries: batch)
    return best(repeats) { consume(try? index.search(batch: queries, k: 10)) } / Double(batch)
}

/// The batched encoder (batches of 16, the default threads): seconds per chunk.
func encoderSecondsPerChunk(_ embedding: ContextualEmbedding, texts: [String]) throws -> Double {
    consume(try embedding.sentenceVectors(for: Array(texts.prefix(8)), batchSize: 16))
    let (_, seconds) = try timed { consume(try embedding.sentenceVectors(for: texts, batchSize: 16)) }
    return seconds / Double(texts.count)
}

/// `embeddings-bench probe …`: one measurement in a child process, printed as one JSON line,
/// so that the parent can run it under another OpenBLAS core (`OPENBLAS_CORETYPE` set before the
/// library loads) without disturbing its own kernels.
enum Probe {
    struct Result: Codable {
        var core: String
        var value: Double
        var secondary: Double?
        var selfCheckError: Double?
        /// `probe encoder`: the weights' bytes and the process's peak resident memory.
        var weightBytes: Int?
        var peakResidentBytes: Int?
    }

    static func main(_ arguments: [String], quick: Bool, corpus: URL, quantization: Quantization = .float32) throws
        -> any Encodable
    {
        let core = BLAS.coreInUse ?? "?"
        switch arguments.first {
        case "sgemm":
            let repeats = quick ? 3 : 7
            return Result(
                core: core, value: sgemmGFLOPs(m: 2048, n: 1536, k: 384, repeats: repeats),
                secondary: sgemmGFLOPs(m: 180, n: 1536, k: 384, repeats: repeats), selfCheckError: BLAS.selfCheck())
        case "topk":
            let vectors = arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000
            return Result(core: core, value: try batchTopKSecondsPerQuery(vectors: vectors, repeats: quick ? 2 : 3))
        case "encoder":
            let count = arguments.count > 1 ? Int(arguments[1]) ?? 60 : 60
            let (chunks, _) = try MarkdownChunker().chunks(ofFolder: corpus)
            let embedding = try loadModel(quantization: quantization)
            let seconds = try encoderSecondsPerChunk(embedding, texts: chunks.prefix(count).map(\.text))
            return Result(
                core: core, value: seconds, weightBytes: try embedding.weightBytes(),
                peakResidentBytes: peakResidentBytes())
        case "int8gemm":
            let rows = arguments.count > 1 ? Int(arguments[1]) ?? 1044 : 1044
            return Int8GEMMProbe.run(rows: rows, quick: quick)
        case "blockgemm":
            return BlockGEMMProbe.run(quick: quick)
        default:
            throw BenchFailure(
                message: "usage: embeddings-bench probe sgemm|topk [vectors]|encoder [chunks]|int8gemm [rows]|blockgemm"
            )
        }
    }

    /// Runs `embeddings-bench probe …` (this executable) with `OPENBLAS_CORETYPE=core` (nil: the
    /// environment as it is) and returns its result, or a reason when it crashed or failed.
    static func run(_ arguments: [String], core: String?, quick: Bool, corpus: URL)
        -> Swift.Result<Result, BenchFailure>
    {
        var childArguments = [ProbeCommand.name] + arguments + [BenchOptions.corpus.name, corpus.path]
        if quick { childArguments.append(BenchOptions.quick.name) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = childArguments
        var environment = ProcessInfo.processInfo.environment
        if let core { environment[BLAS.coreTypeVariable] = core }
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { return .failure(BenchFailure(message: "could not start a child: \(error)")) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal {
            return .failure(BenchFailure(message: "crashed (signal \(process.terminationStatus))"))
        }
        guard process.terminationStatus == 0,
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
            let result = try? JSONDecoder().decode(Result.self, from: Data(line.utf8))
        else {
            return .failure(
                BenchFailure(
                    message:
                        "failed (exit \(process.terminationStatus)): \(errorText.split(separator: "\n").last ?? "")"))
        }
        return .success(result)
    }
}

/// The BLAS kernels table (sgemm peak of every core this CPU can run, in child processes) and
/// the cost of a wrong choice: the encoder, batch top-k and `embeddings index` as they run here
/// and under Prescott, the SSE3 kernels Debian's OpenBLAS falls back to on CPUs it does not know.
struct KernelBench {
    let report: Report
    let quick: Bool
    let corpus: URL

    struct Peaks {
        var inUse: Double
        var inUseSmall: Double
        var best: Double
        var bestCore: String
    }

    /// The cores worth measuring on this CPU: every vendor-neutral core it can run, from Prescott up.
    var candidateCores: [String] {
        let shipped = BLAS.configuration.shippedCores
        return ["Prescott", "Nehalem", "Sandybridge", "Haswell", "Zen", "SkylakeX", "Cooperlake"].filter { core in
            shipped.contains(core) && BLAS.cpuCanRun(core: core)
        }
    }

    /// sgemm of the core in use (this process) and of every candidate core (child processes),
    /// in alternating rounds so that a noisy moment does not favour one core; best of all rounds.
    func peaks() -> (Peaks, String) {
        let repeats = quick ? 3 : 7
        let rounds = quick ? 1 : 2
        let current = BLAS.coreInUse ?? "?"
        var inUse = 0.0
        var inUseSmall = 0.0
        var measured = [String: Probe.Result]()
        var failures = [String: String]()
        for _ in 0..<rounds {
            inUse = max(inUse, sgemmGFLOPs(m: 2048, n: 1536, k: 384, repeats: repeats))
            inUseSmall = max(inUseSmall, sgemmGFLOPs(m: 180, n: 1536, k: 384, repeats: repeats))
            for core in candidateCores where failures[core] == nil {
                switch Probe.run(["sgemm"], core: core, quick: quick, corpus: corpus) {
                case .success(var result):
                    if let earlier = measured[core] {
                        result.value = max(result.value, earlier.value)
                        result.secondary = max(result.secondary ?? 0, earlier.secondary ?? 0)
                        result.selfCheckError = max(result.selfCheckError ?? 0, earlier.selfCheckError ?? 0)
                    }
                    measured[core] = result
                case .failure(let reason):
                    failures[core] = reason.message
                }
            }
        }
        var rows = [[String]]()
        var bestValue = inUse
        var bestCore = current
        rows.append([
            "\(current) (in use, this process)", String(format: "%.0f", inUse), String(format: "%.0f", inUseSmall), "—",
        ])
        report.add("kernels", "sgemm 2048x1536x384, \(current) in use", inUse, "GFLOP/s")
        for core in candidateCores {
            if let failure = failures[core] {
                rows.append([core, failure, "", ""])
                continue
            }
            guard let result = measured[core] else { continue }
            let name = result.core.lowercased() == core.lowercased() ? core : "\(core) (OpenBLAS ran \(result.core))"
            let check =
                result.selfCheckError.map {
                    $0 <= BLAS.selfCheckTolerance
                        ? String(format: "agrees (%.0e)", $0) : String(format: "WRONG (%.0e)", $0)
                } ?? "?"
            rows.append([
                name, String(format: "%.0f", result.value), String(format: "%.0f", result.secondary ?? 0), check,
            ])
            report.add("kernels", "sgemm 2048x1536x384, \(core)", result.value, "GFLOP/s")
            if result.value > bestValue, (result.selfCheckError ?? 1) <= BLAS.selfCheckTolerance {
                bestValue = result.value
                bestCore = result.core
            }
        }
        report.add("kernels", "best-core sgemm peak (\(bestCore))", bestValue, "GFLOP/s")
        var out =
            "### BLAS kernels — sgemm GFLOP/s on \(CPUInfo.current.modelName), \(ProcessInfo.processInfo.activeProcessorCount) threads\n\n"
        out += table(["OpenBLAS core", "2048×1536×384", "180×1536×384", "Results vs reference loops"], rows)
        out +=
            "\nKernel check: \(BLAS.coreCheck.summary). Other cores run in child processes with OPENBLAS_CORETYPE set, \(rounds) alternating round\(rounds == 1 ? "" : "s") of best-of-\(repeats); the best one this CPU runs correctly is \(bestCore) at \(String(format: "%.0f", bestValue)) GFLOP/s, the peak the encoder is measured against.\n"
        return (Peaks(inUse: inUse, inUseSmall: inUseSmall, best: bestValue, bestCore: bestCore), out)
    }

    /// `embeddings index` over a copy of the corpus's first pages (in name order, until they hold
    /// `chunks` chunks): wall-clock chunks per second (process start and model load included), as
    /// it runs here and with the core forced.
    func indexThroughput(chunks wanted: Int, core: String?)
        -> Swift.Result<(pages: Int, chunks: Int, perSecond: Double), BenchFailure>
    {
        guard let cli = try? embeddingsExecutable() else {
            return .failure(BenchFailure(message: "embeddings not built next to embeddings-bench"))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ce-bench-index-\(getpid())-\(core ?? "as-run")")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let (all, _) = try MarkdownChunker().chunks(ofFolder: corpus)
            let perPage = Dictionary(grouping: all, by: \.source).mapValues(\.count)
            var total = 0
            var pages = 0
            for page in perPage.keys.sorted() where total < wanted && !page.contains("/") {
                try FileManager.default.copyItem(
                    at: corpus.appendingPathComponent(page), to: folder.appendingPathComponent(page))
                total += perPage[page]!
                pages += 1
            }
            let process = Process()
            process.executableURL = cli
            process.arguments = ["index", folder.path, "--out", folder.appendingPathComponent("bench.index").path]
            var environment = ProcessInfo.processInfo.environment
            if let core { environment[BLAS.coreTypeVariable] = core }
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let start = now()
            try process.run()
            process.waitUntilExit()
            let seconds = now() - start
            guard process.terminationStatus == 0 else {
                return .failure(BenchFailure(message: "embeddings index failed (\(process.terminationStatus))"))
            }
            return .success((pages, total, Double(total) / seconds))
        } catch {
            return .failure(BenchFailure(message: "\(error)"))
        }
    }

    /// Side by side: as this process runs, and under Prescott.
    func wrongChoice(encoderAsRun: Double, texts: Int) throws -> String {
        let slow = "Prescott"
        var rows = [[String]]()
        let current = BLAS.coreInUse ?? "?"
        func ratio(_ fast: Double, _ slowValue: Double) -> String { String(format: "%.1f×", slowValue / fast) }
        // Encoder: this process's batched figure, against a child on Prescott over the same chunks.
        switch Probe.run(["encoder", "\(texts)"], core: slow, quick: quick, corpus: corpus) {
        case .success(let result):
            rows.append([
                "Encoder, \(texts) chunks, batches of 16 (ms/chunk)", String(format: "%.2f", encoderAsRun * 1000),
                String(format: "%.2f", result.value * 1000), ratio(encoderAsRun, result.value),
            ])
            report.add("wrong core", "encoder ms/chunk, \(current)", encoderAsRun * 1000, "ms")
            report.add("wrong core", "encoder ms/chunk, Prescott", result.value * 1000, "ms")
            report.add("wrong core", "encoder speed-up over Prescott", result.value / encoderAsRun, "×")
        case .failure(let reason):
            rows.append(["Encoder", String(format: "%.2f", encoderAsRun * 1000), reason.message, ""])
        }
        let vectors = quick ? 21_730 : 100_000
        let topK = try batchTopKSecondsPerQuery(vectors: vectors, repeats: quick ? 2 : 3)
        switch Probe.run(["topk", "\(vectors)"], core: slow, quick: quick, corpus: corpus) {
        case .success(let result):
            rows.append([
                "Top-10, batch of 32 over \(vectors.formatted()) vectors (ms/query)",
                String(format: "%.3f", topK * 1000),
                String(format: "%.3f", result.value * 1000), ratio(topK, result.value),
            ])
            report.add("wrong core", "batch top-k ms/query, \(current)", topK * 1000, "ms")
            report.add("wrong core", "batch top-k ms/query, Prescott", result.value * 1000, "ms")
        case .failure(let reason):
            rows.append(["Top-10, batch of 32", String(format: "%.3f", topK * 1000), reason.message, ""])
        }
        let wanted = quick ? 30 : 200
        switch (indexThroughput(chunks: wanted, core: nil), indexThroughput(chunks: wanted, core: slow)) {
        case (.success(let fast), .success(let slowRun)):
            rows.append([
                "`embeddings index`, \(fast.pages) pages, \(fast.chunks) chunks (chunks/s, wall clock)",
                String(format: "%.1f", fast.perSecond),
                String(format: "%.1f", slowRun.perSecond), ratio(slowRun.perSecond, fast.perSecond),
            ])
            report.add("wrong core", "embeddings index chunks/s, \(current)", fast.perSecond, "chunks/s")
            report.add("wrong core", "embeddings index chunks/s, Prescott", slowRun.perSecond, "chunks/s")
        case (.failure(let reason), _), (_, .failure(let reason)):
            rows.append(["`embeddings index`", reason.message, "", ""])
        }
        var out = "### The cost of a wrong kernel choice — \(CPUInfo.current.modelName)\n\n"
        out += table(["Work", "As run (\(current))", "Under \(slow) (child process)", "Speed-up"], rows)
        out +=
            "\n\(slow) is what Debian 12's OpenBLAS 0.3.21 runs on CPUs it does not know (Intel family 6 model 207 among them); the kernel check replaces it at first use.\n"
        return out
    }
}
