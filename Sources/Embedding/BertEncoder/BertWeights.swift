import Foundation
import LinearAlgebra

/// A LayerNorm's parameters. `gamma, beta: [H]`.
package struct LayerNormWeights: Sendable {
    /// `[H]` the scale (the checkpoint's `LayerNorm.weight`).
    package var gamma: [Float]
    /// `[H]` the shift (the checkpoint's `LayerNorm.bias`).
    package var beta: [Float]
}

/// One `BertLayer`'s weights, with the query, key and value projections fused into one `[3H, H]` matrix.
package struct BertLayerWeights: Sendable {
    /// `[3H, H]`: rows 0..<H query, H..<2H key, 2H..<3H value.
    package var queryKeyValue: LinearWeights
    /// `BertSelfOutput.dense`: `[H, H]`.
    package var attentionOutput: LinearWeights
    /// `BertSelfOutput.LayerNorm`: `[H]`.
    package var attentionLayerNorm: LayerNormWeights
    /// `BertIntermediate.dense`: `[I, H]`.
    package var intermediate: LinearWeights
    /// `BertOutput.dense`: `[H, I]`.
    package var output: LinearWeights
    /// `BertOutput.LayerNorm`: `[H]`.
    package var outputLayerNorm: LayerNormWeights
}

/// All the weights of a `BertModel` (no pooler), read from a safetensors checkpoint.
package struct BertWeights: Sendable {
    /// `[V, H]`, in full precision or 4-bit blocks.
    package var wordEmbeddings: EmbeddingTable
    /// `[P, H]`
    package var positionEmbeddings: [Float]
    /// `[types, H]`
    package var tokenTypeEmbeddings: [Float]
    /// `BertEmbeddings.LayerNorm`: `[H]`.
    package var embeddingsLayerNorm: LayerNormWeights
    /// One entry per encoder layer, in order.
    package var layers: [BertLayerWeights]

    /// Weights from their parts (shapes are the caller's to get right).
    package init(
        wordEmbeddings: EmbeddingTable, positionEmbeddings: [Float], tokenTypeEmbeddings: [Float],
        embeddingsLayerNorm: LayerNormWeights, layers: [BertLayerWeights]
    ) {
        self.wordEmbeddings = wordEmbeddings
        self.positionEmbeddings = positionEmbeddings
        self.tokenTypeEmbeddings = tokenTypeEmbeddings
        self.embeddingsLayerNorm = embeddingsLayerNorm
        self.layers = layers
    }

    /// Reads the tensors named as in Hugging Face checkpoints (with or without a `bert.` prefix),
    /// checking every shape against `configuration`; the three attention projections are fused.
    /// With `.int8`, each layer's projections are quantized as soon as the layer is read, so the
    /// `Float` copies of only one layer exist at a time.
    /// - Throws: `missingTensor`, `shapeMismatch`, or `invalidSafetensors` for a non-float tensor
    ///   or one holding NaN or infinity.
    package init(file: SafetensorsFile, configuration c: BertConfiguration, quantization: Quantization = .float32)
        throws
    {
        let prefix =
            file.tensors["embeddings.word_embeddings.weight"] == nil
                && file.tensors["bert.embeddings.word_embeddings.weight"] != nil ? "bert." : ""
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            let values = try file.floats(prefix + name, shape: shape)
            if values.contains(where: { !$0.isFinite }) {
                throw EncoderError.invalidSafetensors(
                    path: file.path, reason: "tensor '\(prefix + name)' has non-finite values")
            }
            return values
        }
        func linear(_ name: String, out: Int, in inputs: Int) throws -> LinearWeights {
            LinearWeights(
                weight: try tensor(name + ".weight", [out, inputs]), bias: try tensor(name + ".bias", [out]),
                inputSize: inputs, outputSize: out)
        }
        func layerNorm(_ name: String) throws -> LayerNormWeights {
            LayerNormWeights(
                gamma: try tensor(name + ".weight", [c.hiddenSize]), beta: try tensor(name + ".bias", [c.hiddenSize]))
        }
        let h = c.hiddenSize
        wordEmbeddings = .dense(try tensor("embeddings.word_embeddings.weight", [c.vocabularySize, h]), columns: h)
        positionEmbeddings = try tensor("embeddings.position_embeddings.weight", [c.maximumPositions, h])
        tokenTypeEmbeddings = try tensor("embeddings.token_type_embeddings.weight", [c.typeVocabularySize, h])
        embeddingsLayerNorm = try layerNorm("embeddings.LayerNorm")
        layers = try (0..<c.layerCount).map { i in
            try BertLayerWeights(
                configuration: c, prefix: "encoder.layer.\(i).", names: .huggingFace, linear: linear,
                layerNorm: layerNorm
            )
            .with(quantization, path: file.path + " layer \(i)")
        }
    }
}

