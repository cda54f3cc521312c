import Foundation
import LinearAlgebra
import ModelAssets
import ModelTestSupport
import Synchronization
import XCTest

@testable import Embeddings

/// `requestAssets()` and its completion-handler form: the typed cause when installing cannot
/// work, `.notAvailable` for a model folder that is gone, `.available` without any work when
/// the assets are there. The cache is redirected to an empty folder and `PATH` emptied, so no
/// network or subprocess is involved.
final class RequestAssetsTests: XCTestCase {
    var folder: URL!
    var saved: [String: String?] = [:]

    override func setUpWithError() throws {
        _ = try TestModel.folder()  // installed before the cache is redirected
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("request-assets-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["XDG_CACHE_HOME", "PATH", AssetCache.environmentVariable] {
            saved[name] = ProcessInfo.processInfo.environment[name]
        }
        setenv("XDG_CACHE_HOME", folder.appendingPathComponent("cache").path, 1)
        unsetenv(AssetCache.environmentVariable)
    }

    override func tearDownWithError() throws {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        try? FileManager.default.removeItem(at: folder)
    }

    func testMissingPythonIsThrownAsItsCause() async throws {
        setenv("PATH", folder.path, 1)  // no python3 here
        let embedding = try XCTUnwrap(ContextualEmbedding(language: "en"))
        XCTAssertFalse(embedding.hasAvailableAssets)
        XCTAssertEqual(embedding.availability, .unavailable(.installerMissing))
        do {
            _ = try await embedding.requestAssets()
            XCTFail("expected AssetInstallationError.pythonMissing")
        } catch let error as AssetInstallationError {
            XCTAssertEqual(error, .pythonMissing)
        }
        XCTAssertThrowsError(try embedding.load()) {
            guard case EmbeddingsError.assetsNotAvailable = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertNil(SentenceEmbedding.sentenceEmbedding(for: "en"), "nil when the assets cannot be installed")
    }

    func testCompletionHandlerGetsTheErrorWithItsResult() throws {
        setenv("PATH", folder.path, 1)
        let embedding = try XCTUnwrap(ContextualEmbedding(modelIdentifier: "all-MiniLM-L6-v2"))
        let done = expectation(description: "completion")
        let outcome = Mutex<(ContextualEmbedding.AssetsResult, AssetInstallationError?)?>(nil)
        embedding.requestAssets { result, error in
            outcome.withOrderedLock { $0 = (result, error as? AssetInstallationError) }
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
        let (result, error) = try XCTUnwrap(outcome.withOrderedLock { $0 })
        XCTAssertEqual(result, .error)
        XCTAssertEqual(error, .pythonMissing)
    }

    func testPresentAssetsAreAvailableWithoutWork() async throws {
        setenv("PATH", folder.path, 1)  // would fail if anything tried to install
        setenv(AssetCache.environmentVariable, try TestModel.folder().path, 1)
        let embedding = try XCTUnwrap(ContextualEmbedding(language: "en-US"))
        let result = try await embedding.requestAssets()
        XCTAssertEqual(result, .available)
        let handled = expectation(description: "completion")
        embedding.requestAssets { result, error in
            XCTAssertEqual(result, .available)
            XCTAssertNil(error)
            handled.fulfill()
        }
        await fulfillment(of: [handled], timeout: 30)
    }

    func testAFolderThatIsGoneIsNotAvailable() async throws {
        let copy = folder.appendingPathComponent("model")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        let model = try TestModel.folder()
        for name in ["config.json", "vocab.txt", "model.safetensors"] {
            try FileManager.default.createSymbolicLink(
                at: copy.appendingPathComponent(name), withDestinationURL: model.appendingPathComponent(name))
        }
        let embedding = try ContextualEmbedding(contentsOf: copy)
        let available = try await embedding.requestAssets()
        XCTAssertEqual(available, .available)
        try FileManager.default.removeItem(at: copy)
        let gone = try await embedding.requestAssets()
        XCTAssertEqual(gone, .notAvailable)
    }

    func testUnknownModelsAndLanguagesGiveNil() {
        XCTAssertNil(ContextualEmbedding(modelIdentifier: "no/such-model"))
        XCTAssertNil(ContextualEmbedding(language: "tlh"))  // no known model serves Klingon
        XCTAssertEqual(ContextualEmbedding(language: "fr")?.modelIdentifier, "intfloat/multilingual-e5-small")
        XCTAssertEqual(ContextualEmbedding(language: "en")?.modelIdentifier, ContextualEmbedding.defaultModelIdentifier)
        XCTAssertEqual(
            ModelCatalog.descriptor(forLanguage: "EN_us")?.identifier, ContextualEmbedding.defaultModelIdentifier)
        XCTAssertEqual(ContextualEmbedding(modelIdentifier: "all-MiniLM-L6-v2", parallelism: 0)?.parallelism, 1)
    }
}
