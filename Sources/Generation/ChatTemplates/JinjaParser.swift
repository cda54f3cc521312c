// A recursive-descent parser with Jinja's grammar and operator precedence, lowest first:
// `x if c else y`, `or`, `and`, `not`, comparisons and `in`, `+ -`, `~`, `* / // %`, `**`, unary
// `- +`, then postfix `.name`, `[…]`, `(…)`, `| filter` and `is test` (which bind tighter than any
// binary operator: `'a' + b | trim` trims only `b`).

/// The tokens of one tag and a read position in them.
private struct TagCursor {
    let tokens: [JinjaToken]
    var index = 0

    var current: JinjaToken { tokens[index] }
    var next: JinjaToken { tokens[min(index + 1, tokens.count - 1)] }

    mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol(symbol) }
    func isName(_ name: String) -> Bool { current.kind == .name(name) }
    var isEnd: Bool { current.kind == .end }
}

struct JinjaParser {
    private let segments: [JinjaSegment]
    private let sourceMap: JinjaSourceMap
    private let maximumDepth: Int
    private var segmentIndex = 0
    private var cursor = TagCursor(tokens: [JinjaToken(kind: .end, offset: 0)])
    private var depth = 0
    private var loopDepth = 0
    /// Every name a `{% macro %}` defines anywhere in the template: calls to them are allowed even
    /// before the definition (a macro may call one defined later).
    private let macroNames: Set<String>

    init(segments: [JinjaSegment], sourceMap: JinjaSourceMap, maximumDepth: Int) {
        self.segments = segments
        self.sourceMap = sourceMap
        self.maximumDepth = maximumDepth
        var names: Set<String> = []
        for case .statement(let tokens, _) in segments where tokens.count > 1 && tokens[0].kind == .name("macro") {
            if case .name(let name) = tokens[1].kind { names.insert(name) }
        }
        macroNames = names
    }

    mutating func parseTemplate() throws(ChatTemplateError) -> [JinjaNode] {
        let (nodes, _) = try parseBody(until: [], opener: nil)
        return nodes
    }

    // MARK: - Errors and depth

    private func location(_ offset: Int) -> JinjaLocation { sourceMap.location(of: offset) }

    private func failure(_ code: ChatTemplateError.Code, _ message: String, at offset: Int) -> ChatTemplateError {
        ChatTemplateError(code, message, at: location(offset))
    }

    private func unexpected(_ expected: String) -> ChatTemplateError {
        failure(.syntax, "expected \(expected), found \(describe(cursor.current))", at: cursor.current.offset)
    }

    private func describe(_ token: JinjaToken) -> String {
        switch token.kind {
        case .name(let name): return "'\(name)'"
        case .string: return "a string"
        case .integer, .float: return "a number"
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "the end of the tag"
        }
    }

    /// Counts one level of nesting (a block, a bracket, an operand); deep nesting is an error rather
    /// than a stack overflow.
    private mutating func enter(at offset: Int) throws(ChatTemplateError) {
        depth += 1
        if depth > maximumDepth {
            throw failure(.limitExceeded, "template nesting deeper than \(maximumDepth) levels", at: offset)
        }
    }

    private mutating func leave() { depth -= 1 }

    // MARK: - Statements

