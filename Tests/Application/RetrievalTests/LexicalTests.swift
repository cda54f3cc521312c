import Foundation
import Retrieval
import TestSupport
import XCTest

final class LexicalTests: XCTestCase {
    func testStemmerOnKnownWords() {
        let stemmer = EnglishStemmer()
        let expected = [
            "running": "run", "runs": "run", "caresses": "caress", "ponies": "poni", "ties": "tie",
            "cats": "cat", "closures": "closur", "capturing": "captur", "generously": "generous",
            "connection": "connect", "connected": "connect", "happiness": "happi", "hopping": "hop",
            "agreed": "agre", "sky": "sky", "news": "news", "gas": "gas", "optional": "option",
            "optionals": "option", "protocols": "protocol", "initializers": "initi", "is": "is",
        ]
        for (word, stem) in expected { XCTAssertEqual(stemmer.stem(word), stem, word) }
    }

    func testAnalyzerFoldsCaseDiacriticsAndStopWords() {
        XCTAssertEqual(Analyzer().terms("How do Closures CAPTURE values?"), ["closur", "captur", "valu"])
        XCTAssertEqual(Analyzer().terms("Café naïve"), ["cafe", "naiv"])
        XCTAssertEqual(Analyzer().terms(""), [])
        XCTAssertEqual(Analyzer().terms("the of and"), [])
    }

    func testBM25MatchesTheReferenceAndRanksRareTermsHigher() {
        let docs = [["grind", "french", "press"], ["grind", "v60"], ["grind", "espresso", "grind"], ["tea"]]
        let bm25 = BM25(documents: docs)
        let hits = bm25.search(["grind", "french", "press"])
        XCTAssertEqual(hits.first?.document, 0)
        XCTAssertEqual(hits.count, 3)
        for hit in hits {
            XCTAssertEqual(
                hit.score, bm25.referenceScore(["grind", "french", "press"], document: hit.document), accuracy: 1e-12)
        }
        XCTAssertGreaterThan(bm25.idf("french"), bm25.idf("grind"))
        XCTAssertEqual(bm25.search(["coffee"]).count, 0)
        XCTAssertEqual(BM25(documents: []).search(["x"]).count, 0)
    }

    func testBM25StoresCompactlyAndReadsBothFormats() throws {
        let analyzer = Analyzer()
        let texts = ["grind french press coffee", "grind v60", "espresso grind grind", "", "tea and café au lait"]
        let bm25 = BM25(documents: texts.map { analyzer.terms($0) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(bm25)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["k1", "b", "terms", "counts"])
        XCTAssertEqual(
            try encoder.encode(JSONDecoder().decode(BM25.self, from: data)), data, "deterministic round trip")
        func sameScores(_ other: BM25) {
            XCTAssertEqual(other.count, bm25.count)
            for query in [["grind"], ["french", "press"], ["cafe", "tea"], ["missing"]] {
                let a = bm25.search(query)
                let b = other.search(query)
                XCTAssertEqual(a.map(\.document), b.map(\.document))
                for (x, y) in zip(a, b) { XCTAssertEqual(x.score, y.score, accuracy: 1e-12) }
            }
        }
        sameScores(try JSONDecoder().decode(BM25.self, from: data))
        // The first format (every table as JSON), as session-1 index files hold it.
        let counts = texts.map { analyzer.terms($0).reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 } }
        let old: [String: Any] = [
            "k1": 1.2, "b": 0.75, "termCounts": counts, "lengths": counts.map { $0.values.reduce(0, +) },
            "documentFrequency": [String: Int](), "postings": [String: [Int]](),
        ]
        sameScores(try JSONDecoder().decode(BM25.self, from: JSONSerialization.data(withJSONObject: old)))
        // Damaged tables are decoding errors, not crashes.
        func damaged(_ words: [UInt32], terms: [String] = ["a", "b"]) -> Data {
            let table = words.map(\.littleEndian).withUnsafeBufferPointer { Data(buffer: $0) }
            return try! JSONSerialization.data(withJSONObject: [
                "k1": 1.2, "b": 0.75, "terms": terms, "counts": table.base64EncodedString(),
            ])
        }
        for bad in [
            damaged([5, 0, 1]), damaged([1, 2, 1]), damaged([1, 0, 0]), damaged([2, 0, 1, 0, 1]), damaged([UInt32.max]),
        ] {
            XCTAssertThrowsError(try JSONDecoder().decode(BM25.self, from: bad)) { XCTAssertTrue($0 is DecodingError) }
        }
        var odd = try XCTUnwrap(JSONSerialization.jsonObject(with: damaged([1, 0, 1])) as? [String: Any])
        odd["counts"] = Data([1, 2, 3]).base64EncodedString()
        XCTAssertThrowsError(try JSONDecoder().decode(BM25.self, from: JSONSerialization.data(withJSONObject: odd)))
        XCTAssertEqual(
            try JSONDecoder().decode(BM25.self, from: damaged([1, 1, 3, 0])).count, 2,
            "documents without terms are kept")
    }

