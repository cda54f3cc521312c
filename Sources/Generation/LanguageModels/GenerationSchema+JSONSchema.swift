import Foundation

extension GenerationSchema {
    /// A JSON Schema keyword this reader cannot enforce (or a schema it cannot read), with where
    /// it is: refused before generating, never ignored.
    public struct JSONSchemaError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The keyword at fault (`uniqueItems`, `$ref`), or nil when the schema as a whole is
        /// (not JSON, no finite value).
        public let keyword: String?
        /// Where, as a JSON Pointer into the schema (`#/properties/tags`).
        public let path: String
        /// What is wrong, for people.
        public let message: String

        /// An error naming `keyword` at `path`.
        public init(keyword: String?, path: String, message: String) {
            self.keyword = keyword
            self.path = path
            self.message = message
        }

        public var description: String {
            if let keyword { return "'\(keyword)' at \(path): \(message)" }
            return "\(path): \(message)"
        }
    }

    /// A schema read from JSON Schema text: the subset OpenAI's structured outputs accept.
    ///
    /// ```swift
    /// let schema = try GenerationSchema(jsonSchema: #"""
    ///     {"type": "object", "properties": {"city": {"type": "string"},
    ///      "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]}
    ///     """#, name: "Trip")
    /// let response = try await session.respond(to: "Plan a trip.", schema: schema)
    /// ```
    /// See `init(jsonSchema:name:)` taking `GeneratedContent` for the keywords read.
    /// - Throws: `JSONSchemaError`: text that is not whole JSON, or a keyword that cannot be enforced.
    /// - Complexity: O(n) in the schema's size, plus compiling its grammar once to check it.
    public init(jsonSchema text: String, name: String) throws(JSONSchemaError) {
        let content: GeneratedContent
        do { content = try GeneratedContent(json: text) } catch {
            throw JSONSchemaError(keyword: nil, path: "#", message: "not JSON: \(error)")
        }
        guard content.isComplete else {
            throw JSONSchemaError(keyword: nil, path: "#", message: "the JSON text is cut short")
        }
        try self.init(jsonSchema: content, name: name)
    }

    /// A schema read from JSON Schema already parsed (`GeneratedContent(json:)`), keeping the
    /// order of `properties` (the order a guided response writes them in).
    ///
    /// Read: `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`, `null`, or an
    /// array of them: a choice), `properties` with `required` (a property not required may be left
    /// out), `additionalProperties` (beside `properties`, any value: a response only ever writes
    /// the listed properties, which every value of it allows; without `properties`, the schema of
    /// every value of an object of any keys, `true` or absent meaning any value and `false` only
    /// `{}`), `items` (absent: any values), `minItems`, `maxItems`, `enum` and `const` (of
    /// strings, numbers, `null`, or both booleans), `anyOf`, `$ref` to `#`, `#/$defs/…` or
    /// `#/definitions/…`, `minimum`, `maximum`, `exclusiveMinimum` and `exclusiveMaximum` (on
    /// integers only: the next whole number), `pattern` (the subset `Docs/LanguageModels.md`
    /// lists), and the annotations `title`, `description`, `$schema`, `$id`, `$comment`,
    /// `default`, `examples`. `name` names the root (and is what `$ref: "#"` refers to). The
    /// schemas `{}` and `true` are any JSON value (defined as `JSONValue`, a name the schema's
    /// own definitions may then not take).
    /// - Throws: `JSONSchemaError` naming the first keyword that cannot be enforced (`oneOf`,
    ///   `format`, `uniqueItems`, `minLength`, …) and its JSON Pointer, or the schema's fault (a
    ///   value of no type, a required property not listed, bounds that no value meets, a shape
    ///   that recurses without end).
    /// - Complexity: O(n) in the schema's size, plus compiling its grammar once to check it.
    public init(jsonSchema: GeneratedContent, name: String) throws(JSONSchemaError) {
        var reader = JSONSchemaReader(rootName: name)
        let root = try reader.read(jsonSchema, path: "#", name: name)
        if reader.refersToRoot { reader.definitions[name] = root }
        let missing = Set(reader.references.keys).subtracting(reader.definitions.keys).sorted()
        if let first = missing.first, let path = reader.references[first] {
            throw JSONSchemaError(keyword: "$ref", path: path, message: "no definition named '\(first)'")
        }
        do { try root.check() } catch {
            throw JSONSchemaError(keyword: nil, path: "#", message: "\(error)")
        }
        if reader.usesAnyValue {
            let reserved = GenerationSchema.anyValueName
            guard reader.definitions[reserved] == nil else {
                throw JSONSchemaError(
                    keyword: nil, path: "#",
                    message: "'\(reserved)' names any value ({} or true) here; the schema may not define it as well")
            }
            reader.definitions[reserved] = GenerationSchema.anyValueNode
        }
        self.init(root: reader.refersToRoot ? .reference(name) : root, definitions: reader.definitions)
        // What only the whole grammar shows (a shape with no finite value, nesting past the bound).
        do { _ = try JSONGrammar(self) } catch {
            throw JSONSchemaError(keyword: nil, path: "#", message: error.description)
        }
    }
}

