import JSONText

extension JinjaValue {
    /// The deepest nesting of arrays and objects ``init(json:)`` accepts.
    package static let maximumJSONDepth = JSONReader.maximumDepth

    /// The value a JSON text describes, with object keys kept in document order (as Python's
    /// `json.loads` keeps them), so that `tojson` in a template prints them back in the same order.
    ///
    /// Integers that fit `Int` become ``integer(_:)``; other numbers become ``number(_:)``. A
    /// repeated key keeps its first place and its last value, as in Python.
    ///
    /// ```swift
    /// let tools = try JinjaValue(json: #"[{"type": "function", "function": {"name": "now"}}]"#)
    /// ```
    ///
    /// - Throws: ``ChatTemplateError/Code-swift.struct/invalidJSON`` naming the byte offset of the first
    ///   syntax problem (nesting deeper than ``maximumJSONDepth`` included), or, for well-formed text,
    ///   the first integer outside `Int`.
    /// - Complexity: O(n) in the length of `json`.
    package init(json: String) throws(ChatTemplateError) {
        let node: JSONNode
        do {
            node = try JSONReader.read(json, acceptsTruncation: false, repeatedKeys: .keepLast)
        } catch {
            throw ChatTemplateError(.invalidJSON, "invalid JSON at byte \(error.offset): \(error.message)")
        }
        self = try JinjaValue(node)
    }

    private init(_ node: JSONNode) throws(ChatTemplateError) {
        switch node.kind {
        case .null: self = .none
        case .bool(let value): self = .boolean(value)
        case .string(let value): self = .string(value)
        case .number(let text, let isInteger):
            if isInteger {
                guard let value = Int(text) else {
                    throw ChatTemplateError(.invalidJSON, "invalid JSON: the integer \(text) does not fit in Int")
                }
                self = .integer(value)
            } else {
                guard let value = Double(text) else { throw ChatTemplateError(.invalidJSON, "invalid JSON: \(text)") }
                self = .number(value)
            }
        case .array(let elements):
            var values: [JinjaValue] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try JinjaValue(element)) }
            self = .array(values)
        case .object(let members):
            var object = JinjaObject()
            for member in members { object[member.key] = try JinjaValue(member.value) }
            self = .object(object)
        }
    }
}
