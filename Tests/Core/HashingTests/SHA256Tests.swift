import Hashing
import XCTest

/// SHA-256 against the FIPS 180-2 known answers and Python's hashlib at every padding boundary,
/// incremental feeding (both `update` overloads, split anywhere) against one-shot hashing, and
/// the agreement of `finalize()`, `finalizeHex()` and `hex(of:)`.
final class SHA256Tests: XCTestCase {
    // MARK: - FIPS 180-2 known answers

    func testEmptyMessage() {
        XCTAssertEqual(SHA256.hex(of: [UInt8]()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var hasher = SHA256()
        XCTAssertEqual(hasher.finalizeHex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testABC() {
        XCTAssertEqual(
            digestOfBothOverloads(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
    }

    func testTwoBlock448BitMessage() {
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        XCTAssertEqual(message.count, 56)
        XCTAssertEqual(
            digestOfBothOverloads(message), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    func test896BitMessage() {
        let message = Array(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
                .utf8
        )
        XCTAssertEqual(message.count, 112)
        XCTAssertEqual(
            digestOfBothOverloads(message), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    func testOneMillionA() {
        let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        XCTAssertEqual(SHA256.hex(of: message), expected)

        // The same message fed in uneven chunks through both overloads, alternating.
        var hasher = SHA256()
        var offset = 0
        var chunk = 1
        var useRaw = false
        while offset < message.count {
            let end = min(offset + chunk, message.count)
            if useRaw {
                message[offset..<end].withUnsafeBytes { hasher.update($0) }
            } else {
                hasher.update(message[offset..<end])
            }
            offset = end
            chunk = chunk % 997 + 37
            useRaw.toggle()
        }
        XCTAssertEqual(hasher.finalizeHex(), expected)
    }

    // MARK: - Padding boundaries

    /// Messages of "a" repeated whose lengths straddle the 55/56-byte padding limit and the block
    /// edges. Expected digests produced by Python's hashlib: `hashlib.sha256(b"a" * n).hexdigest()`.
    func testPaddingBoundariesRepeatedA() {
        let expected: [(Int, String)] = [
            (55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
            (56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
            (57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"),
            (63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
            (64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
            (65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"),
            (119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"),
            (120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"),
        ]
        for (length, digest) in expected {
            let message = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            XCTAssertEqual(digestOfBothOverloads(message), digest, "length \(length)")
        }
    }

    /// The same lengths with distinct bytes, so a byte-order slip inside a word cannot cancel out.
    /// Expected digests produced by Python's hashlib:
    /// `hashlib.sha256(bytes((i * 7 + 3) % 256 for i in range(n))).hexdigest()`.
    func testPaddingBoundariesBytePattern() {
        let expected: [(Int, String)] = [
            (55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"),
            (56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"),
            (57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"),
            (63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"),
            (64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"),
            (65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"),
            (119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"),
            (120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"),
        ]
        for (length, digest) in expected {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
            XCTAssertEqual(digestOfBothOverloads(message), digest, "length \(length)")
        }
    }

    // MARK: - Incremental updates

    /// 130 bytes: two full blocks and a partial one. Digest produced by Python's hashlib:
    /// `hashlib.sha256(bytes((i * 31 + 11) % 256 for i in range(130))).hexdigest()`.
    private let message130 = (0..<130).map { UInt8(truncatingIfNeeded: $0 * 31 + 11) }
    private let digest130 = "63c064bf815c73be30bf507aafc71aba594514dd728b8004f7d6259e565a9b19"

    func testOneShotMatchesHashlib() {
        XCTAssertEqual(digestOfBothOverloads(message130), digest130)
    }

    func testTwoSequenceUpdatesAtEverySplitEqualOneShot() {
        for split in 0...message130.count {
            var hasher = SHA256()
            hasher.update(message130[..<split])
            hasher.update(message130[split...])
            XCTAssertEqual(hasher.finalizeHex(), digest130, "split at \(split)")
        }
    }

    func testTwoRawBufferUpdatesAtEverySplitEqualOneShot() {
        for split in 0...message130.count {
            var hasher = SHA256()
            message130[..<split].withUnsafeBytes { hasher.update($0) }
            message130[split...].withUnsafeBytes { hasher.update($0) }
            XCTAssertEqual(hasher.finalizeHex(), digest130, "split at \(split)")
        }
    }

    /// Mixing the overloads: a buffered partial block from one must be carried into the other.
    func testMixedOverloadsAtEverySplitEqualOneShot() {
        for split in 0...message130.count {
            var sequenceThenRaw = SHA256()
            sequenceThenRaw.update(message130[..<split])
            message130[split...].withUnsafeBytes { sequenceThenRaw.update($0) }
            XCTAssertEqual(sequenceThenRaw.finalizeHex(), digest130, "sequence then raw, split at \(split)")

            var rawThenSequence = SHA256()
            message130[..<split].withUnsafeBytes { rawThenSequence.update($0) }
            rawThenSequence.update(message130[split...])
            XCTAssertEqual(rawThenSequence.finalizeHex(), digest130, "raw then sequence, split at \(split)")
        }
    }

    func testByteByByteEqualsOneShot() {
        var sequenceHasher = SHA256()
        var rawHasher = SHA256()
        for byte in message130 {
            sequenceHasher.update(CollectionOfOne(byte))
            withUnsafeBytes(of: byte) { rawHasher.update($0) }
        }
        XCTAssertEqual(sequenceHasher.finalizeHex(), digest130)
        XCTAssertEqual(rawHasher.finalizeHex(), digest130)
    }

    func testEmptyUpdatesChangeNothing() {
        var hasher = SHA256()
        hasher.update([UInt8]())
        hasher.update(message130[..<70])
        [UInt8]().withUnsafeBytes { hasher.update($0) }
        hasher.update(message130[70...])
        hasher.update(EmptyCollection<UInt8>())
        XCTAssertEqual(hasher.finalizeHex(), digest130)
    }

    /// The raw-buffer overload agrees with the sequence overload on many lengths, including
    /// several whole blocks (its fast path). Digest of the 1061-byte message produced by Python's
    /// hashlib: `hashlib.sha256(bytes(range(256)) * 4 + bytes(range(37))).hexdigest()`.
    func testRawBufferOverloadEqualsSequenceOverload() {
        let message = (0..<1061).map { UInt8(truncatingIfNeeded: $0) }
        for length in [0, 1, 63, 64, 65, 127, 128, 129, 200, 512, 1061] {
            let prefix = Array(message[..<length])
            var sequenceHasher = SHA256()
            sequenceHasher.update(prefix)
            var rawHasher = SHA256()
            prefix.withUnsafeBytes { rawHasher.update($0) }
            XCTAssertEqual(rawHasher.finalize(), sequenceHasher.finalize(), "length \(length)")
        }
        XCTAssertEqual(
            digestOfBothOverloads(message), "bc725a0071138eccc785bacb3bb03c6bd8608a4333010e4293d11b29acea3f85")
    }

    // MARK: - Output forms

    /// `finalize()` is 32 bytes whose hex spelling is `finalizeHex()` of an identical hasher, and
    /// `hex(of:)` (which hashes its argument) gives the same for the message.
    func testFinalizeReturns32BytesAndHexAgrees() {
        for message in [[UInt8](), Array("abc".utf8), message130] {
            var bytesHasher = SHA256()
            var hexHasher = SHA256()
            bytesHasher.update(message)
            hexHasher.update(message)
            let digest = bytesHasher.finalize()
            XCTAssertEqual(digest.count, 32)
            let hex = hexHasher.finalizeHex()
            XCTAssertEqual(hex.count, 64)
            XCTAssertEqual(Self.lowerHex(digest), hex)
            XCTAssertEqual(SHA256.hex(of: message), hex)
        }
    }

    func testFinalizeBytesOfABC() {
        var hasher = SHA256()
        hasher.update(Array("abc".utf8))
        let digest = hasher.finalize()
        XCTAssertEqual(Array(digest.prefix(4)), [0xba, 0x78, 0x16, 0xbf])
        XCTAssertEqual(Array(digest.suffix(4)), [0xf2, 0x00, 0x15, 0xad])
    }

    // MARK: - Helpers

    /// Hex digest of `message` via the sequence overload, after checking that the raw-buffer
    /// overload and `hex(of:)` give the same.
    private func digestOfBothOverloads(_ message: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> String
    {
        var sequenceHasher = SHA256()
        sequenceHasher.update(message)
        let viaSequence = sequenceHasher.finalizeHex()
        var rawHasher = SHA256()
        message.withUnsafeBytes { rawHasher.update($0) }
        XCTAssertEqual(rawHasher.finalizeHex(), viaSequence, "raw-buffer overload", file: file, line: line)
        XCTAssertEqual(SHA256.hex(of: message), viaSequence, "hex(of:)", file: file, line: line)
        return viaSequence
    }

    private static func lowerHex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
