import BytePairEncoding
import Foundation
import GGUF
import LinearAlgebra

/// Reads a decoder's configuration, tokenizer and weights out of a GGUF file, checking each key
/// and tensor shape before use; every failure names the key or tensor.
struct LlamaFileLoader {
    let file: GGUFFile
    let path: String
    let configuration: LlamaConfiguration
    let name: String?
    let chatTemplateSource: String?
    /// The ids the file names as ending a turn (`tokenizer.ggml.eot_token_id`, `eom_token_id`).
    let endOfTurnIDs: [Int]
    /// `general.architecture`, for key names.
    private let prefix: String

    init(file: GGUFFile, path: String) throws(LlamaDecoderError) {
        self.file = file
        self.path = path
        let metadata = file.metadata
        func read<T>(_ body: () throws(GGUFError) -> T) throws(LlamaDecoderError) -> T {
            do { return try body() } catch { throw .invalidFile(error) }
        }
        guard let architectureName = try read({ () throws(GGUFError) in try metadata.string("general.architecture") })
        else {
            throw .invalidFile("\(path): no general.architecture key")
        }
        guard let architecture = LlamaConfiguration.Architecture(rawValue: architectureName) else {
            throw .unsupported(
                "\(path): architecture '\(architectureName)' is not supported (supported: "
                    + LlamaConfiguration.Architecture.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        let p = architectureName
        prefix = p
        func integer(_ key: String, default fallback: Int? = nil) throws(LlamaDecoderError) -> Int {
            if let value = try read({ () throws(GGUFError) in try metadata.integer(key) }) { return value }
            if let fallback { return fallback }
            throw .invalidFile("\(path): no \(key) key")
        }
        func float(_ key: String, default fallback: Double) throws(LlamaDecoderError) -> Float {
            Float(try read({ () throws(GGUFError) in try metadata.float(key) }) ?? fallback)
        }
        func optionalFloat(_ key: String) throws(LlamaDecoderError) -> Float? {
            guard let value = try read({ () throws(GGUFError) in try metadata.float(key) }) else { return nil }
            guard value.isFinite, value > 0 else { throw .invalidFile("\(path): \(key) is \(value), expected > 0") }
            return Float(value)
        }
        let scaling = try read({ () throws(GGUFError) in try metadata.string("\(p).rope.scaling.type") }) ?? "none"
        guard scaling == "none" || scaling == "linear" else {
            throw .unsupported(
                "\(path): RoPE scaling '\(scaling)' (\(p).rope.scaling.type) is not supported (supported: none, linear)"
            )
        }
        for factors in ["rope_factors_long.weight", "rope_factors_short.weight"]
        where file.tensor(named: factors) != nil {
            throw .unsupported("\(path): LongRoPE (\(factors)) is not supported")
        }
        // A file without weights (a vocabulary alone) still gives its tokenizer; the weights' loading
        // refuses it.
        let embedding = file.tensor(named: "token_embd.weight")
        if let embedding, embedding.dimensions.count != 2 {
            throw .invalidFile("\(path): token_embd.weight is \(embedding.dimensions), expected two dimensions")
        }
        let tokenCount = try read({ () throws(GGUFError) in try metadata.strings("tokenizer.ggml.tokens") })?.count
        let hidden = try integer("\(p).embedding_length")
        let heads = try integer("\(p).attention.head_count")
        let headDimension = try integer("\(p).attention.key_length", default: heads > 0 ? hidden / heads : 0)
        var c = try LlamaConfiguration(
            architecture: architecture,
            layerCount: try integer("\(p).block_count"),
            hiddenSize: hidden,
            headCount: heads,
            keyValueHeadCount: try integer("\(p).attention.head_count_kv", default: heads),
            headDimension: headDimension,
            feedForwardSize: try integer("\(p).feed_forward_length"),
            vocabularySize: try integer("\(p).vocab_size", default: embedding?.rowCount ?? tokenCount),
            contextLength: try integer("\(p).context_length"),
            ropeBase: try float("\(p).rope.freq_base", default: 10_000),
            ropeDimension: try integer("\(p).rope.dimension_count", default: headDimension),
            rmsEpsilon: try float("\(p).attention.layer_norm_rms_epsilon", default: 1e-5),
            tiesOutputToEmbeddings: file.tensor(named: "output.weight") == nil)
        if let values = try read({ () throws(GGUFError) in try metadata.integer("\(p).attention.value_length") }),
            values != headDimension
        {
            throw .unsupported(
                "\(path): value heads of \(values) beside key heads of \(headDimension) are not supported")
        }
        if scaling == "linear" {
            guard let factor = try optionalFloat("\(p).rope.scaling.factor") else {
                throw .invalidFile("\(path): linear RoPE scaling without \(p).rope.scaling.factor")
            }
            c.ropeLinearScale = factor
        }
        switch architecture {
        case .gemma2, .gemma3:
            // transformers scales by query_pre_attn_scalar, which GGUF does not carry: it is the head
            // dimension, but H / heads for the 27B models (46 and 62 layers), as llama.cpp decides it.
            let is27B = c.layerCount == (architecture == .gemma2 ? 46 : 62)
            c.attentionScale = 1 / Float(is27B ? hidden / heads : headDimension).squareRoot()
            c.attentionSoftcap = try optionalFloat("\(p).attn_logit_softcapping")
            c.finalSoftcap = try optionalFloat("\(p).final_logit_softcapping")
            if architecture == .gemma3 {
                c.slidingWindowRopeBase = try optionalFloat("\(p).rope.freq_base_swa") ?? 10_000
            }
        default:
            break
        }
        if [.gemma2, .gemma3, .phi3].contains(architecture),
            let window = try read({ () throws(GGUFError) in try metadata.integer("\(p).attention.sliding_window") })
        {
            guard window > 0 else { throw .invalidFile("\(path): \(p).attention.sliding_window is \(window)") }
            c.slidingWindow = window
        }
        configuration = c
        if let embedding, embedding.dimensions != [hidden, configuration.vocabularySize] {
            throw .invalidFile(
                "\(path): token_embd.weight is \(embedding.dimensions), expected [\(hidden), \(configuration.vocabularySize)]"
            )
        }
        name = try read({ () throws(GGUFError) in try metadata.string("general.name") })
        chatTemplateSource = try read({ () throws(GGUFError) in try metadata.string("tokenizer.chat_template") })
        var turnEnds: [Int] = []
        for key in ["tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"] {
            guard let id = try read({ () throws(GGUFError) in try metadata.integer(key) }) else { continue }
            guard (0..<configuration.vocabularySize).contains(id) else {
                throw .invalidFile(
                    "\(path): \(key) is \(id), outside the vocabulary of \(configuration.vocabularySize)")
            }
            turnEnds.append(id)
        }
        endOfTurnIDs = turnEnds
    }

    // MARK: - Tokenizer

    /// The byte-level BPE tokenizer the file describes (`tokenizer.ggml.*`).
    func tokenizer() throws(LlamaDecoderError) -> BytePairTokenizer {
        let metadata = file.metadata
        func read<T>(_ body: () throws(GGUFError) -> T) throws(LlamaDecoderError) -> T {
            do { return try body() } catch { throw .invalidFile(error) }
        }
        let model = try read({ () throws(GGUFError) in try metadata.string("tokenizer.ggml.model") })
        guard model == "gpt2" || model == "llama" else {
            throw .unsupported(
                "\(path): tokenizer.ggml.model '\(model ?? "(none)")' is not supported (supported: gpt2, byte-level "
                    + "BPE; llama, SentencePiece BPE)")
        }
        var pre = BytePairPreTokenizer.gpt2
        if model == "gpt2" {
            let preName = try read({ () throws(GGUFError) in try metadata.string("tokenizer.ggml.pre") }) ?? "gpt2"
            // "default" is what converters write when the model's pre-tokenizer is GPT-2's own.
            guard let known = BytePairPreTokenizer(rawValue: preName == "default" ? "gpt2" : preName) else {
                throw .unsupported(
                    "\(path): tokenizer.ggml.pre '\(preName)' is not supported (supported: "
                        + BytePairPreTokenizer.allCases.map(\.rawValue).joined(separator: ", ") + ")")
            }
            pre = known
        }
        guard let tokens = try read({ () throws(GGUFError) in try metadata.strings("tokenizer.ggml.tokens") }) else {
            throw .invalidFile("\(path): no tokenizer.ggml.tokens")
        }
        guard tokens.count == configuration.vocabularySize else {
            throw .invalidFile("\(path): \(tokens.count) tokens for a vocabulary of \(configuration.vocabularySize)")
        }
        let merges = try read({ () throws(GGUFError) in try metadata.strings("tokenizer.ggml.merges") }) ?? []
        let types = try read({ () throws(GGUFError) in try metadata.integers("tokenizer.ggml.token_type") })
        var typeCodes: [Int32]?
        if let types {
            typeCodes = []
            for value in types {
                guard let code = Int32(exactly: value) else {
                    throw .invalidFile("\(path): token type \(value) out of range")
                }
                typeCodes?.append(code)
            }
        }
        let bos = try read({ () throws(GGUFError) in try metadata.integer("tokenizer.ggml.bos_token_id") })
        let eos = try read({ () throws(GGUFError) in try metadata.integer("tokenizer.ggml.eos_token_id") })
        let addBOS = try read({ () throws(GGUFError) in try metadata.bool("tokenizer.ggml.add_bos_token") }) ?? false
        let addEOS = try read({ () throws(GGUFError) in try metadata.bool("tokenizer.ggml.add_eos_token") }) ?? false
        var scores: [Double]?
        var codes = typeCodes ?? Array(repeating: 1, count: tokens.count)
        var prefix: Bool?
        var unknown: Int?
        if model == "llama" {
            scores = try read({ () throws(GGUFError) in try metadata.floats("tokenizer.ggml.scores") })
            guard scores != nil else { throw .invalidFile("\(path): no tokenizer.ggml.scores") }
            // The turn ends read as control tokens, never from text (llama.cpp retypes them so too).
            for id in endOfTurnIDs where codes.indices.contains(id) { codes[id] = 3 }
            for (id, token) in tokens.enumerated() where LlamaModel.turnEndMarkers.contains(token) && codes[id] == 4 {
                codes[id] = 3
            }
            prefix = try read({ () throws(GGUFError) in try metadata.bool("tokenizer.ggml.add_space_prefix") })
            unknown = try read({ () throws(GGUFError) in try metadata.integer("tokenizer.ggml.unknown_token_id") })
        }
        do {
            if model == "llama", let scores {
                return try BytePairTokenizer(
                    sentencePieceTokens: tokens, scores: scores.map { Float($0) }, tokenTypes: codes,
                    addsSpacePrefix: prefix ?? true, unknownID: unknown, beginOfSequenceID: bos,
                    endOfSequenceID: eos, addsBeginOfSequence: addBOS, addsEndOfSequence: addEOS,
                    maximumLength: configuration.contextLength)
            }
            return try BytePairTokenizer(
                tokens: tokens, merges: merges, tokenTypes: typeCodes, preTokenizer: pre,
                beginOfSequenceID: bos, endOfSequenceID: eos, addsBeginOfSequence: addBOS,
                addsEndOfSequence: addEOS, maximumLength: configuration.contextLength)
        } catch {
            throw .invalidFile("\(path): tokenizer: \(error.description)")
        }
    }

    // MARK: - Weights

    /// A tensor's values as `[rows, rowLength]` `Float`s, after checking its GGUF shape `[in, out]`.
    private func matrix(_ name: String, input: Int, output: Int) throws(LlamaDecoderError) -> [Float] {
        try values(name, dimensions: [input, output])
    }

    private func values(_ name: String, dimensions: [Int]) throws(LlamaDecoderError) -> [Float] {
        guard let tensor = file.tensor(named: name) else { throw .invalidFile("\(path): no tensor \(name)") }
        guard tensor.dimensions == dimensions || (dimensions.count == 1 && tensor.dimensions == dimensions + [1]) else {
            throw .invalidFile("\(path): \(name) is \(tensor.dimensions), expected \(dimensions)")
        }
        guard tensor.type.isSupported else {
            throw .unsupported(
                "\(path): \(name) is \(tensor.type.name), which this decoder cannot read (supported: "
                    + GGMLType.supportedNames + ")")
        }
        let floats: [Float]
        do { floats = try file.dequantize(tensor) } catch { throw .invalidFile(error) }
        if let bad = floats.firstIndex(where: { !$0.isFinite }) {
            throw .invalidFile("\(path): \(name) has a non-finite value at element \(bad)")
        }
        return floats
    }

    /// A linear layer from the tensors `names` stacked by rows (`[Σ out, in]`), with their biases
    /// when `biases` (each `[out]`), in `precision`.
    private func linear(
        _ names: [String], outputs: [Int], input: Int, biases: Bool,
        precision: LlamaModel.Precision
    ) throws(LlamaDecoderError) -> LinearWeights {
        var bias: [Float] = []
        for (name, output) in zip(names, outputs) where biases {
            bias += try values(name + ".bias", dimensions: [output])
        }
        if precision == .native {
            var parts: [BlockQuantizedMatrix] = []
            for (name, output) in zip(names, outputs) {
                parts.append(try blocks(name + ".weight", input: input, output: output))
            }
            return LinearWeights(blockWeight: BlockQuantizedMatrix(stacking: parts), bias: bias)
        }
        var weight: [Float] = []
        weight.reserveCapacity(outputs.reduce(0, +) * input)
        for (name, output) in zip(names, outputs) {
            weight += try matrix(name + ".weight", input: input, output: output)
        }
        let layer = LinearWeights(weight: weight, bias: bias, inputSize: input, outputSize: outputs.reduce(0, +))
        guard precision == .int8 else { return layer }
        do { return try layer.quantizedToInt8() } catch {
            throw .invalidFile("\(path): \(names.joined(separator: "+")): \(error.description)")
        }
    }

    /// A weight tensor as blocks: the file's own when they map exactly, else requantized to 8-bit blocks.
    private func blocks(_ name: String, input: Int, output: Int) throws(LlamaDecoderError) -> BlockQuantizedMatrix {
        guard let tensor = file.tensor(named: name) else { throw .invalidFile("\(path): no tensor \(name)") }
        guard tensor.dimensions == [input, output] else {
            throw .invalidFile("\(path): \(name) is \(tensor.dimensions), expected \([input, output])")
        }
        guard input % BlockQuantizedMatrix.blockSize == 0 else {
            throw .unsupported(
                "\(path): \(name) has rows of \(input), not a multiple of \(BlockQuantizedMatrix.blockSize)")
        }
        // The blocks are copied into the matrix: the file's pages need not stay resident beside them.
        defer { file.releasePages(of: tensor) }
        do {
            if let exact = try file.blockCodes(tensor) { return BlockQuantizedMatrix(exact) }
        } catch {
            throw .invalidFile(error)
        }
        let floats = try matrix(name, input: input, output: output)
        do { return try BlockQuantizedMatrix(weights: floats, outputSize: output, inputSize: input) } catch {
            throw .invalidFile("\(path): \(name): \(error.description)")
        }
    }

    /// Every weight in `precision`, one layer at a time so that no more than one layer's `Float`
    /// copy exists at once. Tensor names as llama.cpp's converter writes them: `attn_q`, `attn_k`,
    /// `attn_v` (Phi-3: `attn_qkv`), `ffn_gate` and `ffn_up` (Phi-3: `ffn_up` holding both),
    /// `attn_q_norm`/`attn_k_norm` (Qwen3, Gemma 3), `post_attention_norm`/`post_ffw_norm` (Gemma).
    func weights(precision: LlamaModel.Precision) throws(LlamaDecoderError) -> LlamaWeights {
        let c = configuration
        var layers: [LlamaLayerWeights] = []
        layers.reserveCapacity(c.layerCount)
        let qkv = c.fusesProjections ? ["attn_qkv"] : ["attn_q", "attn_k", "attn_v"]
        let qkvOutputs =
            c.fusesProjections
            ? [c.queryWidth + 2 * c.keyValueWidth] : [c.queryWidth, c.keyValueWidth, c.keyValueWidth]
        let gateUp = c.fusesProjections ? ["ffn_up"] : ["ffn_gate", "ffn_up"]
        let gateUpOutputs = c.fusesProjections ? [2 * c.feedForwardSize] : [c.feedForwardSize, c.feedForwardSize]
        for l in 0..<c.layerCount {
            let b = "blk.\(l)."
            func norm(_ name: String, _ width: Int, when present: Bool) throws(LlamaDecoderError) -> [Float]? {
                present ? try values(b + name + ".weight", dimensions: [width]) : nil
            }
            layers.append(
                LlamaLayerWeights(
                    attentionNorm: try values(b + "attn_norm.weight", dimensions: [c.hiddenSize]),
                    queryKeyValue: try linear(
                        qkv.map { b + $0 }, outputs: qkvOutputs, input: c.hiddenSize,
                        biases: c.hasProjectionBiases, precision: precision),
                    queryNorm: try norm("attn_q_norm", c.headDimension, when: c.hasQueryKeyNorms),
                    keyNorm: try norm("attn_k_norm", c.headDimension, when: c.hasQueryKeyNorms),
                    attentionOutput: try linear(
                        [b + "attn_output"], outputs: [c.hiddenSize], input: c.queryWidth, biases: false,
                        precision: precision),
                    attentionPostNorm: try norm("post_attention_norm", c.hiddenSize, when: c.hasPostNorms),
                    feedForwardNorm: try values(b + "ffn_norm.weight", dimensions: [c.hiddenSize]),
                    gateUp: try linear(
                        gateUp.map { b + $0 }, outputs: gateUpOutputs, input: c.hiddenSize, biases: false,
                        precision: precision),
                    down: try linear(
                        [b + "ffn_down"], outputs: [c.hiddenSize], input: c.feedForwardSize, biases: false,
                        precision: precision),
                    feedForwardPostNorm: try norm("post_ffw_norm", c.hiddenSize, when: c.hasPostNorms)))
        }
        let output = try linear(
            [c.tiesOutputToEmbeddings ? "token_embd" : "output"], outputs: [c.vocabularySize],
            input: c.hiddenSize, biases: false, precision: precision)
        let pairs = c.ropeDimension / 2
        func inverseFrequencies(base: Float) -> [Float] {
            (0..<pairs).map { i in Float(1) / powf(base, Float(2 * i) / Float(c.ropeDimension)) }
        }
        var inverse = inverseFrequencies(base: c.ropeBase)
        if file.tensor(named: "rope_freqs.weight") != nil {
            let factors = try values("rope_freqs.weight", dimensions: [pairs])
            guard factors.allSatisfy({ $0 > 0 }) else {
                throw .invalidFile("\(path): rope_freqs.weight has a factor ≤ 0")
            }
            for i in 0..<pairs { inverse[i] /= factors[i] }
        }
        // Gemma 3's sliding-window layers: their own base, positions never scaled (as llama.cpp).
        let local = c.slidingWindow == nil ? nil : c.slidingWindowRopeBase.map(inverseFrequencies(base:))
        if c.ropeLinearScale != 1 { inverse = inverse.map { $0 / c.ropeLinearScale } }
        return LlamaWeights(
            layers: layers, outputNorm: try values("output_norm.weight", dimensions: [c.hiddenSize]),
            output: output, inverseFrequencies: inverse, slidingWindowInverseFrequencies: local)
    }

    /// The token embeddings, read row by row from the mapped file.
    func embeddingTable() throws(LlamaDecoderError) -> EmbeddingTable {
        guard let tensor = file.tensor(named: "token_embd.weight") else {
            throw .invalidFile("\(path): no tensor token_embd.weight")
        }
        guard tensor.type.isSupported else {
            throw .unsupported(
                "\(path): token_embd.weight is \(tensor.type.name), which this decoder cannot read (supported: "
                    + GGMLType.supportedNames + ")")
        }
        return EmbeddingTable(file: file, tensor: tensor, path: path)
    }
}

/// The token embedding table `[V, H]`, left in the file's own type and dequantized a row at a time.
struct EmbeddingTable: Sendable {
    let file: GGUFFile
    let tensor: GGUFTensorInfo
    let path: String

    /// Row `id` into `out: [H]`.
    func row(_ id: Int, into out: UnsafeMutablePointer<Float>) throws(LlamaDecoderError) {
        do { try file.dequantizeRows(tensor, rows: id..<(id + 1), into: out) } catch {
            throw .invalidFile(error)
        }
    }
}

extension BlockQuantizedMatrix {
    /// A GGUF tensor's blocks as the block products read them (the bridge from the GGUF reader,
    /// which knows nothing of LinearAlgebra).
    package init(_ blocks: GGUFFile.BlockCodes) {
        self.init(
            outputSize: blocks.rows, inputSize: blocks.columns, bits: blocks.bits, zeroPoint: blocks.zeroPoint,
            codes: blocks.codes, highBits: blocks.highBits, scales: blocks.scales, mins: blocks.mins)
    }
}
