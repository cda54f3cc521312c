import CZlib
import Foundation

/// A minimal, defensive zip reader (central directory, stored and deflated entries through zlib,
/// CRC-32 check through zlib),
/// enough to unpack a Python wheel. Entry names are checked: an absolute path, a `..` component,
/// a backslash or a symbolic link anywhere in the archive makes it invalid.
package struct ZipArchive {
    package struct Entry {
        package var name: String
        package var method: Int
        package var crc32: UInt32
        package var compressedSize: Int
        package var uncompressedSize: Int
        package var localHeaderOffset: Int
        package var isSymbolicLink: Bool
        package var isDirectory: Bool { name.hasSuffix("/") }
    }

    package struct Failure: Error { package let message: String }

    let data: Data
    package let entries: [Entry]

    package init(contentsOf url: URL) throws {
        do { data = try Data(contentsOf: url, options: .alwaysMapped) } catch {
            throw Failure(message: "cannot read \(url.lastPathComponent): \(error.localizedDescription)")
        }
        entries = try data.withUnsafeBytes { try Self.readDirectory($0) }
        for entry in entries {
            let parts = entry.name.split(separator: "/", omittingEmptySubsequences: false)
            if entry.name.hasPrefix("/") || entry.name.contains("\\") || parts.contains("..")
                || entry.name.contains("\0")
            {
                throw Failure(message: "unsafe path '\(entry.name)' in archive")
            }
            if entry.isSymbolicLink { throw Failure(message: "symbolic link '\(entry.name)' in archive") }
        }
    }

    private static func readDirectory(_ bytes: UnsafeRawBufferPointer) throws -> [Entry] {
        func u16(_ o: Int) -> Int { Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt16.self))) }
        func u32(_ o: Int) -> Int { Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt32.self))) }
        guard bytes.count >= 22 else { throw Failure(message: "too short to be a zip archive") }
        var end = -1
        var o = bytes.count - 22
        let lowest = max(0, bytes.count - 22 - 65_535)
        while o >= lowest {
            if u32(o) == 0x0605_4B50 {
                end = o
                break
            }
            o -= 1
        }
        guard end >= 0 else { throw Failure(message: "no end of central directory record") }
        let count = u16(end + 10)
        let directorySize = u32(end + 12)
        let directoryOffset = u32(end + 16)
        guard directoryOffset <= end, directorySize <= end - directoryOffset else {
            throw Failure(message: "central directory out of range")
        }
        var entries = [Entry]()
        var p = directoryOffset
        for _ in 0..<count {
            guard p + 46 <= end, u32(p) == 0x0201_4B50 else { throw Failure(message: "bad central directory entry") }
            let madeBy = u16(p + 4) >> 8
            let flags = u16(p + 8)
            let method = u16(p + 10)
            let crc = UInt32(u32(p + 16))
            let compressed = u32(p + 20)
            let uncompressed = u32(p + 24)
            let nameLength = u16(p + 28)
            let extraLength = u16(p + 30)
            let commentLength = u16(p + 32)
            let external = u32(p + 38)
            let local = u32(p + 42)
            guard p + 46 + nameLength <= end else { throw Failure(message: "entry name out of range") }
            guard
                let name = String(
                    validating: UnsafeRawBufferPointer(rebasing: bytes[(p + 46)..<(p + 46 + nameLength)]), as: UTF8.self
                )
            else {
                throw Failure(message: "entry name is not UTF-8")
            }
            guard flags & 1 == 0 else { throw Failure(message: "encrypted entry '\(name)'") }
            guard compressed != 0xFFFF_FFFF, uncompressed != 0xFFFF_FFFF, local != 0xFFFF_FFFF else {
                throw Failure(message: "zip64 entry '\(name)' is not supported")
            }
            let isLink = madeBy == 3 && ((external >> 16) & 0o170000) == 0o120000
            entries.append(
                Entry(
                    name: name, method: method, crc32: crc, compressedSize: compressed,
                    uncompressedSize: uncompressed, localHeaderOffset: local, isSymbolicLink: isLink))
            p += 46 + nameLength + extraLength + commentLength
        }
        return entries
    }

    /// The bytes of `entry`, decompressed and checked against its size and CRC-32.
    package func contents(of entry: Entry, limit: Int) throws -> [UInt8] {
        guard entry.uncompressedSize <= limit else {
            throw Failure(message: "'\(entry.name)' is larger than \(limit) bytes")
        }
        return try data.withUnsafeBytes { bytes -> [UInt8] in
            let o = entry.localHeaderOffset
            guard o + 30 <= bytes.count,
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt32.self)) == 0x0403_4B50
            else {
                throw Failure(message: "bad local header for '\(entry.name)'")
            }
            let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: o + 26, as: UInt16.self)))
            let extraLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: o + 28, as: UInt16.self)))
            let start = o + 30 + nameLength + extraLength
            guard start <= bytes.count, entry.compressedSize <= bytes.count - start else {
                throw Failure(message: "data of '\(entry.name)' runs past the archive")
            }
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + entry.compressedSize)])
            let output: [UInt8]
            switch entry.method {
            case 0: output = Array(raw)
            case 8:
                do { output = try RawInflate.decompress(raw, size: entry.uncompressedSize) } catch let error as Failure
                {
                    throw Failure(message: "'\(entry.name)': \(error.message)")
                }
            default: throw Failure(message: "'\(entry.name)' uses unsupported compression method \(entry.method)")
            }
            guard output.count == entry.uncompressedSize else {
                throw Failure(message: "'\(entry.name)' has the wrong size")
            }
            guard CRC32.checksum(output) == entry.crc32 else {
                throw Failure(message: "'\(entry.name)' fails its CRC-32 check")
            }
            return output
        }
    }
}

