import Foundation
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
/// once they are 2 seconds old (the environment variable `CONTEXTUAL_EMBEDDINGS_STALE_TEMPORARY_AGE`
/// sets that age in seconds for a process, e.g. `0` in tests of killed saves).
package enum AtomicFile {
    /// Writes the bytes that `produce` hands to its sink to `url`, atomically.
    /// - Throws: `VectorIndexError.io` naming the failed operation, or what `produce` throws.
    package static func write(to url: URL, _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let path = url.path
        let folder = url.deletingLastPathComponent().path
        removeStaleTemporaries(of: url)
        let temporary = folder + "/" + temporaryPrefix(of: url) + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else { throw VectorIndexError.io(path: path, operation: "create temporary file", message: MappedFile.lastError()) }
        // Held until the file is closed (or the process dies): marks the file as a live save.
        _ = flock(fd, LOCK_EX | LOCK_NB)
        var closed = false
        var renamed = false
        defer {
            if !closed { close(fd) }
            if !renamed { unlink(temporary) }
        }
        stopIfAsked(at: "created", temporary: temporary)
        try produce { bytes in
            guard var base = bytes.baseAddress else { return }
            var remaining = bytes.count
            while remaining > 0 {
                let n = Glibc_write(fd, base, remaining)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw VectorIndexError.io(path: path, operation: "write", message: MappedFile.lastError())
                }
                remaining -= n
                base += n
            }
        }
        guard fsync(fd) == 0 else { throw VectorIndexError.io(path: path, operation: "fsync", message: MappedFile.lastError()) }
        closed = true
        guard close(fd) == 0 else { throw VectorIndexError.io(path: path, operation: "close", message: MappedFile.lastError()) }
        stopIfAsked(at: "renaming", temporary: temporary)
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
    /// For crash tests of child processes: with this variable set to `created` (the temporary
    /// file exists, nothing written) or `renaming` (written and flushed, not yet renamed over the
    /// target), a save says `save stopped: <step> <temporary file>` on standard error and stops
    /// its own process with SIGSTOP at that step, so that a test kills it exactly inside the save
    /// instead of at a random moment. Read once per process; unset, nothing happens.
    package static let stopInSaveVariable = "CONTEXTUAL_EMBEDDINGS_TEST_STOP_IN_SAVE"
    private static let stopInSave = ProcessInfo.processInfo.environment[stopInSaveVariable]

    private static func stopIfAsked(at step: String, temporary: String) {
        guard stopInSave == step else { return }
        let line = Array("save stopped: \(step) \(temporary)\n".utf8)
        _ = line.withUnsafeBytes { bytes in bytes.baseAddress.map { Glibc_write(2, $0, bytes.count) } }
        raise(SIGSTOP)
    }

    /// Checks, before any long work, that a file can be created beside `url` (the folder exists
    /// and is writable), by creating and removing an empty temporary file there.
    /// - Throws: `VectorIndexError.io` with operation "create temporary file".
    package static func checkWritable(_ url: URL) throws {
        let folder = url.deletingLastPathComponent().path
        let probe = folder + "/" + temporaryPrefix(of: url) + "\(getpid())-probe-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else { throw VectorIndexError.io(path: url.path, operation: "create temporary file", message: MappedFile.lastError()) }
        close(fd)
        unlink(probe)
    }

    static func temporaryPrefix(of url: URL) -> String { "." + url.lastPathComponent + ".tmp-" }

    /// How long a temporary file must have gone unmodified before a save may remove it, unless
    /// `staleTemporaryAgeVariable` says otherwise: 2 seconds. It covers the instant between a
    /// save creating its temporary file and locking it.
    package static let defaultStaleTemporaryAge: Duration = .seconds(2)

    /// The environment variable that sets `staleTemporaryAge` for a process, in seconds (a
    /// non-negative decimal number such as `0` or `0.5`), so that tests of killed saves in child
    /// processes need not wait out the default. Any other value is ignored. For tests only: an
    /// age below the default could remove another live save's file in the instant between its
    /// creation and its lock.
    package static let staleTemporaryAgeVariable = "CONTEXTUAL_EMBEDDINGS_STALE_TEMPORARY_AGE"

    /// The age `write` uses: `staleTemporaryAge(in:)` of this process's environment, read once.
    package static let staleTemporaryAge = staleTemporaryAge(in: ProcessInfo.processInfo.environment)

    /// `staleTemporaryAgeVariable`'s value in `environment` when valid, else `defaultStaleTemporaryAge`.
    package static func staleTemporaryAge(in environment: [String: String]) -> Duration {
        guard let text = environment[staleTemporaryAgeVariable],
              let seconds = Double(text), seconds.isFinite, seconds >= 0 else { return defaultStaleTemporaryAge }
        return .nanoseconds(Int64(min(seconds, 1e9) * 1e9))
    }

    /// Removes temporary files beside `url` left by saves that died (SIGKILL, power loss): files
    /// that no process holds a lock on and that were last modified more than `age` ago
    /// (`staleTemporaryAge` unless given). A live save holds an exclusive `flock` on its temporary
    /// file from creation to rename, so it is never removed, whatever process, PID namespace or
    /// host it runs in (as far as the file system supports `flock`).
    package static func removeStaleTemporaries(of url: URL, olderThan age: Duration = staleTemporaryAge) {
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
private func Glibc_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
    return Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
    return Musl.write(fd, buffer, count)
    #else
    return Glibc.write(fd, buffer, count)
    #endif
}
