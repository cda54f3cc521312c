import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import Synchronization
import VectorIndex

/// Chunks, their vectors and BM25 statistics in PostgreSQL with pgvector: the store for a
/// corpus that outgrows one machine's index file, with the same operations and the same
/// retrieval as `EmbeddingStore`.
///
/// Three tables, named from `tablePrefix` (default `embeddings`):
/// - `<prefix>_meta`: the model fingerprint (a mismatch is an error, never mixed vectors) and
///   the retrieval settings;
/// - `<prefix>_chunks`: one row per chunk, in corpus order (`position`), with its text, content
///   hash and `embedding vector(D)` (NULL in a lexical-only store);
/// - `<prefix>_terms`: the BM25 statistics, one row per (term, chunk) with its count, so BM25 is
///   computed in the database with exactly `BM25`'s formula.
///
/// Semantic search is pgvector's `<=>` (cosine distance) over the normalized vectors: exact by a
/// scan, or approximate through an optional HNSW index. One indexing run is one transaction,
/// serialized with others by an advisory lock: a second run waits for the first and then reuses
/// its vectors; a killed run leaves the previous state whole. Every value is a query parameter.
///
/// A `ChunkStore`: all methods block while the server works (call them from a thread that may
/// block), and the store may be used from many threads at once. An indexing run encodes and
/// writes on a connection of its own, so searches on the same store object, on the store's
/// shared connection, keep answering from the last committed contents while it runs.
public final class PostgresStore: ChunkStore {
    /// The model that embeds chunks and questions; nil for a lexical-only store.
    public let embedding: ContextualEmbedding?
    /// How pages are cut into chunks (as `EmbeddingStore` does).
    public let chunker: MarkdownChunker
    /// How text becomes BM25 terms.
    public let analyzer: Analyzer
    /// The tables' name prefix.
    public let tablePrefix: String
    /// Whether chunk vectors are pooled from their page's token vectors (late chunking) rather
    /// than from each chunk encoded alone, as `EmbeddingStore.lateChunking`. A run that changes it
    /// re-embeds every chunk (their content hashes change with it).
    public let lateChunking: Bool
    /// How to reach the server, for the connection each indexing run opens.
    private let conninfo: String
    /// The connection searches and other short statements share, one statement at a time.
    private let connection: Mutex<PostgresConnection>
    private let state = Mutex(State())
    /// Held for the whole of an update (an indexing run, new settings), so that updates never
    /// interleave; searches do not take it.
    private let updating = Mutex(())

    private struct State {
        var settings = RetrievalSettings()
        var vectorSearch = VectorSearch.exact
        var precomputed: [String: [Float]] = [:]
    }

    /// Vectors by chunk id that `replace` uses instead of encoding (the benchmark's copied
    /// corpora). Counted as embedded.
    package var precomputedVectors: [String: [Float]] {
        get { state.withOrderedLock { $0.precomputed } }
        set { state.withOrderedLock { $0.precomputed = newValue } }
    }

    /// Hybrid-retrieval settings (saved in the store by `replace`).
    public var settings: RetrievalSettings {
        get { state.withOrderedLock { $0.settings } }
        // Like every update, after any indexing run in progress (which saves the settings it began with).
        set { updating.withOrderedLock { _ in state.withOrderedLock { $0.settings = newValue } } }
    }

    /// The vector searches PostgreSQL has: a scan, and pgvector's HNSW index (`buildHNSWIndex()`).
    public static let vectorSearchNames = ["exact", "hnsw"]

    /// How semantic search reads the vectors (`.exact` by default).
    public var vectorSearch: VectorSearch { state.withOrderedLock { $0.vectorSearch } }

    /// Makes semantic search scan every vector (`.exact`) or use the HNSW index (`.hnsw`).
    /// - Throws: `RetrievalError.unsupportedSearch` for int8 or binary codes (an index file's).
    public func setVectorSearch(_ search: VectorSearch) throws {
        switch search {
        case .exact, .hnsw: state.withOrderedLock { $0.vectorSearch = search }
        case .int8, .binary:
            throw RetrievalError.unsupportedSearch(
                "PostgreSQL has no \(search.name) codes: search it \(Self.vectorSearchNames.joined(separator: " or "))")
        }
    }

    private var meta: String { tablePrefix + "_meta" }
    private var chunksTable: String { tablePrefix + "_chunks" }
    private var terms: String { tablePrefix + "_terms" }

