import Embeddings
import Foundation

/// `embeddings embed`: JSON Lines in, one vector (and optionally tokens and token vectors) per line out.
struct EmbedCommand: Command {
    static let name = "embed"
    static let abstract = "Embed texts read as JSON Lines from standard input."
    static let usage = "embed [--model <dir|id>] [--input-type query|passage] [--pooling mean|max|cls] [--no-normalize] [--tokens] [--token-vectors] [--batch-size <n>] [--quiet]"
    static let options: [(String, String)] = [
        ModelOption.help,
        ModelOption.inputTypeHelp,
        ("--pooling <mode>", "mean, max or cls (default: the model's own pooling)."),
        ("--no-normalize", "Write pooled vectors as they are, not scaled to unit length."),
        ("--tokens", "Also write each token: id, text and UTF-8 byte offsets [start, end]."),
        ("--token-vectors", "Also write the T×D token vectors before pooling."),
        ("--batch-size <n>", "Texts encoded together (default 16)."),
        Console.quietHelp,
    ]
    static let valueOptions: Set<String> = ["model", "input-type", "pooling", "batch-size"]
    static let flagOptions: Set<String> = ["no-normalize", "tokens", "token-vectors", "quiet"]

    let parsed: ParsedArguments
    let pooling: PoolingStrategy?
    let batchSize: Int
    let inputType: ContextualEmbedding.InputType

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        if let mode = parsed.values["pooling"], !["mean", "max", "cls"].contains(mode) {
            throw CLIError.usage("--pooling must be mean, max or cls, got '\(mode)'")
        }
        pooling = parsed.values["pooling"].flatMap(PoolingStrategy.init(rawValue:))
        batchSize = try parsed.integer("batch-size", default: 16, range: 1...1024)
        inputType = try ModelOption.inputType(parsed)
    }

    func run() throws {
        Console.configure(parsed)
        let embedding = try ModelOption.load(parsed)
        let strategy = pooling ?? embedding.poolingStrategy
        let normalize = !parsed.flags.contains("no-normalize")
        var reader = JSONLinesReader(handle: .standardInput)
        // Standard input is a stream: progress counts the texts embedded so far, without a total.
        var progress = Progress("embedded", total: nil, writesToStandardOutput: true)
        var done = 0
        var pending: [JSONLinesReader.Record] = []
        func flush() throws {
            guard !pending.isEmpty else { return }
            let results = try embedding.embeddingResults(for: pending.map(\.text), language: nil, inputType: inputType)
            for (record, result) in zip(pending, results) {
                var json = JSONWriter()
                json.raw("{\"id\":")
                json.string(record.id)
                json.raw(",\"vector\":")
                let pooled = result.pooled(strategy)
                json.floats(normalize ? pooled.normalizedToUnitLength : pooled)
                if parsed.flags.contains("tokens") { TokenJSON.write(result, into: &json) }
                if parsed.flags.contains("token-vectors") {
                    json.raw(",\"token_vectors\":[")
                    for t in 0..<result.sequenceLength {
                        if t > 0 { json.raw(",") }
                        json.floats(result.tokenVectors.row(t))
                    }
                    json.raw("]")
                }
                json.raw("}\n")
                Output.standard.write(json.text)
            }
            Output.standard.flush()
            done += pending.count
            progress.update(done)
            pending.removeAll()
        }
        do {
            while let record = try reader.next() {
                pending.append(record)
                if pending.count >= batchSize { try flush() }
            }
            try flush()
        } catch {
            // Whatever was read before the bad line has been written: nothing is lost.
            try? flush()
            progress.finish()
            throw error
        }
        progress.finish()
    }
}

/// The `"tokens"` field shared by `embed --tokens` and `tokenize`.
enum TokenJSON {
    static func write(_ result: ContextualEmbeddingResult, into json: inout JSONWriter) {
        let texts = result.tokenTexts ?? result.tokenRanges.map { String(result.string[$0]) }
        write(ids: result.tokenIDs ?? [], texts: texts, offsets: result.utf8Offsets, into: &json)
    }

    static func write(ids: [Int], texts: [String], offsets: [(start: Int, end: Int)], into json: inout JSONWriter) {
        json.raw(",\"tokens\":[")
        for (t, offset) in offsets.enumerated() {
            if t > 0 { json.raw(",") }
            json.raw("{\"id\":\(t < ids.count ? ids[t] : -1),\"text\":")
            json.string(t < texts.count ? texts[t] : "")
            json.raw(",\"utf8\":[\(offset.start),\(offset.end)]}")
        }
        json.raw("]")
    }
}
