import CommandLineOptions
import Embeddings
import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelAssets

/// `embeddings info`: the CPU, the BLAS library and the kernels it runs, and the model.
struct InfoCommand: Command {
    static let name = "info"
    static let abstract = "Show the CPU, the BLAS kernels in use, and the model."
    static let model = SharedOptions.model.with(
        help: "The sentence-transformers folder or known model to describe. Nothing is installed.")
    static let json = SharedOptions.json.with(help: "Write one JSON object instead of text.")
    static let tryCore = Option<String>(
        "--try-core", valueName: "name",
        help: "Switch OpenBLAS to this core (e.g. Haswell), check sgemm/sgemv/sdot against plain loops, switch back.")

    static var options: [any OptionDeclaration] { [model, json, tryCore] }

    struct Model: Encodable {
        var identifier: String
        var dimension: Int
        var maximumSequenceLength: Int
        var pooling: String
        var normalizes: Bool
        var languages: [String]
        var installed: Bool
        var path: String?
        var status: String
    }

    /// The default language model (`embeddings generate`): where it is, and whether it is installed.
    struct LanguageModel: Encodable {
        var identifier: String
        var requirement: String
        var file: String
        var installed: Bool
        var path: String?
        var status: String
    }

    struct Document: Encodable {
        /// The CPU and the BLAS, as `BLAS.Report` describes them (the kernel-check tests' child prints the same).
        var cpu: BLAS.Report.CPU
        var blas: BLAS.Report.Library
        var model: Model
        var languageModel: LanguageModel
        var int8: Int8Products
        var coreTrial: BLAS.CoreTrial?
    }

    /// The int8 encoder's matrix products (`--quantize int8`): the path it runs and every path
    /// this CPU can run.
    struct Int8Products: Encodable {
        var path: String
        var paths: [String]
    }

    let parsed: ParsedArguments
    let json: Bool

    init(parsed: ParsedArguments) throws {
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        if let core = parsed[Self.tryCore], core.isEmpty {
            throw CLIError.usage("\(Self.tryCore.name) needs a core name")
        }
        self.parsed = parsed
        json = parsed[Self.json]
    }

    /// The default language model's state. Nothing is installed.
    static func languageModel() -> LanguageModel {
        let descriptor = DecoderCatalog.defaultModel
        let file = descriptor.installedFile
        let status: String
        switch AssetCache.status(of: descriptor.assets) {
        case .installed: status = "installed"
        case .notInstalled:
            status =
                "not installed (installs on first use, or: embeddings assets install --model \(descriptor.identifier))"
        case .corrupt(let problem): status = "corrupt (\(problem))"
        case .installerMissing: status = "not installed, and python3 is missing to install it"
        }
        return LanguageModel(
            identifier: descriptor.identifier, requirement: descriptor.assets.requirement, file: descriptor.fileName,
            installed: file != nil, path: file?.path, status: status)
    }

    func model() throws -> Model {
        var descriptor = ModelCatalog.defaultModel
        if parsed.contains(Self.model), case .known(let known) = try ModelOption.choice(parsed) {
            descriptor = known
        } else if let path = parsed[Self.model] {
            let url = try ModelOption.folder(parsed)
            let embedding: ContextualEmbedding
            do { embedding = try ContextualEmbedding(contentsOf: url) } catch let error as EmbeddingsError {
                throw CLIError.data(error.description)
            }
            return Model(
                identifier: embedding.modelIdentifier, dimension: embedding.dimension,
                maximumSequenceLength: embedding.maximumSequenceLength,
                pooling: embedding.poolingStrategy.rawValue, normalizes: embedding.normalizesSentenceVectors,
                languages: embedding.languages, installed: true, path: url.standardizedFileURL.path,
                status: "folder \(path)")
        }
        guard let embedding = ContextualEmbedding(modelIdentifier: descriptor.identifier) else {
            throw CLIError.failure("\(descriptor.identifier) is unknown")
        }
        let status: String
        switch embedding.availability {
        case .available: status = "available"
        case .unavailable(.assetsNotInstalled):
            status = "not installed (installed on first use, or by `embeddings assets install`)"
        case .unavailable(.installerMissing): status = "not installed, and python3 is missing to install it"
        case .unavailable(.assetsCorrupt(let problem)): status = "corrupt (\(problem))"
        }
        let path = AssetCache.locate(descriptor.assets)?.path
        return Model(
            identifier: embedding.modelIdentifier, dimension: embedding.dimension,
            maximumSequenceLength: embedding.maximumSequenceLength,
            pooling: embedding.poolingStrategy.rawValue, normalizes: embedding.normalizesSentenceVectors,
            languages: embedding.languages, installed: path != nil, path: path, status: status)
    }

    func run() throws {
        var trial: BLAS.CoreTrial? = nil
        if let core = parsed[Self.tryCore] {
            do {
                trial = try BLAS.tryCore(core)
            } catch let error as BLAS.CoreError {
                if case .unknownCore = error { throw CLIError.usage(error.description) }
                throw CLIError.failure(error.description)
            }
        }
        let report = BLAS.Report()
        let document = Document(
            cpu: report.cpu, blas: report.blas,
            model: try model(), languageModel: Self.languageModel(),
            int8: Int8Products(path: Int8GEMM.defaultPath.description, paths: Int8GEMM.paths.map(\.description)),
            coreTrial: trial)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            Output.standard.write(String(decoding: try encoder.encode(document), as: UTF8.self) + "\n")
        } else {
            var lines = report.lines
            lines.append(
                "int8:         \(document.int8.path) (this CPU runs \(document.int8.paths.joined(separator: ", ")); for --quantize int8)"
            )
            let m = document.model
            lines.append("model:        \(m.identifier)")
            lines.append("dimension:    \(m.dimension) (maximum \(m.maximumSequenceLength) tokens)")
            lines.append("pooling:      \(m.pooling)\(m.normalizes ? ", normalized" : "")")
            lines.append("languages:    \(m.languages.joined(separator: " "))")
            lines.append("path:         \(m.path ?? "-")")
            lines.append("status:       \(m.status)")
            let lm = document.languageModel
            lines.append(
                "generation:   \(lm.identifier) (\(lm.requirement), \(lm.file)): \(lm.status)\(lm.path.map { " at " + $0 } ?? "")"
            )
            if let trial {
                lines.append(
                    "core trial:   \(trial.requested): reported \(trial.reported), max relative error \(String(format: "%.1e", trial.maxRelativeError)), \(trial.agreed ? "agrees with the reference loops" : "DISAGREES with the reference loops"); back on \(trial.restored)"
                )
            }
            Output.standard.write(lines.joined(separator: "\n") + "\n")
        }
        if let trial, !trial.agreed {
            Output.standard.flush()
            throw CLIError.failure(
                "OpenBLAS core \(trial.requested) gives wrong results on this CPU (relative error \(String(format: "%.1e", trial.maxRelativeError)))"
            )
        }
    }
}
