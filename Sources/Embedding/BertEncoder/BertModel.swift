import Foundation
import LinearAlgebra

/// A BERT encoder (`BertModel` without the pooler) running on BLAS.
///
/// The forward pass is a flat list of kernel calls per layer; see `BertLayer`. Weights are read
/// once and never change, and each call borrows its own workspace, so one model may be used from
/// several threads at once.
///
/// ```swift
/// let model = try BertModel(folder: modelFolder)
/// let states = try model.forward(tokenIDs: [[101, 7592, 102]])  // one [3, 384] matrix
/// ```
package final class BertModel: Sendable {
    /// The architecture.
    package let configuration: BertConfiguration
    let weights: BertWeights
    private let pool: WorkspacePool

    /// How many threads one `forward` call spreads its sequences over, fixed at creation. Above
    /// 1, every call runs its BLAS single-threaded (`BLAS.singleThreaded`, only while it runs): on
    /// 2 cores this measured faster than OpenBLAS's own threads at encoder shapes (see
    /// Docs/Benchmarks.md). At 1, BLAS keeps the threads it has (OpenBLAS: one per core unless
    /// `OPENBLAS_NUM_THREADS` says otherwise), so one sequence at a time uses them inside each GEMM.
    package let parallelism: Int

    /// Reads `config.json` and `model.safetensors` from a model folder. Creating a model changes
    /// no process-wide setting (see `parallelism` for BLAS threads).
    /// - Parameter parallelism: threads per `forward` call (values below 1 count as 1); defaults to
    ///   the number of active cores.
    /// - Throws: `EncoderError` naming the file: `invalidConfiguration`, `io`, `invalidSafetensors`,
    ///   `missingTensor` or `shapeMismatch`.
    package convenience init(
        folder: URL, parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        quantization: Quantization = .float32
    ) throws {
        let configuration = try BertConfiguration(contentsOf: folder.appendingPathComponent("config.json"))
        let file = try SafetensorsFile(contentsOf: folder.appendingPathComponent("model.safetensors"))
        try self.init(
            configuration: configuration,
            weights: BertWeights(file: file, configuration: configuration, quantization: quantization),
            parallelism: parallelism, quantization: quantization)
    }

    /// An XLM-RoBERTa encoder from a packed 4-bit model file (multilingual-e5-small): the
    /// projections dequantized once to `Float`, the word table kept in 4-bit blocks.
    /// - Throws: `EncoderError.invalidConfiguration` for a malformed file.
    package convenience init(
        packed file: PackedModelFile, parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        quantization: Quantization = .float32
    ) throws {
        try self.init(
            configuration: file.configuration, weights: file.bertWeights(quantization: quantization),
            parallelism: parallelism, quantization: quantization)
    }

    /// The bytes the weights take in memory (the word table as stored: 4-bit or `Float`; the
    /// projections in `Float` or int8).
    package var weightBytes: Int {
        let w = weights
        var bytes =
            (w.positionEmbeddings.count + w.tokenTypeEmbeddings.count + 2 * w.embeddingsLayerNorm.gamma.count)
            * MemoryLayout<Float>.size
        for layer in w.layers {
            for linear in [layer.queryKeyValue, layer.attentionOutput, layer.intermediate, layer.output] {
                bytes += linear.byteCount
            }
            bytes +=
                2 * (layer.attentionLayerNorm.gamma.count + layer.outputLayerNorm.gamma.count)
                * MemoryLayout<Float>.size
        }
        return bytes + w.wordEmbeddings.byteCount
    }

    /// How the projections multiply, fixed at creation.
    package let quantization: Quantization

    /// A model from weights already read. With `.int8`, each layer's four projections still in
    /// `Float` are quantized here and their `Float` copies dropped (the readers quantize as they
    /// read, which keeps the peak memory of loading lower).
    /// - Throws: `invalidConfiguration` for a bad configuration or a weight that cannot be quantized.
    package init(
        configuration: BertConfiguration, weights: BertWeights,
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        quantization: Quantization = .float32
    ) throws {
        try configuration.validate(path: "configuration")
        self.configuration = configuration
        var weights = weights
        weights.layers = try weights.layers.enumerated().map { i, layer in
            try layer.with(quantization, path: "layer \(i)")
        }
        self.weights = weights
        self.quantization = quantization
        self.parallelism = max(1, parallelism)
        self.pool = WorkspacePool(configuration: configuration)
    }

    /// The last hidden states for each sequence of token ids: one `[Tᵢ, H]` matrix per sequence.
    ///
    /// All sequences go through each projection as one stacked `[ΣTᵢ, H]` matrix (bigger matrix
    /// products run closer to BLAS peak); attention stays within each sequence.
    /// - Throws: `tokenOutOfRange` or `sequenceTooLong` before any work is done.
    /// - Complexity: O(ΣTᵢ·H·(H + I) + ΣTᵢ²·H) per layer.
    package func forward(tokenIDs batch: [[Int]]) throws -> [Matrix] {
        try check(batch)
        let workers = min(max(1, parallelism), batch.count)
        guard workers > 1 else { return forwardChecked(batch) }
        // Contiguous groups with about the same number of tokens each.
        let total = batch.reduce(0) { $0 + $1.count }
        var groups = [Range<Int>]()
        var start = 0
        var tokens = 0
        for (i, ids) in batch.enumerated() {
            tokens += ids.count
            if tokens * workers >= total * (groups.count + 1), groups.count < workers - 1 {
                groups.append(start..<(i + 1))
                start = i + 1
            }
        }
        if start < batch.count { groups.append(start..<batch.count) }
        let ranges = groups
        // One scope around all the threads, so BLAS's thread count is not switched between groups.
        return try withEncoderBLASThreads {
            try ParallelGroups.map(count: ranges.count, threads: workers) { g in forwardChecked(Array(batch[ranges[g]]))
            }.flatMap { $0 }
        }
    }

    /// The same as `forward(tokenIDs:)`, all of it on the calling thread (BLAS single-threaded
    /// when `parallelism` > 1): for callers that spread their own work over threads, one batch per
    /// thread.
    /// - Throws: `tokenOutOfRange` or `sequenceTooLong` before any work is done.
    package func forwardOnCallingThread(tokenIDs batch: [[Int]]) throws -> [Matrix] {
        try check(batch)
        return forwardChecked(batch)
    }

    private func check(_ batch: [[Int]]) throws {
        let c = configuration
        for ids in batch {
            guard ids.count <= c.maximumSequenceLength else {
                throw EncoderError.sequenceTooLong(length: ids.count, maximum: c.maximumSequenceLength)
            }
            if let bad = ids.first(where: { $0 < 0 || $0 >= c.vocabularySize }) {
                throw EncoderError.tokenOutOfRange(id: bad, vocabularySize: c.vocabularySize)
            }
        }
    }

    /// `body` with BLAS single-threaded when the model spreads its work over threads itself
    /// (OpenBLAS threads on top would compete for the same cores), as BLAS is set otherwise.
    package func withEncoderBLASThreads<R>(_ body: () throws -> R) rethrows -> R {
        parallelism > 1 ? try BLAS.singleThreaded(body) : try body()
    }

    /// One group of already-checked sequences on the calling thread.
    private func forwardChecked(_ batch: [[Int]]) -> [Matrix] {
        withEncoderBLASThreads { forwardCheckedUnscoped(batch) }
    }

    private func forwardCheckedUnscoped(_ batch: [[Int]]) -> [Matrix] {
        let c = configuration
        var segments = [Range<Int>]()
        var rows = 0
        for ids in batch {
            segments.append(rows..<(rows + ids.count))
            rows += ids.count
        }
        guard rows > 0 else { return batch.map { _ in Matrix(rows: 0, columns: c.hiddenSize) } }
        let longest = batch.map(\.count).max() ?? 0
        return pool.withWorkspace { workspace in
            workspace.reserve(rows: rows, longest: longest)
            let embeddings = BertEmbeddings(weights: weights, configuration: c)
            for (ids, segment) in zip(batch, segments) {
                embeddings.apply(ids: ids, into: workspace.hidden + segment.lowerBound * c.hiddenSize)
            }
            let layer = BertLayer(configuration: c)
            for weights in weights.layers {
                layer.apply(weights, rows: rows, segments: segments, workspace: workspace)
            }
            return segments.map { segment in
                let start = workspace.hidden + segment.lowerBound * c.hiddenSize
                return Matrix(
                    rows: segment.count, columns: c.hiddenSize,
                    values: Array(UnsafeBufferPointer(start: start, count: segment.count * c.hiddenSize)))
            }
        }
    }
}
