// Splits a template into text and tags the way Jinja's lexer does with transformers' settings
// (`trim_blocks=True`, `lstrip_blocks=True`, `keep_trailing_newline=False`), applying every
// whitespace rule here so the parser and interpreter only ever see final text.

/// One token inside a `{{ … }}` or `{% … %}` tag.
struct JinjaToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case name(String)
        case string(String)
        case integer(Int)
        case float(Double)
        /// An operator or punctuation mark: `+`, `//`, `==`, `(`, `|`, `.`…
        case symbol(String)
        /// The end of the tag.
        case end
    }

    let kind: Kind
    /// The offset of the token's first scalar in the normalized source.
    let offset: Int
}

/// A piece of a template after lexing.
enum JinjaSegment: Sendable {
    /// Literal text, whitespace control already applied.
    case text(String)
    /// `{{ … }}`; the tokens end with `.end`.
    case output([JinjaToken], offset: Int)
    /// `{% … %}`; the tokens end with `.end`.
    case statement([JinjaToken], offset: Int)
}

/// Maps scalar offsets in the normalized source to lines and columns.
struct JinjaSourceMap: Sendable {
    private let lineStarts: [Int]

    init(_ scalars: [Unicode.Scalar]) {
        var starts = [0]
        for (index, scalar) in scalars.enumerated() where scalar == "\n" { starts.append(index + 1) }
        lineStarts = starts
    }

    func location(of offset: Int) -> ChatTemplateError.Location {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return ChatTemplateError.Location(line: low + 1, column: offset - lineStarts[low] + 1)
    }
}

struct JinjaLexer {
    private let scalars: [Unicode.Scalar]
    let sourceMap: JinjaSourceMap
    private var position = 0
    private var segments: [JinjaSegment] = []
    /// Jinja's `line_starting`: whether the last tag (or the template start) ended at a line start,
    /// which lets `lstrip_blocks` strip indentation that follows it on the same line.
    private var lineStarting = true

    /// Normalizes newlines as Jinja does: `\r\n` and `\r` become `\n`, and one trailing newline is
    /// dropped (`keep_trailing_newline=False`).
    init(source: String) {
        var normalized: [Unicode.Scalar] = []
        normalized.reserveCapacity(source.unicodeScalars.count)
        var previousWasCarriageReturn = false
        for scalar in source.unicodeScalars {
            if scalar == "\n" && previousWasCarriageReturn {
                previousWasCarriageReturn = false
                continue
            }
            previousWasCarriageReturn = scalar == "\r"
            normalized.append(scalar == "\r" ? "\n" : scalar)
        }
        if normalized.last == "\n" { normalized.removeLast() }
        scalars = normalized
        sourceMap = JinjaSourceMap(normalized)
    }

    private func error(_ code: ChatTemplateError.Code, _ message: String, at offset: Int) -> ChatTemplateError {
        ChatTemplateError(code, message, at: sourceMap.location(of: offset))
    }

    private func matches(_ text: String, at offset: Int) -> Bool {
        var index = offset
        for scalar in text.unicodeScalars {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
        }
        return true
    }

    /// Skips Python whitespace from `offset`; returns where it stopped.
    private func skipWhitespace(from offset: Int) -> Int {
        var index = offset
        while index < scalars.count, isPythonWhitespace(scalars[index]) { index += 1 }
        return index
    }

    mutating func tokenize() throws(ChatTemplateError) -> [JinjaSegment] {
        while position < scalars.count {
            guard let tagStart = nextTagStart(from: position) else {
                emitText(Array(scalars[position...]))
                break
            }
            var text = Array(scalars[position..<tagStart])
            let opener = scalars[tagStart + 1]
            var afterOpener = tagStart + 2
            var control: Unicode.Scalar? = nil
            if afterOpener < scalars.count, scalars[afterOpener] == "-" || scalars[afterOpener] == "+" {
                control = scalars[afterOpener]
                afterOpener += 1
            }
            applyLeftWhitespaceControl(to: &text, control: control, isVariable: opener == "{")
            emitText(text)
            switch opener {
            case "#": try lexComment(from: afterOpener, tagStart: tagStart)
            case "{": try lexTag(from: afterOpener, tagStart: tagStart, isBlock: false)
            default:
                if let rawEnd = rawBeginEnd(from: afterOpener) {
                    try lexRaw(contentStart: rawEnd.contentStart, stripsFollowing: rawEnd.strips, tagStart: tagStart)
                } else {
                    try lexTag(from: afterOpener, tagStart: tagStart, isBlock: true)
                }
            }
        }
        return segments
    }

