import Synchronization

/// Where the library's warnings go. The library never prints: what a user should hear about
/// (OpenBLAS's kernels could not be switched, so the slower ones run) is handed to a handler the
/// caller installs, and dropped when there is none. The `embeddings` command prints each one on
/// standard error as `warning: …`.
///
/// ```swift
/// Diagnostics.setHandler { message in logger.warning("\(message)") }
/// ```
public enum Diagnostics {
    /// Receives one warning: a sentence saying what happened and what the library did instead.
    /// It may be called from any thread, with no lock of the library held.
    public typealias Handler = @Sendable (_ message: String) -> Void

    private static let handler = Mutex<Handler?>(nil)

    /// Routes every later warning to `handler` (nil: drop them, the default).
    /// - Complexity: O(1).
    public static func setHandler(_ handler: Handler?) {
        self.handler.withOrderedLock { $0 = handler }
    }

    /// Hands `message` to the installed handler, if any. Call it with no lock held: the handler
    /// is the caller's code.
    package static func warn(_ message: String) {
        let current = handler.withOrderedLock { $0 }
        current?(message)
    }
}
