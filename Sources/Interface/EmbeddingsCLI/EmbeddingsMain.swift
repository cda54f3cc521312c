import CommandLineOptions
import Embeddings
import Foundation

/// The `embeddings` command: dispatches to one subcommand, maps errors to exit codes, and prints
/// every error as one `error: ` line on standard error.
var commands: [any CommandDescription.Type] {
    [
        EmbedCommand.self, TokenizeCommand.self, IndexCommand.self, SearchCommand.self, EvalCommand.self,
        ExportCommand.self, AssetsCommand.self, InfoCommand.self, ServeCommand.self, GenerateCommand.self,
        AskCommand.self, ChatCommand.self,
    ]
}

var overview: String {
    """
    OVERVIEW: Contextual embeddings on Linux: token vectors tied to string ranges, pooling, vector search.

    USAGE: embeddings <subcommand> [options]

    SUBCOMMANDS:
    \(commands.map { "  " + $0.name.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.abstract }.joined(separator: "\n"))

      See 'embeddings <subcommand> --help' for details.

    """
}

/// What the command's thread leaves to the async entry point.
enum Outcome {
    /// The command has ended with this status.
    case exit(Int32)
    /// A command whose work awaits, validated: the entry point runs it.
    case awaiting(any AsyncCommand)
}

func runMain() -> Outcome {
    // The library never prints; its warnings (a kernel switch that failed) are printed here.
    Diagnostics.setHandler { Console.warning($0) }
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first else {
        try? FileHandle.standardError.write(contentsOf: Data(overview.utf8))
        Console.error("missing subcommand")
        return .exit(64)
    }
    if name == "--help" || name == "-h" || name == "help" {
        print(overview, terminator: "")
        return .exit(0)
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        Console.error("unknown subcommand '\(name)' (see 'embeddings --help')")
        return .exit(64)
    }
    arguments.removeFirst()
    var awaiting: (any AsyncCommand)?
    let status = exitStatus {
        let parsed = try command.parse(arguments)
        // `--help` before `--` only: after it, `--help` is an argument like any other.
        if parsed.isHelpRequested {
            print(command.help, terminator: "")
            return
        }
        switch command {
        case let blocking as any Command.Type: try blocking.init(parsed: parsed).run()
        case let async as any AsyncCommand.Type: awaiting = try async.init(parsed: parsed)
        default: preconditionFailure("\(command.name) is neither a Command nor an AsyncCommand")
        }
    }
    if let awaiting, status == 0 { return .awaiting(awaiting) }
    return .exit(status)
}

/// 0 when `body` returns; otherwise its error printed as one `error: ` line and its exit status.
func exitStatus(_ body: () throws -> Void) -> Int32 {
    do {
        try body()
        Output.standard.flush()
        return 0
    } catch {
        return exitStatus(for: error)
    }
}

/// `exitStatus(_:)` for a command whose work awaits.
func exitStatus(_ body: @Sendable () async throws -> Void) async -> Int32 {
    do {
        try await body()
        Output.standard.flush()
        return 0
    } catch {
        return exitStatus(for: error)
    }
}

/// Prints `error` (a `CLIError`'s message, or the error) and returns its exit status (1 for an
/// error that is not a `CLIError`).
private func exitStatus(for error: any Error) -> Int32 {
    Output.standard.flush()
    guard let error = error as? CLIError else {
        Console.error("\(error)")
        return 1
    }
    // `.status` carries no message: the command has printed why.
    if !error.message.isEmpty { Console.error(error.message) }
    return error.exitCode
}

@main
enum EmbeddingsMain {
    /// The async entry point. The subcommand runs on a thread of its own: encoding, hashing and
    /// file work block, and must not hold a thread of Swift concurrency's cooperative pool. A
    /// command whose work awaits (`AsyncCommand`) is validated there, then run here; its blocking
    /// steps go to threads of their own.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported as an error, instead of
        // killing the process mid-save.
        signal(SIGXFSZ, SIG_IGN)
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let thread = Thread { continuation.resume(returning: runMain()) }
            thread.stackSize = 8 << 20
            thread.start()
        }
        switch outcome {
        case .exit(let code): exit(code)
        case .awaiting(let command): exit(await exitStatus { try await command.run() })
        }
    }
}
