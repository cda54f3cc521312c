import Foundation

/// PostgreSQL's text forms of values, written once for the store (query parameters) and for
/// `embeddings export --format pgvector` (COPY fields): array literals, vectors, JSON arrays,
/// and the one rule for plain identifiers.
///
/// The store passes these as parameter values, never spliced into SQL. PostgreSQL text cannot
/// hold U+0000, so NUL characters are dropped from every value (chunk texts keep everything else;
/// their content hashes and vectors come from the original text).
package enum SQLText {
    /// `value` without NUL characters.
    package static func clean(_ value: String) -> String {
        value.contains("\u{0}") ? value.replacingOccurrences(of: "\u{0}", with: "") : value
    }

    /// An array literal with every element quoted: `{"a","b \"c\"",NULL}`.
    package static func array<S: Sequence>(_ items: S) -> String where S.Element == String? {
        var out = "{"
        var first = true
        for item in items {
            if !first { out += "," }
            first = false
            guard let item else {
                out += "NULL"
                continue
            }
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
    package static func array<S: Sequence>(_ items: S) -> String where S.Element == String {
        array(items.lazy.map { Optional($0) })
    }

    /// pgvector's text form, `[0.1,-2,…]`, with each Float in its shortest round-trip spelling,
    /// so PostgreSQL stores the very same `Float`s.
    package static func vector<S: Sequence>(_ values: S) -> String where S.Element == Float {
        "[" + values.map { "\($0)" }.joined(separator: ",") + "]"
    }

    /// A JSON array of strings (for `json_array_elements_text`).
    package static func jsonArray(_ items: [String]) -> String {
        let data = (try? JSONEncoder().encode(items.map(clean))) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `name` is a plain SQL identifier: a letter or `_`, then letters, digits or `_`
    /// (ASCII only), at most `maximumLength` bytes. Lowercase only unless `allowingUppercase`
    /// (the caller then folds it, as PostgreSQL folds unquoted names). The store's table prefix
    /// takes lowercase and 40 bytes (its suffixes must fit PostgreSQL's 63); an exported table's
    /// name any case and 63.
    package static func isPlainIdentifier(_ name: String, maximumLength: Int, allowingUppercase: Bool) -> Bool {
        func isLetter(_ c: Unicode.Scalar) -> Bool {
            c == "_" || ("a"..."z").contains(c) || (allowingUppercase && ("A"..."Z").contains(c))
        }
        guard let first = name.unicodeScalars.first, isLetter(first), name.utf8.count <= maximumLength else {
            return false
        }
        return name.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
    }
}
