import Foundation

/// A model's teacher-forced scores of a text: for every token but the first of each window, the
/// negative log-likelihood of that token given the tokens before it in its window, and the token
/// the model ranked first there.
package struct TokenScores: Sendable {
    /// The window length the text was cut into.
    package var window: Int
    /// The token ids scored.
    package var tokens: [Int]
    /// `nll[i]`: −log p(tokens[i] | the window's tokens before it), or nil for a window's first token.
    package var negativeLogLikelihoods: [Double?]
    /// `predictions[i]`: the most likely token at position i given the same context, or nil for a window's first token.
    package var predictions: [Int?]

    /// The number of tokens scored (every token but each window's first).
    package var scoredCount: Int { negativeLogLikelihoods.lazy.compactMap { $0 }.count }

    /// `exp(mean negative log-likelihood)` over the scored tokens.
    package var perplexity: Double {
        let scored = negativeLogLikelihoods.compactMap { $0 }
        return scored.isEmpty ? .nan : exp(scored.reduce(0, +) / Double(scored.count))
    }

    /// The fraction of scored positions where the model's first choice was the text's token.
    package var accuracy: Double {
        var hits = 0
        var count = 0
        for (i, prediction) in predictions.enumerated() {
            guard let prediction else { continue }
            count += 1
            if prediction == tokens[i] { hits += 1 }
        }
        return count == 0 ? .nan : Double(hits) / Double(count)
    }
}

extension LlamaModel {
    /// Scores `tokens` cut into consecutive windows of `window` tokens (the last may be shorter),
    /// each run from an empty cache: the perplexity measure of llama.cpp's `llama-perplexity`
    /// and of the project's parity fixtures.
    /// - Throws: `LlamaDecoderError.invalidArgument` for a window below 2 or beyond the context, or a bad id.
    package func score(_ tokens: [Int], window: Int = 512) throws(LlamaDecoderError) -> TokenScores {
        guard window >= 2, window <= configuration.contextLength else {
            throw .invalidArgument("window \(window) is outside 2…\(configuration.contextLength)")
        }
        var nll = [Double?](repeating: nil, count: tokens.count)
        var predictions = [Int?](repeating: nil, count: tokens.count)
        let vocabulary = configuration.vocabularySize
        var start = 0
        while start < tokens.count {
            let ids = Array(tokens[start..<min(tokens.count, start + window)])
            let sequence = try makeSequence(contextSize: window)
            let base = start
            try sequence.appendScoring(ids) { k, logits in
                // Row k predicts token k + 1 of the window.
                guard k + 1 < ids.count else { return }
                var largest = -Float.infinity
                var best = 0
                for v in 0..<vocabulary where logits[v] > largest {
                    largest = logits[v]
                    best = v
                }
                var sum = 0.0
                for v in 0..<vocabulary { sum += exp(Double(logits[v] - largest)) }
                nll[base + k + 1] = log(sum) - Double(logits[ids[k + 1]] - largest)
                predictions[base + k + 1] = best
            }
            start += ids.count
        }
        return TokenScores(window: window, tokens: tokens, negativeLogLikelihoods: nll, predictions: predictions)
    }
}
