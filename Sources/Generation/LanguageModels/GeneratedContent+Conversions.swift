/// A type that can be made from generated content: Apple's `ConvertibleFromGeneratedContent`.
public protocol ConvertibleFromGeneratedContent: SendableMetatype {
    /// The value `content` holds.
    /// - Throws: `GeneratedContentError.typeMismatch` when it holds another kind of value.
    init(_ content: GeneratedContent) throws
}

/// A type that can be written as generated content: Apple's `ConvertibleToGeneratedContent`.
public protocol ConvertibleToGeneratedContent {
    /// The value as content.
    var generatedContent: GeneratedContent { get }
}

extension GeneratedContent {
    /// What `pick` finds in this content, or `typeMismatch` naming `what` was expected.
    func extract<T>(_ what: String, _ pick: (Kind) -> T?) throws -> T {
        guard let value = pick(kind) else { throw GeneratedContentError.typeMismatch("\(jsonString) is not \(what)") }
        return value
    }
}

extension GeneratedContent: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws { self = content }
    public var generatedContent: GeneratedContent { self }
}

extension String: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        self = try content.extract("a string") { if case .string(let value) = $0 { value } else { nil } }
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .string(self)) }
}

extension Bool: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        self = try content.extract("a Boolean") { if case .bool(let value) = $0 { value } else { nil } }
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .bool(self)) }
}

extension Int: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        self = try content.extract("an integer") {
            if case .number(let value) = $0 { Int(exactly: value) } else { nil }
        }
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(Double(self))) }
}

extension Double: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        self = try content.extract("a number") { if case .number(let value) = $0 { value } else { nil } }
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(self)) }
}

extension Float: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws { self = Float(try Double(content)) }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(Double(self))) }
}

extension Array: ConvertibleFromGeneratedContent where Element: ConvertibleFromGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        self = try content.extract("an array") { if case .array(let elements) = $0 { elements } else { nil } }.map(
            Element.init)
    }
}

extension Array: ConvertibleToGeneratedContent where Element: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .array(map(\.generatedContent))) }
}

extension Optional: ConvertibleToGeneratedContent where Wrapped: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { self?.generatedContent ?? GeneratedContent(kind: .null) }
}

extension GeneratedContent: Codable {
    /// Content from its JSON text (as `init(json:)`).
    public init(from decoder: any Decoder) throws {
        let json = try decoder.singleValueContainer().decode(String.self)
        self = try GeneratedContent(json: json)
    }

    /// The content as its JSON text, in a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(jsonString)
    }
}
