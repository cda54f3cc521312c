// transformers' `tojson` filter: Python's `json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False)`, not Jinja's HTML-escaping built-in.

import JSONText

extension JinjaInterpreter {
    func json(
        _ value: JinjaRuntimeValue, ensureASCII: Bool, indent: JinjaRuntimeValue?, separators: JinjaRuntimeValue?,
        sortKeys: Bool, at location: JinjaLocation
    ) throws(ChatTemplateError) -> String {
        var indentUnit: String? = nil
        switch indent {
        case nil, .none?: break
        case .string(let unit)?: indentUnit = unit
        case let other?:
            indentUnit = String(repeating: " ", count: max(0, try requireInteger(other, "indent", at: location)))
        }
        var itemSeparator = indentUnit == nil ? ", " : ","
        var keySeparator = ": "
        if let separators, !isNone(separators) {
            let parts = try iterate(separators, at: location)
            guard parts.count == 2 else {
                throw ChatTemplateError(.invalidOperation, "separators must be a pair of strings", at: location)
            }
            itemSeparator = try requireString(parts[0], "item separator", at: location)
            keySeparator = try requireString(parts[1], "key separator", at: location)
        }
        let style = JSONStyle(
            ensureASCII: ensureASCII, indent: indentUnit, itemSeparator: itemSeparator, keySeparator: keySeparator,
            sortKeys: sortKeys)
        var output = ""
        try encode(value, style, level: 0, into: &output, at: location)
        return output
    }

    private struct JSONStyle {
        let ensureASCII: Bool
        let indent: String?
        let itemSeparator: String
        let keySeparator: String
        let sortKeys: Bool
    }

    private func encode(
        _ value: JinjaRuntimeValue, _ style: JSONStyle, level: Int, into output: inout String,
        at location: JinjaLocation
    ) throws(ChatTemplateError) {
        if level > Self.maximumValueDepth {
            throw ChatTemplateError(.limitExceeded, "values nested deeper than \(Self.maximumValueDepth)", at: location)
        }
        try charge(1, at: location)
        if output.utf8.count > limits.maximumOutputLength {
            throw ChatTemplateError(
                .limitExceeded, "JSON longer than \(limits.maximumOutputLength) bytes", at: location)
        }
        switch value {
        case .none: output += "null"
        case .boolean(let flag): output += flag ? "true" : "false"
        case .integer(let integer): output += String(integer)
        case .float(let number): output += jsonNumber(number)
        case .string(let string): appendJSONString(string, ensureASCII: style.ensureASCII, to: &output)
        case .list(let items), .tuple(let items):
            try encodeContainer(items.count, open: "[", close: "]", style, level: level, into: &output) {
                (index, output) throws(ChatTemplateError) in
                try encode(items[index], style, level: level + 1, into: &output, at: location)
            }
        case .dictionary(let dictionary):
            var pairs = Array(dictionary.pairs)
            if style.sortKeys && pairs.count > 1 { pairs = try sortedByKey(pairs, at: location) }
            var entries: [(key: String, value: JinjaRuntimeValue)] = []
            for (key, item) in pairs { entries.append((try jsonKey(key, at: location), item)) }
            try encodeContainer(entries.count, open: "{", close: "}", style, level: level, into: &output) {
                (index, output) throws(ChatTemplateError) in
                appendJSONString(entries[index].key, ensureASCII: style.ensureASCII, to: &output)
                output += style.keySeparator
                try encode(entries[index].value, style, level: level + 1, into: &output, at: location)
            }
        default:
            throw ChatTemplateError(
                .invalidOperation, "Object of type \(value.typeName) is not JSON serializable", at: location)
        }
    }

    private func encodeContainer(
        _ count: Int, open: String, close: String, _ style: JSONStyle, level: Int, into output: inout String,
        element: (Int, inout String) throws(ChatTemplateError) -> Void
    ) throws(ChatTemplateError) {
        guard count > 0 else {
            output += open + close
            return
        }
        output += open
        let newline = style.indent.map { "\n" + String(repeating: $0, count: level + 1) }
        if let newline { output += newline }
        for index in 0..<count {
            if index > 0 { output += style.itemSeparator + (newline ?? "") }
            try element(index, &output)
        }
        if let indent = style.indent { output += "\n" + String(repeating: indent, count: level) }
        output += close
    }

    /// Python's `sort_keys`: sorts the original keys (numbers numerically, strings by code point) and
    /// fails, as Python does, when they are not comparable.
    private func sortedByKey(
        _ pairs: [(JinjaRuntimeValue, JinjaRuntimeValue)], at location: JinjaLocation
    ) throws(ChatTemplateError) -> [(JinjaRuntimeValue, JinjaRuntimeValue)] {
        let keys = pairs.map(\.0)
        if keys.allSatisfy({ if case .string = $0 { return true } else { return false } }) {
            return pairs.sorted { lhs, rhs in
                guard case .string(let a) = lhs.0, case .string(let b) = rhs.0 else { return false }
                return a.pythonLess(b)
            }
        }
        let numbers = keys.compactMap { key -> Double? in
            switch key {
            case .integer(let value): return Double(value)
            case .float(let value): return value
            case .boolean(let value): return value ? 1 : 0
            default: return nil
            }
        }
        guard numbers.count == keys.count else {
            throw ChatTemplateError(
                .invalidOperation, "sort_keys needs keys of one comparable type (all strings or all numbers)",
                at: location)
        }
        return zip(numbers, pairs).sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Python's conversion of dict keys: strings as they are; numbers, booleans and None as their JSON.
    private func jsonKey(_ key: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) -> String {
        switch key {
        case .string(let string): return string
        case .integer(let integer): return String(integer)
        case .float(let number): return jsonNumber(number)
        case .boolean(let flag): return flag ? "true" : "false"
        case .none: return "null"
        default:
            throw ChatTemplateError(
                .invalidOperation, "keys must be str, int, float, bool or None, not \(key.typeName)", at: location)
        }
    }

    private func jsonNumber(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return pythonFloatRepresentation(number)
    }

    /// Python's JSON string escaping (JSONText's one escaper in its Python style).
    private func appendJSONString(_ string: String, ensureASCII: Bool, to output: inout String) {
        JSONWriter.appendString(string, to: &output, style: .python(ensureASCII: ensureASCII))
    }
}
