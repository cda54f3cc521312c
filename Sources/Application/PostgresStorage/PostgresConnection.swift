import CPostgres
import Foundation

/// One connection to a PostgreSQL server through libpq, running parameterized statements only.
///
/// Values always travel as parameters (`$1`, `$2`, …) of `PQexecParams`, in text format; the SQL
/// text itself holds only constants and identifiers the package validated. Not thread-safe: one
/// statement at a time (`PostgresStore` keeps its connection behind a lock).
// Not Sendable: a libpq connection is used by one thread at a time. `PostgresStore` keeps its
// shared connection in a `Mutex` (which is Sendable whatever it holds) and gives each indexing
// run a connection of its own.
final class PostgresConnection {
    private let connection: OpaquePointer

    /// Connects with a libpq connection string or URI (`postgresql://…`, `host=… dbname=…`);
    /// an empty string connects from the standard environment (`PGHOST`, `PGDATABASE`, `PGUSER`, …).
    /// - Throws: `PostgresStoreError.cannotConnect` with libpq's message.
    init(_ conninfo: String) throws {
        guard let connection = PQconnectdb(conninfo) else {
            throw PostgresStoreError.cannotConnect("libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresStoreError.cannotConnect(message)
        }
        self.connection = connection
        // Notices (e.g. "relation already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    /// The rows of one statement's result, as text (`nil` for SQL NULL).
    struct Rows {
        var columns: [String]
        var values: [[String?]]
        /// The number of rows a command changed (`INSERT`, `UPDATE`, `DELETE`), or 0.
        var affected: Int

        subscript(row: Int, column: String) -> String? {
            guard let c = columns.firstIndex(of: column) else { return nil }
            return values[row][c]
        }
    }

    /// Runs one statement with `parameters` bound to `$1…$n` (`nil` binds SQL NULL).
    /// - Throws: `PostgresStoreError` (permission, missing table, …) with the server's message.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = []) throws -> Rows {
        // Every parameter as a NUL-terminated C string; libpq copies them before returning.
        // (A C string ends at NUL, which PostgreSQL text cannot hold anyway: NULs are dropped.)
        let cStrings: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup(SQLText.clean($0)) } ?? nil }
        defer { for p in cStrings { free(p) } }
        let result: OpaquePointer? = cStrings.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(1, buffer.count)) {
                values in
                PQexecParams(
                    connection, sql, Int32(parameters.count), nil, parameters.isEmpty ? nil : values, nil, nil, 0)
            }
        }
        guard let result else {
            throw PostgresStoreError.queryFailed(state: "", message: Self.message(PQerrorMessage(connection)))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            break
        default:
            throw Self.error(from: result)
        }
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var values = [[String?]]()
        values.reserveCapacity(rowCount)
        for r in 0..<rowCount {
            values.append(
                (0..<columnCount).map { c in
                    PQgetisnull(result, Int32(r), Int32(c)) != 0
                        ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c)))
                })
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return Rows(columns: columns, values: values, affected: affected)
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws (or
    /// when the process dies: the server then drops the connection and the transaction with it).
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// The server's version number, e.g. 160002 for 16.2.
    var serverVersion: Int { Int(PQserverVersion(connection)) }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown libpq error" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; ")
    }

    /// A typed error from a failed result: SQLSTATE classes the user can act on get their own case.
    private static func error(from result: OpaquePointer) -> PostgresStoreError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let primary =
            PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            ?? message(PQresultErrorMessage(result))
        switch state {
        case "42501": return .permissionDenied(primary)
        case "0A000" where primary.contains("vector"), "58P01" where primary.contains("vector"):
            return .vectorExtensionMissing(primary)
        default: return .queryFailed(state: state, message: primary)
        }
    }
}
