import Foundation

/// A byte-level BPE tokenizer that cannot be built from what a model file says.
///
/// One error for the module's data: the vocabulary, merges and settings a tokenizer is built from.
/// (Chat templates have their own, `ChatTemplateError`.)
package struct BytePairEncodingError: Error, Equatable, CustomStringConvertible {
    /// What went wrong, in words that name the key, token or merge and expected versus actual.
    package let message: String

    package init(_ message: String) { self.message = message }

    package var description: String { message }
}

extension BytePairEncodingError: LocalizedError {
    package var errorDescription: String? { description }
}
