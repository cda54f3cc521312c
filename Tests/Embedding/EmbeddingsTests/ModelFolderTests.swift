import Foundation
import ModelTestSupport
import XCTest

@testable import Embeddings

/// Model folders that are incomplete or use another pooling: typed errors, the folder's own pooling.
final class ModelFolderTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("model-folder-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    func testModelFolderMissingAFileIsATypedError() throws {
        let model = try TestModel.folder()
        let copy = folder.appendingPathComponent("model-copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for name in ["config.json", "vocab.txt", "tokenizer_config.json"] {
            try FileManager.default.copyItem(
                at: model.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        XCTAssertThrowsError(try ContextualEmbedding(contentsOf: copy)) {
            XCTAssertEqual(
                $0 as? EmbeddingsError,
                .invalidModel("\(copy.appendingPathComponent("model.safetensors").path) is missing"))
        }
        try Data("{}".utf8).write(to: copy.appendingPathComponent("model.safetensors"))
        let embedding = try ContextualEmbedding(contentsOf: copy)
        XCTAssertThrowsError(try embedding.load()) {
            guard case EmbeddingsError.invalidModel = $0 else { return XCTFail("\($0)") }
        }
    }
}

/// A sentence-transformers folder whose pooling module says CLS (as bge-small-en-v1.5's does):
/// the model's sentence vector must be its normalized first-token vector.
final class ModelFolderPoolingTests: XCTestCase {
    func testCLSPooledFolderUsesTheFirstToken() throws {
        let model = try TestModel.folder()
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("cls-model-\(UUID())")
        try FileManager.default.createDirectory(
            at: copy.appendingPathComponent("1_Pooling"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        for name in ["config.json", "vocab.txt", "tokenizer_config.json", "modules.json", "sentence_bert_config.json"] {
            try FileManager.default.copyItem(
                at: model.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        try FileManager.default.createSymbolicLink(
            at: copy.appendingPathComponent("model.safetensors"),
            withDestinationURL: model.appendingPathComponent("model.safetensors"))
        try Data(
            #"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#
                .utf8
        )
        .write(to: copy.appendingPathComponent("1_Pooling/config.json"))
        let embedding = try ContextualEmbedding(contentsOf: copy)
        XCTAssertEqual(embedding.poolingStrategy, .cls)
        XCTAssertTrue(embedding.normalizesSentenceVectors)
        XCTAssertEqual(embedding.maximumSequenceLength, 256)
        let text = "Pooling comes from the model folder."
        let result = try embedding.embeddingResult(for: text, language: "en")
        XCTAssertEqual(try embedding.sentenceVector(for: text), result.clsPooled().normalizedToUnitLength)
        try Data(#"{"pooling_mode_mean_sqrt_len_tokens": true}"#.utf8).write(
            to: copy.appendingPathComponent("1_Pooling/config.json"))
        XCTAssertThrowsError(try ContextualEmbedding(contentsOf: copy)) {
            XCTAssertTrue("\($0)".contains("unsupported pooling"))
        }
    }
}
