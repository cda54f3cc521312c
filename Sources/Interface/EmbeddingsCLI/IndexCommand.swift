import CommandLineOptions
import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import Synchronization
import VectorIndex

/// `embeddings index DIR... --out FILE | --store URL`: chunk, embed and store a Markdown corpus.
struct IndexCommand: Command {
    static let name = "index"
    static let abstract = "Chunk every *.md below the folders, embed the chunks and write one index file."
    static let arguments = [
        Argument(
            "<dir>", usage: "<dir> ...",
            help: "A folder of Markdown files (several allowed; sources are relative to each).")
    ]

    static let lateChunking = Flag(
        "--late-chunking",
        help: "Encode each page once and pool each chunk's own token span (chunks carry page context).")
    static let lexicalOnly = Flag("--lexical-only", help: "Skip embeddings: BM25 only (no model needed).")
    /// The option's name, which its conversion also names in its error.
    private static let codesName = "--codes"
    static let codes = Option<Set<SearchPrecision>>(
        codesName, valueName: "list",
        help: "Also store int8 and/or binary codes for 'search --precision': a comma-separated list, or none.",
        defaultDescription: "as the existing file"
    ) { list in
        var set = Set<SearchPrecision>()
        for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where name != "none" {
            guard let precision = SearchPrecision(rawValue: name), precision != .exact else {
                throw CLIError.usage("\(codesName) takes int8, binary or none, got '\(name)'")
            }
            set.insert(precision)
        }
        return set
    }
    static let hnsw = Flag(
        "--hnsw", help: "With --store: also build pgvector's HNSW index, for 'search --precision hnsw'.")

    static var options: [any OptionDeclaration] {
        [
            OneOf(SharedOptions.out, SharedOptions.store), SharedOptions.model, SharedOptions.quantize, lateChunking,
            lexicalOnly, codes,
            SharedOptions.tablePrefix, hnsw, SharedOptions.quiet,
        ]
    }

    let parsed: ParsedArguments
    let folders: [URL]

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        if let codes = parsed[Self.codes], !codes.isEmpty, parsed[Self.lexicalOnly] {
            throw CLIError.usage("\(Self.codes.name) needs embeddings; it cannot go with \(Self.lexicalOnly.name)")
        }
        guard !parsed.positionals.isEmpty else { throw CLIError.usage("expected at least one folder to index") }
        try StoreOption.checkIndexArguments(parsed)
        if parsed[Self.lexicalOnly],
            let name = parsed[Self.lateChunking]
                ? Self.lateChunking.name : parsed.contains(SharedOptions.quantize) ? SharedOptions.quantize.name : nil
        {
            throw CLIError.usage("\(name) needs embeddings; it cannot go with \(Self.lexicalOnly.name)")
        }
        folders = parsed.positionals.map { URL(fileURLWithPath: $0) }
    }

    /// The pages below every folder (unreadable files are reported and skipped).
    func readPages() throws -> [Page] {
        var pages = [Page]()
        for folder in folders {
            let (found, problems): ([Page], [RetrievalError])
            do { (found, problems) = try MarkdownChunker.pages(in: folder) } catch let error as RetrievalError {
                throw CLIError.noInput(error.description)
            }
            for problem in problems { Console.warning("skipped \(problem)") }
            pages += found
        }
        guard !pages.isEmpty else { throw CLIError.data("no readable Markdown files found") }
        return pages
    }

    /// Every folder exists, or a missing-input error.
    func checkFolders() throws {
        for folder in folders {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw CLIError.noInput("folder '\(folder.path)' does not exist")
            }
        }
    }

    func run() throws {
        Console.configure(parsed)
        try checkFolders()
        let target = try StoreOption.openForIndexing(parsed) {
            parsed[Self.lexicalOnly] ? nil : try ModelOption.load(parsed)
        }
        let pages = try readPages()
        let start = Date()
        let progress = ProgressBox(Progress("embedding", total: nil))
        let stats = try StoreOption.mapping {
            try target.store.replace(with: pages) { done, total in progress.update(done, total) }
        }
        progress.finish()
        let seconds = Date().timeIntervalSince(start)
        let written = try target.finish()
        let rate = seconds > 0 ? Double(stats.embedded) / seconds : 0
        Console.note(
            String(
                format: "indexed %d pages, %d chunks: %d embedded, %d reused, %d removed in %.2f s (%.0f chunks/s)%@",
                pages.count, stats.chunks, stats.embedded, stats.reused, stats.removed, seconds, rate,
                stats.lateChunkingFallbacks > 0 ? ", \(stats.lateChunkingFallbacks) late-chunking fallbacks" : ""))
        print(written)
    }
}

/// Progress reported from the embedding task, whose total is known once it starts.
final class ProgressBox: Sendable {
    private let progress: Mutex<Progress>

    init(_ progress: Progress) { self.progress = Mutex(progress) }

    /// Reaching the total finishes the report.
    func update(_ done: Int, _ total: Int) {
        progress.withOrderedLock { progress in
            progress.update(done, of: total)
            if done >= total { progress.finish() }
        }
    }

    /// Ends the report (when the work stopped short of the total).
    func finish() { progress.withOrderedLock { $0.finish() } }
}
