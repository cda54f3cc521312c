import Foundation

/// Reading a JSON string byte by byte: its escapes, its UTF-8, and its pattern when it has one.
struct StringScan: Hashable, Sendable {
    enum Phase: Hashable, Sendable {
        /// Before the opening quote.
        case start
        /// Between characters.
        case body
        /// After a backslash.
        case escape
        /// In `\uXXXX` after `digits` hex digits of `value`, following a high surrogate `high` (or 0).
        case unicode(digits: UInt8, value: UInt32, high: UInt32)
        /// After a high surrogate's escape: its low surrogate's `\` and `u` must follow.
        case lowBackslash(high: UInt32)
        case lowU(high: UInt32)
        /// In a UTF-8 sequence of `length` bytes with `remaining` to come, its bits so far `prefix`.
        case utf8(remaining: UInt8, prefix: UInt32, length: UInt8)
    }
    var phase = Phase.start
    /// The pattern's state after the characters so far (0 without a pattern).
    var pattern: Int32 = 0

    enum Outcome {
        case refused
        case closed
        case open(StringScan)
    }

    /// Reads `byte` of a string that must match `guide` (when there is one).
    func read(_ byte: UInt8, pattern guide: GuidedPattern?) -> Outcome {
        var next = self
        switch phase {
        case .start:
            guard byte == UInt8(ascii: "\"") else { return .refused }
            next.phase = .body
            next.pattern = guide?.start ?? 0
            return .open(next)
        case .body:
            switch byte {
            case UInt8(ascii: "\""):
                if let guide, !guide.isMatch(pattern) { return .refused }
                return .closed
            case UInt8(ascii: "\\"):
                // Any scalar can follow as `\uXXXX`: possible when the pattern reads any at all.
                next.phase = .escape
                return next.isPossible(guide) ? .open(next) : .refused
            case 0..<0x20: return .refused
            case 0x20..<0x80: return next.feed(UInt32(byte), guide)
            case 0xC2...0xDF: next.phase = .utf8(remaining: 1, prefix: UInt32(byte & 0x1F), length: 2)
            case 0xE0...0xEF: next.phase = .utf8(remaining: 2, prefix: UInt32(byte & 0x0F), length: 3)
            case 0xF0...0xF4: next.phase = .utf8(remaining: 3, prefix: UInt32(byte & 0x07), length: 4)
            default: return .refused
            }
            return next.isPossible(guide) ? .open(next) : .refused
        case .utf8(let remaining, let prefix, let length):
            guard byte & 0xC0 == 0x80 else { return .refused }
            let value = prefix << 6 | UInt32(byte & 0x3F)
            if remaining == 1 { return next.feed(value, guide) }
            next.phase = .utf8(remaining: remaining - 1, prefix: value, length: length)
            return next.isPossible(guide) ? .open(next) : .refused
        case .escape:
            let scalar: UInt32
            switch byte {
            case UInt8(ascii: "\""): scalar = 0x22
            case UInt8(ascii: "\\"): scalar = 0x5C
            case UInt8(ascii: "/"):
                // A guided string writes `/` as itself.
                guard guide == nil else { return .refused }
                scalar = 0x2F
            case UInt8(ascii: "b"): scalar = 0x08
            case UInt8(ascii: "f"): scalar = 0x0C
            case UInt8(ascii: "n"): scalar = 0x0A
            case UInt8(ascii: "r"): scalar = 0x0D
            case UInt8(ascii: "t"): scalar = 0x09
            case UInt8(ascii: "u"):
                next.phase = .unicode(digits: 0, value: 0, high: 0)
                return next.isPossible(guide) ? .open(next) : .refused
            default: return .refused
            }
            return next.feed(scalar, guide)
        case .lowBackslash(let high):
            guard byte == UInt8(ascii: "\\") else { return .refused }
            next.phase = .lowU(high: high)
            return .open(next)
        case .lowU(let high):
            guard byte == UInt8(ascii: "u") else { return .refused }
            next.phase = .unicode(digits: 0, value: 0, high: high)
            return .open(next)
        case .unicode(let digits, let value, let high):
            guard let digit = Self.hex(byte) else { return .refused }
            let value = value << 4 | digit
            if digits < 3 {
                next.phase = .unicode(digits: digits + 1, value: value, high: high)
                return next.isPossible(guide) ? .open(next) : .refused
            }
            // A guided string escapes as `\uXXXX` only the control characters JSON requires.
            if guide != nil, value >= 0x20 { return .refused }
            if high != 0 {
                guard (0xDC00...0xDFFF).contains(value) else { return .refused }
                return next.feed(0x10000 + (high - 0xD800) << 10 + (value - 0xDC00), guide)
            }
            switch value {
            case 0xDC00...0xDFFF: return .refused
            case 0xD800...0xDBFF:
                next.phase = .lowBackslash(high: value)
                return next.isPossible(guide) ? .open(next) : .refused
            default: return next.feed(value, guide)
            }
        }
    }

