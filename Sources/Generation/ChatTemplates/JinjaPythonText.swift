// Python's `str` semantics, which Jinja inherits: strings are sequences of code points (Unicode
// scalars here, never grapheme clusters), whitespace is `str.isspace()`, numbers print as `repr()`.

/// Python's `str.isspace()` for one scalar: bidirectional classes WS, B and S plus category Zs.
func isPythonWhitespace(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
        return true
    default:
        return false
    }
}

/// Python's `str.splitlines()` boundaries (`\r\n` is handled by the caller as one).
func isPythonLineBoundary(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x0A...0x0D, 0x1C...0x1E, 0x85, 0x2028, 0x2029: return true
    default: return false
    }
}

extension String {
    /// The string's Unicode scalars as an array, for Python-style indexing.
    var scalarArray: [Unicode.Scalar] { Array(unicodeScalars) }

    /// A string from scalars.
    init<S: Sequence>(scalars: S) where S.Element == Unicode.Scalar {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        self = String(view)
    }

    /// Python equality: code point by code point (Swift's `==` would equate canonically equivalent
    /// strings that Python keeps apart).
    func pythonEquals(_ other: String) -> Bool {
        unicodeScalars.elementsEqual(other.unicodeScalars)
    }

    /// Python ordering: lexicographic by code point.
    func pythonLess(_ other: String) -> Bool {
        unicodeScalars.lexicographicallyPrecedes(other.unicodeScalars) { $0.value < $1.value }
    }

    /// Python's `str.strip(chars)`, `lstrip`, `rstrip`; `characters == nil` strips whitespace.
    func pythonStrip(_ characters: String?, leading: Bool = true, trailing: Bool = true) -> String {
        let set = characters.map { Set($0.unicodeScalars) }
        let strips: (Unicode.Scalar) -> Bool = { scalar in set.map { $0.contains(scalar) } ?? isPythonWhitespace(scalar)
        }
        let scalars = scalarArray
        var start = 0
        var end = scalars.count
        if leading { while start < end, strips(scalars[start]) { start += 1 } }
        if trailing { while end > start, strips(scalars[end - 1]) { end -= 1 } }
        return String(scalars: scalars[start..<end])
    }

