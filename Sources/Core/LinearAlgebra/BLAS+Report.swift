import Foundation

extension BLAS {
    /// The CPU and the BLAS in use as `embeddings info` shows them (its `cpu` and `blas` objects
    /// and their text lines), written once so the kernel-check tests' child process
    /// (`KernelCheckChild`) prints exactly what the command prints.
    package struct Report: Sendable, Encodable {
        /// The processor, as `info --json`'s `cpu` object.
        package struct CPU: Sendable, Encodable {
            package var modelName: String
            package var vendor: String
            package var architecture: String
            package var family: Int
            package var model: Int
            /// Feature names, older extensions first.
            package var features: [String]
            /// Cores this process may use.
            package var cores: Int
        }

        /// The BLAS library and its kernels, as `info --json`'s `blas` object.
        package struct Library: Sendable, Encodable {
            package var library: String
            package var version: String?
            package var build: String
            package var coreAtLoad: String?
            package var coreInUse: String?
            /// Whether the kernel check switched away from the core OpenBLAS chose at load.
            package var corrected: Bool
            package var check: String
            package var canSwitchCores: Bool
            package var shippedCores: [String]
            package var threads: Int
        }

        package var cpu: CPU
        package var blas: Library

        /// The report of `configuration` (by default this process's, which runs the kernel check
        /// first when no BLAS call has yet).
        package init(_ configuration: Configuration = BLAS.configuration) {
            let cpu = configuration.cpu
            self.cpu = CPU(
                modelName: cpu.modelName, vendor: cpu.vendor, architecture: cpu.architecture, family: cpu.family,
                model: cpu.model, features: cpu.features.sorted().map(\.rawValue),
                cores: ProcessInfo.processInfo.activeProcessorCount)
            blas = Library(
                library: configuration.library, version: configuration.version, build: configuration.build,
                coreAtLoad: configuration.coreAtLoad, coreInUse: configuration.coreInUse,
                corrected: configuration.isCorrected, check: configuration.check,
                canSwitchCores: configuration.canSwitchCores, shippedCores: configuration.shippedCores,
                threads: configuration.threads)
        }

        /// The text lines `embeddings info` prints for the CPU and BLAS, labels padded to 14 columns.
        package var lines: [String] {
            let id = cpu.vendor.isEmpty ? cpu.architecture : "\(cpu.vendor) family \(cpu.family) model \(cpu.model)"
            let corrected = blas.corrected ? " (corrected from \(blas.coreAtLoad ?? "?"))" : ""
            var lines = [
                "cpu:          \(cpu.modelName) (\(id), \(cpu.cores) cores)",
                "features:     \(cpu.features.isEmpty ? "(none read)" : cpu.features.joined(separator: " "))",
                "blas:         \(blas.library)\(blas.version.map { " " + $0 } ?? "") (\(blas.build))",
                "core:         \(blas.coreInUse ?? "chosen by the library")\(corrected)",
                "check:        \(blas.check)",
            ]
            if blas.canSwitchCores { lines.append("cores:        \(blas.shippedCores.joined(separator: " "))") }
            lines.append("threads:      \(blas.threads)")
            return lines
        }
    }
}
