import Foundation

/// A GGUF model file (versions 2 and 3, little-endian): its metadata, its tensor descriptions,
/// and its tensors' data, memory-mapped and dequantized on request.
///
/// Opening a file reads and checks everything but the tensor data: every count, length, type,
/// dimension and offset is validated against the file's size before it is used, so a truncated,
/// corrupted or hostile file is a ``GGUFError`` naming what is wrong and where, never a crash or a
/// large allocation.
///
/// ```swift
/// let file = try GGUFFile(contentsOf: modelURL)
/// let heads = try file.metadata.integer("llama.attention.head_count")
/// if let norm = file.tensor(named: "output_norm.weight") {
///     let weights = try file.dequantize(norm)  // [Float], rowCount × rowLength
/// }
/// ```
///
/// The value is cheap to copy: copies share one mapping, unmapped when the last copy goes away.
package struct GGUFFile: Sendable {
    /// The versions this reader accepts. Version 1 used 32-bit counts and is not read.
    package static let supportedVersions: ClosedRange<UInt32> = 2...3
    /// The data alignment when the file has no `general.alignment`.
    package static let defaultAlignment = 32
    /// How deep arrays may nest (an array of arrays is depth 2).
    package static let maximumArrayDepth = 16
    /// The most dimensions a tensor may have (ggml's `GGML_MAX_DIMS`).
    package static let maximumDimensions = 4

    /// The path the file was opened from, or `<memory>`.
    package let path: String
    /// The format version, 2 or 3.
    package let version: UInt32
    /// The key–value metadata, in file order.
    package let metadata: GGUFMetadata
    /// The tensor descriptions, in file order.
    package let tensors: [GGUFTensorInfo]
    /// The alignment of the data section and of every tensor's offset in it: `general.alignment`
    /// (a power of two above zero, of any integer type), or 32 when absent.
    package let alignment: Int
    /// Where the data section starts, in bytes from the start of the file: the end of the tensor
    /// descriptions rounded up to ``alignment``.
    package let dataOffset: Int

    let storage: FileBytes
    private let tensorIndex: [String: Int]

    /// Maps and reads the GGUF file at `url`.
    ///
    /// The mapping is read-only and private; the tensor data is paged in only when used.
    /// - Throws: `GGUFError`: `io` when the file cannot be opened or mapped or is not a regular
    ///   file; another code naming the offset and the problem when it is not a valid GGUF file.
    /// - Complexity: O(size of the metadata and tensor descriptions), not of the tensor data.
    package init(contentsOf url: URL) throws(GGUFError) {
        try self.init(storage: FileBytes(mapping: url.path), path: url.path)
    }

    /// Reads a GGUF file from bytes in memory (a copy is kept).
    /// - Throws: `GGUFError` naming the offset and the problem when the bytes are not a valid GGUF
    ///   file; its path is `<memory>`.
    package init(bytes: [UInt8]) throws(GGUFError) {
        try self.init(storage: FileBytes(copying: bytes), path: "<memory>")
    }

    private init(storage: FileBytes, path: String) throws(GGUFError) {
        let parsed = try GGUFParser.parse(storage.bytes, path: path)
        self.storage = storage
        self.path = path
        version = parsed.version
        metadata = parsed.metadata
        tensors = parsed.tensors
        alignment = parsed.alignment
        dataOffset = parsed.dataOffset
        var index = [String: Int](minimumCapacity: tensors.count)
        for (i, tensor) in tensors.enumerated() { index[tensor.name] = i }
        tensorIndex = index
    }

    /// The file's size in bytes.
    package var byteCount: Int { storage.bytes.count }

    /// The tensor called `name`, or nil when the file has none.
    /// - Complexity: O(1).
    package func tensor(named name: String) -> GGUFTensorInfo? {
        tensorIndex[name].map { tensors[$0] }
    }

    /// Calls `body` with the raw bytes of `tensor`'s data, in the file's layout (blocks for a
    /// quantized type, little-endian elements for a float type).
    ///
    /// The buffer is valid only during the call: do not let it or pointers into it escape.
    /// - Precondition: `tensor` is one of this file's ``tensors``.
    /// - Throws: whatever `body` throws.
    /// Lets the resident pages of `tensor`'s bytes go (a mapped file; nothing for bytes in memory):
    /// for a caller that has converted the tensor and keeps its own copy. The bytes stay readable.
    package func releasePages(of tensor: GGUFTensorInfo) {
        let start = dataOffset + tensor.offset
        storage.releasePages(start..<(start + tensor.byteCount))
    }

    package func withTensorBytes<R, E: Error>(
        _ tensor: GGUFTensorInfo, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        checkOwnership(tensor)
        // The range was checked against the file size when the file was opened.
        let start = dataOffset + tensor.offset
        let slice = UnsafeRawBufferPointer(rebasing: storage.bytes[start..<(start + tensor.byteCount)])
        return try withExtendedLifetime(storage) { () throws(E) -> R in try body(slice) }
    }

    /// Traps when `tensor` is not this file's: mixing files is a programmer's mistake.
    func checkOwnership(_ tensor: GGUFTensorInfo) {
        precondition(
            tensorIndex[tensor.name].map { tensors[$0] == tensor } == true,
            "tensor '\(tensor.name)' is not a tensor of \(path)")
    }
}
