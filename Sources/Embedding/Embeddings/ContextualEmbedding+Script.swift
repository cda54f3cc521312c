extension ContextualEmbedding {
    /// A writing system, as Apple's `NLScript`: its raw value is the ISO 15924 code Apple uses
    /// (`"Latn"`, `"Cyrl"`, `"Arab"`, `"Hans"`, …).
    ///
    /// A model's scripts follow from its languages (`scripts(forLanguage:)`): all-MiniLM-L6-v2
    /// writes English, so `[.latin]`; multilingual-e5-small covers every script of the languages
    /// XLM-RoBERTa was trained on.
    ///
    /// ```swift
    /// let russian = ContextualEmbedding(script: .cyrillic)   // multilingual-e5-small
    /// ContextualEmbedding(script: .latin)?.scripts           // [.latin]: all-MiniLM-L6-v2
    /// ```
    public struct Script: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The ISO 15924 code, e.g. `"Latn"`.
        public var rawValue: String

        /// The script with this ISO 15924 code (any string: codes the library does not list are
        /// kept as given, and no model covers them).
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The script with this ISO 15924 code, as `NLScript(_:)`.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        /// The ISO 15924 code.
        public var description: String { rawValue }

        /// Arabic (`Arab`).
        public static let arabic = Script("Arab")
        /// Armenian (`Armn`).
        public static let armenian = Script("Armn")
        /// Bengali (`Beng`).
        public static let bengali = Script("Beng")
        /// Canadian Aboriginal Syllabics (`Cans`).
        public static let canadianAboriginalSyllabics = Script("Cans")
        /// Cherokee (`Cher`).
        public static let cherokee = Script("Cher")
        /// Cyrillic (`Cyrl`).
        public static let cyrillic = Script("Cyrl")
        /// Devanagari (`Deva`).
        public static let devanagari = Script("Deva")
        /// Ethiopic (`Ethi`).
        public static let ethiopic = Script("Ethi")
        /// Georgian (`Geor`).
        public static let georgian = Script("Geor")
        /// Greek (`Grek`).
        public static let greek = Script("Grek")
        /// Gujarati (`Gujr`).
        public static let gujarati = Script("Gujr")
        /// Gurmukhi (`Guru`).
        public static let gurmukhi = Script("Guru")
        /// Hebrew (`Hebr`).
        public static let hebrew = Script("Hebr")
        /// Japanese: Han with Hiragana and Katakana (`Jpan`).
        public static let japanese = Script("Jpan")
        /// Kannada (`Knda`).
        public static let kannada = Script("Knda")
        /// Khmer (`Khmr`).
        public static let khmer = Script("Khmr")
        /// Korean: Hangul with Han (`Kore`).
        public static let korean = Script("Kore")
        /// Lao (`Laoo`).
        public static let lao = Script("Laoo")
        /// Latin (`Latn`).
        public static let latin = Script("Latn")
        /// Malayalam (`Mlym`).
        public static let malayalam = Script("Mlym")
        /// Mongolian (`Mong`).
        public static let mongolian = Script("Mong")
        /// Myanmar (`Mymr`).
        public static let myanmar = Script("Mymr")
        /// Oriya (`Orya`).
        public static let oriya = Script("Orya")
        /// Simplified Chinese (`Hans`).
        public static let simplifiedChinese = Script("Hans")
        /// Sinhala (`Sinh`).
        public static let sinhala = Script("Sinh")
        /// Tamil (`Taml`).
        public static let tamil = Script("Taml")
        /// Telugu (`Telu`).
        public static let telugu = Script("Telu")
        /// Thai (`Thai`).
        public static let thai = Script("Thai")
        /// Tibetan (`Tibt`).
        public static let tibetan = Script("Tibt")
        /// Traditional Chinese (`Hant`).
        public static let traditionalChinese = Script("Hant")
        /// Undetermined (`Zyyy`): no model covers it.
        public static let undetermined = Script("Zyyy")
        /// Han in either form (`Hani`, not one of Apple's constants): covered by a model that
        /// covers simplified or traditional Chinese.
        public static let han = Script("Hani")

        /// The scripts a BCP-47 language is written in (only the primary subtag counts,
        /// case-insensitively): `"ru"` → `[.cyrillic]`, `"sr"` → `[.cyrillic, .latin]`,
        /// `"zh"` → `[.simplifiedChinese, .traditionalChinese]`. Empty for a language the
        /// library does not know.
        public static func scripts(forLanguage language: String) -> [Script] {
            ModelCatalog.scriptsByLanguage[ModelCatalog.primaryLanguage(language)] ?? []
        }

        /// The scripts of several languages, each once, in the order the languages first use them.
        static func scripts(forLanguages languages: [String]) -> [Script] {
            var seen = Set<Script>()
            return languages.flatMap { scripts(forLanguage: $0) }.filter { seen.insert($0).inserted }
        }

        /// Whether a model written in `scripts` covers this script (`han` counts as either Chinese).
        func isCovered(by scripts: [Script]) -> Bool {
            self == .han
                ? scripts.contains(.simplifiedChinese) || scripts.contains(.traditionalChinese) : scripts.contains(self)
        }
    }

    /// A criterion of `contextualEmbeddings(forValues:)`, as Apple's `NLContextualEmbeddingKey`.
    public struct Key: RawRepresentable, Hashable, Sendable {
        /// The key's name.
        public var rawValue: String

        /// A key by name; only `languages`, `scripts` and `revision` mean anything.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// BCP-47 languages (`[String]`) the model must serve, all of them.
        public static let languages = Key(rawValue: "languages")
        /// Scripts (`[Script]`, or their ISO 15924 codes as `[String]`) the model must cover, all of them.
        public static let scripts = Key(rawValue: "scripts")
        /// The model revision (`Int`) the model must have.
        public static let revision = Key(rawValue: "revision")
    }

    /// The default model for a script, as `NLContextualEmbedding(script:)`: all-MiniLM-L6-v2
    /// for Latin, multilingual-e5-small for every other script it covers; `nil` when no model
    /// the library knows covers it. Its assets may still need installing.
    /// - Parameters:
    ///   - script: the writing system of the texts to embed.
    ///   - quantization: how the encoder multiplies (default `.float32`).
    public convenience init?(script: Script, quantization: Quantization = .float32) {
        guard let descriptor = ModelCatalog.descriptor(forScript: script) else { return nil }
        self.init(descriptor: descriptor, parallelism: nil, quantization: quantization)
    }

    /// The models the library knows that meet every criterion given, in `ModelCatalog.known`
    /// order, as `NLContextualEmbedding.contextualEmbeddings(forValues:)`: `.languages` (a
    /// `[String]`: the model serves every one), `.scripts` (a `[Script]` or `[String]` of ISO 15924
    /// codes: the model covers every one), `.revision` (an `Int`). An empty dictionary gives every
    /// known model; a key the library does not know, or a value of another type, gives none.
    ///
    /// ```swift
    /// ContextualEmbedding.contextualEmbeddings(forValues: [.languages: ["en", "ru"]])  // multilingual-e5-small
    /// ContextualEmbedding.contextualEmbeddings(forValues: [.scripts: [Script.latin], .revision: 100])  // all-MiniLM-L6-v2
    /// ```
    /// Their assets may still need installing.
    public static func contextualEmbeddings(forValues values: [Key: Any]) -> [ContextualEmbedding] {
        var languages = [String]()
        var scripts = [Script]()
        var revision: Int?
        for (key, value) in values {
            switch key {
            case .languages:
                guard let list = value as? [String] else { return [] }
                languages = list
            case .scripts:
                if let list = value as? [Script] {
                    scripts = list
                } else if let codes = value as? [String] {
                    scripts = codes.map(Script.init(rawValue:))
                } else {
                    return []
                }
            case .revision:
                guard let number = value as? Int else { return [] }
                revision = number
            default:
                return []
            }
        }
        return ModelCatalog.descriptors(languages: languages, scripts: scripts, revision: revision)
            .map { ContextualEmbedding(descriptor: $0, parallelism: nil) }
    }
}
