/// A page to index: its path relative to the corpus folder, and its Markdown.
public struct Page: Sendable, Equatable {
    /// The path relative to the corpus folder (chunk ids and `Chunk.source` come from it).
    public var source: String
    /// The page's Markdown, as read.
    public var text: String

    /// A page from its path and text.
    public init(source: String, text: String) {
        self.source = source
        self.text = text
    }
}
