import CommandLineOptions
import Embeddings
import Foundation
import Retrieval
import VectorIndex

/// Opens an index file with the model that built it (unless lexical).
enum StoreOption {
    static func open(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> EmbeddingStore {
        let path = try parsed.value(SharedOptions.index)
        let precision = try parsed.value(SharedOptions.precision).ofIndexFile()
        guard FileManager.default.fileExists(atPath: path) else { throw CLIError.noInput("index file '\(path)' does not exist") }
        let rescore = parsed[SharedOptions.rescore]
        if rescore != nil, precision == .exact {
            throw CLIError.usage("\(SharedOptions.rescore.name) goes with \(SharedOptions.precision.name) int8 or binary")
        }
        // Without --model, the model named in the file, when the library knows it.
        var parsed = parsed
        if mode != .lexical, !parsed.contains(SharedOptions.model),
           let stored = try? IndexFile.fingerprint(of: URL(fileURLWithPath: path)).modelIdentifier,
           ModelCatalog.descriptor(for: stored) != nil {
            try parsed.set(SharedOptions.model, to: stored)
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

    static func mode(_ parsed: ParsedArguments) throws -> RetrievalMode {
        try parsed.value(SharedOptions.mode)
    }
}

/// `embeddings search`: hybrid (or lexical / semantic) search over an index file.
struct SearchCommand: Command {
    static let name = "search"
    static let abstract = "Search an index file; print the hits and the context for a language model."
    static let arguments = [Argument("<question>", help: "The question (words are joined with spaces).")]

    static let budget = Option<Int>(
        "--budget", valueName: "chars", help: "Characters of chunk text allowed in the context.", default: 1_400, range: 1...10_000_000)

    static var options: [any OptionDeclaration] {
        [OneOf(SharedOptions.index, SharedOptions.store), SharedOptions.k, SharedOptions.mode, SharedOptions.precision,
         SharedOptions.rescore, budget, SharedOptions.json, SharedOptions.tablePrefix, SharedOptions.efSearch, SharedOptions.model]
    }

    let parsed: ParsedArguments
    let question: String
    let k: Int
    let mode: RetrievalMode
    let budget: Int

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        question = parsed.positionals.joined(separator: " ")
        guard !question.trimmingCharacters(in: .whitespaces).isEmpty else { throw CLIError.usage("expected a question") }
        k = try parsed.value(SharedOptions.k)
        mode = try StoreOption.mode(parsed)
        budget = try parsed.value(Self.budget)
        guard parsed.contains(SharedOptions.index) || parsed.contains(SharedOptions.store) else {
            throw CLIError.usage("missing \(SharedOptions.index.synopsis) (or \(SharedOptions.store.synopsis))")
        }
    }

    func run() throws {
        let search = try PostgresOption.searcher(parsed, mode: mode)
        let hits = try search(question, mode, k)
        let builder = ContextBuilder(budget: budget)
        let included = builder.select(hits)
        let context = builder.context(for: included)
        if parsed[SharedOptions.json] {
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
