/// GPT-2's byte-level alphabet: every byte 0…255 written as one printable Unicode scalar, so that a
/// vocabulary of strings can hold any byte sequence.
///
/// Bytes that are printable Latin-1 (`!`…`~`, `¡`…`¬`, `®`…`ÿ`) stand for themselves; the other 68
/// (controls, space, DEL, NBSP, soft hyphen) take the scalars from U+0100 upward in byte order, so
/// a space is `Ġ` (U+0120) and a newline `Ċ` (U+010A).
package enum ByteLevel {
    /// `scalars[b]`: the scalar standing for byte `b`.
    package static let scalars: [Unicode.Scalar] = {
        var table = [Unicode.Scalar](repeating: " ", count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            if isPrintable(UInt8(byte)) {
                table[byte] = Unicode.Scalar(UInt8(byte))
            } else {
                // 256 + at most 68: always a valid scalar.
                table[byte] = Unicode.Scalar(next) ?? " "
                next += 1
            }
        }
        return table
    }()

    /// The byte a scalar of the alphabet stands for, or nil for a scalar outside it.
    package static func byte(for scalar: Unicode.Scalar) -> UInt8? {
        let value = scalar.value
        if value < 256 { return isPrintable(UInt8(value)) ? UInt8(value) : nil }
        guard value < 256 + 68 else { return nil }
        return nonPrintable[Int(value - 256)]
    }

    /// The bytes a vocabulary string stands for, or nil when one of its scalars is outside the alphabet.
    package static func bytes(of text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            guard let byte = byte(for: scalar) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// A byte sequence in the alphabet (one scalar per byte).
    package static func string(of bytes: some Sequence<UInt8>) -> String {
        var text = String.UnicodeScalarView()
        for byte in bytes { text.append(scalars[Int(byte)]) }
        return String(text)
    }

    private static func isPrintable(_ byte: UInt8) -> Bool {
        (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte)
    }

    /// The non-printable bytes in order: the byte that U+0100 + i stands for.
    private static let nonPrintable: [UInt8] = (0..<256).compactMap { isPrintable(UInt8($0)) ? nil : UInt8($0) }
}
