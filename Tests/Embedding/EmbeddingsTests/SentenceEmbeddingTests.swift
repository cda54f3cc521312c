import Foundation
import ModelTestSupport
import TestSupport
import XCTest

@testable import Embeddings

/// `SentenceEmbedding` on the real default model: parity with sentence-transformers (the golden
/// fixtures), distances, neighbors against a brute-force ranking, and sharing across tasks.
final class SentenceEmbeddingTests: XCTestCase {
    struct Golden: Decodable {
        struct Case: Decodable {
            var name: String
            var text: String
            var vector: [Double]
        }
        var cases: [Case]
    }

    func embedding() throws -> SentenceEmbedding {
        SentenceEmbedding(contextualEmbedding: try TestModel.shared())
    }

    func golden() throws -> [Golden.Case] {
        try TestFixtures.decode(Golden.self, from: "golden/reference.json").cases
    }

    static func cosine(_ a: [Double], _ b: [Double]) -> Double {
        let dot = zip(a, b).reduce(0) { $0 + $1.0 * $1.1 }
        let na = a.reduce(0) { $0 + $1 * $1 }.squareRoot()
        let nb = b.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return dot / (na * nb)
    }

    func testFactoryServesEnglishAndNothingElse() throws {
        _ = try TestModel.shared()  // installed, so the factory needs no network
        let english = try XCTUnwrap(SentenceEmbedding.sentenceEmbedding(for: "en"))
        XCTAssertEqual(english.language, "en")
        XCTAssertEqual(english.dimension, 384)
        XCTAssertEqual(english.revision, 100)
        XCTAssertNotNil(SentenceEmbedding.sentenceEmbedding(for: "en-GB"))
        XCTAssertNil(SentenceEmbedding.sentenceEmbedding(for: "xx"))
        XCTAssertNil(SentenceEmbedding.sentenceEmbedding(for: ""))
        XCTAssertNotNil(ContextualEmbedding(language: "EN"))
        XCTAssertNil(ContextualEmbedding(language: "tlh"))
    }

    func testVectorsEqualSentenceTransformers() throws {
        let embedding = try embedding()
        let cases = try golden()
        XCTAssertGreaterThanOrEqual(cases.count, 150)
        let batched = try XCTUnwrap(embedding.vectors(for: cases.map(\.text)))
        var worst = 1.0
        for (c, vector) in zip(cases, batched) {
            XCTAssertEqual(vector.count, 384, c.name)
            worst = min(worst, Self.cosine(vector, c.vector))
        }
        XCTAssertGreaterThanOrEqual(worst, 0.99999, "worst cosine against sentence-transformers")
        // One at a time gives the batch's vectors (batching only groups the matrix products).
        for c in cases.prefix(5) {
            let single = try XCTUnwrap(embedding.vector(for: c.text))
            XCTAssertGreaterThanOrEqual(Self.cosine(single, c.vector), 0.99999, c.name)
            XCTAssertEqual(single.reduce(0) { $0 + $1 * $1 }, 1, accuracy: 1e-5, "unit length")
        }
    }

    func testDistanceIsOneMinusCosine() throws {
        let embedding = try embedding()
        let a = "The dog sleeps on the sofa."
        let b = "A puppy naps on the couch."
        let c = "Interest rates rose in March."
        let va = try XCTUnwrap(embedding.vector(for: a))
        let vb = try XCTUnwrap(embedding.vector(for: b))
        XCTAssertEqual(
            embedding.distance(between: a, and: b, distanceType: .cosine), 1 - Self.cosine(va, vb), accuracy: 1e-6)
        XCTAssertEqual(embedding.distance(between: a, and: a), 0, accuracy: 1e-6)
        XCTAssertLessThan(embedding.distance(between: a, and: b), embedding.distance(between: a, and: c))
        XCTAssertEqual(
            SentenceEmbedding.distance([0, 0], [1, 0], .cosine), 1, "a zero vector is orthogonal to everything")
    }

