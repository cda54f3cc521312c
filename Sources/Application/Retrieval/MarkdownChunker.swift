import Foundation

/// Cuts Markdown pages into chunks (see `Chunk`): a section per heading of level 1–4, long
/// sections split at sentence ends, fenced code kept whole, front matter skipped.
///
/// ```swift
/// let chunks = MarkdownChunker().chunks(of: markdown, source: "guide/closures.md")
/// chunks[0].id  // "guide/closures#closures"
/// ```
public struct MarkdownChunker: Sendable {
    /// Sections longer than this many characters are split at sentence ends.
    public var targetLength: Int

    /// A chunker that splits sections longer than `targetLength` characters.
    public init(targetLength: Int = 700) {
        precondition(targetLength > 0, "targetLength must be positive")
        self.targetLength = targetLength
    }

    /// One block of a section body: prose (splittable at sentence ends) or a fenced code block.
    private enum Block {
        case prose(String)
        case code(String)
    }

    private struct Section {
        var headings: [String]
        var lines: [Substring] = []
    }

    /// The chunks of one page. `source` is its path relative to the corpus folder.
    /// - Complexity: O(n) in the page's length.
    public func chunks(of markdown: String, source: String) -> [Chunk] {
        let base = source.hasSuffix(".md") ? String(source.dropLast(3)) : source
        let (sections, pageTitle) = Self.sections(of: markdown)
        let title = pageTitle ?? (base as NSString).lastPathComponent
        return chunks(of: sections, title: title, base: base, source: source, page: markdown)
    }

    /// Step 1: the page cut at headings of level 1–4 (front matter dropped, fenced code never
    /// cut), each section with its heading path; and the page's first level-1 heading.
    private static func sections(of markdown: String) -> (sections: [Section], pageTitle: String?) {
        var lines = markdown.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map
        { line -> Substring in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
        // Front matter: a first line of `---` up to the next `---` or `...`.
        if lines.first == "---", let end = lines.dropFirst().firstIndex(where: { $0 == "---" || $0 == "..." }) {
            lines.removeSubrange(0...end)
        }
        var sections = [Section]()
        var path: [(level: Int, text: String)] = []
        var current = Section(headings: [])
        var fence: Substring? = nil
        var pageTitle: String? = nil
        for line in lines {
            if let open = fence {
                current.lines.append(line)
                if line.trimmingCharacters(in: .whitespaces).hasPrefix(open) { fence = nil }
                continue
            }
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fence = trimmed.prefix(3)
                current.lines.append(line)
                continue
            }
            if let (level, text) = heading(line), level <= 4 {
                sections.append(current)
                if level == 1, pageTitle == nil { pageTitle = text }
                path.removeAll { $0.level >= level }
                path.append((level, text))
                current = Section(headings: path.map(\.text))
                continue
            }
            current.lines.append(line)
        }
        sections.append(current)
        return (sections, pageTitle)
    }

    /// Step 2: the non-empty sections' pieces as chunks, each with its span in `page` and an id
    /// unique within the page (see `ChunkIDs`).
    private func chunks(of sections: [Section], title: String, base: String, source: String, page: String) -> [Chunk] {
        var chunks = [Chunk]()
        var ids = ChunkIDs(base: base)
        for section in sections {
            let joined = section.lines.joined(separator: "\n")
            let body = joined.trimmedOfWhiteSpace()
            guard !body.isEmpty else { continue }
            var locator = SpanLocator(section: section.lines, joined: joined, body: body, page: page)
            let headings = section.headings.isEmpty ? [title] : section.headings
            var label = headings.last.map(Self.slug) ?? ""
            if label.isEmpty { label = Self.slug(title) }
            if label.isEmpty { label = "section" }
            var header = title
            if let last = headings.last, last != title { header += " — " + last }
            for (n, piece) in pieces(of: body).enumerated() {
                chunks.append(
                    Chunk(
                        id: ids.next(label: label, piece: n), source: source, headings: headings, title: title,
                        text: header + "\n\n" + piece, span: locator?.span(of: piece)))
            }
        }
        return chunks
    }

    /// Chunk ids within one page: `base#label` for a section's first piece, `base#label-n` for its
    /// n-th, and `~2`, `~3`, … appended when an earlier section already took that id.
    private struct ChunkIDs {
        let base: String
        private var used = Set<String>()

