/// The shape of a value a model generates: Apple's `GenerationSchema`.
///
/// A `Generable` type states its schema with the initializers Apple's `@Generable` macro expands to
/// (macros need swift-syntax, which this package cannot depend on):
/// ```swift
/// struct Recipe: Generable, Codable {
///     var title: String
///     var minutes: Int
///     var steps: [String]
///     static var generationSchema: GenerationSchema {
///         GenerationSchema(type: Self.self, description: "A short recipe", properties: [
///             .init(name: "title", type: String.self),
///             .init(name: "minutes", type: Int.self, guides: [.range(1...240)]),
///             .init(name: "steps", type: [String].self, guides: [.count(2...6)]),
///         ])
///     }
/// }
/// ```
/// A guided response writes the properties in the order given, as JSON; every guide holds.
public struct GenerationSchema: Sendable, Equatable, Codable, CustomDebugStringConvertible {
    /// The value's shape.
    let root: SchemaNode
    /// Named shapes that `root` refers to (from `DynamicGenerationSchema` references).
    let definitions: [String: SchemaNode]

    init(root: SchemaNode, definitions: [String: SchemaNode] = [:]) {
        self.root = root
        self.definitions = definitions
    }

    /// A property of an object schema: Apple's `GenerationSchema.Property`.
    public struct Property: Sendable {
        let property: SchemaProperty
        /// The named shapes the property's type refers to.
        let definitions: [String: SchemaNode]

        /// A property named `name` holding a `type` value that follows `guides`; an `Optional`
        /// type makes the property optional (the model may leave it out).
        public init<Value: Generable>(
            name: String, description: String? = nil, type: Value.Type, guides: [GenerationGuide<Value>] = []
        ) {
            let schema = Value.generationSchema
            property = SchemaProperty(
                name: name, description: description, node: schema.root.applying(guides.flatMap(\.rule.rules)),
                isOptional: Value.self is any OptionalGenerable.Type)
            definitions = schema.definitions
        }
    }

    /// An object with `properties`, in that order.
    public init(type: any Generable.Type, description: String? = nil, properties: [Property]) {
        self.init(
            root: .object(name: "\(type)", description: description, properties: properties.map(\.property)),
            definitions: properties.reduce(into: [:]) { $0.merge($1.definitions) { kept, _ in kept } })
    }

    /// A string that is one of `choices` (an enumeration).
    public init(type: any Generable.Type, description: String? = nil, anyOf choices: [String]) {
        self.init(root: .string(description: description, rules: [.anyOf(choices)]))
    }

    /// A value of one of `types`.
    public init(type: any Generable.Type, description: String? = nil, anyOf types: [any Generable.Type]) {
        let schemas = types.map { $0.generationSchema }
        self.init(
            root: .anyOf(name: "\(type)", description: description, schemas.map(\.root)),
            definitions: schemas.reduce(into: [:]) { $0.merge($1.definitions) { kept, _ in kept } })
    }

    /// A schema built at run time: `root`, which may refer by name to the schemas in `dependencies`.
    /// - Throws: `SchemaError` for two schemas of one name, two properties of one name in an
    ///   object, a choice among nothing, or a reference to a name that is not defined.
    public init(root: DynamicGenerationSchema, dependencies: [DynamicGenerationSchema]) throws {
        var definitions: [String: SchemaNode] = [:]
        for schema in [root] + dependencies {
            try schema.node.check()
            guard let name = schema.name else { continue }
            guard definitions[name] == nil else {
                throw SchemaError.duplicateType(
                    schema: nil, type: name, .init(debugDescription: "two schemas are named \(name)"))
            }
            definitions[name] = schema.node
        }
        for schema in [root] + dependencies { definitions.merge(schema.definitions) { kept, _ in kept } }
        let missing = Set(([root] + dependencies).flatMap { $0.node.references }).subtracting(definitions.keys)
        guard missing.isEmpty else {
            throw SchemaError.undefinedReferences(
                schema: root.name, references: missing.sorted(),
                .init(debugDescription: "undefined references: \(missing.sorted().joined(separator: ", "))"))
        }
        self.init(root: root.node, definitions: definitions)
    }

    /// The name under which `anyJSONValue` and `anyJSONObject` define any JSON value.
    static let anyValueName = "JSONValue"

