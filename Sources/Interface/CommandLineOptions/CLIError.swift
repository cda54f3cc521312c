/// A command-line failure and the exit code it maps to (sysexits.h).
package enum CLIError: Error, Equatable {
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
    /// Stop with this status; the command has already said why on standard output, so no
    /// `error:` line is printed (`assets status` of a model that is not installed: exit 1).
    case status(Int32)

    /// The process's exit status for this failure.
    package var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .data: return 65
        case .noInput: return 66
        case .failure: return 1
        case .unavailable: return 69
        case .permission: return 77
        case .status(let code): return code
        }
    }

    /// The one-line message printed after `error: ` (empty for `.status`, which prints none).
    package var message: String {
        switch self {
        case .usage(let m), .data(let m), .noInput(let m), .failure(let m), .unavailable(let m), .permission(let m):
            return m
        case .status: return ""
        }
    }
}
