import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import ModelTestSupport
import TestSupport
import VectorIndex
import XCTest

final class StoreTests: XCTestCase {
    func pages(_ edit: Bool = false) -> [EmbeddingStore.Page] {
        [
            .init(source: "a.md", text: "# Alpha\n\nIntro.\n\n## Sorting\n\nArrays sort with sorted(by:).\n\n## Filtering\n\nUse filter to keep matching items."),
            .init(source: "b.md", text: "# Beta\n\n## Optionals\n\nUnwrap optionals with if let\(edit ? " or guard let" : "").\n\n## Closures\n\nClosures capture values."),
        ]
    }

    /// A lexical-only file has no vectors once loaded, and re-indexing without a model over a file
    /// with vectors makes it lexical-only instead of keeping vectors of other chunks.
    func testLexicalOnlyStoresKeepNoVectors() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lexical-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("x.index")
        let withVectors = EmbeddingStore(embedding: try TestModel.shared())
        _ = try await withVectors.replace(with: pages())
        try await withVectors.save(to: url)
        let lexical = EmbeddingStore(embedding: nil)
        try await lexical.load(from: url)
        let loadedVectors = await lexical.vectors()
        let loadedCount = await lexical.count
        XCTAssertEqual(loadedVectors?.count, loadedCount, "a file with vectors keeps them")
        _ = try await lexical.replace(with: pages(true))
        let afterLexicalIndex = await lexical.vectors()
        XCTAssertNil(afterLexicalIndex, "no vectors of the previous chunks")
        try await lexical.save(to: url)
        let reloaded = EmbeddingStore(embedding: nil)
        try await reloaded.load(from: url)
        let reloadedVectors = await reloaded.vectors()
        XCTAssertNil(reloadedVectors, "a lexical-only file has no vectors")
        XCTAssertEqual(try IndexFile.read(from: url).fingerprint.modelIdentifier, "none")
        let hits = try await reloaded.search("guard let", mode: .lexical, k: 1)
        XCTAssertEqual(hits.first?.chunk.id, "b#optionals")
        let model = EmbeddingStore(embedding: try TestModel.shared())
        try await model.load(from: url)
        let statistics = try await model.replace(with: pages(true))
        XCTAssertEqual(statistics.reused, 0, "nothing to reuse from a lexical-only file")
        XCTAssertEqual(statistics.embedded, statistics.chunks)
    }

    func testReindexingReusesVectorsAndEditsReembedOnlyThemselves() async throws {
        let store = EmbeddingStore(embedding: try TestModel.shared())
        let first = try await store.replace(with: pages())
        XCTAssertEqual(first.embedded, first.chunks)
        let again = try await store.replace(with: pages())
        XCTAssertEqual(again.embedded, 0)
        XCTAssertEqual(again.reused, again.chunks)
        let edited = try await store.replace(with: pages(true))
        XCTAssertEqual(edited.embedded, 1)
        let fewer = try await store.replace(with: [pages()[0]])
        XCTAssertEqual(fewer.removed, 2)
        XCTAssertEqual(fewer.embedded, 0)
    }

    func testSaveLoadRoundTripAndSearch() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID()).index")
        defer { try? FileManager.default.removeItem(at: url) }
        let model = try TestModel.shared()
        let store = EmbeddingStore(embedding: model)
        _ = try await store.replace(with: pages())
        try await store.save(to: url)
        let loaded = EmbeddingStore(embedding: model)
        try await loaded.load(from: url)
        let stats = try await loaded.replace(with: pages())
        XCTAssertEqual(stats.embedded, 0, "vectors come back from the file")
        for mode in RetrievalMode.allCases {
            let hits = try await loaded.search("how do I unwrap an optional", mode: mode, k: 2)
            XCTAssertEqual(hits.first?.chunk.id, "b#optionals", "\(mode)")
        }
        let lexicalOnly = EmbeddingStore(embedding: nil)
        try await lexicalOnly.load(from: url)
        let lexicalHits = try await lexicalOnly.search("unwrap optional", mode: .lexical, k: 1)
        XCTAssertEqual(lexicalHits.first?.chunk.id, "b#optionals")
        do {
            _ = try await lexicalOnly.search("unwrap optional", mode: .semantic, k: 1)
            XCTFail("semantic search without a model must throw")
        } catch is RetrievalError {}
    }

    func testFollowUpThatRetrievesNothingIsRetriedWithThePreviousQuestion() async throws {
        let store = EmbeddingStore(embedding: nil)
        _ = try await store.replace(with: pages())
        let alone = try await store.search("and the other way?", mode: .lexical, k: 2)
        XCTAssertEqual(alone, [])
        let followUp = try await store.search("and the other way?", previousQuestion: "how do I unwrap optionals", mode: .lexical, k: 2)
        XCTAssertEqual(followUp.first?.chunk.id, "b#optionals")
        let direct = try await store.search("closures capture", previousQuestion: "how do I unwrap optionals", mode: .lexical, k: 1)
        XCTAssertEqual(direct.first?.chunk.id, "b#closures", "a follow-up that finds something is not mixed with the previous question")
    }

    func testForeignIndexFileMetadataIsATypedError() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("foreign-\(UUID()).index")
        defer { try? FileManager.default.removeItem(at: url) }
        var index = FlatIndex(dimension: 2)
        try index.add(id: "x", vector: [1, 0])
        try IndexFile.write(StoredIndex(index: index, fingerprint: IndexFingerprint(modelIdentifier: "m", dimension: 2, pooling: "mean", normalized: true, tokenizerHash: "t"), metadata: Data("nope".utf8)), to: url)
        do {
            try await EmbeddingStore(embedding: nil).load(from: url)
            XCTFail("expected an error")
        } catch RetrievalError.corruptStore {}
    }

    func testConcurrentSearchesWhileDocumentsChange() async throws {
        let store = EmbeddingStore(embedding: try TestModel.shared())
        _ = try await store.replace(with: pages())
        let changed = pages(true), fewer = [pages()[1]]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<6 { _ = try await store.replace(with: i % 2 == 0 ? changed : fewer) }
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<10 {
                        let hits = try await store.search("closures capture values", mode: .hybrid, k: 3)
                        XCTAssertEqual(hits.first?.chunk.id, "b#closures")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func testLateChunkingStoreTakesEverySpanFromTheChunker() async throws {
        let store = EmbeddingStore(embedding: try TestModel.shared(), lateChunking: true)
        let statistics = try await store.replace(with: pages())
        XCTAssertGreaterThan(statistics.embedded, 0)
        XCTAssertEqual(statistics.lateChunkingFallbacks, 0, "every chunk pooled over its own span")
    }

    func testLateChunkingVectorsAreUnitAndDifferFromPlainOnes() throws {
        let model = try TestModel.shared()
        let page = "# Banks\n\n## River\n\nWe walked along the bank of the river.\n\n## Money\n\nShe deposited cash at the bank."
        let spans = ["We walked along the bank of the river.", "She deposited cash at the bank."].map { page.range(of: $0)! }
        let late = try model.lateChunkVectors(for: page, spans: spans)
        XCTAssertEqual(late.count, 2)
        for v in late { XCTAssertEqual(Double(VectorMath.norm(v)), 1, accuracy: 1e-5) }
        let plain = try model.sentenceVector(for: "She deposited cash at the bank.")
        XCTAssertLessThan(VectorMath.cosineSimilarity(late[1], plain), 0.9999)
        XCTAssertGreaterThan(VectorMath.cosineSimilarity(late[1], plain), 0.5)
        // A text far longer than one window: every span still gets a vector.
        let long = String(repeating: "Filler words about nothing in particular. ", count: 300) + "The final sentence."
        let tail = try model.lateChunkVectors(for: long, spans: [long.range(of: "The final sentence.")!, long.startIndex..<long.index(long.startIndex, offsetBy: 10)])
        XCTAssertTrue(tail.allSatisfy { abs(VectorMath.norm($0) - 1) < 1e-5 })
        XCTAssertEqual(try model.lateChunkVectors(for: "", spans: ["".startIndex..<"".endIndex]), [[Float](repeating: 0, count: 384)])
    }

    func testStreamedLateChunkingEqualsTheWholeTokenListReference() throws {
        let model = try TestModel.shared()
        // Lengths around window and group boundaries (254 content tokens per window, stride 127,
        // 2 windows per call here so several groups are needed).
        let sentence = "Windows overlap by half, and each token keeps the vector from its most central window. "
        for repeats in [0, 1, 14, 15, 16, 30, 31, 47, 90] {
            let text = String(repeating: sentence, count: repeats) + "End."
            var spans = [Range<String.Index>]()
            var start = text.startIndex
            while start < text.endIndex {
                let end = text.index(start, offsetBy: 700, limitedBy: text.endIndex) ?? text.endIndex
                spans.append(start..<end)
                start = end
            }
            spans.append(text.startIndex..<text.startIndex)
            let streamed = try model.lateChunkVectors(for: text, spans: spans, windowsPerCall: 2)
            let reference = try model.lateChunkVectorsReference(for: text, spans: spans, windowsPerCall: 2)
            XCTAssertEqual(streamed.count, reference.count)
            for (a, b) in zip(streamed, reference) {
                XCTAssertEqual(a.count, b.count)
                for (x, y) in zip(a, b) { XCTAssertEqual(x, y, accuracy: 1e-6, "\(repeats) sentences") }
            }
            XCTAssertTrue(streamed.dropLast().allSatisfy { abs(VectorMath.norm($0) - 1) < 1e-5 }, "\(repeats) sentences")
        }
    }
}
