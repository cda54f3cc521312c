import Foundation
import GGUF
import ModelTestSupport

/// The default generation model (SmolLM2-135M-Instruct, Q4_1), installed through the asset
/// channel on first use as a user's first run installs it, and opened once for all tests.
enum TestModel {
    /// The file's size, from the asset manifest.
    static let byteCount = 98_362_432

    /// The parsed model.
    static func file() throws -> GGUFFile { try opened.get() }

    private static let opened: Result<GGUFFile, any Error> = Result {
        try GGUFFile(contentsOf: TestLanguageModel.file())
    }
}
