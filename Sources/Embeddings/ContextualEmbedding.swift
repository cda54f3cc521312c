import Encoder
import Foundation
import LinearAlgebra
import WordPiece

/// A contextual embedding model: one vector per token, each tied to its range in the text.
///
/// The mirror of Apple's `NLContextualEmbedding`, on any platform, backed by a BERT-family
/// sentence-transformers model (by default all-MiniLM-L6-v2, installed on first use like Apple's
/// `requestAssets()`).
///
/// ```swift
/// let embedding = ContextualEmbedding(modelIdentifier: ContextualEmbedding.defaultModelIdentifier)!
/// if !embedding.hasAvailableAssets { _ = try await embedding.requestAssets() }
/// try embedding.load()
/// let result = try embedding.embeddingResult(for: "A river bank.", language: "en")
/// let sentence = result.meanPooled().normalizedToUnitLength
/// ```
public final class ContextualEmbedding: @unchecked Sendable {
    /// The identifier of the default model.
    public static let defaultModelIdentifier = ModelAssets.defaultModel.identifier

    /// The model's identifier.
    public let modelIdentifier: String
    /// BCP-47 languages the model was trained for.
    public let languages: [String]
    /// The model revision (the asset package's version, as an integer: 0.1.0 → 100).
    public let revision: Int
    /// The length of each token vector.
    public let dimension: Int
    /// The most tokens per text, special tokens included; longer texts are truncated
    /// (`ContextualEmbeddingResult` then covers only the beginning of the string).
    public let maximumSequenceLength: Int
    /// The pooling the model was trained with.
    public let poolingStrategy: PoolingStrategy
    /// Whether the model's sentence vectors are L2-normalized.
    public let normalizesSentenceVectors: Bool

    /// How many threads one batch call spreads its texts over (each with single-threaded BLAS).
    /// Defaults to the number of cores; 1 runs the batch on the calling thread.
    public var parallelism: Int {
        get { lock.lock(); defer { lock.unlock() }; return storedParallelism }
        set {
            precondition(newValue >= 1, "parallelism must be at least 1")
            lock.lock()
            storedParallelism = newValue
            loaded?.model.parallelism = newValue
            lock.unlock()
        }
    }

    private var storedParallelism = ProcessInfo.processInfo.activeProcessorCount
    private let source: Source
    private let lock = NSLock()
    private var loaded: (folder: ModelFolder, tokenizer: BertTokenizer, model: BertModel)?

    private enum Source {
        case folder(URL)
        case asset(ModelAssets.Descriptor)
    }

    /// The model with this identifier, or `nil` when the library knows no such model.
    /// Its assets may still need installing: see `hasAvailableAssets` and `requestAssets()`.
    public init?(modelIdentifier: String) {
        guard let descriptor = ModelAssets.descriptor(for: modelIdentifier) else { return nil }
        self.modelIdentifier = descriptor.identifier
        self.languages = descriptor.languages
        self.revision = descriptor.revision
        self.dimension = descriptor.dimension
        self.maximumSequenceLength = descriptor.maximumSequenceLength
        self.poolingStrategy = descriptor.pooling
        self.normalizesSentenceVectors = descriptor.normalizes
        self.source = .asset(descriptor)
    }

    /// A model from a sentence-transformers folder (BERT family).
    /// - Throws: `EmbeddingsError.invalidModel` when the folder's configuration is missing or wrong.
    public init(contentsOf url: URL) throws {
        let folder = try ModelFolder(url: url)
        self.modelIdentifier = folder.identifier
        self.languages = ["en"]
        self.revision = 1
        self.dimension = folder.configuration.hiddenSize
        self.maximumSequenceLength = folder.maximumSequenceLength
        self.poolingStrategy = folder.pooling
        self.normalizesSentenceVectors = folder.normalizes
        self.source = .folder(url)
    }

    /// Whether the model's files are present (for an installed model: installed and complete).
    public var hasAvailableAssets: Bool {
        switch source {
        case .folder: return true
        case let .asset(descriptor): return ModelAssets.locate(descriptor) != nil
        }
    }

    /// Whether the model can be used now, and if not, why.
    public var availability: Availability {
        switch source {
        case .folder: return .available
        case let .asset(descriptor): return ModelAssets.availability(of: descriptor)
        }
    }

    /// Installs the model's assets when they are missing (see `ModelAssets.install`).
    /// Present assets mean no network and no subprocess.
    public func requestAssets() async throws -> AssetsResult {
        switch source {
        case .folder: return .available
        case let .asset(descriptor):
            if ModelAssets.locate(descriptor) != nil { return .available }
            do {
                _ = try ModelAssets.install(descriptor)
                return .available
            } catch let error as EmbeddingsError {
                if case .assetInstallationFailed = error { return .error }
                throw error
            }
        }
    }

