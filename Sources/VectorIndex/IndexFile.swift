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

    public init(index: FlatIndex, fingerprint: IndexFingerprint, metadata: Data = Data()) {
        self.index = index
        self.fingerprint = fingerprint
        self.metadata = metadata
    }
}

/// The versioned binary index file.
///
/// Layout (all integers little-endian):
///
///     0   magic "CEINDEX\0"          8 bytes
///     8   format version (1)         UInt32
///     12  reserved (0)               UInt32
///     16  fingerprint JSON length F  UInt64
///     24  vector count N             UInt64
///     32  dimension D                UInt64
///     40  ids length I               UInt64
///     48  metadata length M          UInt64
///     56  vectors offset V           UInt64 (64-byte aligned, ≥ 64 + F + I + M)
///     64  fingerprint JSON, then N × (UInt32 length + UTF-8 id), then metadata, zero padding
///     V   N × D Float32
///     end checksum of every byte before it (UInt64), then "CEIXEND\0"
///
/// Files are written atomically (temporary file, fsync, rename, fsync of the folder) and read by
/// memory mapping. Every inconsistency is a typed `VectorIndexError`.
public enum IndexFile {
    static let magic: [UInt8] = Array("CEINDEX".utf8) + [0]
    static let endMagic: [UInt8] = Array("CEIXEND".utf8) + [0]
    static let headerSize = 64
    static let trailerSize = 16
    /// The format version this library writes and reads.
    public static let version: UInt32 = 1

    /// Writes `stored` to `url` atomically: readers see the old file or the new one, never a mix.
    /// - Throws: `VectorIndexError.io` (the previous file, if any, is left untouched).
    public static func write(_ stored: StoredIndex, to url: URL) throws {
        let index = stored.index
        let fingerprintJSON = try JSONEncoder().encode(stored.fingerprint)
        var ids = [UInt8]()
        for id in index.ids {
            let utf8 = Array(id.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { ids.append(contentsOf: $0) }
            ids.append(contentsOf: utf8)
        }
        let unpadded = headerSize + fingerprintJSON.count + ids.count + stored.metadata.count
        let vectorsOffset = (unpadded + 63) / 64 * 64
        var head = [UInt8]()
        head.reserveCapacity(vectorsOffset)
        head.append(contentsOf: magic)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { head.append(contentsOf: $0) }
        }
        append(version)
        append(UInt32(0))
        append(UInt64(fingerprintJSON.count))
        append(UInt64(index.count))
        append(UInt64(index.dimension))
        append(UInt64(ids.count))
        append(UInt64(stored.metadata.count))
        append(UInt64(vectorsOffset))
        head.append(contentsOf: fingerprintJSON)
        head.append(contentsOf: ids)
        head.append(contentsOf: stored.metadata)
        head.append(contentsOf: [UInt8](repeating: 0, count: vectorsOffset - head.count))

        try AtomicFile.write(to: url) { sink in
            var checksum = Checksum()
            try head.withUnsafeBytes { bytes in
                checksum.update(bytes)
                try sink(bytes)
            }
            try index.withUnsafeVectors { vectors in
                // Float32 little-endian: the in-memory layout on every platform Swift runs on here.
                let bytes = UnsafeRawBufferPointer(vectors)
                checksum.update(bytes)
                try sink(bytes)
            }
            var trailer = [UInt8]()
            withUnsafeBytes(of: checksum.finalize().littleEndian) { trailer.append(contentsOf: $0) }
            trailer.append(contentsOf: endMagic)
            try trailer.withUnsafeBytes { try sink($0) }
        }
    }

