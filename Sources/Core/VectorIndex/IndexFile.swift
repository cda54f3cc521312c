import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An index as stored on disk: the vectors, what made them, and opaque metadata for higher layers.
public struct StoredIndex: Sendable {
    /// The vectors and their ids.
    public var index: FlatIndex
    /// What the vectors were made with.
    public var fingerprint: IndexFingerprint
    /// Bytes stored alongside (the retrieval layer keeps chunks and BM25 statistics here).
    public var metadata: Data

    /// An index with its fingerprint and, optionally, metadata to store beside it.
    public init(index: FlatIndex, fingerprint: IndexFingerprint, metadata: Data = Data()) {
        self.index = index
        self.fingerprint = fingerprint
        self.metadata = metadata
    }
}

/// The versioned binary index file.
///
/// Layout of version 2 (all integers little-endian):
///
///     0   magic "CEINDEX\0"          8 bytes
///     8   format version (2)         UInt32
///     12  codes kept                 UInt32: bit 0 int8, bit 1 int8 per-vector scheme, bit 2 binary
///     16  fingerprint JSON length F  UInt64
///     24  vector count N             UInt64
///     32  dimension D                UInt64
///     40  ids length I               UInt64
///     48  metadata length M          UInt64
///     56  vectors offset V           UInt64 (64-byte aligned, ≥ 64 + F + I + M)
///     64  fingerprint JSON, then N × (UInt32 length + UTF-8 id), then metadata, zero padding
///     V   N × D Float32
///     then the codes, each part at a 64-byte boundary (zero padding before it):
///         int8 per dimension: D Float32 minimum, D Float32 step, then N × D UInt8 codes
///         int8 per vector:    N × D UInt8 codes, then N Float32 scales
///         binary:             N × ⌈D/64⌉ UInt64 sign bits
///     end−24  checksum of every byte except the vectors (UInt64), checksum of the vectors
///             (UInt64), then "CEIXEND\0"
///
/// Version 1 (no codes; one checksum of every byte before it, then "CEIXEND\0") is still read.
/// Files are written atomically (temporary file, fsync, rename, fsync of the folder) and read by
/// memory mapping. Every inconsistency is a typed `VectorIndexError`. Codes are memory-mapped
/// too, so with `verification: .skippingVectors` a large index opens and serves int8 or binary
/// searches reading only the codes and the rows it rescores.
public enum IndexFile {
    static let magic: [UInt8] = Array("CEINDEX".utf8) + [0]
    static let endMagic: [UInt8] = Array("CEIXEND".utf8) + [0]
    /// The format version this library writes.
    public static let version: UInt32 = 2
    /// The versions it reads.
    public static let readableVersions: ClosedRange<UInt32> = 1...2

    /// How much of a file `read` checks before returning.
    public enum Verification: Sendable {
        /// Every checksum, and that every vector is finite (the default).
        case full
        /// Everything but the float vectors: they are mapped, not read. For large indexes
        /// searched through codes; a corrupt vector then goes undetected.
        case skippingVectors
    }

    static let int8Flag: UInt32 = 1, perVectorFlag: UInt32 = 2, binaryFlag: UInt32 = 4

    /// Where each code part lies, from the vectors' end, the counts and the flags.
    struct CodesLayout {
        var int8Parameters: Range<Int>?
        var int8Codes: Range<Int>?
        var int8Scales: Range<Int>?
        var binaryCodes: Range<Int>?
        var end: Int
    }

