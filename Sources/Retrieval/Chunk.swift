/// A piece of a Markdown page small enough to embed and to quote: one section, or part of a long one.
public struct Chunk: Codable, Equatable, Hashable, Sendable {
    /// `source` without `.md`, `#`, the section heading's slug, and `-N` for the N-th piece (from 2).
    public var id: String
    /// The file path relative to the indexed folder.
    public var source: String
    /// The heading path from the page title down to this chunk's section, as written after the `#`s.
    public var headings: [String]
    /// The page title (its first level-1 heading, or the file name).
    public var title: String
    /// The text: page and section title first, so the chunk stands alone, then the section's words.
    public var text: String

    public init(id: String, source: String, headings: [String], title: String, text: String) {
        self.id = id
        self.source = source
        self.headings = headings
        self.title = title
        self.text = text
    }
}
