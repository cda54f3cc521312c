import Foundation

/// A Python number: `bool` counts as an integer, as it does in Python arithmetic.
private enum Number {
    case integer(Int)
    case float(Double)

    init?(_ value: JinjaRuntimeValue) {
        switch value {
        case .boolean(let value): self = .integer(value ? 1 : 0)
        case .integer(let value): self = .integer(value)
        case .float(let value): self = .float(value)
        default: return nil
        }
    }

    var double: Double {
        switch self {
        case .integer(let value): return Double(value)
        case .float(let value): return value
        }
    }
}

/// -1, 0 or 1 comparing an integer with a double exactly, as Python does; nil when `b` is NaN.
private func compareExactly(_ a: Int, _ b: Double) -> Int? {
    if b.isNaN { return nil }
    if b >= 9_223_372_036_854_775_808.0 { return -1 }
    if b < -9_223_372_036_854_775_808.0 { return 1 }
    let floor = b.rounded(.down)
    let whole = Int(floor)
    if a < whole { return -1 }
    if a > whole { return 1 }
    return b > floor ? -1 : 0
}

private func compareNumbers(_ a: Number, _ b: Number) -> Int? {
    switch (a, b) {
    case (.integer(let x), .integer(let y)): return x < y ? -1 : x > y ? 1 : 0
    case (.integer(let x), .float(let y)): return compareExactly(x, y)
    case (.float(let x), .integer(let y)): return compareExactly(y, x).map { -$0 }
    case (.float(let x), .float(let y)):
        if x.isNaN || y.isNaN { return nil }
        return x < y ? -1 : x > y ? 1 : 0
    }
}

extension JinjaRuntimeValue {
    /// Python's `==`. Undefined equals undefined; `1 == 1.0 == True`; lists and tuples never equal each
    /// other; dicts compare regardless of order; namespaces by identity.
    static func equals(_ a: JinjaRuntimeValue, _ b: JinjaRuntimeValue, depth: Int = 0) throws(ChatTemplateError) -> Bool
    {
        if depth > JinjaInterpreter.maximumValueDepth {
            throw ChatTemplateError(.limitExceeded, "values nested deeper than \(JinjaInterpreter.maximumValueDepth)")
        }
        if let x = Number(a), let y = Number(b) { return compareNumbers(x, y) == 0 }
        switch (a, b) {
        case (.undefined, .undefined), (.none, .none): return true
        case (.string(let x), .string(let y)): return x.pythonEquals(y)
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            guard x.count == y.count else { return false }
            for (left, right) in zip(x, y) where !(try equals(left, right, depth: depth + 1)) { return false }
            return true
        case (.dictionary(let x), .dictionary(let y)):
            guard x.count == y.count else { return false }
            for (key, value) in x.pairs {
                guard let other = y[key], try equals(value, other, depth: depth + 1) else { return false }
            }
            return true
        case (.namespace(let x), .namespace(let y)): return x === y
        case (.loop(let x), .loop(let y)): return x === y
        case (.iterator(let x), .iterator(let y)): return x === y
        default: return false
        }
    }
}

extension JinjaInterpreter {
    private func failure(_ message: String, at location: JinjaLocation) -> ChatTemplateError {
        ChatTemplateError(.invalidOperation, message, at: location)
    }

    private func overflow(at location: JinjaLocation) -> ChatTemplateError {
        failure("integer overflow (Python integers are unbounded; these are 64-bit)", at: location)
    }

    private func requireDefined(_ values: JinjaRuntimeValue..., at location: JinjaLocation) throws(ChatTemplateError) {
        for case .undefined(let reason) in values { throw ChatTemplateError(.undefinedValue, reason, at: location) }
    }

    func negate(_ value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) -> JinjaRuntimeValue {
        try requireDefined(value, at: location)
        switch Number(value) {
        case .integer(let x):
            guard x != Int.min else { throw overflow(at: location) }
            return .integer(-x)
        case .float(let x): return .float(-x)
        case nil: throw failure("bad operand type for unary -: '\(value.typeName)'", at: location)
        }
    }

    func positive(_ value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) -> JinjaRuntimeValue
    {
        try requireDefined(value, at: location)
        switch Number(value) {
        case .integer(let x): return .integer(x)
        case .float(let x): return .float(x)
        case nil: throw failure("bad operand type for unary +: '\(value.typeName)'", at: location)
        }
    }

