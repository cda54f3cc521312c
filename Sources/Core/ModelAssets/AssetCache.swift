import Foundation
import Hashing

/// Where installed assets live, whether they are usable, and how they get there.
///
/// Look-up order: the environment variable `CONTEXTUAL_EMBEDDINGS_MODEL` (a folder that
/// overrides the cache for every model whose marker file it holds: `config.json` for a
/// sentence-transformers folder, the packed file for multilingual-e5-small); then the cache, `$XDG_CACHE_HOME` (or `~/.cache`)
/// followed by `contextual-embeddings/models/<identifier>/`. A cached folder counts only when
/// every pinned file has its pinned size and the installer's verification stamp matches the
/// manifest (the SHA-256s were checked when it was installed).
package enum AssetCache {
    /// The state of one package's assets on this system.
    package enum Status: Sendable, Equatable {
        /// Installed and usable, at this folder.
        case installed(URL)
        /// Not installed; `install(_:progress:)` can install it.
        case notInstalled
        /// A folder is there but does not match the manifest (the reason says how).
        case corrupt(String)
        /// Not installed, and this system has no `python3` to install it with.
        case installerMissing
    }

    /// The environment variable that points at a model folder, overriding the cache.
    package static let environmentVariable = "CONTEXTUAL_EMBEDDINGS_MODEL"

    /// The cache root: `$XDG_CACHE_HOME/contextual-embeddings/models` or `~/.cache/contextual-embeddings/models`.
    package static var cacheRoot: URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty, xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        }
        return base.appendingPathComponent("contextual-embeddings/models")
    }

    /// The cache folder of a package.
    package static func cacheFolder(for package: AssetPackage) -> URL {
        cacheRoot.appendingPathComponent(package.identifier)
    }

    /// The folder holding a usable copy, or `nil` (see the type's look-up order).
    package static func locate(_ package: AssetPackage) -> URL? {
        if let override = ProcessInfo.processInfo.environment[environmentVariable], !override.isEmpty {
            let url = URL(fileURLWithPath: override)
            let marker =
                package.files.keys.contains("config.json")
                ? "config.json" : package.files.keys.sorted().first ?? "config.json"
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(marker).path) { return url }
        }
        let folder = cacheFolder(for: package)
        return quickCheck(folder, package) == nil ? folder : nil
    }

    /// Whether the package is usable, and if not why. Reads sizes and the stamp; hashes nothing.
    package static func status(of package: AssetPackage) -> Status {
        if let folder = locate(package) { return .installed(folder) }
        let folder = cacheFolder(for: package)
        if FileManager.default.fileExists(atPath: folder.path), let problem = quickCheck(folder, package) {
            return .corrupt(problem)
        }
        return Installer.findPython() == nil ? .installerMissing : .notInstalled
    }

    /// Hashes every pinned file of `folder`. Returns the first problem, or `nil` when all match.
    package static func verify(_ folder: URL, _ package: AssetPackage) -> String? {
        for name in package.files.keys.sorted() {
            guard let digest = package.files[name] else { continue }
            let url = folder.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url, options: .alwaysMapped) else {
                return "\(name) is missing or unreadable"
            }
            guard data.count == digest.size else { return "\(name) has \(data.count) bytes, expected \(digest.size)" }
            let actual = sha256(data)
            guard actual == digest.sha256 else { return "\(name) has SHA-256 \(actual), expected \(digest.sha256)" }
        }
        return nil
    }

    /// Installs the package into the cache (see `Installer`), returning its folder. Only returns
    /// the folder when a verified copy is already there: no network, no subprocess.
    ///
    /// This blocks for as long as pip and hashing take (seconds to minutes): call it from a
    /// thread that may block, not from Swift concurrency's cooperative pool.
    /// - Throws: `AssetInstallationError` naming the cause.
    @discardableResult
    package static func install(_ package: AssetPackage, progress: (String) -> Void = { _ in })
        throws(AssetInstallationError) -> URL
    {
        let folder = cacheFolder(for: package)
        if quickCheck(folder, package) == nil { return folder }
        return try Installer.install(package, progress: progress)
    }

    static let stampName = ".verified"

    /// The stamp written after a full verification: the manifest it was verified against.
    static func stamp(for package: AssetPackage) -> String {
        package.files.keys.sorted().compactMap { name in
            package.files[name].map { "\(name) \($0.size) \($0.sha256)" }
        }.joined(separator: "\n") + "\n"
    }

    /// Sizes and the stamp only: no hashing. Returns the first problem, or `nil`.
    package static func quickCheck(_ folder: URL, _ package: AssetPackage) -> String? {
        for (name, digest) in package.files {
            let path = folder.appendingPathComponent(name).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                (attributes[.type] as? FileAttributeType) == .typeRegular
            else { return "\(name) is missing" }
            guard (attributes[.size] as? NSNumber)?.intValue == digest.size else { return "\(name) has the wrong size" }
        }
        guard let stamp = try? String(contentsOf: folder.appendingPathComponent(stampName), encoding: .utf8),
            stamp == Self.stamp(for: package)
        else { return "not verified (no matching \(stampName) stamp)" }
        return nil
    }

    static func sha256(_ data: Data) -> String {
        var hasher = SHA256()
        data.withUnsafeBytes { hasher.update($0) }
        return hasher.finalizeHex()
    }
}
