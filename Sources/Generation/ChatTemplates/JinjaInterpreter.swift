import Foundation

/// Renders a parsed template with Jinja's semantics under transformers' environment: the default
/// `Undefined`, the immutable sandbox, `loopcontrols`, and the globals `raise_exception` and
/// `strftime_now`. One interpreter renders once.
final class JinjaInterpreter {
    /// How deep values may nest when printed, compared or converted to JSON.
    static let maximumValueDepth = 512
    /// Jinja's sandbox refuses `range()` longer than this (`MAX_RANGE`).
    static let maximumRangeLength = 100_000

    let limits: ChatTemplate.Limits
    let now: Date
    private var scopes: [JinjaScope]
    /// The output, then one buffer per `{% set %}` block or macro call being captured.
    private var buffers: [String] = [""]
    private var bufferLengths: [Int] = [0]
    private var work = 0
    private var macroDepth = 0

    init(variables: [String: JinjaValue], limits: ChatTemplate.Limits, now: Date) {
        self.limits = limits
        self.now = now
        var root = JinjaScope()
        for (name, value) in variables { root.set(name, JinjaRuntimeValue(value)) }
        scopes = [root]
    }

    /// Calls a macro: its body renders in a scope of its own over the template's variables and the
    /// loop scopes around its definition, not the caller's. Missing arguments are undefined.
    func callMacro(
        _ closure: JinjaMacroClosure, _ positional: [JinjaRuntimeValue],
        _ keywords: [(name: String, value: JinjaRuntimeValue)],
        at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let definition = closure.definition
        guard macroDepth < limits.maximumNestingDepth else {
            throw ChatTemplateError(
                .limitExceeded, "macro calls nested deeper than \(limits.maximumNestingDepth) levels", at: location)
        }
        let parameterCount = definition.parameters.count
        if positional.count > parameterCount && !definition.usesVarargs {
            throw ChatTemplateError(
                .invalidOperation, "macro '\(definition.name)' takes not more than \(parameterCount) argument(s)",
                at: location)
        }
        var given = [JinjaRuntimeValue?](repeating: nil, count: parameterCount)
        for (index, value) in positional.prefix(parameterCount).enumerated() { given[index] = value }
        var extraKeywords = JinjaRuntimeDictionary()
        for (name, value) in keywords {
            if let index = definition.parameters.firstIndex(where: { $0.name == name }) {
                guard given[index] == nil else {
                    throw ChatTemplateError(
                        .invalidOperation, "macro '\(definition.name)' got multiple values for argument '\(name)'",
                        at: location)
                }
                given[index] = value
            } else if definition.usesKeywordArguments {
                extraKeywords.setString(name, value)
            } else {
                throw ChatTemplateError(
                    .invalidOperation, "macro '\(definition.name)' takes no keyword argument '\(name)'", at: location)
            }
        }
        let callerScopes = scopes
        scopes = [scopes[0]] + closure.capturedScopes + [JinjaScope()]
        macroDepth += 1
        defer {
            scopes = callerScopes
            macroDepth -= 1
        }
        for (index, parameter) in definition.parameters.enumerated() {
            var value = given[index]
            if value == nil, let defaultValue = parameter.defaultValue { value = try evaluate(defaultValue) }
            scopes[scopes.count - 1].set(
                parameter.name, value ?? .undefined("parameter '\(parameter.name)' was not provided"))
        }
        if definition.usesVarargs {
            scopes[scopes.count - 1].set("varargs", .tuple(Array(positional.dropFirst(parameterCount))))
        }
        if definition.usesKeywordArguments { scopes[scopes.count - 1].set("kwargs", .dictionary(extraKeywords)) }
        let (text, _) = try capture(definition.body)
        return .string(text)
    }

    func render(_ nodes: [JinjaNode]) throws(ChatTemplateError) -> String {
        _ = try execute(nodes)
        return buffers[0]
    }

    // MARK: - Limits

    /// Counts work, in units of roughly one expression evaluation: one per node and expression, four
    /// per loop iteration, and for every string built or scanned one per 64 bytes, for every list one
    /// per 16 items.
    func charge(_ units: Int, at location: JinjaLocation?) throws(ChatTemplateError) {
        work += units
        if work > limits.maximumWork {
            throw ChatTemplateError(
                .limitExceeded, "rendering needs more than \(limits.maximumWork) units of work", at: location)
        }
    }