    static func codesLayout(after vectorsEnd: Int, count: Int, dimension: Int, flags: UInt32) -> CodesLayout? {
        var cursor = vectorsEnd
        func take(_ bytes: (Int, Bool)) -> Range<Int>? {
            guard !bytes.1 else { return nil }
            let (padded, o1) = cursor.addingReportingOverflow(63)
            let start = padded / 64 * 64
            let (end, o2) = start.addingReportingOverflow(bytes.0)
            guard !o1, !o2 else { return nil }
            cursor = end
            return start..<end
        }
        var layout = CodesLayout(end: vectorsEnd)
        if flags & int8Flag != 0 {
            let codes = count.multipliedReportingOverflow(by: dimension)
            if flags & perVectorFlag == 0 {
                guard let parameters = take(dimension.multipliedReportingOverflow(by: 8)), let c = take(codes) else {
                    return nil
                }
                layout.int8Parameters = parameters
                layout.int8Codes = c
            } else {
                guard let c = take(codes), let scales = take(count.multipliedReportingOverflow(by: 4)) else {
                    return nil
                }
                layout.int8Codes = c
                layout.int8Scales = scales
            }
        }
        if flags & binaryFlag != 0 {
            let words = (dimension + 63) / 64
            let (n, o) = count.multipliedReportingOverflow(by: words)
            guard let c = take(n.multipliedReportingOverflow(by: 8)), !o else { return nil }
            layout.binaryCodes = c
        }
        layout.end = cursor
        return layout
    }

