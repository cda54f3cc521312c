/// `Decodable` values from a tree `JSONReader` read, so that a body is read once: its typed
/// fields through `Decodable`, and any part whose key order matters (a JSON Schema) kept as the
/// ``JSONNode`` itself (decode a `JSONNode` field).
///
/// Failures are the standard `DecodingError`s with their coding paths, as Foundation's
/// `JSONDecoder` reports them: a missing key is `keyNotFound`, a value of another type
/// `typeMismatch` (or `valueNotFound` for null), a number out of the type's range `dataCorrupted`.
/// Numbers are read from their text: an integer type takes a whole number (`2` or `2.0`), a
/// floating-point type any finite one.
package struct JSONNodeDecoder {
    package init() {}

    /// A `T` from `node`.
    package func decode<T: Decodable>(_ type: T.Type, from node: JSONNode) throws -> T {
        try T(from: NodeDecoder(node: node, codingPath: []))
    }
}

extension JSONNode: Decodable {
    /// The node itself, when a ``JSONNodeDecoder`` reads it (members in document order); no other
    /// decoder can give one.
    package init(from decoder: any Decoder) throws {
        guard let reader = decoder as? NodeDecoder else {
            throw DecodingError.typeMismatch(
                JSONNode.self,
                .init(codingPath: decoder.codingPath, debugDescription: "a JSONNode is read by JSONNodeDecoder only"))
        }
        self = reader.node
    }
}

private struct NodeDecoder: Decoder {
    let node: JSONNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node.kind else {
            throw mismatch([String: JSONNode].self, "an object")
        }
        return KeyedDecodingContainer(KeyedNodes<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = node.kind else {
            throw mismatch([JSONNode].self, "an array")
        }
        return UnkeyedNodes(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        let context = DecodingError.Context(codingPath: codingPath, debugDescription: "expected \(expected)")
        if case .null = node.kind { return .valueNotFound(type, context) }
        return .typeMismatch(type, context)
    }
}

extension NodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool {
        if case .null = node.kind { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let value) = node.kind else { throw mismatch(type, "true or false") }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let value) = node.kind else { throw mismatch(type, "a string") }
        return value
    }

    func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
    func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }

    private func number(_ type: Any.Type, _ expected: String) throws -> (text: String, isInteger: Bool) {
        guard case .number(let text, let isInteger) = node.kind else { throw mismatch(type, expected) }
        return (text, isInteger)
    }

    private func outOfRange(_ text: String, _ type: Any.Type) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(text) does not fit in \(type)"))
    }

    private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let (text, isInteger) = try number(type, "an integer")
        if isInteger {
            guard let value = I(text) else { throw outOfRange(text, type) }
            return value
        }
        // 2.0 or 2e3: a whole number written another way.
        guard let value = Double(text), value.isFinite else { throw outOfRange(text, type) }
        guard value.rounded() == value else { throw mismatch(type, "an integer") }
        guard let exact = I(exactly: value) else { throw outOfRange(text, type) }
        return exact
    }

    private func floatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(_ type: F.Type) throws -> F {
        let (text, _) = try number(type, "a number")
        guard let value = F(text), value.isFinite else { throw outOfRange(text, type) }
        return value
    }
}

private struct KeyedNodes<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [(key: String, value: JSONNode)]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { members.contains { $0.key == key.stringValue } }

    private func child(_ key: Key) throws -> NodeDecoder {
        guard let member = members.first(where: { $0.key == key.stringValue }) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for key '\(key.stringValue)'"))
        }
        return NodeDecoder(node: member.value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: child(key)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(
            node: JSONNode(kind: .object(members), isComplete: true), codingPath: codingPath + [NodeKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedNodes: UnkeyedDecodingContainer {
    let elements: [JSONNode]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONNode], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> NodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: codingPath + [NodeKey.index(currentIndex)],
                    debugDescription: "the array ends after \(elements.count) elements"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(node: elements[currentIndex], codingPath: codingPath + [NodeKey.index(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Never.self).decodeNil() else {
            currentIndex -= 1  // not null: the element is read by the next call
            return false
        }
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next(type)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try next(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([JSONNode].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(JSONNode.self) }
}

/// The coding keys of array elements and `super`.
private enum NodeKey: CodingKey {
    case index(Int)
    case `super`

    var stringValue: String {
        switch self {
        case .index(let i): return String(i)
        case .super: return "super"
        }
    }

    var intValue: Int? {
        if case .index(let i) = self { return i }
        return nil
    }

    init?(stringValue: String) {
        guard stringValue == "super" else { return nil }
        self = .super
    }

    init?(intValue: Int) { self = .index(intValue) }
}