    private func nextTagStart(from offset: Int) -> Int? {
        var index = offset
        while index + 1 < scalars.count {
            if scalars[index] == "{", ["{", "%", "#"].contains(scalars[index + 1]) { return index }
            index += 1
        }
        return nil
    }

    private mutating func emitText(_ text: [Unicode.Scalar]) {
        if !text.isEmpty { segments.append(.text(String(scalars: text))) }
    }

    /// `{%-` strips all whitespace before the tag; otherwise `lstrip_blocks` strips the spaces that
    /// indent a block or comment tag when only whitespace precedes it on its line (`{%+` opts out).
    private func applyLeftWhitespaceControl(to text: inout [Unicode.Scalar], control: Unicode.Scalar?, isVariable: Bool)
    {
        if control == "-" {
            while let last = text.last, isPythonWhitespace(last) { text.removeLast() }
            return
        }
        guard control != "+", !isVariable else { return }
        let lineStart = (text.lastIndex(of: "\n") ?? -1) + 1
        guard lineStart > 0 || lineStarting else { return }
        if text[lineStart...].allSatisfy(isPythonWhitespace) { text.removeSubrange(lineStart...) }
    }

    /// Consumes a tag's right-hand whitespace control at `offset` (just past its closing delimiter):
    /// `-` strips all following whitespace; otherwise `trim_blocks` drops one newline after block and
    /// comment tags unless the tag ends with `+`.
    private mutating func finishTag(at offset: Int, control: Unicode.Scalar?, trims: Bool) {
        var end = offset
        if control == "-" {
            end = skipWhitespace(from: offset)
        } else if trims, control != "+", end < scalars.count, scalars[end] == "\n" {
            end += 1
        }
        lineStarting = end > 0 && scalars[end - 1] == "\n"
        position = end
    }

    private mutating func lexComment(from offset: Int, tagStart: Int) throws(ChatTemplateError) {
        var index = offset
        while index + 1 < scalars.count {
            if scalars[index] == "#" && scalars[index + 1] == "}" {
                let control: Unicode.Scalar? =
                    index > offset && (scalars[index - 1] == "-" || scalars[index - 1] == "+")
                    ? scalars[index - 1] : nil
                finishTag(at: index + 2, control: control, trims: true)
                return
            }
            index += 1
        }
        throw error(.syntax, "missing end of comment tag", at: tagStart)
    }

    /// When a block tag starting at `offset` is `{% raw %}`, where its content starts and whether it
    /// ended with `-%}`.
    private func rawBeginEnd(from offset: Int) -> (contentStart: Int, strips: Bool)? {
        var index = skipWhitespace(from: offset)
        guard matches("raw", at: index) else { return nil }
        index += 3
        guard index < scalars.count, !isIdentifierContinuation(scalars[index]) else { return nil }
        index = skipWhitespace(from: index)
        if matches("-%}", at: index) { return (index + 3, true) }
        if matches("%}", at: index) { return (index + 2, false) }
        return nil
    }

    /// `{% raw %}…{% endraw %}`: the content is text. Jinja does not trim the newline after
    /// `{% raw %}`, but applies every other whitespace rule to both tags.
    private mutating func lexRaw(contentStart: Int, stripsFollowing: Bool, tagStart: Int) throws(ChatTemplateError) {
        finishTag(at: contentStart, control: stripsFollowing ? "-" : nil, trims: false)
        var index = position
        while let candidate = nextTagStart(from: index) {
            index = candidate + 1
            guard scalars[candidate + 1] == "%" else { continue }
            var cursor = candidate + 2
            var control: Unicode.Scalar? = nil
            if cursor < scalars.count, scalars[cursor] == "-" || scalars[cursor] == "+" {
                control = scalars[cursor]
                cursor += 1
            }
            cursor = skipWhitespace(from: cursor)
            guard matches("endraw", at: cursor) else { continue }
            cursor = skipWhitespace(from: cursor + 6)
            var endControl: Unicode.Scalar? = nil
            if matches("-%}", at: cursor) || matches("+%}", at: cursor) {
                endControl = scalars[cursor]
                cursor += 3
            } else if matches("%}", at: cursor) {
                cursor += 2
            } else {
                continue
            }
            var text = Array(scalars[position..<candidate])
            applyLeftWhitespaceControl(to: &text, control: control, isVariable: false)
            emitText(text)
            finishTag(at: cursor, control: endControl, trims: true)
            return
        }
        throw error(.syntax, "missing end of raw directive", at: tagStart)
    }