    /// The encoder for the JSON an index file holds: keys sorted, so that the same index gives the
    /// same bytes in every process (a dictionary's order otherwise follows the process's hash seed).
    package static var jsonEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    /// Writes `stored` to `url` atomically: readers see the old file or the new one, never a mix.
    /// The index's int8 and binary codes, when it keeps them, are written too.
    /// - Throws: `VectorIndexError.io` (the previous file, if any, is left untouched).
    public static func write(_ stored: StoredIndex, to url: URL) throws {
        let index = stored.index
        let fingerprintJSON = try IndexFile.jsonEncoder.encode(stored.fingerprint)
        var ids = [UInt8]()
        for id in index.ids {
            let utf8 = Array(id.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { ids.append(contentsOf: $0) }
            ids.append(contentsOf: utf8)
        }
        var flags: UInt32 = 0
        if let int8 = index.int8Table {
            flags |= int8Flag
            if int8.quantizer.scheme == .perVector { flags |= perVectorFlag }
        }
        if index.binaryTable != nil { flags |= binaryFlag }
        let header = Header(
            flags: flags, fingerprintLength: fingerprintJSON.count, count: index.count, dimension: index.dimension,
            idsLength: ids.count, metadataLength: stored.metadata.count)
        var head = header.encode()
        head.reserveCapacity(header.vectorsOffset)
        head.append(contentsOf: fingerprintJSON)
        head.append(contentsOf: ids)
        head.append(contentsOf: stored.metadata)
        head.append(contentsOf: [UInt8](repeating: 0, count: header.vectorsOffset - head.count))
        let vectorsEnd = header.vectorsOffset + index.count * index.dimension * 4
        guard let layout = codesLayout(after: vectorsEnd, count: index.count, dimension: index.dimension, flags: flags)
        else {
            throw VectorIndexError.io(path: url.path, operation: "write", message: "index too large to lay out")
        }

        try AtomicFile.write(to: url) { sink in
            var outside = Checksum()
            var inside = Checksum()
            var written = 0
            func emit(_ bytes: UnsafeRawBufferPointer, vectors: Bool = false) throws {
                if vectors { inside.update(bytes) } else { outside.update(bytes) }
                try sink(bytes)
                written += bytes.count
            }
            func pad(to offset: Int) throws {
                guard offset > written else { return }
                try [UInt8](repeating: 0, count: offset - written).withUnsafeBytes { try emit($0) }
            }
            try head.withUnsafeBytes { try emit($0) }
            // Float32 little-endian: the in-memory layout on every platform Swift runs on here.
            try index.withUnsafeVectors { try emit(UnsafeRawBufferPointer($0), vectors: true) }
            if let int8 = index.int8Table {
                if let parameters = layout.int8Parameters {
                    try pad(to: parameters.lowerBound)
                    try int8.quantizer.minimum.withUnsafeBytes { try emit($0) }
                    try int8.quantizer.step.withUnsafeBytes { try emit($0) }
                }
                try pad(to: layout.int8Codes!.lowerBound)
                try int8.codes.withUnsafeBufferPointer { try emit(UnsafeRawBufferPointer($0)) }
                if let scales = layout.int8Scales {
                    try pad(to: scales.lowerBound)
                    try int8.scales.withUnsafeBufferPointer { try emit(UnsafeRawBufferPointer($0)) }
                }
            }
            if let binary = index.binaryTable, let range = layout.binaryCodes {
                try pad(to: range.lowerBound)
                try binary.codes.withUnsafeBufferPointer { try emit(UnsafeRawBufferPointer($0)) }
            }
            var trailer = [UInt8]()
            withUnsafeBytes(of: outside.finalize().littleEndian) { trailer.append(contentsOf: $0) }
            withUnsafeBytes(of: inside.finalize().littleEndian) { trailer.append(contentsOf: $0) }
            trailer.append(contentsOf: endMagic)
            try trailer.withUnsafeBytes { try sink($0) }
        }
    }

    /// The fingerprint an index file names, read from its header alone (nothing else is read or
    /// checked: `read(from:)` does that), e.g. to pick the model before opening the file.
    /// - Throws: `notAnIndexFile`, `truncatedFile`, `unsupportedVersion`, `corruptFile` or `io`.
    public static func fingerprint(of url: URL) throws -> IndexFingerprint {
        let path = url.path
        let file = try MappedFile(path: path)
        let header = try Header.parse(file.bytes, path: path)
        guard header.fingerprintRange.upperBound <= file.bytes.count else {
            throw VectorIndexError.truncatedFile(
                path: path, expectedBytes: header.fingerprintRange.upperBound, actualBytes: file.bytes.count)
        }
        return try fingerprint(in: file.bytes, header: header, path: path)
    }

    /// Reads and checks an index file; with `expected`, also checks it was built the same way.
    /// Its codes, if it has any, come back in the index (`FlatIndex.precisions`).
    ///
    /// In order: the header, the layout of the sections against the file's size, the checksums,
    /// the fingerprint, the ids, the vectors, then the codes; the first failure is thrown.
    /// - Throws: `notAnIndexFile`, `truncatedFile`, `unsupportedVersion`, `checksumMismatch`,
    ///   `corruptFile`, `fingerprintMismatch` or `io`. Never returns a partially read index.
    public static func read(
        from url: URL, expecting expected: IndexFingerprint? = nil,
        verification: Verification = .full
    ) throws -> StoredIndex {
        let path = url.path
        let file = try MappedFile(path: path)
        let bytes = file.bytes
        // The smallest file: a header and a version 1 trailer.
        let header = try Header.parse(bytes, path: path, minimumFileSize: Header.size + 16)
        let layout = try FileLayout(header, fileSize: bytes.count, path: path)
        guard Array(bytes[(layout.fileSize - 8)..<layout.fileSize]) == endMagic else {
            throw VectorIndexError.corruptFile(path: path, reason: "missing end marker")
        }
        try verifyChecksums(bytes, header: header, layout: layout, verification: verification, path: path)

        let fingerprint = try fingerprint(in: bytes, header: header, path: path)
        guard fingerprint.dimension == header.dimension else {
            throw VectorIndexError.corruptFile(
                path: path, reason: "fingerprint says \(fingerprint.dimension) dimensions, header \(header.dimension)")
        }
        if let expected, expected != fingerprint {
            throw VectorIndexError.fingerprintMismatch(expected: expected, actual: fingerprint)
        }
        let ids = try readIDs(bytes, header: header, path: path)
        let metadata = Data(bytes[header.metadataRange])
        var index = try vectors(of: file, header: header, ids: ids, layout: layout, verification: verification)
        try readCodes(of: file, header: header, layout: layout, into: &index)
        return StoredIndex(index: index, fingerprint: fingerprint, metadata: metadata)
    }

    /// Where a file's sections end, from its header, checked against the file's size.
    private struct FileLayout {
        /// N × D: the number of float values.
        var floats: Int
        /// Where the vectors end.
        var vectorsEnd: Int
        /// Where the codes lie; `codes.end` is where the trailer begins.
        var codes: CodesLayout
        /// The size the file must have.
        var fileSize: Int

        /// - Throws: `corruptFile` when the sizes overflow or the sections overlap, `truncatedFile`
        ///   when the file is shorter than the header says, `corruptFile` when longer.
        init(_ header: Header, fileSize actual: Int, path: String) throws {
            let count = header.count
            let dimension = header.dimension
            let vectorsOffset = header.vectorsOffset
            guard dimension > 0 else { throw VectorIndexError.corruptFile(path: path, reason: "dimension is 0") }
            let (floats, o1) = count.multipliedReportingOverflow(by: dimension)
            let (vectorBytes, o2) = floats.multipliedReportingOverflow(by: 4)
            let (vectorsEnd, o3) = vectorsOffset.addingReportingOverflow(vectorBytes)
            guard !(o1 || o2 || o3),
                let codes = codesLayout(after: vectorsEnd, count: count, dimension: dimension, flags: header.flags)
            else {
                throw VectorIndexError.corruptFile(path: path, reason: "sizes overflow (\(count) × \(dimension))")
            }
            let (expectedSize, o4) = codes.end.addingReportingOverflow(header.trailerSize)
            guard !o4 else {
                throw VectorIndexError.corruptFile(path: path, reason: "sizes overflow (\(count) × \(dimension))")
            }
            guard vectorsOffset % 64 == 0, vectorsOffset >= header.metadataRange.upperBound else {
                throw VectorIndexError.corruptFile(
                    path: path, reason: "vectors offset \(vectorsOffset) is inconsistent")
            }
            guard actual >= expectedSize else {
                throw VectorIndexError.truncatedFile(path: path, expectedBytes: expectedSize, actualBytes: actual)
            }
            guard actual == expectedSize else {
                throw VectorIndexError.corruptFile(
                    path: path, reason: "\(actual - expectedSize) unexpected bytes after the end")
            }
            self.floats = floats
            self.vectorsEnd = vectorsEnd
            self.codes = codes
            self.fileSize = expectedSize
        }
    }

    /// Version 1: one checksum of everything before it. Version 2: one of everything but the
    /// vectors, and (with `.full`) one of the vectors.
    /// - Throws: `checksumMismatch`.
    private static func verifyChecksums(
        _ bytes: UnsafeRawBufferPointer, header: Header, layout: FileLayout,
        verification: Verification, path: String
    ) throws {
        func stored(at offset: Int) -> UInt64 {
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        func checksum(_ range: Range<Int>) -> Checksum {
            var c = Checksum()
            c.update(UnsafeRawBufferPointer(rebasing: bytes[range]))
            return c
        }
        if header.version == 1 {
            guard
                Checksum.of(UnsafeRawBufferPointer(rebasing: bytes[0..<layout.vectorsEnd]))
                    == stored(at: layout.vectorsEnd)
            else {
                throw VectorIndexError.checksumMismatch(path: path)
            }
            return
        }
        var outside = checksum(0..<header.vectorsOffset)
        outside.update(UnsafeRawBufferPointer(rebasing: bytes[layout.vectorsEnd..<layout.codes.end]))
        guard outside.finalize() == stored(at: layout.codes.end) else {
            throw VectorIndexError.checksumMismatch(path: path)
        }
        if verification == .full {
            guard checksum(header.vectorsOffset..<layout.vectorsEnd).finalize() == stored(at: layout.codes.end + 8)
            else {
                throw VectorIndexError.checksumMismatch(path: path)
            }
        }
    }

    /// The fingerprint JSON after the header (the caller has checked that the file holds it).
    /// - Throws: `corruptFile` when it is not a fingerprint.
    private static func fingerprint(in bytes: UnsafeRawBufferPointer, header: Header, path: String) throws
        -> IndexFingerprint
    {
        do {
            return try JSONDecoder().decode(IndexFingerprint.self, from: Data(bytes[header.fingerprintRange]))
        } catch {
            throw VectorIndexError.corruptFile(path: path, reason: "fingerprint is not valid JSON")
        }
    }

    /// The ids section: N × (UInt32 length + UTF-8), filling it exactly.
    /// - Throws: `corruptFile` naming the first id that does not fit or is not UTF-8.
    private static func readIDs(_ bytes: UnsafeRawBufferPointer, header: Header, path: String) throws -> [String] {
        let count = header.count
        var cursor = header.idsRange.lowerBound
        let idsEnd = header.idsRange.upperBound
        var ids = [String]()
        ids.reserveCapacity(min(count, header.idsLength / 4 + 1))
        while ids.count < count {
            guard cursor + 4 <= idsEnd else {
                throw VectorIndexError.corruptFile(
                    path: path, reason: "ids section ends after \(ids.count) of \(count) ids")
            }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: cursor, as: UInt32.self)))
            cursor += 4
            guard length <= idsEnd - cursor else {
                throw VectorIndexError.corruptFile(path: path, reason: "id \(ids.count) runs past the ids section")
            }
            guard
                let id = String(
                    validating: UnsafeRawBufferPointer(rebasing: bytes[cursor..<(cursor + length)]), as: UTF8.self)
            else {
                throw VectorIndexError.corruptFile(path: path, reason: "id \(ids.count) is not valid UTF-8")
            }
            ids.append(id)
            cursor += length
        }
        guard cursor == idsEnd else {
            throw VectorIndexError.corruptFile(path: path, reason: "ids section has \(idsEnd - cursor) extra bytes")
        }
        return ids
    }

    /// The index over the mapped vectors, each checked finite unless `verification` skips them
    /// (version 1 files are always checked).
    /// - Throws: `corruptFile` for a non-finite value or a repeated id.
    private static func vectors(
        of file: MappedFile, header: Header, ids: [String], layout: FileLayout,
        verification: Verification
    ) throws -> FlatIndex {
        let storage = VectorStorage.mapped(file, offset: header.vectorsOffset, count: layout.floats)
        if verification == .full || header.version == 1 {
            let nonFinite = storage.withUnsafeBufferPointer { values in values.firstIndex { !$0.isFinite } }
            if let bad = nonFinite {
                throw VectorIndexError.corruptFile(
                    path: file.path, reason: "vector \(bad / header.dimension) has a non-finite value")
            }
        }
        do {
            return try FlatIndex(dimension: header.dimension, ids: ids, storage: storage)
        } catch VectorIndexError.duplicateID(let id) {
            throw VectorIndexError.corruptFile(path: file.path, reason: "id '\(id)' appears twice")
        }
    }

    /// Attaches the int8 and binary codes the file keeps to `index`, mapped.
    /// - Throws: `corruptFile` for int8 ranges that are not finite or an invalid per-vector scale.
    private static func readCodes(of file: MappedFile, header: Header, layout: FileLayout, into index: inout FlatIndex)
        throws
    {
        let count = header.count
        let dimension = header.dimension
        let path = file.path
        if let codes = layout.codes.int8Codes {
            let quantizer: Int8Quantizer
            if let parameters = layout.codes.int8Parameters {
                let values = (0..<(2 * dimension)).map {
                    file.bytes.loadUnaligned(fromByteOffset: parameters.lowerBound + 4 * $0, as: Float.self)
                }
                do {
                    quantizer = try Int8Quantizer(
                        minimum: Array(values[0..<dimension]), step: Array(values[dimension...]))
                } catch {
                    throw VectorIndexError.corruptFile(path: path, reason: "int8 ranges are not finite")
                }
            } else {
                quantizer = Int8Quantizer(perVectorDimension: dimension)
            }
            var scales = StoredArray<Float>.owned([])
            if let range = layout.codes.int8Scales {
                scales = .mapped(file, offset: range.lowerBound, count: count)
                let bad = scales.withUnsafeBufferPointer { $0.firstIndex { !$0.isFinite || $0 < 0 } }
                if let bad {
                    throw VectorIndexError.corruptFile(path: path, reason: "int8 scale of vector \(bad) is invalid")
                }
            }
            index.int8Table = Int8Table(
                quantizer: quantizer, codes: .mapped(file, offset: codes.lowerBound, count: layout.floats),
                scales: scales)
        }
        if let range = layout.codes.binaryCodes {
            let words = (dimension + 63) / 64
            index.binaryTable = BinaryTable(
                words: words, codes: .mapped(file, offset: range.lowerBound, count: count * words))
        }
    }
}
