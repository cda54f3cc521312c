/// How token vectors become one vector for the whole text.
public enum PoolingStrategy: String, Sendable, CaseIterable, Codable {
    /// The mean of every token vector, special tokens included (what sentence-transformers does).
    case mean
    /// The mean of the tokens that are not special tokens.
    case meanExcludingSpecialTokens = "mean-tokens"
    /// The component-wise maximum over every token vector.
    case max
    /// The first token's vector (`[CLS]`).
    case cls
}
