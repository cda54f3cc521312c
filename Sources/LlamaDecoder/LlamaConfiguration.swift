/// The shape of a Llama-family decoder, read from a GGUF file's `<architecture>.*` keys.
///
/// Names: `H` hidden size, `Hq`/`Hkv` query/key-value heads, `D` head dimension, `F` feed-forward
/// size, `V` vocabulary, `L` layers.
public struct LlamaConfiguration: Sendable, Equatable {
    /// The architectures this decoder runs.
    public enum Architecture: String, Sendable, CaseIterable {
        /// Llama 2/3, SmolLM, Mistral-style models: no projection biases; GGUF stores the query and
        /// key rows permuted so that RoPE rotates adjacent pairs.
        case llama
        /// Qwen2 and Qwen2.5: biases on the query, key and value projections; RoPE rotates the two
        /// halves of each head (rows stored as trained).
        case qwen2
    }

    /// Which elements of a head RoPE rotates together.
    public enum RotaryPairing: Sendable, Equatable {
        /// `(x[2i], x[2i+1])`: GGUF's `llama` layout.
        case adjacent
        /// `(x[i], x[i + D/2])`: the NEOX layout (`qwen2`).
        case halves
    }

    /// The architecture (`general.architecture`).
    public var architecture: Architecture
    /// `L`.
    public var layerCount: Int
    /// `H`.
    public var hiddenSize: Int
    /// `Hq`.
    public var headCount: Int
    /// `Hkv` (grouped-query attention: `Hq / Hkv` query heads share each key-value head).
    public var keyValueHeadCount: Int
    /// `D`.
    public var headDimension: Int
    /// `F`.
    public var feedForwardSize: Int
    /// `V`.
    public var vocabularySize: Int
    /// The context the model was trained for (`<arch>.context_length`).
    public var contextLength: Int
    /// RoPE's base (`<arch>.rope.freq_base`).
    public var ropeBase: Float
    /// How many dimensions of each head RoPE rotates (`<arch>.rope.dimension_count`, at most `D`).
    public var ropeDimension: Int
    /// The RMSNorm epsilon.
    public var rmsEpsilon: Float
    /// Whether the output head reuses the token embeddings (no `output.weight`).
    public var tiesOutputToEmbeddings: Bool

    /// How RoPE pairs elements for this architecture.
    public var rotaryPairing: RotaryPairing { architecture == .qwen2 ? .halves : .adjacent }
    /// Whether the query, key and value projections carry biases.
    public var hasProjectionBiases: Bool { architecture == .qwen2 }
    /// `Hq · D`: the width of the query projection and of the attention's output.
    public var queryWidth: Int { headCount * headDimension }
    /// `Hkv · D`: the width of the key and value projections and of each cache row.
    public var keyValueWidth: Int { keyValueHeadCount * headDimension }

    /// A configuration from its parts.
    /// - Throws: `LlamaDecoderError.invalidFile` when a size is not positive, the heads do not
    ///   group evenly, or RoPE's dimension is odd or larger than a head.
    public init(
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
    }
}
