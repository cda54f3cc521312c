/// An option that takes a value, `--k 5` or `--k=5`, declared once: its name, the value's name in
/// help, its help text, its default and the values it allows. Parsing, the usage line, the help row
/// and the typed getters of `ParsedArguments` all come from this declaration.
///
/// ```swift
/// static let k = Option<Int>("--k", valueName: "n", help: "How many chunks to retrieve.", default: 4, range: 0...10_000)
/// let k = parsed[SharedOptions.k]  // 4 unless given
/// ```
///
/// The value is converted when the arguments are parsed, so a bad value is a usage error (exit 64)
/// before any work starts.
package struct Option<Value: Sendable>: Sendable {
    /// The spelling on the command line, dashes included: `--k`.
    package let name: String
    /// What the value is, shown as `<valueName>` in help: `n`, `file`.
    package let valueName: String
    /// The help row's text (its first sentence gets the allowed values and the default).
    package let help: String
    /// The value when the option is not given; nil: no value.
    package let defaultValue: Value?
    /// The default as help words it, when it is not a fixed value (`the model's own pooling`).
    package let defaultDescription: String?
    /// Every value allowed, as typed, in help order; nil: any value the conversion takes.
    package let choices: [String]?
    let convert: @Sendable (String) throws -> Value

    /// An option whose value `convert` makes from the text (throwing `CLIError.usage` for bad text).
    package init(
        _ name: String, valueName: String, help: String, default defaultValue: Value? = nil,
        defaultDescription: String? = nil, choices: [String]? = nil,
        convert: @escaping @Sendable (String) throws -> Value
    ) {
        precondition(
            name.hasPrefix("--") && name.count > 2 && !name.contains("="), "an option is spelled --name: '\(name)'")
        self.name = name
        self.valueName = valueName
        self.help = help
        self.defaultValue = defaultValue
        self.defaultDescription = defaultDescription
        self.choices = choices
        self.convert = convert
    }

    /// The same option with another help text or value name, for a subcommand that words it
    /// differently (`eval --k` reports recall@1…k).
    package func with(valueName: String? = nil, help: String? = nil, defaultDescription: String? = nil) -> Option {
        Option(
            name, valueName: valueName ?? self.valueName, help: help ?? self.help, default: defaultValue,
            defaultDescription: defaultDescription ?? self.defaultDescription, choices: choices, convert: convert)
    }

    /// The option as usage lines show it: `--k <n>`, or `--mode hybrid|lexical|semantic`.
    package var synopsis: String {
        "\(name) " + (choices.map { $0.joined(separator: "|") } ?? "<\(valueName)>")
    }
}

extension Option where Value == String {
    /// An option taking any text.
    package init(
        _ name: String, valueName: String, help: String, default defaultValue: String? = nil,
        defaultDescription: String? = nil
    ) {
        self.init(name, valueName: valueName, help: help, default: defaultValue, defaultDescription: defaultDescription)
        { $0 }
    }
}

extension Option where Value == Int {
    /// An integer option; values outside `range` are usage errors. Digits may be grouped with `_`
    /// (`1_000_000`).
    package init(
        _ name: String, valueName: String, help: String, default defaultValue: Int? = nil,
        defaultDescription: String? = nil, range: ClosedRange<Int>
    ) {
        precondition(defaultValue.map(range.contains) ?? true, "the default of \(name) is outside \(range)")
        self.init(name, valueName: valueName, help: help, default: defaultValue, defaultDescription: defaultDescription)
        { text in
            guard let value = Int(text.filter { $0 != "_" }), !text.hasPrefix("_"), range.contains(value) else {
                throw CLIError.usage(
                    "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
            }
            return value
        }
    }

    /// The same option with another range (`eval --k` needs at least 1).
    package func with(range: ClosedRange<Int>, help: String? = nil) -> Option {
        Option(
            name, valueName: valueName, help: help ?? self.help, default: defaultValue,
            defaultDescription: defaultDescription, range: range)
    }
}

extension Option where Value: CaseIterable & RawRepresentable, Value.RawValue == String {
    /// An option taking one of an enumeration's raw values; help and errors list them.
    /// `choices` narrows or orders them (default: every case, in declaration order).
    package init(
        _ name: String, valueName: String, help: String, default defaultValue: Value? = nil,
        defaultDescription: String? = nil, choices: [Value] = Array(Value.allCases)
    ) {
        let allowed = choices.map(\.rawValue)
        self.init(
            name, valueName: valueName, help: help, default: defaultValue, defaultDescription: defaultDescription,
            choices: allowed
        ) { text in
            guard allowed.contains(text), let value = Value(rawValue: text) else {
                throw CLIError.usage("\(name) must be \(HelpFormatter.alternatives(allowed)), got '\(text)'")
            }
            return value
        }
    }
}

/// An option without a value: `--quiet`. Given means true.
package struct Flag: Sendable {
    /// The spelling on the command line, dashes included: `--quiet`.
    package let name: String
    /// The help row's text.
    package let help: String

    package init(_ name: String, help: String) {
        precondition(
            name.hasPrefix("--") && name.count > 2 && !name.contains("="), "a flag is spelled --name: '\(name)'")
        self.name = name
        self.help = help
    }

    /// The same flag with another help text.
    package func with(help: String) -> Flag { Flag(name, help: help) }
}
