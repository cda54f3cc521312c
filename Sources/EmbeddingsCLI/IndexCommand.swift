import Embeddings
import Foundation
import Synchronization
import Retrieval
import VectorIndex

/// `embeddings index DIR... --out FILE`: chunk, embed and store a Markdown corpus.
struct IndexCommand: Command {
    static let name = "index"
    static let abstract = "Chunk every *.md below the folders, embed the chunks and write one index file."
    static let usage = "index <dir> ... --out <file> [--model <dir>] [--late-chunking] [--lexical-only] [--codes int8,binary|none]"
    static let arguments: [(String, String)] = [("<dir>", "A folder of Markdown files (several allowed; sources are relative to each).")]
    static let options: [(String, String)] = [
        ("--out <file>", "The index file to write (atomically). An existing one is reused: unchanged chunks are not re-embedded."),
        ModelOption.help,
        ("--late-chunking", "Encode each page once and pool each chunk's own token span (chunks carry page context)."),
        ("--lexical-only", "Skip embeddings: BM25 only (no model needed)."),
        ("--codes <list>", "Also store int8 and/or binary codes for 'search --precision' (comma-separated, or none; default: as the existing file)."),
    ]
    static let valueOptions: Set<String> = ["out", "model", "codes"]
    static let flagOptions: Set<String> = ["late-chunking", "lexical-only"]

    let parsed: ParsedArguments
    let folders: [URL]
    let output: URL
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
        guard let out = parsed.values["out"] else { throw CLIError.usage("missing --out <file>") }
        if parsed.flags.contains("lexical-only"), parsed.flags.contains("late-chunking") {
            throw CLIError.usage("--late-chunking needs embeddings; it cannot go with --lexical-only")
        }
        folders = parsed.positionals.map { URL(fileURLWithPath: $0) }
        output = URL(fileURLWithPath: out)
    }

    func run() throws {
        for folder in folders {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError.noInput("folder '\(folder.path)' does not exist")
            }
        }
        // Fail now, not after minutes of embedding, when the index cannot be written there.
        do { try AtomicFile.checkWritable(output) } catch let error as VectorIndexError {
            throw CLIError.failure(error.description)
        }
        let embedding = parsed.flags.contains("lexical-only") ? nil : try ModelOption.load(parsed)
        let store = EmbeddingStore(embedding: embedding, lateChunking: parsed.flags.contains("late-chunking"))
        if FileManager.default.fileExists(atPath: output.path) {
            do { try blockingAwait { try await store.load(from: self.output) } } catch {
                Console.note("note: not reusing \(output.path) (\(error)); indexing from scratch")
            }
        }
        var pages = [EmbeddingStore.Page]()
        for folder in folders {
            let files: [(url: URL, relative: String)]
            do { files = try MarkdownChunker.markdownFiles(in: folder) } catch let error as RetrievalError {
                throw CLIError.noInput(error.description)
            }
            for (url, relative) in files {
                do { pages.append(.init(source: relative, text: try MarkdownChunker.readText(url))) } catch let error as RetrievalError {
                    Console.note("warning: skipped \(error)")
                }
            }
        }
        guard !pages.isEmpty else { throw CLIError.data("no readable Markdown files found") }
        let start = Date()
        let progressBox = ProgressBox(Progress("embedding", total: nil))
        let allPages = pages
        if let codes { try blockingAwait { await store.keepCodes(codes) } }
        let stats = try blockingAwait {
            try await store.replace(with: allPages) { done, total in progressBox.update(done, total) }
        }
        let seconds = Date().timeIntervalSince(start)
        do { try blockingAwait { try await store.save(to: self.output) } } catch let error as VectorIndexError {
            throw CLIError.failure(error.description)
        }
        let rate = seconds > 0 ? Double(stats.embedded) / seconds : 0
        Console.note(String(format: "indexed %d pages, %d chunks: %d embedded, %d reused, %d removed in %.2f s (%.0f chunks/s)%@",
                            pages.count, stats.chunks, stats.embedded, stats.reused, stats.removed, seconds, rate,
                            stats.lateChunkingFallbacks > 0 ? ", \(stats.lateChunkingFallbacks) late-chunking fallbacks" : ""))
        print("wrote \(output.path)")
    }
}

/// Progress reported from the embedding task.
final class ProgressBox: Sendable {
    private let progress: Mutex<Progress>

    init(_ progress: Progress) { self.progress = Mutex(progress) }

    func update(_ done: Int, _ total: Int) {
        progress.withLock { progress in
            if progress.total != total { progress = Progress(progress.label, total: total) }
            progress.update(done)
        }
    }
}

/// Runs async work from the synchronous command line (a thread of its own, see `EmbeddingsMain`)
/// and waits for it.
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let semaphore = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        semaphore.signal()
    }
    semaphore.wait()
    return try result.withLock { $0 }!.get()
}