    /// A new string value, checked against the output size limit and charged as work.
    func checkedString(_ string: String, at location: JinjaLocation) throws(ChatTemplateError) -> JinjaRuntimeValue {
        let length = string.utf8.count
        if length > limits.maximumOutputLength {
            throw ChatTemplateError(
                .limitExceeded, "a string longer than \(limits.maximumOutputLength) bytes", at: location)
        }
        try charge(1 + length >> 6, at: location)
        return .string(string)
    }

    /// A new list's length, checked and charged.
    func checkListLength(_ count: Int, at location: JinjaLocation) throws(ChatTemplateError) {
        if count > limits.maximumOutputLength {
            throw ChatTemplateError(
                .limitExceeded, "a list longer than \(limits.maximumOutputLength) items", at: location)
        }
        try charge(1 + count >> 4, at: location)
    }

    /// Charges the scan of a value: a string by its bytes, a container by its items.
    func chargeSize(of value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) {
        switch value {
        case .string(let string): try charge(string.utf8.count >> 6, at: location)
        case .list(let items), .tuple(let items): try charge(items.count >> 4, at: location)
        case .dictionary(let dictionary): try charge(dictionary.count >> 4, at: location)
        default: break
        }
    }

    /// Writes to the output, or to the innermost capture (each also bounded by the output limit, and
    /// charged as work since its text is written again when printed).
    private func write(_ text: String, at location: JinjaLocation?) throws(ChatTemplateError) {
        let length = text.utf8.count
        let top = buffers.count - 1
        bufferLengths[top] += length
        if bufferLengths[top] > limits.maximumOutputLength {
            throw ChatTemplateError(
                .limitExceeded, "output longer than \(limits.maximumOutputLength) bytes", at: location)
        }
        if top > 0 { try charge(length >> 6, at: location) }
        buffers[top] += text
    }

    /// Renders `nodes` into a string of their own (a block `set`, a macro call).
    private func capture(_ nodes: [JinjaNode]) throws(ChatTemplateError) -> (String, Flow) {
        buffers.append("")
        bufferLengths.append(0)
        defer {
            buffers.removeLast()
            bufferLengths.removeLast()
        }
        let flow = try execute(nodes)
        return (buffers[buffers.count - 1], flow)
    }

    // MARK: - Statements

    enum Flow { case normal, breakLoop, continueLoop }

    private func execute(_ nodes: [JinjaNode]) throws(ChatTemplateError) -> Flow {
        for node in nodes {
            try charge(1, at: nil)
            switch node {
            case .text(let text):
                try write(text, at: nil)
            case .output(let expression):
                let value = try evaluate(expression)
                try write(try printed(value, at: expression.location), at: expression.location)
            case .conditional(let branches, let otherwise):
                var chosen = otherwise
                for branch in branches {
                    if try evaluate(branch.test).isTruthy {
                        chosen = branch.body
                        break
                    }
                }
                let flow = try execute(chosen)
                if flow != .normal { return flow }
            case .loop(let loop):
                let flow = try executeLoop(loop)
                if flow != .normal { return flow }
            case .assignment(let target, let expression, let location):
                try assign(try evaluate(expression), to: target, at: location)
            case .capture(let name, let body):
                let (captured, flow) = try capture(body)
                scopes[scopes.count - 1].set(name, .string(captured))
                if flow != .normal { return flow }
            case .macro(let definition):
                let closure = JinjaMacroClosure(definition: definition, capturedScopes: Array(scopes.dropFirst()))
                scopes[scopes.count - 1].set(definition.name, .function(.macro(closure)))
            case .breakLoop:
                return .breakLoop
            case .continueLoop:
                return .continueLoop
            case .generation(let body):
                let flow = try execute(body)
                if flow != .normal { return flow }
            }
        }
        return .normal
    }

    /// Each iteration runs in a fresh scope over the enclosing one, so `{% set %}` in the body lasts
    /// for that iteration only, as in Jinja.
    private func executeLoop(_ loop: JinjaLoop) throws(ChatTemplateError) -> Flow {
        let items = try iterate(try evaluate(loop.iterable), at: loop.iterable.location)
        scopes.append(JinjaScope())
        defer { scopes.removeLast() }
        var selected: [JinjaRuntimeValue] = []
        if let condition = loop.condition {
            for item in items {
                try charge(1, at: loop.location)
                scopes[scopes.count - 1].removeAll()
                try assign(item, to: loop.target, at: loop.location)
                if try evaluate(condition).isTruthy { selected.append(item) }
            }
        } else {
            selected = items
        }
        if selected.isEmpty {
            scopes[scopes.count - 1].removeAll()
            return try execute(loop.otherwise)
        }
        let context = JinjaLoopContext(items: selected)
        for (index, item) in selected.enumerated() {
            try charge(4, at: loop.location)
            context.index0 = index
            scopes[scopes.count - 1].removeAll()
            scopes[scopes.count - 1].set("loop", .loop(context))
            try assign(item, to: loop.target, at: loop.location)
            let flow = try execute(loop.body)
            if flow == .breakLoop { break }
        }
        return .normal
    }

