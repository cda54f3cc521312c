import CommandLineOptions
import Embeddings
import Foundation
import JSONText

/// `embeddings embed`: JSON Lines in, one vector (and optionally tokens and token vectors) per line out.
struct EmbedCommand: Command {
    static let name = "embed"
    static let abstract = "Embed texts read as JSON Lines from standard input."
    static let pooling = Option<PoolingStrategy>(
        "--pooling", valueName: "mode", help: "How the token vectors become one vector.",
        defaultDescription: "the model's own pooling", choices: [.mean, .max, .cls])
    static let noNormalize = Flag(
        "--no-normalize", help: "Write pooled vectors as they are, not scaled to unit length.")
    static let tokens = Flag("--tokens", help: "Also write each token: id, text and UTF-8 byte offsets [start, end].")
    static let tokenVectors = Flag("--token-vectors", help: "Also write the T×D token vectors before pooling.")
    static let batchSize = Option<Int>(
        "--batch-size", valueName: "n", help: "Texts encoded together.", default: 16, range: 1...1024)

    static var options: [any OptionDeclaration] {
        [
            SharedOptions.model, SharedOptions.quantize, SharedOptions.inputType, pooling, noNormalize, tokens,
            tokenVectors, batchSize, SharedOptions.quiet,
        ]
    }

    let parsed: ParsedArguments
    let pooling: PoolingStrategy?
    let batchSize: Int
    let inputType: ContextualEmbedding.InputType

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        pooling = parsed[Self.pooling]
        batchSize = try parsed.value(Self.batchSize)
        inputType = try ModelOption.inputType(parsed)
    }

    func run() throws {
        Console.configure(parsed)
        let embedding = try ModelOption.load(parsed)
        let strategy = pooling ?? embedding.poolingStrategy
        let normalize = !parsed[Self.noNormalize]
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
                json.beginObject()
                json.field("id", record.id)
                json.key("vector")
                let pooled = result.pooled(strategy)
                json.floats(normalize ? pooled.normalizedToUnitLength : pooled)
                if parsed[Self.tokens] { TokenJSON.write(result, into: &json) }
                if parsed[Self.tokenVectors] { TokenJSON.writeTokenVectors(result, into: &json) }
                json.endObject()
                Output.standard.write(json.text + "\n")
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

/// The `"tokens"` member shared by `embed --tokens`, `tokenize` and the server's token routes,
/// and the `"token_vectors"` one of `embed --token-vectors` and `/v1/token-embeddings`.
enum TokenJSON {
    /// `scalarOffsets`: each token also gets `"scalars": [start, end]`, its offsets in Unicode
    /// scalars (what Python's `str` indexes), beside the UTF-8 ones (`serve`'s token vectors).
    static func write(_ result: ContextualEmbeddingResult, scalarOffsets: Bool = false, into json: inout JSONWriter) {
        let texts = result.tokenTexts ?? result.tokenRanges.map { String(result.string[$0]) }
        let scalars = scalarOffsets ? Self.scalarOffsets(result.tokenRanges, in: result.string) : nil
        write(
            ids: result.tokenIDs ?? [], texts: texts, offsets: result.utf8Offsets, scalarOffsets: scalars, into: &json)
    }

    static func write(
        ids: [Int], texts: [String], offsets: [(start: Int, end: Int)], scalarOffsets: [(start: Int, end: Int)]? = nil,
        into json: inout JSONWriter
    ) {
        json.key("tokens")
        json.beginArray()
        for (t, offset) in offsets.enumerated() {
            json.beginObject()
            json.field("id", t < ids.count ? ids[t] : -1)
            json.field("text", t < texts.count ? texts[t] : "")
            json.key("utf8")
            json.integers([offset.start, offset.end])
            if let scalarOffsets, t < scalarOffsets.count {
                json.key("scalars")
                json.integers([scalarOffsets[t].start, scalarOffsets[t].end])
            }
            json.endObject()
        }
        json.endArray()
    }

    /// `"token_vectors": [[Float]]`, one vector per token.
    static func writeTokenVectors(_ result: ContextualEmbeddingResult, into json: inout JSONWriter) {
        json.key("token_vectors")
        json.beginArray()
        for t in 0..<result.sequenceLength { json.floats(result.tokenVectors.row(t)) }
        json.endArray()
    }

    /// The `[start, end)` offsets of `ranges` in Unicode scalars of `string` (special tokens
    /// keep their empty range's position, as their UTF-8 offsets do).
    static func scalarOffsets(_ ranges: [Range<String.Index>], in string: String) -> [(start: Int, end: Int)] {
        let scalars = string.unicodeScalars
        return ranges.map { range in
            (
                scalars.distance(from: scalars.startIndex, to: range.lowerBound),
                scalars.distance(from: scalars.startIndex, to: range.upperBound)
            )
        }
    }
}