    /// Parses nodes up to a `{% … %}` tag whose name is in `terminators`, returning that name with the
    /// cursor just past it. At the end of the template, `terminators` must be empty.
    private mutating func parseBody(
        until terminators: Set<String>, opener: (name: String, offset: Int)?
    ) throws(ChatTemplateError) -> ([JinjaNode], String?) {
        var nodes: [JinjaNode] = []
        while segmentIndex < segments.count {
            let segment = segments[segmentIndex]
            segmentIndex += 1
            switch segment {
            case .text(let text):
                nodes.append(.text(text))
            case .output(let tokens, _):
                cursor = TagCursor(tokens: tokens)
                let expression = try parseTuple()
                try expectEnd()
                nodes.append(.output(expression))
            case .statement(let tokens, let offset):
                cursor = TagCursor(tokens: tokens)
                guard case .name(let name) = cursor.current.kind else { throw unexpected("a tag name") }
                if terminators.contains(name) {
                    cursor.advance()
                    return (nodes, name)
                }
                cursor.advance()
                try enter(at: offset)
                nodes.append(try parseStatement(name, offset: offset))
                leave()
            }
        }
        if let opener {
            let expected = terminators.sorted().map { "'\($0)'" }.joined(separator: " or ")
            throw failure(.syntax, "unexpected end of template: '\(opener.name)' needs \(expected)", at: opener.offset)
        }
        return (nodes, nil)
    }

    private mutating func parseStatement(_ name: String, offset: Int) throws(ChatTemplateError) -> JinjaNode {
        switch name {
        case "if": return try parseIf(offset: offset)
        case "for": return try parseFor(offset: offset)
        case "set": return try parseSet(offset: offset)
        case "break", "continue":
            guard loopDepth > 0 else { throw failure(.syntax, "'\(name)' outside a loop", at: offset) }
            try expectEnd()
            return name == "break" ? .breakLoop : .continueLoop
        case "generation":
            try expectEnd()
            let (body, _) = try parseBody(until: ["endgeneration"], opener: (name, offset))
            try expectEnd()
            return .generation(body)
        case "macro":
            return try parseMacro(offset: offset)
        case "elif", "else", "endif", "endfor", "endset", "endgeneration", "endmacro", "endraw":
            throw failure(.syntax, "unexpected '\(name)'", at: offset)
        default:
            if JinjaBuiltins.unsupportedTags.contains(name) {
                throw failure(.unsupported, "unsupported tag '\(name)'", at: offset)
            }
            throw failure(.syntax, "unknown tag '\(name)'", at: offset)
        }
    }

    private mutating func expectEnd() throws(ChatTemplateError) {
        guard cursor.isEnd else { throw unexpected("the end of the tag") }
    }

    private mutating func parseIf(offset: Int) throws(ChatTemplateError) -> JinjaNode {
        var branches: [(test: JinjaExpression, body: [JinjaNode])] = []
        var test = try parseTuple(withConditional: false)
        try expectEnd()
        while true {
            let (body, terminator) = try parseBody(until: ["elif", "else", "endif"], opener: ("if", offset))
            branches.append((test, body))
            switch terminator {
            case "elif":
                test = try parseTuple(withConditional: false)
                try expectEnd()
            case "else":
                try expectEnd()
                let (otherwise, _) = try parseBody(until: ["endif"], opener: ("if", offset))
                try expectEnd()
                return .conditional(branches: branches, otherwise: otherwise)
            default:
                try expectEnd()
                return .conditional(branches: branches, otherwise: [])
            }
        }
    }

    private mutating func parseFor(offset: Int) throws(ChatTemplateError) -> JinjaNode {
        let target = try parseTarget(allowingNamespace: false)
        guard cursor.isName("in") else { throw unexpected("'in'") }
        cursor.advance()
        let iterable = try parseTuple(withConditional: false, extraEnds: ["recursive"])
        var condition: JinjaExpression? = nil
        if cursor.isName("if") {
            cursor.advance()
            condition = try parseExpression()
        }
        if cursor.isName("recursive") {
            throw failure(.unsupported, "unsupported recursive loop", at: cursor.current.offset)
        }
        try expectEnd()
        loopDepth += 1
        let (body, terminator) = try parseBody(until: ["endfor", "else"], opener: ("for", offset))
        loopDepth -= 1
        var otherwise: [JinjaNode] = []
        if terminator == "else" {
            try expectEnd()
            // The `else` body runs outside the loop: `break` there belongs to an enclosing loop.
            (otherwise, _) = try parseBody(until: ["endfor"], opener: ("for", offset))
        }
        try expectEnd()
        return .loop(
            JinjaLoop(
                target: target, iterable: iterable, condition: condition, body: body, otherwise: otherwise,
                location: location(offset)))
    }