/// Reads JSON Schema objects into `SchemaNode`s, collecting named definitions and references.
private struct JSONSchemaReader {
    typealias Failure = GenerationSchema.JSONSchemaError

    let rootName: String
    /// Definitions read from `$defs` and `definitions`, by name.
    var definitions: [String: SchemaNode] = [:]
    /// Names referred to, with where the first reference is.
    var references: [String: String] = [:]
    /// Whether something refers to the root (`$ref: "#"`).
    var refersToRoot = false
    /// Whether some schema allows any value (`{}`, `true`, an object or array without a shape for
    /// its values), which then needs `GenerationSchema.anyValueNode` among the definitions.
    var usesAnyValue = false

    init(rootName: String) { self.rootName = rootName }

    /// Keywords that describe and do not constrain: read and left out of the grammar.
    static let annotations: Set<String> = ["title", "description", "$schema", "$id", "$comment", "default", "examples"]
    /// Keywords read per type (besides `type`, `enum`, `const` and the annotations).
    static let keywords: [String: Set<String>] = [
        "object": ["properties", "required", "additionalProperties", "$defs", "definitions"],
        "array": ["items", "minItems", "maxItems"],
        "string": ["pattern"],
        "integer": ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
        "number": ["minimum", "maximum"],
        "boolean": [], "null": [],
    ]
    static let types = ["object", "array", "string", "integer", "number", "boolean", "null"]

    /// The shape `schema` at `path` describes; `name` names an object (a definition's name, or
    /// the root's).
    mutating func read(_ schema: GeneratedContent, path: String, name: String?) throws(Failure) -> SchemaNode {
        if schema.kind == .bool(true) { return anyValue() }
        guard case .structure(let members, let keys) = schema.kind else {
            throw Failure(
                keyword: nil, path: path,
                message: schema.kind == .bool(false)
                    ? "the schema false allows no value" : "a schema must be a JSON object")
        }
        try readDefinitions(members, path: path)
        let description = try string(members["description"], keyword: "description", path: path)
        let title = try string(members["title"], keyword: "title", path: path)

        if let reference = members["$ref"] {
            try only(keys, allowed: ["$ref", "$defs", "definitions"], path: path, with: "$ref")
            return try self.reference(reference, path: path)
        }
        if let choices = members["anyOf"] {
            try only(keys, allowed: ["anyOf", "$defs", "definitions"], path: path, with: "anyOf")
            guard case .array(let schemas) = choices.kind, !schemas.isEmpty else {
                throw Failure(keyword: "anyOf", path: path, message: "must be a non-empty array of schemas")
            }
            var nodes: [SchemaNode] = []
            for (i, choice) in schemas.enumerated() {
                nodes.append(try read(choice, path: "\(path)/anyOf/\(i)", name: nil))
            }
            return .anyOf(name: title ?? name, description: description, nodes)
        }
        var types = try self.types(members["type"], path: path)
        if members["enum"] != nil || members["const"] != nil {
            try only(keys, allowed: ["type", "enum", "const", "$defs", "definitions"], path: path, with: "enum")
            return try values(members, types: types, description: description, path: path)
        }
        if types.isEmpty, members["properties"] != nil || members["additionalProperties"] != nil { types = ["object"] }
        if types.isEmpty, keys.allSatisfy({ Self.annotations.contains($0) || $0 == "$defs" || $0 == "definitions" }) {
            return anyValue()
        }
        if types.isEmpty {
            let known = Set(Self.keywords.values.flatMap { $0 }).union(Self.annotations)
            if let unknown = keys.first(where: { !known.contains($0) }) {
                throw Failure(keyword: unknown, path: path, message: "not supported")
            }
        }
        guard !types.isEmpty else {
            throw Failure(
                keyword: "type", path: path,
                message: "missing: a schema without 'type', 'enum', 'const', 'anyOf' or '$ref' allows any value")
        }
        let allowed = Set(types.flatMap { Self.keywords[$0] ?? [] }).union(Self.annotations).union(
            ["type", "$defs", "definitions"])
        for key in keys where !allowed.contains(key) {
            throw Failure(
                keyword: key, path: path, message: "not supported on type \(types.joined(separator: " or "))")
        }
        if types.count == 1 {
            return try read(members, keys: keys, type: types[0], path: path, name: title ?? name, description)
        }
        var nodes: [SchemaNode] = []
        for type in types {
            nodes.append(try read(members, keys: keys, type: type, path: path, name: title ?? name, description))
        }
        return .anyOf(name: nil, description: description, nodes)
    }

