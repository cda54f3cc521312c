/// A value passed into a chat template: the JSON-shaped data `apply_chat_template` receives from
/// Python (`None`, `bool`, `int`, `float`, `str`, `list`, `dict`).
///
/// Objects keep their keys in insertion order, as Python dicts do, because `tojson` prints them in that
/// order. Literals build values directly:
///
/// ```swift
/// let tool: JinjaValue = [
///     "type": "function",
///     "function": ["name": "get_weather", "parameters": ["type": "object"]],
/// ]
/// let variables: [String: JinjaValue] = ["bos_token": "<s>", "tools": [tool]]
/// ```
package enum JinjaValue: Sendable, Hashable {
    /// Python's `None`.
    case none
    /// A `bool`.
    case boolean(Bool)
    /// An `int`.
    case integer(Int)
    /// A `float`.
    case number(Double)
    /// A `str`.
    case string(String)
    /// A `list`.
    case array([JinjaValue])
    /// A `dict` with string keys, in insertion order.
    case object(JinjaObject)
}

/// A string-keyed dictionary that remembers insertion order, like a Python `dict`.
///
/// ```swift
/// var call: JinjaObject = ["name": "get_weather"]
/// call["arguments"] = ["city": "Paris"]
/// print(call.keys)  // ["name", "arguments"]
/// ```
package struct JinjaObject: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The keys, in insertion order.
    package private(set) var keys: [String] = []
    private var storage: [String: JinjaValue] = [:]

    /// An empty object.
    package init() {}

    /// An object from key–value pairs in order; a repeated key keeps its first position and last value.
    package init(_ pairs: [(String, JinjaValue)]) {
        for (key, value) in pairs { self[key] = value }
    }

    /// An object from a dictionary literal, keys in the order written.
    package init(dictionaryLiteral elements: (String, JinjaValue)...) {
        self.init(elements)
    }

    /// The number of keys.
    package var count: Int { keys.count }

    /// The value for `key`; setting a new key appends it, setting `nil` removes it.
    ///
    /// - Complexity: O(1) to read and to add; O(n) to remove.
    package subscript(key: String) -> JinjaValue? {
        get { storage[key] }
        set {
            if let newValue {
                if storage.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if storage.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    /// The key–value pairs in insertion order.
    package var pairs: [(key: String, value: JinjaValue)] {
        keys.compactMap { key in storage[key].map { (key, $0) } }
    }

    /// Objects are equal when they hold the same keys with equal values, in any order (as Python dicts).
    package static func == (lhs: JinjaObject, rhs: JinjaObject) -> Bool {
        lhs.storage == rhs.storage
    }

    /// Hashes the keys and values, independently of order.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(storage)
    }
}

extension JinjaValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `nil` is ``none``.
    package init(nilLiteral: ()) { self = .none }
    /// `true` is ``boolean(_:)``.
    package init(booleanLiteral value: Bool) { self = .boolean(value) }
    /// `3` is ``integer(_:)``.
    package init(integerLiteral value: Int) { self = .integer(value) }
    /// `2.5` is ``number(_:)``.
    package init(floatLiteral value: Double) { self = .number(value) }
    /// `"text"` is ``string(_:)``.
    package init(stringLiteral value: String) { self = .string(value) }
    /// `[a, b]` is ``array(_:)``.
    package init(arrayLiteral elements: JinjaValue...) { self = .array(elements) }
    /// `["key": value]` is ``object(_:)``, keys in the order written.
    package init(dictionaryLiteral elements: (String, JinjaValue)...) { self = .object(JinjaObject(elements)) }
}