    private mutating func parseSet(offset: Int) throws(ChatTemplateError) -> JinjaNode {
        let target = try parseTarget(allowingNamespace: true)
        if cursor.isSymbol("=") {
            cursor.advance()
            let value = try parseTuple()
            try expectEnd()
            return .assignment(target, value, location(offset))
        }
        guard case .name(let name) = target else { throw unexpected("'='") }
        if cursor.isSymbol("|") {
            throw failure(.unsupported, "unsupported filter on a block set", at: cursor.current.offset)
        }
        try expectEnd()
        let (body, _) = try parseBody(until: ["endset"], opener: ("set", offset))
        try expectEnd()
        return .capture(name, body)
    }

    private mutating func parseMacro(offset: Int) throws(ChatTemplateError) -> JinjaNode {
        guard case .name(let name) = cursor.current.kind else { throw unexpected("a macro name") }
        cursor.advance()
        guard cursor.isSymbol("(") else { throw unexpected("'('") }
        cursor.advance()
        var parameters: [(name: String, defaultValue: JinjaExpression?)] = []
        while !cursor.isSymbol(")") {
            if !parameters.isEmpty {
                guard cursor.isSymbol(",") else { throw unexpected("',' or ')'") }
                cursor.advance()
                if cursor.isSymbol(")") { break }
            }
            guard case .name(let parameter) = cursor.current.kind else { throw unexpected("a parameter name") }
            cursor.advance()
            var defaultValue: JinjaExpression? = nil
            if cursor.isSymbol("=") {
                cursor.advance()
                defaultValue = try parseExpression()
            } else if parameters.contains(where: { $0.defaultValue != nil }) {
                throw failure(.syntax, "non-default argument follows default argument", at: cursor.current.offset)
            }
            parameters.append((parameter, defaultValue))
        }
        cursor.advance()
        try expectEnd()
        // A macro body is a new function: `break` there cannot reach a loop around the definition.
        let savedLoopDepth = loopDepth
        loopDepth = 0
        let (body, _) = try parseBody(until: ["endmacro"], opener: ("macro", offset))
        loopDepth = savedLoopDepth
        try expectEnd()
        return .macro(
            JinjaMacro(
                name: name, parameters: parameters, body: body, usesVarargs: Self.reads("varargs", in: body),
                usesKeywordArguments: Self.reads("kwargs", in: body)))
    }

    /// Whether `nodes` (outside nested macros) read the variable `name`.
    private static func reads(_ name: String, in nodes: [JinjaNode]) -> Bool {
        func expressionReads(_ expression: JinjaExpression?) -> Bool {
            guard let expression else { return false }
            switch expression.kind {
            case .literal: return false
            case .name(let candidate): return candidate == name
            case .list(let items), .tuple(let items), .concatenate(let items):
                return items.contains(where: expressionReads)
            case .dictionary(let pairs): return pairs.contains { expressionReads($0.key) || expressionReads($0.value) }
            case .attribute(let base, _), .negate(let base), .positive(let base), .not(let base):
                return expressionReads(base)
            case .item(let base, let key), .and(let base, let key), .or(let base, let key),
                .binary(_, let base, let key):
                return expressionReads(base) || expressionReads(key)
            case .slice(let base, let start, let stop, let step):
                return expressionReads(base) || expressionReads(start) || expressionReads(stop) || expressionReads(step)
            case .compare(let first, let rest): return expressionReads(first) || rest.contains { expressionReads($0.1) }
            case .conditional(let test, let then, let otherwise):
                return expressionReads(test) || expressionReads(then) || expressionReads(otherwise)
            case .filter(let base, _, let arguments), .test(let base, _, let arguments), .call(let base, let arguments):
                return expressionReads(base) || arguments.positional.contains(where: expressionReads)
                    || arguments.keywords.contains { expressionReads($0.value) }
            }
        }
        return nodes.contains { node in
            switch node {
            case .text, .breakLoop, .continueLoop, .macro: return false
            case .output(let expression), .assignment(_, let expression, _): return expressionReads(expression)
            case .conditional(let branches, let otherwise):
                return branches.contains { expressionReads($0.test) || reads(name, in: $0.body) }
                    || reads(name, in: otherwise)
            case .loop(let loop):
                return expressionReads(loop.iterable) || expressionReads(loop.condition) || reads(name, in: loop.body)
                    || reads(name, in: loop.otherwise)
            case .capture(_, let body), .generation(let body): return reads(name, in: body)
            }
        }
    }