    /// Back to `body` after the character `scalar`, when the pattern can read it.
    private func feed(_ scalar: UInt32, _ guide: GuidedPattern?) -> Outcome {
        var next = self
        next.phase = .body
        if let guide {
            next.pattern = guide.advance(pattern, scalar)
            if next.pattern < 0 { return .refused }
        }
        return .open(next)
    }

    /// Whether the character begun in `phase` can still end as a scalar the pattern reads.
    private func isPossible(_ guide: GuidedPattern?) -> Bool {
        for range in candidates(guided: guide != nil) where range.lowerBound <= range.upperBound {
            guard let guide else { return true }
            if guide.accepts(pattern, anyOf: range.lowerBound, range.upperBound) { return true }
        }
        return false
    }

    /// The scalars the character begun in `phase` may still turn out to be, as ranges. A guided
    /// string (`guided`) escapes only what JSON requires: `"`, `\\` and control characters.
    private func candidates(guided: Bool) -> [ClosedRange<UInt32>] {
        func clamp(_ low: UInt32, _ high: UInt32, _ a: UInt32, _ b: UInt32) -> ClosedRange<UInt32>? {
            let l = max(low, a)
            let h = min(high, b)
            return l <= h ? l...h : nil
        }
        switch phase {
        case .utf8(let remaining, let prefix, let length):
            let shift = 6 * UInt32(remaining)
            let low = prefix << shift
            let high = low | ((1 << shift) - 1)
            let (least, most): (UInt32, UInt32) =
                switch length {
                case 2: (0x80, 0x7FF)
                case 3: (0x800, 0xFFFF)
                default: (0x10000, 0x10FFFF)
                }
            return [clamp(low, high, least, min(most, 0xD7FF)), clamp(low, high, max(least, 0xE000), most)]
                .compactMap { $0 }
        case .unicode(let digits, let value, let high):
            let shift = 4 * (4 - UInt32(digits))  // `digits` read, the rest to come
            let low = value << shift
            let top = low | ((1 << shift) - 1)
            if guided { return [clamp(low, top, 0, 0x1F)].compactMap { $0 } }
            if high != 0 {
                guard let low = clamp(low, top, 0xDC00, 0xDFFF) else { return [] }
                let base = 0x10000 + (high - 0xD800) << 10
                return [(base + low.lowerBound - 0xDC00)...(base + low.upperBound - 0xDC00)]
            }
            var out = [clamp(low, top, 0, 0xD7FF), clamp(low, top, 0xE000, 0xFFFF)].compactMap { $0 }
            if let surrogates = clamp(low, top, 0xD800, 0xDBFF) {
                // A high surrogate: the pair's scalar, whichever low surrogate follows.
                let first = 0x10000 + (surrogates.lowerBound - 0xD800) << 10
                let last = 0x10000 + (surrogates.upperBound - 0xD800) << 10 + 0x3FF
                out.append(first...last)
            }
            return out
        case .lowBackslash(let high), .lowU(let high):
            let base = 0x10000 + (high - 0xD800) << 10
            return [base...(base + 0x3FF)]
        case .escape where guided:
            return [0...0x1F, 0x22...0x22, 0x5C...0x5C]
        case .start, .body, .escape:
            return [0...0x10FFFF]
        }
    }

    private static func hex(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}

/// Reading a JSON number byte by byte: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`.
struct NumberScan: Hashable, Sendable {
    var negative = false
    var integerDigits = 0
    var integerPart: UInt64 = 0
    var point = false
    var fractionDigits = 0
    var fractionPart: UInt64 = 0

