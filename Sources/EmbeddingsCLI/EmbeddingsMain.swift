import CommandLineOptions
import Embeddings
import Foundation

/// The `embeddings` command: dispatches to one subcommand, maps errors to exit codes, and prints
/// every error as one `error: ` line on standard error.
var commands: [any Command.Type] {
    [
        EmbedCommand.self, TokenizeCommand.self, IndexCommand.self, SearchCommand.self, EvalCommand.self,
        ExportCommand.self, AssetsCommand.self, InfoCommand.self, ServeCommand.self, GenerateCommand.self,
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

func runMain() -> Int32 {
    // The library never prints; its warnings (a kernel switch that failed) are printed here.
    Diagnostics.setHandler { Console.warning($0) }
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first else {
        try? FileHandle.standardError.write(contentsOf: Data(overview.utf8))
        Console.error("missing subcommand")
        return 64
    }
    if name == "--help" || name == "-h" || name == "help" {
        print(overview, terminator: "")
        return 0
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        Console.error("unknown subcommand '\(name)' (see 'embeddings --help')")
        return 64
    }
    arguments.removeFirst()
    do {
        let parsed = try command.parse(arguments)
        // `--help` before `--` only: after it, `--help` is an argument like any other.
        if parsed.isHelpRequested {
            print(command.help, terminator: "")
            return 0
        }
        try command.init(parsed: parsed).run()
        Output.standard.flush()
        return 0
    } catch let error as CLIError {
        Output.standard.flush()
        // `.status` carries no message: the command has printed why.
        if !error.message.isEmpty { Console.error(error.message) }
        return error.exitCode
    } catch {
        Output.standard.flush()
        Console.error("\(error)")
        return 1
    }
}

@main
enum EmbeddingsMain {
    /// The async entry point. The subcommand runs on a thread of its own: encoding, hashing and
    /// file work block, and must not hold a thread of Swift concurrency's cooperative pool.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported as an error, instead of
        // killing the process mid-save.
        signal(SIGXFSZ, SIG_IGN)
        let code = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let thread = Thread { continuation.resume(returning: runMain()) }
            thread.stackSize = 8 << 20
            thread.start()
        }
        exit(code)
    }
}
