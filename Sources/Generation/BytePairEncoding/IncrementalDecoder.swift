/// Turns token ids into text as they arrive, for streaming: each call returns only whole
/// characters, holding back the bytes of a UTF-8 sequence that the next token may complete.
///
/// ```swift
/// var decoder = IncrementalDecoder(tokenizer: tokenizer)
/// for id in generated { print(decoder.append(id), terminator: "") }
/// print(decoder.finish())
/// ```
///
/// What it returns, joined, equals `tokenizer.decode(ids)`: bytes that can never become valid
/// UTF-8 come out as U+FFFD as soon as that is certain, and `finish()` repairs an unfinished tail
/// the same way.
package struct IncrementalDecoder: Sendable {
    private let tokenizer: BytePairTokenizer
    /// Bytes of an unfinished UTF-8 sequence (at most three).
    private var pending: [UInt8] = []

    /// A decoder for `tokenizer`'s ids.
    package init(tokenizer: BytePairTokenizer) {
        self.tokenizer = tokenizer
    }

    /// The text that `id` completes (possibly empty).
    package mutating func append(_ id: Int) -> String {
        append(bytes: tokenizer.bytes(for: id))
    }

    /// The text the bytes complete (possibly empty).
    package mutating func append(bytes: some Collection<UInt8>) -> String {
        pending.append(contentsOf: bytes)
        // Keep back a final, incomplete but so far valid sequence; everything before it is final.
        let keep = Self.incompleteTail(pending)
        let ready = pending[..<(pending.count - keep)]
        let text = String(decoding: ready, as: UTF8.self)
        pending.removeFirst(pending.count - keep)
        return text
    }

    /// What is left: an unfinished sequence becomes U+FFFD. The decoder is empty afterwards.
    package mutating func finish() -> String {
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }

    /// The number of trailing bytes that start a valid UTF-8 sequence not yet complete (0…3).
    static func incompleteTail(_ bytes: [UInt8]) -> Int {
        // Look back at most three bytes for the lead of the last sequence.
        var count = 0
        var i = bytes.count - 1
        while i >= 0, count < 3, bytes[i] & 0xC0 == 0x80 {
            count += 1
            i -= 1
        }
        guard i >= 0 else { return 0 }
        let lead = bytes[i]
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0  // ASCII, a stray continuation or an invalid lead: nothing to wait for
        }
        let have = count + 1
        guard have < length else { return 0 }
        // The second byte's range is narrower after some leads (no overlongs, no surrogates, ≤ U+10FFFF).
        if have >= 2 {
            let second = bytes[i + 1]
            switch lead {
            case 0xE0: if second < 0xA0 { return 0 }
            case 0xED: if second > 0x9F { return 0 }
            case 0xF0: if second < 0x90 { return 0 }
            case 0xF4: if second > 0x8F { return 0 }
            default: break
            }
        }
        return have
    }
}
