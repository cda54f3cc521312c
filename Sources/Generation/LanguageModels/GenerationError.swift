import Foundation

extension LanguageModelSession {
    /// Why a request failed: Apple's `LanguageModelSession.GenerationError`, with the cases this
    /// engine can meet. Each carries a `Context` whose `debugDescription` says what happened.
    public enum GenerationError: Error, LocalizedError, Sendable, Equatable, CustomStringConvertible {
        /// What a failure is about, for people reading logs.
        public struct Context: Sendable, Equatable {
            /// What went wrong, naming the numbers or the file involved.
            public let debugDescription: String
            /// The errors this one comes from (the decoder's `LlamaDecoderError`, which keeps the
            /// GGUF reader's error as its `cause`), as Apple's `Context` keeps them.
            public let underlyingErrors: [any Error]

            /// A context with a description and the errors it comes from.
            public init(debugDescription: String, underlyingErrors: [any Error] = []) {
                self.debugDescription = debugDescription
                self.underlyingErrors = underlyingErrors
            }

            /// Equal descriptions and equally described underlying errors.
            public static func == (a: Context, b: Context) -> Bool {
                a.debugDescription == b.debugDescription
                    && a.underlyingErrors.map { String(describing: $0) }
                        == b.underlyingErrors.map { String(describing: $0) }
            }
        }

        /// The instructions, transcript and prompt (and the response so far) do not fit the
        /// model's context window.
        case exceededContextWindowSize(Context)
        /// The model is not installed or its file cannot be read (see `SystemLanguageModel.availability`).
        case assetsUnavailable(Context)
        /// The model's output could not be turned into the requested type.
        case decodingFailure(Context)
        /// A guide or schema this engine cannot enforce while decoding; refused before generating.
        case unsupportedGuide(Context)
        /// The session is already answering a request: one request at a time per session.
        case concurrentRequests(Context)
        /// Options out of range: a negative temperature, `random(top:)` below 1, a probability
        /// threshold outside 0 … 1, a token limit below 1. (An extension: Apple's framework traps.)
        case invalidGenerationOptions(Context)

        /// The case's context.
        public var context: Context {
            switch self {
            case .exceededContextWindowSize(let c), .assetsUnavailable(let c), .decodingFailure(let c),
                .unsupportedGuide(let c), .concurrentRequests(let c), .invalidGenerationOptions(let c):
                return c
            }
        }

        public var description: String { context.debugDescription }
        public var errorDescription: String? { context.debugDescription }

        static func invalidOptions(_ message: String) -> Self {
            .invalidGenerationOptions(Context(debugDescription: message))
        }

    }
}