    /// `name`, `a, b`, `(a, b)`, or with `allowingNamespace`, `ns.attribute`.
    private mutating func parseTarget(allowingNamespace: Bool) throws(ChatTemplateError) -> JinjaTarget {
        if allowingNamespace, case .name(let namespace) = cursor.current.kind, cursor.next.kind == .symbol(".") {
            cursor.advance()
            cursor.advance()
            guard case .name(let attribute) = cursor.current.kind else { throw unexpected("an attribute name") }
            cursor.advance()
            return .attribute(namespace: namespace, attribute: attribute)
        }
        let parenthesized = cursor.isSymbol("(")
        if parenthesized { cursor.advance() }
        var names: [String] = []
        var isTuple = parenthesized
        while true {
            if cursor.isSymbol("(") {
                throw failure(.unsupported, "unsupported nested unpacking", at: cursor.current.offset)
            }
            guard case .name(let name) = cursor.current.kind else { throw unexpected("a variable name") }
            names.append(name)
            cursor.advance()
            guard cursor.isSymbol(",") else { break }
            isTuple = true
            cursor.advance()
            if parenthesized && cursor.isSymbol(")") { break }
            if !parenthesized, cursor.isName("in") || cursor.isSymbol("=") { break }
        }
        if parenthesized {
            guard cursor.isSymbol(")") else { throw unexpected("')'") }
            cursor.advance()
        }
        for name in names where ["true", "false", "none", "True", "False", "None"].contains(name) {
            throw failure(.syntax, "cannot assign to '\(name)'", at: cursor.current.offset)
        }
        return isTuple ? .names(names) : .name(names[0])
    }

    // MARK: - Expressions

    /// Jinja's `parse_tuple`: one expression, or a tuple when commas separate several.
    private mutating func parseTuple(
        withConditional: Bool = true, extraEnds: Set<String> = [], explicitParentheses: Bool = false
    ) throws(ChatTemplateError) -> JinjaExpression {
        let start = cursor.current
        var items: [JinjaExpression] = []
        var isTuple = false
        while true {
            if !items.isEmpty {
                guard cursor.isSymbol(",") else { throw unexpected("','") }
                cursor.advance()
            }
            if cursor.isEnd || cursor.isSymbol(")") { break }
            if case .name(let name) = cursor.current.kind, extraEnds.contains(name) { break }
            items.append(withConditional ? try parseExpression() : try parseOr())
            guard cursor.isSymbol(",") else { break }
            isTuple = true
        }
        if !isTuple {
            if let first = items.first { return first }
            if !explicitParentheses { throw unexpected("an expression") }
        }
        return JinjaExpression(kind: .tuple(items), location: location(start.offset))
    }

    private mutating func parseExpression() throws(ChatTemplateError) -> JinjaExpression {
        try enter(at: cursor.current.offset)
        defer { leave() }
        var expression = try parseOr()
        while cursor.isName("if") {
            cursor.advance()
            let test = try parseOr()
            var otherwise: JinjaExpression? = nil
            if cursor.isName("else") {
                cursor.advance()
                otherwise = try parseExpression()
            }
            expression = JinjaExpression(
                kind: .conditional(test: test, then: expression, otherwise: otherwise), location: expression.location)
        }
        return expression
    }

