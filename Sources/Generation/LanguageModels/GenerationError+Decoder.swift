import LlamaDecoder

extension LanguageModelSession.GenerationError {
    /// The decoder's error as the session reports it. (Apart from the error type, which needs no
    /// decoder: the schema and pattern readers use it alone.)
    init(_ error: LlamaDecoderError) {
        let context = Context(debugDescription: error.description, underlyingErrors: [error])
        switch error.code {
        case .contextOverflow: self = .exceededContextWindowSize(context)
        case .invalidFile, .unsupported: self = .assetsUnavailable(context)
        default: self = .decodingFailure(context)
        }
    }
}