    private func assign(_ value: JinjaRuntimeValue, to target: JinjaTarget, at location: JinjaLocation)
        throws(ChatTemplateError)
    {
        switch target {
        case .name(let name):
            scopes[scopes.count - 1].set(name, value)
        case .names(let names):
            let values = try iterate(value, at: location)
            guard values.count == names.count else {
                let problem = values.count > names.count ? "too many values" : "not enough values"
                throw ChatTemplateError(
                    .invalidOperation, "\(problem) to unpack (expected \(names.count), got \(values.count))",
                    at: location)
            }
            for (name, item) in zip(names, values) { scopes[scopes.count - 1].set(name, item) }
        case .attribute(let namespaceName, let attribute):
            guard case .namespace(let namespace) = lookup(namespaceName) else {
                throw ChatTemplateError(
                    .invalidOperation, "cannot assign attribute on non-namespace object '\(namespaceName)'",
                    at: location)
            }
            namespace.attributes.setString(attribute, value)
        }
    }

    // MARK: - Names

    func lookup(_ name: String) -> JinjaRuntimeValue {
        var index = scopes.count - 1
        while index >= 0 {
            if let value = scopes[index][name] { return value }
            index -= 1
        }
        if JinjaBuiltins.functions.contains(name) || JinjaBuiltins.unsupportedFunctions.contains(name) {
            return .function(.global(name))
        }
        return .undefined("'\(name)' is undefined")
    }

    // MARK: - Expressions

    func evaluate(_ expression: JinjaExpression) throws(ChatTemplateError) -> JinjaRuntimeValue {
        try charge(1, at: expression.location)
        let location = expression.location
        switch expression.kind {
        case .literal(let literal):
            return JinjaRuntimeValue(literal)
        case .name(let name):
            return lookup(name)
        case .list(let items):
            var values: [JinjaRuntimeValue] = []
            for item in items { values.append(try evaluate(item)) }
            return .list(values)
        case .tuple(let items):
            var values: [JinjaRuntimeValue] = []
            for item in items { values.append(try evaluate(item)) }
            return .tuple(values)
        case .dictionary(let pairs):
            var dictionary = JinjaRuntimeDictionary()
            for pair in pairs {
                let key = try evaluate(pair.key)
                try requireHashable(key, at: pair.key.location)
                dictionary.set(key, try evaluate(pair.value))
            }
            return .dictionary(dictionary)
        case .attribute(let base, let name):
            return try attribute(name, of: try evaluate(base), at: location)
        case .item(let base, let key):
            return try item(try evaluate(key), of: try evaluate(base), at: location)
        case .slice(let base, let start, let stop, let step):
            let value = try evaluate(base)
            return try slice(
                value, start: try sliceBound(start), stop: try sliceBound(stop), step: try sliceBound(step),
                at: location)
        case .negate(let operand):
            return try negate(try evaluate(operand), at: location)
        case .positive(let operand):
            return try positive(try evaluate(operand), at: location)
        case .not(let operand):
            return .boolean(!(try evaluate(operand).isTruthy))
        case .binary(let operation, let left, let right):
            return try binary(operation, try evaluate(left), try evaluate(right), at: location)
        case .and(let left, let right):
            let first = try evaluate(left)
            return first.isTruthy ? try evaluate(right) : first
        case .or(let left, let right):
            let first = try evaluate(left)
            return first.isTruthy ? first : try evaluate(right)
        case .concatenate(let operands):
            var text = ""
            for operand in operands { text += try printed(try evaluate(operand), at: operand.location) }
            return try checkedString(text, at: location)
        case .compare(let first, let operations):
            var left = try evaluate(first)
            for (operation, operand) in operations {
                let right = try evaluate(operand)
                guard try compare(operation, left, right, at: operand.location) else { return .boolean(false) }
                left = right
            }
            return .boolean(true)
        case .conditional(let test, let then, let otherwise):
            if try evaluate(test).isTruthy { return try evaluate(then) }
            guard let otherwise else { return .undefined("the conditional expression had no else branch") }
            return try evaluate(otherwise)
        case .filter(let base, let name, let arguments):
            let value = try evaluate(base)
            let (positional, keywords) = try evaluate(arguments)
            return try applyFilter(name, to: value, positional, keywords, at: location)
        case .test(let base, let name, let arguments):
            let value = try evaluate(base)
            let (positional, keywords) = try evaluate(arguments)
            return .boolean(try applyTest(name, to: value, positional, keywords, at: location))
        case .call(let callee, let arguments):
            let function = try evaluate(callee)
            let (positional, keywords) = try evaluate(arguments)
            return try call(function, positional, keywords, at: location)
        }
    }

