#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A whole file mapped read-only into memory; unmapped when the last reference goes away.
// @unchecked: its only state is set once in init; the mapping is read-only, so any thread may read it.
package final class MappedFile: @unchecked Sendable {
    /// The file's bytes. Valid for the object's lifetime; do not let pointers outlive it.
    package let bytes: UnsafeRawBufferPointer
    /// The path the file was opened from.
    package let path: String

    /// Maps the file at `path`.
    /// - Throws: `VectorIndexError.io` when it cannot be opened, inspected or mapped.
    package init(path: String) throws {
        self.path = path
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; it is
        // refused as "not a regular file" below instead. A regular file ignores the flag.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw VectorIndexError.io(path: path, operation: "open", message: Self.lastError()) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw VectorIndexError.io(path: path, operation: "stat", message: Self.lastError())
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw VectorIndexError.io(path: path, operation: "open", message: "not a regular file")
        }
        let size = Int(info.st_size)
        if size == 0 {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let address, address != MAP_FAILED else {
            throw VectorIndexError.io(path: path, operation: "mmap", message: Self.lastError())
        }
        bytes = UnsafeRawBufferPointer(start: address, count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }

    static func lastError() -> String { String(cString: strerror(errno)) }
}
