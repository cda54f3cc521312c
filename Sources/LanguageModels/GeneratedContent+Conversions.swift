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

extension GeneratedContent: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws { self = content }
    public var generatedContent: GeneratedContent { self }
}

extension String: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        guard case let .string(value) = content.kind else { throw GeneratedContentError.typeMismatch("\(content.jsonString) is not a string") }
        self = value
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .string(self)) }
}

extension Bool: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        guard case let .bool(value) = content.kind else { throw GeneratedContentError.typeMismatch("\(content.jsonString) is not a Boolean") }
        self = value
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .bool(self)) }
}

extension Int: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        guard case let .number(value) = content.kind, value == value.rounded(), let exact = Int(exactly: value) else {
            throw GeneratedContentError.typeMismatch("\(content.jsonString) is not an integer")
        }
        self = exact
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(Double(self))) }
}

extension Double: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        guard case let .number(value) = content.kind else { throw GeneratedContentError.typeMismatch("\(content.jsonString) is not a number") }
        self = value
    }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(self)) }
}

extension Float: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    public init(_ content: GeneratedContent) throws { self = Float(try Double(content)) }
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .number(Double(self))) }
}

extension Array: ConvertibleFromGeneratedContent where Element: ConvertibleFromGeneratedContent {
    public init(_ content: GeneratedContent) throws {
        guard case let .array(elements) = content.kind else { throw GeneratedContentError.typeMismatch("\(content.jsonString) is not an array") }
        self = try elements.map(Element.init)
    }
}

extension Array: ConvertibleToGeneratedContent where Element: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { GeneratedContent(kind: .array(map(\.generatedContent))) }
}

extension Optional: ConvertibleToGeneratedContent where Wrapped: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { self?.generatedContent ?? GeneratedContent(kind: .null) }
}
