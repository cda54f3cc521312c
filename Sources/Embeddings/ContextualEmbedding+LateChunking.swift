import Foundation
import LinearAlgebra
import WordPiece

extension ContextualEmbedding {
    /// Mean-pooled, normalized vectors of sub-ranges of one long text, each carrying the context
    /// of the whole text ("late chunking").
    ///
    /// The text is tokenized once without truncation and encoded in overlapping windows of the
    /// model's maximum length (stride half a window); every token takes its vector from the
    /// window where it sits nearest the middle. Each span's vector is the mean of the tokens that
    /// overlap it, scaled to unit length (zero when no token does). Memory stays bounded by one
    /// group of windows plus one accumulator per span, whatever the text's length.
    /// - Complexity: O(T·(model cost per token)) for T tokens; about 2× a single pass.
    public func lateChunkVectors(for text: String, spans: [Range<String.Index>], windowsPerCall: Int = 8) throws -> [[Float]] {
        precondition(windowsPerCall > 0, "windowsPerCall must be positive")
        let tokenizer = try self.tokenizer()
        let tokens = tokenizer.tokenizeWithoutSpecialTokens(text)
        let d = dimension
        var sums = [[Float]](repeating: [Float](repeating: 0, count: d), count: spans.count)
        var counts = [Int](repeating: 0, count: spans.count)
        guard !tokens.isEmpty, !spans.isEmpty else { return sums }
        let width = maximumSequenceLength - 2
        let stride = max(1, width / 2)
        // Window j covers tokens [j·stride, j·stride + width) and owns the middle of that range.
        var starts = [0]
        while starts.last! + width < tokens.count { starts.append(starts.last! + stride) }
        func owned(_ j: Int) -> Range<Int> {
            let lower = j == 0 ? 0 : starts[j] + stride / 2
            let upper = j == starts.count - 1 ? tokens.count : starts[j] + stride / 2 + stride
            return lower..<min(upper, tokens.count)
        }
        let order = spans.indices.sorted { spans[$0].lowerBound < spans[$1].lowerBound }
        var firstCandidate = 0
        let cls = try vocabularyID(tokenizer.classifierToken), sep = try vocabularyID(tokenizer.separatorToken)
        var j = 0
        while j < starts.count {
            let group = j..<min(starts.count, j + windowsPerCall)
            let windows = group.map { w in [cls] + tokens[starts[w]..<min(tokens.count, starts[w] + width)].map(\.id) + [sep] }
            let states = try forward(tokenIDs: windows)
            for (w, matrix) in zip(group, states) {
                matrix.withUnsafeBufferPointer { m in
                    for t in owned(w) {
                        let range = tokens[t].range
                        while firstCandidate < order.count, spans[order[firstCandidate]].upperBound <= range.lowerBound, !spans[order[firstCandidate]].isEmpty {
                            firstCandidate += 1
                        }
                        var s = firstCandidate
                        while s < order.count, spans[order[s]].lowerBound < range.upperBound {
                            let span = spans[order[s]]
                            if span.lowerBound < range.upperBound, range.lowerBound < span.upperBound {
                                let row = (t - starts[w] + 1) * d  // +1 skips [CLS]
                                for k in 0..<d { sums[order[s]][k] += m[row + k] }
                                counts[order[s]] += 1
                            }
                            s += 1
                        }
                    }
                }
            }
            j = group.upperBound
        }
        return zip(sums, counts).map { sum, count in
            count > 0 ? VectorMath.normalized(sum.map { $0 / Float(count) }) : sum
        }
    }

    private func vocabularyID(_ token: String) throws -> Int {
        guard let id = try tokenizer().model.vocabulary.id(for: token) else {
            throw EmbeddingsError.invalidModel("token \(token) missing from the vocabulary")
        }
        return id
    }
}
