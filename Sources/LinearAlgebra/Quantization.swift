/// How an encoder's linear layers multiply: in `Float` (the default, matching
/// sentence-transformers), or with int8 weights and activations (faster, slightly different
/// vectors). Fixed when a model is created; index files and stores record it, so vectors of the
/// two are never mixed. Docs/Numerics.md ("The int8 encoder") states what int8 costs.
public enum Quantization: String, Sendable, CaseIterable, Codable {
    /// Every matrix product in `Float` (OpenBLAS sgemm).
    case float32
    /// The four projections of each layer (query/key/value, attention output, intermediate,
    /// output) with weights quantized once at load to signed 8 bits per output channel and each
    /// input row quantized at run time to unsigned 8 bits with its own scale and zero point,
    /// summed exactly in `Int32` and scaled back to `Float`. Embeddings, attention scores,
    /// softmax, GELU and LayerNorm stay `Float`.
    case int8
}
