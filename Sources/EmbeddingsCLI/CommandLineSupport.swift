import Foundation
import Synchronization

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
    /// A service (the PostgreSQL server, pgvector) cannot be used: exit 69.
    case unavailable(String)
    /// Not allowed (database permissions): exit 77.
    case permission(String)

    var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .data: return 65
        case .noInput: return 66
        case .failure: return 1
        case .unavailable: return 69
        case .permission: return 77
        }
    }

    var message: String {
        switch self {
        case let .usage(m), let .data(m), let .noInput(m), let .failure(m), let .unavailable(m), let .permission(m): return m
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

/// Standard error output: errors, warnings, notes and progress. `--quiet` silences notes and
/// progress for the rest of the process; warnings and errors always print.
enum Console {
    static let stderrIsTerminal = isatty(2) != 0
    static let stdoutIsTerminal = isatty(1) != 0
    private static let quiet = Atomic<Bool>(false)

    /// The `--quiet` help row of the commands that take the flag.
    static let quietHelp = ("--quiet", "No progress or notes on standard error (warnings and errors still print).")

    /// Whether notes and progress are silenced.
    static var isQuiet: Bool { quiet.load(ordering: .relaxed) }

    /// Applies the command's `--quiet` flag, before it prints anything.
    static func configure(_ parsed: ParsedArguments) {
        quiet.store(parsed.flags.contains("quiet"), ordering: .relaxed)
    }

    static func error(_ message: String) {
        let oneLine = message.replacingOccurrences(of: "\n", with: " ")
        write("error: \(oneLine)\n")
    }

    /// Something the user should know even under `--quiet` (a file skipped).
    static func warning(_ message: String) {
        write("warning: \(message)\n")
    }

    /// Information: what was done, where it went.
    static func note(_ message: String) {
        guard !isQuiet else { return }
        write(message + "\n")
    }

    static func write(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
    }
}

/// Progress of a long job on standard error. On a terminal, a bar (a count when the total is
/// unknown) redrawn in place; otherwise a plain line such as `embedding: 320/722`. Either way at
/// most once a second (ten times on a terminal), starting a second in, so quick jobs show only
/// the final report from `finish()`. Nothing under `--quiet`.
struct Progress {
    let label: String
    private(set) var total: Int?
    /// False while the command's own output goes to the terminal: reports would break into it.
    private let shown: Bool
    private var done = 0
    private var lastReported = Date()
    private var reportedCount: Int?
    private var finished = false

    /// `writesToStandardOutput`: the command's output goes to standard output (and so, when that
    /// is a terminal, no progress is shown, as curl does).
    init(_ label: String, total: Int?, writesToStandardOutput: Bool = false) {
        self.label = label
        self.total = total
        shown = !(writesToStandardOutput && Console.stdoutIsTerminal)
    }

    /// Records `done` items of work, reporting them when the last report is old enough.
    mutating func update(_ done: Int) {
        self.done = done
        let now = Date()
        guard !finished, now.timeIntervalSince(lastReported) >= (Console.stderrIsTerminal ? 0.1 : 1) else { return }
        lastReported = now
        report(final: false)
    }

    /// Records `done` of a total that became known (or changed) once the work started.
    mutating func update(_ done: Int, of total: Int) {
        self.total = total
        update(done)
    }

    /// Reports the count reached and ends the terminal line; nothing when no work was done.
    /// Later calls do nothing.
    mutating func finish() {
        guard !finished else { return }
        finished = true
        guard done > 0 || reportedCount != nil else { return }
        guard reportedCount == done else { return report(final: true) }
        // Already reported: a plain line would say it twice; a bar only needs its line ended.
        if Console.stderrIsTerminal, shown, !Console.isQuiet { Console.write("\n") }
    }

    private mutating func report(final: Bool) {
        reportedCount = done
        guard shown, !Console.isQuiet else { return }
        let count = total.map { "\(done)/\($0)" } ?? "\(done)"
        if Console.stderrIsTerminal {
            var line = "\(label): \(count)"
            if let total, total > 0 {
                let width = 30
                let filled = min(width, done * width / total)
                line = "\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] \(count)"
            }
            Console.write("\r" + line + (final ? "\n" : ""))
        } else {
            Console.write("\(label): \(count)\n")
        }
    }
}
