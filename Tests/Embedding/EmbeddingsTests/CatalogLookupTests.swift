import Foundation
import XCTest

@testable import Embeddings

/// The Apple-shaped look-ups that read only the catalog (no model is installed or loaded):
/// scripts, `contextualEmbeddings(forValues:)`, sentence-embedding revisions, and the
/// distance cut of `neighbors(…maximumDistance:…)`.
final class CatalogLookupTests: XCTestCase {
    typealias Script = ContextualEmbedding.Script
    let miniLM = "sentence-transformers/all-MiniLM-L6-v2"
    let e5 = "intfloat/multilingual-e5-small"

    func testScriptRawValuesAreISO15924Codes() {
        XCTAssertEqual(Script.latin.rawValue, "Latn")
        XCTAssertEqual(Script.cyrillic.rawValue, "Cyrl")
        XCTAssertEqual(Script.simplifiedChinese.rawValue, "Hans")
        XCTAssertEqual(Script.traditionalChinese.rawValue, "Hant")
        XCTAssertEqual(Script(rawValue: "Jpan"), .japanese)
        XCTAssertEqual(Script("Deva"), .devanagari)
        XCTAssertEqual(Script.arabic.description, "Arab")
    }

    func testScriptsEncodeAsTheirCodes() throws {
        let data = try JSONEncoder().encode([Script.latin, .cyrillic])
        XCTAssertEqual(String(decoding: data, as: UTF8.self), #"["Latn","Cyrl"]"#)
        XCTAssertEqual(try JSONDecoder().decode([Script].self, from: Data(#"["Hans"]"#.utf8)), [.simplifiedChinese])
    }

    func testScriptsOfALanguage() {
        XCTAssertEqual(Script.scripts(forLanguage: "ru"), [.cyrillic])
        XCTAssertEqual(Script.scripts(forLanguage: "EN-gb"), [.latin])
        XCTAssertEqual(Script.scripts(forLanguage: "sr"), [.cyrillic, .latin])
        XCTAssertEqual(Script.scripts(forLanguage: "zh_TW"), [.simplifiedChinese, .traditionalChinese])
        XCTAssertEqual(Script.scripts(forLanguage: "hi"), [.devanagari])
        XCTAssertEqual(Script.scripts(forLanguage: "tlh"), [])
        XCTAssertEqual(Script.scripts(forLanguage: ""), [])
    }

    func testEveryLanguageOfEveryModelHasAScript() {
        for model in ModelCatalog.known {
            for language in model.languages {
                XCTAssertFalse(Script.scripts(forLanguage: language).isEmpty, "\(model.identifier): \(language)")
            }
        }
    }

    func testModelScriptsFollowTheirLanguages() throws {
        XCTAssertEqual(ModelCatalog.defaultModel.scripts, [.latin])
        XCTAssertEqual(ContextualEmbedding(language: "en")?.scripts, [.latin])
        let multilingual = try XCTUnwrap(ContextualEmbedding(modelIdentifier: e5)).scripts
        XCTAssertEqual(multilingual.first, .latin, "af comes first")
        XCTAssertEqual(Set(multilingual).count, multilingual.count, "each script once")
        for script in [
            Script.cyrillic, .arabic, .devanagari, .japanese, .korean, .thai, .simplifiedChinese, .traditionalChinese,
            .greek, .hebrew,
        ] {
            XCTAssertTrue(multilingual.contains(script), script.rawValue)
        }
        XCTAssertFalse(multilingual.contains(.cherokee))
        XCTAssertFalse(multilingual.contains(.undetermined))
    }

    func testInitWithScriptPicksTheDefaultModelOfThatScript() {
        XCTAssertEqual(ContextualEmbedding(script: .latin)?.modelIdentifier, miniLM)
        XCTAssertEqual(ContextualEmbedding(script: .cyrillic)?.modelIdentifier, e5)
        XCTAssertEqual(ContextualEmbedding(script: .simplifiedChinese)?.modelIdentifier, e5)
        XCTAssertEqual(ContextualEmbedding(script: .han)?.modelIdentifier, e5, "Hani: either Chinese script")
        XCTAssertEqual(ContextualEmbedding(script: Script("Arab"))?.modelIdentifier, e5)
        XCTAssertNil(ContextualEmbedding(script: .cherokee))
        XCTAssertNil(ContextualEmbedding(script: .undetermined))
        XCTAssertNil(ContextualEmbedding(script: Script("latn")), "codes are matched exactly")
    }

    func identifiers(_ values: [ContextualEmbedding.Key: Any]) -> [String] {
        ContextualEmbedding.contextualEmbeddings(forValues: values).map(\.modelIdentifier)
    }

    func testContextualEmbeddingsForValues() {
        XCTAssertEqual(identifiers([:]), [miniLM, e5])
        XCTAssertEqual(identifiers([.languages: ["en"]]), [miniLM, e5], "both serve English, the default first")
        XCTAssertEqual(identifiers([.languages: ["en", "ru"]]), [e5], "every language must be served")
        XCTAssertEqual(identifiers([.languages: ["tlh"]]), [])
        XCTAssertEqual(identifiers([.scripts: [Script.latin]]), [miniLM, e5])
        XCTAssertEqual(identifiers([.scripts: [Script.latin, .cyrillic]]), [e5])
        XCTAssertEqual(identifiers([.scripts: ["Cyrl"]]), [e5], "ISO 15924 codes as strings")
        XCTAssertEqual(identifiers([.revision: 100]), [miniLM])
        XCTAssertEqual(identifiers([.revision: 300, .languages: ["ja"]]), [e5])
        XCTAssertEqual(identifiers([.revision: 100, .languages: ["ja"]]), [])
        XCTAssertEqual(identifiers([.revision: 7]), [])
    }

    func testContextualEmbeddingsForValuesOfTheWrongTypeOrAnUnknownKeyMatchNothing() {
        XCTAssertEqual(identifiers([.languages: "en"]), [], "a language list, not a string")
        XCTAssertEqual(identifiers([.revision: "100"]), [])
        XCTAssertEqual(identifiers([.scripts: 3]), [])
        XCTAssertEqual(identifiers([ContextualEmbedding.Key(rawValue: "language"): ["en"]]), [])
    }

    func testSentenceEmbeddingRevisions() {
        XCTAssertEqual(SentenceEmbedding.currentSentenceEmbeddingRevision(for: "en"), 100)
        XCTAssertEqual(SentenceEmbedding.currentSentenceEmbeddingRevision(for: "en-US"), 100)
        XCTAssertEqual(SentenceEmbedding.currentSentenceEmbeddingRevision(for: "ru"), 300)
        XCTAssertEqual(SentenceEmbedding.currentSentenceEmbeddingRevision(for: "tlh"), 0)
        XCTAssertEqual(SentenceEmbedding.supportedSentenceEmbeddingRevisions(for: "en"), IndexSet([100, 300]))
        XCTAssertEqual(SentenceEmbedding.supportedSentenceEmbeddingRevisions(for: "ru"), IndexSet([300]))
        XCTAssertEqual(SentenceEmbedding.supportedSentenceEmbeddingRevisions(for: "tlh"), IndexSet())
        // A revision no model serving the language has: nil before anything is installed.
        XCTAssertNil(SentenceEmbedding.sentenceEmbedding(for: "ru", revision: 100))
        XCTAssertNil(SentenceEmbedding.sentenceEmbedding(for: "en", revision: 7))
    }

    func testMaximumDistanceKeepsTheLeadingNeighborsWithinIt() {
        let neighbors = [("a", 0.1), ("b", 0.25), ("c", 0.25), ("d", 0.6)]
        XCTAssertEqual(
            SentenceEmbedding.within(0.25, neighbors).map(\.0), ["a", "b", "c"], "the bound itself is within")
        XCTAssertEqual(SentenceEmbedding.within(0.05, neighbors).map(\.0), [])
        XCTAssertEqual(SentenceEmbedding.within(2, neighbors).map(\.0), ["a", "b", "c", "d"])
        XCTAssertEqual(SentenceEmbedding.within(.nan, neighbors).map(\.0), [])
        XCTAssertEqual(SentenceEmbedding.within(1, []).map(\.0), [])
    }
}
