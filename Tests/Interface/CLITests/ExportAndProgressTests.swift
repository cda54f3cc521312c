import Foundation
import LinearAlgebra
import ModelTestSupport
import Retrieval
import Synchronization
import TestSupport
import VectorIndex
import XCTest

/// `embeddings export` (every chunk field in JSON Lines, the pgvector script and its load into a
/// real PostgreSQL), a reader that goes away, and progress on standard error.
final class ExportAndProgressTests: XCTestCase {
    /// A corpus with text that breaks naive escaping, indexed once (with the model) for all tests.
    struct Corpus {
        var folder: URL
        var index: URL
        /// The `embeddings index` run that built `index`, and how long it took.
        var build: CLITests.Run
        var seconds: Double
        var chunks: [Chunk]
        var vectors: FlatIndex
    }

    /// Quotes, an SQL injection, backslashes (`\N`, `\t` and `\.` written out), a tab, a carriage
    /// return, NUL characters (in text and in a heading), non-ASCII, and commas, braces and NULL in
    /// a heading (a `text[]` element).
    static let hostilePage = """
        # Hostile "quotes" and \\ backslashes

        Single 'quotes', "double quotes", a tab:\there, a NUL:\u{0}here, \\N and \\t written out, ünïcödé 東京 🚀.

        ## '); DROP TABLE chunks; --

        A line, then a line that ends a COPY block:
        \\.
        then carriage\rreturn, and more.

        ## NULL, {braces}, "quotes" \\ and a NUL\u{0}in a heading

        Commas, braces and the word NULL in a heading must stay text in a text[] array.
        """

    /// Enough plain chunks that an export (about 4 KB per JSON row) outgrows a 64 KB pipe buffer.
    static let fillerPage =
        "# Filler\n\n"
        + (1...30).map {
            "## Section \($0)\n\nClosures capture the values around them; section \($0) says so in its own words.\n\n"
        }.joined()

    private static let corpus = Mutex<Result<Corpus, any Error>?>(nil)

    static func sharedCorpus() throws -> Corpus {
        try corpus.withOrderedLock { cached in
            if let cached { return try cached.get() }
            let result = Result { try makeCorpus() }
            cached = result
            return try result.get()
        }
    }

