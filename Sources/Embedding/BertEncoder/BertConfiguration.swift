import Foundation

/// The fields of a Hugging Face BERT `config.json` the encoder uses.
package struct BertConfiguration: Codable, Equatable, Sendable {
    /// V: vocabulary size.
    package var vocabularySize: Int
    /// H: hidden size.
    package var hiddenSize: Int
    /// Number of transformer layers.
    package var layerCount: Int
    /// Number of attention heads (H must be a multiple of it).
    package var headCount: Int
    /// I: feed-forward inner size.
    package var intermediateSize: Int
    /// P: size of the position-embedding table.
    package var maximumPositions: Int
    /// Number of token types (segments).
    package var typeVocabularySize: Int
    /// LayerNorm epsilon.
    package var layerNormEpsilon: Float
    /// The activation; only `gelu` (erf) is supported.
    package var hiddenActivation: String
    /// The position id of a sequence's first token: 0 for BERT; XLM-RoBERTa counts from its
    /// padding index + 1 (2), so a 514-row table serves 512 tokens. Not read from `config.json`.
    package var positionOffset: Int = 0

    enum CodingKeys: String, CodingKey {
        case vocabularySize = "vocab_size"
        case hiddenSize = "hidden_size"
        case layerCount = "num_hidden_layers"
        case headCount = "num_attention_heads"
        case intermediateSize = "intermediate_size"
        case maximumPositions = "max_position_embeddings"
        case typeVocabularySize = "type_vocab_size"
        case layerNormEpsilon = "layer_norm_eps"
        case hiddenActivation = "hidden_act"
    }

    /// A configuration from its fields, unchecked (`validate(path:)` checks it).
    package init(
        vocabularySize: Int, hiddenSize: Int, layerCount: Int, headCount: Int, intermediateSize: Int,
        maximumPositions: Int, typeVocabularySize: Int, layerNormEpsilon: Float, hiddenActivation: String = "gelu"
    ) {
        self.vocabularySize = vocabularySize
        self.hiddenSize = hiddenSize
        self.layerCount = layerCount
        self.headCount = headCount
        self.intermediateSize = intermediateSize
        self.maximumPositions = maximumPositions
        self.typeVocabularySize = typeVocabularySize
        self.layerNormEpsilon = layerNormEpsilon
        self.hiddenActivation = hiddenActivation
    }

    /// The most tokens one sequence may have: the position rows from `positionOffset` on.
    package var maximumSequenceLength: Int { maximumPositions - positionOffset }

    /// D: the size of one attention head.
    package var headSize: Int { hiddenSize / headCount }

    /// Reads and checks `config.json`.
    /// - Throws: `invalidConfiguration` with the path when the file cannot be read, is not a
    ///   BERT configuration, or fails `validate(path:)`.
    package init(contentsOf url: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw EncoderError.invalidConfiguration(
                path: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        do {
            self = try JSONDecoder().decode(BertConfiguration.self, from: data)
        } catch {
            throw EncoderError.invalidConfiguration(path: url.path, reason: "\(error)")
        }
        try validate(path: url.path)
    }

    /// Checks sizes are positive (at most 2²⁴) and consistent, and the activation is supported.
    /// - Throws: `invalidConfiguration` naming `path` and the offending field.
    package func validate(path: String) throws {
        func fail(_ reason: String) -> EncoderError { .invalidConfiguration(path: path, reason: reason) }
        for (name, value) in [
            ("vocab_size", vocabularySize), ("hidden_size", hiddenSize), ("num_hidden_layers", layerCount),
            ("num_attention_heads", headCount), ("intermediate_size", intermediateSize),
            ("max_position_embeddings", maximumPositions), ("type_vocab_size", typeVocabularySize),
        ] {
            guard value > 0, value <= 1 << 24 else { throw fail("\(name) is \(value)") }
        }
        guard positionOffset >= 0, positionOffset < maximumPositions else {
            throw fail("position offset \(positionOffset) leaves no positions of \(maximumPositions)")
        }
        guard hiddenSize % headCount == 0 else {
            throw fail("hidden_size \(hiddenSize) is not a multiple of num_attention_heads \(headCount)")
        }
        guard layerNormEpsilon.isFinite, layerNormEpsilon >= 0 else {
            throw fail("layer_norm_eps is \(layerNormEpsilon)")
        }
        guard hiddenActivation == "gelu" else {
            throw fail("hidden_act '\(hiddenActivation)' is not supported (only 'gelu')")
        }
    }
}
