import LlamaDecoder

/// How a session chooses each token of a response: Apple's `GenerationOptions`.
///
/// ```swift
/// let options = GenerationOptions(sampling: .random(top: 40, seed: 7), temperature: 0.8, maximumResponseTokens: 200)
/// let answer = try await session.respond(to: "Name three rivers.", options: options)
/// ```
/// With no sampling mode and no temperature, tokens are drawn at temperature 0.7 from the most
/// likely tokens holding 90% of the probability, from a fresh seed: a new text each time. A seed
/// makes it repeatable (the same seed, prompt and transcript give the same text).
public struct GenerationOptions: Sendable, Equatable, Codable {
    /// How a token is picked from the model's distribution.
    public struct SamplingMode: Sendable, Equatable, Codable {
        enum Mode: Equatable, Codable {
            case greedy
            case top(Int, seed: UInt64?)
            case threshold(Double, seed: UInt64?)
        }
        let mode: Mode

        /// The most likely token every time: the same prompt always gives the same text.
        public static var greedy: SamplingMode { SamplingMode(mode: .greedy) }

        /// A token drawn from the `k` most likely ones (`k ≥ 1`), from `seed` when given.
        public static func random(top k: Int, seed: UInt64? = nil) -> SamplingMode {
            SamplingMode(mode: .top(k, seed: seed))
        }

        /// A token drawn from the smallest set of most likely tokens whose probabilities add up to
        /// `probabilityThreshold` (0 … 1, nucleus sampling), from `seed` when given.
        public static func random(probabilityThreshold: Double, seed: UInt64? = nil) -> SamplingMode {
            SamplingMode(mode: .threshold(probabilityThreshold, seed: seed))
        }
    }

    /// How tokens are picked (nil: nucleus sampling at 0.9, see the type's summary).
    public var sampling: SamplingMode?
    /// The softmax temperature, ≥ 0 (nil: 0.7; 0 picks the most likely token, as `.greedy`).
    public var temperature: Double?
    /// The most tokens a response may have (nil: until the model ends its turn or the context
    /// is full). A response cut short ends where the limit fell.
    public var maximumResponseTokens: Int?

    /// Options; every argument may be left out.
    public init(sampling: SamplingMode? = nil, temperature: Double? = nil, maximumResponseTokens: Int? = nil) {
        self.sampling = sampling
        self.temperature = temperature
        self.maximumResponseTokens = maximumResponseTokens
    }

    /// The default temperature and nucleus of unconfigured sampling: the package's one set of
    /// sampling defaults (`embeddings generate` shows and uses them too).
    package static let defaultTemperature = 0.7, defaultProbabilityThreshold = 0.9

    /// The decoder's sampling parameters; a fresh seed when sampling randomly without one.
    /// - Throws: `.invalidGenerationOptions` for a temperature below 0 or not finite, `k < 1`, or a
    ///   threshold outside 0 … 1.
    func samplingParameters() throws(LanguageModelSession.GenerationError) -> SamplingParameters {
        let temperature = temperature ?? Self.defaultTemperature
        guard temperature.isFinite, temperature >= 0 else {
            throw LanguageModelSession.GenerationError.invalidOptions(
                "temperature \(temperature) must be a finite number ≥ 0")
        }
        var topK: Int?
        var topP: Float?
        var seed: UInt64?
        switch sampling?.mode {
        case .greedy: return .greedy
        case .top(let k, let s):
            guard k >= 1 else {
                throw LanguageModelSession.GenerationError.invalidOptions("random(top:) needs k ≥ 1, got \(k)")
            }
            (topK, seed) = (k, s)
        case .threshold(let p, let s):
            guard p.isFinite, p > 0, p <= 1 else {
                throw LanguageModelSession.GenerationError.invalidOptions(
                    "random(probabilityThreshold:) needs 0 < p ≤ 1, got \(p)")
            }
            (topP, seed) = (Float(p), s)
        case nil: topP = Float(Self.defaultProbabilityThreshold)
        }
        if temperature == 0 { return .greedy }
        do {
            return try SamplingParameters(
                temperature: Float(temperature), topK: topK, topP: topP, seed: seed ?? UInt64.random(in: .min ... .max))
        } catch {
            throw LanguageModelSession.GenerationError.invalidOptions(error.description)
        }
    }
}