    /// Connects to the database (a libpq URI such as `postgresql://user@host/db` or
    /// `postgresql:///db?host=/socket/dir`, a `key=value` string, or "" for the standard
    /// environment `PGHOST`, `PGDATABASE`, `PGUSER`, …) and makes sure pgvector is there.
    /// - Throws: `PostgresStoreError.cannotConnect`, `.vectorExtensionMissing`, `.invalidTablePrefix`.
    public convenience init(
        connection conninfo: String, embedding: ContextualEmbedding?, tablePrefix: String = "embeddings",
        lateChunking: Bool = false, chunker: MarkdownChunker = MarkdownChunker(), analyzer: Analyzer = Analyzer()
    ) throws {
        let connection = try Self.connect(conninfo, tablePrefix: tablePrefix)
        self.init(
            opened: connection, conninfo: conninfo, embedding: embedding, tablePrefix: tablePrefix,
            lateChunking: lateChunking, chunker: chunker, analyzer: analyzer)
    }

    /// Opens the store on `tablePrefix` as `replace` left it, on one connection: the model is the
    /// one `embedding` picks from the fingerprint of the stored vectors (nil for a lexical-only or
    /// empty store), and the retrieval settings are the saved ones.
    /// - Throws: what `init(connection:embedding:tablePrefix:)` throws, `PostgresStoreError.corruptStore`
    ///   for an unreadable fingerprint, and what `embedding` throws.
    public convenience init(
        connection conninfo: String, tablePrefix: String = "embeddings",
        embedding: (IndexFingerprint?) throws -> ContextualEmbedding?
    ) throws {
        let connection = try Self.connect(conninfo, tablePrefix: tablePrefix)
        let model = try embedding(try Self.storedFingerprint(connection, meta: tablePrefix + "_meta"))
        self.init(
            opened: connection, conninfo: conninfo, embedding: model, tablePrefix: tablePrefix,
            lateChunking: false, chunker: MarkdownChunker(), analyzer: Analyzer())
        try loadSettings()
    }

    private init(
        opened connection: sending PostgresConnection, conninfo: String, embedding: ContextualEmbedding?,
        tablePrefix: String,
        lateChunking: Bool, chunker: MarkdownChunker, analyzer: Analyzer
    ) {
        self.connection = Mutex(connection)
        self.conninfo = conninfo
        self.embedding = embedding
        self.tablePrefix = tablePrefix
        self.lateChunking = lateChunking
        self.chunker = chunker
        self.analyzer = analyzer
    }

    /// A connection to the database, with pgvector installed when it is not there yet.
    private static func connect(_ conninfo: String, tablePrefix: String) throws -> PostgresConnection {
        guard SQLText.isPlainIdentifier(tablePrefix, maximumLength: 40, allowingUppercase: false) else {
            throw PostgresStoreError.invalidTablePrefix(tablePrefix)
        }
        let connection = try PostgresConnection(conninfo)
        let installed = try connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        if installed.values.isEmpty {
            do { try connection.execute("CREATE EXTENSION IF NOT EXISTS vector") } catch let error as PostgresStoreError
            {
                switch error {
                case .queryFailed(_, let message), .permissionDenied(let message), .vectorExtensionMissing(let message):
                    throw PostgresStoreError.vectorExtensionMissing(message)
                default: throw error
                }
            }
        }
        return connection
    }

    private func withConnection<R: Sendable>(_ body: (inout sending PostgresConnection) throws -> R) throws -> R {
        try connection.withOrderedLock { c in try body(&c) }
    }

    // MARK: Schema

    private func createTables(_ c: PostgresConnection, dimension: Int?) throws {
        let vectorType = dimension.map { "vector(\($0))" } ?? "vector"
        try c.execute("CREATE TABLE IF NOT EXISTS \(meta) (key text PRIMARY KEY, value text NOT NULL)")
        try c.execute(
            """
            CREATE TABLE IF NOT EXISTS \(chunksTable) (
                id text PRIMARY KEY,
                position integer NOT NULL,
                source text NOT NULL,
                headings text[] NOT NULL,
                title text NOT NULL,
                text text NOT NULL,
                span_start integer,
                span_end integer,
                content_hash text NOT NULL,
                length integer NOT NULL,
                embedding \(vectorType)
            )
            """)
        try c.execute("CREATE INDEX IF NOT EXISTS \(chunksTable)_position ON \(chunksTable) (position)")
        try c.execute(
            """
            CREATE TABLE IF NOT EXISTS \(terms) (
                term text NOT NULL,
                chunk_id text NOT NULL REFERENCES \(chunksTable) (id) ON DELETE CASCADE,
                count integer NOT NULL,
                length integer NOT NULL,
                PRIMARY KEY (term, chunk_id)
            )
            """)
        try c.execute("CREATE INDEX IF NOT EXISTS \(terms)_chunk ON \(terms) (chunk_id)")
    }

