import CommandLineOptions
import Embeddings
import ModelAssets
import Retrieval
import VectorIndex

/// The options several subcommands take, each declared once. A subcommand that words one
/// differently uses `with(help:)`; the name, the value's type, its default and checks stay here.
enum SharedOptions {
    static let model = Option<String>(
        "--model", valueName: "dir|id",
        help:
            "A sentence-transformers model folder, or a known model's identifier: \(ModelCatalog.known.map(\.identifier).joined(separator: ", ")). Known models install on first use.",
        defaultDescription: ModelCatalog.defaultModel.identifier.split(separator: "/").last.map(String.init))

    static let quantize = Option<Quantization>(
        "--quantize", valueName: "q",
        help:
            "How the encoder multiplies. int8 is about twice as fast, its vectors within a cosine of 0.998 of the float32 ones (the least over 722 doc chunks, Docs/Numerics.md); index files and stores record which, and never mix the two.",
        defaultDescription: "float32")

    static let inputType = Option<ContextualEmbedding.InputType>(
        "--input-type", valueName: "type",
        help:
            "What kind of text it is. The model's prefix for that kind goes in front (e5: \"query: \" / \"passage: \"; none for MiniLM); offsets stay relative to the text.",
        default: .query)

    static let index = Option<String>(
        "--index", valueName: "file", help: "An index file written by 'embeddings index --out'.")

    static let out = Option<String>(
        "--out", valueName: "file",
        help: "The index file to write (atomically). An existing one is reused: unchanged chunks are not re-embedded.")

    static let store = Option<String>(
        "--store", valueName: "url",
        help:
            "A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ..."
    )

    static let tablePrefix = Option<String>(
        "--table-prefix", valueName: "name",
        help: "With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta.",
        default: "embeddings")

    static let k = Option<Int>(
        "--k", valueName: "n", help: "How many chunks to retrieve.", default: 4, range: 0...10_000)

    static let mode = Option<RetrievalMode>(
        "--mode", valueName: "mode",
        help: "How chunks are matched to the question. Hybrid returns nothing for a question no chunk resembles.",
        default: .hybrid, choices: [.hybrid, .lexical, .semantic])

    /// The name of a `VectorSearch` (checked against the store's own names when it is opened).
    static let precision = Option<String>(
        "--precision", valueName: "p",
        help:
            "How the semantic side scans the vectors. int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').",
        default: VectorSearch.exact.name, choices: VectorSearch.names
    ) { text in
        guard VectorSearch(name: text) != nil else {
            throw CLIError.usage("--precision must be \(HelpFormatter.alternatives(VectorSearch.names)), got '\(text)'")
        }
        return text
    }

    static let rescore = Option<Int>(
        "--rescore", valueName: "n",
        help: "With --index and --precision int8 or binary: candidates rescored per hit wanted.",
        defaultDescription:
            "int8 \(SearchPrecision.int8.defaultRescore), binary \(SearchPrecision.binary.defaultRescore)",
        range: 1...100_000)

    static let efSearch = Option<Int>(
        "--ef-search", valueName: "n", help: "With --store --precision hnsw: HNSW candidates per query.", default: 40,
        range: 1...1000)

    static let json = Flag("--json", help: "Print {\"query\", \"hits\": [...], \"context\"} as JSON.")

    static let quiet = Flag(
        "--quiet", help: "No progress or notes on standard error (warnings and errors still print).")
}

extension Console {
    /// Applies the command's `--quiet` flag, before it prints anything.
    static func configure(_ parsed: ParsedArguments) {
        configure(quiet: parsed[SharedOptions.quiet])
    }
}
