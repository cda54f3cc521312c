import Foundation
import Retrieval

/// `embeddings-bench chunking`: seconds per MB of chunking one Markdown page whose body is a
/// single paragraph (one section, one line), and of indexing it lexical-only
/// (`EmbeddingStore(embedding: nil)`: chunks, spans and BM25). Linear since the chunker stopped
/// walking the line from its start for every piece's span and recounting lengths as it built
/// pieces; before, 1 MB took 22 s and 5 MB 465 s through `embeddings index --lexical-only` (Zen 4,
/// the figures). The page is built before the clock starts; each figure is one run, and
/// the chunks are checked (every one has a span, the last ends at the page's last word).
enum ChunkingBench {
    struct Result {
        var megabytes: Int
        var chunks: Int
        var chunkingSeconds: Double
        var indexingSeconds: Double
    }

    static func run(megabytes sizes: [Int]) throws -> [Result] {
        try sizes.map { size in
            let page = longParagraphPage(bytes: size * 1_000_000)
            let (chunks, chunking) = timed { MarkdownChunker().chunks(of: page, source: "long.md") }
            guard chunks.count > size * 1_000_000 / 1_000, chunks.allSatisfy({ $0.span != nil }),
                chunks.last?.span?.upperBound == page.utf8.count - 1
            else {
                throw BenchFailure(
                    message: "chunking \(size) MB: \(chunks.count) chunks, spans missing or short of the page's end")
            }
            let store = EmbeddingStore(embedding: nil)
            let (statistics, indexing) = try timed { try store.replace(with: [Page(source: "long.md", text: page)]) }
            guard statistics.chunks == chunks.count else {
                throw BenchFailure(
                    message: "indexing \(size) MB gave \(statistics.chunks) chunks, chunking \(chunks.count)")
            }
            return Result(megabytes: size, chunks: chunks.count, chunkingSeconds: chunking, indexingSeconds: indexing)
        }
    }

    /// `# Long`, then one paragraph of about `bytes` UTF-8 bytes: sentences of a few lengths, some
    /// with non-ASCII letters, each followed by a space (so the page ends in one).
    static func longParagraphPage(bytes: Int) -> String {
        let sentences = [
            "Café owners grind their beans before dawn.",
            "Closures capture the values they use, even after the scope ends!",
            "Is naïve Bayes still useful?", "A section this long is cut at sentence ends, never inside a word.",
        ]
        var page = "# Long\n\n"
        page.reserveCapacity(bytes + 128)
        var next = 0
        while page.utf8.count < bytes {
            page += sentences[next % sentences.count] + " "
            next += 1
        }
        return page
    }
}
