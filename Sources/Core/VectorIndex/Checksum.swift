/// A fast streaming 64-bit checksum over bytes (four independent multiply-xor lanes over 32-byte
/// blocks, then a final avalanche). It detects corruption and truncation; it is not cryptographic.
struct Checksum {
    private var lanes: (UInt64, UInt64, UInt64, UInt64) =
        (0x243F_6A88_85A3_08D3, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0, 0x082E_FA98_EC4E_6C89)
    private var pending = [UInt8]()
    private var total: UInt64 = 0
    private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        total &+= UInt64(bytes.count)
        var start = 0
        if !pending.isEmpty {
            let take = min(32 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            start = take
            if pending.count == 32 {
                pending.withUnsafeBytes { consume(block: $0.baseAddress!) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        guard let base = bytes.baseAddress else { return }
        while start + 32 <= bytes.count {
            consume(block: base + start)
            start += 32
        }
        if start < bytes.count { pending.append(contentsOf: bytes[start..<bytes.count]) }
    }

    @inline(__always)
    private mutating func consume(block: UnsafeRawPointer) {
        @inline(__always) func mix(_ lane: UInt64, _ word: UInt64) -> UInt64 {
            let x = (lane ^ word) &* Self.multiplier
            return (x << 29) | (x >> 35)
        }
        lanes.0 = mix(lanes.0, block.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        lanes.1 = mix(lanes.1, block.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        lanes.2 = mix(lanes.2, block.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        lanes.3 = mix(lanes.3, block.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
    }

    func finalize() -> UInt64 {
        var h = total &* Self.multiplier
        for lane in [lanes.0, lanes.1, lanes.2, lanes.3] {
            h = (h ^ lane) &* Self.multiplier
            h ^= h >> 31
        }
        for byte in pending {
            h = (h ^ UInt64(byte)) &* Self.multiplier
        }
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        return h
    }

    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var c = Checksum()
        c.update(bytes)
        return c.finalize()
    }
}
