/// The help layout shared by every command: OVERVIEW / USAGE / ARGUMENTS / OPTIONS, rows padded
/// to one column.
package enum HelpFormatter {
    /// The `-h, --help` row every command ends its OPTIONS with.
    package static let helpRow = (label: "-h, --help", help: "Show help information.")

    /// A titled section of (label, text) rows, the texts aligned two spaces after the longest
    /// label; empty without rows.
    package static func section(_ title: String, _ rows: [(label: String, help: String)]) -> String {
        guard !rows.isEmpty else { return "" }
        let width = (rows.map(\.label.count).max() ?? 0) + 2
        return "\n\(title):\n" + rows.map { "  " + $0.label.padding(to: width) + $0.help + "\n" }.joined()
    }

    /// `a`, `a or b`, `a, b or c`.
    package static func alternatives(_ words: [String]) -> String {
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " or " + words[words.count - 1]
    }

    /// `help` with `notes` in parentheses at the end of its first sentence:
    /// `How chunks are ranked (hybrid, lexical or semantic; default: hybrid). More text.`
    static func annotate(_ help: String, with notes: [String]) -> String {
        guard !notes.isEmpty else { return help }
        let parenthesis = " (" + notes.joined(separator: "; ") + ")"
        // The first sentence ends at the first ". " (or the text's final period).
        if let end = help.firstRange(of: ". ") {
            return String(help[..<end.lowerBound]) + parenthesis + String(help[end.lowerBound...])
        }
        if help.hasSuffix(".") { return String(help.dropLast()) + parenthesis + "." }
        return help + parenthesis
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

/// A command's interface: its name, a one-line abstract, its options and positional arguments.
/// The usage line, the help text and parsing all come from these.
package protocol CommandDescription {
    /// The subcommand's name (empty for a program without subcommands).
    static var name: String { get }
    /// One line saying what it does.
    static var abstract: String { get }
    /// Its options, in the order usage and help list them.
    static var options: [any OptionDeclaration] { get }
    /// Its positional arguments, in order.
    static var arguments: [Argument] { get }
}

extension CommandDescription {
    package static var arguments: [Argument] { [] }

    /// `program name [options…] arguments…`, without `USAGE: `.
    package static func usage(program: String) -> String {
        ([program] + (name.isEmpty ? [] : [name]) + options.map(\.usage) + arguments.map(\.usage)).joined(
            separator: " ")
    }

    /// The ARGUMENTS and OPTIONS sections (OPTIONS ending with `-h, --help`).
    package static var argumentAndOptionSections: String {
        HelpFormatter.section("ARGUMENTS", arguments.flatMap(\.rows))
            + HelpFormatter.section(
                "OPTIONS", options.flatMap(\.members).map { ($0.label, $0.help) } + [HelpFormatter.helpRow])
    }

    /// The whole help text: OVERVIEW, USAGE, ARGUMENTS, OPTIONS.
    package static func help(program: String) -> String {
        "OVERVIEW: \(abstract)\n\nUSAGE: \(usage(program: program))\n" + argumentAndOptionSections
    }

    /// `arguments` parsed against this command's options.
    package static func parse(_ arguments: [String]) throws -> ParsedArguments {
        try ParsedArguments(arguments, options: options)
    }
}
