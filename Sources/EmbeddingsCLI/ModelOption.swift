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
        throw CLIError.noInput("\(SharedOptions.model.name) '\(value)' is neither a model folder nor a known model (\(ModelCatalog.known.map(\.identifier).joined(separator: ", ")))")
    }

    /// The model's installed folder, installing a known model when needed.
    static func folder(_ parsed: ParsedArguments) throws -> URL {
        switch try choice(parsed) {
        case let .folder(url): return url
        case let .known(descriptor): return try install(descriptor)
        }
    }

    static func install(_ descriptor: ModelCatalog.Descriptor) throws -> URL {
        let assets = descriptor.assets
        if let found = AssetCache.locate(assets) { return found }
        do { return try AssetCache.install(assets) { Console.note($0) } } catch {
            throw CLIError.failure("installing \(assets.identifier) failed: \(error.description)")
        }
    }

    static func load(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let embedding = try unloaded(parsed)
        do { try embedding.load() } catch let error as EmbeddingsError {
            throw CLIError.data(error.description)
        }
        return embedding
    }

    /// The model `--model` names, multiplying as `--quantize` says, its assets installed but
    /// nothing read yet.
    static func unloaded(_ parsed: ParsedArguments) throws -> ContextualEmbedding {
        let embedding: ContextualEmbedding
        let quantization = parsed[SharedOptions.quantize] ?? .float32
        switch try choice(parsed) {
        case let .folder(url):
            do { embedding = try ContextualEmbedding(contentsOf: url, quantization: quantization) } catch let error as EmbeddingsError {
                throw CLIError.data(error.description)
            }
        case let .known(descriptor):
            guard let model = ContextualEmbedding(modelIdentifier: descriptor.identifier, quantization: quantization) else {
                throw CLIError.failure("\(descriptor.identifier) is unknown")
            }
            embedding = model
            if !embedding.hasAvailableAssets { _ = try install(descriptor) }
        }
        return embedding
    }

    /// `--input-type query|passage`, default query.
    static func inputType(_ parsed: ParsedArguments) throws -> ContextualEmbedding.InputType {
        try parsed.value(SharedOptions.inputType)
    }
}