    private func evaluate(
        _ arguments: JinjaArguments
    ) throws(ChatTemplateError) -> ([JinjaRuntimeValue], [(name: String, value: JinjaRuntimeValue)]) {
        var positional: [JinjaRuntimeValue] = []
        for argument in arguments.positional { positional.append(try evaluate(argument)) }
        var keywords: [(name: String, value: JinjaRuntimeValue)] = []
        for argument in arguments.keywords { keywords.append((argument.name, try evaluate(argument.value))) }
        return (positional, keywords)
    }

    private func sliceBound(_ expression: JinjaExpression?) throws(ChatTemplateError) -> Int? {
        guard let expression else { return nil }
        switch try evaluate(expression) {
        case .none: return nil
        case .integer(let value): return value
        case .boolean(let value): return value ? 1 : 0
        case .undefined(let reason): throw ChatTemplateError(.undefinedValue, reason, at: expression.location)
        case let other:
            throw ChatTemplateError(
                .invalidOperation, "slice indices must be integers or None, not \(other.typeName)",
                at: expression.location)
        }
    }

    func requireHashable(_ key: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) {
        switch key {
        case .list, .dictionary, .iterator:
            throw ChatTemplateError(.invalidOperation, "unhashable type: '\(key.typeName)'", at: location)
        case .tuple(let items):
            for item in items { try requireHashable(item, at: location) }
        default:
            break
        }
    }

    // MARK: - Lookups

    /// `value.name`: Python's attribute first (methods of str, dict and list; namespace and loop
    /// attributes), then the dict key, else undefined. The sandbox hides mutating methods.
    func attribute(_ name: String, of value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError)
        -> JinjaRuntimeValue
    {
        switch value {
        case .undefined(let reason):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        case .dictionary(let dictionary):
            if JinjaBuiltins.dictionaryAttributes.contains(name) {
                return JinjaBuiltins.mutatingMethods.contains(name)
                    ? .undefined("access to '\(name)' is unsafe in the sandbox") : .function(.method(value, name))
            }
            return dictionary.value(forString: name) ?? .undefined("'dict object' has no attribute '\(name)'")
        case .string:
            if JinjaBuiltins.stringAttributes.contains(name) { return .function(.method(value, name)) }
        case .list:
            if JinjaBuiltins.listAttributes.contains(name) {
                return JinjaBuiltins.mutatingMethods.contains(name)
                    ? .undefined("access to '\(name)' is unsafe in the sandbox") : .function(.method(value, name))
            }
        case .tuple:
            if name == "count" || name == "index" { return .function(.method(value, name)) }
        case .namespace(let namespace):
            if let attribute = namespace.attributes.value(forString: name) { return attribute }
        case .loop(let context):
            if let attribute = context.attribute(name) { return attribute }
        case .function(.macro(let closure)):
            if name == "name" { return .string(closure.definition.name) }
        default:
            break
        }
        return .undefined("'\(value.typeName) object' has no attribute '\(name)'")
    }

    /// `value[key]`: Python's item first, then (for a string key) the attribute, else undefined.
    func item(_ key: JinjaRuntimeValue, of value: JinjaRuntimeValue, at location: JinjaLocation)
        throws(ChatTemplateError) -> JinjaRuntimeValue
    {
        switch value {
        case .undefined(let reason):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        case .dictionary(let dictionary):
            if let found = dictionary[key] { return found }
        case .list(let items), .tuple(let items):
            if let index = integerIndex(key) {
                let resolved = index < 0 ? index + items.count : index
                if items.indices.contains(resolved) { return items[resolved] }
                return .undefined("'\(value.typeName) object' has no element \(index)")
            }
        case .string(let string):
            if let index = integerIndex(key) {
                try chargeSize(of: value, at: location)
                let scalars = string.scalarArray
                let resolved = index < 0 ? index + scalars.count : index
                if scalars.indices.contains(resolved) { return .string(String(scalars[resolved])) }
                return .undefined("'str object' has no element \(index)")
            }
        default:
            break
        }
        if case .string(let name) = key { return try attribute(name, of: value, at: location) }
        return .undefined("'\(value.typeName) object' has no element \(try representation(key, at: location))")
    }