    /// One type's shape from the members that apply to it.
    private mutating func read(
        _ members: [String: GeneratedContent], keys: [String], type: String, path: String, name: String?,
        _ description: String?
    ) throws(Failure) -> SchemaNode {
        switch type {
        case "string":
            guard let pattern = members["pattern"] else { return .string(description: description, rules: []) }
            guard case .string(let source) = pattern.kind else {
                throw Failure(keyword: "pattern", path: path, message: "must be a string")
            }
            do { _ = try GuidedPattern(source) } catch {
                throw Failure(keyword: "pattern", path: path, message: error.description)
            }
            return .string(description: description, rules: [.pattern(source)])
        case "integer":
            var rules: [GuideRule] = []
            if let v = try number(members["minimum"], keyword: "minimum", path: path) { rules.append(.minimum(v)) }
            if let v = try number(members["maximum"], keyword: "maximum", path: path) { rules.append(.maximum(v)) }
            if let v = try number(members["exclusiveMinimum"], keyword: "exclusiveMinimum", path: path) {
                rules.append(.minimum(v.rounded(.down) + 1))
            }
            if let v = try number(members["exclusiveMaximum"], keyword: "exclusiveMaximum", path: path) {
                rules.append(.maximum(v.rounded(.up) - 1))
            }
            try checkBounds(rules, path: path)
            return .integer(rules: rules)
        case "number":
            var rules: [GuideRule] = []
            if let v = try number(members["minimum"], keyword: "minimum", path: path) { rules.append(.minimum(v)) }
            if let v = try number(members["maximum"], keyword: "maximum", path: path) { rules.append(.maximum(v)) }
            try checkBounds(rules, path: path)
            return .number(rules: rules)
        case "boolean": return .boolean
        case "null": return .null
        case "array":
            let element: SchemaNode
            if let items = members["items"] {
                element = try read(items, path: "\(path)/items", name: nil)
            } else {
                element = anyValue()
            }
            var rules: [GuideRule] = []
            let minimum = try count(members["minItems"], keyword: "minItems", path: path)
            let maximum = try count(members["maxItems"], keyword: "maxItems", path: path)
            if let minimum, let maximum, minimum > maximum {
                throw Failure(keyword: "maxItems", path: path, message: "\(maximum) is below minItems \(minimum)")
            }
            if let minimum { rules.append(.minimumCount(minimum)) }
            if let maximum { rules.append(.maximumCount(maximum)) }
            return .array(element: element, rules: rules)
        default:
            return try object(members, path: path, name: name, description)
        }
    }

