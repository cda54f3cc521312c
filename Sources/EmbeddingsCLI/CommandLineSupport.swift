import Foundation

/// A command-line failure and the exit code it maps to (sysexits.h).
enum CLIError: Error {
    /// Bad arguments: exit 64.
    case usage(String)
    /// Bad input data: exit 65.
    case data(String)
    /// A missing input file: exit 66.
    case noInput(String)
    /// Anything else: exit 1.
    case failure(String)

    var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .data: return 65
        case .noInput: return 66
        case .failure: return 1
        }
    }

    var message: String {
        switch self {
        case let .usage(m), let .data(m), let .noInput(m), let .failure(m): return m
        }
    }
}

/// One subcommand: a name, a one-line abstract, help text, and a `run` over parsed arguments.
protocol Command {
    static var name: String { get }
    static var abstract: String { get }
    /// The USAGE line(s), without the leading "USAGE:".
    static var usage: String { get }
    /// ARGUMENTS and OPTIONS sections: (label, description) pairs.
    static var arguments: [(String, String)] { get }
    static var options: [(String, String)] { get }
    /// Option names that take a value (`--k 5`); every other `--name` is a flag.
    static var valueOptions: Set<String> { get }
    static var flagOptions: Set<String> { get }
    init(parsed: ParsedArguments) throws
    func run() throws
}

extension Command {
    static var arguments: [(String, String)] { [] }

    static var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: embeddings \(usage)\n"
        func section(_ title: String, _ rows: [(String, String)]) {
            guard !rows.isEmpty else { return }
            text += "\n\(title):\n"
            let width = (rows.map(\.0.count).max() ?? 0) + 2
            for (label, description) in rows {
                text += "  " + label.padding(toLength: width, withPad: " ", startingAt: 0) + description + "\n"
            }
        }
        section("ARGUMENTS", arguments)
        section("OPTIONS", options + [("-h, --help", "Show help information.")])
        return text
    }
}

/// Arguments split into options and positionals. Validation (unknown options, missing values)
/// happens here, before any work.
struct ParsedArguments {
    var values: [String: String] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>) throws {
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if onlyPositionals || !argument.hasPrefix("--") || argument == "-" {
                if !onlyPositionals, argument.hasPrefix("-"), argument != "-", Double(argument) == nil {
                    throw CLIError.usage("unknown option '\(argument)'")
                }
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var name = String(argument.dropFirst(2))
            var inlineValue: String? = nil
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valueOptions.contains(name) {
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    guard i < arguments.count else { throw CLIError.usage("option '--\(name)' needs a value") }
                    values[name] = arguments[i]
                    i += 1
                }
            } else if flagOptions.contains(name) {
                guard inlineValue == nil else { throw CLIError.usage("option '--\(name)' takes no value") }
                flags.insert(name)
            } else {
                throw CLIError.usage("unknown option '--\(name)'")
            }
        }
    }

    func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = values[name] else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw CLIError.usage("--\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    func choice<T: RawRepresentable>(_ name: String, default fallback: T?) throws -> T? where T.RawValue == String {
        guard let text = values[name] else { return fallback }
        guard let value = T(rawValue: text) else { throw CLIError.usage("invalid value '\(text)' for --\(name)") }
        return value
    }
}

/// Standard error output: messages, and progress (a bar on a terminal, plain lines otherwise).
enum Console {
    static let stderrIsTerminal = isatty(2) != 0

    static func error(_ message: String) {
        let oneLine = message.replacingOccurrences(of: "\n", with: " ")
        try? FileHandle.standardError.write(contentsOf: Data("error: \(oneLine)\n".utf8))
    }

    static func note(_ message: String) {
        try? FileHandle.standardError.write(contentsOf: Data((message + "\n").utf8))
    }
}

/// Progress of a long job on standard error.
struct Progress {
    let label: String
    let total: Int?
    private var lastReported = Date.distantPast
    private var lastCount = -1

    init(_ label: String, total: Int?) {
        self.label = label
        self.total = total
    }

    mutating func update(_ done: Int, force: Bool = false) {
        let now = Date()
        let finished = total.map { done >= $0 } ?? false
        guard force || finished || now.timeIntervalSince(lastReported) >= (Console.stderrIsTerminal ? 0.1 : 2) else { return }
        guard done != lastCount else { return }
        lastReported = now
        lastCount = done
        if Console.stderrIsTerminal, let total, total > 0 {
            let width = 30
            let filled = min(width, done * width / total)
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            try? FileHandle.standardError.write(contentsOf: Data("\r\(label) [\(bar)] \(done)/\(total)\(finished ? "\n" : "")".utf8))
        } else if let total {
            Console.note("\(label): \(done)/\(total)")
        } else {
            Console.note("\(label): \(done)")
        }
    }
}
