/// The shape of a Llama-family decoder, read from a GGUF file's `<architecture>.*` keys.
///
/// Names: `H` hidden size, `Hq`/`Hkv` query/key-value heads, `D` head dimension, `F` feed-forward
/// size, `V` vocabulary, `L` layers.
package struct LlamaConfiguration: Sendable, Equatable {
    /// The architectures this decoder runs.
    package enum Architecture: String, Sendable, CaseIterable {
        /// Llama 2/3, SmolLM, Mistral-style models: no projection biases; GGUF stores the query and
        /// key rows permuted so that RoPE rotates adjacent pairs.
        case llama
        /// Qwen2 and Qwen2.5: biases on the query, key and value projections; RoPE rotates the two
        /// halves of each head (rows stored as trained).
        case qwen2
        /// Qwen3: as `qwen2` without biases, with an RMSNorm over each query and key head before RoPE
        /// (`attn_q_norm`, `attn_k_norm`), and heads that may be wider than hidden / heads.
        case qwen3
        /// Gemma 2: embeddings scaled by √H; RMSNorm before and after attention and the
        /// feed-forward block (`post_attention_norm`, `post_ffw_norm`; the converter stores
        /// `1 + w`); a GELU (tanh) gate; attention and final logits soft-capped; every other layer
        /// (from layer 0) attends over a sliding window.
        case gemma2
        /// Gemma 3 (text): as `gemma2` with query and key head norms, no soft-capping, five
        /// sliding-window layers to one global, and the window layers' own RoPE base.
        case gemma3
        /// Phi-3: the query, key and value projections fused in one tensor (`attn_qkv`), gate and
        /// up in one (`ffn_up`, gate first); RoPE on the halves of each head.
        case phi3
    }

    /// The feed-forward block's gate.
    package enum Activation: Sendable, Equatable {
        /// `silu(g) · u` (SwiGLU).
        case silu
        /// `gelu_tanh(g) · u` (GeGLU with the tanh approximation).
        case geluTanh
    }

    /// Which elements of a head RoPE rotates together.
    package enum RotaryPairing: Sendable, Equatable {
        /// `(x[2i], x[2i+1])`: GGUF's `llama` layout.
        case adjacent
        /// `(x[i], x[i + D/2])`: the NEOX layout (`qwen2`).
        case halves
    }

    /// The architecture (`general.architecture`).
    package var architecture: Architecture
    /// `L`.
    package var layerCount: Int
    /// `H`.
    package var hiddenSize: Int
    /// `Hq`.
    package var headCount: Int
    /// `Hkv` (grouped-query attention: `Hq / Hkv` query heads share each key-value head).
    package var keyValueHeadCount: Int
    /// `D`.
    package var headDimension: Int
    /// `F`.
    package var feedForwardSize: Int
    /// `V`.
    package var vocabularySize: Int
    /// The context the model was trained for (`<arch>.context_length`).
    package var contextLength: Int
    /// RoPE's base (`<arch>.rope.freq_base`).
    package var ropeBase: Float
    /// How many dimensions of each head RoPE rotates (`<arch>.rope.dimension_count`, at most `D`).
    package var ropeDimension: Int
    /// The RMSNorm epsilon.
    package var rmsEpsilon: Float
    /// Whether the output head reuses the token embeddings (no `output.weight`).
    package var tiesOutputToEmbeddings: Bool
    /// The factor query·key products are scaled by before the softmax: `1/√D`, except where the
    /// model says otherwise (Gemma's `query_pre_attn_scalar`).
    package var attentionScale: Float
    /// `c` in `c · tanh(s / c)`, applied to the scaled attention scores (Gemma 2), or nil.
    package var attentionSoftcap: Float?
    /// `c` in `c · tanh(z / c)`, applied to the output logits (Gemma 2), or nil.
    package var finalSoftcap: Float?
    /// The sliding window of the layers that have one: a query at position `t` sees the keys at
    /// positions `p` with `t − p < slidingWindow`. Nil when no layer has one.
    package var slidingWindow: Int?
    /// RoPE's base in the sliding-window layers, when it differs from `ropeBase` (Gemma 3: 10,000).
    package var slidingWindowRopeBase: Float?
    /// Positions are divided by this before RoPE (`rope.scaling.type = linear`), in every layer
    /// but Gemma 3's sliding-window ones; 1 means no scaling.
    package var ropeLinearScale: Float = 1

    /// How RoPE pairs elements for this architecture.
    package var rotaryPairing: RotaryPairing { architecture == .llama ? .adjacent : .halves }
    /// Whether the query, key and value projections carry biases.
    package var hasProjectionBiases: Bool { architecture == .qwen2 }
    /// Whether each query and key head is RMS-normalized before RoPE.
    package var hasQueryKeyNorms: Bool { architecture == .qwen3 || architecture == .gemma3 }
    /// Whether the attention's and the feed-forward block's outputs are RMS-normalized before
    /// they join the residual stream.
    package var hasPostNorms: Bool { architecture == .gemma2 || architecture == .gemma3 }
    /// The factor the token embeddings are multiplied by: √H for Gemma, else 1.
    package var embeddingScale: Float {
        hasPostNorms ? Float(Double(hiddenSize).squareRoot()) : 1
    }
    /// The feed-forward block's gate.
    package var activation: Activation { hasPostNorms ? .geluTanh : .silu }
    /// Whether the file fuses the query, key and value projections, and gate and up, in one tensor each.
    package var fusesProjections: Bool { architecture == .phi3 }

    /// Whether layer `l` attends over the sliding window rather than every earlier position:
    /// Gemma 2's even layers, Gemma 3's layers but every sixth, every Phi-3 layer.
    package func usesSlidingWindow(layer l: Int) -> Bool {
        guard slidingWindow != nil else { return false }
        switch architecture {
        case .gemma2: return l % 2 == 0
        case .gemma3: return l % 6 != 5
        default: return true
        }
    }
    /// `Hq · D`: the width of the query projection and of the attention's output.
    package var queryWidth: Int { headCount * headDimension }
    /// `Hkv · D`: the width of the key and value projections and of each cache row.
    package var keyValueWidth: Int { keyValueHeadCount * headDimension }

    /// A configuration from its parts.
    /// - Throws: `LlamaDecoderError.invalidFile` when a size is not positive, the heads do not
    ///   group evenly, or RoPE's dimension is odd or larger than a head.
    package init(
        architecture: Architecture, layerCount: Int, hiddenSize: Int, headCount: Int, keyValueHeadCount: Int,
        headDimension: Int, feedForwardSize: Int, vocabularySize: Int, contextLength: Int, ropeBase: Float,
        ropeDimension: Int, rmsEpsilon: Float, tiesOutputToEmbeddings: Bool
    ) throws(LlamaDecoderError) {
        let sizes = [
            ("layers", layerCount), ("hidden size", hiddenSize), ("heads", headCount),
            ("key-value heads", keyValueHeadCount), ("head dimension", headDimension),
            ("feed-forward size", feedForwardSize), ("vocabulary", vocabularySize), ("context length", contextLength),
        ]
        for (name, value) in sizes where value <= 0 || value > 1 << 24 {
            throw .invalidFile("\(name) is \(value), expected 1…\(1 << 24)")
        }
        guard headCount % keyValueHeadCount == 0 else {
            throw .invalidFile("\(headCount) query heads do not group evenly over \(keyValueHeadCount) key-value heads")
        }
        guard ropeDimension > 0, ropeDimension <= headDimension, ropeDimension % 2 == 0 else {
            throw .invalidFile(
                "RoPE dimension \(ropeDimension) must be even and within the head dimension \(headDimension)")
        }
        guard ropeBase.isFinite, ropeBase > 1 else {
            throw .invalidFile("RoPE base \(ropeBase) must be finite and above 1")
        }
        guard rmsEpsilon.isFinite, rmsEpsilon > 0, rmsEpsilon < 1 else {
            throw .invalidFile("RMSNorm epsilon \(rmsEpsilon) must be in (0, 1)")
        }
        self.architecture = architecture
        self.layerCount = layerCount
        self.hiddenSize = hiddenSize
        self.headCount = headCount
        self.keyValueHeadCount = keyValueHeadCount
        self.headDimension = headDimension
        self.feedForwardSize = feedForwardSize
        self.vocabularySize = vocabularySize
        self.contextLength = contextLength
        self.ropeBase = ropeBase
        self.ropeDimension = ropeDimension
        self.rmsEpsilon = rmsEpsilon
        self.tiesOutputToEmbeddings = tiesOutputToEmbeddings
        self.attentionScale = 1 / Float(headDimension).squareRoot()
    }
}