    private func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar.properties.isAlphabetic
    }

    private func isIdentifierContinuation(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .decimalNumber, .nonspacingMark, .spacingMark, .connectorPunctuation: return true
        default: return isIdentifierStart(scalar)
        }
    }

    private static let symbols = [
        "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=",
        ".", ":", "|", ",", ";",
    ]

    /// Lexes the expression tokens of a `{{ … }}` or `{% … %}` tag up to its closing delimiter, which
    /// counts only outside brackets (so `{{ {'a': {'b': 1}} }}` is one tag).
    private mutating func lexTag(from offset: Int, tagStart: Int, isBlock: Bool) throws(ChatTemplateError) {
        var tokens: [JinjaToken] = []
        var brackets: [String] = []
        var index = offset
        while true {
            index = skipWhitespace(from: index)
            guard index < scalars.count else {
                throw error(.syntax, "unexpected end of template: the tag is not closed", at: tagStart)
            }
            if brackets.isEmpty {
                if isBlock {
                    if matches("-%}", at: index) || matches("+%}", at: index) {
                        tokens.append(JinjaToken(kind: .end, offset: index))
                        segments.append(.statement(tokens, offset: tagStart))
                        finishTag(at: index + 3, control: scalars[index], trims: true)
                        return
                    }
                    if matches("%}", at: index) {
                        tokens.append(JinjaToken(kind: .end, offset: index))
                        segments.append(.statement(tokens, offset: tagStart))
                        finishTag(at: index + 2, control: nil, trims: true)
                        return
                    }
                } else {
                    if matches("-}}", at: index) {
                        tokens.append(JinjaToken(kind: .end, offset: index))
                        segments.append(.output(tokens, offset: tagStart))
                        finishTag(at: index + 3, control: "-", trims: false)
                        return
                    }
                    if matches("}}", at: index) {
                        tokens.append(JinjaToken(kind: .end, offset: index))
                        segments.append(.output(tokens, offset: tagStart))
                        finishTag(at: index + 2, control: nil, trims: false)
                        return
                    }
                }
            }
            let scalar = scalars[index]
            if scalar == "'" || scalar == "\"" {
                let (value, end) = try lexString(from: index)
                tokens.append(JinjaToken(kind: .string(value), offset: index))
                index = end
            } else if ("0"..."9").contains(scalar) {
                let (kind, end) = try lexNumber(from: index)
                tokens.append(JinjaToken(kind: kind, offset: index))
                index = end
            } else if isIdentifierStart(scalar) {
                var end = index + 1
                while end < scalars.count, isIdentifierContinuation(scalars[end]) { end += 1 }
                tokens.append(JinjaToken(kind: .name(String(scalars: scalars[index..<end])), offset: index))
                index = end
            } else if let symbol = Self.symbols.first(where: { matches($0, at: index) }) {
                switch symbol {
                case "(", "[", "{":
                    brackets.append(symbol)
                case ")", "]", "}":
                    let expected = symbol == ")" ? "(" : symbol == "]" ? "[" : "{"
                    guard let open = brackets.popLast(), open == expected else {
                        throw error(.syntax, "unexpected '\(symbol)'", at: index)
                    }
                default:
                    break
                }
                tokens.append(JinjaToken(kind: .symbol(symbol), offset: index))
                index += symbol.unicodeScalars.count
            } else {
                throw error(.syntax, "unexpected character '\(Character(scalar))'", at: index)
            }
        }
    }

    /// A string literal with Python's `unicode-escape` sequences decoded (unknown escapes stay as
    /// written, as in Python).
    private func lexString(from offset: Int) throws(ChatTemplateError) -> (String, Int) {
        let quote = scalars[offset]
        var result: [Unicode.Scalar] = []
        var index = offset + 1
        func hexValue(_ count: Int, _ escapeStart: Int) throws(ChatTemplateError) -> Unicode.Scalar {
            guard index + count <= scalars.count else {
                throw error(.syntax, "truncated escape in string", at: escapeStart)
            }
            guard let value = UInt32(String(scalars: scalars[index..<index + count]), radix: 16),
                scalars[index..<index + count].allSatisfy({ $0.properties.isASCIIHexDigit }),
                let scalar = Unicode.Scalar(value)
            else { throw error(.syntax, "invalid escape in string", at: escapeStart) }
            index += count
            return scalar
        }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == quote { return (String(scalars: result), index + 1) }
            guard scalar == "\\", index + 1 < scalars.count else {
                result.append(scalar)
                index += 1
                continue
            }
            let escapeStart = index
            let escaped = scalars[index + 1]
            index += 2
            switch escaped {
            case "\n": break
            case "\\": result.append("\\")
            case "'": result.append("'")
            case "\"": result.append("\"")
            case "a": result.append("\u{07}")
            case "b": result.append("\u{08}")
            case "f": result.append("\u{0C}")
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "v": result.append("\u{0B}")
            case "x": result.append(try hexValue(2, escapeStart))
            case "u": result.append(try hexValue(4, escapeStart))
            case "U": result.append(try hexValue(8, escapeStart))
            case "0"..."7":
                var value = escaped.value - 48
                var digits = 1
                while digits < 3, index < scalars.count, ("0"..."7").contains(scalars[index]) {
                    value = value * 8 + scalars[index].value - 48
                    index += 1
                    digits += 1
                }
                guard let octal = Unicode.Scalar(value) else {
                    throw error(.syntax, "invalid escape in string", at: escapeStart)
                }
                result.append(octal)
            case "N":
                throw error(.unsupported, "unsupported \\N{…} escape in string", at: escapeStart)
            default:
                result.append("\\")
                result.append(escaped)
            }
        }
        throw error(.syntax, "unterminated string", at: offset)
    }

    /// Jinja's number syntax: decimal integers with `_` separators, `0b`/`0o`/`0x` integers, and floats
    /// with a fraction and/or exponent.
    private func lexNumber(from offset: Int) throws(ChatTemplateError) -> (JinjaToken.Kind, Int) {
        func digitRun(from start: Int, allowed: (Unicode.Scalar) -> Bool) -> Int {
            // Digits with single underscores between them.
            var index = start
            guard index < scalars.count, allowed(scalars[index]) else { return start }
            index += 1
            while index < scalars.count {
                if allowed(scalars[index]) {
                    index += 1
                } else if scalars[index] == "_", index + 1 < scalars.count, allowed(scalars[index + 1]) {
                    index += 2
                } else {
                    break
                }
            }
            return index
        }
        let isDecimal: (Unicode.Scalar) -> Bool = { ("0"..."9").contains($0) }
        if scalars[offset] == "0", offset + 1 < scalars.count {
            let marker = scalars[offset + 1]
            let radix: Int? =
                marker == "x" || marker == "X"
                ? 16 : marker == "o" || marker == "O" ? 8 : marker == "b" || marker == "B" ? 2 : nil
            if let radix {
                var end = offset + 2
                if end < scalars.count, scalars[end] == "_" { end += 1 }
                let digitsEnd = digitRun(from: end) { Int(String($0), radix: radix) != nil }
                if digitsEnd > end {
                    let digits = String(scalars: scalars[end..<digitsEnd]).replacingUnderscores()
                    guard let value = Int(digits, radix: radix) else {
                        throw error(.invalidOperation, "integer literal out of range", at: offset)
                    }
                    return (.integer(value), digitsEnd)
                }
            }
        }
        let integerEnd = digitRun(from: offset, allowed: isDecimal)
        var end = integerEnd
        var isFloat = false
        if end + 1 < scalars.count, scalars[end] == ".", isDecimal(scalars[end + 1]) {
            end = digitRun(from: end + 1, allowed: isDecimal)
            isFloat = true
        }
        if end < scalars.count, scalars[end] == "e" || scalars[end] == "E" {
            var exponentStart = end + 1
            if exponentStart < scalars.count, scalars[exponentStart] == "+" || scalars[exponentStart] == "-" {
                exponentStart += 1
            }
            let exponentEnd = digitRun(from: exponentStart, allowed: isDecimal)
            if exponentEnd > exponentStart {
                end = exponentEnd
                isFloat = true
            }
        }
        let text = String(scalars: scalars[offset..<end]).replacingUnderscores()
        if isFloat {
            guard let value = Double(text) else { throw error(.syntax, "invalid number", at: offset) }
            return (.float(value), end)
        }
        // Jinja reads `0123` as `0` followed by `123`; only zeros may follow a leading zero.
        if scalars[offset] == "0" {
            let zerosEnd = digitRun(from: offset) { $0 == "0" }
            return (.integer(0), zerosEnd)
        }
        guard let value = Int(text) else { throw error(.invalidOperation, "integer literal out of range", at: offset) }
        return (.integer(value), end)
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(scalars: unicodeScalars.filter { $0 != "_" })
    }
}