    func binary(
        _ operation: JinjaBinaryOperator, _ left: JinjaRuntimeValue, _ right: JinjaRuntimeValue,
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        try requireDefined(left, right, at: location)
        if let x = Number(left), let y = Number(right) { return try arithmetic(operation, x, y, at: location) }
        switch (operation, left, right) {
        case (.add, .string(let x), .string(let y)):
            return try checkedString(x + y, at: location)
        case (.add, .list(let x), .list(let y)):
            try checkListLength(x.count + y.count, at: location)
            return .list(x + y)
        case (.add, .tuple(let x), .tuple(let y)):
            try checkListLength(x.count + y.count, at: location)
            return .tuple(x + y)
        case (.add, .string, _), (.add, .list, _):
            throw failure(
                "can only concatenate \(left.typeName) (not \"\(right.typeName)\") to \(left.typeName)", at: location)
        case (.multiply, .string, _), (.multiply, .list, _), (.multiply, .tuple, _):
            return try repeated(left, times: right, at: location)
        case (.multiply, _, .string), (.multiply, _, .list), (.multiply, _, .tuple):
            return try repeated(right, times: left, at: location)
        case (.remainder, .string, _):
            throw ChatTemplateError(.unsupported, "unsupported %-formatting of a string", at: location)
        default:
            throw failure(
                "unsupported operand type(s) for \(operation.rawValue): '\(left.typeName)' and '\(right.typeName)'",
                at: location)
        }
    }

    private func repeated(_ sequence: JinjaRuntimeValue, times count: JinjaRuntimeValue, at location: JinjaLocation)
        throws(ChatTemplateError) -> JinjaRuntimeValue
    {
        guard case .integer(let times)? = Number(count) else {
            throw failure("can't multiply sequence by non-int of type '\(count.typeName)'", at: location)
        }
        let repetitions = max(0, times)
        switch sequence {
        case .string(let string):
            let (total, overflowed) = string.utf8.count.multipliedReportingOverflow(by: repetitions)
            if overflowed || total > limits.maximumOutputLength {
                throw ChatTemplateError(
                    .limitExceeded, "a string longer than \(limits.maximumOutputLength) bytes", at: location)
            }
            return try checkedString(String(repeating: string, count: repetitions), at: location)
        case .list(let items), .tuple(let items):
            let (total, overflowed) = items.count.multipliedReportingOverflow(by: repetitions)
            if overflowed { throw ChatTemplateError(.limitExceeded, "a list too long", at: location) }
            try checkListLength(total, at: location)
            let result = Array(repeatElement(items, count: items.isEmpty ? 0 : repetitions).joined())
            if case .tuple = sequence { return .tuple(result) }
            return .list(result)
        default:
            throw failure("can't multiply sequence of type '\(sequence.typeName)'", at: location)
        }
    }

    private func arithmetic(
        _ operation: JinjaBinaryOperator, _ x: Number, _ y: Number, at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        if case .integer(let a) = x, case .integer(let b) = y {
            switch operation {
            case .add:
                let (sum, overflowed) = a.addingReportingOverflow(b)
                if overflowed { throw overflow(at: location) }
                return .integer(sum)
            case .subtract:
                let (difference, overflowed) = a.subtractingReportingOverflow(b)
                if overflowed { throw overflow(at: location) }
                return .integer(difference)
            case .multiply:
                let (product, overflowed) = a.multipliedReportingOverflow(by: b)
                if overflowed { throw overflow(at: location) }
                return .integer(product)
            case .divide:
                if b == 0 { throw failure("division by zero", at: location) }
                return .float(Double(a) / Double(b))
            case .floorDivide, .remainder:
                if b == 0 { throw failure("integer division or modulo by zero", at: location) }
                if a == Int.min && b == -1 {
                    if operation == .remainder { return .integer(0) }
                    throw overflow(at: location)
                }
                var quotient = a / b
                var remainder = a % b
                if remainder != 0 && ((remainder < 0) != (b < 0)) {
                    quotient -= 1
                    remainder += b
                }
                return .integer(operation == .floorDivide ? quotient : remainder)
            case .power:
                if b < 0 {
                    if a == 0 { throw failure("0.0 cannot be raised to a negative power", at: location) }
                    return .float(Foundation.pow(Double(a), Double(b)))
                }
                var result = 1
                var base = a
                var exponent = b
                while exponent > 0 {
                    if exponent & 1 == 1 {
                        let (product, overflowed) = result.multipliedReportingOverflow(by: base)
                        if overflowed { throw overflow(at: location) }
                        result = product
                    }
                    exponent >>= 1
                    if exponent > 0 {
                        let (square, overflowed) = base.multipliedReportingOverflow(by: base)
                        if overflowed { throw overflow(at: location) }
                        base = square
                    }
                }
                return .integer(result)
            }
        }
        let a = x.double
        let b = y.double
        switch operation {
        case .add: return .float(a + b)
        case .subtract: return .float(a - b)
        case .multiply: return .float(a * b)
        case .divide:
            if b == 0 { throw failure("float division by zero", at: location) }
            return .float(a / b)
        case .floorDivide, .remainder:
            if b == 0 {
                throw failure(operation == .floorDivide ? "float floor division by zero" : "float modulo", at: location)
            }
            let (quotient, remainder) = pythonFloatDivision(a, b)
            return .float(operation == .floorDivide ? quotient : remainder)
        case .power:
            if a == 0 && b < 0 { throw failure("0.0 cannot be raised to a negative power", at: location) }
            if a < 0 && b != b.rounded(.towardZero) && b.isFinite {
                throw ChatTemplateError(
                    .unsupported, "unsupported complex result of a negative number's fractional power", at: location)
            }
            let result = Foundation.pow(a, b)
            if result.isInfinite && a.isFinite && b.isFinite {
                throw failure("numerical result out of range", at: location)
            }
            return .float(result)
        }
    }

