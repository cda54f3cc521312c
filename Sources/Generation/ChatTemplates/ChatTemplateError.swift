/// A chat template that could not be loaded, or that failed while rendering.
///
/// Loading (``ChatTemplate/init(source:limits:)``) reports malformed Jinja as ``Code-swift.struct/syntax`` and
/// valid Jinja outside the supported subset as ``Code-swift.struct/unsupported``, both with the line and
/// column of the construct, so a template that cannot be rendered faithfully is refused before any
/// prompt is built. Rendering reports the template's own `raise_exception(…)` as
/// ``Code-swift.struct/raisedByTemplate`` with the template's message, and wrong operand types,
/// undefined values and exhausted ``ChatTemplate/Limits`` with their own codes.
///
/// ```swift
/// do {
///     _ = try ChatTemplate(source: "{{ messages | sort }}")
/// } catch {
///     print(error)  // line 1, column 15: unsupported filter 'sort'
/// }
/// ```
package struct ChatTemplateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to compare against; new codes may be added.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case syntax, unsupported, raisedByTemplate, undefinedValue, invalidOperation, limitExceeded, invalidJSON
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The source is not well-formed Jinja (an unclosed tag, an unexpected token, an unknown filter).
        package static let syntax = Code(.syntax)
        /// The source is valid Jinja that this interpreter does not implement (`macro`, `include`, the
        /// `sort` filter…). The message names the construct.
        package static let unsupported = Code(.unsupported)
        /// The template called `raise_exception(message)`; ``ChatTemplateError/message`` is its message.
        package static let raisedByTemplate = Code(.raisedByTemplate)
        /// An undefined value was used where Jinja's default `Undefined` fails: an attribute or item of
        /// it, arithmetic on it, a call to it.
        package static let undefinedValue = Code(.undefinedValue)
        /// An operation Python would reject: wrong operand types, division by zero, integer overflow, a
        /// value that cannot be printed or converted to JSON.
        package static let invalidOperation = Code(.invalidOperation)
        /// A ``ChatTemplate/Limits`` bound was reached: nesting depth, output size, work, range length.
        package static let limitExceeded = Code(.limitExceeded)
        /// Text given to ``JinjaValue/init(json:)`` is not JSON.
        package static let invalidJSON = Code(.invalidJSON)

        /// The code's name: `syntax`, `unsupported`…
        package var description: String { base.rawValue }
    }

    /// A position in the template source: 1-based line and column, columns counted in Unicode scalars,
    /// lines after Jinja's newline normalization (`\r\n` and `\r` count as one line break).
    package struct Location: Hashable, Sendable, CustomStringConvertible {
        /// The 1-based line.
        package let line: Int
        /// The 1-based column, in Unicode scalars.
        package let column: Int

        /// A location from its parts.
        package init(line: Int, column: Int) {
            self.line = line
            self.column = column
        }

        /// `line 3, column 14`.
        package var description: String { "line \(line), column \(column)" }
    }

    /// What went wrong.
    package let code: Code
    /// A readable account naming the construct or operation; for ``Code-swift.struct/raisedByTemplate``,
    /// exactly the template's message.
    package let message: String
    /// Where in the template source, when the error belongs to a place in it.
    package let location: Location?

    /// An error from its parts.
    package init(_ code: Code, _ message: String, at location: Location? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    /// The message, after the location when there is one: `line 3, column 14: unknown filter 'x'`.
    package var description: String {
        guard let location else { return message }
        return "\(location): \(message)"
    }
}
