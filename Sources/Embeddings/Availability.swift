/// The outcome of `ContextualEmbedding.requestAssets()`, as in Apple's `NLContextualEmbedding.AssetsResult`.
public enum AssetsResult: Sendable, Equatable {
    /// The assets are installed and usable.
    case available
    /// The assets are not available on this system.
    case notAvailable
    /// Installing failed (the thrown error of `ModelAssets.install` says why).
    case error
}

/// Whether a model can be used now, in the manner of FoundationModels' `SystemLanguageModel.Availability`.
public enum Availability: Sendable, Equatable {
    case available
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
}
