import CommandLineOptions
import Foundation
import JSONText
import PostgresStorage
import Retrieval
import VectorIndex

/// `embeddings export`: an index's chunks and vectors as .npy, .fvecs, JSON Lines or a SQL script
/// for PostgreSQL with pgvector.
struct ExportCommand: Command {
    static let name = "export"
    static let abstract = "Write an index's vectors as npy, fvecs, JSON Lines or a pgvector SQL script."
    enum Format: String, CaseIterable, Sendable {
        case npy, fvecs, jsonl, pgvector
    }

    static let format = Option<Format>(
        "--format", valueName: "f",
        help:
            "What to write. npy: a float32 [n, d] NumPy array; fvecs: FAISS/TEXMEX, int32 d then d float32 per row; jsonl: {\"id\", \"source\", \"headings\", \"title\", \"text\", \"vector\"} per line; pgvector: a script for 'psql -f' (table, COPY, HNSW index)."
    )
    static let table = Option<String>(
        "--table", valueName: "name",
        help: "With --format pgvector: the table to create, a letter or _ then letters, digits or _.", default: "chunks"
    )
    static let out = SharedOptions.out.with(
        help: "Where to write, atomically. Ids for npy/fvecs go to <file>.ids.txt.",
        defaultDescription: "standard output")

    static var options: [any OptionDeclaration] {
        [
            SharedOptions.index.with(help: "An index file written by 'embeddings index'.").required, format.required,
            table, out, SharedOptions.quiet,
        ]
    }

    let parsed: ParsedArguments
    let format: Format
    /// The pgvector table, folded to lower case as PostgreSQL folds an unquoted name.
    let table: String

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        format = try parsed.value(Self.format)
        let table = try parsed.value(Self.table)
        if parsed.contains(Self.table) {
            guard format == .pgvector else {
                throw CLIError.usage("\(Self.table.name) goes with \(Self.format.name) pgvector")
            }
            guard Self.isPlainIdentifier(table) else {
                throw CLIError.usage(
                    "\(Self.table.name) takes a plain SQL name (a letter or _, then letters, digits or _; at most 63), got '\(table)'"
                )
            }
        }
        self.table = table.lowercased()
        _ = try parsed.value(SharedOptions.index)
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes (PostgreSQL cuts longer names short): the
    /// store's rule (`SQLText.isPlainIdentifier`), with uppercase folded.
    static func isPlainIdentifier(_ name: String) -> Bool {
        SQLText.isPlainIdentifier(name, maximumLength: 63, allowingUppercase: true)
    }

    func run() throws {
        Console.configure(parsed)
        let path = try parsed.value(SharedOptions.index)
        let url = URL(fileURLWithPath: path)
        try InputFile.check(url, what: "index file")
        let store = EmbeddingStore(embedding: nil)
        try StoreOption.load(store, from: url)
        // A lexical-only file (indexed with --lexical-only) loads without vectors or fingerprint:
        // it is saved with zero vectors that only keep the ids in line, so there is nothing to export.
        let fingerprint = try store.statistics().fingerprint
        let vectors = store.vectors()
        if vectors == nil {
            guard format == .jsonl else {
                throw CLIError.data(
                    "'\(path)' is a lexical-only index (built with --lexical-only): it has no vectors to write as \(format.rawValue)"
                )
            }
            Console.note("note: '\(path)' is a lexical-only index: the rows carry no \"vector\"")
        }
        let exporter = Exporter(
            format: format, table: table, chunks: store.chunks, vectors: vectors,
            modelIdentifier: fingerprint?.modelIdentifier ?? "none")
        var progress = Progress(
            "exporting", total: exporter.chunks.count, writesToStandardOutput: !parsed.contains(Self.out))
        guard let out = parsed[Self.out] else {
            // A reader that goes away ends the process here, by SIGPIPE, before the final progress line.
            try exporter.write(progress: &progress) { Output.writeToStandardOutput($0) }
            progress.finish()
            return
        }
        do {
            try AtomicFile.write(to: URL(fileURLWithPath: out)) { sink in
                try exporter.write(progress: &progress) { piece in try piece.withUnsafeBytes(sink) }
            }
            if let vectors, format == .npy || format == .fvecs {
                try AtomicFile.write(to: URL(fileURLWithPath: out + ".ids.txt")) { sink in
                    try Data(vectors.ids.map { $0 + "\n" }.joined().utf8).withUnsafeBytes(sink)
                }
            }
        } catch let error as VectorIndexError {
            throw CLIError.failure("cannot write \(out): \(error.description)")
        }
        progress.finish()
        if let vectors {
            Console.note("wrote \(vectors.count) vectors of \(vectors.dimension) dimensions to \(out)")
        } else {
            Console.note("wrote \(exporter.chunks.count) chunks to \(out)")
        }
    }
}

/// One export: a header, a piece per chunk (in index order), a trailer.
struct Exporter {
    let format: ExportCommand.Format
    let table: String
    let chunks: [Chunk]
    /// The vectors, row i for chunk i; nil for a lexical-only index (jsonl only).
    let vectors: FlatIndex?
    let modelIdentifier: String

    /// pgvector's HNSW index takes vectors of at most this many dimensions.
    static let hnswDimensionLimit = 2_000

