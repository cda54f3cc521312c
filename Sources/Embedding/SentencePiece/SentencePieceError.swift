/// Why a SentencePiece tokenizer could not be built.
public enum SentencePieceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The pieces, scores or special tokens are unusable.
    case invalidVocabulary(reason: String)
    /// The normalization table is unusable.
    case invalidNormalization(reason: String)

    public var description: String {
        switch self {
        case .invalidVocabulary(let reason): return "invalid SentencePiece vocabulary: \(reason)"
        case .invalidNormalization(let reason): return "invalid SentencePiece normalization table: \(reason)"
        }
    }
}
