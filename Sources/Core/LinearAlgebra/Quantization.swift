/// How a model's linear layers multiply: in `Float` (the encoder's default, matching
/// sentence-transformers, and the decoder's reference), or with int8 weights and activations
/// (faster, slightly different results). Fixed when a model is created; index files and stores
/// record it, so vectors of the two are never mixed. Docs/Numerics.md ("The int8 encoder") and
/// Docs/Generation.md state what int8 costs.
public enum Quantization: String, Sendable, CaseIterable, Codable {
    /// Every matrix product in `Float` (OpenBLAS sgemm).
    case float32
    /// Every projection of each layer (and the decoder's output head) with weights quantized
    /// once at load to signed 8 bits per output channel and each input row quantized at run
    /// time to unsigned 8 bits with its own scale and zero point, summed exactly in `Int32` and
    /// scaled back to `Float`. Embeddings, attention scores,
    /// softmax, activations and normalization stay `Float`.
    case int8
}
