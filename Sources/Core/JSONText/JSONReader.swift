/// A JSON value as it was written: object members in document order, numbers as their text.
///
/// The one JSON reader the chat templates (`JinjaValue(json:)`) and generated content
/// (`GeneratedContent(json:)`) share; each turns the nodes into its own values.
package struct JSONNode: Sendable, Equatable {
    /// What the node is.
    package enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        /// A number's text: a whole JSON number, or (cut short) the start of one, such as `-`,
        /// `1.` or `2e+`. `isInteger` when it has neither a fraction nor an exponent.
        case number(String, isInteger: Bool)
        case string(String)
        case array([JSONNode])
        /// Members in document order; a repeated key keeps its first place and its last value.
        case object([(key: String, value: JSONNode)])

        package static func == (a: Kind, b: Kind) -> Bool {
            switch (a, b) {
            case (.null, .null): return true
            case (.bool(let x), .bool(let y)): return x == y
            case (.number(let x, let i), .number(let y, let j)): return x == y && i == j
            case (.string(let x), .string(let y)): return x == y
            case (.array(let x), .array(let y)): return x == y
            case (.object(let x), .object(let y)):
                return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
            default: return false
            }
        }
    }

    /// What the node is.
    package var kind: Kind
    /// False for text cut short inside this node: a string, array or object not closed, a literal
    /// not finished, or a number the text ends in (one more digit may follow).
    package var isComplete: Bool

    /// A node of a given kind.
    package init(kind: Kind, isComplete: Bool) {
        self.kind = kind
        self.isComplete = isComplete
    }
}

/// Why text is not JSON (or, where cut-short text is accepted, not the start of JSON).
package struct JSONReadError: Error, Sendable, Equatable {
    /// What was wrong.
    package var message: String
    /// The byte offset of the problem in the UTF-8 text.
    package var offset: Int
}