    /// CPython's `float.__divmod__`: floor quotient and remainder with the divisor's sign.
    private func pythonFloatDivision(_ a: Double, _ b: Double) -> (Double, Double) {
        var remainder = a.truncatingRemainder(dividingBy: b)
        var quotient = (a - remainder) / b
        if remainder != 0 {
            if (b < 0) != (remainder < 0) {
                remainder += b
                quotient -= 1
            }
        } else {
            remainder = Double(signOf: b, magnitudeOf: 0)
        }
        var floorQuotient: Double
        if quotient != 0 {
            floorQuotient = quotient.rounded(.down)
            if quotient - floorQuotient > 0.5 { floorQuotient += 1 }
        } else {
            floorQuotient = Double(signOf: a / b, magnitudeOf: 0)
        }
        return (floorQuotient, remainder)
    }

    // MARK: - Comparisons

    func compare(
        _ operation: JinjaComparison, _ left: JinjaRuntimeValue, _ right: JinjaRuntimeValue, at location: JinjaLocation
    ) throws(ChatTemplateError) -> Bool {
        try chargeSize(of: left, at: location)
        try chargeSize(of: right, at: location)
        switch operation {
        case .equal: return try JinjaRuntimeValue.equals(left, right)
        case .notEqual: return !(try JinjaRuntimeValue.equals(left, right))
        case .contains: return try contains(right, left, at: location)
        case .notContains: return !(try contains(right, left, at: location))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            try requireDefined(left, right, at: location)
            guard let order = try order(left, right, operation, at: location) else { return false }
            switch operation {
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            default: return order >= 0
            }
        }
    }

    /// -1, 0 or 1 for Python's ordering of two values; nil when unordered (NaN).
    private func order(
        _ left: JinjaRuntimeValue, _ right: JinjaRuntimeValue, _ operation: JinjaComparison, at location: JinjaLocation,
        depth: Int = 0
    ) throws(ChatTemplateError) -> Int? {
        if depth > JinjaInterpreter.maximumValueDepth {
            throw ChatTemplateError(
                .limitExceeded, "values nested deeper than \(JinjaInterpreter.maximumValueDepth)", at: location)
        }
        if let x = Number(left), let y = Number(right) { return compareNumbers(x, y) }
        switch (left, right) {
        case (.string(let x), .string(let y)):
            return x.pythonEquals(y) ? 0 : x.pythonLess(y) ? -1 : 1
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            for (a, b) in zip(x, y) where !(try JinjaRuntimeValue.equals(a, b)) {
                return try order(a, b, operation, at: location, depth: depth + 1)
            }
            return x.count < y.count ? -1 : x.count > y.count ? 1 : 0
        case (.undefined(let reason), _), (_, .undefined(let reason)):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        default:
            throw failure(
                "'\(operation.rawValue)' not supported between instances of '\(left.typeName)' and '\(right.typeName)'",
                at: location)
        }
    }

    /// Python's `item in container`.
    func contains(_ container: JinjaRuntimeValue, _ item: JinjaRuntimeValue, at location: JinjaLocation)
        throws(ChatTemplateError) -> Bool
    {
        switch container {
        case .undefined:
            return false
        case .string(let string):
            guard case .string(let needle) = item else {
                throw failure("'in <string>' requires string as left operand, not \(item.typeName)", at: location)
            }
            return string.pythonContains(needle)
        case .list(let items), .tuple(let items):
            for candidate in items where try JinjaRuntimeValue.equals(candidate, item) { return true }
            return false
        case .dictionary(let dictionary):
            try requireHashable(item, at: location)
            return dictionary[item] != nil
        case .iterator(let iterator):
            while let candidate = iterator.next() {
                if try JinjaRuntimeValue.equals(candidate, item) { return true }
            }
            return false
        case .loop(let context):
            for candidate in context.items where try JinjaRuntimeValue.equals(candidate, item) { return true }
            return false
        default:
            throw failure("argument of type '\(container.typeName)' is not iterable", at: location)
        }
    }
}