    private mutating func parseOr() throws(ChatTemplateError) -> JinjaExpression {
        var left = try parseAnd()
        while cursor.isName("or") {
            cursor.advance()
            let right = try parseAnd()
            left = JinjaExpression(kind: .or(left, right), location: left.location)
        }
        return left
    }

    private mutating func parseAnd() throws(ChatTemplateError) -> JinjaExpression {
        var left = try parseNot()
        while cursor.isName("and") {
            cursor.advance()
            let right = try parseNot()
            left = JinjaExpression(kind: .and(left, right), location: left.location)
        }
        return left
    }

    private mutating func parseNot() throws(ChatTemplateError) -> JinjaExpression {
        guard cursor.isName("not") else { return try parseCompare() }
        let offset = cursor.current.offset
        cursor.advance()
        try enter(at: offset)
        defer { leave() }
        return JinjaExpression(kind: .not(try parseNot()), location: location(offset))
    }

    private mutating func parseCompare() throws(ChatTemplateError) -> JinjaExpression {
        let left = try parseAdditive()
        var operations: [(JinjaComparison, JinjaExpression)] = []
        while true {
            let operation: JinjaComparison
            switch cursor.current.kind {
            case .symbol("=="): operation = .equal
            case .symbol("!="): operation = .notEqual
            case .symbol("<"): operation = .less
            case .symbol("<="): operation = .lessOrEqual
            case .symbol(">"): operation = .greater
            case .symbol(">="): operation = .greaterOrEqual
            case .name("in"): operation = .contains
            case .name("not") where cursor.next.kind == .name("in"):
                cursor.advance()
                operation = .notContains
            default:
                return operations.isEmpty
                    ? left : JinjaExpression(kind: .compare(left, operations), location: left.location)
            }
            cursor.advance()
            operations.append((operation, try parseAdditive()))
        }
    }

    private mutating func parseAdditive() throws(ChatTemplateError) -> JinjaExpression {
        var left = try parseConcatenation()
        while true {
            let operation: JinjaBinaryOperator
            if cursor.isSymbol("+") {
                operation = .add
            } else if cursor.isSymbol("-") {
                operation = .subtract
            } else {
                return left
            }
            cursor.advance()
            let right = try parseConcatenation()
            left = JinjaExpression(kind: .binary(operation, left, right), location: left.location)
        }
    }

    private mutating func parseConcatenation() throws(ChatTemplateError) -> JinjaExpression {
        let first = try parseMultiplicative()
        var operands = [first]
        while cursor.isSymbol("~") {
            cursor.advance()
            operands.append(try parseMultiplicative())
        }
        return operands.count == 1 ? first : JinjaExpression(kind: .concatenate(operands), location: first.location)
    }

    private mutating func parseMultiplicative() throws(ChatTemplateError) -> JinjaExpression {
        var left = try parsePower()
        while true {
            let operation: JinjaBinaryOperator
            switch cursor.current.kind {
            case .symbol("*"): operation = .multiply
            case .symbol("/"): operation = .divide
            case .symbol("//"): operation = .floorDivide
            case .symbol("%"): operation = .remainder
            default: return left
            }
            cursor.advance()
            let right = try parsePower()
            left = JinjaExpression(kind: .binary(operation, left, right), location: left.location)
        }
    }

    /// `**` associates to the left in Jinja (`2 ** 3 ** 2` is 64), unlike Python.
    private mutating func parsePower() throws(ChatTemplateError) -> JinjaExpression {
        var left = try parseUnary()
        while cursor.isSymbol("**") {
            cursor.advance()
            let right = try parseUnary()
            left = JinjaExpression(kind: .binary(.power, left, right), location: left.location)
        }
        return left
    }

