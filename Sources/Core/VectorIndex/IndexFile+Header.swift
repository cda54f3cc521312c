extension IndexFile {
    /// The fixed 64 bytes every index file begins with (layout in `IndexFile`): the one
    /// declaration that `write` encodes and `read` and `fingerprint(of:)` parse.
    ///
    /// ```swift
    /// let header = try IndexFile.Header.parse(file.bytes, path: path)
    /// header.encode() == Array(file.bytes[0..<IndexFile.Header.size])   // true
    /// ```
    package struct Header: Equatable, Sendable {
        /// The header's length in bytes.
        package static let size = 64

        /// The format version.
        package var version: UInt32
        /// Which codes the file keeps (`int8Flag`, `perVectorFlag`, `binaryFlag`).
        package var flags: UInt32
        /// F: the bytes of fingerprint JSON after the header.
        package var fingerprintLength: Int
        /// N: the number of vectors.
        package var count: Int
        /// D: the length of every vector.
        package var dimension: Int
        /// I: the bytes of the ids section.
        package var idsLength: Int
        /// M: the bytes of metadata.
        package var metadataLength: Int
        /// V: where the vectors begin (64-byte aligned, after the metadata).
        package var vectorsOffset: Int

        /// A header with every field given (tests build odd ones).
        package init(
            version: UInt32, flags: UInt32, fingerprintLength: Int, count: Int, dimension: Int,
            idsLength: Int, metadataLength: Int, vectorsOffset: Int
        ) {
            self.version = version
            self.flags = flags
            self.fingerprintLength = fingerprintLength
            self.count = count
            self.dimension = dimension
            self.idsLength = idsLength
            self.metadataLength = metadataLength
            self.vectorsOffset = vectorsOffset
        }

        /// The header `write` gives a file of the current version: the vectors start at the first
        /// 64-byte boundary after the metadata.
        init(flags: UInt32, fingerprintLength: Int, count: Int, dimension: Int, idsLength: Int, metadataLength: Int) {
            let unpadded = Self.size + fingerprintLength + idsLength + metadataLength
            self.init(
                version: IndexFile.version, flags: flags, fingerprintLength: fingerprintLength, count: count,
                dimension: dimension, idsLength: idsLength, metadataLength: metadataLength,
                vectorsOffset: (unpadded + 63) / 64 * 64)
        }

        /// Where each field lies, little-endian.
        private enum Offset {
            static let version = 8, flags = 12, fingerprintLength = 16, count = 24, dimension = 32
            static let idsLength = 40, metadataLength = 48, vectorsOffset = 56
        }

        /// The header's `size` bytes.
        package func encode() -> [UInt8] {
            var bytes = [UInt8]()
            bytes.reserveCapacity(Self.size)
            bytes.append(contentsOf: IndexFile.magic)
            func append<T: FixedWidthInteger>(_ value: T) {
                withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
            }
            append(version)
            append(flags)
            for field in [fingerprintLength, count, dimension, idsLength, metadataLength, vectorsOffset] {
                append(UInt64(field))
            }
            assert(bytes.count == Self.size)
            return bytes
        }

        /// Parses and checks the header at the start of `bytes`, the contents of the file at `path`.
        ///
        /// Checks, in this order: the magic (a file that begins otherwise is not an index file),
        /// that the file has `minimumFileSize` bytes (at least `size`), the version, the codes
        /// flags, and that every size field is below `Int.max / 8` (so sums and products of a
        /// few of them cannot overflow unnoticed). The fields are not checked against each other
        /// or the file's size: `read` does that.
        /// - Throws: `notAnIndexFile`, `truncatedFile`, `unsupportedVersion` or `corruptFile`.
        package static func parse(_ bytes: UnsafeRawBufferPointer, path: String, minimumFileSize: Int = size) throws
            -> Header
        {
            let magic = IndexFile.magic
            let prefix = min(bytes.count, magic.count)
            guard prefix > 0, Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) else {
                throw VectorIndexError.notAnIndexFile(path: path)
            }
            let required = max(size, minimumFileSize)
            guard bytes.count >= required else {
                throw VectorIndexError.truncatedFile(path: path, expectedBytes: required, actualBytes: bytes.count)
            }
            func u32(_ offset: Int) -> UInt32 {
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            }
            func field(_ offset: Int) throws -> Int {
                let v = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                guard v <= UInt64(Int.max / 8) else {
                    throw VectorIndexError.corruptFile(path: path, reason: "field at byte \(offset) is \(v), too large")
                }
                return Int(v)
            }
            let version = u32(Offset.version)
            guard IndexFile.readableVersions.contains(version) else {
                throw VectorIndexError.unsupportedVersion(path: path, version: version)
            }
            let flags = u32(Offset.flags)
            if version == 1, flags != 0 {
                throw VectorIndexError.corruptFile(path: path, reason: "reserved field is \(flags)")
            }
            let known = IndexFile.int8Flag | IndexFile.perVectorFlag | IndexFile.binaryFlag
            guard flags & ~known == 0, flags & IndexFile.perVectorFlag == 0 || flags & IndexFile.int8Flag != 0 else {
                throw VectorIndexError.corruptFile(path: path, reason: "unknown codes flags \(flags)")
            }
            return Header(
                version: version, flags: flags, fingerprintLength: try field(Offset.fingerprintLength),
                count: try field(Offset.count), dimension: try field(Offset.dimension),
                idsLength: try field(Offset.idsLength), metadataLength: try field(Offset.metadataLength),
                vectorsOffset: try field(Offset.vectorsOffset))
        }

        /// The bytes of the checksums and end marker: one checksum in version 1, two after.
        var trailerSize: Int { version == 1 ? 16 : 24 }
        /// The fingerprint JSON's bytes in the file.
        var fingerprintRange: Range<Int> { Self.size..<(Self.size + fingerprintLength) }
        /// The ids section's bytes in the file.
        var idsRange: Range<Int> { fingerprintRange.upperBound..<(fingerprintRange.upperBound + idsLength) }
        /// The metadata's bytes in the file.
        var metadataRange: Range<Int> { idsRange.upperBound..<(idsRange.upperBound + metadataLength) }
    }
}
