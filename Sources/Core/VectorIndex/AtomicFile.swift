import Foundation
import LinearAlgebra
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Crash-safe file replacement: write a temporary file beside the target, flush it to disk,
/// rename it over the target, then flush the folder. A reader (or a crash) sees the complete old
/// file or the complete new one. On failure the temporary file is removed and the old one kept;
/// temporary files of saves killed outright (their process is gone) are removed by the next save
/// once they are 2 seconds old (tests of killed saves set `testSettings` instead of waiting).
/// Nothing here reads the environment.
package enum AtomicFile {
    /// Writes the bytes that `produce` hands to its sink to `url`, atomically.
    /// - Throws: `VectorIndexError.io` naming the failed operation, or what `produce` throws.
    package static func write(to url: URL, _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let path = url.path
        let folder = url.deletingLastPathComponent().path
        removeStaleTemporaries(of: url)
        let temporary = folder + "/" + temporaryPrefix(of: url) + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else {
            throw VectorIndexError.io(path: path, operation: "create temporary file", message: MappedFile.lastError())
        }
        // Held until the file is closed (or the process dies): marks the file as a live save.
        _ = flock(fd, LOCK_EX | LOCK_NB)
        var closed = false
        var renamed = false
        defer {
            if !closed { close(fd) }
            if !renamed { unlink(temporary) }
        }
        reach(.created, temporary: temporary)
        try produce { bytes in
            guard var base = bytes.baseAddress else { return }
            var remaining = bytes.count
            while remaining > 0 {
                let n = posixWrite(fd, base, remaining)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw VectorIndexError.io(path: path, operation: "write", message: MappedFile.lastError())
                }
                remaining -= n
                base += n
            }
        }
        guard fsync(fd) == 0 else {
            throw VectorIndexError.io(path: path, operation: "fsync", message: MappedFile.lastError())
        }
        closed = true
        guard close(fd) == 0 else {
            throw VectorIndexError.io(path: path, operation: "close", message: MappedFile.lastError())
        }
        reach(.renaming, temporary: temporary)
        guard rename(temporary, path) == 0 else {
            throw VectorIndexError.io(path: path, operation: "rename", message: MappedFile.lastError())
        }
        renamed = true
        let dirFD = open(folder.isEmpty ? "." : folder, O_RDONLY)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }
}

extension AtomicFile {
    /// A moment inside a save that a crash test may stop it at.
    package enum Step: String, Sendable, CaseIterable {
        /// The temporary file exists; nothing is written yet.
        case created
        /// Written and flushed, not yet renamed over the target.
        case renaming
    }

    /// What tests change about saves in their process; shipping code never sets it.
    package struct TestSettings: Sendable {
        /// Called at each `Step` of every save with the temporary file's path (a crash test's
        /// child process stops itself there, so that the kill lands inside the save, not at a
        /// random moment). Nil: nothing happens.
        package var onStep: (@Sendable (_ step: Step, _ temporary: String) -> Void)?
        /// The age after which a save removes a dead save's temporary file
        /// (`defaultStaleTemporaryAge` unless a test of killed saves wants no wait, or a longer
        /// one to see each file). An age below the default could remove another live save's file
        /// in the instant between its creation and its lock: tests only.
        package var staleTemporaryAge: Duration = defaultStaleTemporaryAge

        /// The settings of a process no test changed.
        package init() {}
    }

    private static let settings = Mutex(TestSettings())

    /// This process's test settings; tests set them before they save.
    package static var testSettings: TestSettings {
        get { settings.withOrderedLock { $0 } }
        set { settings.withOrderedLock { $0 = newValue } }
    }

    private static func reach(_ step: Step, temporary: String) {
        testSettings.onStep?(step, temporary)
    }

    /// Checks, before any long work, that a file can be created beside `url` (the folder exists
    /// and is writable), by creating and removing an empty temporary file there.
    /// - Throws: `VectorIndexError.io` with operation "create temporary file".
    package static func checkWritable(_ url: URL) throws {
        let folder = url.deletingLastPathComponent().path
        let probe = folder + "/" + temporaryPrefix(of: url) + "\(getpid())-probe-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else {
            throw VectorIndexError.io(
                path: url.path, operation: "create temporary file", message: MappedFile.lastError())
        }
        close(fd)
        unlink(probe)
    }

    static func temporaryPrefix(of url: URL) -> String { "." + url.lastPathComponent + ".tmp-" }

    /// How long a temporary file must have gone unmodified before a save may remove it, unless
    /// a test set `testSettings.staleTemporaryAge`: 2 seconds. It covers the instant between a
    /// save creating its temporary file and locking it.
    package static let defaultStaleTemporaryAge: Duration = .seconds(2)

    /// Removes temporary files beside `url` left by saves that died (SIGKILL, power loss): files
    /// that no process holds a lock on and that were last modified more than `age` ago
    /// (`testSettings.staleTemporaryAge`, by default `defaultStaleTemporaryAge`, unless given). A live save holds an exclusive `flock` on its temporary
    /// file from creation to rename, so it is never removed, whatever process, PID namespace or
    /// host it runs in (as far as the file system supports `flock`).
    package static func removeStaleTemporaries(of url: URL, olderThan age: Duration = testSettings.staleTemporaryAge) {
        let folder = url.deletingLastPathComponent()
        let prefix = temporaryPrefix(of: url)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        for name in names where name.hasPrefix(prefix) {
            let path = folder.appendingPathComponent(name).path
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)  // a FIFO of that name cannot block the save
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            #if canImport(Darwin)
                let modified = info.st_mtimespec
            #else
                let modified = info.st_mtim
            #endif
            guard duration(from: modified, to: now) > age else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
        }
    }

    /// `end − start` (negative when a clock was set back).
    private static func duration(from start: timespec, to end: timespec) -> Duration {
        .seconds(Int64(end.tv_sec) - Int64(start.tv_sec)) + .nanoseconds(Int64(end.tv_nsec) - Int64(start.tv_nsec))
    }
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
        return Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
        return Musl.write(fd, buffer, count)
    #else
        return Glibc.write(fd, buffer, count)
    #endif
}
