import Foundation

extension JinjaInterpreter {
    /// Binds Python-style arguments to `parameters` in order; nil where an argument was not given.
    func bind(
        _ parameters: [String], _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)], callee: String,
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> [JinjaRuntimeValue?] {
        guard positional.count <= parameters.count else {
            throw ChatTemplateError(
                .invalidOperation, "\(callee) takes at most \(parameters.count) arguments (\(positional.count) given)",
                at: location)
        }
        var bound = [JinjaRuntimeValue?](repeating: nil, count: parameters.count)
        for (index, value) in positional.enumerated() { bound[index] = value }
        for (name, value) in keywords {
            guard let index = parameters.firstIndex(of: name) else {
                throw ChatTemplateError(
                    .invalidOperation, "\(callee) got an unexpected keyword argument '\(name)'", at: location)
            }
            guard bound[index] == nil else {
                throw ChatTemplateError(.invalidOperation, "\(callee) got multiple values for '\(name)'", at: location)
            }
            bound[index] = value
        }
        return bound
    }

    func requireString(_ value: JinjaRuntimeValue, _ role: String, at location: JinjaLocation) throws(ChatTemplateError)
        -> String
    {
        switch value {
        case .string(let string): return string
        case .undefined(let reason): throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw ChatTemplateError(.invalidOperation, "\(role) must be a string, not \(value.typeName)", at: location)
        }
    }

    func requireInteger(_ value: JinjaRuntimeValue, _ role: String, at location: JinjaLocation)
        throws(ChatTemplateError) -> Int
    {
        switch value {
        case .integer(let integer): return integer
        case .boolean(let flag): return flag ? 1 : 0
        case .undefined(let reason): throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw ChatTemplateError(
                .invalidOperation, "\(role) must be an integer, not \(value.typeName)", at: location)
        }
    }

    // MARK: - Filters

    func applyFilter(
        _ name: String, to value: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)],
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let callee = "filter '\(name)'"
        func arguments(_ parameters: String...) throws(ChatTemplateError) -> [JinjaRuntimeValue?] {
            try bind(parameters, positional, keywords, callee: callee, at: location)
        }
        switch name {
        case "abs":
            _ = try arguments()
            switch value {
            case .integer(let x):
                guard x != Int.min else { throw ChatTemplateError(.invalidOperation, "integer overflow", at: location) }
                return .integer(abs(x))
            case .boolean(let flag): return .integer(flag ? 1 : 0)
            case .float(let x): return .float(abs(x))
            default:
                throw ChatTemplateError(
                    .invalidOperation, "bad operand type for abs(): '\(value.typeName)'", at: location)
            }
        case "attr":
            let bound = try arguments("name")
            let attributeName = try requireString(
                bound[0] ?? .undefined("missing attribute name"), "attribute name", at: location)
            if case .dictionary = value, !JinjaBuiltins.dictionaryAttributes.contains(attributeName) {
                return .undefined("'dict object' has no attribute '\(attributeName)'")
            }
            return try attribute(attributeName, of: value, at: location)
        case "capitalize":
            _ = try arguments()
            return try checkedString(try printed(value, at: location).pythonCapitalized, at: location)
        case "count", "length":
            _ = try arguments()
            if case .string = value { try chargeSize(of: value, at: location) }
            return .integer(try length(of: value, at: location))
        case "d", "default":
            let bound = try arguments("default_value", "boolean")
            let boolean = bound[1]?.isTruthy ?? false
            if value.isUndefined || (boolean && !value.isTruthy) { return bound[0] ?? .string("") }
            return value
        case "e", "escape":
            _ = try arguments()
            return try checkedString(htmlEscaped(try printed(value, at: location)), at: location)
        case "first":
            _ = try arguments()
            if case .iterator(let iterator) = value {
                return iterator.next() ?? .undefined("No first item, sequence was empty.")
            }
            return try iterate(value, at: location).first ?? .undefined("No first item, sequence was empty.")
        case "last":
            _ = try arguments()
            switch value {
            case .undefined, .string, .list, .tuple, .dictionary:
                return try iterate(value, at: location).last ?? .undefined("No last item, sequence was empty.")
            default:
                throw ChatTemplateError(.invalidOperation, "'\(value.typeName)' object is not reversible", at: location)
            }
        case "float":
            let bound = try arguments("default")
            if case .undefined(let reason) = value { throw ChatTemplateError(.undefinedValue, reason, at: location) }
            return pythonFloat(value).map(JinjaRuntimeValue.float) ?? bound[0] ?? .float(0)
        case "int":
            let bound = try arguments("default", "base")
            let base = try requireInteger(bound[1] ?? .integer(10), "base", at: location)
            if case .undefined(let reason) = value { throw ChatTemplateError(.undefinedValue, reason, at: location) }
            return try pythonInteger(value, base: base, at: location).map(JinjaRuntimeValue.integer) ?? bound[0]
                ?? .integer(0)
        case "indent":
            let bound = try arguments("width", "first", "blank")
            return try indent(
                value, width: bound[0] ?? .integer(4), first: bound[1]?.isTruthy ?? false,
                blank: bound[2]?.isTruthy ?? false, at: location)
        case "items":
            _ = try arguments()
            switch value {
            case .undefined: return .iterator(JinjaIterator([]))
            case .dictionary(let dictionary):
                return .iterator(JinjaIterator(dictionary.pairs.map { .tuple([$0, $1]) }))
            default:
                throw ChatTemplateError(.invalidOperation, "can only get item pairs from a mapping", at: location)
            }
        case "join":
            let bound = try arguments("d", "attribute")
            var items = try iterate(value, at: location)
            if let attribute = bound[1], !(attribute.isUndefined), !isNone(attribute) {
                var mapped: [JinjaRuntimeValue] = []
                for item in items { mapped.append(try attributeGetter(attribute, default: nil, at: location)(item)) }
                items = mapped
            }
            let separator = try printed(bound[0] ?? .string(""), at: location)
            var parts: [String] = []
            for item in items { parts.append(try printed(item, at: location)) }
            return try checkedString(parts.joined(separator: separator), at: location)
        case "list":
            _ = try arguments()
            return .list(try iterate(value, at: location))
        case "lower":
            _ = try arguments()
            return try checkedString(try printed(value, at: location).lowercased(), at: location)
        case "upper":
            _ = try arguments()
            return try checkedString(try printed(value, at: location).uppercased(), at: location)
        case "title":
            _ = try arguments()
            return try checkedString(jinjaTitle(try printed(value, at: location)), at: location)
        case "map":
            return try map(value, positional, keywords, at: location)
        case "select", "reject", "selectattr", "rejectattr":
            return try select(
                value, positional, keywords, keeping: name.hasPrefix("select"), byAttribute: name.hasSuffix("attr"),
                at: location)
        case "replace":
            let bound = try arguments("old", "new", "count")
            var count = -1
            if let given = bound[2], !isNone(given) { count = try requireInteger(given, "count", at: location) }
            let old = try printed(bound[0] ?? .undefined("missing 'old'"), at: location)
            let new = try printed(bound[1] ?? .undefined("missing 'new'"), at: location)
            return try checkedString(
                try printed(value, at: location).pythonReplace(old, with: new, count: count), at: location)
        case "reverse":
            _ = try arguments()
            switch value {
            case .string(let string):
                return try checkedString(String(scalars: string.unicodeScalars.reversed()), at: location)
            case .list(let items): return .iterator(JinjaIterator(items.reversed(), typeName: "list_reverseiterator"))
            case .tuple(let items): return .iterator(JinjaIterator(items.reversed(), typeName: "reversed"))
            case .dictionary(let dictionary):
                return .iterator(JinjaIterator(dictionary.keys.reversed(), typeName: "dict_reversekeyiterator"))
            case .undefined: return .iterator(JinjaIterator([], typeName: "reversed"))
            case .iterator(let iterator): return .list(iterator.drain().reversed())
            default: throw ChatTemplateError(.invalidOperation, "argument must be iterable", at: location)
            }
        case "round":
            let bound = try arguments("precision", "method")
            return try round(
                value, precision: bound[0] ?? .integer(0), method: bound[1] ?? .string("common"), at: location)
        case "safe", "string":
            _ = try arguments()
            return try checkedString(try printed(value, at: location), at: location)
        case "sum":
            let bound = try arguments("attribute", "start")
            var items = try iterate(value, at: location)
            if let attribute = bound[0], !isNone(attribute) {
                var mapped: [JinjaRuntimeValue] = []
                for item in items { mapped.append(try attributeGetter(attribute, default: nil, at: location)(item)) }
                items = mapped
            }
            var total = bound[1] ?? .integer(0)
            for item in items { total = try binary(.add, total, item, at: location) }
            return total
        case "tojson":
            let bound = try arguments("ensure_ascii", "indent", "separators", "sort_keys")
            return try checkedString(
                try json(
                    value, ensureASCII: bound[0]?.isTruthy ?? false, indent: bound[1], separators: bound[2],
                    sortKeys: bound[3]?.isTruthy ?? false, at: location), at: location)
        case "trim":
            let bound = try arguments("chars")
            var characters: String? = nil
            if let chars = bound[0], !isNone(chars) { characters = try requireString(chars, "chars", at: location) }
            return try checkedString(try printed(value, at: location).pythonStrip(characters), at: location)
        default:
            throw ChatTemplateError(.unsupported, "unsupported filter '\(name)'", at: location)
        }
    }

    func isNone(_ value: JinjaRuntimeValue) -> Bool {
        if case .none = value { return true }
        return false
    }

    /// Python's `len(value)`; undefined has length 0.
    func length(of value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) -> Int {
        switch value {
        case .undefined: return 0
        case .string(let string): return string.unicodeScalars.count
        case .list(let items), .tuple(let items): return items.count
        case .dictionary(let dictionary): return dictionary.count
        case .loop(let context): return context.items.count
        default:
            throw ChatTemplateError(.invalidOperation, "object of type '\(value.typeName)' has no len()", at: location)
        }
    }

    /// Jinja's `make_attrgetter`: `"a.b.0"` looks up `item["a"]["b"][0]`; `default` replaces undefined.
    func attributeGetter(
        _ attribute: JinjaRuntimeValue, default defaultValue: JinjaRuntimeValue?, at location: JinjaLocation
    ) -> (JinjaRuntimeValue) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let parts: [JinjaRuntimeValue]
        if case .string(let path) = attribute {
            parts = path.split(separator: ".", omittingEmptySubsequences: false).map { part in
                part.allSatisfy(\.isASCII) && !part.isEmpty && part.allSatisfy(\.isNumber)
                    ? Int(part).map(JinjaRuntimeValue.integer) ?? .string(String(part)) : .string(String(part))
            }
        } else {
            parts = [attribute]
        }
        return { (item: JinjaRuntimeValue) throws(ChatTemplateError) -> JinjaRuntimeValue in
            var current = item
            for part in parts {
                current = try self.item(part, of: current, at: location)
                if let defaultValue, current.isUndefined { current = defaultValue }
            }
            return current
        }
    }

    private func map(
        _ value: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)], at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let items = try iterate(value, at: location)
        var results: [JinjaRuntimeValue] = []
        if positional.isEmpty, let attribute = keywords.first(where: { $0.name == "attribute" })?.value {
            var defaultValue: JinjaRuntimeValue? = nil
            for (name, keyword) in keywords where name != "attribute" {
                guard name == "default" else {
                    throw ChatTemplateError(
                        .invalidOperation, "unexpected keyword argument '\(name)' to map", at: location)
                }
                defaultValue = keyword
            }
            let getter = attributeGetter(attribute, default: defaultValue, at: location)
            for item in items { results.append(try getter(item)) }
            return .iterator(JinjaIterator(results))
        }
        guard let first = positional.first else {
            throw ChatTemplateError(.invalidOperation, "map requires a filter name", at: location)
        }
        let filterName = try requireString(first, "map's filter name", at: location)
        guard JinjaBuiltins.filters.contains(filterName) else {
            throw ChatTemplateError(.unsupported, "unsupported filter '\(filterName)' in map", at: location)
        }
        let rest = Array(positional.dropFirst())
        for item in items {
            try charge(1, at: location)
            results.append(try applyFilter(filterName, to: item, rest, keywords, at: location))
        }
        return .iterator(JinjaIterator(results))
    }

    /// `select`/`reject` (by a test on the item) and `selectattr`/`rejectattr` (by a test on an
    /// attribute); without a test name, by truthiness.
    private func select(
        _ value: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)], keeping: Bool,
        byAttribute: Bool, at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        var arguments = positional
        var getter: ((JinjaRuntimeValue) throws(ChatTemplateError) -> JinjaRuntimeValue)? = nil
        if byAttribute {
            guard !arguments.isEmpty else {
                throw ChatTemplateError(.invalidOperation, "missing parameter for attribute name", at: location)
            }
            getter = attributeGetter(arguments.removeFirst(), default: nil, at: location)
        }
        var testName: String? = nil
        if !arguments.isEmpty { testName = try requireString(arguments.removeFirst(), "test name", at: location) }
        if let testName, !JinjaBuiltins.tests.contains(testName) {
            throw ChatTemplateError(.unsupported, "unsupported test '\(testName)'", at: location)
        }
        var results: [JinjaRuntimeValue] = []
        for item in try iterate(value, at: location) {
            try charge(1, at: location)
            let subject = try getter?(item) ?? item
            let passes: Bool
            if let testName {
                passes = try applyTest(testName, to: subject, arguments, keywords, at: location)
            } else {
                passes = subject.isTruthy
            }
            if passes == keeping { results.append(item) }
        }
        return .iterator(JinjaIterator(results))
    }

    private func htmlEscaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&#34;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Jinja's `title` filter: upper-cases the first character after `-`, whitespace, `(`, `{`, `[`
    /// or `<` and lower-cases the rest (not Python's `str.title()`).
    private func jinjaTitle(_ text: String) -> String {
        func isBoundary(_ scalar: Unicode.Scalar) -> Bool {
            isPythonWhitespace(scalar) || "-({[<".unicodeScalars.contains(scalar)
        }
        var result = ""
        var runStart = true
        var previousWasBoundary: Bool? = nil
        for scalar in text.unicodeScalars {
            let boundary = isBoundary(scalar)
            if previousWasBoundary != boundary { runStart = true }
            previousWasBoundary = boundary
            result += runStart ? String(scalar).uppercased() : String(scalar).lowercased()
            runStart = false
        }
        return result
    }

    /// Python's `float(value)`, or nil where Python raises TypeError or ValueError.
    func pythonFloat(_ value: JinjaRuntimeValue) -> Double? {
        switch value {
        case .boolean(let flag): return flag ? 1 : 0
        case .integer(let integer): return Double(integer)
        case .float(let number): return number
        case .string(let string): return parsePythonFloat(string)
        default: return nil
        }
    }

    /// Python's `float(str)`: optional sign, digits with single `_` between them, an optional
    /// fraction and exponent, or `inf`/`infinity`/`nan`; surrounding whitespace allowed.
    private func parsePythonFloat(_ string: String) -> Double? {
        let scalars = string.pythonStrip(nil).scalarArray
        var index = 0
        var text = ""
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
        func sign() {
            if index < scalars.count, scalars[index] == "+" || scalars[index] == "-" {
                text.unicodeScalars.append(scalars[index])
                index += 1
            }
        }
        func digits() -> Bool {
            var count = 0
            while index < scalars.count {
                if isDigit(scalars[index]) {
                    text.unicodeScalars.append(scalars[index])
                    count += 1
                    index += 1
                } else if scalars[index] == "_", count > 0, index + 1 < scalars.count, isDigit(scalars[index + 1]) {
                    index += 1
                } else {
                    break
                }
            }
            return count > 0
        }
        sign()
        switch String(scalars: scalars[index...]).lowercased() {
        case "inf", "infinity": return text == "-" ? -.infinity : .infinity
        case "nan": return .nan
        default: break
        }
        var hasDigits = digits()
        if index < scalars.count, scalars[index] == "." {
            text += "."
            index += 1
            hasDigits = digits() || hasDigits
        }
        guard hasDigits else { return nil }
        if index < scalars.count, scalars[index] == "e" || scalars[index] == "E" {
            text += "e"
            index += 1
            sign()
            guard digits() else { return nil }
        }
        guard index == scalars.count else { return nil }
        return Double(text)
    }

    /// Jinja's `int` filter conversion: `int(value)` (strings in `base`), falling back to
    /// `int(float(value))`; nil where both fail.
    private func pythonInteger(_ value: JinjaRuntimeValue, base: Int, at location: JinjaLocation)
        throws(ChatTemplateError) -> Int?
    {
        switch value {
        case .boolean(let flag): return flag ? 1 : 0
        case .integer(let integer): return integer
        case .float(let number): return integerPart(number)
        case .string(let string):
            if let parsed = parsePythonInteger(string, base: base) { return parsed }
            return parsePythonFloat(string).flatMap(integerPart)
        default: return nil
        }
    }

    private func integerPart(_ number: Double) -> Int? {
        guard number.isFinite, number > -9_223_372_036_854_775_809.0, number < 9_223_372_036_854_775_808.0 else {
            return nil
        }
        return Int(number.rounded(.towardZero))
    }

    private func parsePythonInteger(_ string: String, base requestedBase: Int) -> Int? {
        var text = Substring(string.pythonStrip(nil))
        var negative = false
        if let first = text.first, first == "+" || first == "-" {
            negative = first == "-"
            text = text.dropFirst()
        }
        var base = requestedBase
        let lower = text.lowercased()
        let prefixes: [(String, Int)] = [("0x", 16), ("0o", 8), ("0b", 2)]
        for (prefix, prefixBase) in prefixes where lower.hasPrefix(prefix) && (base == prefixBase || base == 0) {
            base = prefixBase
            text = text.dropFirst(2)
            if text.first == "_" { text = text.dropFirst() }
        }
        if base == 0 { base = 10 }
        guard (2...36).contains(base), !text.isEmpty, text.first != "_", text.last != "_", !text.contains("__")
        else { return nil }
        guard let magnitude = Int(text.filter { $0 != "_" }, radix: base) else { return nil }
        return negative ? -magnitude : magnitude
    }

    private func indent(
        _ value: JinjaRuntimeValue, width: JinjaRuntimeValue, first: Bool, blank: Bool, at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let text: String
        switch value {
        case .string(let string): text = string
        case .undefined(let reason): throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw ChatTemplateError(.invalidOperation, "indent needs a string, not \(value.typeName)", at: location)
        }
        let indention: String
        if case .string(let string) = width {
            indention = string
        } else {
            indention = String(repeating: " ", count: max(0, try requireInteger(width, "width", at: location)))
        }
        let lines = (text + "\n").pythonSplitLines()
        var result: String
        if blank {
            result = lines.joined(separator: "\n" + indention)
        } else {
            result = lines.first ?? ""
            let rest = lines.dropFirst()
            if !rest.isEmpty {
                result += "\n" + rest.map { $0.isEmpty ? $0 : indention + $0 }.joined(separator: "\n")
            }
        }
        if first { result = indention + result }
        return try checkedString(result, at: location)
    }

    private func round(
        _ value: JinjaRuntimeValue, precision: JinjaRuntimeValue, method: JinjaRuntimeValue, at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let digits = try requireInteger(precision, "precision", at: location)
        let methodName = try requireString(method, "method", at: location)
        let number: Double
        switch value {
        case .integer(let integer):
            if methodName == "common" && digits >= 0 { return .integer(integer) }
            number = Double(integer)
        case .boolean(let flag):
            if methodName == "common" && digits >= 0 { return .integer(flag ? 1 : 0) }
            number = flag ? 1 : 0
        case .float(let float):
            number = float
        case .undefined(let reason):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw ChatTemplateError(.invalidOperation, "type \(value.typeName) doesn't define __round__", at: location)
        }
        switch methodName {
        case "common":
            guard number.isFinite else { return .float(number) }
            if digits >= 0 {
                // Python rounds the exact binary value half-to-even, as printf's %.*f does.
                let text = String(format: "%.\(min(digits, 340))f", number)
                let rounded = Double(text) ?? number
                if case .integer = value { return .integer(Int(rounded)) }
                return .float(rounded)
            }
            let scale = Foundation.pow(10, Double(-digits))
            let rounded = (number / scale).rounded(.toNearestOrEven) * scale
            if case .float = value { return .float(rounded) }
            return integerPart(rounded).map(JinjaRuntimeValue.integer) ?? .float(rounded)
        case "floor", "ceil":
            let scale = Foundation.pow(10, Double(digits))
            let scaled = number * scale
            guard scaled.isFinite else {
                throw ChatTemplateError(.invalidOperation, "cannot convert float infinity to integer", at: location)
            }
            return .float((methodName == "floor" ? scaled.rounded(.down) : scaled.rounded(.up)) / scale)
        default:
            throw ChatTemplateError(.invalidOperation, "method must be common, ceil or floor", at: location)
        }
    }
}
