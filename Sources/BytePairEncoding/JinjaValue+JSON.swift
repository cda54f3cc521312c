extension JinjaValue {
    /// The deepest nesting of arrays and objects ``init(json:)`` accepts.
    public static let maximumJSONDepth = 512

    /// The value a JSON text describes, with object keys kept in document order (as Python's
    /// `json.loads` keeps them), so that `tojson` in a template prints them back in the same order.
    ///
    /// Integers that fit `Int` become ``integer(_:)``; other numbers become ``number(_:)``.
    ///
    /// ```swift
    /// let tools = try JinjaValue(json: #"[{"type": "function", "function": {"name": "now"}}]"#)
    /// ```
    ///
    /// - Throws: ``ChatTemplateError/Code-swift.struct/invalidJSON`` naming the byte offset of the first
    ///   problem, including nesting deeper than ``maximumJSONDepth`` and integers outside `Int`.
    /// - Complexity: O(n) in the length of `json`.
    public init(json: String) throws(ChatTemplateError) {
        var parser = JSONTextParser(bytes: Array(json.utf8))
        self = try parser.parseDocument()
    }
}

/// A strict RFC 8259 reader over UTF-8 bytes that keeps object key order.
private struct JSONTextParser {
    let bytes: [UInt8]
    var position = 0
    var depth = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(ChatTemplateError) -> JinjaValue {
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    private func failure(_ message: String) -> ChatTemplateError {
        ChatTemplateError(.invalidJSON, "invalid JSON at byte \(position): \(message)")
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func parseValue() throws(ChatTemplateError) -> JinjaValue {
        skipWhitespace()
        guard position < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .boolean(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .boolean(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .none
        default: return try parseNumber()
        }
    }

    private mutating func expectWord(_ word: String) throws(ChatTemplateError) {
        let expected = Array(word.utf8)
        guard bytes.count - position >= expected.count, Array(bytes[position..<position + expected.count]) == expected
        else { throw failure("expected '\(word)'") }
        position += expected.count
    }

    private mutating func enter() throws(ChatTemplateError) {
        depth += 1
        if depth > JinjaValue.maximumJSONDepth {
            throw ChatTemplateError(
                .invalidJSON, "invalid JSON at byte \(position): nesting deeper than \(JinjaValue.maximumJSONDepth)")
        }
    }

    private mutating func parseObject() throws(ChatTemplateError) -> JinjaValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var object = JinjaObject()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            position += 1
            object[key] = try parseValue()
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(object)
            } else {
                throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(ChatTemplateError) -> JinjaValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var elements: [JinjaValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            } else {
                throw failure("expected ',' or ']'")
            }
        }
    }

    private mutating func parseHex4() throws(ChatTemplateError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("bad hex digit in \\u escape")
            }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    private mutating func parseString() throws(ChatTemplateError) -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var runStart = position
        func flush(_ end: Int) {
            if end > runStart {
                scalars.append(contentsOf: String(decoding: bytes[runStart..<end], as: UTF8.self).unicodeScalars)
            }
        }
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                flush(position)
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw failure("control character in string") }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            flush(position)
            position += 1
            guard position < bytes.count else { throw failure("unterminated escape") }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if (0xD800..<0xDC00).contains(code) {
                    guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u")
                    else { throw failure("unpaired surrogate") }
                    position += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw failure("unpaired surrogate") }
                scalars.append(scalar)
            default:
                throw failure("unknown escape")
            }
            runStart = position
        }
    }

    private mutating func parseNumber() throws(ChatTemplateError) -> JinjaValue {
        let start = position
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        func digits() -> Int {
            let from = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - from
        }
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("unexpected character") }
        if integerDigits > 1, bytes[position - integerDigits] == UInt8(ascii: "0") { throw failure("leading zero") }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard digits() > 0 else { throw failure("expected digits after '.'") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw failure("expected exponent digits") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger {
            guard let value = Int(text) else { throw failure("integer \(text) does not fit in Int") }
            return .integer(value)
        }
        guard let value = Double(text) else { throw failure("bad number \(text)") }
        return .number(value)
    }
}