    private func tablesExist(_ c: PostgresConnection) throws -> Bool {
        try c.execute("SELECT to_regclass($1) IS NOT NULL AS present", [chunksTable]).values.first?.first == "t"
    }

    private func storedFingerprint(_ c: PostgresConnection) throws -> IndexFingerprint? {
        try Self.storedFingerprint(c, meta: meta)
    }

    private static func storedFingerprint(_ c: PostgresConnection, meta: String) throws -> IndexFingerprint? {
        guard try c.execute("SELECT to_regclass($1) IS NOT NULL", [meta]).values.first?.first == "t" else { return nil }
        guard let json = try c.execute("SELECT value FROM \(meta) WHERE key = 'fingerprint'").values.first?.first ?? nil
        else { return nil }
        guard let fingerprint = try? JSONDecoder().decode(IndexFingerprint.self, from: Data(json.utf8)) else {
            throw PostgresStoreError.corruptStore("\(meta) holds an unreadable fingerprint")
        }
        return fingerprint
    }

    /// The fingerprint of the vectors the store holds, or nil for a lexical-only or empty store.
    public func fingerprint() throws -> IndexFingerprint? {
        try withConnection { try storedFingerprint($0) }
    }

    private func chunkCount(_ c: PostgresConnection) throws -> Int {
        guard try tablesExist(c) else { return 0 }
        let value = try c.execute("SELECT count(*) FROM \(chunksTable)").values.first?.first ?? nil
        return value.flatMap { Int($0) } ?? 0
    }

    // MARK: Indexing

    /// Makes the store hold exactly `pages` in one transaction: chunks whose id and content hash
    /// are unchanged keep their vectors (nothing is re-embedded), changed and new ones are
    /// embedded, chunks of removed pages disappear. Concurrent runs on the same tables wait for
    /// each other. The model must match the store's fingerprint. The run has a connection of its
    /// own (opened here, closed at the end): chunks are encoded batch by batch inside its
    /// transaction with no lock of this object held, so searches answer meanwhile.
    /// - Throws: `VectorIndexError.fingerprintMismatch` before anything changes; server errors
    ///   (the transaction is then rolled back); `EmbeddingsError` from the encoder.
    public func replace(with pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        try updating.withOrderedLock { _ in try update(to: pages, progress: progress) }
    }

