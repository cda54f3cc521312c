import Foundation

/// A `GenerationSchema` compiled for guided decoding: the JSON texts it allows, as an automaton
/// over bytes (`JSONGrammar.State`) that reads a response one byte at a time and knows, after
/// every byte, whether the text so far can still be completed into a valid value.
///
/// The texts it allows are JSON in one layout — `{"a": 1, "b": [true, null]}`: `": "` after a
/// key, `", "` between members and elements, nothing else between tokens — because a layout
/// with free whitespace lets a small model wander in it. Objects write their properties in the
/// schema's order; an optional property may be left out. A map (an object of any keys) writes
/// any strings as keys, and may write one key twice: remembering the keys written would make
/// the states as many as the texts. Integers are `-?(0|[1-9][0-9]*)` of at
/// most 15 digits; numbers add an optional fraction of at most 8 digits (no exponents). Strings
/// are any JSON string: every escape JSON allows (`\uXXXX` with surrogate pairs), never a raw
/// control character or invalid UTF-8. A string under a pattern or a choice writes every
/// character as itself and escapes only what JSON requires (`\"`, `\\`, control characters), so
/// that a value has one spelling: a small model otherwise spells a tool's name in `\u` escapes.
package final class JSONGrammar: Sendable {
    enum Node: Sendable {
        case string(GuidedPattern?)
        /// Bounds rounded inward to what can be written (whole numbers; 8 decimals).
        case integer(minimum: Decimal?, maximum: Decimal?)
        case number(minimum: Decimal?, maximum: Decimal?)
        case boolean
        case null
        case array(element: Int32, minimumCount: Int, maximumCount: Int?)
        case object([Key])
        /// An object of any keys (each read by the free string node `key`), every value a `value`.
        case map(key: Int32, value: Int32)
        case anyOf([Int32])
    }

    /// An object property: its key as written first (`"name": `) and after another (`, "name": `).
    struct Key: Sendable {
        let first: [UInt8]
        let following: [UInt8]
        let node: Int32
        let isOptional: Bool
    }

    let nodes: [Node]
    let root: Int32
    /// Per node: the fewest nested levels a value of it needs (1 for a scalar, an empty array, a map, an
    /// object of optional properties), so that a reading starts nothing optional it could not
    /// finish within `maximumDepth`.
    let minimumDepth: [Int]

    /// Digits allowed: an integer's, a number's integer part's, a number's fraction's.
    static let integerDigits = 15
    static let numberDigits = 15
    static let fractionDigits = 8

    /// Compiles `schema`.
    /// - Throws: `.unsupportedGuide` for a guide that cannot be enforced (a pattern outside the
    ///   subset, bounds that exclude every value, a count below zero or above its maximum, …).
    package init(_ schema: GenerationSchema) throws(LanguageModelSession.GenerationError) {
        var compiler = Compiler(definitions: schema.definitions)
        do {
            root = try compiler.compile(schema.root)
        } catch {
            throw .unsupportedGuide(.init(debugDescription: (error as? CompileError)?.message ?? "\(error)"))
        }
        nodes = compiler.nodes
        // Every shape must have a finite value (a required property or a minimum count that
        // recurses forever has none): a reading that starts one could never end.
        var finite = [Bool](repeating: false, count: nodes.count)
        var changed = true
        while changed {
            changed = false
            for (index, node) in nodes.enumerated() where !finite[index] {
                let isFinite: Bool
                switch node {
                case .string, .integer, .number, .boolean, .null: isFinite = true
                case .array(let element, let minimum, _): isFinite = minimum == 0 || finite[Int(element)]
                case .object(let keys): isFinite = keys.allSatisfy { $0.isOptional || finite[Int($0.node)] }
                case .map: isFinite = true  // `{}`
                case .anyOf(let choices): isFinite = choices.contains { finite[Int($0)] }
                }
                if isFinite {
                    finite[index] = true
                    changed = true
                }
            }
        }
        guard finite.allSatisfy({ $0 }) else {
            throw .unsupportedGuide(.init(debugDescription: "a schema that recurses without end has no finite value"))
        }
        var depth = [Int](repeating: Int.max / 2, count: nodes.count)
        changed = true
        while changed {
            changed = false
            for (index, node) in nodes.enumerated() {
                let needed: Int
                switch node {
                case .string, .integer, .number, .boolean, .null: needed = 1
                case .array(let element, let minimum, _): needed = minimum == 0 ? 1 : 1 + depth[Int(element)]
                case .object(let keys):
                    needed = 1 + keys.filter { !$0.isOptional }.map { depth[Int($0.node)] }.reduce(0, max)
                case .map: needed = 1  // `{}`
                case .anyOf(let choices): needed = choices.map { depth[Int($0)] }.min() ?? Int.max / 2
                }
                if needed < depth[index] {
                    depth[index] = needed
                    changed = true
                }
            }
        }
        minimumDepth = depth
        guard depth[Int(root)] <= Self.maximumDepth else {
            throw .unsupportedGuide(
                .init(
                    debugDescription:
                        "a value needs \(depth[Int(root)]) nested levels; at most \(Self.maximumDepth) are read"))
        }
        // A choice that contains itself without writing anything would be read forever.
        for start in nodes.indices {
            var seen = Set<Int32>()
            var pending = [Int32(start)]
            while let node = pending.popLast() {
                guard case .anyOf(let choices) = nodes[Int(node)] else { continue }
                for choice in choices {
                    if choice == Int32(start) {
                        throw .unsupportedGuide(.init(debugDescription: "a choice among types that includes itself"))
                    }
                    if seen.insert(choice).inserted { pending.append(choice) }
                }
            }
        }
    }

    private struct CompileError: Error { let message: String }

    private struct Compiler {
        let definitions: [String: SchemaNode]
        var nodes: [Node] = []
        var named: [String: Int32] = [:]

        init(definitions: [String: SchemaNode]) { self.definitions = definitions }

        mutating func add(_ node: Node) -> Int32 {
            nodes.append(node)
            return Int32(nodes.count - 1)
        }

        mutating func compile(_ schema: SchemaNode) throws -> Int32 {
            switch schema {
            case .string(_, let rules):
                return add(.string(try pattern(rules)))
            case .integer(let rules):
                return add(try number(rules, integer: true))
            case .number(let rules):
                return add(try number(rules, integer: false))
            case .boolean:
                return add(.boolean)
            case .null:
                return add(.null)
            case .array(let element, let rules):
                var minimum = 0
                var maximum: Int? = nil
                for rule in rules {
                    switch rule {
                    case .minimumCount(let n): minimum = max(minimum, n)
                    case .maximumCount(let n): maximum = min(maximum ?? n, n)
                    default: throw CompileError(message: "an array guide \(rule) is not a count")
                    }
                }
                guard rules.allSatisfy({ if case .minimumCount(let n) = $0 { n >= 0 } else { true } }) else {
                    throw CompileError(message: "a minimum count below 0")
                }
                if let maximum {
                    guard maximum >= 0 else { throw CompileError(message: "a maximum count below 0") }
                    guard maximum >= minimum else {
                        throw CompileError(message: "a maximum count \(maximum) below the minimum \(minimum)")
                    }
                }
                let index = add(.null)
                let elementIndex = try compile(element)
                nodes[Int(index)] = .array(element: elementIndex, minimumCount: minimum, maximumCount: maximum)
                return index
            case .object(_, _, let properties):
                let index = add(.null)
                var keys: [Key] = []
                for property in properties {
                    let quoted = Array(GeneratedContent(kind: .string(property.name)).jsonString.utf8)
                    keys.append(
                        Key(
                            first: quoted + Array(": ".utf8), following: Array(", ".utf8) + quoted + Array(": ".utf8),
                            node: try compile(property.node), isOptional: property.isOptional))
                }
                nodes[Int(index)] = .object(keys)
                return index
            case .map(let value):
                let index = add(.null)
                let key = add(.string(nil))
                nodes[Int(index)] = .map(key: key, value: try compile(value))
                return index
            case .anyOf(_, _, let choices):
                guard !choices.isEmpty else { throw CompileError(message: "a choice among no types") }
                let index = add(.null)
                var compiled: [Int32] = []
                for choice in choices { compiled.append(try compile(choice)) }
                nodes[Int(index)] = .anyOf(compiled)
                return index
            case .reference(let name):
                if let index = named[name] { return index }
                guard let definition = definitions[name] else {
                    throw CompileError(message: "a reference to \(name), which is not defined")
                }
                // Reserved first, so that a definition may refer to itself.
                let index = add(.anyOf([]))
                named[name] = index
                let target = try compile(definition)
                nodes[Int(index)] = .anyOf([target])
                return index
            }
        }

        /// A number node: its bounds rounded inward to the values that can be written (whole
        /// numbers, or 8 decimals), which must leave at least one within the digit caps.
        func number(_ rules: [GuideRule], integer: Bool) throws -> Node {
            let (low, high) = try bounds(rules)
            let places = integer ? 0 : JSONGrammar.fractionDigits
            func rounded(_ value: Double?, _ mode: NSDecimalNumber.RoundingMode) -> Decimal? {
                guard let value else { return nil }
                var exact = Decimal(value)
                var result = Decimal()
                NSDecimalRound(&result, &exact, places, mode)
                return result
            }
            let minimum = rounded(low, .up)
            let maximum = rounded(high, .down)
            let signs = [NumberScan(), NumberScan(negative: true)]
            guard
                signs.contains(where: {
                    JSONGrammar.isPossible($0, integer: integer, minimum: minimum, maximum: maximum)
                })
            else {
                let kind = integer ? "integer" : "number with at most \(places) decimals"
                let digits = integer ? JSONGrammar.integerDigits : JSONGrammar.numberDigits
                throw CompileError(
                    message:
                        "no \(kind) and at most \(digits) digits lies between \(low.map { "\($0)" } ?? "−∞") and \(high.map { "\($0)" } ?? "∞")"
                )
            }
            return integer ? .integer(minimum: minimum, maximum: maximum) : .number(minimum: minimum, maximum: maximum)
        }

        func bounds(_ rules: [GuideRule]) throws -> (Double?, Double?) {
            var low: Double? = nil
            var high: Double? = nil
            for rule in rules {
                switch rule {
                case .minimum(let v):
                    guard v.isFinite else { throw CompileError(message: "a minimum \(v) that is not finite") }
                    low = max(low ?? v, v)
                case .maximum(let v):
                    guard v.isFinite else { throw CompileError(message: "a maximum \(v) that is not finite") }
                    high = min(high ?? v, v)
                default: throw CompileError(message: "a number guide \(rule) is not a bound")
                }
            }
            if let low, let high, low > high {
                throw CompileError(message: "a minimum \(low) above the maximum \(high)")
            }
            return (low, high)
        }

        func pattern(_ rules: [GuideRule]) throws -> GuidedPattern? {
            var choices: [String]? = nil
            var source: String? = nil
            for rule in rules {
                switch rule {
                case .anyOf(let values):
                    choices = choices.map { kept in kept.filter(values.contains) } ?? values
                case .pattern(let text):
                    guard source == nil else { throw CompileError(message: "two patterns on one string") }
                    source = text
                default: throw CompileError(message: "a string guide \(rule) is not a choice or a pattern")
                }
            }
            do {
                if var choices {
                    if let source {
                        let compiled = try GuidedPattern(source)
                        choices = choices.filter(compiled.matches)
                    }
                    guard !choices.isEmpty else { throw CompileError(message: "a string choice among no values") }
                    return try GuidedPattern(choices.map(Self.literal).joined(separator: "|"))
                }
                return try source.map { try GuidedPattern($0) }
            } catch let error as PatternError {
                throw CompileError(message: error.description)
            }
        }

        /// `text` as a pattern that matches it and nothing else.
        static func literal(_ text: String) -> String {
            var out = "(?:"
            for scalar in text.unicodeScalars {
                if scalar.isASCII, !(scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) { out += "\\" }
                out.unicodeScalars.append(scalar)
            }
            return out + ")"
        }
    }
}
