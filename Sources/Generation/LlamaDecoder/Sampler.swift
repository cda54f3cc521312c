import Foundation

/// How the next token is chosen from the logits: greedy, or random after temperature, top-k and
/// top-p (in that order, as llama.cpp's and transformers' chains do), from a seeded generator so
/// that the same seed gives the same text.
package struct SamplingParameters: Sendable, Equatable {
    /// Logits are divided by it before sampling; 0 picks the most likely token (greedy).
    package var temperature: Float
    /// Keep only the `k` most likely tokens (nil: all).
    package var topK: Int?
    /// Keep the smallest set of most likely tokens whose probabilities reach `p` (nil: all).
    package var topP: Float?
    /// The random generator's seed (nil: a fresh random seed per sampler).
    package var seed: UInt64?

    /// Always the most likely token (the lowest id among equal logits).
    package static let greedy = SamplingParameters(temperature: 0)

    /// Sampling parameters.
    /// - Throws: `LlamaDecoderError.invalidArgument` for a negative or non-finite temperature, `topK < 1`,
    ///   or `topP` outside (0, 1].
    package init(temperature: Float, topK: Int? = nil, topP: Float? = nil, seed: UInt64? = nil)
        throws(LlamaDecoderError)
    {
        guard temperature.isFinite, temperature >= 0 else {
            throw .invalidArgument("temperature \(temperature) must be finite and ≥ 0")
        }
        if let topK, topK < 1 { throw .invalidArgument("top-k \(topK) must be at least 1") }
        if let topP, !(topP > 0 && topP <= 1) { throw .invalidArgument("top-p \(topP) must be in (0, 1]") }
        self.temperature = temperature
        self.topK = topK
        self.topP = topP
        self.seed = seed
    }

    private init(temperature: Float) {
        self.temperature = temperature
    }

    /// Whether these parameters always pick the most likely token.
    package var isGreedy: Bool { temperature == 0 || topK == 1 }
}

/// Picks tokens from logits as `SamplingParameters` say, keeping its random state between calls.
package struct Sampler: Sendable {
    /// The parameters.
    package let parameters: SamplingParameters
    private var random: SplitMix64

    /// A sampler; its generator starts from `parameters.seed` (or a random seed).
    package init(_ parameters: SamplingParameters) {
        self.parameters = parameters
        var system = SystemRandomNumberGenerator()
        random = SplitMix64(seed: parameters.seed ?? system.next())
    }

    /// The next token for `logits: [V]`.
    /// - Complexity: O(V), plus O(k log k) for the candidates kept by top-k or top-p.
    package mutating func next(_ logits: UnsafeBufferPointer<Float>) -> Int {
        if parameters.isGreedy { return Self.argmax(logits) }
        let inverse = 1 / parameters.temperature
        // Candidates: all tokens, or the k best (kept sorted, best first, when cut).
        var candidates: [(id: Int, logit: Float)]
        if let k = parameters.topK, k < logits.count {
            candidates = Self.best(k, of: logits)
        } else if parameters.topP != nil {
            candidates = logits.enumerated().map { ($0.offset, $0.element) }
            candidates.sort { $0.logit != $1.logit ? $0.logit > $1.logit : $0.id < $1.id }
        } else {
            candidates = logits.enumerated().map { ($0.offset, $0.element) }
        }
        // Softmax of logit / T over the candidates, in Double.
        let top = candidates.reduce(-Float.infinity) { max($0, $1.logit) }
        var weights = candidates.map { exp(Double(($0.logit - top) * inverse)) }
        var total = weights.reduce(0, +)
        if let p = parameters.topP, p < 1 {
            // Candidates are sorted here: keep the shortest prefix whose mass reaches p.
            var mass = 0.0
            var keep = 0
            while keep < weights.count {
                mass += weights[keep]
                keep += 1
                if mass >= Double(p) * total { break }
            }
            candidates.removeSubrange(keep...)
            weights.removeSubrange(keep...)
            total = mass
        }
        var draw = random.nextUnit() * total
        for (n, weight) in weights.enumerated() {
            draw -= weight
            if draw < 0 { return candidates[n].id }
        }
        return candidates[candidates.count - 1].id
    }

    /// The index of the largest value (the first of equal ones; NaN never wins): the greedy choice.
    package static func argmax(_ x: UnsafeBufferPointer<Float>) -> Int {
        var best = 0
        var value = -Float.infinity
        for (i, v) in x.enumerated() where v > value {
            best = i
            value = v
        }
        return best
    }

    /// The `k` largest logits, best first (lower ids first among equals).
    static func best(_ k: Int, of logits: UnsafeBufferPointer<Float>) -> [(id: Int, logit: Float)] {
        // A sorted window of k: one comparison per logit for most of them.
        var kept: [(id: Int, logit: Float)] = []
        kept.reserveCapacity(k + 1)
        for (id, logit) in logits.enumerated() {
            if kept.count == k, let last = kept.last, !(logit > last.logit) { continue }
            var i = kept.count
            while i > 0, kept[i - 1].logit < logit { i -= 1 }
            kept.insert((id, logit), at: i)
            if kept.count > k { kept.removeLast() }
        }
        return kept
    }
}

/// Vigna's SplitMix64: a small, fast generator whose whole sequence follows from its seed.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1) from the top 53 bits.
    mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }
}
