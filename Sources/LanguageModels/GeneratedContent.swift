import Foundation

/// A stable identity for content that is being generated, the same in every snapshot of one
/// stream: Apple's `GenerationID`.
public struct GenerationID: Sendable, Hashable {
    private let value = UUID()
    /// A new identity.
    public init() {}
}

/// Structured content a model generates, as JSON values: Apple's `GeneratedContent`.
///
/// ```swift
/// let content = try GeneratedContent(json: #"{"name": "Mia", "age": 3"#)   // cut short
/// content.isComplete                                   // false: the object is not closed
/// try content.value(String.self, forProperty: "name")  // "Mia"
/// ```
/// Objects keep their keys in the order they were written (`orderedKeys`), which is the order a
/// guided response generates its properties in.
public struct GeneratedContent: Sendable, Equatable, CustomDebugStringConvertible {
    /// What the content is.
    public enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([GeneratedContent])
        /// An object: its properties, and their keys in order.
        case structure(properties: [String: GeneratedContent], orderedKeys: [String])
    }

    /// What the content is.
    public var kind: Kind
    /// The identity shared by the snapshots of one generation, when there is one.
    public var id: GenerationID?
    /// Whether the content is whole: false for JSON cut short (a string, array or object not
    /// closed, a number or literal that may go on).
    public private(set) var isComplete: Bool

    /// Content of a given kind, complete.
    public init(kind: Kind, id: GenerationID? = nil) {
        self.kind = kind
        self.id = id
        self.isComplete = true
    }

    init(kind: Kind, isComplete: Bool) {
        self.kind = kind
        self.isComplete = isComplete
    }

    /// An object from key-value pairs, keys in the given order.
    public init(properties: KeyValuePairs<String, any ConvertibleToGeneratedContent>, id: GenerationID? = nil) {
        var values: [String: GeneratedContent] = [:]
        var keys: [String] = []
        for (key, value) in properties {
            if values[key] == nil { keys.append(key) }
            values[key] = value.generatedContent
        }
        self.init(kind: .structure(properties: values, orderedKeys: keys), id: id)
    }

    /// An array of elements.
    public init<S: Sequence>(elements: S, id: GenerationID? = nil)
    where S.Element == any ConvertibleToGeneratedContent {
        self.init(kind: .array(elements.map(\.generatedContent)), id: id)
    }

    /// Content from a value that converts to it.
    public init(_ value: some ConvertibleToGeneratedContent) { self = value.generatedContent }

    /// Content from JSON text, which may be cut short (as a stream's snapshots are): what has been
    /// written so far is kept, and `isComplete` says whether the text was whole.
    /// - Throws: `GeneratedContentError` for text that is not JSON or the start of JSON, naming
    ///   the byte offset.
    public init(json: String) throws {
        var parser = PartialJSONParser(Array(json.utf8))
        self = try parser.parseDocument()
    }

    /// Content from a guided response's JSON: as `init(json:)`, but a repeated key (which a map,
    /// whose keys the grammar does not remember, may write) keeps its last value.
    init(generatedJSON json: String) throws {
        var parser = PartialJSONParser(Array(json.utf8))
        parser.keepsLastOfRepeatedKeys = true
        self = try parser.parseDocument()
    }

    /// The content as compact JSON (an incomplete value as far as it goes, closed).
    public var jsonString: String {
        var out = ""
        write(into: &out)
        return out
    }

    public var debugDescription: String { jsonString }

    public static func == (a: GeneratedContent, b: GeneratedContent) -> Bool {
        a.kind == b.kind && a.isComplete == b.isComplete
    }

    /// The content as a value of `type`.
    /// - Throws: `GeneratedContentError.typeMismatch` when it is another kind of value.
    public func value<Value: ConvertibleFromGeneratedContent>(_ type: Value.Type = Value.self) throws -> Value {
        try Value(self)
    }

    /// Property `property` of an object, as a value of `type`.
    /// - Throws: `GeneratedContentError` when the content is not an object, lacks the property,
    ///   or the property is another kind of value.
    public func value<Value: ConvertibleFromGeneratedContent>(
        _ type: Value.Type = Value.self, forProperty property: String
    ) throws -> Value {
        let properties = try extract("an object") {
            if case .structure(let properties, _) = $0 { properties } else { nil }
        }
        guard let content = properties[property] else { throw GeneratedContentError.missingProperty(property) }
        return try Value(content)
    }

    /// Property `property` of an object as a value of `type`, or nil when it is absent or null.
    /// - Throws: `GeneratedContentError` when the content is not an object or the property is
    ///   another kind of value.
    public func value<Value: ConvertibleFromGeneratedContent>(
        _ type: Value?.Type = Value?.self, forProperty property: String
    ) throws -> Value? {
        let properties = try extract("an object") {
            if case .structure(let properties, _) = $0 { properties } else { nil }
        }
        guard let content = properties[property], content.kind != .null else { return nil }
        return try Value(content)
    }

    private func write(into out: inout String) {
        switch kind {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += Self.format(n)
        case .string(let s): Self.quote(s, into: &out)
        case .array(let elements):
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += "," }
                element.write(into: &out)
            }
            out += "]"
        case .structure(let properties, let keys):
            out += "{"
            for (i, key) in keys.enumerated() {
                if i > 0 { out += "," }
                Self.quote(key, into: &out)
                out += ":"
                properties[key, default: GeneratedContent(kind: .null)].write(into: &out)
            }
            out += "}"
        }
    }

    /// A number as JSON: integers without a fraction, others as Swift's shortest round-trip form.
    static func format(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n == n.rounded(), abs(n) < 1e15 { return String(Int64(n)) }
        return "\(n)"
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// Why content could not be read or converted.
public enum GeneratedContentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not JSON, nor the start of JSON: what was found, and at which byte.
    case invalidJSON(String, offset: Int)
    /// The content is another kind of value than the one asked for.
    case typeMismatch(String)
    /// An object lacks the property asked for.
    case missingProperty(String)

    public var description: String {
        switch self {
        case .invalidJSON(let what, let offset): return "invalid JSON at byte \(offset): \(what)"
        case .typeMismatch(let what): return "type mismatch: \(what)"
        case .missingProperty(let name): return "no property '\(name)'"
        }
    }
}

