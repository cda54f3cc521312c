import Foundation
import LinearAlgebra

/// A description of the machine for the report header.
struct Machine {
    var cpu: String
    var cores: Int
    var blas: String
    var blasThreads: Int
    var build: String
    var date: String

    static func current() -> Machine {
        let cpu = CPUInfo.current.modelName
        #if DEBUG
            let build = "debug (numbers are not representative: use -c release)"
        #else
            let build = "release"
        #endif
        let formatter = ISO8601DateFormatter()
        return Machine(
            cpu: cpu, cores: ProcessInfo.processInfo.activeProcessorCount, blas: BLAS.libraryDescription,
            blasThreads: BLAS.threadCount, build: build, date: formatter.string(from: Date()))
    }

    var markdown: String {
        """
        Machine: \(cpu), \(cores) cores · BLAS: \(blas), \(blasThreads) threads · kernel check: \(BLAS.coreCheck.summary) · build: \(build) · \(date)
        """
    }

    var dictionary: [String: String] {
        [
            "cpu": cpu, "cores": "\(cores)", "blas": blas, "blas_core": BLAS.coreInUse ?? "",
            "blas_core_at_load": BLAS.coreCheck.coreAtLoad ?? "",
            "blas_check": BLAS.coreCheck.summary, "cpu_summary": CPUInfo.current.summary,
            "blas_threads": "\(blasThreads)", "build": build, "date": date,
        ]
    }
}
