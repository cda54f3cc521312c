// Values while a template renders: the Python objects a Jinja template sees, including the ones a
// caller never passes in (undefined, tuples, namespaces, loop objects, generators, bound methods).

enum JinjaRuntimeValue {
    /// Jinja's default `Undefined`: prints as "", is falsy and iterates as empty, but fails when used
    /// in arithmetic, comparisons or lookups. The string explains what is undefined.
    case undefined(String)
    case none
    case boolean(Bool)
    case integer(Int)
    case float(Double)
    case string(String)
    case list([JinjaRuntimeValue])
    case tuple([JinjaRuntimeValue])
    case dictionary(JinjaRuntimeDictionary)
    case namespace(JinjaNamespace)
    case loop(JinjaLoopContext)
    /// A one-shot iterator (Python generators from `map`, `select`, `reverse`…): always truthy, no
    /// length, empty once consumed.
    case iterator(JinjaIterator)
    case function(JinjaFunction)

    /// The Python type name, for error messages.
    var typeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .none: return "NoneType"
        case .boolean: return "bool"
        case .integer: return "int"
        case .float: return "float"
        case .string: return "str"
        case .list: return "list"
        case .tuple: return "tuple"
        case .dictionary: return "dict"
        case .namespace: return "Namespace"
        case .loop: return "LoopContext"
        case .iterator(let iterator): return iterator.typeName
        case .function: return "builtin_function_or_method"
        }
    }

    var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    /// Python's `bool(value)`.
    var isTruthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .boolean(let value): return value
        case .integer(let value): return value != 0
        case .float(let value): return value != 0
        case .string(let value): return !value.isEmpty
        case .list(let values), .tuple(let values): return !values.isEmpty
        case .dictionary(let dictionary): return dictionary.count > 0
        case .namespace, .loop, .iterator, .function: return true
        }
    }

    init(_ value: JinjaValue) {
        switch value {
        case .none: self = .none
        case .boolean(let value): self = .boolean(value)
        case .integer(let value): self = .integer(value)
        case .number(let value): self = .float(value)
        case .string(let value): self = .string(value)
        case .array(let values): self = .list(values.map(JinjaRuntimeValue.init))
        case .object(let object):
            var dictionary = JinjaRuntimeDictionary()
            for (key, value) in object.pairs { dictionary.setString(key, JinjaRuntimeValue(value)) }
            self = .dictionary(dictionary)
        }
    }

    init(_ literal: JinjaLiteral) {
        switch literal {
        case .none: self = .none
        case .boolean(let value): self = .boolean(value)
        case .integer(let value): self = .integer(value)
        case .float(let value): self = .float(value)
        case .string(let value): self = .string(value)
        }
    }
}

/// A string key compared code point by code point, as Python compares dict keys.
struct JinjaScalarKey: Hashable {
    let string: String

    static func == (lhs: JinjaScalarKey, rhs: JinjaScalarKey) -> Bool { lhs.string.pythonEquals(rhs.string) }

    func hash(into hasher: inout Hasher) {
        for scalar in string.unicodeScalars { hasher.combine(scalar.value) }
    }
}

/// A Python dict: insertion-ordered, string keys found through an index, other keys (numbers, None,
/// tuples) compared with Python equality, so `1`, `1.0` and `True` are one key.
struct JinjaRuntimeDictionary {
    private(set) var keys: [JinjaRuntimeValue] = []
    private(set) var values: [JinjaRuntimeValue] = []
    private var stringIndex: [JinjaScalarKey: Int] = [:]

    var count: Int { keys.count }

    var pairs: Zip2Sequence<[JinjaRuntimeValue], [JinjaRuntimeValue]> { zip(keys, values) }

    private func position(of key: JinjaRuntimeValue) -> Int? {
        if case .string(let string) = key { return stringIndex[JinjaScalarKey(string: string)] }
        return keys.firstIndex { candidate in
            if case .string = candidate { return false }
            return (try? JinjaRuntimeValue.equals(candidate, key)) ?? false
        }
    }

    subscript(key: JinjaRuntimeValue) -> JinjaRuntimeValue? {
        position(of: key).map { values[$0] }
    }

