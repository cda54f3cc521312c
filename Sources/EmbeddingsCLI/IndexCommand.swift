import Embeddings
import Foundation
import Synchronization
import Retrieval
import VectorIndex

/// `embeddings index DIR... --out FILE | --store URL`: chunk, embed and store a Markdown corpus.
struct IndexCommand: Command {
    static let name = "index"
    static let abstract = "Chunk every *.md below the folders, embed the chunks and write one index file."
    static let usage = "index <dir> ... (--out <file> | --store <url>) [--model <dir|id>] [--late-chunking] [--lexical-only] [--codes int8,binary|none] [--hnsw] [--quiet]"
    static let arguments: [(String, String)] = [("<dir>", "A folder of Markdown files (several allowed; sources are relative to each).")]
    static let options: [(String, String)] = [
        ("--out <file>", "The index file to write (atomically). An existing one is reused: unchanged chunks are not re-embedded."),
        ModelOption.help,
        ("--late-chunking", "Encode each page once and pool each chunk's own token span (chunks carry page context)."),
        ("--lexical-only", "Skip embeddings: BM25 only (no model needed)."),
        ("--codes <list>", "Also store int8 and/or binary codes for 'search --precision' (comma-separated, or none; default: as the existing file)."),
    ] + PostgresOption.help + [
        ("--hnsw", "With --store: also build pgvector's HNSW index, for 'search --precision hnsw'."),
        Console.quietHelp,
    ]
    static let valueOptions: Set<String> = ["out", "model", "codes", "store", "table-prefix"]
    static let flagOptions: Set<String> = ["late-chunking", "lexical-only", "hnsw", "quiet"]

    let parsed: ParsedArguments
    let folders: [URL]
    let output: URL?
    let codes: Set<SearchPrecision>?

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        if let list = parsed.values["codes"] {
            var set = Set<SearchPrecision>()
            for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where name != "none" {
                guard let precision = SearchPrecision(rawValue: name), precision != .exact else {
                    throw CLIError.usage("--codes takes int8, binary or none, got '\(name)'")
                }
                set.insert(precision)
            }
            if !set.isEmpty, parsed.flags.contains("lexical-only") { throw CLIError.usage("--codes needs embeddings; it cannot go with --lexical-only") }
            codes = set
        } else {
            codes = nil
        }
        guard !parsed.positionals.isEmpty else { throw CLIError.usage("expected at least one folder to index") }
        try PostgresOption.checkIndexArguments(parsed)
        let out = parsed.values["out"]
        if out == nil, parsed.values["store"] == nil { throw CLIError.usage("missing --out <file> (or --store <url>)") }
        if parsed.flags.contains("lexical-only"), parsed.flags.contains("late-chunking") {
            throw CLIError.usage("--late-chunking needs embeddings; it cannot go with --lexical-only")
        }
        folders = parsed.positionals.map { URL(fileURLWithPath: $0) }
        output = out.map { URL(fileURLWithPath: $0) }
    }

    /// The pages below every folder (unreadable files are reported and skipped).
    func readPages() throws -> [EmbeddingStore.Page] {
        var pages = [EmbeddingStore.Page]()
        for folder in folders {
            let files: [(url: URL, relative: String)]
            do { files = try MarkdownChunker.markdownFiles(in: folder) } catch let error as RetrievalError {
                throw CLIError.noInput(error.description)
            }
            for (url, relative) in files {
                do { pages.append(.init(source: relative, text: try MarkdownChunker.readText(url))) } catch let error as RetrievalError {
                    Console.warning("skipped \(error)")
                }
            }
        }
        guard !pages.isEmpty else { throw CLIError.data("no readable Markdown files found") }
        return pages
    }

    /// Every folder exists, or a missing-input error.
    func checkFolders() throws {
        for folder in folders {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError.noInput("folder '\(folder.path)' does not exist")
            }
        }
    }

    func run() throws {
        Console.configure(parsed)
        try checkFolders()
        guard let output else { return try runOnPostgres() }
        // Fail now, not after minutes of embedding, when the index cannot be written there.
        do { try AtomicFile.checkWritable(output) } catch let error as VectorIndexError {
            throw CLIError.failure(error.description)
        }
        let embedding = parsed.flags.contains("lexical-only") ? nil : try ModelOption.load(parsed)
        let store = EmbeddingStore(embedding: embedding, lateChunking: parsed.flags.contains("late-chunking"))
        if FileManager.default.fileExists(atPath: output.path) {
            do { try blockingAwait { try await store.load(from: output) } } catch {
                Console.note("note: not reusing \(output.path) (\(error)); indexing from scratch")
            }
        }
        let pages = try readPages()
        let start = Date()
        let progressBox = ProgressBox(Progress("embedding", total: nil))
        let allPages = pages
        if let codes { try blockingAwait { await store.keepCodes(codes) } }
        let stats = try blockingAwait {
            try await store.replace(with: allPages) { done, total in progressBox.update(done, total) }
        }
        progressBox.finish()
        let seconds = Date().timeIntervalSince(start)
        do { try blockingAwait { try await store.save(to: output) } } catch let error as VectorIndexError {
            throw CLIError.failure(error.description)
        }
        let rate = seconds > 0 ? Double(stats.embedded) / seconds : 0
        Console.note(String(format: "indexed %d pages, %d chunks: %d embedded, %d reused, %d removed in %.2f s (%.0f chunks/s)%@",
                            pages.count, stats.chunks, stats.embedded, stats.reused, stats.removed, seconds, rate,
                            stats.lateChunkingFallbacks > 0 ? ", \(stats.lateChunkingFallbacks) late-chunking fallbacks" : ""))
        print("wrote \(output.path)")
    }
}

/// Progress reported from the embedding task, whose total is known once it starts.
final class ProgressBox: Sendable {
    private let progress: Mutex<Progress>

    init(_ progress: Progress) { self.progress = Mutex(progress) }

    /// Reaching the total finishes the report.
    func update(_ done: Int, _ total: Int) {
        progress.withLock { progress in
            progress.update(done, of: total)
            if done >= total { progress.finish() }
        }
    }

    /// Ends the report (when the work stopped short of the total).
    func finish() { progress.withLock { $0.finish() } }
}
