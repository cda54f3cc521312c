import Foundation

/// Text forms of values passed as query parameters: array literals, vectors, JSON arrays.
///
/// These are parameter values, never spliced into SQL. PostgreSQL text cannot hold U+0000, so
/// NUL characters are dropped from every value (chunk texts keep everything else; their content
/// hashes and vectors come from the original text).
enum SQLText {
    /// `value` without NUL characters.
    static func clean(_ value: String) -> String {
        value.contains("\u{0}") ? value.replacingOccurrences(of: "\u{0}", with: "") : value
    }

    /// An array literal with every element quoted: `{"a","b \"c\"",NULL}`.
    static func array<S: Sequence>(_ items: S) -> String where S.Element == String? {
        var out = "{"
        var first = true
        for item in items {
            if !first { out += "," }
            first = false
            guard let item else { out += "NULL"; continue }
            out += "\""
            for character in clean(item).unicodeScalars {
                if character == "\"" || character == "\\" { out.unicodeScalars.append("\\") }
                out.unicodeScalars.append(character)
            }
            out += "\""
        }
        return out + "}"
    }

    /// An array literal of non-optional strings.
    static func array<S: Sequence>(_ items: S) -> String where S.Element == String {
        array(items.lazy.map { Optional($0) })
    }

    /// pgvector's text form, `[0.1,-2,…]`, with each Float in its shortest round-trip spelling.
    static func vector(_ values: [Float]) -> String {
        "[" + values.map { "\($0)" }.joined(separator: ",") + "]"
    }

    /// A JSON array of strings (for `json_array_elements_text`).
    static func jsonArray(_ items: [String]) -> String {
        let data = (try? JSONEncoder().encode(items.map(clean))) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
