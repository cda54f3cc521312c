import Foundation
import GGUF

/// Why a decoder model could not be loaded or a request could not run.
///
/// A struct over a private set of cases (the swift-nio pattern): `code` can be switched over, and
/// new cases can be added without breaking that switch's callers who use `default`.
package struct LlamaDecoderError: Error, Equatable, CustomStringConvertible {
    /// The kind of failure.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: String { case invalidFile, unsupported, invalidArgument, contextOverflow }
        fileprivate let kind: Kind
        /// The file is not a GGUF model this decoder can read: unreadable, corrupt, or missing a key or tensor.
        package static let invalidFile = Code(kind: .invalidFile)
        /// The file is valid but asks for something this decoder does not implement (an
        /// architecture, a tensor type, a RoPE scaling, a tokenizer).
        package static let unsupported = Code(kind: .unsupported)
        /// A caller's argument is out of range (a token id, a sampling parameter, a context size).
        package static let invalidArgument = Code(kind: .invalidArgument)
        /// The tokens do not fit the context window.
        package static let contextOverflow = Code(kind: .contextOverflow)
        package var description: String { kind.rawValue }
    }

    /// The kind of failure.
    package let code: Code
    /// What went wrong, naming the file, key or tensor and expected versus actual (and, when the
    /// GGUF reader found it, all of `cause`: its code, the byte offset and the key or tensor).
    package let message: String
    /// The GGUF reader's error this one wraps, with its code, offset and subject, or nil.
    package let cause: GGUFError?

    package init(_ code: Code, _ message: String, cause: GGUFError? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    package static func invalidFile(_ message: String) -> Self { .init(.invalidFile, message) }

    /// The GGUF reader's `error`, kept as the cause; the message is its description (the path, the
    /// byte offset, the key or tensor, what is wrong, the code).
    package static func invalidFile(_ error: GGUFError) -> Self {
        .init(.invalidFile, error.description, cause: error)
    }
    package static func unsupported(_ message: String) -> Self { .init(.unsupported, message) }
    package static func invalidArgument(_ message: String) -> Self { .init(.invalidArgument, message) }
    package static func contextOverflow(_ message: String) -> Self { .init(.contextOverflow, message) }

    package var description: String { message }
}

extension LlamaDecoderError: LocalizedError {
    package var errorDescription: String? { description }
}
