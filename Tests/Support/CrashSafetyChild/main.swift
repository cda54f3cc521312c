// CrashSafetyTests' child process: indexes every `*.md` below FOLDER lexical-only into the index
// file INDEX, as `embeddings index FOLDER --out INDEX --lexical-only` does (an existing file is
// loaded first, then replaced), with the save's test settings from its arguments, since a test
// cannot set them in another process:
//
//     CrashSafetyChild FOLDER INDEX [--stop created|renaming] [--stale-age SECONDS]
//
// `--stop STEP`: at that step of the save, say `save stopped: STEP TEMPORARY` on standard error
// and stop this process with SIGSTOP, so that the test kills it exactly inside the save.
// `--stale-age SECONDS`: the age after which the save removes dead saves' temporary files.
import Foundation
import Retrieval
import VectorIndex

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    fail("usage: CrashSafetyChild FOLDER INDEX [--stop created|renaming] [--stale-age SECONDS]")
}
let folder = URL(fileURLWithPath: arguments.removeFirst())
let index = URL(fileURLWithPath: arguments.removeFirst())
var settings = AtomicFile.TestSettings()
while let option = arguments.first {
    arguments.removeFirst()
    guard let value = arguments.first else { fail("\(option) needs a value") }
    arguments.removeFirst()
    switch option {
    case "--stop":
        guard let stop = AtomicFile.Step(rawValue: value) else { fail("no step '\(value)'") }
        settings.onStep = { step, temporary in
            guard step == stop else { return }
            FileHandle.standardError.write(Data("save stopped: \(step.rawValue) \(temporary)\n".utf8))
            raise(SIGSTOP)
        }
    case "--stale-age":
        guard let seconds = Double(value), seconds >= 0, seconds.isFinite else { fail("bad age '\(value)'") }
        settings.staleTemporaryAge = .milliseconds(Int64(seconds * 1000))
    default:
        fail("unknown option \(option)")
    }
}
AtomicFile.testSettings = settings

do {
    let store = EmbeddingStore(embedding: nil)
    if FileManager.default.fileExists(atPath: index.path) { try? store.load(from: index) }
    _ = try store.index(folder: folder)
    try store.save(to: index)
} catch {
    fail("\(error)")
}
