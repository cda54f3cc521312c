/// What a command lists in its `options`: one option or flag, or a group of them, each with its
/// part of the usage line.
package protocol OptionDeclaration: Sendable {
    /// The options declared, as the parser and the help rows see them.
    var members: [AnyOption] { get }
    /// This declaration's part of the usage line: `[--k <n>]`, `--index <file>`,
    /// `(--out <file> | --store <url>)`.
    var usage: String { get }
}

/// An option or a flag with its value type erased: what parsing and help need.
package struct AnyOption: Sendable {
    /// The spelling, dashes included: `--k`.
    package let name: String
    /// The value's name in help (`n`); nil for a flag.
    package let valueName: String?
    /// The allowed values, when the option lists them.
    package let choices: [String]?
    /// The help row's text, with the allowed values and the default filled in.
    package let help: String
    /// `--k <n>` or `--mode hybrid|lexical|semantic` or `--quiet`.
    package let synopsis: String
    let convert: (@Sendable (String) throws -> any Sendable)?

    /// The help row's label: `--k <n>` (a flag: `--quiet`).
    package var label: String { valueName.map { "\(name) <\($0)>" } ?? name }
}

extension Option: OptionDeclaration {
    package var members: [AnyOption] {
        var notes = [String]()
        if let choices { notes.append(HelpFormatter.alternatives(choices)) }
        if let defaultDescription {
            notes.append("default: \(defaultDescription)")
        } else if let defaultValue {
            notes.append("default: \((defaultValue as? any RawRepresentable)?.rawValue ?? defaultValue)")
        }
        let convert = self.convert
        return [
            AnyOption(
                name: name, valueName: valueName, choices: choices, help: HelpFormatter.annotate(help, with: notes),
                synopsis: synopsis, convert: { try convert($0) })
        ]
    }

    package var usage: String { "[\(synopsis)]" }

    /// This option as a command must be given it: no brackets in the usage line.
    package var required: some OptionDeclaration { Usage(members: members, usage: synopsis) }

    /// This option as a command takes it several times (`ParsedArguments.values(_:)` reads all).
    package var repeatable: some OptionDeclaration { Usage(members: members, usage: "[\(synopsis)]...") }
}

extension Flag: OptionDeclaration {
    package var members: [AnyOption] {
        [AnyOption(name: name, valueName: nil, choices: nil, help: help, synopsis: name, convert: nil)]
    }

    package var usage: String { "[\(name)]" }
}

/// Exactly one of these options is needed: `(--index <file> | --store <url>)` in the usage line.
/// Whether exactly one was given is the command's check, with its own message.
package struct OneOf: OptionDeclaration {
    package let members: [AnyOption]
    package let usage: String

    package init<A: OptionDeclaration, B: OptionDeclaration>(_ first: A, _ second: B) {
        let alternatives = first.members + second.members
        members = alternatives
        usage = "(" + alternatives.map(\.synopsis).joined(separator: " | ") + ")"
    }
}

/// Declared options shown in another way in the usage line.
struct Usage: OptionDeclaration {
    let members: [AnyOption]
    let usage: String
}

/// A positional argument of a command, for its usage line and ARGUMENTS rows.
package struct Argument: Sendable {
    /// Its part of the usage line: `<dir> ...`, `[<text> ...]`, `status|install`.
    package let usage: String
    /// Its ARGUMENTS rows: (label, text).
    package let rows: [(label: String, help: String)]

    /// One argument: `label` in the usage line (or `usage`, when it shows repetition or is optional)
    /// and one ARGUMENTS row.
    package init(_ label: String, usage: String? = nil, help: String) {
        self.usage = usage ?? label
        rows = [(label, help)]
    }

    /// An argument that is one of several words, each with its own row (`status|install`).
    package init(words: [(label: String, help: String)]) {
        usage = words.map(\.label).joined(separator: "|")
        rows = words
    }
}