    func value(forString key: String) -> JinjaRuntimeValue? {
        stringIndex[JinjaScalarKey(string: key)].map { values[$0] }
    }

    /// Sets `key`; the caller has checked that it is hashable in Python (not a list, dict…).
    mutating func set(_ key: JinjaRuntimeValue, _ value: JinjaRuntimeValue) {
        if let index = position(of: key) {
            values[index] = value
            return
        }
        if case .string(let string) = key { stringIndex[JinjaScalarKey(string: string)] = keys.count }
        keys.append(key)
        values.append(value)
    }

    mutating func setString(_ key: String, _ value: JinjaRuntimeValue) {
        set(.string(key), value)
    }
}

/// The variables of one scope. Scopes hold few names, so a linear search is faster than hashing, and
/// a loop reuses one scope's storage for every iteration.
struct JinjaScope {
    private var names: [String] = []
    private var values: [JinjaRuntimeValue] = []

    subscript(name: String) -> JinjaRuntimeValue? {
        guard let index = names.firstIndex(of: name) else { return nil }
        return values[index]
    }

    mutating func set(_ name: String, _ value: JinjaRuntimeValue) {
        if let index = names.firstIndex(of: name) {
            values[index] = value
        } else {
            names.append(name)
            values.append(value)
        }
    }

    mutating func removeAll() {
        names.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
    }
}

/// `namespace(…)`: the one mutable object templates have, shared by reference so `{% set ns.x = … %}`
/// inside a loop is seen after it.
final class JinjaNamespace {
    var attributes = JinjaRuntimeDictionary()
}

/// `loop` inside `{% for %}`.
final class JinjaLoopContext {
    let items: [JinjaRuntimeValue]
    var index0 = 0

    init(items: [JinjaRuntimeValue]) { self.items = items }

    func attribute(_ name: String) -> JinjaRuntimeValue? {
        let length = items.count
        switch name {
        case "index": return .integer(index0 + 1)
        case "index0": return .integer(index0)
        case "revindex": return .integer(length - index0)
        case "revindex0": return .integer(length - index0 - 1)
        case "first": return .boolean(index0 == 0)
        case "last": return .boolean(index0 == length - 1)
        case "length": return .integer(length)
        case "depth": return .integer(1)
        case "depth0": return .integer(0)
        case "previtem": return index0 > 0 ? items[index0 - 1] : .undefined("there is no previous item")
        case "nextitem": return index0 + 1 < length ? items[index0 + 1] : .undefined("there is no next item")
        case "cycle": return .function(.loopCycle(self))
        default: return nil
        }
    }
}

/// A Python iterator: what `map`, `select`, `reject`, `selectattr`, `rejectattr`, `items` and
/// `reverse` return. Iterating consumes it.
final class JinjaIterator {
    let typeName: String
    private let items: [JinjaRuntimeValue]
    private var position = 0

    init(_ items: [JinjaRuntimeValue], typeName: String = "generator") {
        self.items = items
        self.typeName = typeName
    }

    /// The items not consumed yet; consumes them.
    func drain() -> [JinjaRuntimeValue] {
        defer { position = items.count }
        return Array(items[position...])
    }

    /// The next item, consumed, or nil when exhausted.
    func next() -> JinjaRuntimeValue? {
        guard position < items.count else { return nil }
        defer { position += 1 }
        return items[position]
    }
}

/// A macro with the scopes it closes over (those of the loops around its definition).
final class JinjaMacroClosure {
    let definition: JinjaMacro
    let capturedScopes: [JinjaScope]

    init(definition: JinjaMacro, capturedScopes: [JinjaScope]) {
        self.definition = definition
        self.capturedScopes = capturedScopes
    }
}

enum JinjaFunction {
    /// A global function by name (`range`, `namespace`…).
    case global(String)
    /// A `{% macro %}`.
    case macro(JinjaMacroClosure)
    /// A method bound to its receiver (`message.content.strip`).
    indirect case method(JinjaRuntimeValue, String)
    /// `loop.cycle`.
    case loopCycle(JinjaLoopContext)
}