    /// Any JSON value, as a choice that refers to itself: a string, a number, a boolean, null, an
    /// array of any values, or an object of any keys and values (`anyValueName` names it).
    static let anyValueNode = SchemaNode.anyOf(
        name: anyValueName, description: "Any JSON value",
        [
            .string(description: nil, rules: []), .number(rules: []), .boolean, .null,
            .array(element: .reference(anyValueName), rules: []), .map(value: .reference(anyValueName)),
        ])

    /// Any JSON value (nested at most `JSONGrammar.maximumDepth` levels): JSON Schema's `{}`.
    package static let anyJSONValue = GenerationSchema(
        root: .reference(anyValueName), definitions: [anyValueName: anyValueNode])

    /// Any JSON object: any keys, any values (OpenAI's `response_format: {"type": "json_object"}`).
    /// A response may write one key twice, which `GeneratedContent(json:)` refuses (see
    /// Docs/LanguageModels.md).
    package static let anyJSONObject = GenerationSchema(
        root: .map(value: .reference(anyValueName)), definitions: [anyValueName: anyValueNode])

    /// Why a dynamic schema cannot be built: Apple's `GenerationSchema.SchemaError`.
    public enum SchemaError: Error, Sendable, CustomStringConvertible {
        /// What went wrong, for people.
        public struct Context: Sendable {
            public let debugDescription: String
            public init(debugDescription: String) { self.debugDescription = debugDescription }
        }
        case duplicateType(schema: String?, type: String, Context)
        case duplicateProperty(schema: String, property: String, Context)
        case emptyTypeChoices(schema: String, Context)
        case undefinedReferences(schema: String?, references: [String], Context)

        public var description: String {
            switch self {
            case .duplicateType(_, _, let c), .duplicateProperty(_, _, let c), .emptyTypeChoices(_, let c),
                .undefinedReferences(_, _, let c):
                return c.debugDescription
            }
        }
    }

    /// The name of the schema's type (or of the dynamic schema's root).
    var name: String {
        switch root {
        case .object(let name, _, _): name
        case .anyOf(let name?, _, _): name
        case .reference(let name): name
        case .string: "String"
        case .integer: "Int"
        case .number: "Double"
        case .boolean: "Bool"
        case .null: "Null"
        case .array: "Array"
        case .map: "Object"
        case .anyOf(nil, _, _): "Choice"
        }
    }

    /// The schema as JSON Schema (what a prompt shows the model).
    public var debugDescription: String { jsonSchema.jsonString }

    /// The schema as JSON Schema, properties in order; definitions under `$defs`.
    var jsonSchema: GeneratedContent {
        var schema = root.jsonSchema
        // Only the shapes something refers to (a named root is among the definitions for itself).
        let referred = Set(root.references + definitions.values.flatMap(\.references))
        if !referred.isEmpty, case .structure(var properties, var keys) = schema.kind {
            let defs = definitions.keys.filter(referred.contains).sorted().map { ($0, definitions[$0]!.jsonSchema) }
            properties["$defs"] = GeneratedContent(
                kind: .structure(properties: Dictionary(uniqueKeysWithValues: defs), orderedKeys: defs.map(\.0)))
            keys.append("$defs")
            schema.kind = .structure(properties: properties, orderedKeys: keys)
        }
        return schema
    }
}

/// A schema put together at run time: Apple's `DynamicGenerationSchema`.
///
/// ```swift
/// let person = DynamicGenerationSchema(name: "Person", properties: [
///     .init(name: "name", schema: .init(type: String.self)),
///     .init(name: "friends", schema: .init(arrayOf: .init(referenceTo: "Person"), maximumElements: 3)),
/// ])
/// let schema = try GenerationSchema(root: person, dependencies: [])
/// ```
public struct DynamicGenerationSchema: Sendable {
    let name: String?
    let node: SchemaNode
    /// Named shapes a `Generable` type's schema brought along (`init(type:guides:)`).
    var definitions: [String: SchemaNode] = [:]

    /// A property of a dynamic object schema.
    public struct Property: Sendable {
        let property: SchemaProperty
        let definitions: [String: SchemaNode]
        /// A property named `name` of shape `schema`; optional ones may be left out.
        public init(name: String, description: String? = nil, schema: DynamicGenerationSchema, isOptional: Bool = false)
        {
            property = SchemaProperty(name: name, description: description, node: schema.node, isOptional: isOptional)
            definitions = schema.definitions
        }
    }

