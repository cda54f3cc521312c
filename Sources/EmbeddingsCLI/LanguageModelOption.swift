import CommandLineOptions
import Foundation
import LanguageModels
import LinearAlgebra
import LlamaDecoder

/// `--model ID|FILE` for the language-model commands: a GGUF file, or a known language model's
/// identifier (installed with progress on stderr when missing); the default model otherwise.
enum LanguageModelOption {
    static let model = SharedOptions.model.with(
        valueName: "id|file",
        help:
            "A GGUF model file, or a known language model's identifier: \(DecoderCatalog.known.map(\.identifier).joined(separator: ", ")). Known models install on first use.",
        defaultDescription: DecoderCatalog.defaultModel.identifier.split(separator: "/").last.map(String.init))

    static let quantize = Option<LlamaModel.Precision>(
        "--quantize", valueName: "q",
        help:
            "How the language model holds its weights: native (the file's own 4- and 8-bit blocks, fast), int8 (int8 per output channel) or float32 (dequantized once: the reference, about 4x the memory).",
        default: .native)

    /// Whether `value` names a language model rather than an encoder: a known language model, or a file ending in `.gguf`.
    static func names(_ value: String) -> Bool {
        DecoderCatalog.descriptor(for: value) != nil || value.lowercased().hasSuffix(".gguf")
    }

    /// The GGUF file `--model` names, installing a known model when needed.
    static func file(_ parsed: ParsedArguments) throws -> URL {
        let value = parsed[model] ?? DecoderCatalog.defaultModel.identifier
        if let descriptor = DecoderCatalog.descriptor(for: value) {
            do { return try descriptor.install { Console.note($0) } } catch {
                throw CLIError.failure("installing \(descriptor.identifier) failed: \(error.description)")
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: value, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CLIError.noInput(
                "\(model.name) '\(value)' is neither a GGUF file nor a known language model (\(DecoderCatalog.known.map(\.identifier).joined(separator: ", ")))"
            )
        }
        return URL(fileURLWithPath: value)
    }

    /// The language model `value` names, not loaded: the default model (also when `value` is nil),
    /// another known one (which must be installed), or a GGUF file (which must exist; one that
    /// does not load fails when it is first used). `option` names the option in errors.
    static func system(_ value: String?, option: String) throws -> SystemLanguageModel {
        guard let value else { return .default }
        if let descriptor = DecoderCatalog.descriptor(for: value) {
            if descriptor == DecoderCatalog.defaultModel { return .default }
            guard let file = descriptor.installedFile else {
                throw CLIError.noInput(
                    "\(descriptor.identifier) is not installed: embeddings assets install --model \(descriptor.identifier)"
                )
            }
            return SystemLanguageModel(contentsOf: file)
        }
        try InputFile.check(URL(fileURLWithPath: value), what: "\(option) file")
        return SystemLanguageModel(contentsOf: URL(fileURLWithPath: value))
    }

    /// The model `--model` and `--quantize` name, loaded.
    static func load(_ parsed: ParsedArguments) throws -> LlamaModel {
        let url = try file(parsed)
        let precision = try parsed.value(quantize)
        return try decoding { () throws(LlamaDecoderError) in try LlamaModel(contentsOf: url, precision: precision) }
    }
}

/// `body`'s result, a decoder error turned into the command-line error for it.
func decoding<T>(_ body: () throws(LlamaDecoderError) -> T) throws(CLIError) -> T {
    do { return try body() } catch { throw error.cliError }
}

extension LlamaDecoderError {
    /// The command-line error for this failure: bad model data or input 65, a bad argument 64.
    var cliError: CLIError {
        switch code {
        case .invalidArgument: return .usage(message)
        default: return .data(message)
        }
    }
}