/// CRC-32 (IEEE 802.3, as zip uses), computed by zlib.
package enum CRC32 {
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c: uLong = crc32(0, nil, 0)
        bytes.withUnsafeBufferPointer { buffer in
            var rest = UnsafeBufferPointer(rebasing: buffer[...])
            // zlib takes a 32-bit length: feed it in pieces of at most 1 GiB.
            while !rest.isEmpty {
                let n = min(rest.count, 1 << 30)
                c = crc32(c, rest.baseAddress, uInt(n))
                rest = UnsafeBufferPointer(rebasing: rest[n...])
            }
        }
        return UInt32(truncatingIfNeeded: c)
    }
}

/// Raw DEFLATE (RFC 1951, no zlib or gzip header, as zip stores it), decoded by zlib.
package enum RawInflate {
    /// Decodes `input`, which must produce exactly `size` bytes and then end.
    /// - Throws: `ZipArchive.Failure` for a corrupt stream, a stream that produces more or fewer
    ///   bytes than `size`, or one that does not end where the input does.
    package static func decompress(_ input: UnsafeRawBufferPointer, size: Int) throws -> [UInt8] {
        guard input.count <= Int(UInt32.max), size <= Int(UInt32.max) - 1 else {
            throw ZipArchive.Failure(message: "entry is too large for this reader")
        }
        var stream = z_stream()
        // windowBits -15: a raw stream with a 32 KiB window.
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ZipArchive.Failure(message: "zlib could not start a stream")
        }
        defer { inflateEnd(&stream) }
        // One byte more than expected, so a stream that would go on is caught.
        var output = [UInt8](repeating: 0, count: size + 1)
        let status: Int32 = output.withUnsafeMutableBufferPointer { out in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(input.count)
            stream.next_out = out.baseAddress
            stream.avail_out = uInt(out.count)
            return inflate(&stream, Z_FINISH)
        }
        let produced = Int(stream.total_out)
        switch status {
        case Z_STREAM_END:
            guard produced == size else {
                throw ZipArchive.Failure(message: "inflates to \(produced) bytes, expected \(size)")
            }
            guard stream.avail_in == 0 else {
                throw ZipArchive.Failure(message: "data continues after the end of the stream")
            }
        case Z_DATA_ERROR:
            let reason = stream.msg.map { String(cString: $0) } ?? "invalid data"
            throw ZipArchive.Failure(message: "corrupt DEFLATE stream (\(reason))")
        case Z_MEM_ERROR:
            throw ZipArchive.Failure(message: "out of memory while inflating")
        default:
            // Z_BUF_ERROR or Z_OK: the output was full (more than `size` bytes) or the input ran out.
            if produced > size { throw ZipArchive.Failure(message: "inflates to more than \(size) bytes") }
            throw ZipArchive.Failure(message: "DEFLATE stream is truncated")
        }
        output.removeLast()
        return output
    }
}
