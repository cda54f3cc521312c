// Calls: the global functions (`range`, `namespace`, `dict`, transformers' `raise_exception` and
// `strftime_now`), `loop.cycle`, and the non-mutating methods of str, dict, list and tuple.

import Foundation

extension JinjaInterpreter {
    func call(
        _ function: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)], at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        switch function {
        case .function(.global(let name)):
            return try callGlobal(name, positional, keywords, at: location)
        case .function(.method(let receiver, let name)):
            return try callMethod(name, on: receiver, positional, keywords, at: location)
        case .function(.macro(let closure)):
            return try callMacro(closure, positional, keywords, at: location)
        case .function(.loopCycle(let context)):
            guard keywords.isEmpty else {
                throw ChatTemplateError(.invalidOperation, "loop.cycle takes no keyword arguments", at: location)
            }
            guard !positional.isEmpty else {
                throw ChatTemplateError(.invalidOperation, "no items for cycling given", at: location)
            }
            return positional[context.index0 % positional.count]
        case .undefined(let reason):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw ChatTemplateError(.invalidOperation, "'\(function.typeName)' object is not callable", at: location)
        }
    }

    // MARK: - Globals

    private func callGlobal(
        _ name: String, _ positional: [JinjaRuntimeValue], _ keywords: [(name: String, value: JinjaRuntimeValue)],
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        switch name {
        case "range":
            guard keywords.isEmpty, (1...3).contains(positional.count) else {
                throw ChatTemplateError(.invalidOperation, "range expects 1 to 3 integer arguments", at: location)
            }
            var bounds: [Int] = []
            for argument in positional { bounds.append(try requireInteger(argument, "range argument", at: location)) }
            let (start, stop, step) =
                bounds.count == 1 ? (0, bounds[0], 1) : (bounds[0], bounds[1], bounds.count == 3 ? bounds[2] : 1)
            guard step != 0 else {
                throw ChatTemplateError(.invalidOperation, "range() arg 3 must not be zero", at: location)
            }
            let span = step > 0 ? Double(stop) - Double(start) : Double(start) - Double(stop)
            let count = span <= 0 ? 0 : Int((span / Double(abs(step))).rounded(.up))
            if count > Self.maximumRangeLength {
                throw ChatTemplateError(
                    .limitExceeded, "range longer than the sandbox's \(Self.maximumRangeLength) items", at: location)
            }
            try checkListLength(count, at: location)
            return .list(stride(from: start, to: stop, by: step).map { .integer($0) })
        case "namespace", "dict":
            let dictionary = try dictionaryArgument(positional, keywords, callee: name, at: location)
            guard name == "namespace" else { return .dictionary(dictionary) }
            let namespace = JinjaNamespace()
            namespace.attributes = dictionary
            return .namespace(namespace)
        case "raise_exception":
            let bound = try bind(["message"], positional, keywords, callee: "raise_exception", at: location)
            throw ChatTemplateError(.raisedByTemplate, try printed(bound[0] ?? .none, at: location), at: location)
        case "strftime_now":
            let bound = try bind(["format"], positional, keywords, callee: "strftime_now", at: location)
            let format = try requireString(bound[0] ?? .undefined("missing format"), "format", at: location)
            return .string(try strftime(format, at: location))
        default:
            throw ChatTemplateError(.unsupported, "unsupported function '\(name)'", at: location)
        }
    }

    /// Python's `dict(mapping_or_pairs, **keywords)`.
    private func dictionaryArgument(
        _ positional: [JinjaRuntimeValue], _ keywords: [(name: String, value: JinjaRuntimeValue)], callee: String,
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeDictionary {
        guard positional.count <= 1 else {
            throw ChatTemplateError(.invalidOperation, "\(callee) expected at most 1 positional argument", at: location)
        }
        var dictionary = JinjaRuntimeDictionary()
        if let source = positional.first {
            if case .dictionary(let given) = source {
                dictionary = given
            } else {
                for pair in try iterate(source, at: location) {
                    let items = try iterate(pair, at: location)
                    guard items.count == 2 else {
                        throw ChatTemplateError(.invalidOperation, "\(callee) needs key-value pairs", at: location)
                    }
                    try requireHashable(items[0], at: location)
                    dictionary.set(items[0], items[1])
                }
            }
        }
        for (name, value) in keywords { dictionary.setString(name, value) }
        return dictionary
    }

    // MARK: - Methods

    private func callMethod(
        _ name: String, on receiver: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)],
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let callee = "\(receiver.typeName).\(name)()"
        func arguments(_ parameters: String...) throws(ChatTemplateError) -> [JinjaRuntimeValue?] {
            try bind(parameters, positional, keywords, callee: callee, at: location)
        }
        func optionalString(_ value: JinjaRuntimeValue?) throws(ChatTemplateError) -> String? {
            guard let value, !isNone(value) else { return nil }
            return try requireString(value, "argument of \(callee)", at: location)
        }
        func optionalInteger(_ value: JinjaRuntimeValue?) throws(ChatTemplateError) -> Int? {
            guard let value, !isNone(value) else { return nil }
            return try requireInteger(value, "argument of \(callee)", at: location)
        }
        // Every string method scans its receiver; dict and list methods scan their items.
        try chargeSize(of: receiver, at: location)
        switch receiver {
        case .string(let string):
            switch name {
            case "strip", "lstrip", "rstrip":
                let characters = try optionalString(try arguments("chars")[0])
                return try checkedString(
                    string.pythonStrip(characters, leading: name != "rstrip", trailing: name != "lstrip"), at: location)
            case "split", "rsplit":
                let bound = try arguments("sep", "maxsplit")
                let separator = try optionalString(bound[0])
                if separator == "" { throw ChatTemplateError(.invalidOperation, "empty separator", at: location) }
                let limit = try optionalInteger(bound[1]) ?? -1
                let parts =
                    name == "split"
                    ? string.pythonSplit(separator, maximumSplits: limit)
                    : string.pythonReverseSplit(separator, maximumSplits: limit)
                try checkListLength(parts.count, at: location)
                return .list(parts.map(JinjaRuntimeValue.string))
            case "splitlines":
                let keepEnds = try arguments("keepends")[0]?.isTruthy ?? false
                let lines = string.pythonSplitLines(keepingEnds: keepEnds)
                try checkListLength(lines.count, at: location)
                return .list(lines.map(JinjaRuntimeValue.string))
            case "startswith", "endswith":
                let bound = try arguments("prefix", "start", "end")
                let (lower, upper) = pythonSliceBounds(
                    count: string.unicodeScalars.count, start: try optionalInteger(bound[1]),
                    end: try optionalInteger(bound[2]))
                let window = Array(string.unicodeScalars)[lower..<upper]
                var candidates: [String] = []
                switch bound[0] {
                case .string(let prefix)?: candidates = [prefix]
                case .tuple(let items)?:
                    for item in items { candidates.append(try requireString(item, "\(name) argument", at: location)) }
                default:
                    throw ChatTemplateError(
                        .invalidOperation, "\(name) needs a string or a tuple of strings", at: location)
                }
                for candidate in candidates {
                    let needle = candidate.scalarArray
                    if name == "startswith"
                        ? window.starts(with: needle) : window.reversed().starts(with: needle.reversed())
                    {
                        return .boolean(true)
                    }
                }
                return .boolean(false)
            case "upper", "lower", "title", "capitalize":
                _ = try arguments()
                switch name {
                case "upper": return try checkedString(string.uppercased(), at: location)
                case "lower": return try checkedString(string.lowercased(), at: location)
                case "title": return try checkedString(string.pythonTitled, at: location)
                default: return try checkedString(string.pythonCapitalized, at: location)
                }
            case "replace":
                let bound = try arguments("old", "new", "count")
                let old = try requireString(bound[0] ?? .undefined("missing 'old'"), "old", at: location)
                let new = try requireString(bound[1] ?? .undefined("missing 'new'"), "new", at: location)
                return try checkedString(
                    string.pythonReplace(old, with: new, count: try optionalInteger(bound[2]) ?? -1), at: location)
            case "find", "rfind", "index":
                let bound = try arguments("sub", "start", "end")
                let sub = try requireString(bound[0] ?? .undefined("missing 'sub'"), "sub", at: location)
                let found = string.pythonFind(
                    sub, start: try optionalInteger(bound[1]), end: try optionalInteger(bound[2]),
                    fromEnd: name == "rfind")
                if name == "index" && found < 0 {
                    throw ChatTemplateError(.invalidOperation, "substring not found", at: location)
                }
                return .integer(found)
            case "count":
                let bound = try arguments("sub", "start", "end")
                let sub = try requireString(bound[0] ?? .undefined("missing 'sub'"), "sub", at: location)
                let (lower, upper) = pythonSliceBounds(
                    count: string.unicodeScalars.count, start: try optionalInteger(bound[1]),
                    end: try optionalInteger(bound[2]))
                return .integer(String(scalars: Array(string.unicodeScalars)[lower..<upper]).pythonCount(sub))
            case "join":
                let bound = try arguments("iterable")
                var parts: [String] = []
                for (index, item) in try iterate(bound[0] ?? .undefined("missing iterable"), at: location).enumerated()
                {
                    guard case .string(let part) = item else {
                        throw ChatTemplateError(
                            .invalidOperation, "sequence item \(index): expected str instance, \(item.typeName) found",
                            at: location)
                    }
                    parts.append(part)
                }
                return try checkedString(parts.joined(separator: string), at: location)
            case "removeprefix", "removesuffix":
                let affix = try requireString(
                    try arguments("affix")[0] ?? .undefined("missing argument"), "affix", at: location)
                let scalars = string.scalarArray
                let needle = affix.scalarArray
                if name == "removeprefix", scalars.starts(with: needle) {
                    return try checkedString(String(scalars: scalars.dropFirst(needle.count)), at: location)
                }
                if name == "removesuffix", !needle.isEmpty, scalars.reversed().starts(with: needle.reversed()) {
                    return try checkedString(String(scalars: scalars.dropLast(needle.count)), at: location)
                }
                return .string(string)
            case "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper":
                _ = try arguments()
                return .boolean(characterClassTest(name, string))
            default:
                break
            }
        case .dictionary(let dictionary):
            switch name {
            case "items":
                _ = try arguments()
                return .list(dictionary.pairs.map { .tuple([$0, $1]) })
            case "keys":
                _ = try arguments()
                return .list(dictionary.keys)
            case "values":
                _ = try arguments()
                return .list(dictionary.values)
            case "get":
                let bound = try arguments("key", "default")
                let key = bound[0] ?? .undefined("missing key")
                try requireHashable(key, at: location)
                return dictionary[key] ?? bound[1] ?? .none
            default:
                break
            }
        case .list(let items), .tuple(let items):
            let bound = try arguments("value")
            let target = bound[0] ?? .undefined("missing argument")
            switch name {
            case "count":
                var found = 0
                for item in items where try JinjaRuntimeValue.equals(item, target) { found += 1 }
                return .integer(found)
            case "index":
                for (index, item) in items.enumerated() where try JinjaRuntimeValue.equals(item, target) {
                    return .integer(index)
                }
                throw ChatTemplateError(.invalidOperation, "value is not in \(receiver.typeName)", at: location)
            default:
                break
            }
        default:
            break
        }
        throw ChatTemplateError(.unsupported, "unsupported method \(callee)", at: location)
    }

    private func characterClassTest(_ name: String, _ string: String) -> Bool {
        switch name {
        case "islower": return string.pythonIsLower
        case "isupper": return string.pythonIsUpper
        default: break
        }
        guard !string.isEmpty else { return false }
        return string.unicodeScalars.allSatisfy { scalar in
            let category = scalar.properties.generalCategory
            let isLetter = [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter]
                .contains(category)
            let isDigit = category == .decimalNumber || scalar.properties.numericType == .digit
            switch name {
            case "isdigit": return isDigit
            case "isalpha": return isLetter
            case "isalnum": return isLetter || isDigit || scalar.properties.numericType != nil
            default: return isPythonWhitespace(scalar)
            }
        }
    }

    // MARK: - strftime_now

    private static let weekdayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let monthNames = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]

    /// C-locale `strftime` of the render's clock in the current time zone, as transformers'
    /// `datetime.now().strftime(format)`. `%Z` and `%z` are empty (the datetime is naive); glibc's `-`
    /// flag (`%-d`) drops padding.
    func strftime(_ format: String, at location: JinjaLocation) throws(ChatTemplateError) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: now)
        let year = parts.year ?? 1970
        let month = parts.month ?? 1
        let day = parts.day ?? 1
        let hour = parts.hour ?? 0
        let minute = parts.minute ?? 0
        let second = parts.second ?? 0
        let weekday = (parts.weekday ?? 1) - 1
        let dayOfYear = calendar.ordinality(of: .day, in: .year, for: now) ?? 1
        func padded(_ value: Int, _ width: Int, _ pad: Bool) -> String {
            let digits = String(value)
            return pad ? String(repeating: "0", count: max(0, width - digits.count)) + digits : digits
        }
        var result = ""
        var scalars = format.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "%" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            guard var directive = scalars.next() else {
                throw ChatTemplateError(.invalidOperation, "strftime format ends with '%'", at: location)
            }
            var pad = true
            if directive == "-" {
                pad = false
                guard let next = scalars.next() else {
                    throw ChatTemplateError(.invalidOperation, "strftime format ends with '%-'", at: location)
                }
                directive = next
            }
            let hour12 = hour % 12 == 0 ? 12 : hour % 12
            switch directive {
            case "a": result += String(Self.weekdayNames[weekday].prefix(3))
            case "A": result += Self.weekdayNames[weekday]
            case "b", "h": result += String(Self.monthNames[month - 1].prefix(3))
            case "B": result += Self.monthNames[month - 1]
            case "d": result += padded(day, 2, pad)
            case "e": result += pad ? (day < 10 ? " \(day)" : "\(day)") : "\(day)"
            case "H": result += padded(hour, 2, pad)
            case "I": result += padded(hour12, 2, pad)
            case "j": result += padded(dayOfYear, 3, pad)
            case "m": result += padded(month, 2, pad)
            case "M": result += padded(minute, 2, pad)
            case "S": result += padded(second, 2, pad)
            case "p": result += hour < 12 ? "AM" : "PM"
            case "y": result += padded(year % 100, 2, pad)
            case "Y": result += String(year)
            case "u": result += String(weekday == 0 ? 7 : weekday)
            case "w": result += String(weekday)
            case "F": result += "\(year)-\(padded(month, 2, true))-\(padded(day, 2, true))"
            case "D", "x": result += "\(padded(month, 2, true))/\(padded(day, 2, true))/\(padded(year % 100, 2, true))"
            case "T", "X": result += "\(padded(hour, 2, true)):\(padded(minute, 2, true)):\(padded(second, 2, true))"
            case "R": result += "\(padded(hour, 2, true)):\(padded(minute, 2, true))"
            case "c":
                let dayText = day < 10 ? " \(day)" : "\(day)"
                result +=
                    "\(Self.weekdayNames[weekday].prefix(3)) \(Self.monthNames[month - 1].prefix(3)) \(dayText) "
                    + "\(padded(hour, 2, true)):\(padded(minute, 2, true)):\(padded(second, 2, true)) \(year)"
            case "n": result += "\n"
            case "t": result += "\t"
            case "z", "Z": break
            case "%": result += "%"
            default:
                throw ChatTemplateError(.unsupported, "unsupported strftime directive '%\(directive)'", at: location)
            }
        }
        return result
    }
}
