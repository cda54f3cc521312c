import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import VectorIndex

/// `embeddings-bench int8`: what the int8 encoder gains and costs against float32, in one run.
///
/// - Speed: `embeddings embed` (beside this executable) on the same 722 chunks of real
///   documentation, launch to exit, float32 and `--quantize int8` alternated; the cosine of each
///   text's two vectors as printed.
/// - Memory: the weights' bytes and the peak resident memory of `probe encoder` children, one per
///   encoder.
/// - Quality in process: cosine over the golden texts; recall@4 of the project's evaluation sets
///   (hybrid and semantic) with each encoder indexing and searching; top-10 overlap of a
///   1,000-chunk exact index searched with 100 questions.
enum Int8EncoderBench {
    struct CosineFigures {
        var minimum: Double
        var mean: Double
        var count: Int
    }

    static func cosines(_ a: [[Float]], _ b: [[Float]]) -> CosineFigures {
        precondition(a.count == b.count && !a.isEmpty)
        var minimum = 1.0
        var sum = 0.0
        for (x, y) in zip(a, b) {
            let c = Double(VectorMath.cosineSimilarity(x, y))
            minimum = min(minimum, c)
            sum += c
        }
        return CosineFigures(minimum: minimum, mean: sum / Double(a.count), count: a.count)
    }

