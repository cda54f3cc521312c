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
            "How the language model holds its weights: native (the file's own 4-, 5- and 8-bit blocks, fast), int8 (int8 per output channel) or float32 (dequantized once: the reference, about 4x the memory).",
        default: .native)

    static let chatTemplate = Option<String>(
        "--chat-template", valueName: "file",
        help:
            "A Jinja chat template file used instead of the model file's own (for a GGUF file without one, or with a wrong one; tool calls follow its format)."
    )

    /// The text of the chat template file `--chat-template` names, or nil.
    static func template(_ parsed: ParsedArguments) throws -> String? {
        guard let path = parsed[chatTemplate] else { return nil }
        let url = URL(fileURLWithPath: path)
        try InputFile.check(url, what: "\(chatTemplate.name) file")
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { throw CLIError.data("\(chatTemplate.name) file '\(path)' cannot be read as UTF-8 text") }
        return text
    }

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
    /// `chatTemplate` replaces the file's chat template (the default model is then installed first).
    static func system(_ value: String?, option: String, chatTemplate: String? = nil) throws -> SystemLanguageModel {
        let descriptor = DecoderCatalog.descriptor(for: value ?? DecoderCatalog.defaultModel.identifier)
        if let descriptor {
            if descriptor == DecoderCatalog.defaultModel, chatTemplate == nil { return .default }
            guard let file = descriptor.installedFile else {
                throw CLIError.noInput(
                    "\(descriptor.identifier) is not installed: embeddings assets install --model \(descriptor.identifier)"
                )
            }
            return SystemLanguageModel(contentsOf: file, chatTemplate: chatTemplate)
        }
        let path = value ?? ""
        try InputFile.check(URL(fileURLWithPath: path), what: "\(option) file")
        return SystemLanguageModel(contentsOf: URL(fileURLWithPath: path), chatTemplate: chatTemplate)
    }

    /// The model `--model` and `--quantize` name, loaded.
    static func load(_ parsed: ParsedArguments) throws -> LlamaModel {
        let url = try file(parsed)
        let precision = try parsed.value(quantize)
        let template = try template(parsed)
        return try decoding { () throws(LlamaDecoderError) in
            try LlamaModel(contentsOf: url, precision: precision, chatTemplate: template)
        }
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