    /// An object named `name` with `properties`, in that order.
    public init(name: String, description: String? = nil, properties: [Property]) {
        self.name = name
        node = .object(name: name, description: description, properties: properties.map(\.property))
        definitions = properties.reduce(into: [:]) { $0.merge($1.definitions) { kept, _ in kept } }
    }

    /// A value of one of the shapes `choices`.
    public init(name: String, description: String? = nil, anyOf choices: [DynamicGenerationSchema]) {
        self.name = name
        node = .anyOf(name: name, description: description, choices.map(\.node))
        definitions = choices.reduce(into: [:]) { $0.merge($1.definitions) { kept, _ in kept } }
    }

    /// A string that is one of `choices`.
    public init(name: String, description: String? = nil, anyOf choices: [String]) {
        self.name = name
        node = .string(description: description, rules: [.anyOf(choices)])
    }

    /// An array of `itemSchema` values, between `minimumElements` and `maximumElements` of them.
    public init(arrayOf itemSchema: DynamicGenerationSchema, minimumElements: Int? = nil, maximumElements: Int? = nil) {
        name = nil
        node = .array(
            element: itemSchema.node,
            rules: [minimumElements.map(GuideRule.minimumCount), maximumElements.map(GuideRule.maximumCount)]
                .compactMap { $0 })
        definitions = itemSchema.definitions
    }

    /// A value of a `Generable` type, following `guides`.
    public init<Value: Generable>(type: Value.Type, guides: [GenerationGuide<Value>] = []) {
        name = nil
        let schema = Value.generationSchema
        node = schema.root.applying(guides.flatMap(\.rule.rules))
        definitions = schema.definitions
    }

    /// The schema named `name`, defined by the root or one of the dependencies.
    public init(referenceTo name: String) {
        self.name = nil
        node = .reference(name)
    }
}

