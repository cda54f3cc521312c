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
            case let .corrupt(problem): self = .unavailable(.assetsCorrupt(problem))
            case .installerMissing: self = .unavailable(.installerMissing)
            }
        }
    }
}
