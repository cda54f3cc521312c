import Foundation

/// Errors thrown while reading model files or running the encoder.
package enum EncoderError: Error, Equatable, CustomStringConvertible {
    /// A safetensors file is malformed; `reason` says where and how.
    case invalidSafetensors(path: String, reason: String)
    /// A required tensor is missing.
    case missingTensor(path: String, name: String)
    /// A tensor has the wrong shape.
    case shapeMismatch(path: String, name: String, expected: [Int], actual: [Int])
    /// `config.json` is missing, unreadable or inconsistent.
    case invalidConfiguration(path: String, reason: String)
    /// A token id is outside the vocabulary.
    case tokenOutOfRange(id: Int, vocabularySize: Int)
    /// More tokens than the model's position table holds.
    case sequenceTooLong(length: Int, maximum: Int)
    /// A file could not be read.
    case io(path: String, reason: String)

    package var description: String {
        switch self {
        case .invalidSafetensors(let path, let reason): return "\(path): invalid safetensors file: \(reason)"
        case .missingTensor(let path, let name): return "\(path): missing tensor '\(name)'"
        case .shapeMismatch(let path, let name, let expected, let actual):
            return "\(path): tensor '\(name)' has shape \(actual), expected \(expected)"
        case .invalidConfiguration(let path, let reason): return "\(path): invalid model configuration: \(reason)"
        case .tokenOutOfRange(let id, let size): return "token id \(id) is outside the vocabulary of \(size)"
        case .sequenceTooLong(let length, let maximum): return "\(length) tokens, the model takes at most \(maximum)"
        case .io(let path, let reason): return "\(path): \(reason)"
        }
    }
}

extension EncoderError: LocalizedError {
    package var errorDescription: String? { description }
}
