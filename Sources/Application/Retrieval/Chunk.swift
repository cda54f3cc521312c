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
    /// Where the chunk's words lie in its page, as UTF-8 offsets (from its first word to its last),
    /// so late chunking can pool the page's token vectors over them. `nil` for chunks made by hand,
    /// and in index files written before spans were kept.
    public var span: Range<Int>?

    /// A chunk from its parts.
    public init(id: String, source: String, headings: [String], title: String, text: String, span: Range<Int>? = nil) {
        self.id = id
        self.source = source
        self.headings = headings
        self.title = title
        self.text = text
        self.span = span
    }

    /// The chunk's span as a range of `page`, when it has one that fits the page and falls on
    /// Unicode scalar boundaries.
    public func range(in page: String) -> Range<String.Index>? {
        guard let span, span.lowerBound >= 0, span.upperBound <= page.utf8.count, !span.isEmpty else { return nil }
        let lower = page.utf8.index(page.utf8.startIndex, offsetBy: span.lowerBound)
        let upper = page.utf8.index(page.utf8.startIndex, offsetBy: span.upperBound)
        guard lower.samePosition(in: page.unicodeScalars) != nil, upper.samePosition(in: page.unicodeScalars) != nil
        else { return nil }
        return lower..<upper
    }
}
