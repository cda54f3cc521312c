import Foundation
import Retrieval
import VectorIndex

/// `embeddings export`: the index's vectors as .npy, .fvecs or JSON Lines.
struct ExportCommand: Command {
    static let name = "export"
    static let abstract = "Write an index's vectors as npy, fvecs or JSON Lines (for FAISS, pgvector, …)."
    static let usage = "export --index <file> --format npy|fvecs|jsonl [--out <file>]"
    static let options: [(String, String)] = [
        ("--index <file>", "An index file written by 'embeddings index'."),
        ("--format <f>", "npy (float32 [n, d] NumPy array), fvecs (FAISS/TEXMEX: int32 d then d float32 per row) or jsonl ({\"id\", \"source\", \"vector\"} per line)."),
        ("--out <file>", "Where to write (default: standard output). Ids for npy/fvecs go to <file>.ids.txt."),
    ]
    static let valueOptions: Set<String> = ["index", "format", "out"]
    static let flagOptions: Set<String> = []

    enum Format: String { case npy, fvecs, jsonl }

    let parsed: ParsedArguments
    let format: Format

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        guard let format: Format = try parsed.choice("format", default: nil) else { throw CLIError.usage("missing --format npy|fvecs|jsonl") }
        self.format = format
        guard parsed.values["index"] != nil else { throw CLIError.usage("missing --index <file>") }
    }

    func run() throws {
        let store = try StoreOption.open(parsed, mode: .lexical)
        guard let index = try blockingAwait({ await store.vectors() }) else { throw CLIError.data("the index holds no vectors") }
        let chunks = try blockingAwait { await store.chunks }
        var data = Data()
        let n = index.count, d = index.dimension
        switch format {
        case .npy:
            var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(n), \(d)), }"
            while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
            header += "\n"
            data.append(contentsOf: [0x93] + Array("NUMPY".utf8) + [1, 0])
            data.append(contentsOf: [UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)])
            data.append(contentsOf: Array(header.utf8))
            index.withUnsafeVectors { data.append(UnsafeBufferPointer(start: $0.baseAddress, count: $0.count)) }
        case .fvecs:
            index.withUnsafeVectors { values in
                for row in 0..<n {
                    withUnsafeBytes(of: Int32(d).littleEndian) { data.append(contentsOf: $0) }
                    data.append(UnsafeBufferPointer(start: values.baseAddress! + row * d, count: d))
                }
            }
        case .jsonl:
            index.withUnsafeVectors { values in
                for row in 0..<n {
                    var json = JSONWriter()
                    json.raw("{\"id\":"); json.string(index.ids[row])
                    json.raw(",\"source\":"); json.string(row < chunks.count ? chunks[row].source : "")
                    json.raw(",\"vector\":")
                    json.floats(Array(values[(row * d)..<((row + 1) * d)]))
                    json.raw("}\n")
                    data.append(contentsOf: Array(json.text.utf8))
                }
            }
        }
        if let out = parsed.values["out"] {
            do {
                try data.write(to: URL(fileURLWithPath: out), options: .atomic)
                if format != .jsonl {
                    try Data((index.ids.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: out + ".ids.txt"), options: .atomic)
                }
            } catch {
                throw CLIError.failure("cannot write \(out): \(error.localizedDescription)")
            }
            Console.note("wrote \(n) vectors of \(d) dimensions to \(out)")
        } else {
            Output.writeToStandardOutput(data)
        }
    }
}
