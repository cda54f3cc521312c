// InfoCommandTests' child process for the kernel check at load: sets `BLAS.testSettings` from
// its arguments before the first BLAS call, then prints the CPU and BLAS as `embeddings info`
// does (`BLAS.Report`: the same `cpu` and `blas` objects with `--json`, the same text lines
// without), and the library's warnings as `warning: …` lines on standard error, as the CLI does.
// A test cannot set another process's settings, and shipping code reads no test hook from the
// environment, hence this child:
//
//     KernelCheckChild [--core-at-load CORE] [--fail-self-check] [--json]
//
// `--core-at-load CORE`: start the check from CORE, as if OpenBLAS had chosen it (a stand-in for
// a CPU OpenBLAS does not know). `--fail-self-check`: the self-check after a switch fails.
import Foundation
import LinearAlgebra

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(64)
}

var settings = BLAS.TestSettings()
var json = false
var arguments = Array(CommandLine.arguments.dropFirst())
while let option = arguments.first {
    arguments.removeFirst()
    switch option {
    case "--core-at-load":
        guard let core = arguments.first else { fail("--core-at-load needs a core name") }
        arguments.removeFirst()
        settings.coreAtLoad = core
    case "--fail-self-check": settings.failsSelfCheck = true
    case "--json": json = true
    default: fail("usage: KernelCheckChild [--core-at-load CORE] [--fail-self-check] [--json]")
    }
}
BLAS.testSettings = settings
Diagnostics.setHandler { FileHandle.standardError.write(Data("warning: \($0)\n".utf8)) }

let report = BLAS.Report()
if json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    do {
        FileHandle.standardOutput.write(try encoder.encode(report) + Data("\n".utf8))
    } catch {
        fail("\(error)")
    }
} else {
    FileHandle.standardOutput.write(Data((report.lines.joined(separator: "\n") + "\n").utf8))
}
