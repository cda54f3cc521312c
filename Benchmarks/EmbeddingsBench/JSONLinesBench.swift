import Foundation

/// `embeddings embed` on one JSON Lines record per size, `{"id": "jsonl-<N>mb", "text": "<N MB of
/// words>"}` (N × 1,000,000 bytes of text), from standard input with the output discarded: how
/// reading and parsing grow with a line's length (linear since the reader resumes its newline
/// search; before, a 5 MB line took 3.7 s and 50 MB over 120 s). Each size is one run, timed from
/// launch to exit; the file is written before the clock starts. The child inherits this
/// process's environment (its model choice among it).
/// - Throws: `BenchFailure` when the executable cannot start or exits with a failure.
func jsonLinesReadingBench(embeddings executable: URL, megabytes: [Int]) throws -> [(megabytes: Int, seconds: Double)] {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jsonl-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    var results = [(megabytes: Int, seconds: Double)]()
    for size in megabytes {
        let input = folder.appendingPathComponent("\(size)mb.jsonl")
        try jsonLinesRecord(id: "jsonl-\(size)mb", textBytes: size * 1_000_000).write(to: input)
        let errors = folder.appendingPathComponent("\(size)mb.stderr")
        guard FileManager.default.createFile(atPath: errors.path, contents: nil) else {
            throw BenchFailure(message: "could not create \(errors.path)")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["embed", "--quiet"]
        process.standardInput = try FileHandle(forReadingFrom: input)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: errors)
        let start = now()
        do { try process.run() } catch { throw BenchFailure(message: "could not start \(executable.path): \(error)") }
        process.waitUntilExit()
        let seconds = now() - start
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw BenchFailure(
                message: "embeddings embed on \(size) MB failed (\(process.terminationStatus)): \(message)")
        }
        results.append((size, seconds))
    }
    return results
}

/// One JSON Lines record whose text is `textBytes` bytes of space-separated words (plain ASCII,
/// nothing to escape), ending in a newline.
func jsonLinesRecord(id: String, textBytes: Int) -> Data {
    let words = ["retrieval", "of", "contextual", "embeddings", "reads", "each", "line", "once"]
    var text = [UInt8]()
    text.reserveCapacity(textBytes + 64)
    text.append(contentsOf: "{\"id\": \"\(id)\", \"text\": \"".utf8)
    let textStart = text.count
    var next = 0
    while text.count - textStart < textBytes {
        if text.count > textStart { text.append(0x20) }
        text.append(contentsOf: words[next % words.count].utf8)
        next += 1
    }
    text.removeLast(text.count - textStart - textBytes)
    text.append(contentsOf: "\"}\n".utf8)
    return Data(text)
}
