import Embeddings
import Foundation
import LinearAlgebra
import ModelTestSupport
import Retrieval
import Synchronization
import TestSupport
import VectorIndex
import XCTest

@testable import PostgresStorage

extension TestServer {
    /// Runs raw SQL (test set-up only: roles, tampering) over libpq.
    @discardableResult
    static func sql(_ statement: String, _ parameters: [String?] = [], url: String? = nil) throws -> [[String?]] {
        try PostgresConnection(url ?? self.url()).execute(statement, parameters).values
    }

    /// The server's URL with another user name.
    static func url(asUser user: String) throws -> String {
        let base = try url()
        guard var components = URLComponents(string: base) else { return base }
        var items = (components.queryItems ?? []).filter { $0.name != "user" }
        items.append(URLQueryItem(name: "user", value: user))
        components.queryItems = items
        return components.string ?? base
    }
}

/// The PostgreSQL store against the file store on the built-in corpus, and against hostile input.
final class PostgresStoreTests: XCTestCase {
    static let corpus = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")

    /// A store on fresh tables named `prefix`.
    func freshStore(_ prefix: String, embedding: ContextualEmbedding? = nil) throws -> PostgresStore {
        let store = try PostgresStore(connection: try TestServer.url(), embedding: embedding, tablePrefix: prefix)
        try store.drop()
        return store
    }

    /// The file store and the PostgreSQL store, each indexed once from the built-in corpus.
    private static let built = Mutex<(EmbeddingStore, PostgresStore)?>(nil)

    func builtInStores() throws -> (EmbeddingStore, PostgresStore) {
        if let stores = Self.built.withOrderedLock({ $0 }) { return stores }
        let model = try TestModel.shared()
        let file = EmbeddingStore(embedding: model)
        _ = try file.index(folder: Self.corpus)
        let postgres = try freshStore("parity", embedding: model)
        let (statistics, problems) = try postgres.index(folder: Self.corpus)
        XCTAssertEqual(problems, [])
        let fileCount = try file.statistics().chunks
        XCTAssertEqual(statistics.chunks, fileCount)
        XCTAssertEqual(statistics.embedded, statistics.chunks)
        Self.built.withOrderedLock { $0 = (file, postgres) }
        return (file, postgres)
    }

    func testExactSemanticTopKEqualsTheFileIndex() throws {
        let (file, postgres) = try builtInStores()
        let fileCount = try file.statistics().chunks
        XCTAssertEqual(try postgres.statistics().chunks, fileCount)
        let set = try EvaluationSet(contentsOf: TestFixtures.folder.appendingPathComponent("eval/swift-lessons.json"))
        var compared = 0
        for c in set.cases {
            let ours = try file.semanticCandidates(c.question, count: 10)
            let theirs = try postgres.semanticCandidates(c.question, count: 10)
            XCTAssertEqual(theirs.count, 10)
            for (a, b) in zip(ours, theirs) where a.document != b.document {
                // Ties aside: a swapped pair must score the same to float precision.
                XCTAssertEqual(a.score, b.score, accuracy: 1e-6, "\(c.question): \(a) vs \(b)")
            }
            for (a, b) in zip(ours, theirs) { XCTAssertEqual(a.score, b.score, accuracy: 1e-5, c.question) }
            compared += 1
        }
        XCTAssertGreaterThanOrEqual(compared, 70)
    }

    func testLexicalBM25InTheDatabaseEqualsTheFileStore() throws {
        let (file, postgres) = try builtInStores()
        for question in [
            "How do I unwrap an optional safely?", "closures capture values",
            "protocol extension default implementation", "zebra",
        ] {
            let expected = HybridRetriever().applyingLexicalFloor(
                try file.search(question, mode: .lexical, k: 50).enumerated().map { ($0.offset, $0.element.score) })
            let hits = try postgres.search(question, mode: .lexical, k: 50)
            let fileHits = try file.search(question, mode: .lexical, k: 50)
            XCTAssertEqual(hits.map(\.chunk.id), fileHits.map(\.chunk.id), question)
            for (a, b) in zip(hits, fileHits) {
                XCTAssertEqual(a.score, b.score, accuracy: 1e-9 * max(1, b.score), question)
            }
            XCTAssertEqual(hits.count, expected.count > 0 ? fileHits.count : 0)
        }
    }

