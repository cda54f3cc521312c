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
public enum JinjaValue: Sendable, Hashable {
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
public struct JinjaObject: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The keys, in insertion order.
    public private(set) var keys: [String] = []
    private var storage: [String: JinjaValue] = [:]

    /// An empty object.
    public init() {}

    /// An object from key–value pairs in order; a repeated key keeps its first position and last value.
    public init(_ pairs: [(String, JinjaValue)]) {
        for (key, value) in pairs { self[key] = value }
    }

    /// An object from a dictionary literal, keys in the order written.
    public init(dictionaryLiteral elements: (String, JinjaValue)...) {
        self.init(elements)
    }

    /// The number of keys.
    public var count: Int { keys.count }

    /// The value for `key`; setting a new key appends it, setting `nil` removes it.
    ///
    /// - Complexity: O(1) to read and to add; O(n) to remove.
    public subscript(key: String) -> JinjaValue? {
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
    public var pairs: [(key: String, value: JinjaValue)] {
        keys.compactMap { key in storage[key].map { (key, $0) } }
    }

    /// Objects are equal when they hold the same keys with equal values, in any order (as Python dicts).
    public static func == (lhs: JinjaObject, rhs: JinjaObject) -> Bool {
        lhs.storage == rhs.storage
    }

    /// Hashes the keys and values, independently of order.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage)
    }
}

extension JinjaValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `nil` is ``none``.
    public init(nilLiteral: ()) { self = .none }
    /// `true` is ``boolean(_:)``.
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    /// `3` is ``integer(_:)``.
    public init(integerLiteral value: Int) { self = .integer(value) }
    /// `2.5` is ``number(_:)``.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// `"text"` is ``string(_:)``.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `[a, b]` is ``array(_:)``.
    public init(arrayLiteral elements: JinjaValue...) { self = .array(elements) }
    /// `["key": value]` is ``object(_:)``, keys in the order written.
    public init(dictionaryLiteral elements: (String, JinjaValue)...) { self = .object(JinjaObject(elements)) }
}
