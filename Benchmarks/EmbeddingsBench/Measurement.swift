import Foundation

/// Monotonic time in seconds.
func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
}

/// Runs `body` and returns its result and duration in seconds.
@discardableResult
func timed<R>(_ body: () throws -> R) rethrows -> (R, Double) {
    let start = now()
    let result = try body()
    return (result, now() - start)
}

/// The best (smallest) of `repeats` timings of `body`.
func best(_ repeats: Int, _ body: () -> Void) -> Double {
    var fastest = Double.infinity
    for _ in 0..<repeats {
        let start = now()
        body()
        fastest = min(fastest, now() - start)
    }
    return fastest
}

/// One figure: a named value with its unit, and whether it was measured or extrapolated.
struct Row: Encodable {
    var table: String
    var name: String
    var value: Double
    var unit: String
    var estimated: Bool
}

/// Collects rows for `--json`.
final class Report {
    var rows: [Row] = []
    var machine: [String: String] = [:]

    func add(_ table: String, _ name: String, _ value: Double, _ unit: String, estimated: Bool = false) {
        rows.append(Row(table: table, name: name, value: value, unit: unit, estimated: estimated))
    }

    func write(to path: String) throws {
        struct Document: Encodable {
            var machine: [String: String]
            var rows: [Row]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(Document(machine: machine, rows: rows)).write(to: URL(fileURLWithPath: path))
    }
}

/// Formats a duration the way the seed's tables do: seconds above 1 s, milliseconds, microseconds.
func duration(_ seconds: Double, estimated: Bool = false) -> String {
    let text: String
    if seconds >= 100 {
        text = String(format: "%.0f s", seconds)
    } else if seconds >= 1 {
        text = String(format: "%.2f s", seconds)
    } else if seconds >= 1e-3 {
        text = String(format: "%.2f ms", seconds * 1e3)
    } else {
        text = String(format: "%.1f µs", seconds * 1e6)
    }
    return estimated ? text + " (est.)" : text
}

/// A Markdown table.
func table(_ header: [String], _ rows: [[String]]) -> String {
    var out = "| " + header.joined(separator: " | ") + " |\n"
    out += "|" + header.map { _ in "---" }.joined(separator: "|") + "|\n"
    for row in rows { out += "| " + row.joined(separator: " | ") + " |\n" }
    return out
}

/// Peak resident memory of this process so far (VmHWM), in bytes.
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return digits * 1024
    }
    return 0
}

/// Resets the peak-RSS counter (Linux: write 5 to /proc/self/clear_refs), so a section's peak can be read.
func resetPeakResident() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// Prevents the optimizer from discarding a computed value.
@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The `p` quantile of `values` (`p` from 0 to 1) by nearest rank: the sorted value at index
/// ⌊n·p⌋, the largest for `p` = 1; 0 for no values. The bench's one percentile, for every
/// latency column (stores' p50/p90, the server's p50/p99).
/// - Complexity: O(n log n).
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
