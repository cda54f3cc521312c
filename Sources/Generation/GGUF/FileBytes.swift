#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of a GGUF file: a read-only memory mapping of the file, or a copy of bytes given in
/// memory. Released when the last reference goes away.
///
/// VectorIndex's `MappedFile` does the same mapping; this copy exists because GGUF does not
/// depend on VectorIndex and throws its own error.
// @unchecked: its only state is set once in init and the bytes are never written, so any thread may read them.
final class FileBytes: @unchecked Sendable {
    /// The file's bytes. Valid for the object's lifetime; pointers into it must not outlive it.
    let bytes: UnsafeRawBufferPointer
    private let mapped: Bool

    /// Maps the regular file at `path` read-only.
    /// - Throws: `GGUFError` `io` when it cannot be opened, inspected or mapped, or is not a regular file.
    init(mapping path: String) throws(GGUFError) {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; it is
        // refused as "not a regular file" below instead. A regular file ignores the flag.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure(path, "cannot open") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.failure(path, "cannot stat") }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw GGUFError(.io, path: path, detail: "not a regular file")
        }
        let size = Int(info.st_size)
        mapped = size > 0
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let address, address != MAP_FAILED else { throw Self.failure(path, "cannot map \(size) bytes") }
        bytes = UnsafeRawBufferPointer(start: address, count: size)
    }

    /// Lets the kernel drop the resident pages wholly inside `range` (a mapping only; a copy keeps
    /// its bytes). Reading them again faults them back in from the file, unchanged: for bytes read
    /// once and kept elsewhere (weights converted at load), so that they do not stay resident twice.
    func releasePages(_ range: Range<Int>) {
        guard mapped, let base = bytes.baseAddress else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard page > 0 else { return }
        let start = (max(0, range.lowerBound) + page - 1) / page * page
        let end = min(bytes.count, range.upperBound) / page * page
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
    }

    /// A private copy of `source`, 16-byte aligned like a mapping's page.
    init(copying source: [UInt8]) {
        mapped = false
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: source.count, alignment: 16)
        source.withUnsafeBytes { buffer.copyMemory(from: $0) }
        bytes = UnsafeRawBufferPointer(buffer)
    }

    deinit {
        guard let base = bytes.baseAddress else { return }
        if mapped {
            munmap(UnsafeMutableRawPointer(mutating: base), bytes.count)
        } else {
            UnsafeMutableRawPointer(mutating: base).deallocate()
        }
    }

    private static func failure(_ path: String, _ operation: String) -> GGUFError {
        GGUFError(.io, path: path, detail: "\(operation): \(String(cString: strerror(errno)))")
    }
}