    /// Reads the tokenizer and weights into memory. Does nothing when already loaded.
    /// - Throws: `assetsNotAvailable` when an installed model is missing, `invalidModel` for bad files.
    public func load() throws {
        lock.lock()
        defer { lock.unlock() }
        guard loaded == nil else { return }
        let url: URL
        switch source {
        case let .folder(folder): url = folder
        case let .asset(descriptor):
            guard let found = ModelAssets.locate(descriptor) else {
                throw EmbeddingsError.assetsNotAvailable("\(descriptor.identifier) is not installed; call requestAssets() or run `embeddings assets install`")
            }
            url = found
        }
        let folder = try ModelFolder(url: url, identifier: modelIdentifier)
        let model = try folder.makeModel()
        model.parallelism = storedParallelism
        loaded = (folder, try folder.makeTokenizer(), model)
    }

    /// Frees the weights; the next use loads them again.
    public func unload() {
        lock.lock()
        loaded = nil
        lock.unlock()
    }

    private func components() throws -> (folder: ModelFolder, tokenizer: BertTokenizer, model: BertModel) {
        lock.lock()
        if let loaded { lock.unlock(); return loaded }
        lock.unlock()
        try load()
        lock.lock()
        defer { lock.unlock() }
        guard let loaded else { throw EmbeddingsError.modelNotLoaded(modelIdentifier) }
        return loaded
    }

    /// The encoder's last hidden states for raw token id sequences (loads the model if needed).
    public func forward(tokenIDs: [[Int]]) throws -> [Matrix] {
        do { return try components().model.forward(tokenIDs: tokenIDs) } catch let error as EncoderError {
            throw EmbeddingsError.invalidModel(error.description)
        }
    }

    /// A fingerprint of everything that decides this model's sentence vectors: for index files.
    public func fingerprintDescription() throws -> (identifier: String, dimension: Int, pooling: String, normalized: Bool, tokenizerHash: String) {
        (modelIdentifier, dimension, poolingStrategy.rawValue, normalizesSentenceVectors, try tokenizer().fingerprint)
    }

    /// The tokenizer (loads the model if needed).
    public func tokenizer() throws -> BertTokenizer { try components().tokenizer }

    /// Token vectors for `string`: `[CLS]`, one vector per WordPiece token, `[SEP]`.
    /// Loads the model on first use. Texts longer than `maximumSequenceLength` tokens are truncated.
    /// - Complexity: about 4 GFLOP for 180 tokens with the default model.
    public func embeddingResult(for string: String, language: String?) throws -> ContextualEmbeddingResult {
        try embeddingResults(for: [string], language: language)[0]
    }

    /// Token vectors for many strings at once: faster per text than one call each, because the
    /// projections run over all their tokens as one matrix.
    public func embeddingResults(for strings: [String], language: String?) throws -> [ContextualEmbeddingResult] {
        let (_, tokenizer, model) = try components()
        let tokenized = strings.map { tokenizer.tokenize($0) }
        let states = try model.forward(tokenIDs: tokenized.map(\.ids))
        return zip(tokenized, states).map { tokens, matrix in
            ContextualEmbeddingResult(
                uncheckedString: tokens.string, language: language, tokenRanges: tokens.ranges,
                tokenVectors: matrix, tokenIDs: tokens.ids, tokenTexts: tokens.tokens.map(\.text), isSpecialToken: tokens.tokens.map(\.isSpecial))
        }
    }

    /// The sentence vector of `string` as the model defines it (its pooling, then L2
    /// normalization when its pipeline normalizes).
    public func sentenceVector(for string: String, language: String? = nil) throws -> [Float] {
        try sentenceVectors(for: [string], language: language)[0]
    }

    /// Sentence vectors for many strings, in batches of `batchSize`.
    public func sentenceVectors(for strings: [String], language: String? = nil, batchSize: Int = 16) throws -> [[Float]] {
        precondition(batchSize > 0, "batchSize must be positive")
        var out = [[Float]]()
        out.reserveCapacity(strings.count)
        var start = 0
        while start < strings.count {
            let batch = Array(strings[start..<min(strings.count, start + batchSize)])
            for result in try embeddingResults(for: batch, language: language) {
                let pooled = result.pooled(poolingStrategy)
                out.append(normalizesSentenceVectors ? pooled.normalizedToUnitLength : pooled)
            }
            start += batchSize
        }
        return out
    }
}
