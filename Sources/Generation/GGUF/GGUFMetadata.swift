/// The key–value metadata of a GGUF file, in file order, with lookup by key.
///
/// The typed accessors return nil when the key is absent and throw ``GGUFError/Code/typeMismatch``
/// when it is present with another type, so a model with a wrong type is an error rather than a
/// silent default:
///
/// ```swift
/// let layers = try file.metadata.integer("llama.block_count") ?? 0
/// let tokens = try file.metadata.strings("tokenizer.ggml.tokens") ?? []
/// ```
///
/// Integer accessors accept every integer width and signedness (a `uint32` and an `int64` both
/// give `Int`); float accessors accept `float32` and `float64`, but not integers.
package struct GGUFMetadata: Sendable, Equatable {
    /// One key–value pair and where it starts in the file.
    package struct Entry: Sendable, Equatable {
        /// The key, as `general.architecture`.
        package let key: String
        /// The value.
        package let value: GGUFValue
        /// The byte offset of the entry (its key's length field) in the file.
        package let offset: Int
    }

    /// The entries in file order.
    package let entries: [Entry]
    /// The file's path, for error messages.
    let path: String
    private let index: [String: Int]

    /// Builds the lookup; the parser has already refused duplicate keys.
    init(entries: [Entry], path: String) {
        self.entries = entries
        self.path = path
        var index = [String: Int](minimumCapacity: entries.count)
        for (i, entry) in entries.enumerated() { index[entry.key] = i }
        self.index = index
    }

    /// The number of entries.
    package var count: Int { entries.count }

    /// The keys in file order.
    package var keys: [String] { entries.map(\.key) }

    /// The value for `key`, or nil when the file has no such key.
    /// - Complexity: O(1).
    package subscript(key: String) -> GGUFValue? {
        index[key].map { entries[$0].value }
    }

    /// The text of the string value at `key`.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not a string.
    package func string(_ key: String) throws(GGUFError) -> String? {
        try typed(key, expected: "string") { $0.stringValue }
    }

    /// The integer value at `key` as `Int`, from any integer type.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not an integer, or is a `uint64`
    ///   above `Int.max`.
    package func integer(_ key: String) throws(GGUFError) -> Int? {
        try typed(key, expected: "an integer that fits in Int") { $0.integerValue }
    }

    /// The `float32` or `float64` value at `key` as `Double`.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not a float (integers are refused).
    package func float(_ key: String) throws(GGUFError) -> Double? {
        try typed(key, expected: "float32 or float64") { $0.floatValue }
    }

    /// The bool value at `key`.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not a bool.
    package func bool(_ key: String) throws(GGUFError) -> Bool? {
        try typed(key, expected: "bool") { $0.boolValue }
    }

    /// The elements of the string array at `key`.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not an array of strings.
    package func strings(_ key: String) throws(GGUFError) -> [String]? {
        try typed(key, expected: "array of string") { $0.arrayValue?.strings }
    }

    /// The elements of the integer array at `key` as `Int`, from any integer element type.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not an array of integers, or holds a
    ///   `uint64` above `Int.max`.
    /// - Complexity: O(n).
    package func integers(_ key: String) throws(GGUFError) -> [Int]? {
        try typed(key, expected: "array of integers that fit in Int") { $0.arrayValue?.integers }
    }

    /// The elements of the `float32` or `float64` array at `key` as `Double`.
    /// - Returns: nil when the key is absent.
    /// - Throws: `GGUFError` `typeMismatch` when the value is not an array of floats.
    /// - Complexity: O(n).
    package func floats(_ key: String) throws(GGUFError) -> [Double]? {
        try typed(key, expected: "array of float32 or float64") { $0.arrayValue?.floats }
    }

    private func typed<T>(_ key: String, expected: String, _ convert: (GGUFValue) -> T?) throws(GGUFError) -> T? {
        guard let i = index[key] else { return nil }
        let entry = entries[i]
        guard let result = convert(entry.value) else {
            throw GGUFError(
                .typeMismatch, path: path, offset: entry.offset, subject: GGUFError.key(key),
                detail: "expected \(expected), found \(entry.value.summary)")
        }
        return result
    }
}