    func testNeighborsMatchABruteForceRanking() throws {
        let embedding = try embedding()
        let candidates = try golden().prefix(60).map(\.text)
        try embedding.add(candidates)
        try embedding.add(Array(candidates.prefix(10)))  // repeats are skipped
        XCTAssertEqual(embedding.count, Set(candidates).count)
        let question = "How do closures capture the values they use?"
        let neighbors = embedding.neighbors(for: question, maximumCount: 5, distanceType: .cosine)
        XCTAssertEqual(neighbors.count, 5)
        let q = try XCTUnwrap(embedding.vector(for: question))
        let unique = Array(Set(candidates))
        let all = try XCTUnwrap(embedding.vectors(for: unique))
        let expected = zip(unique, all).map { ($0.0, 1 - Self.cosine(q, $0.1)) }.sorted { $0.1 < $1.1 }.prefix(5)
        XCTAssertEqual(neighbors.map(\.0), expected.map(\.0))
        for (got, want) in zip(neighbors, expected) { XCTAssertEqual(got.1, want.1, accuracy: 1e-5) }
        XCTAssertEqual(neighbors.map(\.1), neighbors.map(\.1).sorted(), "nearest first")
        // The query itself is never its own neighbor; a vector query can return it. (A text
        // whose tokens no other candidate shares: "" and "\u{301}\u{308}\u{327}" both read as
        // [CLS] [SEP], and which of two equal vectors comes first is down to the last bit.)
        let model = try TestModel.shared()
        let ids = try candidates.map { try model.tokenize($0).ids }
        let first = try XCTUnwrap(
            candidates.indices.first { i in ids.filter { $0 == ids[i] }.count == 1 }.map { candidates[$0] })
        XCTAssertFalse(embedding.neighbors(for: first, maximumCount: 3).map(\.0).contains(first))
        let byVector = embedding.neighbors(for: try XCTUnwrap(embedding.vector(for: first)), maximumCount: 1)
        XCTAssertEqual(byVector.first?.0, first)
        XCTAssertEqual(byVector.first?.1 ?? 1, 0, accuracy: 1e-5)
        XCTAssertTrue(embedding.neighbors(for: question, maximumCount: 0).isEmpty)
        XCTAssertTrue(embedding.neighbors(for: [1, 2], maximumCount: 3).isEmpty, "wrong length")
        XCTAssertEqual(embedding.neighbors(for: question, maximumCount: 1000).count, embedding.count)
    }

    func testMaximumDistanceCutsTheNeighbors() throws {
        let embedding = try embedding()
        try embedding.add([
            "Arrays keep order.", "Sets keep unique values.", "Dictionaries map keys to values.",
            "Interest rates rose in March.",
        ])
        let question = "Which collection has no duplicates?"
        let all = embedding.neighbors(for: question, maximumCount: 4)
        XCTAssertEqual(all.count, 4)
        let bound = all[1].1
        let near = embedding.neighbors(for: question, maximumCount: 4, maximumDistance: bound)
        XCTAssertEqual(near.map(\.0), all.filter { $0.1 <= bound }.map(\.0))
        XCTAssertGreaterThanOrEqual(near.count, 2)
        XCTAssertTrue(embedding.neighbors(for: question, maximumCount: 4, maximumDistance: all[0].1 / 2).isEmpty)
        XCTAssertTrue(embedding.neighbors(for: question, maximumCount: 4, maximumDistance: -1).isEmpty)
        XCTAssertEqual(embedding.neighbors(for: question, maximumCount: 1, maximumDistance: 2).map(\.0), [all[0].0])
        let vector = try XCTUnwrap(embedding.vector(for: question))
        XCTAssertEqual(
            embedding.neighbors(for: vector, maximumCount: 4, maximumDistance: bound).map(\.0), near.map(\.0))
        var seen = [String]()
        embedding.enumerateNeighbors(for: question, maximumCount: 4, maximumDistance: bound) { candidate, _ in
            seen.append(candidate)
            return true
        }
        XCTAssertEqual(seen, near.map(\.0))
    }

    func testEnumerateNeighborsStopsWhenAsked() throws {
        let embedding = try embedding()
        try embedding.add([
            "Arrays keep order.", "Sets keep unique values.", "Dictionaries map keys to values.",
            "Tuples group values.",
        ])
        var seen = [String]()
        embedding.enumerateNeighbors(for: "Which collection has no duplicates?", maximumCount: 4) { candidate, _ in
            seen.append(candidate)
            return seen.count < 2
        }
        XCTAssertEqual(seen.count, 2)
        XCTAssertEqual(seen.first, "Sets keep unique values.")
        embedding.removeAllCandidates()
        XCTAssertEqual(embedding.count, 0)
        XCTAssertTrue(embedding.neighbors(for: "anything", maximumCount: 3).isEmpty)
    }

