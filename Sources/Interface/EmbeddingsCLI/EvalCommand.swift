import CommandLineOptions
import Foundation
import Retrieval

/// `embeddings eval`: recall@k of an index on an evaluation set.
struct EvalCommand: Command {
    static let name = "eval"
    static let abstract = "Measure recall@k of an index on questions with expected chunk ids."
    static let arguments = [
        Argument("<cases.json>", help: "{\"cases\": [{\"question\", \"expected\": [id prefixes]}]}")
    ]

    /// Recall needs at least one hit: k from 1.
    static let k = SharedOptions.k.with(range: 1...1000, help: "Report recall@1…k.")

    static var options: [any OptionDeclaration] {
        [
            OneOf(SharedOptions.index, SharedOptions.store), k, SharedOptions.mode, SharedOptions.precision,
            SharedOptions.rescore,
            SharedOptions.tablePrefix, SharedOptions.efSearch, SharedOptions.model,
            SharedOptions.quantize.with(
                help:
                    "How the encoder multiplies the questions; only the encoder the index was made with can search its vectors.",
                defaultDescription: "the index's"),
        ]
    }

    let parsed: ParsedArguments
    let k: Int
    let mode: RetrievalMode
    let cases: URL

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.count == 1 else { throw CLIError.usage("expected one cases file") }
        cases = URL(fileURLWithPath: parsed.positionals[0])
        k = try parsed.value(Self.k)
        mode = try StoreOption.mode(parsed)
        _ = try StoreOption.location(parsed, fileOption: SharedOptions.index)
    }

    func run() throws {
        try InputFile.check(cases, what: "cases file")
        let set: EvaluationSet
        do { set = try EvaluationSet(contentsOf: cases) } catch let error as RetrievalError {
            throw CLIError.data(error.description)
        }
        let store = try StoreOption.openForSearch(parsed, mode: mode)
        let (recall, failures) = try StoreOption.mapping { try store.evaluate(set, ks: Array(1...k), mode: mode) }
        print("\(set.cases.count) cases, mode \(mode.rawValue)")
        for i in 1...k { print(String(format: "recall@%d: %.3f", i, recall[i] ?? 0)) }
        for failure in failures {
            print("missed: \(failure.question)  (expected \(failure.expected.joined(separator: ", ")))")
        }
    }
}