    private static func makeCorpus() throws -> Corpus {
        _ = try TestModel.shared()  // installs the model once, so the command finds it
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID())")
        let docs = folder.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        try Data(hostilePage.utf8).write(to: docs.appendingPathComponent("hostile.md"))
        try Data(fillerPage.utf8).write(to: docs.appendingPathComponent("filler.md"))
        let index = folder.appendingPathComponent("corpus.index")
        let start = Date()
        let build = try ChildProcess.run(CLITests.executable, ["index", docs.path, "--out", index.path])
        let seconds = Date().timeIntervalSince(start)
        guard build.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: build.stderr])
        }
        let (chunks, vectors) = try load(index)
        guard let vectors else { throw CocoaError(.fileReadCorruptFile) }
        return Corpus(folder: folder, index: index, build: build, seconds: seconds, chunks: chunks, vectors: vectors)
    }

    override class func tearDown() {
        if let folder = try? corpus.withOrderedLock({ try $0?.get().folder }) {
            try? FileManager.default.removeItem(at: folder)
        }
        super.tearDown()
    }

    /// The chunks and vectors of an index file, as the library reads them.
    static func load(_ url: URL) throws -> ([Chunk], FlatIndex?) {
        let store = EmbeddingStore(embedding: nil)
        try store.load(from: url)
        return (store.chunks, store.vectors())
    }

    func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-test-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    func vector(_ row: Int, of index: FlatIndex) -> [Float] {
        index.withUnsafeVectors { Array($0[(row * index.dimension)..<((row + 1) * index.dimension)]) }
    }

    func testCorpusHoldsTheHostileCharacters() throws {
        let corpus = try Self.sharedCorpus()
        let all = corpus.chunks.map { ([$0.text] + $0.headings).joined(separator: "|") }.joined()
        for needle in [
            "\"", "'); DROP TABLE chunks; --", "\\N", "\\t", "\n\\.\n", "\t", "\r", "\u{0}", "東京 🚀", "{braces}",
        ] {
            XCTAssertTrue(all.contains(needle), "the chunker kept \(needle.debugDescription)")
        }
        XCTAssertTrue(corpus.chunks.contains { $0.headings.contains { $0.contains("\u{0}") } }, "a heading with a NUL")
    }

    // MARK: JSON Lines

    func testJSONLinesRowsCarryEveryChunkFieldAndTheExactVector() throws {
        let corpus = try Self.sharedCorpus()
        let r = try embeddings(["export", "--index", corpus.index.path, "--format", "jsonl"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertEqual(lines.count, corpus.chunks.count)
        XCTAssertTrue(r.stdout.hasSuffix("}\n"))
        for (row, (line, chunk)) in zip(lines, corpus.chunks).enumerated() {
            let object = try XCTUnwrap(
                JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
            XCTAssertEqual(Set(object.keys), ["id", "source", "headings", "title", "text", "vector"])
            XCTAssertEqual(object["id"] as? String, chunk.id)
            XCTAssertEqual(object["source"] as? String, chunk.source)
            XCTAssertEqual(object["headings"] as? [String], chunk.headings, chunk.id)
            XCTAssertEqual(object["title"] as? String, chunk.title)
            XCTAssertEqual(object["text"] as? String, chunk.text, chunk.id)
            let floats = try XCTUnwrap(object["vector"] as? [Double]).map { Float($0) }
            XCTAssertEqual(floats, vector(row, of: corpus.vectors), "floats round-trip exactly: \(chunk.id)")
        }
    }

    /// A lexical-only index has no vectors: JSON Lines rows leave `vector` out, the binary and SQL
    /// formats refuse (exit 65), and `--quiet` does not hide that error.
    func testLexicalOnlyIndexExportsTextWithoutVectors() throws {
        let corpus = try Self.sharedCorpus()
        let folder = try temporaryFolder()
        let index = folder.appendingPathComponent("lexical.index").path
        let built = try embeddings([
            "index", corpus.folder.appendingPathComponent("docs").path, "--out", index, "--lexical-only", "--quiet",
        ])
        XCTAssertEqual(built.status, 0, built.stderr)
        let r = try embeddings(["export", "--index", index, "--format", "jsonl"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let rows = try r.stdout.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        XCTAssertEqual(rows.map { $0["id"] as? String }, corpus.chunks.map(\.id))
        XCTAssertEqual(rows.map { $0["text"] as? String }, corpus.chunks.map(\.text))
        for row in rows { XCTAssertEqual(Set(row.keys), ["id", "source", "headings", "title", "text"]) }
        for format in ["npy", "fvecs", "pgvector"] {
            for quiet in [[], ["--quiet"]] {
                let refused = try embeddings(["export", "--index", index, "--format", format] + quiet)
                XCTAssertEqual(refused.status, 65, "\(format): \(refused.stderr)")
                XCTAssertEqual(
                    refused.stderr.split(separator: "\n").filter {
                        $0.hasPrefix("error: ") && $0.contains("lexical-only")
                    }.count, 1, refused.stderr)
                XCTAssertEqual(refused.stdout, "")
            }
        }
    }

    // MARK: pgvector

    /// Decodes one field of COPY's text format (the escapes the exporter writes, and nothing else).
    func copyDecoded(_ field: Substring) throws -> String {
        var out = ""
        var scalars = field.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "\\" else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalars.next() {
            case "\\": out += "\\"
            case "t": out += "\t"
            case "n": out += "\n"
            case "r": out += "\r"
            case let other:
                throw CocoaError(
                    .coderInvalidValue,
                    userInfo: [NSLocalizedDescriptionKey: "unexpected escape \\\(other.map(String.init) ?? "")"])
            }
        }
        return out
    }

    /// The elements of a `text[]` literal whose elements are all quoted.
    func arrayDecoded(_ literal: String) throws -> [String] {
        var scalars = Array(literal.unicodeScalars)
        guard scalars.first == "{", scalars.last == "}" else { throw CocoaError(.coderInvalidValue) }
        scalars = Array(scalars.dropFirst().dropLast())
        var elements = [String]()
        var i = 0
        while i < scalars.count {
            guard scalars[i] == "\"" else { throw CocoaError(.coderInvalidValue) }
            var element = ""
            i += 1
            while i < scalars.count, scalars[i] != "\"" {
                if scalars[i] == "\\" { i += 1 }
                guard i < scalars.count else { throw CocoaError(.coderInvalidValue) }
                element.unicodeScalars.append(scalars[i])
                i += 1
            }
            elements.append(element)
            i += 1
            if i < scalars.count {
                guard scalars[i] == "," else { throw CocoaError(.coderInvalidValue) }
                i += 1
            }
        }
        return elements
    }

    /// The components of a pgvector literal `[…]` (NaN for one that does not parse).
    func floats(_ literal: Substring) -> [Float] {
        literal.dropFirst().dropLast().split(separator: ",").map { Float(String($0)) ?? .nan }
    }

    func withoutNUL(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.filter { $0 != "\u{0}" }))
    }

    func testPGVectorScriptEscapesHostileTextExactly() throws {
        let corpus = try Self.sharedCorpus()
        let r = try embeddings(["export", "--index", corpus.index.path, "--format", "pgvector"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let script = r.stdout
        XCTAssertFalse(script.unicodeScalars.contains("\u{0}"), "NUL cannot reach PostgreSQL text")
        XCTAssertFalse(script.unicodeScalars.contains("\r"), "carriage returns are escaped")
        let lines = script.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let copy = try XCTUnwrap(
            lines.firstIndex(of: #"COPY "chunks" (id, source, headings, title, text, embedding) FROM stdin;"#))
        let end = try XCTUnwrap(lines.firstIndex(of: "\\."))
        XCTAssertEqual(end - copy - 1, corpus.chunks.count, "one line per chunk: no newline escaped the COPY data")
        let before = lines[..<copy]
        let after = lines[(end + 1)...]
        for statement in [
            #"\set ON_ERROR_STOP on"#, "SET client_encoding = 'UTF8';", "BEGIN;",
            "CREATE EXTENSION IF NOT EXISTS vector;",
            #"CREATE TABLE "chunks" ("#, "    headings text[] NOT NULL,", "    embedding vector(384) NOT NULL",
        ] {
            XCTAssertTrue(before.contains(statement), statement)
        }
        XCTAssertEqual(
            Array(after),
            [
                #"CREATE INDEX ON "chunks" USING hnsw (embedding vector_cosine_ops);"#, #"ANALYZE "chunks";"#,
                "COMMIT;", "",
            ])
        XCTAssertFalse((before + after).contains { $0.contains("DROP TABLE") }, "the injection stays inside the data")

        for (row, (line, chunk)) in zip(lines[(copy + 1)..<end], corpus.chunks).enumerated() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            XCTAssertEqual(fields.count, 6, "tabs in the text are escaped: \(line)")
            guard fields.count == 6 else { continue }
            XCTAssertEqual(try copyDecoded(fields[0]), chunk.id)
            XCTAssertEqual(try copyDecoded(fields[1]), chunk.source)
            XCTAssertEqual(try arrayDecoded(try copyDecoded(fields[2])), chunk.headings.map(withoutNUL), chunk.id)
            XCTAssertEqual(try copyDecoded(fields[3]), withoutNUL(chunk.title))
            XCTAssertEqual(try copyDecoded(fields[4]), withoutNUL(chunk.text), chunk.id)
            XCTAssertTrue(fields[5].hasPrefix("[") && fields[5].hasSuffix("]"))
            XCTAssertEqual(floats(fields[5]), vector(row, of: corpus.vectors), chunk.id)
        }
        // The exact bytes for the hostile pieces: a real tab, a written-out \t, the \. line, CR.
        let injection = try XCTUnwrap(lines.first { $0.hasPrefix("hostile#drop-table-chunks\t") })
        XCTAssertTrue(
            injection.contains(
                #"'); DROP TABLE chunks; --\n\nA line, then a line that ends a COPY block:\n\\.\nthen carriage\rreturn"#
            ), injection)
        let first = try XCTUnwrap(lines.first { $0.hasPrefix("hostile#hostile-quotes-and-backslashes\t") })
        XCTAssertTrue(first.contains(#"a tab:\there, a NUL:here, \\N and \\t written out, ünïcödé 東京 🚀."#), first)
        XCTAssertTrue(
            first.contains(#"{"Hostile \\"quotes\\" and \\\\ backslashes"}"#),
            "array quotes and backslashes, then COPY's: \(first)")
        let nullHeading = try XCTUnwrap(lines.first { $0.hasPrefix("hostile#null-braces") })
        XCTAssertTrue(nullHeading.contains(#""NULL, {braces}, \\"quotes\\" \\\\ and a NULin a heading"}"#), nullHeading)
    }

    func testTableNameMustBeAPlainIdentifier() throws {
        let corpus = try Self.sharedCorpus()
        for bad in [
            "1chunks", "my-chunks", "my chunks", "\"chunks\"", "chunks;DROP", "chunks\n", "", "tablé",
            String(repeating: "a", count: 64),
        ] {
            let r = try embeddings(["export", "--index", corpus.index.path, "--format", "pgvector", "--table", bad])
            XCTAssertEqual(r.status, 64, "\(bad.debugDescription): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("error: --table"), r.stderr)
            XCTAssertEqual(r.stdout, "")
        }
        let notSQL = try embeddings(["export", "--index", corpus.index.path, "--format", "jsonl", "--table", "chunks"])
        XCTAssertEqual(notSQL.status, 64, notSQL.stderr)
        // Folded to lower case as PostgreSQL folds a bare name; quoted so that reserved words work.
        for (name, quoted) in [
            ("My_Chunks2", #""my_chunks2""#), ("user", #""user""#),
            ("_" + String(repeating: "x", count: 62), "\"_" + String(repeating: "x", count: 62) + "\""),
        ] {
            let r = try embeddings(["export", "--index", corpus.index.path, "--format", "pgvector", "--table", name])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("CREATE TABLE \(quoted) ("), name)
            XCTAssertTrue(r.stdout.contains("COPY \(quoted) (id, source"), name)
            XCTAssertTrue(r.stdout.contains("ANALYZE \(quoted);"), name)
        }
    }

    /// The bundled psql of scripts/postgres.sh, else one on PATH.
    func psql() throws -> URL {
        let root = TestFixtures.folder.deletingLastPathComponent()
        let lib = root.appendingPathComponent(".build/postgres/venv/lib")
        for python in (try? FileManager.default.contentsOfDirectory(atPath: lib.path))?.sorted() ?? [] {
            let candidate = lib.appendingPathComponent("\(python)/site-packages/pgserver/pginstall/bin/psql")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("psql")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CocoaError(
            .fileNoSuchFile,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "CE_POSTGRES_URL is set but no psql was found (run scripts/postgres.sh start)"
            ])
    }

    /// `psql -v ON_ERROR_STOP=1 -f` loads the script into a real PostgreSQL with pgvector: every
    /// text (without its NULs) and every float comes back, and the HNSW index answers a
    /// nearest-neighbour query.
    func testPGVectorScriptLoadsIntoPostgreSQL() throws {
        let url = try TestServer.url()  // never skipped: see TestServer
        let corpus = try Self.sharedCorpus()
        let psql = try psql()
        var environment = ProcessInfo.processInfo.environment
        environment["PGCLIENTENCODING"] = "UTF8"
        func sql(_ arguments: [String]) throws -> CLITests.Run {
            try ChildProcess.run(
                psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", url] + arguments, environment: environment)
        }
        // A table of its own (mixed case: PostgreSQL folds it), since the database is shared.
        let table = "Export_Test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)
        let name = table.lowercased()
        let script = try temporaryFolder().appendingPathComponent("chunks.sql")
        let export = try embeddings([
            "export", "--index", corpus.index.path, "--format", "pgvector", "--table", table, "--out", script.path,
            "--quiet",
        ])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertEqual(export.stderr, "", "--quiet")
        addTeardownBlock { _ = try? sql(["-c", "DROP TABLE IF EXISTS \(name)"]) }
        let load = try sql(["-f", script.path])
        XCTAssertEqual(load.status, 0, load.stderr)
        XCTAssertFalse(load.stderr.contains("ERROR"), load.stderr)

        let query =
            "SELECT json_agg(json_build_object('id', id, 'source', source, 'headings', headings, 'title', title, 'text', text, 'embedding', embedding::text)) FROM \(name)"
        let rows = try sql(["-At", "-c", query])
        XCTAssertEqual(rows.status, 0, rows.stderr)
        let objects = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(rows.stdout.utf8)) as? [[String: Any]], rows.stdout)
        let byID = Dictionary(objects.map { ($0["id"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byID.count, corpus.chunks.count)
        for (row, chunk) in corpus.chunks.enumerated() {
            let object = try XCTUnwrap(byID[chunk.id], chunk.id)
            XCTAssertEqual(object["source"] as? String, chunk.source)
            XCTAssertEqual(object["headings"] as? [String], chunk.headings.map(withoutNUL), chunk.id)
            XCTAssertEqual(object["title"] as? String, withoutNUL(chunk.title))
            XCTAssertEqual(object["text"] as? String, withoutNUL(chunk.text), chunk.id)
            let embedding = try XCTUnwrap(object["embedding"] as? String)
            XCTAssertEqual(floats(Substring(embedding)), vector(row, of: corpus.vectors), chunk.id)
        }

        let indexes = try sql([
            "-At", "-c", "SELECT indexdef FROM pg_indexes WHERE tablename = '\(name)' AND indexdef LIKE '%USING hnsw%'",
        ])
        XCTAssertEqual(indexes.stdout.split(separator: "\n").count, 1, indexes.stdout + indexes.stderr)
        // A table this small is scanned unless the planner is told not to: make it use the HNSW index.
        let target = "hostile#drop-table-chunks"
        let nearestQuery =
            "SELECT id FROM \(name) ORDER BY embedding <=> (SELECT embedding FROM \(name) WHERE id = '\(target)') LIMIT 5"
        let plan = try sql(["-At", "-c", "SET enable_seqscan = off", "-c", "EXPLAIN " + nearestQuery])
        XCTAssertTrue(plan.stdout.contains("\(name)_embedding_idx"), plan.stdout + plan.stderr)
        let nearest = try sql(["-At", "-c", "SET enable_seqscan = off", "-c", nearestQuery])
        XCTAssertEqual(nearest.status, 0, nearest.stderr)
        let ids = nearest.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(ids.count, 5, nearest.stdout)
        XCTAssertEqual(ids.first, target)
    }

    // MARK: A reader that goes away

    /// `export … | head -c 600`: SIGPIPE's 141 (or 0), nothing on stderr. Both outputs are far
    /// larger than a pipe buffers, so the export cannot finish (and report) first.
    func testExportToAClosedPipeStopsQuietly() throws {
        let corpus = try Self.sharedCorpus()
        let folder = try temporaryFolder()
        let errors = folder.appendingPathComponent("stderr.txt").path
        for format in ["jsonl", "pgvector"] {
            let script =
                #""$0" export --index "$1" --format "$3" 2>"$2" | head -c 600 >/dev/null; echo "status=${PIPESTATUS[0]}""#
            let r = try ChildProcess.run(
                URL(fileURLWithPath: "/bin/bash"),
                ["-c", script, CLITests.executable.path, corpus.index.path, errors, format])
            let status = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertTrue(status == "status=141" || status == "status=0", "\(format): \(status) \(r.stderr)")
            XCTAssertEqual(
                (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "", "", "\(format): nothing on stderr")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["stderr.txt"])
    }

    // MARK: Progress

    /// With stderr a pipe, `index` prints plain `embedding: done/total` lines (no carriage
    /// returns), at most about once a second, ending with the total.
    func testIndexPrintsPlainProgressLinesToAPipe() throws {
        let corpus = try Self.sharedCorpus()
        let stderr = corpus.build.stderr
        XCTAssertFalse(stderr.contains("\r"), stderr)
        let progress = stderr.split(separator: "\n").filter { $0.hasPrefix("embedding") }
        XCTAssertFalse(progress.isEmpty, stderr)
        for line in progress {
            let counts = line.dropFirst("embedding: ".count).split(separator: "/", omittingEmptySubsequences: false)
            XCTAssertTrue(
                line.hasPrefix("embedding: ") && counts.count == 2 && counts.allSatisfy { Int($0) != nil }, String(line)
            )
        }
        XCTAssertEqual(progress.last.map(String.init), "embedding: \(corpus.chunks.count)/\(corpus.chunks.count)")
        XCTAssertLessThanOrEqual(Double(progress.count), corpus.seconds + 2, "about once a second: \(stderr)")
        XCTAssertTrue(
            stderr.contains("indexed 2 pages, \(corpus.chunks.count) chunks: \(corpus.chunks.count) embedded"), stderr)
    }

    /// `--quiet` silences progress and notes of index, embed and export; what they write to
    /// stdout is unchanged.
    func testQuietSilencesProgressAndNotes() throws {
        let corpus = try Self.sharedCorpus()
        let folder = try temporaryFolder()
        let quietIndex = try embeddings([
            "index", corpus.folder.appendingPathComponent("docs").path, "--out",
            folder.appendingPathComponent("q.index").path, "--quiet",
        ])
        XCTAssertEqual(quietIndex.status, 0, quietIndex.stderr)
        XCTAssertEqual(quietIndex.stderr, "")
        XCTAssertEqual(quietIndex.stdout, "wrote \(folder.appendingPathComponent("q.index").path)\n")

        let input = (0..<3).map { #"{"id": "t\#($0)", "text": "Text \#($0)."}"# }.joined(separator: "\n") + "\n"
        let embed = try embeddings(["embed"], input: Data(input.utf8))
        XCTAssertEqual(embed.status, 0, embed.stderr)
        XCTAssertEqual(embed.stderr, "embedded: 3\n", "the final count of a stream")
        let quietEmbed = try embeddings(["embed", "--quiet"], input: Data(input.utf8))
        XCTAssertEqual(quietEmbed.stderr, "")
        XCTAssertEqual(quietEmbed.stdout, embed.stdout)

        let out = folder.appendingPathComponent("v.npy").path
        let export = try embeddings(["export", "--index", corpus.index.path, "--format", "npy", "--out", out])
        XCTAssertEqual(export.status, 0, export.stderr)
        let n = corpus.chunks.count
        XCTAssertEqual(export.stderr, "exporting: \(n)/\(n)\nwrote \(n) vectors of 384 dimensions to \(out)\n")
        let quietExport = try embeddings([
            "export", "--index", corpus.index.path, "--format", "npy", "--out", out, "--quiet",
        ])
        XCTAssertEqual(quietExport.status, 0, quietExport.stderr)
        XCTAssertEqual(quietExport.stderr, "")
        XCTAssertEqual(
            try String(contentsOfFile: out + ".ids.txt", encoding: .utf8), corpus.chunks.map { $0.id + "\n" }.joined())
    }

    /// On a terminal (a pseudo-terminal from script(1)) progress is a bar redrawn in place.
    func testProgressIsABarOnATerminal() throws {
        let script = URL(fileURLWithPath: "/usr/bin/script")
        guard FileManager.default.isExecutableFile(atPath: script.path) else {
            throw XCTSkip("no /usr/bin/script to run the command on a pseudo-terminal")
        }
        let corpus = try Self.sharedCorpus()
        let out = try temporaryFolder().appendingPathComponent("v.fvecs").path
        func onTerminal(_ arguments: [String]) throws -> CLITests.Run {
            let command = ([CLITests.executable.path] + arguments).map {
                "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
            }.joined(separator: " ")
            return try ChildProcess.run(script, ["-q", "-e", "-c", command, "/dev/null"])
        }
        let n = corpus.chunks.count
        let r = try onTerminal(["export", "--index", corpus.index.path, "--format", "fvecs", "--out", out])
        XCTAssertEqual(r.status, 0, r.stdout)
        XCTAssertTrue(
            r.stdout.contains("\rexporting [" + String(repeating: "#", count: 30) + "] \(n)/\(n)"),
            r.stdout.debugDescription)
        let quiet = try onTerminal([
            "export", "--index", corpus.index.path, "--format", "fvecs", "--out", out, "--quiet",
        ])
        XCTAssertEqual(quiet.status, 0, quiet.stdout)
        XCTAssertEqual(quiet.stdout, "")
    }
}