    /// An object's shape: its properties in order, those not in `required` optional.
    private mutating func object(
        _ members: [String: GeneratedContent], path: String, name: String?, _ description: String?
    ) throws(Failure) -> SchemaNode {
        if let extra = members["additionalProperties"] {
            switch extra.kind {
            case .bool, .structure: break
            default:
                throw Failure(keyword: "additionalProperties", path: path, message: "must be a boolean or a schema")
            }
        }
        var required: [String] = []
        if let list = members["required"] {
            guard case .array(let names) = list.kind else {
                throw Failure(keyword: "required", path: path, message: "must be an array of property names")
            }
            for element in names {
                guard case .string(let name) = element.kind else {
                    throw Failure(keyword: "required", path: path, message: "must be an array of property names")
                }
                required.append(name)
            }
        }
        if members["properties"] == nil {
            if let first = required.first {
                throw Failure(
                    keyword: "required", path: path,
                    message: "'\(first)' is required, which an object of any keys cannot enforce: list it in properties"
                )
            }
            if let extra = members["additionalProperties"] {
                // `false`: `{}` only, as an object of no properties (below).
                if extra.kind != .bool(false) {
                    return .map(value: try read(extra, path: "\(path)/additionalProperties", name: nil))
                }
            } else {
                return .map(value: anyValue())
            }
        }
        var properties: [SchemaProperty] = []
        var listed = Set<String>()
        if let declared = members["properties"] {
            guard case .structure(let schemas, let order) = declared.kind else {
                throw Failure(keyword: "properties", path: path, message: "must be an object of schemas")
            }
            for key in order {
                guard let schema = schemas[key] else { continue }
                let at = "\(path)/properties/\(Self.escaped(key))"
                let node = try read(schema, path: at, name: nil)
                var described: String?
                if case .structure(let inner, _) = schema.kind, case .string(let text)? = inner["description"]?.kind {
                    described = text
                }
                properties.append(
                    SchemaProperty(name: key, description: described, node: node, isOptional: !required.contains(key)))
                listed.insert(key)
            }
        }
        if let unlisted = required.first(where: { !listed.contains($0) }) {
            throw Failure(
                keyword: "required", path: path,
                message: "'\(unlisted)' is required but not in 'properties' (no other property is ever written)")
        }
        return .object(name: name ?? "Object", description: description, properties: properties)
    }

    /// Any JSON value: a reference to `GenerationSchema.anyValueNode`, defined once read.
    private mutating func anyValue() -> SchemaNode {
        usesAnyValue = true
        return .reference(GenerationSchema.anyValueName)
    }

    /// `enum` or `const`: the values as a choice (strings in one string shape).
    private func values(
        _ members: [String: GeneratedContent], types: [String], description: String?, path: String
    ) throws(Failure) -> SchemaNode {
        let keyword = members["enum"] != nil ? "enum" : "const"
        guard members["enum"] == nil || members["const"] == nil else {
            throw Failure(keyword: "const", path: path, message: "goes without 'enum'")
        }
        var list: [GeneratedContent] = []
        if let const = members["const"] {
            list = [const]
        } else if case .array(let values)? = members["enum"]?.kind, !values.isEmpty {
            list = values
        } else {
            throw Failure(keyword: "enum", path: path, message: "must be a non-empty array of values")
        }
        var strings: [String] = []
        var others: [SchemaNode] = []
        var booleans = Set<Bool>()
        func allowed(_ type: String) -> Bool { types.isEmpty || types.contains(type) }
        for value in list {
            switch value.kind {
            case .string(let text) where allowed("string"): if !strings.contains(text) { strings.append(text) }
            case .number(let n) where n == n.rounded() && (allowed("integer") || allowed("number")):
                others.append(
                    allowed("integer")
                        ? .integer(rules: [.minimum(n), .maximum(n)]) : .number(rules: [.minimum(n), .maximum(n)]))
            case .number(let n) where allowed("number"): others.append(.number(rules: [.minimum(n), .maximum(n)]))
            case .null where allowed("null"): if !others.contains(.null) { others.append(.null) }
            case .bool(let b) where allowed("boolean"): booleans.insert(b)
            case .bool, .array, .structure:
                throw Failure(
                    keyword: keyword, path: path,
                    message:
                        "values of this kind (\(value.jsonString)) cannot be enforced: strings, numbers, null, or both booleans"
                )
            default:
                throw Failure(
                    keyword: keyword, path: path,
                    message: "\(value.jsonString) is not of type \(types.joined(separator: " or "))")
            }
        }
        switch booleans.count {
        case 2: others.append(.boolean)
        case 1:
            throw Failure(
                keyword: keyword, path: path, message: "one boolean alone cannot be enforced (only true-or-false)")
        default: break
        }
        if !strings.isEmpty { others.insert(.string(description: description, rules: [.anyOf(strings)]), at: 0) }
        if others.count == 1 { return others[0] }
        return .anyOf(name: nil, description: description, others)
    }

