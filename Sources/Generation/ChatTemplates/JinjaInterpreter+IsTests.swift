// Jinja tests: the predicates after `is` (`x is defined`, `x is not none`, `n is divisibleby 3`),
// also used by `select`, `reject`, `selectattr` and `rejectattr`.

extension JinjaInterpreter {
    func applyTest(
        _ name: String, to value: JinjaRuntimeValue, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)],
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> Bool {
        let callee = "test '\(name)'"
        func arguments(_ parameters: String...) throws(ChatTemplateError) -> [JinjaRuntimeValue?] {
            try bind(parameters, positional, keywords, callee: callee, at: location)
        }
        func other() throws(ChatTemplateError) -> JinjaRuntimeValue {
            let bound = try arguments("other")
            guard let other = bound[0] else {
                throw ChatTemplateError(.invalidOperation, "\(callee) needs an argument", at: location)
            }
            return other
        }
        switch name {
        case "defined":
            _ = try arguments()
            return !value.isUndefined
        case "undefined":
            _ = try arguments()
            return value.isUndefined
        case "none":
            _ = try arguments()
            return isNone(value)
        case "boolean":
            _ = try arguments()
            if case .boolean = value { return true }
            return false
        case "true", "false":
            _ = try arguments()
            if case .boolean(let flag) = value { return flag == (name == "true") }
            return false
        case "integer":
            _ = try arguments()
            if case .integer = value { return true }
            return false
        case "float":
            _ = try arguments()
            if case .float = value { return true }
            return false
        case "number":
            _ = try arguments()
            switch value {
            case .integer, .float, .boolean: return true
            default: return false
            }
        case "string":
            _ = try arguments()
            if case .string = value { return true }
            return false
        case "mapping":
            _ = try arguments()
            if case .dictionary = value { return true }
            return false
        case "sequence":
            _ = try arguments()
            switch value {
            case .undefined, .string, .list, .tuple, .dictionary, .loop: return true
            default: return false
            }
        case "iterable":
            _ = try arguments()
            switch value {
            case .undefined, .string, .list, .tuple, .dictionary, .loop, .iterator: return true
            default: return false
            }
        case "callable":
            _ = try arguments()
            switch value {
            // Python's Undefined and LoopContext define __call__.
            case .function, .undefined, .loop: return true
            default: return false
            }
        case "lower", "upper":
            _ = try arguments()
            let text = try printed(value, at: location)
            return name == "lower" ? text.pythonIsLower : text.pythonIsUpper
        case "odd", "even":
            _ = try arguments()
            let remainder = try binary(.remainder, value, .integer(2), at: location)
            return try JinjaRuntimeValue.equals(remainder, .integer(name == "odd" ? 1 : 0))
        case "divisibleby":
            let remainder = try binary(.remainder, value, try other(), at: location)
            return try JinjaRuntimeValue.equals(remainder, .integer(0))
        case "sameas":
            let other = try other()
            switch (value, other) {
            case (.none, .none): return true
            case (.boolean(let x), .boolean(let y)): return x == y
            case (.integer(let x), .integer(let y)): return x == y && (-5...256).contains(x)
            case (.namespace(let x), .namespace(let y)): return x === y
            case (.loop(let x), .loop(let y)): return x === y
            case (.iterator(let x), .iterator(let y)): return x === y
            default: return false
            }
        case "in":
            return try contains(try other(), value, at: location)
        case "eq", "equalto", "==":
            return try compare(.equal, value, try other(), at: location)
        case "ne", "!=":
            return try compare(.notEqual, value, try other(), at: location)
        case "lt", "lessthan", "<":
            return try compare(.less, value, try other(), at: location)
        case "le", "<=":
            return try compare(.lessOrEqual, value, try other(), at: location)
        case "gt", "greaterthan", ">":
            return try compare(.greater, value, try other(), at: location)
        case "ge", ">=":
            return try compare(.greaterOrEqual, value, try other(), at: location)
        case "filter", "test":
            _ = try arguments()
            guard case .string(let string) = value else { return false }
            return (name == "filter" ? JinjaBuiltins.filters : JinjaBuiltins.tests).contains(string)
        default:
            throw ChatTemplateError(.unsupported, "unsupported test '\(name)'", at: location)
        }
    }
}

extension String {
    /// Python's `str.islower()`: at least one cased character, and no upper- or title-case ones.
    var pythonIsLower: Bool {
        var sawCased = false
        for scalar in unicodeScalars {
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .titlecaseLetter: return false
            case .lowercaseLetter: sawCased = true
            default: continue
            }
        }
        return sawCased
    }

    /// Python's `str.isupper()`: at least one cased character, and no lower- or title-case ones.
    var pythonIsUpper: Bool {
        var sawCased = false
        for scalar in unicodeScalars {
            switch scalar.properties.generalCategory {
            case .lowercaseLetter, .titlecaseLetter: return false
            case .uppercaseLetter: sawCased = true
            default: continue
            }
        }
        return sawCased
    }
}
