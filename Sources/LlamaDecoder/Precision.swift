extension LlamaModel {
    /// How a decoder's weights are held and multiplied, fixed when the model is loaded.
    public enum Precision: String, Sendable, CaseIterable {
        /// The default: the file's own blocks of 32, read as they are by the block products
        /// (`BlockGEMM`): Q4_0, Q4_1 and Q8_0 exactly, Q4_K with its per-32 scales rounded to
        /// float16; every other type (F32, F16, BF16, Q5_K, Q6_K) requantized to 8-bit blocks.
        /// Activations are quantized per block of 32 to 8 bits. A decode step reads about as many
        /// weight bytes as the file holds.
        case native
        /// Every projection and the output head quantized to int8 per output channel
        /// (`Int8GEMM`), activations per row to 8 bits: measured, and kept beside `native` for
        /// comparison (Docs/Generation.md).
        case int8
        /// Every weight dequantized once to `Float` and multiplied with sgemm: the reference the
        /// other two are checked against (about four times the memory).
        case float32
    }
}
