import CommandLineOptions
import Embeddings
import Foundation
import Tokenization

/// `embeddings tokenize`: the model's tokens with their UTF-8 offsets, without running the encoder.
struct TokenizeCommand: Command {
    static let name = "tokenize"
    static let abstract = "Show the model's tokens of a text (WordPiece or SentencePiece), with UTF-8 byte offsets into the text."
    static let arguments = [
        Argument("<text>", usage: "[<text> ...]", help: "Text to tokenize (words are joined with spaces). Without it, JSON Lines {\"id\", \"text\"} are read from standard input."),
    ]
    static var options: [any OptionDeclaration] { [SharedOptions.model, SharedOptions.inputType] }

    let parsed: ParsedArguments

    init(parsed: ParsedArguments) throws { self.parsed = parsed }

    func run() throws {
        let inputType = try ModelOption.inputType(parsed)
        // The tokenizer alone: the encoder's weights are not read.
        let embedding = try ModelOption.unloaded(parsed)
        let prefix = embedding.prefix(for: inputType)
        let tokenizer: any TextTokenizer
        do { tokenizer = try embedding.tokenizer() } catch let error as EmbeddingsError {
            throw CLIError.data(error.description)
        }
        func line(_ key: String, _ value: String, _ text: String) -> String {
            var json = JSONWriter()
            Self.write(key: key, value: value, tokens: tokenizer.tokenize(text, prefix: prefix), into: &json)
            json.raw("\n")
            return json.text
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
            (utf8.distance(from: utf8.startIndex, to: token.range.lowerBound), utf8.distance(from: utf8.startIndex, to: token.range.upperBound))
        }
        json.raw("{")
        json.string(key)
        json.raw(":")
        json.string(value)
        TokenJSON.write(ids: tokens.ids, texts: tokens.tokens.map(\.text), offsets: offsets, into: &json)
        if tokens.isTruncated { json.raw(",\"truncated\":true") }
        json.raw("}")
    }
}