/// A strict RFC 8259 reader over UTF-8 bytes that keeps object key order.
///
/// With `acceptsTruncation`, text cut short anywhere (a stream's snapshot) is read as far as it
/// goes and the unfinished nodes are marked incomplete; without it, cut-short text is an error.
/// Nesting is bounded (``maximumDepth``), so hostile text cannot exhaust the stack.
package struct JSONReader {
    /// What a repeated object key does.
    package enum RepeatedKeys: Sendable {
        /// The last value counts, at the key's first place (Python's `json.loads`).
        case keepLast
        /// An error: generated content refuses an object it cannot read one way.
        case refuse
    }

    /// The deepest nesting of arrays and objects read.
    package static let maximumDepth = 512

    private let bytes: [UInt8]
    private let acceptsTruncation: Bool
    private let repeatedKeys: RepeatedKeys
    private var position = 0
    private var depth = 0

    private init(bytes: [UInt8], acceptsTruncation: Bool, repeatedKeys: RepeatedKeys) {
        self.bytes = bytes
        self.acceptsTruncation = acceptsTruncation
        self.repeatedKeys = repeatedKeys
    }

    /// The value `text` holds: exactly one JSON value, with blanks around it.
    /// - Throws: ``JSONReadError`` at the first problem.
    /// - Complexity: O(n) in the length of `text`.
    package static func read(
        _ text: String, acceptsTruncation: Bool, repeatedKeys: RepeatedKeys
    ) throws(JSONReadError) -> JSONNode {
        var reader = JSONReader(
            bytes: Array(text.utf8), acceptsTruncation: acceptsTruncation, repeatedKeys: repeatedKeys)
        reader.skipBlanks()
        guard !reader.atEnd else { throw reader.failure("no value") }
        let value = try reader.readValue()
        reader.skipBlanks()
        guard reader.atEnd else { throw reader.failure("text after the value") }
        return value
    }

    private var atEnd: Bool { position >= bytes.count }

    private func failure(_ message: String, at offset: Int? = nil) -> JSONReadError {
        JSONReadError(message: message, offset: offset ?? position)
    }

    /// A node cut short by the end of the text: kept when truncation is accepted.
    private func cutShort(_ kind: JSONNode.Kind) throws(JSONReadError) -> JSONNode {
        guard acceptsTruncation else { throw failure("unexpected end of input") }
        return JSONNode(kind: kind, isComplete: false)
    }

    private mutating func skipBlanks() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func readValue() throws(JSONReadError) -> JSONNode {
        switch bytes[position] {
        case UInt8(ascii: "{"): return try nested { reader throws(JSONReadError) in try reader.readObject() }
        case UInt8(ascii: "["): return try nested { reader throws(JSONReadError) in try reader.readArray() }
        case UInt8(ascii: "\""):
            let (string, closed) = try readString()
            return closed ? JSONNode(kind: .string(string), isComplete: true) : try cutShort(.string(string))
        case UInt8(ascii: "t"): return try readLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try readLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try readLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw failure("unexpected '\(Character(Unicode.Scalar(bytes[position])))'")
        }
    }

    private mutating func nested(
        _ body: (inout JSONReader) throws(JSONReadError) -> JSONNode
    ) throws(JSONReadError) -> JSONNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth)") }
        return try body(&self)
    }

    private mutating func readLiteral(_ word: String, _ kind: JSONNode.Kind) throws(JSONReadError) -> JSONNode {
        for expected in word.utf8 {
            if atEnd { return try cutShort(kind) }
            guard bytes[position] == expected else { throw failure("expected \(word)") }
            position += 1
        }
        return JSONNode(kind: kind, isComplete: true)
    }

    /// JSON's number grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, read as far as the
    /// text goes.
    private mutating func readNumber() throws(JSONReadError) -> JSONNode {
        let start = position
        var isInteger = true
        func text(_ reader: JSONReader) -> String {
            String(decoding: reader.bytes[start..<reader.position], as: UTF8.self)
        }
        /// How many digits follow from here (read past).
        func digits(_ reader: inout JSONReader) -> Int {
            let from = reader.position
            while !reader.atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.position]) {
                reader.position += 1
            }
            return reader.position - from
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        if atEnd { return try cutShort(.number(text(self), isInteger: true)) }
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw failure("expected a digit") }
        if integerDigits > 1, bytes[position - integerDigits] == UInt8(ascii: "0") {
            throw failure("a leading zero", at: position - integerDigits)
        }
        if !atEnd, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            if atEnd { return try cutShort(.number(text(self), isInteger: false)) }
            guard digits(&self) > 0 else { throw failure("expected digits after '.'") }
        }
        if !atEnd, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if !atEnd, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            if atEnd { return try cutShort(.number(text(self), isInteger: false)) }
            guard digits(&self) > 0 else { throw failure("expected exponent digits") }
        }
        // A number the text ends in may go on: it is incomplete until something follows it.
        let kind = JSONNode.Kind.number(text(self), isInteger: isInteger)
        return JSONNode(kind: kind, isComplete: !(atEnd && acceptsTruncation))
    }

    /// A string from its opening quote: its text so far and whether it was closed.
    private mutating func readString() throws(JSONReadError) -> (String, Bool) {
        position += 1
        var scalars = String.UnicodeScalarView()
        var runStart = position
        func flush(_ reader: JSONReader, _ end: Int) {
            if end > runStart {
                scalars.append(contentsOf: String(decoding: reader.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
            }
        }
        while !atEnd {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                flush(self, position)
                position += 1
                return (String(scalars), true)
            }
            if byte < 0x20 { throw failure("a control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            flush(self, position)
            position += 1
            guard !atEnd else { return (String(scalars), false) }
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
                guard let unit = try readHexUnit() else { return (String(scalars), false) }
                if (0xD800..<0xDC00).contains(unit) {
                    // A high surrogate needs its low half, \uDC00…\uDFFF, next.
                    for expected in "\\u".utf8 {
                        if atEnd { return (String(scalars), false) }
                        guard bytes[position] == expected else {
                            throw failure("a high surrogate without its low half")
                        }
                        position += 1
                    }
                    guard let low = try readHexUnit() else { return (String(scalars), false) }
                    guard (0xDC00..<0xE000).contains(low) else {
                        throw failure("a high surrogate without its low half")
                    }
                    scalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
                } else if let scalar = Unicode.Scalar(unit) {
                    scalars.append(scalar)
                } else {
                    throw failure("a low surrogate without its high half")
                }
            default: throw failure("unknown escape", at: position - 1)
            }
            runStart = position
        }
        // Cut short inside the string (text holds whole characters only).
        flush(self, bytes.count)
        return (String(scalars), false)
    }

    /// Four hex digits after `\u`; nil when the text ends first.
    private mutating func readHexUnit() throws(JSONReadError) -> UInt32? {
        var unit: UInt32 = 0
        for _ in 0..<4 {
            guard !atEnd else { return nil }
            guard let digit = Character(Unicode.Scalar(bytes[position])).hexDigitValue else {
                throw failure("a bad \\u escape")
            }
            unit = unit << 4 | UInt32(digit)
            position += 1
        }
        return unit
    }

    private mutating func readArray() throws(JSONReadError) -> JSONNode {
        position += 1
        var elements: [JSONNode] = []
        skipBlanks()
        if atEnd { return try cutShort(.array(elements)) }
        if bytes[position] == UInt8(ascii: "]") {
            position += 1
            return JSONNode(kind: .array(elements), isComplete: true)
        }
        while true {
            let element = try readValue()
            elements.append(element)
            skipBlanks()
            if atEnd || !element.isComplete { return try cutShort(.array(elements)) }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return JSONNode(kind: .array(elements), isComplete: true)
            }
            guard bytes[position] == UInt8(ascii: ",") else { throw failure("expected ',' or ']'") }
            position += 1
            skipBlanks()
            if atEnd { return try cutShort(.array(elements)) }
        }
    }

    private mutating func readObject() throws(JSONReadError) -> JSONNode {
        position += 1
        var members: [(key: String, value: JSONNode)] = []
        var places: [String: Int] = [:]
        skipBlanks()
        if atEnd { return try cutShort(.object(members)) }
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
            return JSONNode(kind: .object(members), isComplete: true)
        }
        while true {
            guard bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a property name") }
            let (key, closed) = try readString()
            // A key cut short is not a member yet.
            if !closed { return try cutShort(.object(members)) }
            skipBlanks()
            if atEnd { return try cutShort(.object(members)) }
            guard bytes[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            position += 1
            skipBlanks()
            if atEnd { return try cutShort(.object(members)) }
            let value = try readValue()
            if let place = places[key] {
                guard repeatedKeys == .keepLast else { throw failure("a repeated property '\(key)'") }
                members[place].value = value
            } else {
                places[key] = members.count
                members.append((key, value))
            }
            skipBlanks()
            if atEnd || !value.isComplete { return try cutShort(.object(members)) }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return JSONNode(kind: .object(members), isComplete: true)
            }
            guard bytes[position] == UInt8(ascii: ",") else { throw failure("expected ',' or '}'") }
            position += 1
            skipBlanks()
            if atEnd { return try cutShort(.object(members)) }
        }
    }
}