    /// Unary minus applies before postfix filters and tests: `-x | abs` is `(-x) | abs`.
    private mutating func parseUnary(withFilters: Bool = true) throws(ChatTemplateError) -> JinjaExpression {
        let offset = cursor.current.offset
        try enter(at: offset)
        defer { leave() }
        var expression: JinjaExpression
        if cursor.isSymbol("-") {
            cursor.advance()
            expression = JinjaExpression(kind: .negate(try parseUnary(withFilters: false)), location: location(offset))
        } else if cursor.isSymbol("+") {
            cursor.advance()
            expression = JinjaExpression(
                kind: .positive(try parseUnary(withFilters: false)), location: location(offset))
        } else {
            expression = try parsePrimary()
        }
        expression = try parsePostfix(expression)
        if withFilters { expression = try parseFiltersAndTests(expression) }
        return expression
    }

    private mutating func parsePrimary() throws(ChatTemplateError) -> JinjaExpression {
        let token = cursor.current
        let here = location(token.offset)
        switch token.kind {
        case .name(let name):
            cursor.advance()
            switch name {
            case "true", "True": return JinjaExpression(kind: .literal(.boolean(true)), location: here)
            case "false", "False": return JinjaExpression(kind: .literal(.boolean(false)), location: here)
            case "none", "None": return JinjaExpression(kind: .literal(.none), location: here)
            case "and", "or", "not", "in", "is", "if", "else":
                throw failure(.syntax, "unexpected '\(name)'", at: token.offset)
            default: return JinjaExpression(kind: .name(name), location: here)
            }
        case .string(var text):
            cursor.advance()
            while case .string(let more) = cursor.current.kind {
                text += more
                cursor.advance()
            }
            return JinjaExpression(kind: .literal(.string(text)), location: here)
        case .integer(let value):
            cursor.advance()
            return JinjaExpression(kind: .literal(.integer(value)), location: here)
        case .float(let value):
            cursor.advance()
            return JinjaExpression(kind: .literal(.float(value)), location: here)
        case .symbol("("):
            cursor.advance()
            let inner = try parseTuple(explicitParentheses: true)
            guard cursor.isSymbol(")") else { throw unexpected("')'") }
            cursor.advance()
            return inner
        case .symbol("["):
            cursor.advance()
            var items: [JinjaExpression] = []
            while !cursor.isSymbol("]") {
                if !items.isEmpty {
                    guard cursor.isSymbol(",") else { throw unexpected("',' or ']'") }
                    cursor.advance()
                    if cursor.isSymbol("]") { break }
                }
                items.append(try parseExpression())
            }
            cursor.advance()
            return JinjaExpression(kind: .list(items), location: here)
        case .symbol("{"):
            cursor.advance()
            var pairs: [(key: JinjaExpression, value: JinjaExpression)] = []
            while !cursor.isSymbol("}") {
                if !pairs.isEmpty {
                    guard cursor.isSymbol(",") else { throw unexpected("',' or '}'") }
                    cursor.advance()
                    if cursor.isSymbol("}") { break }
                }
                let key = try parseExpression()
                guard cursor.isSymbol(":") else { throw unexpected("':'") }
                cursor.advance()
                pairs.append((key, try parseExpression()))
            }
            cursor.advance()
            return JinjaExpression(kind: .dictionary(pairs), location: here)
        default:
            throw unexpected("an expression")
        }
    }

    private mutating func parsePostfix(_ base: JinjaExpression) throws(ChatTemplateError) -> JinjaExpression {
        var expression = base
        while true {
            let token = cursor.current
            if cursor.isSymbol(".") {
                cursor.advance()
                switch cursor.current.kind {
                case .name(let name):
                    let nameLocation = location(cursor.current.offset)
                    cursor.advance()
                    expression = JinjaExpression(kind: .attribute(expression, name), location: nameLocation)
                case .integer(let index):
                    cursor.advance()
                    let key = JinjaExpression(kind: .literal(.integer(index)), location: location(token.offset))
                    expression = JinjaExpression(kind: .item(expression, key), location: location(token.offset))
                default:
                    throw unexpected("an attribute name")
                }
            } else if cursor.isSymbol("[") {
                cursor.advance()
                expression = try parseSubscript(expression, at: token.offset)
            } else if cursor.isSymbol("(") {
                expression = try parseCall(expression)
            } else {
                return expression
            }
        }
    }

