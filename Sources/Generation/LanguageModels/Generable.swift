import Foundation

/// A type a model can generate under its schema: Apple's `Generable`.
///
/// Apple's `@Generable` macro writes the conformance; here a type writes `generationSchema`
/// itself (see `GenerationSchema`) and gets the rest: `init(_:)` when it is `Decodable`,
/// `generatedContent` when it is `Encodable`. `String`, `Int`, `Double`, `Float`, `Bool`, arrays
/// and optionals of `Generable` types are `Generable`.
///
/// Streaming a `Generable` type yields `PartiallyGenerated` values made from the JSON so far.
/// By default that is the type itself, which can only be made once every required property has
/// arrived; declare `PartiallyGenerated` as a `Decodable` struct of optionals (what Apple's macro
/// writes) to see each property as it arrives.
public protocol Generable: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent, Sendable {
    /// The type a response in progress is shown as.
    associatedtype PartiallyGenerated: ConvertibleFromGeneratedContent & Sendable = Self
    /// The shape of the values a model generates for this type.
    static var generationSchema: GenerationSchema { get }
}

extension ConvertibleFromGeneratedContent where Self: Decodable {
    /// The value decoded from the content's JSON.
    /// - Throws: `GeneratedContentError.typeMismatch` naming what did not decode.
    public init(_ content: GeneratedContent) throws {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(content.jsonString.utf8))
        } catch {
            throw GeneratedContentError.typeMismatch("\(content.jsonString) does not decode as \(Self.self): \(error)")
        }
    }
}

extension ConvertibleToGeneratedContent where Self: Encodable {
    /// The value's JSON encoding, as content (keys in the order the encoder writes them).
    public var generatedContent: GeneratedContent {
        guard let data = try? JSONEncoder().encode(self), let json = String(data: data, encoding: .utf8),
            let content = try? GeneratedContent(json: json)
        else { return GeneratedContent(kind: .null) }
        return content
    }
}

extension String: Generable {
    public static var generationSchema: GenerationSchema {
        GenerationSchema(root: .string(description: nil, rules: []))
    }
}

extension Int: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(root: .integer(rules: [])) }
}

extension Double: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(root: .number(rules: [])) }
}

extension Float: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(root: .number(rules: [])) }
}

extension Bool: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(root: .boolean) }
}

extension Array: Generable where Element: Generable {
    public typealias PartiallyGenerated = [Element.PartiallyGenerated]
    public static var generationSchema: GenerationSchema {
        let element = Element.generationSchema
        return GenerationSchema(root: .array(element: element.root, rules: []), definitions: element.definitions)
    }
}

extension Optional: ConvertibleFromGeneratedContent where Wrapped: ConvertibleFromGeneratedContent {
    /// nil for null content, else the wrapped value.
    public init(_ content: GeneratedContent) throws {
        if case .null = content.kind { self = nil } else { self = try Wrapped(content) }
    }
}

extension Optional: Generable where Wrapped: Generable {
    public typealias PartiallyGenerated = Wrapped.PartiallyGenerated?
    /// The wrapped type's schema: an optional property may be left out.
    public static var generationSchema: GenerationSchema { Wrapped.generationSchema }
}

/// Optionals, recognised by `GenerationSchema.Property` to make a property optional.
protocol OptionalGenerable {}
extension Optional: OptionalGenerable where Wrapped: Generable {}

extension GeneratedContent: Generable {
    /// An object with no properties: to generate content of a shape known at run time, pass the
    /// shape (`respond(to:schema:)`).
    public static var generationSchema: GenerationSchema {
        GenerationSchema(root: .object(name: "GeneratedContent", description: nil, properties: []))
    }
}
