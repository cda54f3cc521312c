import CommandLineOptions
import Embeddings
import Foundation
import Synchronization
import Retrieval
import VectorIndex

/// `embeddings index DIR... --out FILE | --store URL`: chunk, embed and store a Markdown corpus.
struct IndexCommand: Command {
    static let name = "index"
    static let abstract = "Chunk every *.md below the folders, embed the chunks and write one index file."
    static let arguments = [Argument("<dir>", usage: "<dir> ...", help: "A folder of Markdown files (several allowed; sources are relative to each).")]

    static let lateChunking = Flag("--late-chunking", help: "Encode each page once and pool each chunk's own token span (chunks carry page context).")
    static let lexicalOnly = Flag("--lexical-only", help: "Skip embeddings: BM25 only (no model needed).")
    static let codes = Option<Set<SearchPrecision>>(
        "--codes", valueName: "list", help: "Also store int8 and/or binary codes for 'search --precision': a comma-separated list, or none.",
        defaultDescription: "as the existing file"
    ) { list in
        var set = Set<SearchPrecision>()
        for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where name != "none" {
            guard let precision = SearchPrecision(rawValue: name), precision != .exact else {
                throw CLIError.usage("--codes takes int8, binary or none, got '\(name)'")
            }
            set.insert(precision)
        }
        return set
    }
    static let hnsw = Flag("--hnsw", help: "With --store: also build pgvector's HNSW index, for 'search --precision hnsw'.")

    static var options: [any OptionDeclaration] {
        [OneOf(SharedOptions.out, SharedOptions.store), SharedOptions.model, lateChunking, lexicalOnly, codes,
         SharedOptions.tablePrefix, hnsw, SharedOptions.quiet]
    }

    let parsed: ParsedArguments
    let folders: [URL]
    let output: URL?
    let codes: Set<SearchPrecision>?

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        codes = parsed[Self.codes]
        if let codes, !codes.isEmpty, parsed[Self.lexicalOnly] {
            throw CLIError.usage("\(Self.codes.name) needs embeddings; it cannot go with \(Self.lexicalOnly.name)")
        }
        guard !parsed.positionals.isEmpty else { throw CLIError.usage("expected at least one folder to index") }
        try PostgresOption.checkIndexArguments(parsed)
        let out = parsed[SharedOptions.out]
        if out == nil, !parsed.contains(SharedOptions.store) {
            throw CLIError.usage("missing \(SharedOptions.out.synopsis) (or \(SharedOptions.store.synopsis))")
        }
        if parsed[Self.lexicalOnly], parsed[Self.lateChunking] {
            throw CLIError.usage("\(Self.lateChunking.name) needs embeddings; it cannot go with \(Self.lexicalOnly.name)")
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
        let embedding = parsed[Self.lexicalOnly] ? nil : try ModelOption.load(parsed)
        let store = EmbeddingStore(embedding: embedding, lateChunking: parsed[Self.lateChunking])
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

extension IndexCommand {
    /// `index DIR… --store URL`: one transaction; unchanged chunks keep their vectors.
    func runOnPostgres() throws {
        let embedding = parsed[Self.lexicalOnly] ? nil : try ModelOption.load(parsed)
        let store = try PostgresOption.open(parsed, embedding: embedding)
        let pages = try readPages()
        let start = Date()
        let progressBox = ProgressBox(Progress("embedding", total: nil))
        let stats = try PostgresOption.mapping {
            try store.replace(with: pages) { done, total in progressBox.update(done, total) }
        }
        let seconds = Date().timeIntervalSince(start)
        if parsed[Self.hnsw] {
            let indexStart = Date()
            try PostgresOption.mapping { try store.buildHNSWIndex() }
            Console.note(String(format: "built the HNSW index in %.2f s", Date().timeIntervalSince(indexStart)))
        }
        let rate = seconds > 0 ? Double(stats.embedded) / seconds : 0
        Console.note(String(format: "indexed %d pages, %d chunks: %d embedded, %d reused, %d removed in %.2f s (%.0f chunks/s)",
                            pages.count, stats.chunks, stats.embedded, stats.reused, stats.removed, seconds, rate))
        print("stored in \(store.tablePrefix)_chunks")
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