    func testHybridRecallMatchesTheFileStore() throws {
        let (file, postgres) = try builtInStores()
        let set = try EvaluationSet(contentsOf: TestFixtures.folder.appendingPathComponent("eval/swift-lessons.json"))
        var fileResults = [[String]]()
        for c in set.cases { fileResults.append(try file.search(c.question, mode: .hybrid, k: 4).map(\.chunk.id)) }
        var i = 0
        let fileRecall =
            set.recall(ks: [4]) { _ in
                defer { i += 1 }
                return fileResults[i]
            }.recall[4] ?? 0
        let postgresRecall =
            try set.recall(ks: [4]) { try postgres.search($0, mode: .hybrid, k: 4).map(\.chunk.id) }.recall[4] ?? 0
        print(String(format: "hybrid recall@4: file %.3f, PostgreSQL %.3f", fileRecall, postgresRecall))
        XCTAssertEqual(postgresRecall, fileRecall, accuracy: 0.01)
        XCTAssertGreaterThanOrEqual(postgresRecall, 0.90)
    }

    func testHNSWRecallAgainstExact() throws {
        let (_, postgres) = try builtInStores()
        try postgres.buildHNSWIndex()
        defer { try? postgres.dropHNSWIndex() }
        let set = try EvaluationSet(contentsOf: TestFixtures.folder.appendingPathComponent("eval/swift-lessons.json"))
        var found = 0
        var wanted = 0
        for c in set.cases {
            try postgres.setVectorSearch(.exact)
            let exact = Set(try postgres.semanticCandidates(c.question, count: 10).map(\.document))
            try postgres.setVectorSearch(.hnsw(efSearch: 40))
            let approximate = Set(try postgres.semanticCandidates(c.question, count: 10).map(\.document))
            found += exact.intersection(approximate).count
            wanted += exact.count
        }
        try postgres.setVectorSearch(.exact)
        let recall = Double(found) / Double(wanted)
        print(String(format: "pgvector HNSW recall@10 against exact: %.4f over %d questions", recall, set.cases.count))
        XCTAssertGreaterThanOrEqual(recall, 0.98)
    }

    func pages(_ variant: Int) -> [Page] {
        var pages = [
            Page(
                source: "a.md",
                text:
                    "# Alpha\n\nClosures capture the values they use.\n\n## Escaping\n\nAn escaping closure outlives the call."
            ),
            Page(source: "b.md", text: "# Beta\n\nStructs are value types; classes are reference types."),
            Page(source: "c.md", text: "# Gamma\n\nActors protect their mutable state from data races."),
        ]
        if variant == 1 {
            pages[1].text = "# Beta\n\nStructs are copied on assignment; classes are shared."
            pages.remove(at: 2)
        }
        return pages
    }

