import Embeddings
import Foundation
import ModelAssets

/// `--model DIR` or the default model, installed (with progress on stderr) when missing.
enum ModelOption {
    static let help = ("--model <dir>", "A sentence-transformers model folder (default: all-MiniLM-L6-v2, installed on first use).")

    /// The model folder to use, installing the default model when needed.
    static func folder(_ parsed: ParsedArguments) throws -> URL {
        if let folder = parsed.values["model"] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError.noInput("model folder '\(folder)' does not exist")
            }
            return URL(fileURLWithPath: folder)
        }
        let assets = ModelCatalog.defaultModel.assets
        if let found = AssetCache.locate(assets) { return found }
        do { return try AssetCache.install(assets) { Console.note($0) } } catch {
            throw CLIError.failure("installing \(assets.identifier) failed: \(error.description)")
        }
    }

    static func load(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let embedding: ContextualEmbedding
        if parsed.values["model"] != nil {
            let url = try folder(parsed)
            do { embedding = try ContextualEmbedding(contentsOf: url) } catch let error as EmbeddingsError {
                throw CLIError.data(error.description)
            }
        } else {
            guard let model = ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier) else {
                throw CLIError.failure("the default model is unknown")
            }
            embedding = model
            if !embedding.hasAvailableAssets { _ = try folder(parsed) }  // installs it
        }
        do { try embedding.load() } catch let error as EmbeddingsError {
            throw CLIError.data(error.description)
        }
        return embedding
    }
}