/// A JSON reader that accepts text cut short anywhere and returns what it holds so far, marked
/// incomplete. Nesting is bounded (512 levels), so hostile text cannot exhaust the stack.
struct PartialJSONParser {
    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0
    private static let maximumDepth = 512

    /// Whether a repeated key is read (its last value kept, at its first place) rather than
    /// refused: for a guided response's own JSON, whose maps may repeat a key.
    var keepsLastOfRepeatedKeys = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws -> GeneratedContent {
        skipSpace()
        guard position < bytes.count else { throw GeneratedContentError.invalidJSON("no value", offset: position) }
        let value = try parseValue()
        skipSpace()
        guard position == bytes.count else {
            throw GeneratedContentError.invalidJSON("text after the value", offset: position)
        }
        return value
    }

    private mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private var atEnd: Bool { position >= bytes.count }

    private mutating func parseValue() throws -> GeneratedContent {
        guard !atEnd else { return GeneratedContent(kind: .null, isComplete: false) }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try nested { try $0.parseObject() }
        case UInt8(ascii: "["): return try nested { try $0.parseArray() }
        case UInt8(ascii: "\""):
            let (string, complete) = try parseString()
            return GeneratedContent(kind: .string(string), isComplete: complete)
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default:
            throw GeneratedContentError.invalidJSON(
                "unexpected '\(Character(Unicode.Scalar(bytes[position])))'", offset: position)
        }
    }

    private mutating func nested(_ body: (inout Self) throws -> GeneratedContent) throws -> GeneratedContent {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw GeneratedContentError.invalidJSON("nesting deeper than \(Self.maximumDepth)", offset: position)
        }
        return try body(&self)
    }

    private mutating func parseLiteral(_ word: String, _ kind: GeneratedContent.Kind) throws -> GeneratedContent {
        let expected = Array(word.utf8)
        var matched = 0
        while matched < expected.count, position < bytes.count {
            guard bytes[position] == expected[matched] else {
                throw GeneratedContentError.invalidJSON("expected \(word)", offset: position)
            }
            matched += 1
            position += 1
        }
        return GeneratedContent(kind: kind, isComplete: matched == expected.count)
    }

    private mutating func parseNumber() throws -> GeneratedContent {
        let start = position
        while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        // Text cut inside a number may go on: it is incomplete until something follows it.
        let complete = !atEnd
        if let value = Double(text), Self.isJSONNumber(text) {
            return GeneratedContent(kind: .number(value), isComplete: complete)
        }
        // Cut short, it must be the start of a number: one more digit would make it whole.
        guard atEnd, Self.isJSONNumber(text + "0") else {
            throw GeneratedContentError.invalidJSON("bad number '\(text)'", offset: start)
        }
        // A number's start ("-", "1.", "2e"): its value so far.
        let digits = text.drop { $0 == "-" }.prefix { $0.isNumber || $0 == "." }
        let value =
            Double(String(digits.hasSuffix(".") ? digits.dropLast() : digits)).map { text.hasPrefix("-") ? -$0 : $0 }
            ?? 0
        return GeneratedContent(kind: .number(value), isComplete: false)
    }

    /// JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    static func isJSONNumber(_ text: String) -> Bool {
        var s = Substring(text)
        if s.hasPrefix("-") { s = s.dropFirst() }
        guard let first = s.first, first.isASCII, first.isNumber else { return false }
        if first == "0" { s = s.dropFirst() } else { s = s.drop { $0.isASCII && $0.isNumber } }
        if s.hasPrefix(".") {
            s = s.dropFirst()
            let rest = s.drop { $0.isASCII && $0.isNumber }
            guard rest.count < s.count else { return false }
            s = rest
        }
        if s.hasPrefix("e") || s.hasPrefix("E") {
            s = s.dropFirst()
            if s.hasPrefix("+") || s.hasPrefix("-") { s = s.dropFirst() }
            let rest = s.drop { $0.isASCII && $0.isNumber }
            guard rest.count < s.count else { return false }
            s = rest
        }
        return s.isEmpty
    }

    /// A string from its opening quote: its text so far and whether it was closed.
    private mutating func parseString() throws -> (String, Bool) {
        position += 1
        var scalars = String.UnicodeScalarView()
        var chunkStart = position
        func flush(_ end: Int) {
            scalars.append(contentsOf: String(decoding: bytes[chunkStart..<end], as: UTF8.self).unicodeScalars)
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                flush(position)
                position += 1
                return (String(scalars), true)
            }
            if byte < 0x20 {
                throw GeneratedContentError.invalidJSON("control character in a string", offset: position)
            }
            if byte == UInt8(ascii: "\\") {
                flush(position)
                guard position + 1 < bytes.count else {
                    position = bytes.count
                    return (String(scalars), false)
                }
                let escape = bytes[position + 1]
                position += 2
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
                    guard let unit = try hexUnit() else { return (String(scalars), false) }
                    if (0xD800..<0xDC00).contains(unit) {
                        // A high surrogate needs its low half: \uDC00…\uDFFF.
                        guard position + 1 < bytes.count else {
                            position = bytes.count
                            return (String(scalars), false)
                        }
                        guard bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                            throw GeneratedContentError.invalidJSON("a lone high surrogate", offset: position)
                        }
                        position += 2
                        guard let low = try hexUnit() else { return (String(scalars), false) }
                        guard (0xDC00..<0xE000).contains(low) else {
                            throw GeneratedContentError.invalidJSON(
                                "a high surrogate without its low half", offset: position)
                        }
                        scalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
                    } else if let scalar = Unicode.Scalar(unit) {
                        scalars.append(scalar)
                    } else {
                        throw GeneratedContentError.invalidJSON("a lone low surrogate", offset: position)
                    }
                default: throw GeneratedContentError.invalidJSON("unknown escape", offset: position - 1)
                }
                chunkStart = position
                continue
            }
            position += 1
        }
        // Cut short inside the string: keep whole characters only.
        var end = bytes.count
        while end > chunkStart, bytes[end - 1] & 0xC0 == 0x80 { end -= 1 }
        if end > chunkStart, bytes[end - 1] >= 0xC0 {
            let lead = bytes[end - 1]
            let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
            if bytes.count - (end - 1) < length { end -= 1 } else { end = bytes.count }
        } else {
            end = bytes.count
        }
        flush(end)
        return (String(scalars), false)
    }

    /// Four hex digits after `\u`; nil when the text ends first.
    private mutating func hexUnit() throws -> UInt32? {
        var unit: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count else {
                position = bytes.count
                return nil
            }
            guard let digit = Character(Unicode.Scalar(bytes[position])).hexDigitValue else {
                throw GeneratedContentError.invalidJSON("bad \\u escape", offset: position)
            }
            unit = unit << 4 | UInt32(digit)
            position += 1
        }
        return unit
    }

    private mutating func parseArray() throws -> GeneratedContent {
        position += 1
        var elements: [GeneratedContent] = []
        skipSpace()
        if atEnd { return GeneratedContent(kind: .array(elements), isComplete: false) }
        if bytes[position] == UInt8(ascii: "]") {
            position += 1
            return GeneratedContent(kind: .array(elements), isComplete: true)
        }
        while true {
            let element = try parseValue()
            elements.append(element)
            skipSpace()
            if atEnd || !element.isComplete { return GeneratedContent(kind: .array(elements), isComplete: false) }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return GeneratedContent(kind: .array(elements), isComplete: true)
            }
            guard bytes[position] == UInt8(ascii: ",") else {
                throw GeneratedContentError.invalidJSON("expected ',' or ']'", offset: position)
            }
            position += 1
            skipSpace()
            if atEnd { return GeneratedContent(kind: .array(elements), isComplete: false) }
        }
    }

    private mutating func parseObject() throws -> GeneratedContent {
        position += 1
        var properties: [String: GeneratedContent] = [:]
        var keys: [String] = []
        func partial() -> GeneratedContent {
            GeneratedContent(kind: .structure(properties: properties, orderedKeys: keys), isComplete: false)
        }
        skipSpace()
        if atEnd { return partial() }
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
            return GeneratedContent(kind: .structure(properties: properties, orderedKeys: keys), isComplete: true)
        }
        while true {
            guard bytes[position] == UInt8(ascii: "\"") else {
                throw GeneratedContentError.invalidJSON("expected a property name", offset: position)
            }
            let (key, closed) = try parseString()
            // A key cut short is not a property yet.
            if !closed { return partial() }
            skipSpace()
            if atEnd { return partial() }
            guard bytes[position] == UInt8(ascii: ":") else {
                throw GeneratedContentError.invalidJSON("expected ':'", offset: position)
            }
            position += 1
            skipSpace()
            if atEnd { return partial() }
            let value = try parseValue()
            if properties[key] != nil {
                guard keepsLastOfRepeatedKeys else {
                    throw GeneratedContentError.invalidJSON("duplicate property '\(key)'", offset: position)
                }
            } else {
                keys.append(key)
            }
            properties[key] = value
            skipSpace()
            if atEnd || !value.isComplete { return partial() }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return GeneratedContent(kind: .structure(properties: properties, orderedKeys: keys), isComplete: true)
            }
            guard bytes[position] == UInt8(ascii: ",") else {
                throw GeneratedContentError.invalidJSON("expected ',' or '}'", offset: position)
            }
            position += 1
            skipSpace()
            if atEnd { return partial() }
        }
    }
}