        init(base: String) { self.base = base }

        /// The id of piece `piece` (from 0) of a section labelled `label`.
        mutating func next(label: String, piece n: Int) -> String {
            let plain = "\(base)#\(label)" + (n == 0 ? "" : "-\(n + 1)")
            var id = plain
            var k = 2
            while used.contains(id) {
                id = plain + "~\(k)"
                k += 1
            }
            used.insert(id)
            return id
        }
    }

    /// Reads every `*.md` below `folder` (sorted by path) and chunks it. Files that are not UTF-8
    /// or are empty are reported in `problems` and skipped; nothing crashes on them.
    public func chunks(ofFolder folder: URL) throws -> (chunks: [Chunk], problems: [RetrievalError]) {
        let (pages, problems) = try Self.pages(in: folder)
        return (pages.flatMap { chunks(of: $0.text, source: $0.source) }, problems)
    }

    /// The `*.md` files below `folder`, with their paths relative to it, sorted.
    public static func markdownFiles(in folder: URL) throws -> [(url: URL, relative: String)] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw RetrievalError.unreadable(path: folder.path, reason: "not a folder")
        }
        guard
            let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        else {
            throw RetrievalError.unreadable(path: folder.path, reason: "cannot list the folder")
        }
        let root = folder.standardizedFileURL.resolvingSymlinksInPath().path
        var files = [(URL, String)]()
        for case let url as URL in enumerator where url.pathExtension.lowercased() == "md" {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let full = url.standardizedFileURL.resolvingSymlinksInPath().path
            let relative = full.hasPrefix(root + "/") ? String(full.dropFirst(root.count + 1)) : url.lastPathComponent
            files.append((url, relative))
        }
        return files.sorted { $0.1 < $1.1 }
    }

    /// The pages of every `*.md` below `folder`, sorted by path, and the files that could not be
    /// read (unreadable, empty or not UTF-8), which are skipped.
    /// - Throws: `RetrievalError.unreadable` when `folder` is not a folder that can be listed.
    public static func pages(in folder: URL) throws -> (pages: [Page], problems: [RetrievalError]) {
        var pages = [Page]()
        var problems = [RetrievalError]()
        for (url, relative) in try markdownFiles(in: folder) {
            do { pages.append(Page(source: relative, text: try readText(url))) } catch let error as RetrievalError {
                problems.append(error)
            }
        }
        return (pages, problems)
    }

    /// A file's text, or a typed error for unreadable, empty or non-UTF-8 files.
    public static func readText(_ url: URL) throws -> String {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw RetrievalError.unreadable(path: url.path, reason: error.localizedDescription)
        }
        guard let text = String(data: data, encoding: .utf8) else { throw RetrievalError.invalidUTF8(path: url.path) }
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw RetrievalError.emptyFile(path: url.path)
        }
        return text
    }

    /// An ATX heading's level and text (`## Title ##` → (2, "Title")), or nil.
    static func heading(_ line: Substring) -> (Int, String)? {
        var level = 0
        var rest = line[...]
        while rest.first == "#" {
            level += 1
            rest = rest.dropFirst()
        }
        guard (1...6).contains(level), rest.isEmpty || rest.first == " " || rest.first == "\t" else { return nil }
        // Newline characters too: a lone carriage return at the end would merge with the
        // header's line break into one "\r\n" character (found by fuzzing).
        var text = rest.trimmingCharacters(in: .whitespacesAndNewlines)
        // An optional closing sequence of #s.
        if let range = text.range(of: #"\s+#+$"#, options: .regularExpression) {
            text.removeSubrange(range)
        } else if text.allSatisfy({ $0 == "#" }) {
            text = ""
        }
        return (level, text)
    }

    /// Lower-case letters and digits, other runs of characters as single `-`.
    public static func slug(_ text: String) -> String {
        var out = ""
        var pendingDash = false
        for character in text.lowercased() {
            if character.isLetter || character.isNumber {
                if pendingDash, !out.isEmpty { out.append("-") }
                pendingDash = false
                out.append(character)
            } else if character == " " || character == "-" || character == "\t" || character == "_" {
                pendingDash = true
            }
        }
        return out
    }

    /// Splits a section body into pieces of about `targetLength` characters at sentence ends,
    /// never inside a fenced code block.
    /// - Complexity: O(n) in the body's length: each unit's length is counted once.
    private func pieces(of body: String) -> [String] {
        guard body.count > targetLength else { return [body] }
        var units = [String]()
        for block in blocks(of: body) {
            switch block {
            case .code(let code): units.append(code)
            case .prose(let text):
                for sentence in Self.sentences(text) {
                    units.append(contentsOf: Self.limit(sentence, to: targetLength))
                }
            }
        }
        var pieces = [String]()
        var current = CountedText()
        for unit in units {
            let unitCount = unit.count
            if !current.isEmpty, current.count + 1 + unitCount > targetLength { pieces.append(current.take()) }
            let fenced =
                unit.hasPrefix("```") || unit.hasPrefix("~~~") || current.text.hasSuffix("```")
                || current.text.hasSuffix("~~~")
            current.append(unit, count: unitCount, separator: fenced ? "\n" : " ")
        }
        if !current.isEmpty { pieces.append(current.text) }
        return pieces
    }

    private func blocks(of body: String) -> [Block] {
        var blocks = [Block]()
        var prose = [Substring]()
        var code = [Substring]()
        var fence: Substring? = nil
        func flushProse() {
            let text = prose.joined(separator: "\n").trimmedOfWhiteSpace()
            if !text.isEmpty { blocks.append(.prose(text)) }
            prose.removeAll()
        }
        for line in body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let trimmed = line.drop { $0 == " " }
            if let open = fence {
                code.append(line)
                if trimmed.hasPrefix(open) {
                    blocks.append(.code(code.joined(separator: "\n")))
                    code.removeAll()
                    fence = nil
                }
            } else if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                flushProse()
                fence = trimmed.prefix(3)
                code.append(line)
            } else {
                prose.append(line)
            }
        }
        flushProse()
        if !code.isEmpty { blocks.append(.code(code.joined(separator: "\n"))) }
        return blocks
    }

    /// A sentence longer than `length` split at spaces (or, for one enormous word, anywhere).
    /// - Complexity: O(n) in the sentence's length: each word's length is counted once.
    static func limit(_ sentence: String, to length: Int) -> [String] {
        guard sentence.count > length else { return [sentence] }
        var parts = [String]()
        var current = CountedText()
        for var word in sentence.split(separator: " ", omittingEmptySubsequences: true) {
            var wordCount = word.count
            while wordCount > length {
                if !current.isEmpty { parts.append(current.take()) }
                let cut = word.index(word.startIndex, offsetBy: length)
                parts.append(String(word[..<cut]))
                word = word[cut...]
                wordCount -= length
            }
            if !current.isEmpty, current.count + 1 + wordCount > length { parts.append(current.take()) }
            current.append(word, count: wordCount, separator: " ")
        }
        if !current.isEmpty { parts.append(current.text) }
        return parts
    }

    /// Sentences: text up to `.`, `!` or `?` followed by white space (paragraph breaks also end one).
    static func sentences(_ text: String) -> [String] {
        var result = [String]()
        var current = ""
        let characters = Array(text)
        var i = 0
        while i < characters.count {
            let c = characters[i]
            current.append(c)
            let atEnd = i + 1 == characters.count
            if atEnd || ((c == "." || c == "!" || c == "?") && characters[i + 1].isWhitespace)
                || (c == "\n" && characters[i + 1] == "\n")
            {
                let sentence = current.trimmedOfWhiteSpace()
                if !sentence.isEmpty { result.append(sentence) }
                current = ""
            }
            i += 1
        }
        return result
    }
}

