import Foundation

/// The repository's `Fixtures` folder, found from this source file's location.
public enum TestFixtures {
    /// `Fixtures/` at the root of the repository.
    public static var folder: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
    }
}
