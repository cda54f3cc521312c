import Embeddings
import Foundation
import Retrieval
import VectorIndex

/// Opens an index file with the model that built it (unless lexical).
enum StoreOption {
    static func open(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> EmbeddingStore {
        guard let path = parsed.values["index"] else { throw CLIError.usage("missing --index <file>") }
        guard FileManager.default.fileExists(atPath: path) else { throw CLIError.noInput("index file '\(path)' does not exist") }
        let precision = try parsed.choice("precision", default: SearchPrecision.exact) ?? .exact
        let rescore = parsed.values["rescore"] == nil ? nil : try parsed.integer("rescore", default: 1, range: 1...100_000)
        if rescore != nil, precision == .exact { throw CLIError.usage("--rescore goes with --precision int8 or binary") }
        // Without --model, the model named in the file, when the library knows it.
        var parsed = parsed
        if mode != .lexical, parsed.values["model"] == nil,
           let stored = try? IndexFile.fingerprint(of: URL(fileURLWithPath: path)).modelIdentifier,
           ModelCatalog.descriptor(for: stored) != nil {
            parsed.values["model"] = stored
        }
        let embedding = mode == .lexical ? nil : try ModelOption.load(parsed)
        let store = EmbeddingStore(embedding: embedding)
        // Searching through codes reads the vectors only to rescore: map them without a full read.
        let verification: IndexFile.Verification = precision == .exact ? .full : .skippingVectors
        do { try blockingAwait { try await store.load(from: URL(fileURLWithPath: path), verification: verification) } } catch {
            throw CLIError.data("\(error)")
        }
        if mode != .lexical {
            try blockingAwait { try await store.setSearchPrecision(precision, rescore: rescore) }
        }
        return store
    }

    /// The --precision and --rescore help rows.
    static let precisionHelp: [(String, String)] = [
        ("--precision <p>", "exact (default), int8 or binary: scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly."),
        ("--rescore <n>", "Candidates rescored per hit wanted (default: int8 4, binary 10)."),
    ]

    static func mode(_ parsed: ParsedArguments) throws -> RetrievalMode {
        try parsed.choice("mode", default: RetrievalMode.hybrid) ?? .hybrid
    }
}

/// `embeddings search`: hybrid (or lexical / semantic) search over an index file.
struct SearchCommand: Command {
    static let name = "search"
    static let abstract = "Search an index file; print the hits and the context for a language model."
    static let usage = "search (--index <file> | --store <url>) [--k <n>] [--mode hybrid|lexical|semantic] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--budget <chars>] [--json] <question>"
    static let arguments: [(String, String)] = [("<question>", "The question (words are joined with spaces).")]
    static let options: [(String, String)] = [
        ("--index <file>", "An index file written by 'embeddings index --out'."),
        ("--k <n>", "How many chunks to retrieve (default 4)."),
        ("--mode <mode>", "hybrid (default), lexical or semantic. Hybrid returns nothing for a question no chunk resembles."),
        ("--budget <chars>", "Characters of chunk text allowed in the context (default 1400)."),
        ("--json", "Print {\"query\", \"hits\": [...], \"context\"} as JSON."),
    ] + StoreOption.precisionHelp + PostgresOption.searchHelp + [ModelOption.help]
    static let valueOptions: Set<String> = ["index", "k", "mode", "model", "budget", "precision", "rescore", "store", "table-prefix", "ef-search"]
    static let flagOptions: Set<String> = ["json"]

    let parsed: ParsedArguments
    let question: String
    let k: Int
    let mode: RetrievalMode
    let budget: Int

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        question = parsed.positionals.joined(separator: " ")
        guard !question.trimmingCharacters(in: .whitespaces).isEmpty else { throw CLIError.usage("expected a question") }
        k = try parsed.integer("k", default: 4, range: 0...10_000)
        mode = try StoreOption.mode(parsed)
        budget = try parsed.integer("budget", default: 1_400, range: 1...10_000_000)
        guard parsed.values["index"] != nil || parsed.values["store"] != nil else { throw CLIError.usage("missing --index <file> (or --store <url>)") }
    }