    private func integerIndex(_ key: JinjaRuntimeValue) -> Int? {
        switch key {
        case .integer(let value): return value
        case .boolean(let value): return value ? 1 : 0
        default: return nil
        }
    }

    private func slice(
        _ value: JinjaRuntimeValue, start: Int?, stop: Int?, step: Int?, at location: JinjaLocation
    ) throws(ChatTemplateError) -> JinjaRuntimeValue {
        if step == 0 { throw ChatTemplateError(.invalidOperation, "slice step cannot be zero", at: location) }
        switch value {
        case .undefined(let reason):
            throw ChatTemplateError(.undefinedValue, reason, at: location)
        case .list(let items):
            return .list(pythonSliceIndices(count: items.count, start: start, stop: stop, step: step).map { items[$0] })
        case .tuple(let items):
            return .tuple(
                pythonSliceIndices(count: items.count, start: start, stop: stop, step: step).map { items[$0] })
        case .string(let string):
            try chargeSize(of: value, at: location)
            let scalars = string.scalarArray
            let picked = pythonSliceIndices(count: scalars.count, start: start, stop: stop, step: step).map {
                scalars[$0]
            }
            return .string(String(scalars: picked))
        default:
            return .undefined("'\(value.typeName) object' cannot be sliced")
        }
    }

    /// Python's `iter(value)`, drained: a string's characters, a dict's keys; undefined is empty.
    func iterate(_ value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError)
        -> [JinjaRuntimeValue]
    {
        try chargeSize(of: value, at: location)
        switch value {
        case .undefined: return []
        case .list(let items), .tuple(let items): return items
        case .string(let string): return string.unicodeScalars.map { .string(String($0)) }
        case .dictionary(let dictionary): return dictionary.keys
        case .iterator(let iterator): return iterator.drain()
        case .loop(let context): return context.items
        default:
            throw ChatTemplateError(.invalidOperation, "'\(value.typeName)' object is not iterable", at: location)
        }
    }

    // MARK: - Printing

    /// Python's `str(value)`, as `{{ value }}` prints it; undefined prints as "".
    func printed(_ value: JinjaRuntimeValue, at location: JinjaLocation) throws(ChatTemplateError) -> String {
        switch value {
        case .undefined: return ""
        case .string(let string): return string
        default: return try representation(value, at: location)
        }
    }

    /// Python's `repr(value)` (for containers and their items).
    func representation(_ value: JinjaRuntimeValue, at location: JinjaLocation, depth: Int = 0)
        throws(ChatTemplateError) -> String
    {
        if depth > Self.maximumValueDepth {
            throw ChatTemplateError(.limitExceeded, "values nested deeper than \(Self.maximumValueDepth)", at: location)
        }
        switch value {
        case .undefined: return "Undefined"
        case .none: return "None"
        case .boolean(let value): return value ? "True" : "False"
        case .integer(let value): return String(value)
        case .float(let value): return pythonFloatRepresentation(value)
        case .string(let string): return string.pythonRepresentation
        case .list(let items):
            var parts: [String] = []
            for item in items { parts.append(try representation(item, at: location, depth: depth + 1)) }
            return "[" + parts.joined(separator: ", ") + "]"
        case .tuple(let items):
            var parts: [String] = []
            for item in items { parts.append(try representation(item, at: location, depth: depth + 1)) }
            return "(" + parts.joined(separator: ", ") + (items.count == 1 ? ",)" : ")")
        case .dictionary(let dictionary):
            return try dictionaryRepresentation(dictionary, at: location, depth: depth)
        case .namespace(let namespace):
            return "<Namespace " + (try dictionaryRepresentation(namespace.attributes, at: location, depth: depth))
                + ">"
        case .loop(let context):
            return "<LoopContext \(context.index0 + 1)/\(context.items.count)>"
        case .function(.macro(let closure)):
            return "<Macro '\(closure.definition.name)'>"
        case .iterator, .function:
            throw ChatTemplateError(
                .invalidOperation, "cannot print a \(value.typeName) object (its Python form has a memory address)",
                at: location)
        }
    }

    private func dictionaryRepresentation(
        _ dictionary: JinjaRuntimeDictionary, at location: JinjaLocation, depth: Int
    ) throws(ChatTemplateError) -> String {
        var parts: [String] = []
        for (key, item) in dictionary.pairs {
            parts.append(
                (try representation(key, at: location, depth: depth + 1)) + ": "
                    + (try representation(item, at: location, depth: depth + 1)))
        }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}
