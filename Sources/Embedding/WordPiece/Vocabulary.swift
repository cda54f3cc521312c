import Foundation

/// A WordPiece vocabulary: one token per line of `vocab.txt`, the line number being its id.
public struct Vocabulary: Sendable {
    /// Tokens by id.
    public let tokens: [String]
    private let ids: [String: Int]
    /// The length of the longest token, in Unicode scalars.
    public let longestTokenLength: Int

    /// A vocabulary from tokens in id order. Duplicates keep their first id (as Hugging Face does).
    public init(tokens: [String]) {
        self.tokens = tokens
        var ids = [String: Int](minimumCapacity: tokens.count)
        for (id, token) in tokens.enumerated() where ids[token] == nil { ids[token] = id }
        self.ids = ids
        self.longestTokenLength = tokens.map { $0.unicodeScalars.count }.max() ?? 0
    }

    /// Reads `vocab.txt`: UTF-8, one token per line (`\n` or `\r\n`), a trailing newline optional.
    /// - Throws: `WordPieceError` when the file cannot be read, is not UTF-8, or is empty.
    public init(contentsOf url: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw WordPieceError.unreadableVocabulary(path: url.path, reason: error.localizedDescription)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw WordPieceError.invalidVocabulary(path: url.path, reason: "not UTF-8")
        }
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map {
            line -> String in
            line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        }
        if lines.last == "" { lines.removeLast() }
        guard !lines.isEmpty else { throw WordPieceError.invalidVocabulary(path: url.path, reason: "no tokens") }
        self.init(tokens: lines)
    }

    /// The number of tokens.
    public var count: Int { tokens.count }

    /// The id of `token`, if it is in the vocabulary.
    public func id(for token: String) -> Int? { ids[token] }
}