    func testRelativeFloorAndNoSharedWordRetrievesNothing() {
        let chunks = (0..<4).map {
            Chunk(
                id: "p#s\($0)", source: "p.md", headings: [], title: "p",
                text: ["grind french press", "grind v60", "grind espresso grind", "tea"][$0])
        }
        let analyzer = Analyzer()
        let bm25 = BM25(documents: chunks.map { analyzer.terms($0.text) })
        let retriever = HybridRetriever()
        let lexical = retriever.lexicalHits("ideal grind for french press", bm25: bm25)
        XCTAssertEqual(lexical.map(\.document), [0], "grind-only chunks score under 25% of the best")
        XCTAssertEqual(
            retriever.retrieve("knitting wool", chunks: chunks, bm25: bm25, semantic: [(3, 0.9)], mode: .hybrid, k: 4),
            [])
        XCTAssertEqual(retriever.retrieve("grind", chunks: chunks, bm25: bm25, semantic: nil, mode: .lexical, k: 0), [])
    }

    func testOffTopicQuestionSharingAWordRetrievesNothingInHybridMode() throws {
        let chunks = (0..<3).map {
            Chunk(
                id: "p#s\($0)", source: "p.md", headings: [], title: "p",
                text: ["closures capture values", "a bite of syntax", "tea"][$0])
        }
        let analyzer = Analyzer()
        let bm25 = BM25(documents: chunks.map { analyzer.terms($0.text) })
        let retriever = HybridRetriever()
        // "bites" shares a stem with chunk 1, but nothing resembles the question.
        XCTAssertEqual(
            retriever.retrieve(
                "mosquito bites itchy", chunks: chunks, bm25: bm25, semantic: [(1, 0.19), (0, 0.1)], mode: .hybrid, k: 4
            ), [])
        XCTAssertEqual(
            retriever.retrieve("mosquito bites itchy", chunks: chunks, bm25: bm25, semantic: nil, mode: .lexical, k: 4)
                .map(\.chunk.id), ["p#s1"])
        let onTopic = retriever.retrieve(
            "syntax bites", chunks: chunks, bm25: bm25, semantic: [(1, 0.30), (0, 0.1)], mode: .hybrid, k: 4)
        XCTAssertEqual(onTopic.first?.chunk.id, "p#s1")
        // Settings stored by an older index file (no offTopicSimilarity key) keep the default.
        var old = try JSONSerialization.jsonObject(with: JSONEncoder().encode(RetrievalSettings())) as! [String: Any]
        old["offTopicSimilarity"] = nil
        old["lexicalWeight"] = 0.7
        let decoded = try JSONDecoder().decode(
            RetrievalSettings.self, from: JSONSerialization.data(withJSONObject: old))
        XCTAssertEqual(decoded.offTopicSimilarity, RetrievalSettings().offTopicSimilarity)
        XCTAssertEqual(decoded.lexicalWeight, 0.7)
    }

    func testHybridFusionOrderAndSectionDeduplication() {
        let chunks = [
            Chunk(id: "a#one", source: "a.md", headings: [], title: "a", text: "alpha beta"),
            Chunk(id: "a#one-2", source: "a.md", headings: [], title: "a", text: "alpha beta gamma"),
            Chunk(id: "b#two", source: "b.md", headings: [], title: "b", text: "alpha delta"),
        ]
        let analyzer = Analyzer()
        let bm25 = BM25(documents: chunks.map { analyzer.terms($0.text) })
        var settings = RetrievalSettings()
        settings.lexicalFloor = 0
        let hits = HybridRetriever(settings: settings).retrieve(
            "alpha beta", chunks: chunks, bm25: bm25,
            semantic: [(2, 0.9), (1, 0.5), (0, 0.1)], mode: .hybrid, k: 4)
        XCTAssertEqual(
            Set(hits.map { HybridRetriever.sectionID(of: $0.chunk.id) }).count, hits.count, "one hit per section")
        XCTAssertEqual(hits.count, 2)
        XCTAssertEqual(HybridRetriever.sectionID(of: "a#one-2"), "a#one")
        XCTAssertEqual(HybridRetriever.sectionID(of: "a#step-by-step"), "a#step-by-step")
        for mode in RetrievalMode.allCases {
            let r = HybridRetriever(settings: settings).retrieve(
                "alpha", chunks: chunks, bm25: bm25, semantic: [(2, 0.9)], mode: mode, k: 1)
            XCTAssertEqual(r.count, 1, "\(mode)")
        }
    }

