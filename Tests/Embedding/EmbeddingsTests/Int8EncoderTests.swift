import Embeddings
import Foundation
import LinearAlgebra
import ModelTestSupport
import Retrieval
import Synchronization
import TestSupport
import VectorIndex
import XCTest

/// The int8 encoder (`quantization: .int8`) on the real default model: close to float32, the
/// same vectors on every kernel path, less memory, and a fingerprint that keeps its vectors
/// apart from float32 ones.
final class Int8EncoderTests: XCTestCase {
    static let int8 = Result { () throws -> ContextualEmbedding in
        _ = try TestModel.shared()  // installs the model
        guard
            let model = ContextualEmbedding(
                modelIdentifier: ContextualEmbedding.defaultModelIdentifier, quantization: .int8)
        else {
            throw EmbeddingsError.invalidModel("default model unknown")
        }
        try model.load()
        return model
    }

    func goldenTexts() throws -> [String] {
        try GoldenParityTests.reference.get().cases.map(\.text)
    }

    func testVectorsStayCloseToFloat32OnTheGoldenTexts() throws {
        let texts = try goldenTexts()
        XCTAssertGreaterThan(texts.count, 150)
        let float = try TestModel.shared().sentenceVectors(for: texts)
        let int8 = try Self.int8.get().sentenceVectors(for: texts)
        let cosines = zip(float, int8).map { cosine($0, $1) }
        let mean = cosines.reduce(0, +) / Double(cosines.count)
        // Measured 0.9925 / 0.9979 (Docs/Numerics.md): the bounds leave room for another CPU's rounding only.
        XCTAssertGreaterThanOrEqual(
            cosines.min() ?? 0, 0.99, "worst text: \(texts[cosines.firstIndex(of: cosines.min() ?? 0) ?? 0])")
        XCTAssertGreaterThanOrEqual(mean, 0.997)
        // The int8 products really ran: the vectors are not the float32 ones.
        XCTAssertLessThan(mean, 0.99999)
        XCTAssertEqual(int8.map(\.count), float.map(\.count))
    }

    func testEveryKernelPathGivesBitIdenticalVectors() throws {
        let model = try Self.int8.get()
        let texts = Array(try goldenTexts().prefix(12))
        let expected = try Int8GEMM.withPath(.generic) { try model.sentenceVectors(for: texts) }
        XCTAssertTrue(Int8GEMM.paths.contains(.generic))
        for path in Int8GEMM.paths where path != .generic {
            let vectors = try Int8GEMM.withPath(path) { try model.sentenceVectors(for: texts) }
            XCTAssertEqual(vectors, expected, "\(path) differs from the generic path")
        }
        XCTAssertEqual(try model.sentenceVectors(for: texts), expected, "the default path (\(Int8GEMM.defaultPath))")
    }

    /// One int8 model on several threads at once: every thread's vectors are the ones a single
    /// thread gets, bit for bit (each call quantizes into its own workspace's buffer).
    func testOneInt8ModelSharedByConcurrentThreads() throws {
        let model = try Self.int8.get()
        let texts = Array(try goldenTexts().prefix(24))
        let reference = try texts.map { try model.sentenceVectors(for: [$0])[0] }
        let results = Mutex([Int: [Float]]())
        let failures = Mutex([String]())
        DispatchQueue.concurrentPerform(iterations: texts.count) { i in
            do {
                let vector = try model.sentenceVectors(for: [texts[i]])[0]
                results.withOrderedLock { $0[i] = vector }
            } catch {
                failures.withOrderedLock { $0.append("\(i): \(error)") }
            }
        }
        XCTAssertEqual(failures.withOrderedLock { $0 }, [])
        let vectors = results.withOrderedLock { $0 }
        XCTAssertEqual(vectors.count, texts.count)
        for (i, vector) in vectors { XCTAssertEqual(vector, reference[i], "thread for text \(i)") }
        // And batched: a text's int8 vector does not depend on its batch.
        XCTAssertEqual(try model.sentenceVectors(for: texts, batchSize: 5), reference)
    }