    func testAMissingModelGivesNilAndTheUnavailableDistance() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-model-\(UUID())")
        try FileManager.default.createDirectory(at: missing, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: missing) }
        let folder = try TestModel.folder()
        for name in ["config.json", "vocab.txt", "tokenizer_config.json", "modules.json", "sentence_bert_config.json"] {
            try FileManager.default.copyItem(
                at: folder.appendingPathComponent(name), to: missing.appendingPathComponent(name))
        }
        try Data("{}".utf8).write(to: missing.appendingPathComponent("model.safetensors"))  // unreadable weights
        let broken = SentenceEmbedding(contextualEmbedding: try ContextualEmbedding(contentsOf: missing))
        XCTAssertNil(broken.vector(for: "text"))
        XCTAssertNil(broken.vectors(for: ["a", "b"]))
        XCTAssertEqual(broken.distance(between: "a", and: "b"), SentenceEmbedding.unavailableDistance)
        XCTAssertTrue(broken.neighbors(for: "a", maximumCount: 2).isEmpty)
        XCTAssertThrowsError(try broken.add(["a"])) { XCTAssertTrue($0 is EmbeddingsError, "\($0)") }
        XCTAssertEqual(broken.count, 0)
    }

    /// One model and one SentenceEmbedding shared by many tasks at once: every task gets the
    /// vectors a single thread gets.
    func testOneModelSharedByConcurrentTasks() async throws {
        let model = try TestModel.shared()
        let sentences = try golden().prefix(24).map(\.text)
        let reference = try model.sentenceVectors(for: sentences)
        let shared = SentenceEmbedding(contextualEmbedding: model)
        try shared.add(sentences)
        let results = try await withThrowingTaskGroup(of: (Int, [Float], Double?).self) { group in
            for i in sentences.indices {
                group.addTask {
                    let result = try model.embeddingResult(for: sentences[i], language: "en")
                    let vector = result.meanPooled().normalizedToUnitLength
                    let nearest = shared.neighbors(
                        for: try XCTUnwrap(shared.vector(for: sentences[i])), maximumCount: 1
                    ).first?.1
                    return (i, vector, nearest)
                }
            }
            var out = [(Int, [Float], Double?)]()
            for try await item in group { out.append(item) }
            return out
        }
        XCTAssertEqual(results.count, sentences.count)
        for (i, vector, nearest) in results {
            XCTAssertLessThanOrEqual(largestDifference(vector, reference[i]).difference, 1e-5, "task \(i)")
            // Its own vector (or an identical one: several golden texts are only white space).
            XCTAssertEqual(nearest ?? 1, 0, accuracy: 1e-5, "task \(i)")
        }
    }

    /// How batch calls cut their strings: batches of `batchSize`, each into one group per thread.
    func testBatchGroups() {
        XCTAssertEqual(ContextualEmbedding.groups(count: 0, batchSize: 16, threads: 2), [])
        XCTAssertEqual(ContextualEmbedding.groups(count: 4, batchSize: 16, threads: 2), [0..<2, 2..<4])
        XCTAssertEqual(ContextualEmbedding.groups(count: 3, batchSize: 16, threads: 2), [0..<2, 2..<3])
        XCTAssertEqual(ContextualEmbedding.groups(count: 1, batchSize: 16, threads: 2), [0..<1])
        XCTAssertEqual(
            ContextualEmbedding.groups(count: 37, batchSize: 16, threads: 2),
            [0..<8, 8..<16, 16..<24, 24..<32, 32..<35, 35..<37])
        XCTAssertEqual(
            ContextualEmbedding.groups(count: 5, batchSize: 0, threads: 0), [0..<1, 1..<2, 2..<3, 3..<4, 4..<5])
        XCTAssertEqual(ContextualEmbedding.groups(count: 10, batchSize: 10, threads: 3), [0..<4, 4..<8, 8..<10])
    }
}
