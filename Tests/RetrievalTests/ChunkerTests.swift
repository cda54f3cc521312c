import Foundation
import Retrieval
import TestSupport
import XCTest

final class ChunkerTests: XCTestCase {
    let chunker = MarkdownChunker()

    func testSectionsHeadingsIDsAndTitles() {
        let page = """
        ---
        title: ignored front matter
        ---
        # Closures

        Intro text.

        ## Capturing Values!

        Body one.

        ### Escaping closures

        Body two.

        ##### Deep heading stays inside

        More of body two.
        """
        let chunks = chunker.chunks(of: page, source: "guide/closures.md")
        XCTAssertEqual(chunks.map(\.id), ["guide/closures#closures", "guide/closures#capturing-values", "guide/closures#escaping-closures"])
        XCTAssertEqual(chunks[2].headings, ["Closures", "Capturing Values!", "Escaping closures"])
        XCTAssertEqual(chunks.map(\.title), ["Closures", "Closures", "Closures"])
        XCTAssertTrue(chunks[1].text.hasPrefix("Closures — Capturing Values!\n\n"))
        XCTAssertTrue(chunks[2].text.contains("Deep heading stays inside"))
        XCTAssertFalse(chunks.contains { $0.text.contains("front matter") })
        XCTAssertEqual(chunks[0].source, "guide/closures.md")
    }

    func testLongSectionsSplitAtSentenceEndsAndCodeStaysWhole() {
        let sentence = "This sentence is about forty-five characters. "
        let code = "```swift\nlet a = 1. \nlet b = 2. \n```"
        let page = "# T\n\n## Long\n\n" + String(repeating: sentence, count: 20) + "\n\n" + code + "\n\n" + String(repeating: sentence, count: 10)
        let chunks = chunker.chunks(of: page, source: "t.md")
        XCTAssertGreaterThan(chunks.count, 2)
        XCTAssertEqual(chunks.map(\.id).prefix(3), ["t#long", "t#long-2", "t#long-3"])
        for chunk in chunks {
            let body = chunk.text.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n")
            XCTAssertLessThanOrEqual(body.count, 700 + 60, chunk.id)
            XCTAssertFalse(body.hasSuffix("forty-"), "cut inside a sentence: \(chunk.id)")
        }
        XCTAssertEqual(chunks.filter { $0.text.contains("```swift\nlet a = 1. \nlet b = 2. \n```") }.count, 1, "the code block is whole in one chunk")
        XCTAssertEqual(Set(chunks.map(\.id)).count, chunks.count)
    }

    func testDuplicateHeadingsGetUniqueIDs() {
        let page = "# P\n\n## Setup\n\nA.\n\n## Setup\n\nB.\n"
        let ids = chunker.chunks(of: page, source: "p.md").map(\.id)
        XCTAssertEqual(Set(ids).count, ids.count)
    }

    func testEmptySectionsAndPagesWithoutHeadings() {
        XCTAssertEqual(chunker.chunks(of: "", source: "e.md"), [])
        XCTAssertEqual(chunker.chunks(of: "# Only a title\n\n## Empty\n", source: "e.md"), [])
        let plain = chunker.chunks(of: "No headings at all, just words.", source: "notes/plain.md")
        XCTAssertEqual(plain.map(\.id), ["notes/plain#plain"])
        XCTAssertEqual(plain.first?.title, "plain")
    }

    func testCRLFAndClosingHashes() {
        let chunks = chunker.chunks(of: "# Title #\r\n\r\n## Part ##\r\nText.\r\n", source: "c.md")
        XCTAssertEqual(chunks.map(\.id), ["c#part"])
        XCTAssertEqual(chunks.first?.headings, ["Title", "Part"])
    }

    /// Fuzzing finding (FuzzChunker): a heading ending in a lone carriage return made the title
    /// merge with the header's newline, so the chunk no longer started with its title.
    func testFuzzFindingHeadingEndingInCarriageReturn() {
        let bytes: [UInt8] = [0x23, 0x20, 0x00, 0x00, 0x0D, 0x20, 0x20, 0x0A, 0x60, 0x0A, 0x0A, 0x60, 0x0A, 0x20, 0x37, 0x0A, 0x77]
        let chunks = MarkdownChunker(targetLength: 120).chunks(of: String(decoding: bytes, as: UTF8.self), source: "dir/page.md")
        XCTAssertEqual(chunks.count, 1)
        for chunk in chunks { XCTAssertTrue(chunk.text.hasPrefix(chunk.title), chunk.text.debugDescription) }
    }