/// Finds where each piece of one section lies in its page, as UTF-8 offsets.
///
/// A section body is its lines joined with `\n` and trimmed; each line is a slice of the page,
/// so a position in the body maps to one in the page line by line (a page's `\r\n` is one
/// Character, like the `\n` that replaced it). A piece is the body's words in order, rejoined
/// with single spaces or newlines (and a very long word cut into parts), so its span runs from
/// its first word to its last, each found in order after the previous piece.
///
/// Pieces are located in order, so each lookup resumes where the previous one stopped: locating
/// every piece of a section walks its lines once (O(n) in the section's length, not O(n²)).
struct SpanLocator {
    private let body: [Character]
    /// For each line: its first Character's offset in the joined text, its length in Characters,
    /// and the line itself. Offsets increase from line to line.
    private let lines: [(joinedStart: Int, count: Int, line: Substring)]
    private let leading: Int
    private let page: String
    private var cursor = 0
    /// Where the last lookup in the page ended (line number, Character offset in that line, and
    /// the page index there), so the next one walks on from it.
    private var resume: (line: Int, within: Int, index: String.Index)?

    init?(section: [Substring], joined: String, body: String, page: String) {
        guard let leading = Self.leadingCount(of: body, in: joined) else { return nil }
        self.leading = leading
        self.body = Array(body)
        var start = 0
        var lines = [(joinedStart: Int, count: Int, line: Substring)]()
        for line in section {
            let count = line.count
            lines.append((start, count, line))
            start += count + 1
        }
        self.lines = lines
        self.page = page
    }

