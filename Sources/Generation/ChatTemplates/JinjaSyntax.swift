// The parsed form of a template: statements (`JinjaNode`) holding expressions (`JinjaExpression`),
// each expression with the source location runtime errors report.

typealias JinjaLocation = ChatTemplateError.Location

/// A constant written in the template.
enum JinjaLiteral: Sendable {
    case none
    case boolean(Bool)
    case integer(Int)
    case float(Double)
    case string(String)
}

/// Positional and keyword arguments of a call, filter or test.
struct JinjaArguments: Sendable {
    var positional: [JinjaExpression] = []
    var keywords: [(name: String, value: JinjaExpression)] = []

    static let none = JinjaArguments()
}

enum JinjaBinaryOperator: String, Sendable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case floorDivide = "//"
    case remainder = "%"
    case power = "**"
}

enum JinjaComparison: String, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case contains = "in"
    case notContains = "not in"
}

struct JinjaExpression: Sendable {
    indirect enum Kind: Sendable {
        case literal(JinjaLiteral)
        case name(String)
        case list([JinjaExpression])
        case tuple([JinjaExpression])
        case dictionary([(key: JinjaExpression, value: JinjaExpression)])
        /// `value.name`
        case attribute(JinjaExpression, String)
        /// `value[key]`
        case item(JinjaExpression, JinjaExpression)
        /// `value[start:stop:step]`
        case slice(JinjaExpression, start: JinjaExpression?, stop: JinjaExpression?, step: JinjaExpression?)
        case negate(JinjaExpression)
        case positive(JinjaExpression)
        case not(JinjaExpression)
        case binary(JinjaBinaryOperator, JinjaExpression, JinjaExpression)
        case and(JinjaExpression, JinjaExpression)
        case or(JinjaExpression, JinjaExpression)
        /// `a ~ b ~ c`
        case concatenate([JinjaExpression])
        /// `a < b <= c`, chained as in Python.
        case compare(JinjaExpression, [(JinjaComparison, JinjaExpression)])
        /// `then if test else otherwise`; a missing `else` yields undefined.
        case conditional(test: JinjaExpression, then: JinjaExpression, otherwise: JinjaExpression?)
        /// `value | name(arguments)`
        case filter(JinjaExpression, name: String, JinjaArguments)
        /// `value is name arguments`; `is not` wraps it in `.not`.
        case test(JinjaExpression, name: String, JinjaArguments)
        /// `callee(arguments)`
        case call(JinjaExpression, JinjaArguments)
    }

    let kind: Kind
    let location: JinjaLocation
}

/// What `{% set … %}` or `{% for … %}` assigns to.
enum JinjaTarget: Sendable {
    case name(String)
    /// `a, b` (tuple unpacking)
    case names([String])
    /// `ns.attribute`, allowed only on a `namespace()` object.
    case attribute(namespace: String, attribute: String)
}

struct JinjaLoop: Sendable {
    var target: JinjaTarget
    var iterable: JinjaExpression
    /// `{% for x in xs if condition %}`
    var condition: JinjaExpression?
    var body: [JinjaNode]
    /// `{% else %}`: rendered when no item passed.
    var otherwise: [JinjaNode]
    var location: JinjaLocation
}

/// `{% macro name(a, b=default) %}…{% endmacro %}`
struct JinjaMacro: Sendable {
    var name: String
    var parameters: [(name: String, defaultValue: JinjaExpression?)]
    var body: [JinjaNode]
    /// Whether the body reads `varargs` / `kwargs`, which lets callers pass extra arguments.
    var usesVarargs: Bool
    var usesKeywordArguments: Bool
}

indirect enum JinjaNode: Sendable {
    case text(String)
    case output(JinjaExpression)
    case conditional(branches: [(test: JinjaExpression, body: [JinjaNode])], otherwise: [JinjaNode])
    case loop(JinjaLoop)
    case assignment(JinjaTarget, JinjaExpression, JinjaLocation)
    /// `{% set name %}…{% endset %}`
    case capture(String, [JinjaNode])
    case breakLoop
    case continueLoop
    /// transformers' `{% generation %}…{% endgeneration %}`, which only marks assistant text.
    case generation([JinjaNode])
    case macro(JinjaMacro)
}
