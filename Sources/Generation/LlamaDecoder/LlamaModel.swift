import BytePairEncoding
import ChatTemplates
import Dispatch
import Foundation
import GGUF
import LinearAlgebra

/// A Llama-family causal language model loaded from a GGUF file: its configuration, its
/// tokenizer and chat template, and its weights in the chosen precision.
///
/// One model serves any number of sequences at once: the weights are shared and read-only, and
/// each `LlamaSequence` holds its own cache. Loading changes no process-wide state.
///
/// ```swift
/// let model = try LlamaModel(contentsOf: URL(fileURLWithPath: "SmolLM2-135M-Instruct.Q4_1.gguf"))
/// let sequence = try model.makeSequence()
/// let logits = try sequence.append(model.tokenizer.tokenizeWithoutSpecialTokens("Hello").map(\.id))
/// ```
package final class LlamaModel: Sendable {
    /// The model's shape.
    package let configuration: LlamaConfiguration
    /// The model's tokenizer, built from the file's vocabulary and merges.
    package let tokenizer: BytePairTokenizer
    /// The chat template's source: the one given at load, else the file's (`tokenizer.chat_template`), if any.
    package let chatTemplateSource: String?
    /// The chat template parsed once at load, or why it could not be (used by `chatPrompt`).
    let chatTemplate: Result<ChatTemplate, ChatTemplateError>?
    /// How the weights are held and multiplied (`.native` unless chosen at load).
    package let precision: Precision
    /// Threads each forward pass spreads its int8 products over.
    package let threadCount: Int
    /// The model's name (`general.name`), or the file's name.
    package let name: String
    /// The ids that end a generation: the end-of-sequence token, the turn ends the file names
    /// (`tokenizer.ggml.eot_token_id`, `eom_token_id`), and the families' turn-end tokens
    /// (`LlamaModel.turnEndMarkers`: `<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`, `<|end|>`, …)
    /// where the vocabulary has them as control or user-defined tokens.
    package let stopTokenIDs: Set<Int>

    let weights: LlamaWeights
    let embeddings: EmbeddingTable

    /// Loads a GGUF model file.
    ///
    /// - Parameters:
    ///   - url: the `.gguf` file.
    ///   - precision: `.native` (default): the file's own 4-, 5- and 8-bit blocks read as they are;
    ///     `.int8`: int8 per output channel; `.float32`: every weight dequantized once, the
    ///     reference (see `Precision`).
    ///   - threadCount: threads per forward pass (default: the active processors).
    ///   - chatTemplate: a Jinja chat template used instead of the file's `tokenizer.chat_template`
    ///     (as llama.cpp's `--chat-template-file`), for a file whose template is missing or wrong.
    /// - Throws: `LlamaDecoderError`: `.invalidFile` for a file that cannot be read, is corrupt or
    ///   lacks a key or tensor; `.unsupported` for an architecture, tensor type, RoPE scaling or
    ///   tokenizer this decoder does not implement (the message names it).
    package init(
        contentsOf url: URL, precision: Precision = .native,
        threadCount: Int = ProcessInfo.processInfo.activeProcessorCount, chatTemplate: String? = nil
    ) throws(LlamaDecoderError) {
        let file: GGUFFile
        do { file = try GGUFFile(contentsOf: url) } catch {
            throw .invalidFile(error)
        }
        let loaded = try LlamaFileLoader(file: file, path: url.path)
        self.configuration = loaded.configuration
        self.tokenizer = try loaded.tokenizer()
        self.chatTemplateSource = chatTemplate ?? loaded.chatTemplateSource
        self.chatTemplate = self.chatTemplateSource.map { source in
            Result { () throws(ChatTemplateError) in try ChatTemplate(source: source) }
        }
        self.name = loaded.name ?? url.deletingPathExtension().lastPathComponent
        self.weights = try loaded.weights(precision: precision)
        self.embeddings = try loaded.embeddingTable()
        self.precision = precision
        self.threadCount = max(1, threadCount)
        var stops = Set(loaded.endOfTurnIDs)
        if let eos = tokenizer.endOfSequenceID { stops.insert(eos) }
        for marker in Self.turnEndMarkers {
            guard let id = tokenizer.id(for: marker) else { continue }
            let type = tokenizer.tokenTypes.indices.contains(id) ? tokenizer.tokenTypes[id] : .normal
            if type == .control || type == .userDefined { stops.insert(id) }
        }
        self.stopTokenIDs = stops
    }

    /// The texts of the tokens that end a turn or a text in the families this decoder runs:
    /// ChatML (SmolLM2, Qwen), Llama 3 (`<|eot_id|>`, and `<|eom_id|>` after a tool call), Gemma,
    /// Phi-3, and the end-of-text tokens of GPT-2-style vocabularies. A vocabulary that holds one
    /// as an ordinary token (text a model may write) keeps generating through it.
    package static let turnEndMarkers = [
        "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|endoftext|>", "<end_of_turn>", "<|end|>",
    ]

    /// A new, empty sequence whose cache may hold up to `contextSize` tokens (default: the
    /// model's context length). The cache grows with the tokens actually held.
    /// - Throws: `LlamaDecoderError.invalidArgument` for a size below 1 or above the model's context.
    package func makeSequence(contextSize: Int? = nil) throws(LlamaDecoderError) -> LlamaSequence {
        let size = contextSize ?? configuration.contextLength
        guard size >= 1, size <= configuration.contextLength else {
            throw .invalidArgument("context size \(size) is outside 1…\(configuration.contextLength)")
        }
        return LlamaSequence(model: self, contextSize: size)
    }

    /// The bytes the weights take in memory (the token embeddings are read from the mapped file as needed).
    package var weightByteCount: Int { weights.byteCount }

    // MARK: - The forward pass

    /// Which rows' logits a forward pass computes.
    enum LogitRows { case none, last, all }

    /// Runs `ids` at positions `start…`, writing their keys and values into `cache`, and hands
    /// `body` the logits of the rows `logitRows` asks for (row index within `ids`).
    func forward(
        _ ids: [Int], at start: Int, cache: KeyValueCache, scratch: Scratch, logitRows: LogitRows,
        _ body: (Int, UnsafePointer<Float>) -> Void
    ) throws(LlamaDecoderError) {
        let c = configuration
        let rows = ids.count
        let width = c.hiddenSize
        // D as the shape comments write the head dimension.
        // swift-format-ignore: AlwaysUseLowerCamelCase
        let D = c.headDimension
        let positions = start + rows
        let qkvWidth = c.queryWidth + 2 * c.keyValueWidth
        cache.reserve(positions, keeping: start)
        scratch.reserve(rows: rows, positions: positions)

        // x: [T, H] ← the tokens' embedding rows (times √H for Gemma).
        for (t, id) in ids.enumerated() { try embeddings.row(id, into: scratch.hidden + t * width) }
        if c.embeddingScale != 1 {
            LlamaKernels.scale(scratch.hidden, count: rows * width, by: c.embeddingScale)
        }

        // RoPE's angles for each row's position: [T, ropeDimension/2], and the sliding-window
        // layers' own when they differ.
        let pairs = c.ropeDimension / 2
        let tables: [(frequencies: [Float], cosines: UnsafeMutablePointer<Float>, sines: UnsafeMutablePointer<Float>)] =
            [(weights.inverseFrequencies, scratch.cosines, scratch.sines)]
            + (weights.slidingWindowInverseFrequencies.map { [($0, scratch.localCosines, scratch.localSines)] } ?? [])
        for table in tables {
            table.frequencies.withUnsafeBufferPointer { inverse in
                for t in 0..<rows {
                    let position = Float(start + t)
                    for i in 0..<pairs {
                        let angle = position * inverse[i]
                        table.cosines[t * pairs + i] = cosf(angle)
                        table.sines[t * pairs + i] = sinf(angle)
                    }
                }
            }
        }

        for (l, layer) in weights.layers.enumerated() {
            let windowed = c.usesSlidingWindow(layer: l)
            let table = windowed && tables.count > 1 ? tables[1] : tables[0]
            // Attention block: x += post(Wo · attention(RoPE(norms(Wqkv · norm(x))))).
            layer.attentionNorm.withUnsafeBufferPointer { w in
                LlamaKernels.rmsNorm(
                    scratch.hidden, rows: rows, width: width, weight: w.baseAddress!, epsilon: c.rmsEpsilon,
                    into: scratch.normalized)
            }
            project(
                layer.queryKeyValue, scratch.normalized, rows: rows, into: scratch.queryKeyValue, accumulate: false,
                scratch: scratch)
            for t in 0..<rows {
                let row = scratch.queryKeyValue + t * qkvWidth
                if let queryNorm = layer.queryNorm, let keyNorm = layer.keyNorm {
                    // Each head of the query and the key on its own: [Hq, D] and [Hkv, D].
                    queryNorm.withUnsafeBufferPointer { w in
                        LlamaKernels.rmsNorm(
                            row, rows: c.headCount, width: D, weight: w.baseAddress!, epsilon: c.rmsEpsilon, into: row)
                    }
                    keyNorm.withUnsafeBufferPointer { w in
                        LlamaKernels.rmsNorm(
                            row + c.queryWidth, rows: c.keyValueHeadCount, width: D, weight: w.baseAddress!,
                            epsilon: c.rmsEpsilon, into: row + c.queryWidth)
                    }
                }
                let cosines = table.cosines + t * pairs
                let sines = table.sines + t * pairs
                LlamaKernels.rope(
                    row, heads: c.headCount, headDimension: D, cosines: cosines, sines: sines, pairs: pairs,
                    pairing: c.rotaryPairing)
                LlamaKernels.rope(
                    row + c.queryWidth, heads: c.keyValueHeadCount, headDimension: D, cosines: cosines,
                    sines: sines, pairs: pairs, pairing: c.rotaryPairing)
                for g in 0..<c.keyValueHeadCount {
                    (cache.keys(layer: l, head: g) + (start + t) * D).update(from: row + c.queryWidth + g * D, count: D)
                    (cache.values(layer: l, head: g) + (start + t) * D).update(
                        from: row + c.queryWidth + c.keyValueWidth + g * D, count: D)
                }
            }
            // A prompt's attention runs on sgemm: single-threaded, since OpenBLAS's own threads,
            // spinning between calls, would take the cores this model's projections are split over
            // (0.5B Q4_K_M mix on a Zen 4, 2 threads: pp512 ~200 → ~240 tokens/s, and the decode
            // after it ~36 → ~38).
            let attend = {
                self.attention(
                    layer: l, rows: rows, start: start, window: windowed ? c.slidingWindow : nil, cache: cache,
                    scratch: scratch)
            }
            if rows > 1 { BLAS.singleThreaded(attend) } else { attend() }
            residual(
                layer.attentionOutput, scratch.context, rows: rows, postNorm: layer.attentionPostNorm, scratch: scratch)

            // Feed-forward block: x += post(Wdown · (act(Wgate · norm(x)) ⊙ Wup · norm(x))).
            layer.feedForwardNorm.withUnsafeBufferPointer { w in
                LlamaKernels.rmsNorm(
                    scratch.hidden, rows: rows, width: width, weight: w.baseAddress!, epsilon: c.rmsEpsilon,
                    into: scratch.normalized)
            }
            project(
                layer.gateUp, scratch.normalized, rows: rows, into: scratch.gateUp, accumulate: false, scratch: scratch)
            LlamaKernels.gate(
                scratch.gateUp, rows: rows, width: c.feedForwardSize, activation: c.activation, into: scratch.gated)
            residual(layer.down, scratch.gated, rows: rows, postNorm: layer.feedForwardPostNorm, scratch: scratch)
        }

        let first: Int
        switch logitRows {
        case .none: return
        case .last: first = rows - 1
        case .all: first = 0
        }
        let count = rows - first
        weights.outputNorm.withUnsafeBufferPointer { w in
            LlamaKernels.rmsNorm(
                scratch.hidden + first * width, rows: count, width: width, weight: w.baseAddress!,
                epsilon: c.rmsEpsilon, into: scratch.normalized)
        }
        project(
            weights.output, scratch.normalized, rows: count, into: scratch.logits, accumulate: false, scratch: scratch)
        if let cap = c.finalSoftcap {
            LlamaKernels.softcap(scratch.logits, count: count * c.vocabularySize, cap: cap)
        }
        for r in 0..<count { body(first + r, scratch.logits + r * c.vocabularySize) }
    }

    /// `x += y` for `y = x_in · Wᵀ` (`[T, H]`), RMS-normalized first with `postNorm` when the
    /// architecture has one (Gemma), else summed straight into the residual stream.
    private func residual(
        _ layer: LinearWeights, _ x: UnsafePointer<Float>, rows: Int, postNorm: [Float]?, scratch: Scratch
    ) {
        guard let postNorm else {
            project(layer, x, rows: rows, into: scratch.hidden, accumulate: true, scratch: scratch)
            return
        }
        let width = configuration.hiddenSize
        project(layer, x, rows: rows, into: scratch.normalized, accumulate: false, scratch: scratch)
        postNorm.withUnsafeBufferPointer { w in
            LlamaKernels.rmsNorm(
                scratch.normalized, rows: rows, width: width, weight: w.baseAddress!,
                epsilon: configuration.rmsEpsilon, into: scratch.normalized)
        }
        Kernels.add(scratch.normalized, into: scratch.hidden, count: rows * width)
    }

    /// Causal grouped-query attention of `rows` new positions `start…` over the cache into
    /// `scratch.context: [T, Hq·D]`; with a `window`, the query at position `p` sees positions
    /// `p − window + 1 … p` only. Scores are scaled by `attentionScale`, then soft-capped when the
    /// model caps them.
    private func attention(
        layer l: Int, rows: Int, start: Int, window: Int?, cache: KeyValueCache, scratch: Scratch
    ) {
        let c = configuration
        // D as the shape comments write the head dimension.
        // swift-format-ignore: AlwaysUseLowerCamelCase
        let D = c.headDimension
        let positions = start + rows
        let qkvWidth = c.queryWidth + 2 * c.keyValueWidth
        let group = c.headCount / c.keyValueHeadCount
        let scale = c.attentionScale
        // The first position row t sees.
        func firstVisible(_ t: Int) -> Int { window.map { max(0, start + t + 1 - $0) } ?? 0 }
        for h in 0..<c.headCount {
            let keys = cache.keys(layer: l, head: h / group)
            let values = cache.values(layer: l, head: h / group)
            let query = scratch.queryKeyValue + h * D
            if rows == 1 {
                // One query: a dot product per visible position, a softmax, a weighted sum of values.
                let lower = firstVisible(0)
                let seen = positions - lower
                Kernels.dotRows(keys + lower * D, rows: seen, columns: D, query: query, into: scratch.scores)
                if let cap = c.attentionSoftcap {
                    LlamaKernels.scale(scratch.scores, count: seen, by: scale)
                    LlamaKernels.softcap(scratch.scores, count: seen, cap: cap)
                    Kernels.softmaxRows(scratch.scores, rows: 1, columns: seen)
                } else {
                    Kernels.softmaxRows(scratch.scores, rows: 1, columns: seen, scale: scale)
                }
                Kernels.weightedColumnSum(
                    values + lower * D, rows: seen, columns: D, weights: scratch.scores, scale: 1,
                    into: scratch.context + h * D)
                continue
            }
            // S: [T, N] = scale · Q_h · K_hᵀ; row t sees positions firstVisible(t)…start+t.
            BLAS.gemm(
                .none, .transposed, m: rows, n: positions, k: D, alpha: scale, a: query, lda: qkvWidth,
                b: keys, ldb: D, c: scratch.scores, ldc: positions)
            for t in 0..<rows {
                let row = scratch.scores + t * positions
                let lower = firstVisible(t)
                let visible = start + t + 1
                if let cap = c.attentionSoftcap { LlamaKernels.softcap(row + lower, count: visible - lower, cap: cap) }
                Kernels.softmaxRows(row + lower, rows: 1, columns: visible - lower)
                row.update(repeating: 0, count: lower)
                (row + visible).update(repeating: 0, count: positions - visible)
            }
            // context_h: [T, D] = S · V_h.
            BLAS.gemm(
                .none, .none, m: rows, n: D, k: positions, a: scratch.scores, lda: positions, b: values, ldb: D,
                c: scratch.context + h * D, ldc: c.queryWidth)
        }
    }

    /// Products of fewer multiply-adds than this run on one thread: below about a quarter of a
    /// million, a second thread costs more than it saves (the decoder's own threshold beside
    /// `RowSplit.threshold`, which counts values a scan reads).
    static let splitThreshold = 1 << 18

    /// `y[T, out] = (accumulate ? y : 0) + x[T, in] · Wᵀ + b`: sgemm for a `Float` layer (OpenBLAS
    /// threads it); for a block or int8 layer, `x` quantized once, then the output columns split
    /// over `threadCount` threads.
    private func project(
        _ layer: LinearWeights, _ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>,
        accumulate: Bool, scratch: Scratch
    ) {
        let parts = rows * layer.outputSize * layer.inputSize < Self.splitThreshold ? 1 : threadCount
        if let weight = layer.blockWeight {
            scratch.twoPartRows.quantize(x, rows: rows, columns: layer.inputSize)
            let activations = scratch.twoPartRows
            split(layer, parts: parts, panel: 1, y) { columns, bias, y in
                BlockGEMM.multiply(activations, weight, columns: columns, bias: bias, into: y, accumulate: accumulate)
            }
        } else if let weight = layer.int8Weight {
            Int8GEMM.quantize(x, rows: rows, columns: layer.inputSize, into: &scratch.quantizedRows)
            let activations = scratch.quantizedRows
            split(layer, parts: parts, panel: QuantizedMatrix.panelWidth, y) { columns, bias, y in
                Int8GEMM.multiply(activations, weight, columns: columns, bias: bias, into: y, accumulate: accumulate)
            }
        } else {
            layer.apply(x, rows: rows, into: y, accumulate: accumulate, buffer: &scratch.quantizedRows)
        }
    }

    /// Runs `body` over `parts` column ranges of `layer`'s output (each starting at a multiple of
    /// `panel`), on as many threads (`RowSplit` over the panels), with the bias and output pointers.
    private func split(
        _ layer: LinearWeights, parts requested: Int, panel: Int, _ y: UnsafeMutablePointer<Float>,
        _ body: @escaping @Sendable (Range<Int>, UnsafePointer<Float>?, UnsafeMutablePointer<Float>) -> Bool
    ) {
        let panels = (layer.outputSize + panel - 1) / panel
        let parts = max(1, min(requested, panels))
        layer.bias.withUnsafeBufferPointer { bias in
            let shared = WorkerShared((bias: bias.isEmpty ? nil : bias.baseAddress, y: y))
            let done = RowSplit.map(rows: panels, parts: parts) { range in
                let columns = range.lowerBound * panel..<min(layer.outputSize, range.upperBound * panel)
                return body(columns, shared.value.bias, shared.value.y)
            }
            precondition(done.allSatisfy { $0 }, "the default product path always runs")
        }
    }
}

extension LlamaModel {
    /// The tokenizer of a GGUF model file, without reading its weights (for tokenizing alone).
    /// - Throws: `LlamaDecoderError`, as `init(contentsOf:precision:threadCount:)` does for the
    ///   file's header and tokenizer.
    package static func tokenizer(contentsOf url: URL) throws(LlamaDecoderError) -> BytePairTokenizer {
        let file: GGUFFile
        do { file = try GGUFFile(contentsOf: url) } catch {
            throw .invalidFile(error)
        }
        return try LlamaFileLoader(file: file, path: url.path).tokenizer()
    }
}
