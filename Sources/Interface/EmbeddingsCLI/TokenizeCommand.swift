import CommandLineOptions
import Embeddings
import Foundation
import JSONText
import LlamaDecoder
import Tokenization

/// `embeddings tokenize`: the model's tokens with their UTF-8 offsets, without running the encoder.
struct TokenizeCommand: Command {
    static let name = "tokenize"
    static let abstract =
        "Show the model's tokens of a text (WordPiece, SentencePiece or byte-level BPE), with UTF-8 byte offsets into the text."
    static let arguments = [
        Argument(
            "<text>", usage: "[<text> ...]",
            help:
                "Text to tokenize (words are joined with spaces). Without it, JSON Lines {\"id\", \"text\"} are read from standard input."
        )
    ]
    static let model = SharedOptions.model.with(
        valueName: "dir|id|file",
        help:
            "An encoder (a sentence-transformers folder or a known encoder: \(ModelCatalog.known.map(\.identifier).joined(separator: ", "))), or a language model (a GGUF file or \(DecoderCatalog.known.map(\.identifier).joined(separator: ", "))), whose byte-level BPE tokenizer is read without its weights. Known models install on first use."
    )

    static var options: [any OptionDeclaration] { [model, SharedOptions.inputType] }

    let parsed: ParsedArguments

    init(parsed: ParsedArguments) throws { self.parsed = parsed }

    func run() throws {
        // The tokenizer alone: the model's weights are not read.
        let tokenizer: any TextTokenizer
        let prefix: String
        if let name = parsed[Self.model], LanguageModelOption.names(name) {
            if parsed.contains(SharedOptions.inputType) {
                throw CLIError.usage("\(SharedOptions.inputType.name) goes with an encoder, not a language model")
            }
            let file = try LanguageModelOption.file(parsed)
            tokenizer = try decoding { () throws(LlamaDecoderError) in try LlamaModel.tokenizer(contentsOf: file) }
            prefix = ""
        } else {
            let inputType = try ModelOption.inputType(parsed)
            let embedding = try ModelOption.unloaded(parsed)
            prefix = embedding.prefix(for: inputType)
            do { tokenizer = try embedding.tokenizer() } catch let error as EmbeddingsError {
                throw CLIError.data(error.description)
            }
        }
        func line(_ key: String, _ value: String, _ text: String) -> String {
            var json = JSONWriter()
            Self.write(key: key, value: value, tokens: tokenizer.tokenize(text, prefix: prefix), into: &json)
            return json.text + "\n"
        }
        if !parsed.positionals.isEmpty {
            let text = parsed.positionals.joined(separator: " ")
            Output.standard.write(line("text", text, text))
        } else {
            var reader = JSONLinesReader(handle: .standardInput)
            defer { Output.standard.flush() }
            while let record = try reader.next() {
                Output.standard.write(line("id", record.id, record.text))
            }
        }
        Output.standard.flush()
    }
}

extension TokenizeCommand {
    /// One text's object, as `tokenize` prints it per line and `serve`'s `/tokenize` returns it:
    /// `{"<key>": value, "tokens": [{"id", "text", "utf8": [start, end]}], "truncated": true?}`.
    static func write(key: String, value: String, tokens: TokenizedText, into json: inout JSONWriter) {
        let utf8 = tokens.string.utf8
        let offsets = tokens.tokens.map { token in
            (
                utf8.distance(from: utf8.startIndex, to: token.range.lowerBound),
                utf8.distance(from: utf8.startIndex, to: token.range.upperBound)
            )
        }
        json.beginObject()
        json.field(key, value)
        TokenJSON.write(ids: tokens.ids, texts: tokens.tokens.map(\.text), offsets: offsets, into: &json)
        if tokens.isTruncated { json.field("truncated", true) }
        json.endObject()
    }
}