    func testTokensAndRangesAreTheFloatModels() throws {
        let text = "Closures capture values — café, 東京."
        let float = try TestModel.shared().embeddingResult(for: text, language: nil)
        let int8 = try Self.int8.get().embeddingResult(for: text, language: nil)
        XCTAssertEqual(int8.tokenRanges, float.tokenRanges)
        XCTAssertEqual(int8.tokenVectors.rows, float.tokenVectors.rows)
        for t in 0..<float.sequenceLength {
            XCTAssertGreaterThan(cosine(int8.tokenVectors.row(t), float.tokenVectors.row(t)), 0.98, "token \(t)")
        }
    }

    func testQuantizedWeightsTakeLessMemory() throws {
        let float = try TestModel.shared().weightBytes()
        let int8 = try Self.int8.get().weightBytes()
        // The four projections go from 4 bytes a weight to 1; the word table (45 MiB) stays float32.
        XCTAssertLessThan(Double(int8), 0.7 * Double(float), "int8 \(int8) bytes, float32 \(float)")
        XCTAssertGreaterThan(int8, 45 << 20)
    }

    func testFingerprintRecordsTheQuantization() throws {
        let float = try TestModel.shared().fingerprint
        let int8 = try Self.int8.get().fingerprint
        XCTAssertNil(float.quantization)
        XCTAssertEqual(int8.quantization, "int8")
        XCTAssertNotEqual(float, int8)
        XCTAssertTrue(int8.description.contains("int8"), int8.description)
        // A float32 fingerprint is written as before the field existed: old index files stay equal.
        let json = String(decoding: try JSONEncoder().encode(float), as: UTF8.self)
        XCTAssertFalse(json.contains("quantization"), json)
        XCTAssertEqual(try JSONDecoder().decode(IndexFingerprint.self, from: Data(json.utf8)), float)
    }

    func testAStoreRefusesTheOtherEncodersQuestions() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("int8-store-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("# Closures\n\nA closure captures variables from the scope around it.\n".utf8).write(
            to: folder.appendingPathComponent("a.md"))
        let file = folder.appendingPathComponent("int8.index")
        let built = EmbeddingStore(embedding: try Self.int8.get())
        _ = try built.index(folder: folder)
        try built.save(to: file)
        XCTAssertEqual(try IndexFile.fingerprint(of: file).quantization, "int8")

        let float = EmbeddingStore(embedding: try TestModel.shared())
        try float.load(from: file)
        XCTAssertThrowsError(try float.search("what does a closure capture", mode: .semantic, k: 1)) { error in
            XCTAssertTrue("\(error)".contains("int8 encoder"), "\(error)")
        }
        let int8 = EmbeddingStore(embedding: try Self.int8.get())
        try int8.load(from: file)
        XCTAssertEqual(
            try int8.search("what does a closure capture", mode: .semantic, k: 1).first?.chunk.id, "a#closures")
        // Re-indexing with float32 re-embeds everything: the file never holds both kinds.
        let stats = try float.replace(with: MarkdownChunker.pages(in: folder).pages)
        XCTAssertEqual(stats.reused, 0)
        XCTAssertEqual(stats.embedded, 1)
    }

    func testSentenceEmbeddingTakesTheQuantization() throws {
        _ = try TestModel.shared()
        let embedding = try XCTUnwrap(SentenceEmbedding.sentenceEmbedding(for: "en", quantization: .int8))
        XCTAssertEqual(embedding.quantization, .int8)
        XCTAssertEqual(embedding.contextualEmbedding.quantization, .int8)
        let float = try XCTUnwrap(SentenceEmbedding.sentenceEmbedding(for: "en"))
        XCTAssertEqual(float.quantization, .float32)
        let a = try XCTUnwrap(embedding.vector(for: "Structs are value types."))
        let b = try XCTUnwrap(float.vector(for: "Structs are value types."))
        XCTAssertGreaterThan(cosine(a, b), 0.99)
        XCTAssertNotEqual(a, b)
    }

    func testMultilingualE5RunsInInt8() throws {
        let file = try TestModel.multilingualFile()
        let float = try TestModel.multilingual()
        let int8 = ContextualEmbedding(packedModel: file, quantization: .int8)
        try int8.load()
        let texts = [
            "query: how do closures capture values?", "passage: Le chien dort au soleil.",
            "passage: Собака спит на солнце.",
        ]
        let a = try float.sentenceVectors(for: texts)
        let b = try int8.sentenceVectors(for: texts)
        for (x, y) in zip(a, b) { XCTAssertGreaterThan(cosine(x, y), 0.98) }
        XCTAssertLessThan(try int8.weightBytes(), try float.weightBytes())
    }
}