    /// The Swift toolchain's diagnostics docs (the swift-docs evaluation corpus), when present.
    static func swiftDocs() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for folder in path.split(separator: ":") {
            let swift = URL(fileURLWithPath: String(folder)).appendingPathComponent("swift")
            guard FileManager.default.isExecutableFile(atPath: swift.path) else { continue }
            let docs = swift.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("share/doc/swift/diagnostics")
            return FileManager.default.fileExists(atPath: docs.path) ? docs : nil
        }
        return nil
    }

    static func run(quick: Bool, corpus: URL, report: Report) throws -> String {
        let rounds = quick ? 1 : 2
        let count = quick ? 96 : 722
        // Real documentation: the Node.js API docs when the machine has them, else the corpus.
        let nodeDocs = QuantizationBench.nodeDocs
        let source = FileManager.default.fileExists(atPath: nodeDocs.path) ? nodeDocs : corpus
        let (chunks, _) = try MarkdownChunker().chunks(ofFolder: source)
        let texts = Array(chunks.prefix(count).map(\.text))
        guard texts.count >= min(count, 50) else {
            throw BenchFailure(message: "only \(texts.count) chunks under \(source.path)")
        }
        var out =
            "### The int8 encoder against float32 — \(CPUInfo.current.modelName), int8 path \(Int8GEMM.defaultPath), OpenBLAS core \(BLAS.coreInUse ?? "?")\n\n"

        // 1. `embeddings embed`, launch to exit, alternated.
        let embed = try embedCommandTimes(texts: texts, rounds: rounds)
        let cliCosine = cosines(embed.vectors[.float32]!, embed.vectors[.int8]!)
        let float = embed.seconds[.float32]!
        let int8 = embed.seconds[.int8]!
        report.add("int8", "embed float32 s", float, "s")
        report.add("int8", "embed int8 s", int8, "s")
        report.add("int8", "embed int8 / float32", int8 / float, "×")
        report.add("int8", "embed cosine min", cliCosine.minimum, "")
        report.add("int8", "embed cosine mean", cliCosine.mean, "")
        out +=
            "`embeddings embed` on \(texts.count) chunks of \(source.lastPathComponent) (JSON Lines on standard input, batches of 16, launch to exit, best of \(rounds) alternated):\n\n"
        out += table(
            ["Encoder", "Seconds", "ms/chunk", "× float32"],
            [
                [
                    "float32", String(format: "%.2f", float),
                    String(format: "%.2f", float * 1000 / Double(texts.count)), "1.00",
                ],
                [
                    "int8 (\(Int8GEMM.defaultPath))", String(format: "%.2f", int8),
                    String(format: "%.2f", int8 * 1000 / Double(texts.count)), String(format: "%.2f", int8 / float),
                ],
            ])

        // 2. Memory, one child process per encoder.
        var memory = [[String]]()
        for quantization in Quantization.allCases {
            switch Probe.run(
                ["encoder", "\(texts.count)", BenchOptions.quantize.name, quantization.rawValue], core: nil,
                quick: quick, corpus: source)
            {
            case .success(let result):
                let weights = Double(result.weightBytes ?? 0) / 1_048_576
                let peak = Double(result.peakResidentBytes ?? 0) / 1_048_576
                report.add("int8", "\(quantization.rawValue) weights", weights, "MiB")
                report.add("int8", "\(quantization.rawValue) peak resident", peak, "MiB")
                memory.append([
                    quantization.rawValue, String(format: "%.1f MiB", weights), String(format: "%.0f MiB", peak),
                    String(format: "%.2f", result.value * 1000),
                ])
            case .failure(let failure):
                memory.append([quantization.rawValue, "—", "—", "probe \(failure.message)"])
            }
        }
        out +=
            "\nMemory (`embeddings-bench probe encoder \(texts.count) --quantize …`, one process each: load, encode, peak resident set):\n\n"
        out += table(["Encoder", "Weights in memory", "Peak resident", "ms/chunk in the probe"], memory)

        // 3. Each int8 path this CPU runs (the generic C one aside: it is the reference, not a
        // contender), in process on the same texts, against float32.
        let floatModel = try loadModel(quantization: .float32)
        let int8Model = try loadModel(quantization: .int8)
        var paths = [[String]]()
        let floatSeconds = try encoderSecondsPerChunk(floatModel, texts: texts)
        paths.append([
            "float32 (OpenBLAS \(BLAS.coreInUse ?? "?"))", String(format: "%.2f", floatSeconds * 1000), "1.00",
        ])
        for path in Int8GEMM.paths where path != .generic {
            let seconds = try Int8GEMM.withPath(path) { try encoderSecondsPerChunk(int8Model, texts: texts) }
            report.add("int8", "in process \(path) ms/chunk", seconds * 1000, "ms")
            report.add("int8", "in process \(path) / float32", seconds / floatSeconds, "×")
            paths.append([
                "int8, \(path)\(path == Int8GEMM.defaultPath ? " (default here)" : "")",
                String(format: "%.2f", seconds * 1000),
                String(format: "%.2f", seconds / floatSeconds),
            ])
        }
        out +=
            "\nEach int8 kernel path this CPU runs, in process (`sentenceVectors`, batches of 16, default threads), one pass each:\n\n"
        out += table(["Encoder", "ms/chunk", "× float32"], paths)

        // 4. Quality in process.
        var quality = [[String]]()
        quality.append([
            "Cosine to float32, \(texts.count) doc chunks (min / mean)",
            String(format: "%.4f / %.4f", cliCosine.minimum, cliCosine.mean), "≥ 0.995 / ≥ 0.998",
        ])
        let golden = try goldenTexts()
        let goldenCosine = cosines(
            try floatModel.sentenceVectors(for: golden, batchSize: 16),
            try int8Model.sentenceVectors(for: golden, batchSize: 16))
        report.add("int8", "golden cosine min", goldenCosine.minimum, "")
        report.add("int8", "golden cosine mean", goldenCosine.mean, "")
        quality.append([
            "Cosine to float32, \(golden.count) golden texts (min / mean)",
            String(format: "%.4f / %.4f", goldenCosine.minimum, goldenCosine.mean), "—",
        ])

        let evalFolder = repositoryFolder.appendingPathComponent("Fixtures/eval")
        var sets: [(name: String, corpus: URL, cases: URL)] = [
            ("swift-lessons", corpus, evalFolder.appendingPathComponent("swift-lessons.json"))
        ]
        if let docs = swiftDocs() {
            sets.append(("swift-docs", docs, evalFolder.appendingPathComponent("swift-docs.json")))
        }
        var questions = [String]()
        for set in sets {
            let cases = try EvaluationSet(contentsOf: set.cases)
            questions += cases.cases.map(\.question)
            // Each encoder indexes the corpus once; both modes search that store.
            let stores = try [floatModel, int8Model].map { model in
                let store = EmbeddingStore(embedding: model)
                _ = try store.index(folder: set.corpus)
                return store
            }
            var cells = [String]()
            for mode in [RetrievalMode.hybrid, .semantic] {
                let recalls = try stores.map { try $0.evaluate(cases, ks: [4], mode: mode).recall[4] ?? 0 }
                report.add("int8", "\(set.name) \(mode) recall@4 float32", recalls[0], "")
                report.add("int8", "\(set.name) \(mode) recall@4 int8", recalls[1], "")
                cells.append(String(format: "%@ %.3f → %.3f", mode.rawValue, recalls[0], recalls[1]))
            }
            quality.append([
                "Recall@4, \(set.name) (\(cases.cases.count) questions), float32 → int8", cells.joined(separator: "; "),
                "within 0.01",
            ])
        }

        // Top-10 overlap: a 1,000-chunk exact index per encoder, each searched with its own query vectors.
        let pool = Array(
            ((try MarkdownChunker().chunks(ofFolder: corpus).chunks) + chunks).map(\.text).prefix(quick ? 300 : 1_000))
        let asked = Array(questions.prefix(100))
        var overlap = 0.0
        var results = [[Set<Int>]]()
        for model in [floatModel, int8Model] {
            let vectors = try model.sentenceVectors(for: pool, batchSize: 16)
            let index = try FlatIndex(
                dimension: model.dimension, ids: pool.indices.map { "c\($0)" }, rowMajorVectors: vectors.flatMap { $0 })
            let queries = try model.sentenceVectors(for: asked, batchSize: 16)
            results.append(try queries.map { Set(try index.search($0, k: 10).map(\.row)) })
        }
        for (a, b) in zip(results[0], results[1]) {
            overlap += Double(a.intersection(b).count) / Double(max(a.count, 1))
        }
        overlap /= Double(asked.count)
        report.add("int8", "top-10 overlap", overlap, "")
        quality.append([
            "Top-10 overlap, \(pool.count)-chunk exact index, \(asked.count) questions",
            String(format: "%.3f", overlap), "—",
        ])
        quality.append([
            "STS-B test Spearman × 100", "`embeddings-bench sts <file> --quantize int8`", "≥ 81.5 (float32 82.03)",
        ])
        out += "\nQuality, int8 against float32 on the same texts:\n\n"
        out += table(["Measure", "int8", "Target"], quality)
        return out
    }

    /// The golden parity texts (Fixtures/golden/reference.json).
    static func goldenTexts() throws -> [String] {
        struct Reference: Decodable {
            struct Case: Decodable { var text: String }
            var cases: [Case]
        }
        let url = repositoryFolder.appendingPathComponent("Fixtures/golden/reference.json")
        return try JSONDecoder().decode(Reference.self, from: Data(contentsOf: url)).cases.map(\.text)
    }

    /// `embeddings embed --quiet [--quantize int8]` on `texts`, best of `rounds` alternated, and
    /// the vectors it printed.
    static func embedCommandTimes(texts: [String], rounds: Int) throws -> (
        seconds: [Quantization: Double], vectors: [Quantization: [[Float]]]
    ) {
        let executable = try embeddingsExecutable()
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("int8-bench-\(getpid()).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        var lines = Data()
        for (i, text) in texts.enumerated() {
            lines.append(try JSONSerialization.data(withJSONObject: ["id": "c\(i)", "text": text]))
            lines.append(0x0A)
        }
        try lines.write(to: input)
        var seconds = [Quantization: Double]()
        var vectors = [Quantization: [[Float]]]()
        for _ in 0..<rounds {
            for quantization in Quantization.allCases {
                let process = Process()
                process.executableURL = executable
                process.arguments =
                    ["embed", "--quiet"] + (quantization == .float32 ? [] : ["--quantize", quantization.rawValue])
                process.standardInput = try FileHandle(forReadingFrom: input)
                let output = Pipe()
                process.standardOutput = output
                let start = Date()
                try process.run()
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                let elapsed = Date().timeIntervalSince(start)
                guard process.terminationStatus == 0 else {
                    throw BenchFailure(message: "embeddings embed exited \(process.terminationStatus)")
                }
                seconds[quantization] = min(seconds[quantization] ?? .infinity, elapsed)
                if vectors[quantization] == nil {
                    struct Line: Decodable { var vector: [Float] }
                    vectors[quantization] = try data.split(separator: 0x0A).map {
                        try JSONDecoder().decode(Line.self, from: Data($0)).vector
                    }
                    guard vectors[quantization]?.count == texts.count else {
                        throw BenchFailure(message: "embeddings embed printed the wrong number of vectors")
                    }
                }
            }
        }
        return (seconds, vectors)
    }
}