    func testHundredThousandHeadingsAndAOneMegabyteLine() {
        let many = (0..<100_000).map { "## H\($0)\nx\n" }.joined()
        XCTAssertEqual(chunker.chunks(of: many, source: "m.md").count, 100_000)
        let line = String(repeating: "word ", count: 200_000)
        let chunks = chunker.chunks(of: "# Big\n\n" + line, source: "b.md")
        XCTAssertGreaterThan(chunks.count, 1000)
        XCTAssertEqual(Set(chunks.map(\.id)).count, chunks.count)
    }

    func testFolderReadingReportsBadFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunker-\(UUID())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("# A\n\ntext".utf8).write(to: folder.appendingPathComponent("sub/a.md"))
        try Data([0xC3, 0x28, 0xFF]).write(to: folder.appendingPathComponent("bad.md"))
        try Data("  \n".utf8).write(to: folder.appendingPathComponent("empty.md"))
        try Data("ignored".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        let (chunks, problems) = try chunker.chunks(ofFolder: folder)
        XCTAssertEqual(chunks.map(\.id), ["sub/a#a"])
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(problems.contains { if case .invalidUTF8 = $0 { return true }; return false })
        XCTAssertTrue(problems.contains { if case .emptyFile = $0 { return true }; return false })
        XCTAssertThrowsError(try chunker.chunks(ofFolder: folder.appendingPathComponent("missing")))
    }

    func testBuiltInCorpusSize() throws {
        let (chunks, problems) = try chunker.chunks(ofFolder: TestFixtures.folder.appendingPathComponent("corpus/swift-lessons"))
        XCTAssertEqual(problems, [])
        XCTAssertGreaterThanOrEqual(Set(chunks.map(\.source)).count, 100)
        XCTAssertGreaterThanOrEqual(chunks.count, 722)
        let mean = Double(chunks.map(\.text.count).reduce(0, +)) / Double(chunks.count)
        XCTAssertGreaterThanOrEqual(mean, 350)
        XCTAssertEqual(Set(chunks.map(\.id)).count, chunks.count)
    }

    /// The words of a chunk after its "title — section" header.
    func bodyWords(_ chunk: Chunk) -> [Substring] {
        let text = chunk.text
        let body = text.range(of: "\n\n").map { text[$0.upperBound...] } ?? text[...]
        return body.split(whereSeparator: { $0.isWhitespace })
    }

    func testEveryChunkOfTheCorpusCarriesItsSpan() throws {
        let folder = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")
        var checked = 0
        for (url, relative) in try MarkdownChunker.markdownFiles(in: folder) {
            let page = try MarkdownChunker.readText(url)
            var previous = 0
            for chunk in chunker.chunks(of: page, source: relative) {
                let span = try XCTUnwrap(chunk.span, chunk.id)
                let range = try XCTUnwrap(chunk.range(in: page), chunk.id)
                XCTAssertEqual(page[range].split(whereSeparator: { $0.isWhitespace }), bodyWords(chunk), chunk.id)
                XCTAssertGreaterThanOrEqual(span.lowerBound, previous, "\(chunk.id): spans come in page order")
                previous = span.upperBound
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 722)
    }

    func testSpansSurviveCRLFFrontMatterAndLongSections() throws {
        let sentence = "Ünïcödé words and emoji 🧪 repeat here, many times over. "
        let page = "---\r\ntitle: x\r\n---\r\n# Title\r\n\r\nFirst  line\twith   gaps.\r\nSecond line.\r\n\r\n## Long\r\n\r\n"
            + String(repeating: sentence, count: 40) + "\r\n\r\n```swift\r\nlet x = 1\r\n```\r\n"
        let chunks = chunker.chunks(of: page, source: "p.md")
        XCTAssertGreaterThan(chunks.count, 3, "the long section is split")
        var previous = 0
        for chunk in chunks {
            let range = try XCTUnwrap(chunk.range(in: page), chunk.id)
            XCTAssertEqual(page[range].split(whereSeparator: { $0.isWhitespace }), bodyWords(chunk), chunk.id)
            XCTAssertGreaterThanOrEqual(chunk.span?.lowerBound ?? -1, previous, chunk.id)
            previous = chunk.span?.upperBound ?? 0
        }
        XCTAssertTrue(page[try XCTUnwrap(chunks.first?.range(in: page))].hasPrefix("First  line"))
    }

    func testASpanThatDoesNotFitThePageGivesNoRange() {
        let chunk = Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a", span: 2..<5)
        XCTAssertNil(chunk.range(in: "abc"))
        XCTAssertNil(Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a", span: 1..<2).range(in: "é"), "inside a scalar")
        XCTAssertNil(Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a").range(in: "abc"))
        XCTAssertEqual(Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a", span: 1..<3).range(in: "abc").map { String("abc"[$0]) }, "bc")
    }
}
