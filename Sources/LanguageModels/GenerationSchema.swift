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
public struct GenerationSchema: Sendable, CustomDebugStringConvertible {
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

        /// A property named `name` holding a `type` value that follows `guides`; an `Optional`
        /// type makes the property optional (the model may leave it out).
        public init<Value: Generable>(
            name: String, description: String? = nil, type: Value.Type, guides: [GenerationGuide<Value>] = []
        ) {
            let node = Value.generationSchema.root.applying(guides.flatMap(\.rule.rules))
            property = SchemaProperty(
                name: name, description: description, node: node, isOptional: Value.self is any OptionalGenerable.Type)
        }
    }

    /// An object with `properties`, in that order.
    public init(type: any Generable.Type, description: String? = nil, properties: [Property]) {
        self.init(root: .object(name: "\(type)", description: description, properties: properties.map(\.property)))
    }

    /// A string that is one of `choices` (an enumeration).
    public init(type: any Generable.Type, description: String? = nil, anyOf choices: [String]) {
        self.init(root: .string(description: description, rules: [.anyOf(choices)]))
    }

    /// A value of one of `types`.
    public init(type: any Generable.Type, description: String? = nil, anyOf types: [any Generable.Type]) {
        self.init(root: .anyOf(name: "\(type)", description: description, types.map { $0.generationSchema.root }))
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
        let missing = Set(([root] + dependencies).flatMap { $0.node.references }).subtracting(definitions.keys)
        guard missing.isEmpty else {
            throw SchemaError.undefinedReferences(
                schema: root.name, references: missing.sorted(),
                .init(debugDescription: "undefined references: \(missing.sorted().joined(separator: ", "))"))
        }
        self.init(root: root.node, definitions: definitions)
    }

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
        case .anyOf(nil, _, _): "Choice"
        }
    }

    /// The schema as JSON Schema (what a prompt shows the model).
    public var debugDescription: String { jsonSchema.jsonString }

    /// The schema as JSON Schema, properties in order; definitions under `$defs`.
    var jsonSchema: GeneratedContent {
        var schema = root.jsonSchema
        if !definitions.isEmpty, case .structure(var properties, var keys) = schema.kind {
            let defs = definitions.keys.sorted().map { ($0, definitions[$0]!.jsonSchema) }
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

    /// A property of a dynamic object schema.
    public struct Property: Sendable {
        let property: SchemaProperty
        /// A property named `name` of shape `schema`; optional ones may be left out.
        public init(name: String, description: String? = nil, schema: DynamicGenerationSchema, isOptional: Bool = false)
        {
            property = SchemaProperty(name: name, description: description, node: schema.node, isOptional: isOptional)
        }
    }

    /// An object named `name` with `properties`, in that order.
    public init(name: String, description: String? = nil, properties: [Property]) {
        self.name = name
        node = .object(name: name, description: description, properties: properties.map(\.property))
    }

    /// A value of one of the shapes `choices`.
    public init(name: String, description: String? = nil, anyOf choices: [DynamicGenerationSchema]) {
        self.name = name
        node = .anyOf(name: name, description: description, choices.map(\.node))
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
    }

    /// A value of a `Generable` type, following `guides`.
    public init<Value: Generable>(type: Value.Type, guides: [GenerationGuide<Value>] = []) {
        name = nil
        node = Value.generationSchema.root.applying(guides.flatMap(\.rule.rules))
    }

    /// The schema named `name`, defined by the root or one of the dependencies.
    public init(referenceTo name: String) {
        self.name = nil
        node = .reference(name)
    }
}

/// A schema's shape, as the grammar compiler reads it.
indirect enum SchemaNode: Sendable, Equatable {
    case string(description: String?, rules: [GuideRule])
    case integer(rules: [GuideRule])
    case number(rules: [GuideRule])
    case boolean
    case null
    case array(element: SchemaNode, rules: [GuideRule])
    case object(name: String, description: String?, properties: [SchemaProperty])
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
        case .boolean, .null, .object, .reference: return self
        }
    }

    /// Names this shape refers to.
    var references: [String] {
        switch self {
        case .reference(let name): return [name]
        case .array(let element, _): return element.references
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
        func bounds(_ rules: [GuideRule], integer: Bool) {
            for rule in rules {
                switch rule {
                case .minimum(let v):
                    add("minimum", integer ? GeneratedContent(kind: .number(v.rounded(.up))) : v.generatedContent)
                case .maximum(let v):
                    add("maximum", integer ? GeneratedContent(kind: .number(v.rounded(.down))) : v.generatedContent)
                default: break
                }
            }
        }
        switch self {
        case .string(let description, let rules):
            add("type", "string")
            if let description { add("description", description) }
            for rule in rules {
                switch rule {
                case .anyOf(let values): add("enum", values)
                case .pattern(let pattern): add("pattern", pattern)
                default: break
                }
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
            for rule in rules {
                if case .minimumCount(let n) = rule { add("minItems", n) }
                if case .maximumCount(let n) = rule { add("maxItems", n) }
            }
        case .object(let name, let description, let properties):
            add("type", "object")
            add("title", name)
            if let description { add("description", description) }
            var members: [(String, GeneratedContent)] = []
            for property in properties {
                var schema = property.node.jsonSchema
                if let description = property.description, case .structure(var p, var k) = schema.kind {
                    p["description"] = description.generatedContent
                    k.append("description")
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
struct SchemaProperty: Sendable, Equatable {
    let name: String
    let description: String?
    let node: SchemaNode
    let isOptional: Bool
}
