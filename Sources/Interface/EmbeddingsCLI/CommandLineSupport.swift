import CommandLineOptions
import Foundation
import Synchronization

/// The command-line failure every file of the command throws, files that do not import
/// CommandLineOptions included.
typealias CLIError = CommandLineOptions.CLIError

/// One subcommand of `embeddings`: its declaration (name, abstract, options, arguments, from
/// which usage, help and parsing come), validation in `init(parsed:)`, work in `run()`.
protocol Command: CommandDescription {
    /// Checks the parsed arguments: what needs no file, model or database is a usage error here.
    init(parsed: ParsedArguments) throws
    func run() throws
}

/// A subcommand whose work awaits (a language model's streamed answer): validated in
/// `init(parsed:)` on the command's thread like any other, then `run()` in the async entry point.
/// Its blocking steps (opening a store, loading the encoder, reading standard input) run on
/// threads of their own (`Engine`), never on the cooperative pool.
protocol AsyncCommand: CommandDescription, Sendable {
    /// Checks the parsed arguments, as `Command.init(parsed:)` does.
    init(parsed: ParsedArguments) throws
    func run() async throws
}

extension CommandDescription {
    /// `embeddings <name> --help`.
    static var help: String { help(program: "embeddings") }
}

/// Standard error output: errors, warnings, notes and progress. `--quiet` silences notes and
/// progress for the rest of the process; warnings and errors always print.
enum Console {
    static let stderrIsTerminal = isatty(2) != 0
    static let stdoutIsTerminal = isatty(1) != 0
    private static let quiet = Atomic<Bool>(false)

    /// Whether notes and progress are silenced.
    static var isQuiet: Bool { quiet.load(ordering: .relaxed) }

    /// Silences notes and progress (`--quiet`; see `configure(_:)`), before anything prints.
    static func configure(quiet isQuiet: Bool) {
        quiet.store(isQuiet, ordering: .relaxed)
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
                line =
                    "\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
                    + "] \(count)"
            }
            Console.write("\r" + line + (final ? "\n" : ""))
        } else {
            Console.write("\(label): \(count)\n")
        }
    }
}

/// Files the CLI reads (index files, evaluation cases), checked before they are opened: a FIFO,
/// a device or a folder given where a file belongs is refused at once instead of blocking on an
/// open that waits for a writer (or reading a device forever).
enum InputFile {
    /// - Throws: `CLIError.noInput` (66) when nothing is at `url`, `.data` (65) when it is not a
    ///   regular file. `what` names it in the message ("index file").
    static func check(_ url: URL, what: String) throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else { throw CLIError.noInput("\(what) '\(url.path)' does not exist") }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw CLIError.data("\(what) '\(url.path)' is not a regular file")
        }
    }
}
