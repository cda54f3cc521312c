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
    /// How the encoder multiplied (`"int8"`), or nil for `Float`: vectors of a quantized
    /// encoder differ from the float ones, so the two never compare equal. Absent from the JSON
    /// of float fingerprints, which are what they were before the field existed.
    public var quantization: String?

    /// A fingerprint from its parts.
    public init(
        modelIdentifier: String, dimension: Int, pooling: String, normalized: Bool, tokenizerHash: String,
        quantization: String? = nil
    ) {
        self.modelIdentifier = modelIdentifier
        self.dimension = dimension
        self.pooling = pooling
        self.normalized = normalized
        self.tokenizerHash = tokenizerHash
        self.quantization = quantization
    }

    /// One line for error messages: model, dimension, pooling, normalization, tokenizer hash
    /// and, for a quantized encoder, its quantization.
    public var description: String {
        "\(modelIdentifier) (\(dimension)-d, \(pooling) pooling, \(normalized ? "normalized" : "unnormalized"), tokenizer \(tokenizerHash)\(quantization.map { ", \($0) encoder" } ?? ""))"
    }
}
