import Foundation
import LinearAlgebra
import Tokenization
import WordPiece

extension ContextualEmbedding {
    /// Mean-pooled, normalized vectors of sub-ranges of one long text, each carrying the context
    /// of the whole text ("late chunking").
    ///
    /// The text is tokenized without truncation and encoded in overlapping windows of the
    /// model's maximum length (stride half a window), each opened by the model's passage prefix
    /// (e5's `"passage: "`; nothing for MiniLM); every token takes its vector from the
    /// window where it sits nearest the middle. Each span's vector is the mean of the tokens that
    /// overlap it, scaled to unit length (zero when no token does). Tokens are read lazily
    /// (`TextTokenizer.lazyContentTokens(of:)`: both tokenizers read a text in blocks), so memory stays bounded by one group of windows plus
    /// one accumulator per span, whatever the text's length.
    /// - Complexity: O(T·(model cost per token)) for T tokens; about 2× a single pass.
    public func lateChunkVectors(for text: String, spans: [Range<String.Index>], windowsPerCall: Int = 8) throws
        -> [[Float]]
    {
        precondition(windowsPerCall > 0, "windowsPerCall must be positive")
        let tokenizer = try components().tokenizer
        var pooler = SpanPooler(spans: spans, dimension: dimension)
        guard !spans.isEmpty else { return pooler.vectors() }
        // The model's passage prefix (e5: "passage: ") opens every window, after <s>.
        let prefix = prefixTokenIDs(tokenizer)
        let width = tokenizer.maximumLength - 2 - prefix.count
        let stride = max(1, width / 2)
        let cls = tokenizer.beginTokenID
        let sep = tokenizer.endTokenID

        // Tokens arrive lazily; `buffer` holds those from position `bufferStart` on, never more
        // than one group of windows (plus one token to tell whether the text goes on).
        // Both tokenizers read the text in blocks.
        let stream = tokenizer.lazyContentTokens(of: text)
        var buffer = [Token]()
        var bufferStart = 0
        var exhausted = false
        // Window w covers tokens [w·stride, w·stride + width); it is the last one when that range
        // reaches the end of the text.
        var w = 0
        while true {
            let group = w..<(w + windowsPerCall)
            let needed = (group.upperBound - 1) * stride + width + 1
            while !exhausted, bufferStart + buffer.count < needed {
                if let token = stream.next() { buffer.append(token) } else { exhausted = true }
            }
            let available = bufferStart + buffer.count
            if available == 0 { return pooler.vectors() }
            // With the stream exhausted `available` is the token count: window v exists when it is
            // the first or its predecessor stopped short of the end.
            let windows = group.filter { v in v == w || !exhausted || (v - 1) * stride + width < available }
            let isLast = { (v: Int) in exhausted && v * stride + width >= available }
            let ids = windows.map { v in
                [cls] + prefix
                    + buffer[(v * stride - bufferStart)..<(min(available, v * stride + width) - bufferStart)].map(\.id)
                    + [sep]
            }
            let states = try forward(tokenIDs: ids)
            for (v, matrix) in zip(windows, states) {
                let start = v * stride
                let lower = v == 0 ? 0 : start + stride / 2
                let upper = isLast(v) ? available : min(available, start + stride / 2 + stride)
                matrix.withUnsafeBufferPointer { m in
                    for t in lower..<upper {
                        // The row skips [CLS] and the prefix.
                        pooler.add(buffer[t - bufferStart].range, matrix: m, row: t - start + 1 + prefix.count)
                    }
                }
            }
            if windows.contains(where: isLast) { break }
            w = group.upperBound
            let drop = w * stride - bufferStart
            buffer.removeFirst(drop)
            bufferStart += drop
        }
        return pooler.vectors()
    }