    func testReciprocalRankFusionScoresAndOrder() {
        let chunks = [
            Chunk(id: "a#one", source: "a.md", headings: [], title: "a", text: "alpha beta"),
            Chunk(id: "b#two", source: "b.md", headings: [], title: "b", text: "alpha"),
            Chunk(id: "c#three", source: "c.md", headings: [], title: "c", text: "gamma delta"),
            Chunk(id: "d#four", source: "d.md", headings: [], title: "d", text: "epsilon"),
        ]
        let analyzer = Analyzer()
        let bm25 = BM25(documents: chunks.map { analyzer.terms($0.text) })
        var settings = RetrievalSettings()
        settings.fusion = .reciprocalRank
        settings.lexicalFloor = 0
        settings.offTopicSimilarity = 0
        settings.rrfK = 10
        // Lexical order for "alpha beta": a (both words), then b. Semantic order: c, b, a.
        let hits = HybridRetriever(settings: settings).retrieve(
            "alpha beta", chunks: chunks, bm25: bm25,
            semantic: [(2, 0.9), (1, 0.8), (0, 0.7)], mode: .hybrid, k: 4)
        func rrf(_ lexical: Int?, _ semantic: Int?) -> Double {
            (lexical.map { settings.lexicalWeight / (settings.rrfK + Double($0)) } ?? 0)
                + (semantic.map { settings.semanticWeight / (settings.rrfK + Double($0)) } ?? 0)
        }
        // b: lexical 2, semantic 2 → 0.4/12 + 0.6/12 = 0.0833; a: 1 and 3 → 0.4/11 + 0.6/13 = 0.0825;
        // c: semantic 1 only → 0.6/11 = 0.0545. d is in neither list.
        XCTAssertEqual(hits.map(\.chunk.id), ["b#two", "a#one", "c#three"])
        XCTAssertEqual(hits.map(\.lexicalRank), [2, 1, nil])
        XCTAssertEqual(hits.map(\.semanticRank), [2, 3, 1])
        for hit in hits {
            XCTAssertEqual(hit.score, rrf(hit.lexicalRank, hit.semanticRank), accuracy: 1e-12, hit.chunk.id)
        }
        // Relative-score fusion orders the same lists differently: it is a different branch.
        settings.fusion = .relativeScore
        let relative = HybridRetriever(settings: settings).retrieve(
            "alpha beta", chunks: chunks, bm25: bm25,
            semantic: [(2, 0.9), (1, 0.8), (0, 0.7)], mode: .hybrid, k: 4)
        XCTAssertNotEqual(relative.map(\.score), hits.map(\.score))
    }

    func testContextBudgetKeepsTopHitAndOnlyWhatFits() {
        func hit(_ id: String, _ length: Int) -> RetrievalHit {
            RetrievalHit(
                chunk: Chunk(
                    id: id, source: "s", headings: [], title: "t", text: String(repeating: "x", count: length)),
                score: 1, lexicalRank: 1, semanticRank: nil)
        }
        let builder = ContextBuilder(budget: 1_400)
        XCTAssertEqual(
            builder.select([hit("big", 2_000), hit("small", 10)]).map(\.chunk.id), ["big"],
            "top hit always in, nothing after an over-budget top")
        XCTAssertEqual(builder.select([hit("a", 600), hit("b", 900), hit("c", 700)]).map(\.chunk.id), ["a", "c"])
        XCTAssertEqual(builder.select([]).count, 0)
        let included = builder.select([hit("a", 600)])
        let prompt = builder.prompt(
            question: "Q?", included: included,
            history: [
                .init(question: "q1", answer: "a1"), .init(question: "q2", answer: "a2"),
                .init(question: "q3", answer: "a3"),
            ])
        XCTAssertFalse(prompt.contains("q1"), "only the last two exchanges")
        XCTAssertTrue(prompt.contains("q2") && prompt.contains("q3") && prompt.contains("QUESTION: Q?"))
        let tight = ContextBuilder(budget: 1_400, windowTokens: 300, answerTokens: 100)
        let small = tight.prompt(
            question: "Q?", included: included,
            history: [.init(question: String(repeating: "h", count: 400), answer: "a")])
        XCTAssertLessThanOrEqual((small.count + 3) / 4 + 100, 300 + 160, "history dropped first to fit the window")
        XCTAssertFalse(small.contains("hhhh"))
    }

    func testEvaluationRules() {
        let c = EvaluationSet.Case(question: "q", expected: ["guide#closures"])
        XCTAssertTrue(EvaluationSet.passes(c, hits: ["x", "guide#closures-2"], k: 2))
        XCTAssertFalse(EvaluationSet.passes(c, hits: ["x", "y", "guide#closures"], k: 2))
        let none = EvaluationSet.Case(question: "q", expected: [])
        XCTAssertTrue(EvaluationSet.passes(none, hits: [], k: 4))
        XCTAssertFalse(EvaluationSet.passes(none, hits: ["a"], k: 4))
    }
}