    func testIncrementalIndexingReusesRemovesAndNeverMixesModels() throws {
        let model = try TestModel.shared()
        let store = try freshStore("incremental", embedding: model)
        let first = try store.replace(with: pages(0))
        XCTAssertEqual(first.chunks, 4)
        XCTAssertEqual(first.embedded, 4)
        let again = try store.replace(with: pages(0))
        XCTAssertEqual(again.embedded, 0, "an unchanged corpus embeds nothing")
        XCTAssertEqual(again.reused, 4)
        let changed = try store.replace(with: pages(1))
        XCTAssertEqual(changed.chunks, 3)
        XCTAssertEqual(changed.embedded, 1, "only the edited chunk")
        XCTAssertEqual(changed.reused, 2)
        XCTAssertEqual(changed.removed, 1)
        XCTAssertEqual(try store.statistics().chunks, 3)
        XCTAssertEqual(
            try TestServer.sql("SELECT count(*) FROM incremental_terms WHERE chunk_id LIKE 'c#%'").first?.first, "0",
            "terms of a removed page go too")
        XCTAssertEqual(
            try store.search("mutable state data races", mode: .hybrid, k: 2).map(\.chunk.id), [],
            "the removed page is not found")
        XCTAssertEqual(try store.search("copied on assignment", mode: .hybrid, k: 1).first?.chunk.id, "b#beta")

        // Another model's fingerprint: a typed error, and nothing changes.
        try TestServer.sql(
            "UPDATE incremental_meta SET value = replace(value, 'all-MiniLM-L6-v2', 'other-model') WHERE key = 'fingerprint'"
        )
        XCTAssertThrowsError(try store.replace(with: pages(0))) {
            guard case VectorIndexError.fingerprintMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try store.search("closures", mode: .semantic, k: 1)) {
            guard case VectorIndexError.fingerprintMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try store.statistics().chunks, 3)
        XCTAssertEqual(
            try store.search("copied on assignment", mode: .lexical, k: 1).first?.chunk.id, "b#beta",
            "lexical search needs no model")
    }

    /// Late chunking in the database: the same folder indexed into the file store and into
    /// PostgreSQL gives every chunk the same vector, bit for bit (both run one indexing pipeline),
    /// vectors that plain chunking does not give; a second run reuses them all, and switching late
    /// chunking off re-embeds every chunk (the content hashes include the page).
    func testLateChunkingGivesTheFileStoresVectors() throws {
        let model = try TestModel.shared()
        let folder = TestFixtures.folder.appendingPathComponent("corpus/licoes-cozinha")
        let file = EmbeddingStore(embedding: model, lateChunking: true)
        let fileStatistics = try file.index(folder: folder).0
        let url = try TestServer.url()
        let postgres = try PostgresStore(connection: url, embedding: model, tablePrefix: "late", lateChunking: true)
        try postgres.drop()
        let (statistics, problems) = try postgres.index(folder: folder)
        XCTAssertEqual(problems, [])
        XCTAssertEqual(statistics, fileStatistics)
        XCTAssertGreaterThan(statistics.chunks, 12, "pages of several chunks")
        let fileVectors = try XCTUnwrap(file.vectors())
        let rows = try TestServer.sql("SELECT id, embedding::text FROM late_chunks ORDER BY position")
        XCTAssertEqual(rows.map { $0[0] }, file.chunks.map(\.id))
        func vector(_ text: String?) -> [Float] {
            (text ?? "").dropFirst().dropLast().split(separator: ",").compactMap { Float(String($0)) }
        }
        for row in rows {
            let id = try XCTUnwrap(row[0])
            XCTAssertEqual(vector(row[1]), fileVectors.vector(for: id), id)
        }
        let plain = EmbeddingStore(embedding: model)
        _ = try plain.index(folder: folder)
        let plainVectors = try XCTUnwrap(plain.vectors())
        XCTAssertTrue(
            rows.contains { vector($0[1]) != plainVectors.vector(for: $0[0] ?? "") },
            "late chunking is not plain chunking")
        XCTAssertEqual(try postgres.index(folder: folder).0.embedded, 0)
        let switched = try PostgresStore(connection: url, embedding: model, tablePrefix: "late")
        let off = try switched.index(folder: folder).0
        XCTAssertEqual(off.embedded, statistics.chunks)
        for row in try TestServer.sql("SELECT id, embedding::text FROM late_chunks") {
            XCTAssertEqual(
                vector(row[1]), plainVectors.vector(for: row[0] ?? ""), "plain vectors once late chunking is off")
        }
    }

