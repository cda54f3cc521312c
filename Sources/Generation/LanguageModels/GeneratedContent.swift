import Foundation
import JSONText

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
        self = try GeneratedContent(json: json, repeatedKeys: .refuse)
    }

    /// Content from a guided response's JSON: as `init(json:)`, but a repeated key (which a map,
    /// whose keys the grammar does not remember, may write) keeps its last value.
    init(generatedJSON json: String) throws {
        self = try GeneratedContent(json: json, repeatedKeys: .keepLast)
    }

    private init(json: String, repeatedKeys: JSONReader.RepeatedKeys) throws {
        do {
            self.init(try JSONReader.read(json, acceptsTruncation: true, repeatedKeys: repeatedKeys))
        } catch {
            throw GeneratedContentError.invalidJSON(error.message, offset: error.offset)
        }
    }

    /// Content from a node the reader gave: a number cut short has its value so far.
    package init(_ node: JSONNode) {
        let kind: Kind
        switch node.kind {
        case .null: kind = .null
        case .bool(let value): kind = .bool(value)
        case .string(let value): kind = .string(value)
        case .number(let text, _):
            if let value = Double(text) {
                kind = .number(value)
            } else {
                // A number's start ("-", "1.", "2e+"): the value of its digits so far.
                let mantissa = text.prefix { $0 != "e" && $0 != "E" }
                let digits = mantissa.hasSuffix(".") ? mantissa.dropLast() : mantissa
                kind = .number(Double(digits) ?? (text.hasPrefix("-") ? -0.0 : 0))
            }
        case .array(let elements): kind = .array(elements.map(GeneratedContent.init))
        case .object(let members):
            var properties: [String: GeneratedContent] = [:]
            for member in members { properties[member.key] = GeneratedContent(member.value) }
            kind = .structure(properties: properties, orderedKeys: members.map(\.key))
        }
        self.init(kind: kind, isComplete: node.isComplete)
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

    /// `s` as a JSON string (JSONText's one escaper).
    static func quote(_ s: String, into out: inout String) { JSONWriter.appendString(s, to: &out) }
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