    private mutating func parseSubscript(
        _ base: JinjaExpression, at offset: Int
    ) throws(ChatTemplateError) -> JinjaExpression {
        let here = location(offset)
        func isBoundaryEnd(_ cursor: TagCursor) -> Bool { cursor.isSymbol("]") || cursor.isSymbol(",") }
        var start: JinjaExpression? = nil
        if !cursor.isSymbol(":") {
            let first = try parseExpression()
            if cursor.isSymbol("]") {
                cursor.advance()
                return JinjaExpression(kind: .item(base, first), location: here)
            }
            if cursor.isSymbol(",") {
                throw failure(.unsupported, "unsupported tuple subscript", at: cursor.current.offset)
            }
            start = first
        }
        guard cursor.isSymbol(":") else { throw unexpected("':' or ']'") }
        cursor.advance()
        var stop: JinjaExpression? = nil
        var step: JinjaExpression? = nil
        if !isBoundaryEnd(cursor) && !cursor.isSymbol(":") { stop = try parseExpression() }
        if cursor.isSymbol(":") {
            cursor.advance()
            if !isBoundaryEnd(cursor) { step = try parseExpression() }
        }
        guard cursor.isSymbol("]") else { throw unexpected("']'") }
        cursor.advance()
        return JinjaExpression(kind: .slice(base, start: start, stop: stop, step: step), location: here)
    }

    /// A call; only the global functions and methods the interpreter implements may be called.
    private mutating func parseCall(_ callee: JinjaExpression) throws(ChatTemplateError) -> JinjaExpression {
        switch callee.kind {
        case .name(let name) where JinjaBuiltins.functions.contains(name) || macroNames.contains(name):
            break
        case .attribute(_, let method) where JinjaBuiltins.methods.contains(method):
            break
        case .name(let name):
            let kind = JinjaBuiltins.unsupportedFunctions.contains(name) ? "function" : "call to"
            throw ChatTemplateError(.unsupported, "unsupported \(kind) '\(name)'", at: callee.location)
        case .attribute(_, let method):
            throw ChatTemplateError(.unsupported, "unsupported method '\(method)'", at: callee.location)
        default:
            throw failure(.unsupported, "unsupported call of a computed value", at: cursor.current.offset)
        }
        let arguments = try parseArguments()
        return JinjaExpression(kind: .call(callee, arguments), location: callee.location)
    }

    private mutating func parseArguments() throws(ChatTemplateError) -> JinjaArguments {
        cursor.advance()
        var arguments = JinjaArguments()
        while !cursor.isSymbol(")") {
            if !arguments.positional.isEmpty || !arguments.keywords.isEmpty {
                guard cursor.isSymbol(",") else { throw unexpected("',' or ')'") }
                cursor.advance()
                if cursor.isSymbol(")") { break }
            }
            if cursor.isSymbol("*") || cursor.isSymbol("**") {
                throw failure(.unsupported, "unsupported '*' or '**' arguments", at: cursor.current.offset)
            }
            if case .name(let name) = cursor.current.kind, cursor.next.kind == .symbol("=") {
                cursor.advance()
                cursor.advance()
                arguments.keywords.append((name, try parseExpression()))
            } else {
                guard arguments.keywords.isEmpty else {
                    throw failure(.syntax, "positional argument after keyword argument", at: cursor.current.offset)
                }
                arguments.positional.append(try parseExpression())
            }
        }
        cursor.advance()
        return arguments
    }

