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
        XCTAssertEqual(
            chunks.map(\.id),
            ["guide/closures#closures", "guide/closures#capturing-values", "guide/closures#escaping-closures"])
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
        let page =
            "# T\n\n## Long\n\n" + String(repeating: sentence, count: 20) + "\n\n" + code + "\n\n"
            + String(repeating: sentence, count: 10)
        let chunks = chunker.chunks(of: page, source: "t.md")
        XCTAssertGreaterThan(chunks.count, 2)
        XCTAssertEqual(chunks.map(\.id).prefix(3), ["t#long", "t#long-2", "t#long-3"])
        for chunk in chunks {
            let body = chunk.text.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n")
            XCTAssertLessThanOrEqual(body.count, 700 + 60, chunk.id)
            XCTAssertFalse(body.hasSuffix("forty-"), "cut inside a sentence: \(chunk.id)")
        }
        XCTAssertEqual(
            chunks.filter { $0.text.contains("```swift\nlet a = 1. \nlet b = 2. \n```") }.count, 1,
            "the code block is whole in one chunk")
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
        let bytes: [UInt8] = [
            0x23, 0x20, 0x00, 0x00, 0x0D, 0x20, 0x20, 0x0A, 0x60, 0x0A, 0x0A, 0x60, 0x0A, 0x20, 0x37, 0x0A, 0x77,
        ]
        let chunks = MarkdownChunker(targetLength: 120).chunks(
            of: String(decoding: bytes, as: UTF8.self), source: "dir/page.md")
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

    /// One paragraph of `bytes` UTF-8 bytes or a little more, one line, no heading: sentences of
    /// several lengths, with now and then a run-on sentence far longer than a chunk and a word
    /// longer than a chunk, non-ASCII letters among them (so UTF-8 offsets differ from Characters).
    func singleParagraph(bytes: Int) -> String {
        let sentences = [
            "Café owners grind beans before dawn.", "Closures capture the values they use, even after the scope ends!",
            "Is naïve Bayes 🧪 still useful?", "A section this long is cut at sentence ends, never inside a word.",
        ]
        let runOn = String(repeating: "and then the text goes on without a stop ", count: 40)
        let longWord = String(repeating: "x", count: 1_500)
        var text = ""
        var n = 0
        while text.utf8.count < bytes {
            text += n % 97 == 0 ? runOn : n % 389 == 0 ? longWord : sentences[n % sentences.count]
            text += " "
            n += 1
        }
        return text
    }

    /// A long section is chunked in time linear in its length (it was quadratic: each piece's span
    /// was found by walking the line from its start, and lengths were recounted on every append).
    /// Indexing a 5 MB page lexical-only gives chunks whose spans cover the page's words in order.
    func testAFiveMegabyteParagraphIsIndexedInLinearTimeWithItsSpans() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("long-paragraph-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("long.md")
        func index(megabytes: Int) throws -> (store: EmbeddingStore, page: String, seconds: Double) {
            let page = "# Long\n\n" + singleParagraph(bytes: megabytes * 1_000_000)
            try Data(page.utf8).write(to: file)
            let store = EmbeddingStore(embedding: nil)
            let start = Date()
            let (statistics, problems) = try store.index(folder: folder)
            let seconds = Date().timeIntervalSince(start)
            XCTAssertEqual(problems, [])
            XCTAssertEqual(statistics.chunks, store.chunks.count)
            return (store, page, seconds)
        }
        let small = try min(index(megabytes: 1).seconds, index(megabytes: 1).seconds)
        let (store, page, large) = try index(megabytes: 5)
        // Linear: five times the text takes about five times as long (quadratic: 25 times; the
        // old chunker took 22 s for 1 MB and 465 s for 5 MB). The bound leaves room for a busy machine.
        XCTAssertLessThan(large / small, 12, "1 MB: \(small) s, 5 MB: \(large) s")

        let chunks = store.chunks
        XCTAssertGreaterThan(chunks.count, 5_000_000 / 700)
        XCTAssertEqual(Set(chunks.map(\.id)).count, chunks.count)
        // Between one chunk's span and the next only white space (nothing where a long word was
        // cut): together the spans hold every word of the page after its title.
        let bytes = Array(page.utf8)
        var previous = "# Long".utf8.count
        for chunk in chunks {
            let span = try XCTUnwrap(chunk.span, chunk.id)
            XCTAssertGreaterThanOrEqual(span.lowerBound, previous, "\(chunk.id): spans in page order, not overlapping")
            let gap = bytes[previous..<max(previous, span.lowerBound)]
            XCTAssertTrue(gap.allSatisfy { $0 == 0x20 || $0 == 0x0A }, "\(chunk.id): words between spans")
            previous = span.upperBound
            let words = page[try XCTUnwrap(chunk.range(in: page), chunk.id)].split(whereSeparator: { $0.isWhitespace })
            XCTAssertEqual(words, bodyWords(chunk), chunk.id)
        }
        XCTAssertTrue(bytes[previous...].allSatisfy { $0 == 0x20 }, "the last span ends at the last word")
    }

    func testFolderReadingReportsBadFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunker-\(UUID())")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("# A\n\ntext".utf8).write(to: folder.appendingPathComponent("sub/a.md"))
        try Data([0xC3, 0x28, 0xFF]).write(to: folder.appendingPathComponent("bad.md"))
        try Data("  \n".utf8).write(to: folder.appendingPathComponent("empty.md"))
        try Data("ignored".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        let (chunks, problems) = try chunker.chunks(ofFolder: folder)
        XCTAssertEqual(chunks.map(\.id), ["sub/a#a"])
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(
            problems.contains {
                if case .invalidUTF8 = $0 { return true }
                return false
            })
        XCTAssertTrue(
            problems.contains {
                if case .emptyFile = $0 { return true }
                return false
            })
        XCTAssertThrowsError(try chunker.chunks(ofFolder: folder.appendingPathComponent("missing")))
    }

    func testBuiltInCorpusSize() throws {
        let (chunks, problems) = try chunker.chunks(
            ofFolder: TestFixtures.folder.appendingPathComponent("corpus/swift-lessons"))
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
        let page =
            "---\r\ntitle: x\r\n---\r\n# Title\r\n\r\nFirst  line\twith   gaps.\r\nSecond line.\r\n\r\n## Long\r\n\r\n"
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
        XCTAssertNil(
            Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a", span: 1..<2).range(in: "é"),
            "inside a scalar")
        XCTAssertNil(Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a").range(in: "abc"))
        XCTAssertEqual(
            Chunk(id: "a", source: "a.md", headings: [], title: "a", text: "a", span: 1..<3).range(in: "abc").map {
                String("abc"[$0])
            }, "bc")
    }
}