/// A schema's shape, as the grammar compiler reads it.
indirect enum SchemaNode: Sendable, Equatable, Codable {
    case string(description: String?, rules: [GuideRule])
    case integer(rules: [GuideRule])
    case number(rules: [GuideRule])
    case boolean
    case null
    case array(element: SchemaNode, rules: [GuideRule])
    case object(name: String, description: String?, properties: [SchemaProperty])
    /// An object whose keys are any strings and whose values are all `value`s (JSON Schema's
    /// `additionalProperties` without `properties`).
    case map(value: SchemaNode)
    case anyOf(name: String?, description: String?, [SchemaNode])
    case reference(String)

    /// This shape with `rules` added (an array's `element` rules go to its element).
    func applying(_ rules: [GuideRule]) -> SchemaNode {
        guard !rules.isEmpty else { return self }
        switch self {
        case .string(let description, let own): return .string(description: description, rules: own + rules)
        case .integer(let own): return .integer(rules: own + rules)
        case .number(let own): return .number(rules: own + rules)
        case .array(let element, let own):
            var element = element
            var kept = own
            for rule in rules {
                if case .element(let inner) = rule {
                    element = element.applying(inner.rules)
                } else {
                    kept.append(rule)
                }
            }
            return .array(element: element, rules: kept)
        case .anyOf(let name, let description, let choices):
            // An optional's guides apply to what it wraps (`anyOf` is never the shape of an optional,
            // but a guide on a choice of types applies to each choice that takes it).
            return .anyOf(name: name, description: description, choices.map { $0.applying(rules) })
        case .boolean, .null, .object, .map, .reference: return self
        }
    }

    /// Names this shape refers to.
    var references: [String] {
        switch self {
        case .reference(let name): return [name]
        case .array(let element, _): return element.references
        case .map(let value): return value.references
        case .object(_, _, let properties): return properties.flatMap(\.node.references)
        case .anyOf(_, _, let choices): return choices.flatMap(\.references)
        case .string, .integer, .number, .boolean, .null: return []
        }
    }

    /// Checks what `GenerationSchema.SchemaError` names: property names unique, choices not empty.
    func check() throws {
        switch self {
        case .object(let name, _, let properties):
            var seen = Set<String>()
            for property in properties {
                guard seen.insert(property.name).inserted else {
                    throw GenerationSchema.SchemaError.duplicateProperty(
                        schema: name, property: property.name,
                        .init(debugDescription: "\(name) has two properties named \(property.name)"))
                }
                try property.node.check()
            }
        case .anyOf(let name, _, let choices):
            guard !choices.isEmpty else {
                throw GenerationSchema.SchemaError.emptyTypeChoices(
                    schema: name ?? "anyOf", .init(debugDescription: "\(name ?? "a choice") has no choices"))
            }
            for choice in choices { try choice.check() }
        case .array(let element, _): try element.check()
        case .map(let value): try value.check()
        case .string(_, let rules):
            if rules.contains(.anyOf([])) {
                throw GenerationSchema.SchemaError.emptyTypeChoices(
                    schema: "String", .init(debugDescription: "a string choice among no values"))
            }
        case .integer, .number, .boolean, .null, .reference: break
        }
    }

    /// The shape as JSON Schema.
    var jsonSchema: GeneratedContent {
        var pairs: [(String, GeneratedContent)] = []
        func add(_ key: String, _ value: some ConvertibleToGeneratedContent) {
            pairs.append((key, value.generatedContent))
        }
        // Several rules of one kind are written as the one they amount to (as the grammar enforces).
        func bounds(_ rules: [GuideRule], integer: Bool) {
            let minimum = rules.compactMap { if case .minimum(let v) = $0 { v } else { nil } }.max()
            let maximum = rules.compactMap { if case .maximum(let v) = $0 { v } else { nil } }.min()
            if let minimum { add("minimum", integer ? minimum.rounded(.up) : minimum) }
            if let maximum { add("maximum", integer ? maximum.rounded(.down) : maximum) }
        }
        switch self {
        case .string(let description, let rules):
            add("type", "string")
            if let description { add("description", description) }
            let choices = rules.compactMap { if case .anyOf(let values) = $0 { values } else { nil } }
            if let first = choices.first {
                add("enum", choices.dropFirst().reduce(first) { kept, more in kept.filter(more.contains) })
            }
            if let pattern = rules.lazy.compactMap({ if case .pattern(let p) = $0 { p } else { nil } }).first {
                add("pattern", pattern)
            }
        case .integer(let rules):
            add("type", "integer")
            bounds(rules, integer: true)
        case .number(let rules):
            add("type", "number")
            bounds(rules, integer: false)
        case .boolean: add("type", "boolean")
        case .null: add("type", "null")
        case .array(let element, let rules):
            add("type", "array")
            add("items", element.jsonSchema)
            let minimum = rules.compactMap { if case .minimumCount(let n) = $0 { n } else { nil } }.max()
            let maximum = rules.compactMap { if case .maximumCount(let n) = $0 { n } else { nil } }.min()
            if let minimum { add("minItems", minimum) }
            if let maximum { add("maxItems", maximum) }
        case .object(let name, let description, let properties):
            add("type", "object")
            add("title", name)
            if let description { add("description", description) }
            var members: [(String, GeneratedContent)] = []
            for property in properties {
                var schema = property.node.jsonSchema
                if let description = property.description, case .structure(var p, var k) = schema.kind {
                    if p["description"] == nil { k.append("description") }
                    p["description"] = description.generatedContent
                    schema.kind = .structure(properties: p, orderedKeys: k)
                }
                members.append((property.name, schema))
            }
            pairs.append(
                (
                    "properties",
                    GeneratedContent(
                        kind: .structure(
                            properties: Dictionary(members, uniquingKeysWith: { a, _ in a }),
                            orderedKeys: members.map(\.0)))
                ))
            add("required", properties.filter { !$0.isOptional }.map(\.name))
            add("additionalProperties", false)
        case .map(let value):
            add("type", "object")
            add("additionalProperties", value.jsonSchema)
        case .anyOf(let name, let description, let choices):
            if let name { add("title", name) }
            if let description { add("description", description) }
            add("anyOf", choices.map(\.jsonSchema))
        case .reference(let name):
            add("$ref", "#/$defs/\(name)")
        }
        return GeneratedContent(
            kind: .structure(
                properties: Dictionary(pairs, uniquingKeysWith: { a, _ in a }), orderedKeys: pairs.map(\.0)))
    }
}

/// One property of an object shape.
struct SchemaProperty: Sendable, Equatable, Codable {
    let name: String
    let description: String?
    let node: SchemaNode
    let isOptional: Bool
}