    private mutating func parseFiltersAndTests(_ base: JinjaExpression) throws(ChatTemplateError) -> JinjaExpression {
        var expression = base
        while true {
            if cursor.isSymbol("|") {
                cursor.advance()
                let offset = cursor.current.offset
                guard case .name(let name) = cursor.current.kind else { throw unexpected("a filter name") }
                cursor.advance()
                if cursor.isSymbol(".") { throw failure(.unsupported, "unsupported dotted filter name", at: offset) }
                if JinjaBuiltins.unsupportedFilters.contains(name) {
                    throw failure(.unsupported, "unsupported filter '\(name)'", at: offset)
                }
                guard JinjaBuiltins.filters.contains(name) else {
                    throw failure(.syntax, "unknown filter '\(name)'", at: offset)
                }
                let arguments = cursor.isSymbol("(") ? try parseArguments() : .none
                try validateNamedCallables(name, arguments)
                expression = JinjaExpression(
                    kind: .filter(expression, name: name, arguments), location: location(offset))
            } else if cursor.isName("is") {
                cursor.advance()
                var negated = false
                if cursor.isName("not") {
                    negated = true
                    cursor.advance()
                }
                let offset = cursor.current.offset
                guard case .name(let name) = cursor.current.kind else { throw unexpected("a test name") }
                cursor.advance()
                if JinjaBuiltins.unsupportedTests.contains(name) {
                    throw failure(.unsupported, "unsupported test '\(name)'", at: offset)
                }
                guard JinjaBuiltins.tests.contains(name) else {
                    throw failure(.syntax, "unknown test '\(name)'", at: offset)
                }
                var arguments = JinjaArguments.none
                if cursor.isSymbol("(") {
                    arguments = try parseArguments()
                } else if startsTestArgument(cursor.current.kind) {
                    if cursor.isName("is") {
                        throw failure(.syntax, "tests cannot be chained with 'is'", at: cursor.current.offset)
                    }
                    arguments.positional = [try parsePostfix(try parsePrimary())]
                }
                let test = JinjaExpression(kind: .test(expression, name: name, arguments), location: location(offset))
                expression = negated ? JinjaExpression(kind: .not(test), location: test.location) : test
            } else if cursor.isSymbol("(") {
                throw failure(.unsupported, "unsupported call of a computed value", at: cursor.current.offset)
            } else {
                return expression
            }
        }
    }

    /// Jinja reads `x is divisibleby 3` and `x is sameas none`: a test takes one unparenthesized
    /// argument when the next token can start one (and is not `else`, `or` or `and`).
    private func startsTestArgument(_ kind: JinjaToken.Kind) -> Bool {
        switch kind {
        case .name(let name): return !["else", "or", "and"].contains(name)
        case .string, .integer, .float: return true
        case .symbol(let symbol): return ["(", "[", "{"].contains(symbol)
        case .end: return false
        }
    }

    /// `map('upper')`, `select('odd')`, `selectattr('role', 'equalto', 'user')` name a filter or test in
    /// a string; when that string is a literal, check the name now.
    private func validateNamedCallables(_ filter: String, _ arguments: JinjaArguments) throws(ChatTemplateError) {
        let index: Int
        let isTest: Bool
        switch filter {
        case "map":
            guard !arguments.keywords.contains(where: { $0.name == "attribute" }) else { return }
            (index, isTest) = (0, false)
        case "select", "reject": (index, isTest) = (0, true)
        case "selectattr", "rejectattr": (index, isTest) = (1, true)
        default: return
        }
        guard index < arguments.positional.count, case .literal(.string(let name)) = arguments.positional[index].kind
        else { return }
        let supported = isTest ? JinjaBuiltins.tests : JinjaBuiltins.filters
        let unsupported = isTest ? JinjaBuiltins.unsupportedTests : JinjaBuiltins.unsupportedFilters
        let kind = isTest ? "test" : "filter"
        if unsupported.contains(name) {
            throw ChatTemplateError(
                .unsupported, "unsupported \(kind) '\(name)'", at: arguments.positional[index].location)
        }
        if !supported.contains(name) {
            throw ChatTemplateError(.syntax, "unknown \(kind) '\(name)'", at: arguments.positional[index].location)
        }
    }
}