    /// Hands the whole export to `deliver` in pieces of about 1 MiB: neither a file nor a pipe
    /// waits for all of it to be made, and it is never all in memory.
    func write(progress: inout Progress, to deliver: (Data) throws -> Void) throws {
        precondition(format == .jsonl || vectors?.count == chunks.count, "every row of a vector format needs a vector")
        var piece = header()
        for row in chunks.indices {
            append(row, to: &piece)
            if piece.count >= 1 << 20 {
                try deliver(piece)
                piece.removeAll(keepingCapacity: true)
            }
            progress.update(row + 1)
        }
        piece.append(trailer())
        try deliver(piece)
    }

    private var dimension: Int { vectors?.dimension ?? 0 }

    /// Calls `body` with row `row`'s vector (empty without vectors). The buffer must not escape.
    private func withVector<R>(_ row: Int, _ body: (UnsafeBufferPointer<Float>) -> R) -> R {
        guard let vectors else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        return vectors.withUnsafeVectors { all in
            body(UnsafeBufferPointer(rebasing: all[(row * dimension)..<((row + 1) * dimension)]))
        }
    }

    private func header() -> Data {
        switch format {
        case .npy:
            var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(chunks.count), \(dimension)), }"
            while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
            header += "\n"
            var data = Data([0x93] + Array("NUMPY".utf8) + [1, 0])
            data.append(contentsOf: [UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)])
            data.append(contentsOf: Array(header.utf8))
            return data
        case .fvecs, .jsonl:
            return Data()
        case .pgvector:
            let name = PGCopy.quotedIdentifier(table)
            return Data(
                """
                -- Chunks and vectors of an index made by 'embeddings index', written by 'embeddings export --format pgvector'.
                -- Load into a database with pgvector available: psql -f FILE (this script stops at the first error).
                -- \(chunks.count) rows; \(dimension)-dimensional vectors from \(PGCopy.commentSafe(modelIdentifier)):
                -- embed questions with that model and rank by cosine distance, ORDER BY embedding <=> $1.
                \\set ON_ERROR_STOP on
                SET client_encoding = 'UTF8';
                BEGIN;
                CREATE EXTENSION IF NOT EXISTS vector;
                CREATE TABLE \(name) (
                    id text PRIMARY KEY,
                    source text NOT NULL,
                    headings text[] NOT NULL,
                    title text NOT NULL,
                    text text NOT NULL,
                    embedding vector(\(dimension)) NOT NULL
                );
                COPY \(name) (id, source, headings, title, text, embedding) FROM stdin;

                """.utf8)
        }
    }

    private func append(_ row: Int, to data: inout Data) {
        let chunk = chunks[row]
        switch format {
        case .npy:
            // Both formats are little-endian, as every platform Swift runs on is.
            withVector(row) { data.append($0) }
        case .fvecs:
            withUnsafeBytes(of: Int32(dimension).littleEndian) { data.append(contentsOf: $0) }
            withVector(row) { data.append($0) }
        case .jsonl:
            var json = JSONWriter()
            json.beginObject()
            json.field("id", chunk.id)
            json.field("source", chunk.source)
            json.key("headings")
            json.strings(chunk.headings)
            json.field("title", chunk.title)
            json.field("text", chunk.text)
            if vectors != nil {
                json.key("vector")
                withVector(row) { json.floats($0) }
            }
            json.endObject()
            data.append(contentsOf: json.text.utf8)
            data.append(UInt8(ascii: "\n"))
        case .pgvector:
            var line = PGCopy.field(chunk.id)
            line += "\t" + PGCopy.field(chunk.source)
            line += "\t" + PGCopy.field(SQLText.array(chunk.headings))
            line += "\t" + PGCopy.field(chunk.title)
            line += "\t" + PGCopy.field(chunk.text)
            line += "\t" + withVector(row) { SQLText.vector($0) } + "\n"
            data.append(contentsOf: line.utf8)
        }
    }

    private func trailer() -> Data {
        guard format == .pgvector else { return Data() }
        let name = PGCopy.quotedIdentifier(table)
        let index =
            dimension <= Self.hnswDimensionLimit
            ? "CREATE INDEX ON \(name) USING hnsw (embedding vector_cosine_ops);"
            : "-- No HNSW index: pgvector indexes vectors of at most \(Self.hnswDimensionLimit) dimensions; searches scan the table."
        return Data(
            """
            \\.
            \(index)
            ANALYZE \(name);
            COMMIT;

            """.utf8)
    }
}

/// COPY's text format for `export --format pgvector`: fields, a quoted name, comments. The array
/// and pgvector literals inside the fields are the store's (`SQLText`), written once.
enum PGCopy {
    /// A field of COPY's text format: backslash, tab, newline and carriage return escaped.
    /// NUL (U+0000) is dropped: PostgreSQL text cannot hold it.
    static func field(_ s: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(s.unicodeScalars.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\u{0}": continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A name checked by `ExportCommand.isPlainIdentifier`, quoted so that reserved words
    /// (`user`, `order`) work too.
    static func quotedIdentifier(_ name: String) -> String { "\"" + name + "\"" }

    /// Text for a `--` comment: control characters (a newline would end it) become spaces.
    static func commentSafe(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }
}