    /// The Characters of `joined` before `body`, where `body` is `joined` trimmed of white space
    /// and newlines. Trimming removes Unicode scalars; when it stops on a Character boundary
    /// (always, short of a combining mark after leading white space) the count comes from the
    /// trimmed prefix alone, else from a search, as before.
    private static func leadingCount(of body: String, in joined: String) -> Int? {
        let scalars = joined.unicodeScalars
        let firstKept = scalars.firstIndex { !CharacterSet.whitespacesAndNewlines.contains($0) } ?? scalars.endIndex
        if let boundary = firstKept.samePosition(in: joined), joined[boundary...].hasPrefix(body) {
            return joined.distance(from: joined.startIndex, to: boundary)
        }
        guard let range = joined.range(of: body) else { return nil }
        return joined.distance(from: joined.startIndex, to: range.lowerBound)
    }

    /// The UTF-8 offsets of `piece` in the page, or `nil` when its words are not found in order.
    mutating func span(of piece: String) -> Range<Int>? {
        var position = cursor
        var start: Int?
        for word in piece.split(whereSeparator: { $0.isWhitespace }) {
            guard let found = Self.find(Array(word), in: body, from: position) else { return nil }
            if start == nil { start = found }
            position = found + word.count
        }
        guard let start, let lower = pageIndex(start),
            let upper = pageIndex(position - 1).map({ page.index(after: $0) })
        else { return nil }
        cursor = position
        return page.utf8.distance(
            from: page.startIndex, to: lower)..<page.utf8.distance(from: page.startIndex, to: upper)
    }

    /// The page index of the body's Character at `offset`: found from where the previous lookup
    /// ended when `offset` lies further on in the same line, else from the start of its line.
    private mutating func pageIndex(_ offset: Int) -> String.Index? {
        let joinedOffset = offset + leading
        // The last line that starts at or before `joinedOffset` (binary search).
        var low = 0
        var high = lines.count
        while low < high {
            let middle = (low + high) / 2
            if lines[middle].joinedStart <= joinedOffset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let number = low - 1
        let line = lines[number]
        let within = joinedOffset - line.joinedStart
        guard within < line.count else { return nil }  // a separator, never the end of a word
        var from = (within: 0, index: line.line.startIndex)
        if let resume, resume.line == number, resume.within <= within { from = (resume.within, resume.index) }
        let index = line.line.index(from.index, offsetBy: within - from.within)
        resume = (number, within, index)
        return index
    }

    private static func find(_ word: [Character], in text: [Character], from start: Int) -> Int? {
        guard !word.isEmpty, word.count <= text.count else { return nil }
        var i = start
        while i + word.count <= text.count {
            if text[i] == word[0], text[i..<(i + word.count)].elementsEqual(word) { return i }
            i += 1
        }
        return nil
    }
}

extension String {
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`, the same scalars removed, without
    /// Foundation's round trip through UTF-16 (a quarter of the chunker's time on long sections).
    func trimmedOfWhiteSpace() -> String {
        let scalars = unicodeScalars
        let white = CharacterSet.whitespacesAndNewlines
        guard let first = scalars.firstIndex(where: { !white.contains($0) }),
            let last = scalars.lastIndex(where: { !white.contains($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}
