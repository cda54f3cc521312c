import BertEncoder
import Foundation
import WordPiece

/// What a sentence-transformers model folder says about itself: the encoder's architecture, the
/// sequence length, the pooling mode, and whether embeddings are normalized.
///
/// Reads `config.json`, `sentence_bert_config.json` (`max_seq_length`), `modules.json` (a
/// `Normalize` module) and the pooling module's `config.json`. `tokenizer.json`'s truncation and
/// padding settings are ignored on purpose: sentence-transformers overrides them with
/// `max_seq_length` and pads only within a batch.
package struct ModelFolder: Sendable {
    /// The folder.
    package let url: URL
    /// The encoder's architecture.
    package let configuration: BertConfiguration
    /// The most tokens per text, `[CLS]` and `[SEP]` included.
    package let maximumSequenceLength: Int
    /// The pooling the model was trained with.
    package let pooling: PoolingStrategy
    /// Whether the model's pipeline ends in L2 normalization.
    package let normalizes: Bool
    /// An identifier for the model, from `config.json`'s `_name_or_path` or the folder name.
    package let identifier: String

    /// Reads the folder's configuration files (not the weights).
    /// - Throws: `EmbeddingsError.invalidModel` naming the file and the problem.
    package init(url: URL, identifier: String? = nil) throws {
        self.url = url
        func path(_ name: String) -> URL { url.appendingPathComponent(name) }
        func json(_ name: String, required: Bool) throws -> [String: Any]? {
            let file = path(name)
            guard FileManager.default.fileExists(atPath: file.path) else {
                if required { throw EmbeddingsError.invalidModel("\(file.path) is missing") }
                return nil
            }
            guard let data = try? Data(contentsOf: file),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else {
                throw EmbeddingsError.invalidModel("\(file.path) is not a JSON object")
            }
            return object
        }
        for required in ["config.json", "vocab.txt", "model.safetensors"]
        where !FileManager.default.fileExists(atPath: path(required).path) {
            throw EmbeddingsError.invalidModel("\(path(required).path) is missing")
        }
        do {
            configuration = try BertConfiguration(contentsOf: path("config.json"))
        } catch let error as EncoderError {
            throw EmbeddingsError.invalidModel(error.description)
        }
        let config = try json("config.json", required: true) ?? [:]
        self.identifier =
            identifier ?? (config["_name_or_path"] as? String).flatMap { $0.isEmpty ? nil : $0 }
            ?? url.lastPathComponent

        var maximum = configuration.maximumPositions
        if let sbert = try json("sentence_bert_config.json", required: false), let n = sbert["max_seq_length"] as? Int {
            guard n >= 2 else {
                throw EmbeddingsError.invalidModel(
                    "\(path("sentence_bert_config.json").path): max_seq_length \(n) is too small")
            }
            maximum = min(n, maximum)
        }
        maximumSequenceLength = maximum

        var poolingFolder = "1_Pooling"
        var normalizes = false
        let modulesURL = path("modules.json")
        if FileManager.default.fileExists(atPath: modulesURL.path) {
            guard let data = try? Data(contentsOf: modulesURL),
                let modules = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
            else {
                throw EmbeddingsError.invalidModel("\(modulesURL.path) is not a JSON array of modules")
            }
            for module in modules {
                let type = module["type"] as? String ?? ""
                if type.hasSuffix(".Normalize") { normalizes = true }
                if type.hasSuffix(".Pooling"), let p = module["path"] as? String { poolingFolder = p }
            }
        }
        self.normalizes = normalizes
        if let poolingConfig = try json(poolingFolder + "/config.json", required: false) {
            func flag(_ key: String) -> Bool { poolingConfig[key] as? Bool ?? false }
            if flag("pooling_mode_cls_token") {
                pooling = .cls
            } else if flag("pooling_mode_max_tokens") {
                pooling = .max
            } else if flag("pooling_mode_mean_tokens") {
                pooling = .mean
            } else {
                let modes = poolingConfig.keys.filter { $0.hasPrefix("pooling_mode_") && flag($0) }.sorted()
                throw EmbeddingsError.invalidModel(
                    "\(path(poolingFolder + "/config.json").path): unsupported pooling \(modes)")
            }
        } else {
            pooling = .mean
        }
    }

    /// The tokenizer described by the folder.
    package func makeTokenizer() throws -> BertTokenizer {
        do {
            return try BertTokenizer(contentsOf: url, maximumLength: maximumSequenceLength)
        } catch let error as WordPieceError {
            throw EmbeddingsError.invalidModel(error.description)
        }
    }

    /// The encoder, with its weights read from `model.safetensors`.
    /// - Parameter parallelism: threads per `forward` call (see `BertModel.parallelism`).
    package func makeModel(
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount, quantization: Quantization = .float32
    ) throws -> BertModel {
        do {
            return try BertModel(folder: url, parallelism: parallelism, quantization: quantization)
        } catch let error as EncoderError {
            throw EmbeddingsError.invalidModel(error.description)
        }
    }
}