    /// `$defs` and `definitions` at this level, read into `definitions`.
    private mutating func readDefinitions(_ members: [String: GeneratedContent], path: String) throws(Failure) {
        for keyword in ["$defs", "definitions"] {
            guard let table = members[keyword] else { continue }
            guard case .structure(let schemas, let order) = table.kind else {
                throw Failure(keyword: keyword, path: path, message: "must be an object of schemas")
            }
            for name in order {
                guard let schema = schemas[name] else { continue }
                let at = "\(path)/\(keyword)/\(Self.escaped(name))"
                guard definitions[name] == nil, name != rootName else {
                    throw Failure(keyword: keyword, path: at, message: "a second definition named '\(name)'")
                }
                definitions[name] = try read(schema, path: at, name: name)
            }
        }
    }

    /// `$ref`: `#` or a definition by name.
    private mutating func reference(_ value: GeneratedContent, path: String) throws(Failure) -> SchemaNode {
        guard case .string(let target) = value.kind else {
            throw Failure(keyword: "$ref", path: path, message: "must be a string")
        }
        if target == "#" {
            refersToRoot = true
            return .reference(rootName)
        }
        for prefix in ["#/$defs/", "#/definitions/"] where target.hasPrefix(prefix) {
            let name = Self.unescaped(String(target.dropFirst(prefix.count)))
            guard !name.contains("/") else { break }
            if references[name] == nil { references[name] = path }
            return .reference(name)
        }
        throw Failure(
            keyword: "$ref", path: path,
            message: "'\(target)' is not read: only '#', '#/$defs/NAME' and '#/definitions/NAME'")
    }

    /// `type`: one name or an array of names (empty when absent).
    private func types(_ value: GeneratedContent?, path: String) throws(Failure) -> [String] {
        guard let value else { return [] }
        var names: [String] = []
        switch value.kind {
        case .string(let name): names = [name]
        case .array(let list):
            for element in list {
                guard case .string(let name) = element.kind else {
                    throw Failure(keyword: "type", path: path, message: "must be a type name or an array of them")
                }
                if !names.contains(name) { names.append(name) }
            }
        default: throw Failure(keyword: "type", path: path, message: "must be a type name or an array of them")
        }
        for name in names where !Self.types.contains(name) {
            throw Failure(keyword: "type", path: path, message: "'\(name)' is not a JSON Schema type")
        }
        guard !names.isEmpty else { throw Failure(keyword: "type", path: path, message: "an empty array of types") }
        return names
    }

    /// Refuses keywords beside `with` other than `allowed` and the annotations.
    private func only(_ keys: [String], allowed: Set<String>, path: String, with keyword: String) throws(Failure) {
        for key in keys where !allowed.contains(key) && !Self.annotations.contains(key) {
            throw Failure(keyword: key, path: path, message: "not supported beside '\(keyword)'")
        }
    }

    private func string(_ value: GeneratedContent?, keyword: String, path: String) throws(Failure) -> String? {
        guard let value else { return nil }
        guard case .string(let text) = value.kind else {
            throw Failure(keyword: keyword, path: path, message: "must be a string")
        }
        return text
    }

    private func number(_ value: GeneratedContent?, keyword: String, path: String) throws(Failure) -> Double? {
        guard let value else { return nil }
        guard case .number(let n) = value.kind, n.isFinite else {
            throw Failure(keyword: keyword, path: path, message: "must be a number")
        }
        return n
    }

    private func count(_ value: GeneratedContent?, keyword: String, path: String) throws(Failure) -> Int? {
        guard let n = try number(value, keyword: keyword, path: path) else { return nil }
        guard n >= 0, n == n.rounded(), n <= 1_000_000 else {
            throw Failure(keyword: keyword, path: path, message: "must be a whole number from 0 to 1000000")
        }
        return Int(n)
    }

    /// Refuses bounds that no value meets (a minimum above the maximum).
    private func checkBounds(_ rules: [GuideRule], path: String) throws(Failure) {
        let low = rules.compactMap { if case .minimum(let v) = $0 { v } else { nil } }.max()
        let high = rules.compactMap { if case .maximum(let v) = $0 { v } else { nil } }.min()
        if let low, let high, low > high {
            throw Failure(keyword: "maximum", path: path, message: "no value lies between \(low) and \(high)")
        }
    }

    /// A key as a JSON Pointer token (`~` → `~0`, `/` → `~1`).
    static func escaped(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    static func unescaped(_ token: String) -> String {
        token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }
}