    /// The value written, exactly (for a scan that can end).
    var value: Decimal {
        var value = Decimal(integerPart)
        if point, fractionDigits > 0 { value += Decimal(fractionPart) / JSONGrammar.power(fractionDigits) }
        return negative ? -value : value
    }
}

extension JSONGrammar {
    /// The bounds and kind of number `node` is.
    private func numberRules(_ node: Int32) -> (integer: Bool, minimum: Decimal?, maximum: Decimal?) {
        switch nodes[Int(node)] {
        case .integer(let low, let high): (true, low, high)
        case .number(let low, let high): (false, low, high)
        default: (true, nil, nil)
        }
    }

    /// `scan` after `byte`, when the number can still end within its bounds.
    func read(_ scan: NumberScan, _ byte: UInt8, node: Int32) -> NumberScan? {
        let (integer, minimum, maximum) = numberRules(node)
        var next = scan
        switch byte {
        case UInt8(ascii: "-"):
            guard !scan.negative, scan.integerDigits == 0, (minimum ?? -1) < 0 else { return nil }
            next.negative = true
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            let digit = UInt64(byte - UInt8(ascii: "0"))
            if scan.point {
                guard scan.fractionDigits < Self.fractionDigits else { return nil }
                next.fractionPart = scan.fractionPart * 10 + digit
                next.fractionDigits += 1
            } else {
                let cap = integer ? Self.integerDigits : Self.numberDigits
                guard scan.integerDigits < cap, !(scan.integerDigits == 1 && scan.integerPart == 0) else { return nil }
                next.integerPart = scan.integerPart * 10 + digit
                next.integerDigits += 1
            }
        case UInt8(ascii: "."):
            guard !integer, !scan.point, scan.integerDigits > 0 else { return nil }
            next.point = true
        default:
            return nil
        }
        return Self.isPossible(next, integer: integer, minimum: minimum, maximum: maximum) ? next : nil
    }

    /// Whether the number so far is whole and within its bounds.
    func canEnd(_ scan: NumberScan, node: Int32) -> Bool {
        guard scan.integerDigits > 0, !scan.point || scan.fractionDigits > 0 else { return false }
        let (_, minimum, maximum) = numberRules(node)
        let value = scan.value
        return minimum.map { value >= $0 } ?? true && maximum.map { value <= $0 } ?? true
    }

    /// Whether some way of going on from `scan` ends within the bounds. Exact: values are
    /// multiples of the last fraction digit's step, and so are the bounds (the compiler rounds
    /// them inward to it), so an interval of reachable values that meets the bounds holds one.
    static func isPossible(_ scan: NumberScan, integer: Bool, minimum: Decimal?, maximum: Decimal?) -> Bool {
        // The smallest step the last fraction digit allows (integers: 1).
        let step = integer ? Decimal(1) : 1 / power(fractionDigits)
        var magnitudes: [(Decimal, Decimal)] = []
        let p = Decimal(scan.integerPart)
        let cap = integer ? integerDigits : numberDigits
        if scan.point {
            let unit = 1 / power(scan.fractionDigits)
            let base = p + Decimal(scan.fractionPart) * unit
            magnitudes.append(scan.fractionDigits == fractionDigits ? (base, base) : (base, base + unit - step))
        } else if scan.integerDigits == 0 {
            magnitudes.append((0, power(cap) - step))
        } else if scan.integerPart == 0 {
            magnitudes.append((0, 1 - step))
        } else {
            for j in 0...(cap - scan.integerDigits) {
                let scale = power(j)
                magnitudes.append((p * scale, (p + 1) * scale - step))
            }
        }
        for (a, b) in magnitudes {
            let (lo, hi) = scan.negative ? (-b, -a) : (a, b)
            let low = minimum.map { max(lo, $0) } ?? lo
            let high = maximum.map { min(hi, $0) } ?? hi
            if low <= high { return true }
        }
        return false
    }

    /// 10ⁿ.
    static func power(_ n: Int) -> Decimal {
        var x = Decimal(1)
        for _ in 0..<n { x *= 10 }
        return x
    }
}
