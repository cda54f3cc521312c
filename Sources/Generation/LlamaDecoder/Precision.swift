extension LlamaModel {
    /// How a decoder's weights are held and multiplied, fixed when the model is loaded.
    package enum Precision: String, Sendable, CaseIterable {
        /// The default: the file's own blocks of 32, read by the block products (`BlockGEMM`):
        /// Q4_0, Q4_1 and Q4_K as 4-bit codes, Q5_0, Q5_1, Q5_K, Q8_0, IQ4_NL and IQ4_XS as 8-bit
        /// codes, exactly (the K-quants' and IQ4_XS's per-32 scale products rounded to float16);
        /// every other type (F32, F16, BF16, Q2_K, Q3_K, Q6_K) requantized to 8-bit blocks.
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