extension BertLayerWeights {
    /// The names of one layer's tensors after the layer's prefix.
    package struct TensorNames: Sendable {
        package var query, key, value, attentionOutput, attentionLayerNorm, intermediate, output,
            outputLayerNorm: String

        /// Hugging Face's `BertLayer` names (`attention.self.query`, …).
        package static let huggingFace = TensorNames(
            query: "attention.self.query", key: "attention.self.key", value: "attention.self.value",
            attentionOutput: "attention.output.dense", attentionLayerNorm: "attention.output.LayerNorm",
            intermediate: "intermediate.dense", output: "output.dense", outputLayerNorm: "output.LayerNorm")
    }

    /// One layer read through `linear(name, out, in)` and `layerNorm(name)`, whatever the file
    /// format; the query, key and value projections are fused into one `[3H, H]` matrix.
    package init(
        configuration c: BertConfiguration, prefix p: String, names: TensorNames,
        linear: (String, Int, Int) throws -> LinearWeights, layerNorm: (String) throws -> LayerNormWeights
    ) throws {
        let h = c.hiddenSize
        let q = try linear(p + names.query, h, h)
        let k = try linear(p + names.key, h, h)
        let v = try linear(p + names.value, h, h)
        self.init(
            queryKeyValue: LinearWeights(
                weight: q.weight + k.weight + v.weight, bias: q.bias + k.bias + v.bias, inputSize: h, outputSize: 3 * h),
            attentionOutput: try linear(p + names.attentionOutput, h, h),
            attentionLayerNorm: try layerNorm(p + names.attentionLayerNorm),
            intermediate: try linear(p + names.intermediate, c.intermediateSize, h),
            output: try linear(p + names.output, h, c.intermediateSize),
            outputLayerNorm: try layerNorm(p + names.outputLayerNorm))
    }

    /// This layer with its four projections multiplying as `quantization` says: `.int8`
    /// quantizes the ones still in `Float` (and drops their `Float` copies); `.float32` keeps the
    /// layer as it is, which must be all `Float`.
    /// - Throws: `invalidConfiguration` (naming `path`) for a weight that cannot be quantized, or
    ///   for int8 weights asked to be `Float` (they cannot be restored).
    package func with(_ quantization: Quantization, path: String) throws -> BertLayerWeights {
        var layer = self
        let projections: [(WritableKeyPath<BertLayerWeights, LinearWeights>, String)] = [
            (\.queryKeyValue, "query/key/value"), (\.attentionOutput, "attention output"),
            (\.intermediate, "intermediate"), (\.output, "output"),
        ]
        for (projection, name) in projections {
            switch quantization {
            case .float32:
                guard self[keyPath: projection].int8Weight == nil else {
                    throw EncoderError.invalidConfiguration(
                        path: path, reason: "\(name): int8 weights cannot be used as float32")
                }
            case .int8:
                do { layer[keyPath: projection] = try self[keyPath: projection].quantizedToInt8() } catch {
                    throw EncoderError.invalidConfiguration(path: path, reason: "\(name): \(error)")
                }
            }
        }
        return layer
    }
}
