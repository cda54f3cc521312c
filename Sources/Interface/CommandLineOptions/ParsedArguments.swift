/// A command's arguments split into options and positionals, every value already converted.
/// Everything the parser can reject (an unknown option, a missing value, a value out of range or
/// not among the choices) is a usage error here, before any work.
///
/// `--name value` and `--name=value` both work; a later occurrence wins over an earlier one
/// (`values(_:)` reads them all). `--help` or `-h` before `--` asks for help; after `--` every
/// argument is positional. A word starting with `-` that is no number is an unknown option.
package struct ParsedArguments: Sendable {
    /// The positional arguments, in order.
    package private(set) var positionals: [String] = []
    /// `--help` or `-h` came before `--`: print help instead of running (other problems are then
    /// not reported).
    package private(set) var isHelpRequested = false
    private var texts: [String: [String]] = [:]
    private var values: [String: [any Sendable]] = [:]
    private var flags: Set<String> = []
    private let declared: [String: AnyOption]

    /// Parses `arguments` (the program and subcommand names left out) against `options`.
    package init(_ arguments: [String], options: [any OptionDeclaration]) throws {
        var declared = [String: AnyOption]()
        for option in options.flatMap(\.members) {
            precondition(declared[option.name] == nil, "\(option.name) is declared twice")
            declared[option.name] = option
        }
        self.declared = declared
        // The first problem is reported, unless help was asked for anywhere.
        var problem: CLIError? = nil
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") || Double(argument) != nil {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                isHelpRequested = true
                continue
            }
            guard problem == nil else { continue }
            var name = argument
            var inlineValue: String? = nil
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inlineValue = String(argument[argument.index(after: eq)...])
            }
            guard let option = declared[name] else {
                problem = .usage("unknown option '\(name)'")
                continue
            }
            guard let convert = option.convert else {
                if inlineValue != nil { problem = .usage("option '\(name)' takes no value") }
                flags.insert(name)
                continue
            }
            let text: String
            if let inlineValue {
                text = inlineValue
            } else {
                guard i < arguments.count else {
                    problem = .usage("option '\(name)' needs a value")
                    continue
                }
                text = arguments[i]
                i += 1
                // `--index --help`: a request for help, as before any `--`, not a file named --help.
                if text == "--help" || text == "-h" {
                    isHelpRequested = true
                    continue
                }
            }
            do {
                let value = try convert(text)
                texts[name, default: []].append(text)
                values[name, default: []].append(value)
            } catch let error as CLIError {
                problem = error
            }
        }
        if let problem, !isHelpRequested { throw problem }
    }

    /// The option's value: the last one given, else its default, else nil.
    package subscript<Value>(option: Option<Value>) -> Value? {
        given(option).last ?? option.defaultValue
    }

    /// Whether the flag was given.
    package subscript(flag: Flag) -> Bool { flags.contains(flag.name) }

    /// The option's value (the last given, else its default), or a usage error
    /// `missing --index <file>` for an option without a default that was not given.
    package func value<Value>(_ option: Option<Value>) throws -> Value {
        guard let value = self[option] else { throw CLIError.usage("missing \(option.synopsis)") }
        return value
    }

    /// Every value given for the option, in order (`--corpus a --corpus b`); the default is not
    /// included.
    package func values<Value>(_ option: Option<Value>) -> [Value] { given(option) }

    /// The option's last value as typed, for messages (`--model 'x' is not a known model`).
    package func text<Value>(_ option: Option<Value>) -> String? { texts[option.name]?.last }

    /// Whether the option was given (not merely defaulted).
    package func contains<Value>(_ option: Option<Value>) -> Bool { texts[option.name] != nil }

    /// Records `text` as the option's value, as if typed after everything else (a model read
    /// from an index file when `--model` was not given).
    package mutating func set<Value>(_ option: Option<Value>, to text: String) throws {
        let value = try option.convert(text)
        texts[option.name, default: []].append(text)
        values[option.name, default: []].append(value)
    }

    /// A copy in which `option` reads as not given: a command whose `--model` names another kind
    /// of model (`ask`'s language model) hands its other options to a helper that reads `--model`
    /// as the encoder.
    package func removing<Value>(_ option: Option<Value>) -> ParsedArguments {
        var copy = self
        copy.texts[option.name] = nil
        copy.values[option.name] = nil
        return copy
    }

    /// Options the command does not declare read as not given: helpers shared by several
    /// commands read what only some of them take.
    private func given<Value>(_ option: Option<Value>) -> [Value] {
        guard declared[option.name] != nil || texts[option.name] != nil else { return [] }
        return (values[option.name] ?? []).map { value in
            guard let typed = value as? Value else {
                preconditionFailure("\(option.name) is declared with another value type than \(Value.self)")
            }
            return typed
        }
    }
}
