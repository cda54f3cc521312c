/// Writes JSON text: the one place that escapes a JSON string, for every writer in the package
/// (the CLI's and the server's output, `GeneratedContent.jsonString`, the chat templates' `tojson`).
///
/// Strings are escaped per RFC 8259 with the short escapes (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`),
/// other control characters as `\u00xx` (lowercase hex, as Python writes them), and, in the
/// standard style, U+2028 and U+2029 as `\u2028` and `\u2029`: they are valid in JSON but end a
/// line in JavaScript, so text written into a page or a script stays one string. The Python style
/// writes what Python's `json.dumps` does (those two as themselves; with `ensureASCII`, everything
/// outside printable ASCII as `\uxxxx`, surrogate pairs above U+FFFF), so that a chat template's
/// `tojson` renders as transformers renders it. Floats are written in Swift's shortest round-trip
/// form, so they read back to the same value.
package struct JSONWriter: Sendable {
    /// How strings are escaped.
    package enum Style: Sendable, Equatable {
        /// RFC 8259, with U+2028 and U+2029 escaped too.
        case standard
        /// Python's `json.dumps(ensure_ascii=…)`.
        case python(ensureASCII: Bool)
    }

    /// The text written so far.
    package private(set) var text = ""
    /// Per open array or object: whether it has an element yet (the next one needs a comma).
    private var hasElement: [Bool] = []
    /// Whether a key was just written (its value follows with no comma).
    private var afterKey = false

    /// An empty writer.
    package init() {}

    /// Appends `json`, text that is already JSON, as it is. Not a value of the structure being
    /// written (no comma is added): for writers that lay out the punctuation themselves.
    package mutating func raw(_ json: String) { text += json }

    /// Appends `json`, one whole JSON value already written (a `GeneratedContent`'s text), as the
    /// next value.
    package mutating func value(json: String) {
        separate()
        text += json
    }

    // MARK: Structure

    /// Opens an object as the next value.
    package mutating func beginObject() {
        separate()
        text += "{"
        hasElement.append(false)
    }

    /// Closes the innermost object.
    package mutating func endObject() {
        precondition(hasElement.popLast() != nil && !afterKey, "endObject without an open object")
        text += "}"
    }

    /// Opens an array as the next value.
    package mutating func beginArray() {
        separate()
        text += "["
        hasElement.append(false)
    }

    /// Closes the innermost array.
    package mutating func endArray() {
        precondition(hasElement.popLast() != nil, "endArray without an open array")
        text += "]"
    }

    /// Writes an object member's key; its value is the next thing written.
    package mutating func key(_ name: String) {
        separate()
        Self.appendString(name, to: &text)
        text += ":"
        afterKey = true
    }

    /// The comma before a value or key, when its array or object has an element already.
    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = hasElement.indices.last else { return }
        if hasElement[last] { text += "," }
        hasElement[last] = true
    }

    // MARK: Values

    /// Appends `s` as a JSON string in the standard style.
    package mutating func string(_ s: String) {
        separate()
        Self.appendString(s, to: &text)
    }

    /// Appends a string, or `null` for nil.
    package mutating func string(_ s: String?) {
        if let s { string(s) } else { null() }
    }

    /// Appends an integer.
    package mutating func integer(_ n: Int) {
        separate()
        text += String(n)
    }

    /// Appends `true` or `false`.
    package mutating func bool(_ b: Bool) {
        separate()
        text += b ? "true" : "false"
    }

    /// Appends `null`.
    package mutating func null() {
        separate()
        text += "null"
    }

    /// Appends a float (`null` when not finite).
    package mutating func float(_ x: Float) {
        separate()
        text += x.isFinite ? "\(x)" : "null"
    }

    /// Appends a double (`null` when not finite).
    package mutating func double(_ x: Double) {
        separate()
        text += x.isFinite ? "\(x)" : "null"
    }

    /// Appends an array of floats.
    package mutating func floats(_ xs: some Collection<Float>) {
        beginArray()
        for x in xs { float(x) }
        endArray()
    }

    /// Appends an array of integers.
    package mutating func integers(_ xs: some Collection<Int>) {
        beginArray()
        for x in xs { integer(x) }
        endArray()
    }

    /// Appends an array of strings.
    package mutating func strings(_ xs: some Collection<String>) {
        beginArray()
        for x in xs { string(x) }
        endArray()
    }

    // MARK: Members

    /// `"name": value` members, for the common kinds.
    package mutating func field(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    /// `"name": value`, or `"name": null` for nil.
    package mutating func field(_ name: String, _ value: String?) {
        key(name)
        string(value)
    }

    /// `"name": n`.
    package mutating func field(_ name: String, _ value: Int) {
        key(name)
        integer(value)
    }

    /// `"name": true|false`.
    package mutating func field(_ name: String, _ value: Bool) {
        key(name)
        bool(value)
    }

    /// `s` as a JSON string (with its quotes).
    package static func quoted(_ s: String, style: Style = .standard) -> String {
        var out = ""
        appendString(s, to: &out, style: style)
        return out
    }

    /// Appends `s` as a JSON string (with its quotes) to `out`.
    package static func appendString(_ s: String, to out: inout String, style: Style = .standard) {
        let escapesLineSeparators = style == .standard
        let asciiOnly = style == .python(ensureASCII: true)
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                let value = scalar.value
                if value < 0x20 || (asciiOnly && value > 0x7E)
                    || (escapesLineSeparators && (value == 0x2028 || value == 0x2029))
                {
                    if value > 0xFFFF {
                        let offset = value - 0x10000
                        appendEscape(0xD800 + (offset >> 10), to: &out)
                        appendEscape(0xDC00 + (offset & 0x3FF), to: &out)
                    } else {
                        appendEscape(value, to: &out)
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// `\u` and four lowercase hex digits.
    private static func appendEscape(_ value: UInt32, to out: inout String) {
        let digits = Array("0123456789abcdef".unicodeScalars)
        out += "\\u"
        for shift in stride(from: 12, through: 0, by: -4) {
            out.unicodeScalars.append(digits[Int((value >> UInt32(shift)) & 0xF)])
        }
    }
}
