import CommandLineOptions
import Embeddings
import Foundation
import ModelAssets

/// `--model DIR|IDENTIFIER` (`SharedOptions.model`) or the default model, installed (with progress
/// on stderr) when missing.
enum ModelOption {
    /// What `--model` names.
    enum Choice {
        case folder(URL)
        case known(ModelCatalog.Descriptor)
    }

    /// An existing folder wins; otherwise a known identifier (or its short name).
    static func choice(_ parsed: ParsedArguments) throws -> Choice {
        guard let value = parsed[SharedOptions.model] else { return .known(ModelCatalog.defaultModel) }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: value, isDirectory: &isDirectory), isDirectory.boolValue {
            return .folder(URL(fileURLWithPath: value))
        }
        if let descriptor = ModelCatalog.descriptor(for: value) { return .known(descriptor) }
        throw CLIError.noInput(
            "\(SharedOptions.model.name) '\(value)' is neither a model folder nor a known model (\(ModelCatalog.known.map(\.identifier).joined(separator: ", ")))"
        )
    }

    /// The model's installed folder, installing a known model when needed.
    static func folder(_ parsed: ParsedArguments) throws -> URL {
        switch try choice(parsed) {
        case .folder(let url): return url
        case .known(let descriptor): return try install(descriptor)
        }
    }

    static func install(_ descriptor: ModelCatalog.Descriptor) throws -> URL {
        let assets = descriptor.assets
        if let found = AssetCache.locate(assets) { return found }
        do { return try AssetCache.install(assets) { Console.note($0) } } catch {
            throw CLIError.failure("installing \(assets.identifier) failed: \(error.description)")
        }
    }

    /// The model `--model` names, multiplying as `--quantize` says, installed when missing
    /// (progress as notes) and loaded (`ContextualEmbedding.installAssetsAndLoad`).
    static func load(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let embedding = try model(parsed)
        do { try embedding.installAssetsAndLoad { Console.note($0) } } catch let error as AssetInstallationError {
            throw CLIError.failure("installing \(embedding.modelIdentifier) failed: \(error.description)")
        } catch let error as EmbeddingsError {
            throw CLIError.data(error.description)
        }
        return embedding
    }

    /// The model `--model` names, multiplying as `--quantize` says, its assets installed but
    /// nothing read yet (`tokenize` needs only the tokenizer).
    static func unloaded(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let embedding = try model(parsed)
        if case .known(let descriptor) = try choice(parsed), !embedding.hasAvailableAssets {
            _ = try install(descriptor)
        }
        return embedding
    }

    /// The model `--model` names, multiplying as `--quantize` says; nothing installed or read.
    private static func model(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let quantization = parsed[SharedOptions.quantize] ?? .float32
        switch try choice(parsed) {
        case .folder(let url):
            do { return try ContextualEmbedding(contentsOf: url, quantization: quantization) } catch let error
                as EmbeddingsError
            {
                throw CLIError.data(error.description)
            }
        case .known(let descriptor):
            guard let model = ContextualEmbedding(modelIdentifier: descriptor.identifier, quantization: quantization)
            else {
                throw CLIError.failure("\(descriptor.identifier) is unknown")
            }
            return model
        }
    }

    /// `--input-type query|passage`, default query.
    static func inputType(_ parsed: ParsedArguments) throws -> ContextualEmbedding.InputType {
        try parsed.value(SharedOptions.inputType)
    }
}