    /// One indexing run (`IndexingPipeline`): this store reads what it holds from its chunks
    /// table and writes each batch the run makes as rows, inside one transaction.
    private func update(to pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        let fingerprint = try modelFingerprint()
        let settings = self.settings
        let pipeline = IndexingPipeline(
            chunker: chunker, embedding: embedding, lateChunking: lateChunking,
            precomputedVectors: fingerprint == nil ? [:] : precomputedVectors)
        // The run's own connection: closed when the run ends, its transaction and advisory lock
        // dropped by the server if the process dies.
        let c = try PostgresConnection(conninfo)
        return try c.transaction {
            // One indexing run at a time per table prefix, across processes.
            try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [chunksTable])
            let stored = try storedFingerprint(c)
            if let fingerprint, let stored, stored != fingerprint {
                throw VectorIndexError.fingerprintMismatch(expected: fingerprint, actual: stored)
            }
            try createTables(c, dimension: fingerprint?.dimension ?? stored?.dimension)
            // What is there: id → content hash, and whether it has a vector.
            var existing = [String: StoredChunk]()
            for row in try c.execute("SELECT id, content_hash, embedding IS NOT NULL AS has_vector FROM \(chunksTable)")
                .values
            {
                if let id = row[0], let hash = row[1] {
                    existing[id] = StoredChunk(contentHash: hash, hasVector: row[2] == "t")
                }
            }
            let plan = pipeline.plan(pages, stored: existing)
            // Removed and changed chunks go (their terms with them); kept ones only move. One
            // statement each: an array parameter holds any number of ids.
            if !plan.stale.isEmpty {
                try c.execute("DELETE FROM \(chunksTable) WHERE id = ANY($1::text[])", [SQLText.array(plan.stale)])
            }
            let statistics = try pipeline.run(plan, progress: progress) { positions, vectors in
                try insert(
                    positions.map { plan.chunks[$0] }, positions: positions,
                    hashes: positions.map { plan.contentHashes[$0] },
                    vectors: vectors, into: c)
            }
            // Every kept row takes its new position in the corpus.
            if !plan.kept.isEmpty {
                try c.execute(
                    """
                    UPDATE \(chunksTable) AS c SET position = u.position
                    FROM unnest($1::text[], $2::integer[]) AS u(id, position) WHERE c.id = u.id
                    """,
                    [SQLText.array(plan.kept.map { plan.chunks[$0].id }), SQLText.array(plan.kept.map(String.init))])
            }
            if let fingerprint {
                try c.execute(
                    "INSERT INTO \(meta) (key, value) VALUES ('fingerprint', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [String(decoding: try JSONEncoder().encode(fingerprint), as: UTF8.self)])
            }
            try c.execute(
                "INSERT INTO \(meta) (key, value) VALUES ('settings', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)])
            try c.execute("ANALYZE \(chunksTable)")
            try c.execute("ANALYZE \(terms)")
            return statistics
        }
    }

    private func modelFingerprint() throws -> IndexFingerprint? {
        try embedding?.fingerprint
    }

    /// The number of chunks and the fingerprint of the stored vectors.
    public func statistics() throws -> StoreStatistics {
        try withConnection { c in StoreStatistics(chunks: try chunkCount(c), fingerprint: try storedFingerprint(c)) }
    }

    /// Rows for `chunks` (and their BM25 terms), through array parameters: one round trip per batch.
    private func insert(
        _ chunks: [Chunk], positions: [Int], hashes: [String], vectors: [[Float]]?, into c: PostgresConnection
    ) throws {
        let analyzed = chunks.map { analyzer.terms($0.text) }
        let vectorTexts: [String?] =
            vectors.map { $0.map { SQLText.vector($0) } } ?? Array(repeating: nil, count: chunks.count)
        try c.execute(
            """
            INSERT INTO \(chunksTable) (id, position, source, headings, title, text, span_start, span_end, content_hash, length, embedding)
            SELECT u.id, u.position, u.source, (SELECT coalesce(array_agg(h), '{}') FROM json_array_elements_text(u.headings::json) AS h),
                   u.title, u.text, u.span_start, u.span_end, u.content_hash, u.length, u.embedding::vector
            FROM unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::integer[],
                        $9::text[], $10::integer[], $11::text[])
                 AS u(id, position, source, headings, title, text, span_start, span_end, content_hash, length, embedding)
            """,
            [
                SQLText.array(chunks.map(\.id)),
                SQLText.array(positions.map(String.init)),
                SQLText.array(chunks.map(\.source)),
                SQLText.array(chunks.map { SQLText.jsonArray($0.headings) }),
                SQLText.array(chunks.map(\.title)),
                SQLText.array(chunks.map(\.text)),
                SQLText.array(chunks.map { $0.span.map { String($0.lowerBound) } }),
                SQLText.array(chunks.map { $0.span.map { String($0.upperBound) } }),
                SQLText.array(hashes),
                SQLText.array(analyzed.map { String($0.count) }),
                SQLText.array(vectorTexts),
            ])
        var termIDs = [String]()
        var termTexts = [String]()
        var counts = [String]()
        var lengths = [String]()
        for (chunk, words) in zip(chunks, analyzed) {
            for (term, count) in words.reduce(into: [String: Int](), { $0[$1, default: 0] += 1 }) {
                termIDs.append(chunk.id)
                termTexts.append(term)
                counts.append(String(count))
                lengths.append(String(words.count))
            }
        }
        guard !termIDs.isEmpty else { return }
        // The chunk's length rides along with each of its terms, so BM25 needs no join to score.
        try c.execute(
            """
            INSERT INTO \(terms) (chunk_id, term, count, length)
            SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::integer[])
            """, [SQLText.array(termIDs), SQLText.array(termTexts), SQLText.array(counts), SQLText.array(lengths)])
    }

    /// Creates pgvector's HNSW index on the vectors (cosine), if it is not there yet.
    /// - Parameters: `m` and `efConstruction` as pgvector names them (its defaults: 16 and 64).
    ///
    /// These changes to the schema run on a connection of their own, like an indexing run: they
    /// may wait for a run's locks, and searches on the shared connection must not wait with them.
    public func buildHNSWIndex(m: Int = 16, efConstruction: Int = 64) throws {
        let c = try PostgresConnection(conninfo)
        guard try tablesExist(c) else { throw RetrievalError.noVectors("the store is empty: index a corpus first") }
        try c.execute(
            """
            CREATE INDEX IF NOT EXISTS \(chunksTable)_hnsw ON \(chunksTable)
            USING hnsw (embedding vector_cosine_ops) WITH (m = \(max(2, min(m, 100))), ef_construction = \(max(4, min(efConstruction, 1000))))
            """)
    }

    /// Removes the HNSW index (searches scan again).
    public func dropHNSWIndex() throws {
        try PostgresConnection(conninfo).execute("DROP INDEX IF EXISTS \(chunksTable)_hnsw")
    }

    /// Drops the store's tables.
    public func drop() throws {
        let c = try PostgresConnection(conninfo)
        try c.execute("DROP TABLE IF EXISTS \(terms)")
        try c.execute("DROP TABLE IF EXISTS \(chunksTable)")
        try c.execute("DROP TABLE IF EXISTS \(meta)")
    }

    // MARK: Search

    /// Reads the retrieval settings saved by `index` (the defaults when none were saved).
    public func loadSettings() throws {
        let saved: RetrievalSettings? = try withConnection { c in
            guard try c.execute("SELECT to_regclass($1) IS NOT NULL", [meta]).values.first?.first == "t",
                let json = try c.execute("SELECT value FROM \(meta) WHERE key = 'settings'").values.first?.first ?? nil
            else { return nil }
            return try? JSONDecoder().decode(RetrievalSettings.self, from: Data(json.utf8))
        }
        if let saved { settings = saved }
    }

    /// Up to `k` chunks for `question`, with the file store's fusion and settings. Semantic and
    /// hybrid modes need the model the store was built with. The question is encoded first, with
    /// no lock held; then the vector ranking, the BM25 ranking and the chunks they name are read
    /// in one read-only, repeatable-read transaction, so an indexing run that commits meanwhile
    /// (renumbering positions) cannot mix two states of the corpus into one answer.
    public func search(_ question: String, mode: RetrievalMode = .hybrid, k: Int = 4) throws -> [RetrievalHit] {
        guard k > 0 else { return [] }
        let settings = self.settings
        let retriever = HybridRetriever(settings: settings, analyzer: analyzer)
        let query = mode == .lexical ? nil : try questionVector(question)
        let words = mode == .semantic ? [] : terms(of: question)
        let search = vectorSearch
        let model = try modelFingerprint()
        let (lexical, semantic, chunks) = try readTransaction { c in
            let semantic = try query.map {
                try nearestRows(c, to: $0, count: max(settings.semanticCandidates, k), search: search, model: model)
            }
            let lexical = retriever.applyingLexicalFloor(try lexicalRows(c, words: words, floor: settings.lexicalFloor))
            let documents = Set(lexical.map(\.document)).union((semantic ?? []).map(\.document))
            return (lexical, semantic, try chunkRows(c, at: Array(documents)))
        }
        return retriever.fuse(lexical: lexical, semantic: semantic, mode: mode, k: k) { chunks[$0] }
    }

    /// The question's vector (a "query" input), or an error when the store has no model.
    private func questionVector(_ question: String) throws -> [Float] {
        guard let embedding else {
            throw RetrievalError.noVectors("semantic search needs the model the store was built with")
        }
        return try embedding.sentenceVector(for: question, inputType: .query)
    }

    /// `body` inside one read-only, repeatable-read transaction on the shared connection.
    private func readTransaction<R: Sendable>(_ body: (PostgresConnection) throws -> R) throws -> R {
        try withConnection { c in
            // Not PostgresConnection.transaction: its closure would capture the lock's value.
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let connection = c
            do {
                let value = try body(connection)
                try c.execute("COMMIT")
                return value
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The `count` chunks nearest to the question's embedding: `(position, cosine)`, best first
    /// (ties: lower position first).
    package func semanticCandidates(_ question: String, count: Int) throws -> [(document: Int, score: Float)] {
        try nearest(to: try questionVector(question), count: count)
    }

    /// The `count` stored vectors nearest to `query` by cosine: `(position, cosine)`, best first.
    package func nearest(to query: [Float], count: Int) throws -> [(document: Int, score: Float)] {
        let search = vectorSearch
        let model = try modelFingerprint()
        return try readTransaction { c in try nearestRows(c, to: query, count: count, search: search, model: model) }
    }

    /// `nearest(to:count:)` on `c`, inside the caller's transaction.
    private func nearestRows(
        _ c: PostgresConnection, to query: [Float], count: Int, search: VectorSearch,
        model: IndexFingerprint?
    ) throws -> [(document: Int, score: Float)] {
        guard count > 0 else { return [] }
        if let bad = query.firstIndex(where: { !$0.isFinite }) {
            throw VectorIndexError.nonFiniteValue(id: "<query>", component: bad)
        }
        guard try tablesExist(c) else { return [] }
        if let stored = try storedFingerprint(c) {
            if let model, model != stored {
                throw VectorIndexError.fingerprintMismatch(expected: model, actual: stored)
            }
            guard stored.dimension == query.count else {
                throw VectorIndexError.dimensionMismatch(expected: stored.dimension, actual: query.count)
            }
        } else {
            throw RetrievalError.noVectors("the store holds no vectors (it was indexed lexical-only)")
        }
        let sql: String
        switch search {
        case .exact, .int8, .binary:  // setVectorSearch refuses codes: never int8 or binary here
            // A scan, whatever indexes exist: the exact ranking.
            try c.execute("SET LOCAL enable_indexscan = off")
            sql = """
                SELECT position, 1 - (embedding <=> $1::vector) AS score FROM \(chunksTable)
                WHERE embedding IS NOT NULL ORDER BY embedding <=> $1::vector, position LIMIT $2
                """
        case .hnsw(let efSearch):
            try c.execute("SELECT set_config('hnsw.ef_search', $1, true)", [String(max(1, min(efSearch, 1000)))])
            // The index serves ORDER BY distance alone; ties are left to it.
            sql = """
                SELECT position, 1 - (embedding <=> $1::vector) AS score FROM \(chunksTable)
                ORDER BY embedding <=> $1::vector LIMIT $2
                """
        }
        return try c.execute(sql, [SQLText.vector(query), String(count)]).values.compactMap { row in
            guard let p = row[0].flatMap({ Int($0) }), let s = row[1].flatMap({ Float($0) }) else { return nil }
            return (p, s)
        }
    }

    /// BM25 over the stored statistics, in the database: `(position, score)`, best first (ties:
    /// lower position first), the chunks sharing a term with the question that score at least
    /// `floor` × the best. The same formula and constants as `BM25` (k1 1.2, b 0.75,
    /// idf ln(1 + (N − df + 0.5)/(df + 0.5)), distinct terms).
    package func lexicalCandidates(_ question: String, floor: Double = 0, k1: Double = 1.2, b: Double = 0.75) throws
        -> [(document: Int, score: Double)]
    {
        let words = terms(of: question)
        return try readTransaction { c in try lexicalRows(c, words: words, floor: floor, k1: k1, b: b) }
    }

    /// The question's distinct BM25 terms, sorted.
    private func terms(of question: String) -> [String] {
        Array(Set(analyzer.terms(question))).sorted()
    }

    /// `lexicalCandidates` for these terms on `c`, inside the caller's transaction.
    private func lexicalRows(
        _ c: PostgresConnection, words: [String], floor: Double, k1: Double = 1.2, b: Double = 0.75
    ) throws -> [(document: Int, score: Double)] {
        guard !words.isEmpty else { return [] }
        guard try tablesExist(c) else { return [] }
        // Scores from the terms table alone; only the chunks past the floor meet the chunks table.
        let rows = try c.execute(
            """
            WITH stats AS (SELECT count(*)::float8 AS n, coalesce(avg(length), 0)::float8 AS avgdl FROM \(chunksTable)),
                 q AS (SELECT DISTINCT unnest($1::text[]) AS term),
                 df AS (SELECT t.term, count(*)::float8 AS df FROM \(terms) t JOIN q USING (term) GROUP BY t.term),
                 scored AS (
                     SELECT t.chunk_id,
                            sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * t.count * ($2::float8 + 1)
                                / (t.count + $2::float8 * (1 - $3::float8 + $3::float8 * t.length / nullif(s.avgdl, 0)))) AS score
                     FROM \(terms) t JOIN df USING (term) CROSS JOIN stats s
                     GROUP BY t.chunk_id),
                 kept AS (SELECT chunk_id, score FROM scored WHERE score >= $4::float8 * (SELECT max(score) FROM scored))
            SELECT c.position, k.score FROM kept k JOIN \(chunksTable) c ON c.id = k.chunk_id
            ORDER BY k.score DESC, c.position
            """, [SQLText.array(words), String(k1), String(b), String(max(0, floor))])
        return rows.values.compactMap { row in
            guard let p = row[0].flatMap({ Int($0) }), let s = row[1].flatMap({ Double($0) }) else { return nil }
            return (p, s)
        }
    }

    /// PostgreSQL's own full-text search as the lexical engine, for comparison with the stored
    /// BM25 (`embeddings-bench stores` measures both): `ts_rank_cd` of the `english` text search
    /// configuration, any of the question's words matching, `(position, rank)`, best first.
    package func fullTextCandidates(_ question: String) throws -> [(document: Int, score: Double)] {
        let words = question.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init)
        guard !words.isEmpty else { return [] }
        return try withConnection { c in
            guard try tablesExist(c) else { return [] }
            let rows = try c.execute(
                """
                WITH q AS (SELECT to_tsquery('english', array_to_string(ARRAY(SELECT quote_literal(w) FROM unnest($1::text[]) AS w), ' | ')) AS query)
                SELECT c.position, ts_rank_cd(to_tsvector('english', c.text), q.query) AS score
                FROM \(chunksTable) c CROSS JOIN q WHERE to_tsvector('english', c.text) @@ q.query
                ORDER BY score DESC, c.position
                """, [SQLText.array(words)])
            return rows.values.compactMap { row in
                guard let p = row[0].flatMap({ Int($0) }), let s = row[1].flatMap({ Double($0) }) else { return nil }
                return (p, s)
            }
        }
    }

    /// `search` with `fullTextCandidates` as the lexical list (for the benchmark's comparison).
    package func searchWithFullText(_ question: String, mode: RetrievalMode, k: Int) throws -> [RetrievalHit] {
        let retriever = HybridRetriever(settings: settings, analyzer: analyzer)
        let semantic =
            mode == .lexical ? nil : try semanticCandidates(question, count: max(settings.semanticCandidates, k))
        let lexical = mode == .semantic ? [] : retriever.applyingLexicalFloor(try fullTextCandidates(question))
        let chunks = try chunks(at: Array(Set(lexical.map(\.document)).union((semantic ?? []).map(\.document))))
        return retriever.fuse(lexical: lexical, semantic: semantic, mode: mode, k: k) { chunks[$0] }
    }

    /// The chunks at these corpus positions.
    public func chunks(at positions: [Int]) throws -> [Int: Chunk] {
        try readTransaction { c in try chunkRows(c, at: positions) }
    }

    /// `chunks(at:)` on `c`, inside the caller's transaction.
    private func chunkRows(_ c: PostgresConnection, at positions: [Int]) throws -> [Int: Chunk] {
        guard !positions.isEmpty else { return [:] }
        var out = [Int: Chunk]()
        for row in try c.execute(
            """
            SELECT position, id, source, array_to_json(headings) AS headings, title, text, span_start, span_end
            FROM \(chunksTable) WHERE position = ANY($1::integer[])
            """, [SQLText.array(positions.map(String.init))]
        ).values {
            guard let p = row[0].flatMap({ Int($0) }), let id = row[1], let source = row[2], let headings = row[3],
                let title = row[4], let text = row[5],
                let list = try? JSONDecoder().decode([String].self, from: Data(headings.utf8))
            else {
                throw PostgresStoreError.corruptStore("a row of \(chunksTable) is incomplete")
            }
            let span = zip(row[6].flatMap { Int($0) }, row[7].flatMap { Int($0) }).map { $0..<max($0, $1) }
            out[p] = Chunk(id: id, source: source, headings: list, title: title, text: text, span: span)
        }
        return out
    }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
