import CommandLineOptions
import Embeddings
import Foundation
import JSONText
import Retrieval
import VectorIndex

/// `embeddings search`: hybrid (or lexical / semantic) search over an index file.
struct SearchCommand: Command {
    static let name = "search"
    static let abstract = "Search an index file; print the hits and the context for a language model."
    static let arguments = [Argument("<question>", help: "The question (words are joined with spaces).")]

    static let budget = Option<Int>(
        "--budget", valueName: "chars", help: "Characters of chunk text allowed in the context.", default: 1_400,
        range: 1...10_000_000)

    static var options: [any OptionDeclaration] {
        [
            OneOf(SharedOptions.index, SharedOptions.store), SharedOptions.k, SharedOptions.mode,
            SharedOptions.precision,
            SharedOptions.rescore, budget, SharedOptions.json, SharedOptions.tablePrefix, SharedOptions.efSearch,
            SharedOptions.model,
            SharedOptions.quantize.with(
                help:
                    "How the encoder multiplies the question; only the encoder the index was made with can search its vectors.",
                defaultDescription: "the index's"),
        ]
    }

    let parsed: ParsedArguments
    let question: String
    let k: Int
    let mode: RetrievalMode
    let budget: Int

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        question = parsed.positionals.joined(separator: " ")
        guard !question.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CLIError.usage("expected a question")
        }
        k = try parsed.value(SharedOptions.k)
        mode = try StoreOption.mode(parsed)
        budget = try parsed.value(Self.budget)
        _ = try StoreOption.location(parsed, fileOption: SharedOptions.index)
    }

    func run() throws {
        let store = try StoreOption.openForSearch(parsed, mode: mode)
        let hits = try StoreOption.mapping { try store.search(question, mode: mode, k: k) }
        if parsed[SharedOptions.json] {
            Output.standard.write(Self.json(question: question, hits: hits, budget: budget) + "\n")
        } else {
            let builder = ContextBuilder(budget: budget)
            let included = builder.select(hits)
            let context = builder.context(for: included)
            if hits.isEmpty { print("no results") }
            for (i, hit) in hits.enumerated() {
                let mark = included.contains(hit) ? "*" : " "
                print(
                    String(
                        format: "%@%d. %@  (%.4f)  %@", mark, i + 1, hit.chunk.id, hit.score,
                        hit.chunk.headings.joined(separator: " › ")))
            }
            if !included.isEmpty { print("\n* in the \(budget)-character context (\(context.count) characters)") }
        }
    }
}

extension SearchCommand {
    /// One hit as `search --json` and `ask --json` write it: `{"id", "source", "headings", "title",
    /// "score"}`, and `"text"` when asked (a score that is not finite as null).
    static func writeHit(_ hit: RetrievalHit, into json: inout JSONWriter, text: Bool) {
        json.beginObject()
        json.field("id", hit.chunk.id)
        json.field("source", hit.chunk.source)
        json.key("headings")
        json.strings(hit.chunk.headings)
        json.field("title", hit.chunk.title)
        json.key("score")
        json.double(hit.score)
        if text { json.field("text", hit.chunk.text) }
        json.endObject()
    }

    /// `search --json`'s object (also `serve`'s `/search` response): `{"query", "hits": [{"id",
    /// "source", "headings", "title", "score", "text"}], "context"}`, the context built from the
    /// hits within `budget` characters.
    static func json(question: String, hits: [RetrievalHit], budget: Int) -> String {
        let builder = ContextBuilder(budget: budget)
        let context = builder.context(for: builder.select(hits))
        var json = JSONWriter()
        json.beginObject()
        json.field("query", question)
        json.key("hits")
        json.beginArray()
        for hit in hits { writeHit(hit, into: &json, text: true) }
        json.endArray()
        json.field("context", context)
        json.endObject()
        return json.text
    }
}
