/// A DEFLATE (RFC 1951) decoder, for reading model wheels (zip archives) without zlib.
///
/// Every malformed stream is an `InflateError`; output is capped at `limit` bytes so a hostile
/// archive cannot exhaust memory.
enum Inflate {
    struct InflateError: Error, Equatable {
        let message: String
    }

    private struct BitReader {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        var bitBuffer: UInt64 = 0
        var bitCount = 0

        @inline(__always)
        mutating func need(_ n: Int) throws {
            while bitCount < n {
                guard position < bytes.count else { throw InflateError(message: "unexpected end of compressed data") }
                bitBuffer |= UInt64(bytes[position]) << UInt64(bitCount)
                position += 1
                bitCount += 8
            }
        }

        @inline(__always)
        mutating func bits(_ n: Int) throws -> Int {
            if n == 0 { return 0 }
            try need(n)
            let value = Int(bitBuffer & ((1 << UInt64(n)) - 1))
            bitBuffer >>= UInt64(n)
            bitCount -= n
            return value
        }

        mutating func alignToByte() {
            let drop = bitCount % 8
            bitBuffer >>= UInt64(drop)
            bitCount -= drop
        }
    }

    /// A canonical Huffman code as a lookup of (count per length, symbols sorted by code).
    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int]

        init(lengths: [Int]) throws {
            symbols = [Int](repeating: 0, count: lengths.count)
            for length in lengths { counts[length] += 1 }
            counts[0] = 0
            var left = 1
            for length in 1..<16 {
                left <<= 1
                left -= counts[length]
                guard left >= 0 else { throw InflateError(message: "over-subscribed Huffman code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
        }

        func decode(_ reader: inout BitReader) throws -> Int {
            var code = 0, first = 0, index = 0
            for length in 1..<16 {
                code |= try reader.bits(1)
                let count = counts[length]
                if code - first < count { return symbols[index + code - first] }
                index += count
                first += count
                first <<= 1
                code <<= 1
            }
            throw InflateError(message: "invalid Huffman code")
        }
    }

    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// Decompresses a raw DEFLATE stream, producing at most `limit` bytes.
    static func decompress(_ input: UnsafeRawBufferPointer, expectedSize: Int? = nil, limit: Int) throws -> [UInt8] {
        var reader = BitReader(bytes: input)
        var output = [UInt8]()
        output.reserveCapacity(min(expectedSize ?? 0, limit))
        let fixedLiterals = try Huffman(lengths: (0..<288).map { $0 < 144 ? 8 : $0 < 256 ? 9 : $0 < 280 ? 7 : 8 })
        let fixedDistances = try Huffman(lengths: [Int](repeating: 5, count: 30))
        var last = false
        while !last {
            last = try reader.bits(1) == 1
            switch try reader.bits(2) {
            case 0:
                reader.alignToByte()
                let length = try reader.bits(16)
                let complement = try reader.bits(16)
                guard length == (~complement & 0xFFFF) else { throw InflateError(message: "stored block length check failed") }
                guard output.count + length <= limit else { throw InflateError(message: "output exceeds \(limit) bytes") }
                for _ in 0..<length { output.append(UInt8(try reader.bits(8))) }
            case 1:
                try inflateBlock(&reader, &output, fixedLiterals, fixedDistances, limit: limit)
            case 2:
                let literalCount = try reader.bits(5) + 257
                let distanceCount = try reader.bits(5) + 1
                let codeLengthCount = try reader.bits(4) + 4
                guard literalCount <= 286, distanceCount <= 30 else { throw InflateError(message: "too many length or distance codes") }
                var codeLengths = [Int](repeating: 0, count: 19)
                for i in 0..<codeLengthCount { codeLengths[codeLengthOrder[i]] = try reader.bits(3) }
                let codeLengthCode = try Huffman(lengths: codeLengths)
                var lengths = [Int]()
                while lengths.count < literalCount + distanceCount {
                    let symbol = try codeLengthCode.decode(&reader)
                    switch symbol {
                    case 0..<16: lengths.append(symbol)
                    case 16:
                        guard let previous = lengths.last else { throw InflateError(message: "repeat with no previous length") }
                        lengths += [Int](repeating: previous, count: 3 + (try reader.bits(2)))
                    case 17: lengths += [Int](repeating: 0, count: 3 + (try reader.bits(3)))
                    default: lengths += [Int](repeating: 0, count: 11 + (try reader.bits(7)))
                    }
                }
                guard lengths.count == literalCount + distanceCount else { throw InflateError(message: "code lengths overrun") }
                guard lengths[256] != 0 else { throw InflateError(message: "no end-of-block code") }
                let literals = try Huffman(lengths: Array(lengths[0..<literalCount]))
                let distances = try Huffman(lengths: Array(lengths[literalCount...]))
                try inflateBlock(&reader, &output, literals, distances, limit: limit)
            default:
                throw InflateError(message: "invalid block type")
            }
        }
        return output
    }

    private static func inflateBlock(_ reader: inout BitReader, _ output: inout [UInt8], _ literals: Huffman, _ distances: Huffman, limit: Int) throws {
        while true {
            let symbol = try literals.decode(&reader)
            if symbol < 256 {
                guard output.count < limit else { throw InflateError(message: "output exceeds \(limit) bytes") }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < 29 else { throw InflateError(message: "invalid length symbol") }
                let length = lengthBase[index] + (try reader.bits(lengthExtra[index]))
                let distanceSymbol = try distances.decode(&reader)
                guard distanceSymbol < 30 else { throw InflateError(message: "invalid distance symbol") }
                let distance = distanceBase[distanceSymbol] + (try reader.bits(distanceExtra[distanceSymbol]))
                guard distance <= output.count else { throw InflateError(message: "distance \(distance) reaches before the start") }
                guard output.count + length <= limit else { throw InflateError(message: "output exceeds \(limit) bytes") }
                let start = output.count - distance
                for i in 0..<length { output.append(output[start + i]) }
            }
        }
    }
}
