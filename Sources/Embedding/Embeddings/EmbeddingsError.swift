import Foundation

/// Errors thrown by the Embeddings module: token vectors and ranges a result refuses, pooling
/// weights, and a model whose assets are missing or whose folder is malformed. Each case says what
/// was wrong and where. Errors from installing assets are `AssetInstallationError`.
public enum EmbeddingsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The token ranges and token vectors do not have the same count.
    case countMismatch(ranges: Int, vectors: Int)
    /// A token range does not lie inside the string, or does not fall on Unicode scalar boundaries.
    case rangeOutOfBounds(token: Int)
    /// Token vectors have different lengths, or no length at all.
    case inconsistentDimension(token: Int, expected: Int, actual: Int)
    /// A token vector holds NaN or an infinity.
    case nonFiniteValue(token: Int, component: Int)
    /// Per-token weights were given with the wrong count, or are negative or not finite.
    case invalidWeights(String)
    /// The model's assets are not installed (see `ContextualEmbedding.requestAssets()`).
    case assetsNotAvailable(String)
    /// The model folder is incomplete or malformed.
    case invalidModel(String)

    public var description: String {
        switch self {
        case .countMismatch(let ranges, let vectors):
            return "\(ranges) token ranges but \(vectors) token vectors"
        case .rangeOutOfBounds(let token):
            return "token \(token): range is not inside the string or not on Unicode scalar boundaries"
        case .inconsistentDimension(let token, let expected, let actual):
            return "token \(token): vector has \(actual) components, expected \(expected)"
        case .nonFiniteValue(let token, let component):
            return "token \(token): component \(component) is not finite"
        case .invalidWeights(let message):
            return "invalid token weights: \(message)"
        case .assetsNotAvailable(let message):
            return "model assets not available: \(message)"
        case .invalidModel(let message):
            return "invalid model: \(message)"
        }
    }
}

extension EmbeddingsError: LocalizedError {
    public var errorDescription: String? { description }
}
