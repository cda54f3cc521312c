/// What an index's vectors were made with. Two indexes are comparable only when these agree.
public struct IndexFingerprint: Codable, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The model's identifier, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    public var modelIdentifier: String
    /// The vectors' length.
    public var dimension: Int
    /// The pooling strategy's name (`mean`, `max`, `cls`, …).
    public var pooling: String
    /// Whether vectors were L2-normalized before storing.
    public var normalized: Bool
    /// A hash of the tokenizer's vocabulary and settings.
    public var tokenizerHash: String

    /// A fingerprint from its parts.
    public init(modelIdentifier: String, dimension: Int, pooling: String, normalized: Bool, tokenizerHash: String) {
        self.modelIdentifier = modelIdentifier
        self.dimension = dimension
        self.pooling = pooling
        self.normalized = normalized
        self.tokenizerHash = tokenizerHash
    }

    /// One line for error messages: model, dimension, pooling, normalization and tokenizer hash.
    public var description: String {
        "\(modelIdentifier) (\(dimension)-d, \(pooling) pooling, \(normalized ? "normalized" : "unnormalized"), tokenizer \(tokenizerHash))"
    }
}