    /// Python's `str.split(sep, maxsplit)`; `separator == nil` splits on runs of whitespace.
    /// - Precondition: a non-nil separator is not empty (the caller reports Python's ValueError).
    func pythonSplit(_ separator: String?, maximumSplits: Int) -> [String] {
        let scalars = scalarArray
        var parts: [String] = []
        guard let separator else {
            var index = 0
            while true {
                while index < scalars.count, isPythonWhitespace(scalars[index]) { index += 1 }
                if index == scalars.count { break }
                if maximumSplits >= 0, parts.count == maximumSplits {
                    // The remainder keeps its trailing whitespace, as in Python.
                    parts.append(String(scalars: scalars[index...]))
                    break
                }
                let start = index
                while index < scalars.count, !isPythonWhitespace(scalars[index]) { index += 1 }
                parts.append(String(scalars: scalars[start..<index]))
            }
            return parts
        }
        let needle = separator.scalarArray
        precondition(!needle.isEmpty, "empty separator")
        var start = 0
        var index = 0
        while index + needle.count <= scalars.count {
            if maximumSplits >= 0, parts.count == maximumSplits { break }
            if scalars[index..<index + needle.count].elementsEqual(needle) {
                parts.append(String(scalars: scalars[start..<index]))
                index += needle.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(String(scalars: scalars[start...]))
        return parts
    }

    /// Python's `str.rsplit(sep, maxsplit)`.
    func pythonReverseSplit(_ separator: String?, maximumSplits: Int) -> [String] {
        if maximumSplits < 0 { return pythonSplit(separator, maximumSplits: -1) }
        let reversedSeparator = separator.map { String(scalars: $0.unicodeScalars.reversed()) }
        let reversedSelf = String(scalars: unicodeScalars.reversed())
        return reversedSelf.pythonSplit(reversedSeparator, maximumSplits: maximumSplits)
            .map { String(scalars: $0.unicodeScalars.reversed()) }.reversed()
    }

    /// Python's `str.splitlines(keepends)`.
    func pythonSplitLines(keepingEnds: Bool = false) -> [String] {
        let scalars = scalarArray
        var lines: [String] = []
        var start = 0
        var index = 0
        while index < scalars.count {
            guard isPythonLineBoundary(scalars[index]) else {
                index += 1
                continue
            }
            var end = index + 1
            if scalars[index] == "\r", end < scalars.count, scalars[end] == "\n" { end += 1 }
            lines.append(String(scalars: scalars[start..<(keepingEnds ? end : index)]))
            start = end
            index = end
        }
        if start < scalars.count { lines.append(String(scalars: scalars[start...])) }
        return lines
    }

    /// Python's `str.replace(old, new, count)`.
    func pythonReplace(_ old: String, with new: String, count: Int) -> String {
        let scalars = scalarArray
        let needle = old.scalarArray
        let replacement = new.scalarArray
        var result: [Unicode.Scalar] = []
        var done = 0
        if needle.isEmpty {
            // Python inserts the replacement before every scalar and at the end.
            for scalar in scalars {
                if count < 0 || done < count {
                    result += replacement
                    done += 1
                }
                result.append(scalar)
            }
            if count < 0 || done < count { result += replacement }
            return String(scalars: result)
        }
        var index = 0
        while index < scalars.count {
            if count < 0 || done < count, index + needle.count <= scalars.count,
                scalars[index..<index + needle.count].elementsEqual(needle)
            {
                result += replacement
                index += needle.count
                done += 1
            } else {
                result.append(scalars[index])
                index += 1
            }
        }
        return String(scalars: result)
    }

    /// Python's `sub in string`. A UTF-8 match can only start on a scalar boundary, so searching bytes
    /// finds exactly the code point matches.
    func pythonContains(_ sub: String) -> Bool {
        var haystack = self
        var needle = sub
        return haystack.withUTF8 { haystackBytes in
            needle.withUTF8 { needleBytes in
                guard let first = needleBytes.first else { return true }
                guard needleBytes.count <= haystackBytes.count else { return false }
                var start = 0
                while start <= haystackBytes.count - needleBytes.count {
                    if haystackBytes[start] == first {
                        var matched = 1
                        while matched < needleBytes.count, haystackBytes[start + matched] == needleBytes[matched] {
                            matched += 1
                        }
                        if matched == needleBytes.count { return true }
                    }
                    start += 1
                }
                return false
            }
        }
    }

    /// Python's `str.find(sub, start, end)` and `rfind` on code point indices, or -1.
    func pythonFind(_ sub: String, start: Int?, end: Int?, fromEnd: Bool) -> Int {
        let scalars = scalarArray
        let needle = sub.scalarArray
        let (lower, upper) = pythonSliceBounds(count: scalars.count, start: start, end: end)
        guard upper - lower >= needle.count else { return -1 }
        let candidates = Array(lower...(upper - needle.count))
        for index in fromEnd ? candidates.reversed() : candidates
        where scalars[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return -1
    }

    /// Python's `str.count(sub)`: non-overlapping occurrences; an empty `sub` counts every gap.
    func pythonCount(_ sub: String) -> Int {
        let scalars = scalarArray
        let needle = sub.scalarArray
        if needle.isEmpty { return scalars.count + 1 }
        var found = 0
        var index = 0
        while index + needle.count <= scalars.count {
            if scalars[index..<index + needle.count].elementsEqual(needle) {
                found += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return found
    }

    /// Python's `str.capitalize()`: the first scalar in title case, the rest lower case.
    var pythonCapitalized: String {
        guard let first = unicodeScalars.first else { return self }
        return first.properties.titlecaseMapping + String(scalars: unicodeScalars.dropFirst()).lowercased()
    }

    /// Python's `str.title()`: title case after every uncased scalar, lower case after cased ones.
    var pythonTitled: String {
        var result = ""
        var previousIsCased = false
        for scalar in unicodeScalars {
            if previousIsCased {
                result += scalar.properties.lowercaseMapping
            } else {
                result += scalar.properties.titlecaseMapping
            }
            previousIsCased = scalar.isPythonCased
        }
        return result
    }

    /// Python's `repr(str)`: single quotes (double when only single quotes occur inside), backslash
    /// escapes for quotes, `\t \n \r`, and `\x`/`\u`/`\U` for what `str.isprintable()` rejects.
    var pythonRepresentation: String {
        let quote: Unicode.Scalar = unicodeScalars.contains("'") && !unicodeScalars.contains("\"") ? "\"" : "'"
        var result = String(quote)
        for scalar in unicodeScalars {
            switch scalar {
            case quote, "\\": result += "\\" + String(scalar)
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            default:
                if scalar.isPythonPrintable {
                    result.unicodeScalars.append(scalar)
                } else if scalar.value < 0x100 {
                    result += "\\x" + hexDigits(scalar.value, width: 2)
                } else if scalar.value < 0x10000 {
                    result += "\\u" + hexDigits(scalar.value, width: 4)
                } else {
                    result += "\\U" + hexDigits(scalar.value, width: 8)
                }
            }
        }
        result.unicodeScalars.append(quote)
        return result
    }
}

/// `value` in lower-case hexadecimal, zero-padded to `width`.
func hexDigits(_ value: UInt32, width: Int) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

extension Unicode.Scalar {
    /// Python's notion of a cased character: categories Lu, Ll and Lt.
    var isPythonCased: Bool {
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter: return true
        default: return false
        }
    }

    /// Python's `str.isprintable()` for one scalar: everything but categories Cc, Cf, Cs, Co, Cn, Zl, Zp
    /// and Zs other than the space.
    var isPythonPrintable: Bool {
        if self == " " { return true }
        switch properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
            .spaceSeparator:
            return false
        default:
            return true
        }
    }
}

/// The clamped `[start, end)` bounds Python uses for `s[start:end]` with a positive step, and for the
/// `start`/`end` arguments of `find`.
func pythonSliceBounds(count: Int, start: Int?, end: Int?) -> (Int, Int) {
    func clamp(_ index: Int?, _ defaultValue: Int) -> Int {
        guard var index else { return defaultValue }
        if index < 0 { index += count }
        return min(max(index, 0), count)
    }
    let lower = clamp(start, 0)
    return (lower, max(lower, clamp(end, count)))
}

/// The indices Python's `sequence[start:stop:step]` selects from a sequence of `count` elements.
/// - Precondition: `step != 0` (the caller reports Python's ValueError).
func pythonSliceIndices(count: Int, start: Int?, stop: Int?, step: Int?) -> [Int] {
    let step = step ?? 1
    precondition(step != 0, "slice step cannot be zero")
    if step > 0 {
        let (lower, upper) = pythonSliceBounds(count: count, start: start, end: stop)
        return Array(stride(from: lower, to: upper, by: step))
    }
    func clamp(_ index: Int?, _ defaultValue: Int) -> Int {
        guard var index else { return defaultValue }
        if index < 0 { index += count }
        return min(max(index, -1), count - 1)
    }
    let first = clamp(start, count - 1)
    let last = clamp(stop, -1)
    return first > last ? Array(stride(from: first, to: last, by: step)) : []
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation for decimal exponents
/// from -4 to 15 and scientific notation (`1e+16`, `1e-05`) outside that range.
func pythonFloatRepresentation(_ value: Double) -> String {
    if value.isNaN { return "nan" }
    if value.isInfinite { return value < 0 ? "-inf" : "inf" }
    if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
    // Swift's description already holds the shortest round-trip digits; only the layout differs.
    let text = "\(value.magnitude)"
    let parts = text.split(separator: "e", maxSplits: 1)
    let mantissa = parts[0]
    let shift = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
    let mantissaParts = mantissa.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    let integerDigits = String(mantissaParts[0])
    let fractionDigits = mantissaParts.count > 1 ? String(mantissaParts[1]) : ""
    var digits = Array(integerDigits + fractionDigits)
    var pointPosition = integerDigits.count + shift
    while let first = digits.first, first == "0" {
        digits.removeFirst()
        pointPosition -= 1
    }
    while let last = digits.last, last == "0" { digits.removeLast() }
    let exponent = pointPosition - 1
    let sign = value < 0 ? "-" : ""
    if exponent >= -4 && exponent < 16 {
        if exponent >= 0 {
            let integerCount = exponent + 1
            let integerPart =
                String(digits.prefix(integerCount)) + String(repeating: "0", count: max(0, integerCount - digits.count))
            let fraction = digits.count > integerCount ? String(digits[integerCount...]) : "0"
            return sign + integerPart + "." + fraction
        }
        return sign + "0." + String(repeating: "0", count: -exponent - 1) + String(digits)
    }
    let rest = digits.count > 1 ? "." + String(digits.dropFirst()) : ""
    let exponentDigits = String(abs(exponent))
    return sign + String(digits[0]) + rest + "e" + (exponent < 0 ? "-" : "+")
        + (exponentDigits.count < 2 ? "0" + exponentDigits : exponentDigits)
}
