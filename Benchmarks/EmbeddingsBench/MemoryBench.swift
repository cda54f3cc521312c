import Embeddings
import Foundation

/// `embeddings-bench memory [megabytes]`: late-chunking vectors of one long document, streamed
/// through 256-token windows, with the process's peak resident memory before and after.
enum MemoryBench {
    static func run(megabytes: Double, embedding: ContextualEmbedding) throws -> String {
        let sentence = "Streaming a long document through fixed windows keeps memory flat whatever its length. "
        let count = Int(megabytes * 1_048_576) / sentence.utf8.count
        let text = String(repeating: sentence, count: max(1, count))
        // One span per ~10,000 characters, like chunks of a long page.
        var spans = [Range<String.Index>]()
        var start = text.startIndex
        while start < text.endIndex {
            let end = text.index(start, offsetBy: 10_000, limitedBy: text.endIndex) ?? text.endIndex
            spans.append(start..<end)
            start = end
        }
        _ = try embedding.sentenceVector(for: "warm up")
        let before = peakResidentBytes()
        resetPeakResident()
        let (vectors, seconds) = try timed { try embedding.lateChunkVectors(for: text, spans: spans) }
        let peak = peakResidentBytes()
        guard vectors.count == spans.count, vectors.allSatisfy({ !$0.allSatisfy { $0 == 0 } }) else {
            throw BenchFailure(message: "late chunking left spans without vectors")
        }
        return String(
            format:
                "Document of %.1f MB (%d characters, %d spans): %.1f s, peak resident memory %.0f MiB (before: %.0f MiB, model loaded).",
            Double(text.utf8.count) / 1_048_576, text.count, spans.count, seconds,
            Double(peak) / 1_048_576, Double(before) / 1_048_576)
    }
}
