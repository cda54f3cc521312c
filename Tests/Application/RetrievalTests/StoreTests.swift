import Embeddings
import Foundation
import LinearAlgebra
import ModelTestSupport
import Retrieval
import Synchronization
import TestSupport
import VectorIndex
import XCTest

final class StoreTests: XCTestCase {
    func pages(_ edit: Bool = false) -> [Page] {
        [
            .init(
                source: "a.md",
                text:
                    "# Alpha\n\nIntro.\n\n## Sorting\n\nArrays sort with sorted(by:).\n\n## Filtering\n\nUse filter to keep matching items."
            ),
            .init(
                source: "b.md",
                text:
                    "# Beta\n\n## Optionals\n\nUnwrap optionals with if let\(edit ? " or guard let" : "").\n\n## Closures\n\nClosures capture values."
            ),
        ]
    }

    /// A lexical-only file has no vectors once loaded, and re-indexing without a model over a file
    /// with vectors makes it lexical-only instead of keeping vectors of other chunks.
    func testLexicalOnlyStoresKeepNoVectors() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lexical-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("x.index")
        let withVectors = EmbeddingStore(embedding: try TestModel.shared())
        _ = try withVectors.replace(with: pages())
        try withVectors.save(to: url)
        let lexical = EmbeddingStore(embedding: nil)
        try lexical.load(from: url)
        let loadedVectors = lexical.vectors()
        let loadedCount = try lexical.statistics().chunks
        XCTAssertEqual(loadedVectors?.count, loadedCount, "a file with vectors keeps them")
        _ = try lexical.replace(with: pages(true))
        let afterLexicalIndex = lexical.vectors()
        XCTAssertNil(afterLexicalIndex, "no vectors of the previous chunks")
        try lexical.save(to: url)
        let reloaded = EmbeddingStore(embedding: nil)
        try reloaded.load(from: url)
        let reloadedVectors = reloaded.vectors()
        XCTAssertNil(reloadedVectors, "a lexical-only file has no vectors")
        XCTAssertEqual(try IndexFile.read(from: url).fingerprint.modelIdentifier, "none")
        let hits = try reloaded.search("guard let", mode: .lexical, k: 1)
        XCTAssertEqual(hits.first?.chunk.id, "b#optionals")
        let model = EmbeddingStore(embedding: try TestModel.shared())
        try model.load(from: url)
        let statistics = try model.replace(with: pages(true))
        XCTAssertEqual(statistics.reused, 0, "nothing to reuse from a lexical-only file")
        XCTAssertEqual(statistics.embedded, statistics.chunks)
    }

    func testReindexingReusesVectorsAndEditsReembedOnlyThemselves() throws {
        let store = EmbeddingStore(embedding: try TestModel.shared())
        let first = try store.replace(with: pages())
        XCTAssertEqual(first.embedded, first.chunks)
        let again = try store.replace(with: pages())
        XCTAssertEqual(again.embedded, 0)
        XCTAssertEqual(again.reused, again.chunks)
        let edited = try store.replace(with: pages(true))
        XCTAssertEqual(edited.embedded, 1)
        let fewer = try store.replace(with: [pages()[0]])
        XCTAssertEqual(fewer.removed, 2)
        XCTAssertEqual(fewer.embedded, 0)
    }

    func testSaveLoadRoundTripAndSearch() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID()).index")
        defer { try? FileManager.default.removeItem(at: url) }
        let model = try TestModel.shared()
        let store = EmbeddingStore(embedding: model)
        _ = try store.replace(with: pages())
        try store.save(to: url)
        let loaded = EmbeddingStore(embedding: model)
        try loaded.load(from: url)
        let stats = try loaded.replace(with: pages())
        XCTAssertEqual(stats.embedded, 0, "vectors come back from the file")
        for mode in RetrievalMode.allCases {
            let hits = try loaded.search("how do I unwrap an optional", mode: mode, k: 2)
            XCTAssertEqual(hits.first?.chunk.id, "b#optionals", "\(mode)")
        }
        let lexicalOnly = EmbeddingStore(embedding: nil)
        try lexicalOnly.load(from: url)
        let lexicalHits = try lexicalOnly.search("unwrap optional", mode: .lexical, k: 1)
        XCTAssertEqual(lexicalHits.first?.chunk.id, "b#optionals")
        do {
            _ = try lexicalOnly.search("unwrap optional", mode: .semantic, k: 1)
            XCTFail("semantic search without a model must throw")
        } catch RetrievalError.noVectors {}
    }

    /// Another model's vectors are `VectorIndexError.fingerprintMismatch`, the one error every
    /// store throws for them (PostgresStoreTests checks the database store).
    func testAnotherModelsVectorsAreTheOneFingerprintError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mismatch-\(UUID()).index")
        defer { try? FileManager.default.removeItem(at: url) }
        let float = EmbeddingStore(embedding: try TestModel.shared())
        _ = try float.replace(with: pages())
        try float.save(to: url)
        let int8 = try XCTUnwrap(
            ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier, quantization: .int8))
        try int8.load()
        let other = EmbeddingStore(embedding: int8)
        try other.load(from: url)
        XCTAssertThrowsError(try other.search("how do I unwrap an optional", mode: .semantic, k: 1)) { error in
            guard case VectorIndexError.fingerprintMismatch(let expected, let actual) = error else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(expected.quantization, "int8")
            XCTAssertNil(actual.quantization)
        }
        XCTAssertEqual(
            try other.search("unwrap optional", mode: .lexical, k: 1).first?.chunk.id, "b#optionals",
            "lexical search needs no model")
    }

    func testFollowUpThatRetrievesNothingIsRetriedWithThePreviousQuestion() throws {
        let store = EmbeddingStore(embedding: nil)
        _ = try store.replace(with: pages())
        let alone = try store.search("and the other way?", mode: .lexical, k: 2)
        XCTAssertEqual(alone, [])
        let followUp = try store.search(
            "and the other way?", previousQuestion: "how do I unwrap optionals", mode: .lexical, k: 2)
        XCTAssertEqual(followUp.first?.chunk.id, "b#optionals")
        let direct = try store.search(
            "closures capture", previousQuestion: "how do I unwrap optionals", mode: .lexical, k: 1)
        XCTAssertEqual(
            direct.first?.chunk.id, "b#closures",
            "a follow-up that finds something is not mixed with the previous question")
    }

    func testForeignIndexFileMetadataIsATypedError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("foreign-\(UUID()).index")
        defer { try? FileManager.default.removeItem(at: url) }
        var index = FlatIndex(dimension: 2)
        try index.add(id: "x", vector: [1, 0])
        try IndexFile.write(
            StoredIndex(
                index: index,
                fingerprint: IndexFingerprint(
                    modelIdentifier: "m", dimension: 2, pooling: "mean", normalized: true, tokenizerHash: "t"),
                metadata: Data("nope".utf8)), to: url)
        do {
            try EmbeddingStore(embedding: nil).load(from: url)
            XCTFail("expected an error")
        } catch RetrievalError.corruptStore {}
    }

    func testConcurrentSearchesWhileDocumentsChange() throws {
        let store = EmbeddingStore(embedding: try TestModel.shared())
        _ = try store.replace(with: pages())
        let changed = pages(true)
        let fewer = [pages()[1]]
        // One thread re-indexes while four search: every search sees whole contents.
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            do {
                if worker == 0 {
                    for i in 0..<6 { _ = try store.replace(with: i % 2 == 0 ? changed : fewer) }
                } else {
                    for _ in 0..<10 {
                        let hits = try store.search("closures capture values", mode: .hybrid, k: 3)
                        if hits.first?.chunk.id != "b#closures" {
                            failures.withOrderedLock { $0.append("first hit \(hits.first?.chunk.id ?? "none")") }
                        }
                    }
                }
            } catch {
                failures.withOrderedLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withOrderedLock { $0 }, [])
    }

    /// A search during an indexing run answers from the previous contents without waiting for
    /// the run: it is made (on another thread) while the run reports its first progress.
    func testSearchAnswersWhileAnIndexingRunEmbeds() throws {
        let store = EmbeddingStore(embedding: try TestModel.shared())
        _ = try store.replace(with: pages())
        let before = try store.search("closures capture values", mode: .hybrid, k: 3)
        // More chunks than one batch of 32, so that progress is reported before the end.
        let larger = (0..<100).map {
            Page(source: "extra-\($0).md", text: "# Extra \($0)\n\nA page about topic number \($0) and nothing else.")
        }
        let during = Mutex<[Result<[RetrievalHit], any Error>]>([])
        let statistics = try store.replace(with: pages() + larger) { done, total in
            guard done < total, during.withOrderedLock({ $0.isEmpty }) else { return }
            during.withOrderedLock {
                $0.append(answerFromAnotherThread { try store.search("closures capture values", mode: .hybrid, k: 3) })
            }
        }
        XCTAssertEqual(statistics.embedded, 100)
        let answers = during.withOrderedLock { $0 }
        XCTAssertEqual(answers.count, 1, "the run reported progress before its end")
        XCTAssertEqual(try answers.first?.get(), before, "the previous contents, while the run was still embedding")
    }

    func testLateChunkingStoreTakesEverySpanFromTheChunker() throws {
        let store = EmbeddingStore(embedding: try TestModel.shared(), lateChunking: true)
        let statistics = try store.replace(with: pages())
        XCTAssertGreaterThan(statistics.embedded, 0)
        XCTAssertEqual(statistics.lateChunkingFallbacks, 0, "every chunk pooled over its own span")
    }

    func testLateChunkingVectorsAreUnitAndDifferFromPlainOnes() throws {
        let model = try TestModel.shared()
        let page =
            "# Banks\n\n## River\n\nWe walked along the bank of the river.\n\n## Money\n\nShe deposited cash at the bank."
        let spans = ["We walked along the bank of the river.", "She deposited cash at the bank."].map {
            page.range(of: $0)!
        }
        let late = try model.lateChunkVectors(for: page, spans: spans)
        XCTAssertEqual(late.count, 2)
        for v in late { XCTAssertEqual(Double(VectorMath.norm(v)), 1, accuracy: 1e-5) }
        let plain = try model.sentenceVector(for: "She deposited cash at the bank.")
        XCTAssertLessThan(VectorMath.cosineSimilarity(late[1], plain), 0.9999)
        XCTAssertGreaterThan(VectorMath.cosineSimilarity(late[1], plain), 0.5)
        // A text far longer than one window: every span still gets a vector.
        let long = String(repeating: "Filler words about nothing in particular. ", count: 300) + "The final sentence."
        let tail = try model.lateChunkVectors(
            for: long,
            spans: [
                long.range(of: "The final sentence.")!, long.startIndex..<long.index(long.startIndex, offsetBy: 10),
            ])
        XCTAssertTrue(tail.allSatisfy { abs(VectorMath.norm($0) - 1) < 1e-5 })
        XCTAssertEqual(
            try model.lateChunkVectors(for: "", spans: ["".startIndex..<"".endIndex]),
            [[Float](repeating: 0, count: 384)])
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
            XCTAssertTrue(
                streamed.dropLast().allSatisfy { abs(VectorMath.norm($0) - 1) < 1e-5 }, "\(repeats) sentences")
        }
    }
}