    /// Reads and checks an index file; with `expected`, also checks it was built the same way.
    /// - Throws: `notAnIndexFile`, `truncatedFile`, `unsupportedVersion`, `checksumMismatch`,
    ///   `corruptFile`, `fingerprintMismatch` or `io`. Never returns a partially read index.
    public static func read(from url: URL, expecting expected: IndexFingerprint? = nil) throws -> StoredIndex {
        let path = url.path
        let file = try MappedFile(path: path)
        let bytes = file.bytes
        let prefix = min(bytes.count, magic.count)
        guard prefix > 0, Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) else {
            throw VectorIndexError.notAnIndexFile(path: path)
        }
        guard bytes.count >= headerSize + trailerSize else {
            throw VectorIndexError.truncatedFile(path: path, expectedBytes: headerSize + trailerSize, actualBytes: bytes.count)
        }
        func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        func u64(_ offset: Int) throws -> Int {
            let v = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            guard v <= UInt64(Int.max / 8) else {
                throw VectorIndexError.corruptFile(path: path, reason: "field at byte \(offset) is \(v), too large")
            }
            return Int(v)
        }
        let fileVersion = u32(8)
        guard fileVersion == version else { throw VectorIndexError.unsupportedVersion(path: path, version: fileVersion) }
        let fingerprintLength = try u64(16), count = try u64(24), dimension = try u64(32)
        let idsLength = try u64(40), metadataLength = try u64(48), vectorsOffset = try u64(56)
        guard dimension > 0 else { throw VectorIndexError.corruptFile(path: path, reason: "dimension is 0") }
        let (floats, o1) = count.multipliedReportingOverflow(by: dimension)
        let (vectorBytes, o2) = floats.multipliedReportingOverflow(by: 4)
        let (vectorsEnd, o3) = vectorsOffset.addingReportingOverflow(vectorBytes)
        let (expectedSize, o4) = vectorsEnd.addingReportingOverflow(trailerSize)
        guard !(o1 || o2 || o3 || o4) else {
            throw VectorIndexError.corruptFile(path: path, reason: "sizes overflow (\(count) × \(dimension))")
        }
        let headEnd = headerSize + fingerprintLength + idsLength + metadataLength
        guard vectorsOffset % 64 == 0, vectorsOffset >= headEnd else {
            throw VectorIndexError.corruptFile(path: path, reason: "vectors offset \(vectorsOffset) is inconsistent")
        }
        guard bytes.count >= expectedSize else {
            throw VectorIndexError.truncatedFile(path: path, expectedBytes: expectedSize, actualBytes: bytes.count)
        }
        guard bytes.count == expectedSize else {
            throw VectorIndexError.corruptFile(path: path, reason: "\(bytes.count - expectedSize) unexpected bytes after the end")
        }
        guard Array(bytes[(vectorsEnd + 8)..<expectedSize]) == endMagic else {
            throw VectorIndexError.corruptFile(path: path, reason: "missing end marker")
        }
        let stored = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: vectorsEnd, as: UInt64.self))
        guard Checksum.of(UnsafeRawBufferPointer(rebasing: bytes[0..<vectorsEnd])) == stored else {
            throw VectorIndexError.checksumMismatch(path: path)
        }

        var cursor = headerSize
        let fingerprintData = Data(bytes[cursor..<(cursor + fingerprintLength)])
        cursor += fingerprintLength
        let fingerprint: IndexFingerprint
        do {
            fingerprint = try JSONDecoder().decode(IndexFingerprint.self, from: fingerprintData)
        } catch {
            throw VectorIndexError.corruptFile(path: path, reason: "fingerprint is not valid JSON")
        }
        guard fingerprint.dimension == dimension else {
            throw VectorIndexError.corruptFile(path: path, reason: "fingerprint says \(fingerprint.dimension) dimensions, header \(dimension)")
        }
        if let expected, expected != fingerprint {
            throw VectorIndexError.fingerprintMismatch(expected: expected, actual: fingerprint)
        }
        let idsEnd = cursor + idsLength
        var ids = [String]()
        ids.reserveCapacity(min(count, idsLength / 4 + 1))
        while ids.count < count {
            guard cursor + 4 <= idsEnd else {
                throw VectorIndexError.corruptFile(path: path, reason: "ids section ends after \(ids.count) of \(count) ids")
            }
            let length = Int(u32(cursor))
            cursor += 4
            guard length <= idsEnd - cursor else {
                throw VectorIndexError.corruptFile(path: path, reason: "id \(ids.count) runs past the ids section")
            }
            guard let id = String(validating: UnsafeRawBufferPointer(rebasing: bytes[cursor..<(cursor + length)]), as: UTF8.self) else {
                throw VectorIndexError.corruptFile(path: path, reason: "id \(ids.count) is not valid UTF-8")
            }
            ids.append(id)
            cursor += length
        }
        guard cursor == idsEnd else {
            throw VectorIndexError.corruptFile(path: path, reason: "ids section has \(idsEnd - cursor) extra bytes")
        }
        let metadata = Data(bytes[idsEnd..<(idsEnd + metadataLength)])
        let storage = VectorStorage.mapped(file, offset: vectorsOffset, count: floats)
        let nonFinite = storage.withUnsafeValues { values in values.firstIndex { !$0.isFinite } }
        if let bad = nonFinite {
            throw VectorIndexError.corruptFile(path: path, reason: "vector \(bad / dimension) has a non-finite value")
        }
        let index: FlatIndex
        do {
            index = try FlatIndex(dimension: dimension, ids: ids, storage: storage)
        } catch VectorIndexError.duplicateID(let id) {
            throw VectorIndexError.corruptFile(path: path, reason: "id '\(id)' appears twice")
        }
        return StoredIndex(index: index, fingerprint: fingerprint, metadata: metadata)
    }
}