    func run() throws {
        let search = try PostgresOption.searcher(parsed, mode: mode)
        let hits = try search(question, mode, k)
        let builder = ContextBuilder(budget: budget)
        let included = builder.select(hits)
        let context = builder.context(for: included)
        if parsed.flags.contains("json") {
            var json = JSONWriter()
            json.raw("{\"query\":")
            json.string(question)
            json.raw(",\"hits\":[")
            for (i, hit) in hits.enumerated() {
                if i > 0 { json.raw(",") }
                json.raw("{\"id\":"); json.string(hit.chunk.id)
                json.raw(",\"source\":"); json.string(hit.chunk.source)
                json.raw(",\"headings\":"); json.strings(hit.chunk.headings)
                json.raw(",\"title\":"); json.string(hit.chunk.title)
                json.raw(",\"score\":\(hit.score)")
                json.raw(",\"text\":"); json.string(hit.chunk.text)
                json.raw("}")
            }
            json.raw("],\"context\":")
            json.string(context)
            json.raw("}\n")
            Output.standard.write(json.text)
        } else {
            if hits.isEmpty { print("no results") }
            for (i, hit) in hits.enumerated() {
                let mark = included.contains(hit) ? "*" : " "
                print(String(format: "%@%d. %@  (%.4f)  %@", mark, i + 1, hit.chunk.id, hit.score, hit.chunk.headings.joined(separator: " › ")))
            }
            if !included.isEmpty { print("\n* in the \(budget)-character context (\(context.count) characters)") }
        }
    }
}

/// `embeddings eval`: recall@k of an index on an evaluation set.
struct EvalCommand: Command {
    static let name = "eval"
    static let abstract = "Measure recall@k of an index on questions with expected chunk ids."
    static let usage = "eval (--index <file> | --store <url>) <cases.json> [--k <n>] [--mode hybrid|lexical|semantic] [--precision exact|int8|binary|hnsw] [--rescore <n>]"
    static let arguments: [(String, String)] = [("<cases.json>", "{\"cases\": [{\"question\", \"expected\": [id prefixes]}]}")]
    static let options: [(String, String)] = [
        ("--index <file>", "An index file written by 'embeddings index --out'."),
        ("--k <n>", "Report recall@1…k (default 4)."),
        ("--mode <mode>", "hybrid (default), lexical or semantic."),
    ] + StoreOption.precisionHelp + PostgresOption.searchHelp + [ModelOption.help]
    static let valueOptions: Set<String> = ["index", "k", "mode", "model", "precision", "rescore", "store", "table-prefix", "ef-search"]
    static let flagOptions: Set<String> = []

    let parsed: ParsedArguments
    let k: Int
    let mode: RetrievalMode
    let cases: URL

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.count == 1 else { throw CLIError.usage("expected one cases file") }
        cases = URL(fileURLWithPath: parsed.positionals[0])
        k = try parsed.integer("k", default: 4, range: 1...1000)
        mode = try StoreOption.mode(parsed)
        guard parsed.values["index"] != nil || parsed.values["store"] != nil else { throw CLIError.usage("missing --index <file> (or --store <url>)") }
    }

    func run() throws {
        guard FileManager.default.fileExists(atPath: cases.path) else { throw CLIError.noInput("cases file '\(cases.path)' does not exist") }
        let set: EvaluationSet
        do { set = try EvaluationSet(contentsOf: cases) } catch let error as RetrievalError { throw CLIError.data(error.description) }
        let search = try PostgresOption.searcher(parsed, mode: mode)
        let (recall, failures) = try set.recall(ks: Array(1...k)) { [mode, k] question in
            try search(question, mode, k).map(\.chunk.id)
        }
        print("\(set.cases.count) cases, mode \(mode.rawValue)")
        for i in 1...k { print(String(format: "recall@%d: %.3f", i, recall[i] ?? 0)) }
        for failure in failures { print("missed: \(failure.question)  (expected \(failure.expected.joined(separator: ", ")))") }
    }
}