    func testInt8VectorsAreKeptApartFromFloat32Ones() throws {
        _ = try TestModel.shared()  // installs the model
        let int8 = try XCTUnwrap(
            ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier, quantization: .int8))
        try int8.load()
        let store = try freshStore("quantized", embedding: int8)
        XCTAssertEqual(try store.replace(with: pages(0)).embedded, 4)
        XCTAssertEqual(try store.fingerprint()?.quantization, "int8")
        XCTAssertEqual(
            try store.search("are structs value types or reference types", mode: .semantic, k: 1).first?.chunk.id,
            "b#beta")
        // The float32 encoder may neither add to these vectors nor ask them questions.
        let float = try PostgresStore(
            connection: try TestServer.url(), embedding: try TestModel.shared(), tablePrefix: "quantized")
        XCTAssertThrowsError(try float.replace(with: pages(0))) {
            guard case VectorIndexError.fingerprintMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try float.search("closures", mode: .semantic, k: 1)) {
            guard case VectorIndexError.fingerprintMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try store.statistics().chunks, 4)
    }

    func testHostileIdsAndTextsAreStoredAsTheyAre() throws {
        let model = try TestModel.shared()
        let store = try freshStore("hostile", embedding: model)
        let injection = "'); DROP TABLE hostile_chunks; --"
        let megabyte = String(repeating: "Long text about vectors and quotes ' \" \\ here. ", count: 22_000)
        let hostile = [
            Page(
                source: "quote's \"dir\"/page'; --.md",
                text:
                    "# It's \"quoted\" \(injection)\n\nA body with 'single' and \"double\" quotes, backslashes \\ \\\\ and a tab\t."
            ),
            Page(source: "nul.md", text: "# Nul\n\nBefore\u{0}after the NUL byte, still searchable."),
            Page(source: "unicode.md", text: "# Ünïcödé 🧪\n\nΣίσυφος, 日本語, עברית — \u{202E}reversed\u{202C}."),
        ]
        _ = try store.replace(with: hostile)
        XCTAssertEqual(
            try TestServer.sql("SELECT to_regclass('hostile_chunks') IS NOT NULL").first?.first, "t",
            "the table is still there")
        let quoted = try XCTUnwrap(try store.search("single and double quotes backslashes", mode: .lexical, k: 1).first)
        XCTAssertEqual(quoted.chunk.source, "quote's \"dir\"/page'; --.md")
        XCTAssertEqual(quoted.chunk.headings, ["It's \"quoted\" \(injection)"])
        XCTAssertTrue(quoted.chunk.text.contains("backslashes \\ \\\\ and a tab\t."))
        let nul = try XCTUnwrap(try store.search("NUL byte searchable", mode: .hybrid, k: 1).first)
        XCTAssertEqual(nul.chunk.id, "nul#nul")
        XCTAssertEqual(
            nul.chunk.text, "Nul\n\nBeforeafter the NUL byte, still searchable.",
            "PostgreSQL text holds no NUL: it is dropped, nothing else")
        XCTAssertEqual(try store.search("日本語", mode: .lexical, k: 1).first?.chunk.source, "unicode.md")
        XCTAssertEqual(
            try store.replace(with: hostile).embedded, 0, "hashes of the original texts: nothing re-embedded")
        // A 1 MB page (about 1,600 chunks; lexical-only, so the test does not wait on the encoder).
        let lexical = try freshStore("hostile_big")
        let big = try lexical.replace(with: [
            Page(source: "big.md", text: "# Big\n\n" + megabyte + "The last sentence mentions zeppelins.")
        ])
        XCTAssertGreaterThan(big.chunks, 1_000, "the 1 MB page is chunked")
        XCTAssertEqual(try lexical.statistics().chunks, big.chunks)
        XCTAssertTrue(
            try lexical.search("zeppelins", mode: .lexical, k: 1).first?.chunk.text.hasSuffix("zeppelins.") ?? false)
        XCTAssertThrowsError(try lexical.search("zeppelins", mode: .semantic, k: 1)) {
            guard case RetrievalError.noVectors = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(
            try PostgresStore(connection: try TestServer.url(), embedding: nil, tablePrefix: "x; DROP TABLE y")
        ) {
            guard case PostgresStoreError.invalidTablePrefix = $0 else { return XCTFail("\($0)") }
        }
    }

    func testConcurrentIndexRunsWaitForEachOther() throws {
        let model = try TestModel.shared()
        _ = try freshStore("concurrent")
        let url = try TestServer.url()
        let outcomes = Mutex<[Result<IndexingStatistics, any Error>]>([])
        let corpus = pages(0)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let result = Result {
                try PostgresStore(connection: url, embedding: model, tablePrefix: "concurrent").replace(with: corpus)
            }
            outcomes.withOrderedLock { $0.append(result) }
        }
        let statistics = try outcomes.withOrderedLock { $0 }.map { try $0.get() }
        XCTAssertEqual(
            statistics.map(\.embedded).sorted(), [0, 4], "the second run waited and reused the first one's vectors")
        XCTAssertEqual(
            try PostgresStore(connection: url, embedding: model, tablePrefix: "concurrent").statistics().chunks, 4)
    }

    /// A search on the same store object during an indexing run answers from the last committed
    /// contents without waiting for the run: it is made (on another thread) while the run
    /// reports its first progress, inside the run's transaction.
    func testSearchOnTheSameStoreAnswersDuringAnIndexingRun() throws {
        let store = try freshStore("during", embedding: try TestModel.shared())
        _ = try store.replace(with: pages(0))
        let before = try store.search("closures capture values", mode: .hybrid, k: 3)
        XCTAssertFalse(before.isEmpty)
        let more = (0..<100).map {
            Page(source: "more-\($0).md", text: "# More \($0)\n\nA page about topic number \($0) and nothing else.")
        }
        let during = Mutex<[Result<[RetrievalHit], any Error>]>([])
        let statistics = try store.replace(with: pages(0) + more) { done, total in
            guard done < total, during.withOrderedLock({ $0.isEmpty }) else { return }
            during.withOrderedLock {
                $0.append(answerFromAnotherThread { try store.search("closures capture values", mode: .hybrid, k: 3) })
            }
        }
        XCTAssertEqual(statistics.embedded, 100)
        let answers = during.withOrderedLock { $0 }
        XCTAssertEqual(answers.count, 1, "the run reported progress before its end")
        XCTAssertEqual(try answers.first?.get(), before, "the committed contents, while the run was still embedding")
        XCTAssertEqual(try store.statistics().chunks, 104)
        XCTAssertEqual(try store.statistics().chunks, 104)
    }

    func testConnectionErrorsAreTyped() throws {
        XCTAssertThrowsError(
            try PostgresStore(connection: "postgresql:///nowhere?host=/nonexistent-socket-dir", embedding: nil)
        ) {
            guard case PostgresStoreError.cannotConnect = $0 else { return XCTFail("\($0)") }
        }
        // A role that may connect but not create tables, nor the extension in a fresh database.
        _ = try? TestServer.sql("DROP DATABASE IF EXISTS no_vector_db")
        try TestServer.sql(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader') THEN CREATE ROLE reader LOGIN; END IF; END $$"
        )
        try TestServer.sql("CREATE DATABASE no_vector_db")
        let reader = try TestServer.url(asUser: "reader")
        let store = try PostgresStore(connection: reader, embedding: nil, tablePrefix: "denied")
        XCTAssertThrowsError(try store.replace(with: pages(0))) {
            guard case PostgresStoreError.permissionDenied = $0 else { return XCTFail("\($0)") }
        }
        let noVector = reader.replacingOccurrences(of: "embeddings_test", with: "no_vector_db")
        XCTAssertThrowsError(try PostgresStore(connection: noVector, embedding: nil)) {
            guard case PostgresStoreError.vectorExtensionMissing = $0 else { return XCTFail("\($0)") }
        }
    }
}