    /// The reference for `lateChunkVectors(for:spans:windowsPerCall:)`: the same windows and
    /// pooling, computed from the whole token list held at once (the implementation before tokens
    /// were streamed). Tests compare the two.
    package func lateChunkVectorsReference(for text: String, spans: [Range<String.Index>], windowsPerCall: Int = 8)
        throws -> [[Float]]
    {
        precondition(windowsPerCall > 0, "windowsPerCall must be positive")
        let tokenizer = try components().tokenizer
        let tokens =
            (tokenizer as? BertTokenizer)?.referenceContentTokens(of: text)
            ?? tokenizer.tokenizeWithoutSpecialTokens(text)
        var pooler = SpanPooler(spans: spans, dimension: dimension)
        guard !tokens.isEmpty, !spans.isEmpty else { return pooler.vectors() }
        let prefix = prefixTokenIDs(tokenizer)
        let width = tokenizer.maximumLength - 2 - prefix.count
        let stride = max(1, width / 2)
        // Window j covers tokens [j·stride, j·stride + width) and owns the middle of that range.
        var starts = [0]
        while starts.last! + width < tokens.count { starts.append(starts.last! + stride) }
        func owned(_ j: Int) -> Range<Int> {
            let lower = j == 0 ? 0 : starts[j] + stride / 2
            let upper = j == starts.count - 1 ? tokens.count : starts[j] + stride / 2 + stride
            return lower..<min(upper, tokens.count)
        }
        let cls = tokenizer.beginTokenID
        let sep = tokenizer.endTokenID
        var j = 0
        while j < starts.count {
            let group = j..<min(starts.count, j + windowsPerCall)
            let windows = group.map { w in
                [cls] + prefix + tokens[starts[w]..<min(tokens.count, starts[w] + width)].map(\.id) + [sep]
            }
            let states = try forward(tokenIDs: windows)
            for (w, matrix) in zip(group, states) {
                matrix.withUnsafeBufferPointer { m in
                    for t in owned(w) {
                        // The row skips [CLS] and the prefix.
                        pooler.add(tokens[t].range, matrix: m, row: t - starts[w] + 1 + prefix.count)
                    }
                }
            }
            j = group.upperBound
        }
        return pooler.vectors()
    }
}

extension ContextualEmbedding {
    /// The ids of the model's passage prefix on its own (none for MiniLM; e5: `▁passage`, `:`).
    package func prefixTokenIDs(_ tokenizer: any TextTokenizer) -> [Int] {
        guard !passagePrefix.isEmpty else { return [] }
        // Without its trailing space: in "passage: text" that space is the first word's metaspace.
        let prefix = String(passagePrefix.reversed().drop { $0 == " " }.reversed())
        return tokenizer.tokenizeWithoutSpecialTokens(prefix).map(\.id)
    }
}

/// Sums the vectors of the tokens that overlap each span; tokens must arrive in text order.
private struct SpanPooler {
    let spans: [Range<String.Index>]
    let dimension: Int
    /// Span indices by start position.
    let order: [Int]
    /// The first span (in `order`) that a later token can still overlap.
    var firstCandidate = 0
    var sums: [[Float]]
    var counts: [Int]

    init(spans: [Range<String.Index>], dimension: Int) {
        self.spans = spans
        self.dimension = dimension
        order = spans.indices.sorted { spans[$0].lowerBound < spans[$1].lowerBound }
        sums = [[Float]](repeating: [Float](repeating: 0, count: dimension), count: spans.count)
        counts = [Int](repeating: 0, count: spans.count)
    }

    /// Adds row `row` of the row-major `matrix` to every span that `range` overlaps.
    mutating func add(_ range: Range<String.Index>, matrix: UnsafeBufferPointer<Float>, row: Int) {
        while firstCandidate < order.count, spans[order[firstCandidate]].upperBound <= range.lowerBound,
            !spans[order[firstCandidate]].isEmpty
        {
            firstCandidate += 1
        }
        var s = firstCandidate
        while s < order.count, spans[order[s]].lowerBound < range.upperBound {
            let span = spans[order[s]]
            if span.lowerBound < range.upperBound, range.lowerBound < span.upperBound {
                let base = row * dimension
                for k in 0..<dimension { sums[order[s]][k] += matrix[base + k] }
                counts[order[s]] += 1
            }
            s += 1
        }
    }

    /// Each span's mean token vector scaled to unit length; zero for a span no token overlapped.
    func vectors() -> [[Float]] {
        zip(sums, counts).map { sum, count in
            count > 0 ? VectorMath.normalized(sum.map { $0 / Float(count) }) : sum
        }
    }
}
