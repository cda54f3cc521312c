import Foundation
import Synchronization

#if canImport(Accelerate)
    import Accelerate
#else
    import CBLAS
#endif

/// The kernel check, and what the package reports about the BLAS it runs.
///
/// Debian 12's OpenBLAS 0.3.21 (built with DYNAMIC_ARCH) picks its kernels by CPU model and
/// falls back to its SSE3 "Prescott" kernels on models it does not know (Intel Emerald Rapids,
/// family 6 model 207, among them), 4–6× slower than the CPU allows. Before the package's first
/// BLAS call, `coreCheck` compares the CPU (cpuid) with the core OpenBLAS chose and, when the CPU
/// clearly out-classes it, switches OpenBLAS to the best core it ships through its exported
/// `gotoblas_dynamic_quit` / `gotoblas_dynamic_init`, looked up with `dlsym` (a static,
/// single-architecture or Apple build simply has nothing to switch). A sgemm/sgemv/sdot self-check
/// against plain loops follows every switch; on disagreement the original core comes back and one
/// warning says so through `Diagnostics`. See Docs/Numerics.md.
extension BLAS {
    /// What the kernel check found and did, once per process.
    package struct CoreCheck: Sendable, Equatable, Codable {
        /// The core OpenBLAS chose by itself (nil where the library cannot say, as with Accelerate).
        package var coreAtLoad: String?
        /// The rule's verdict, in words ("kept Haswell: the chosen core fits the CPU",
        /// "switched Prescott → Cooperlake: the CPU out-classes Prescott").
        package var summary: String
        /// The core the check switched to, when it switched and the switch held.
        package var switchedTo: String?
        /// Largest relative error of the self-check on the core switched to; nil when no switch
        /// was tried or OpenBLAS refused it. Above `selfCheckTolerance`, the original core was restored.
        package var selfCheckError: Double?
    }

    /// A trial of one core in this process: switch, check results, switch back.
    package struct CoreTrial: Sendable, Equatable, Codable {
        /// The core asked for, as this OpenBLAS spells it.
        package var requested: String
        /// The core OpenBLAS reported while switched.
        package var reported: String
        /// Largest relative error of sgemm/sgemv/sdot against the reference loops on that core.
        package var maxRelativeError: Double
        /// Whether results agreed with the reference loops (relative error ≤ `selfCheckTolerance`).
        package var agreed: Bool
        /// The core in use again afterwards.
        package var restored: String
    }

    /// Why a core trial could not run.
    package enum CoreError: Error, Equatable, CustomStringConvertible {
        /// This BLAS cannot change cores at run time (not OpenBLAS with DYNAMIC_ARCH).
        case cannotSwitchCores(library: String)
        /// No core of that name in this OpenBLAS.
        case unknownCore(String, shipped: [String])
        /// The CPU lacks instructions that core uses (running it would crash the process).
        case cpuCannotRun(String)
        /// OpenBLAS reported another core after the switch.
        case switchRefused(requested: String, reported: String)

        package var description: String {
            switch self {
            case .cannotSwitchCores(let library):
                return "\(library) cannot switch kernels at run time (needs OpenBLAS built with DYNAMIC_ARCH)"
            case .unknownCore(let name, let shipped):
                return "no OpenBLAS core named '\(name)' (this build ships: \(shipped.joined(separator: ", ")))"
            case .cpuCannotRun(let name):
                return "this CPU cannot run the OpenBLAS core '\(name)' (\(CPUInfo.current.modelName))"
            case .switchRefused(let requested, let reported):
                return "OpenBLAS reported core '\(reported)' after switching to '\(requested)'"
            }
        }
    }

    /// Everything about the BLAS in use, for `embeddings info` and benchmark headers.
    package struct Configuration: Sendable, Equatable, Codable {
        /// "OpenBLAS" or "Accelerate".
        package var library: String
        /// "0.3.21" (nil when the library does not say).
        package var version: String?
        /// OpenBLAS's build line (`openblas_get_config`), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64".
        package var build: String
        /// Whether kernels can be switched at run time (DYNAMIC_ARCH symbols found).
        package var canSwitchCores: Bool
        /// The x86 cores this build ships (empty when it cannot switch).
        package var shippedCores: [String]
        /// The core OpenBLAS chose at load (nil for Accelerate).
        package var coreAtLoad: String?
        /// The core in use now, after the kernel check (nil for Accelerate).
        package var coreInUse: String?
        /// What the kernel check decided, in words (`CoreCheck.summary`).
        package var check: String
        /// Threads BLAS uses inside one call.
        package var threads: Int
        /// The processor running this process.
        package var cpu: CPUInfo

        /// Whether the core in use differs from the one OpenBLAS chose at load (the check switched it).
        package var isCorrected: Bool {
            guard let coreAtLoad, let coreInUse else { return false }
            return coreAtLoad.lowercased() != coreInUse.lowercased()
        }
    }

    /// How a test's process runs the kernel check (the tests' child `KernelCheckChild` sets them
    /// from its arguments). A process no test changed has the defaults, which change nothing.
    package struct TestSettings: Sendable, Equatable {
        /// Start the check from this core, as if OpenBLAS had chosen it: a stand-in for a CPU
        /// OpenBLAS does not know. Ignored when the user set `OPENBLAS_CORETYPE` or the CPU cannot run it.
        package var coreAtLoad: String?
        /// Make the self-check after a switch fail, to exercise the way back and its warning.
        package var failsSelfCheck = false

        /// The settings of a process no test changed.
        package init(coreAtLoad: String? = nil, failsSelfCheck: Bool = false) {
            self.coreAtLoad = coreAtLoad
            self.failsSelfCheck = failsSelfCheck
        }
    }

    private static let testSettingsStorage = Mutex(TestSettings())

    /// This process's test settings. The check runs once, before the first BLAS call: set them
    /// before anything calls BLAS (later changes have no effect).
    package static var testSettings: TestSettings {
        get { testSettingsStorage.withOrderedLock { $0 } }
        set { testSettingsStorage.withOrderedLock { $0 = newValue } }
    }

    /// Relative error above which a core's results count as wrong.
    package static let selfCheckTolerance = 1e-4

    /// The kernel check's outcome; running it is what the first BLAS call of the process waits for.
    package static let coreCheck: CoreCheck = performCoreCheck()

    /// Runs the kernel check if it has not run yet (every BLAS wrapper calls this first).
    @inline(__always)
    static func prepare() {
        _ = coreCheck
    }

    /// The BLAS library, its cores, the CPU and threads.
    package static var configuration: Configuration {
        let check = coreCheck
        #if canImport(Accelerate)
            return Configuration(
                library: "Accelerate", version: nil, build: "Accelerate", canSwitchCores: false, shippedCores: [],
                coreAtLoad: nil, coreInUse: nil, check: check.summary, threads: threadCount, cpu: .current)
        #else
            let build =
                openblas_get_config().map { String(cString: $0).trimmingCharacters(in: .whitespaces) } ?? "OpenBLAS"
            let words = build.split(separator: " ")
            let version = words.count > 1 && words[1].first?.isNumber == true ? String(words[1]) : nil
            return Configuration(
                library: "OpenBLAS", version: version, build: build, canSwitchCores: CoreHooks.shared != nil,
                shippedCores: CoreHooks.shared?.shipped ?? [], coreAtLoad: check.coreAtLoad, coreInUse: coreInUse,
                check: check.summary, threads: threadCount, cpu: .current)
        #endif
    }

    /// The core OpenBLAS runs now, after the kernel check (nil for Accelerate). Reading it runs
    /// the check first when no BLAS call has yet, so it never reports the core the check replaces.
    package static var coreInUse: String? {
        prepare()
        return currentCoreName
    }

    /// The core OpenBLAS reports at this moment, without running the check (for the check itself).
    private static var currentCoreName: String? {
        #if canImport(Accelerate)
            return nil
        #else
            return openblas_get_corename().map { String(cString: $0) }
        #endif
    }

    /// Whether `cpu` can execute the named core's kernels, for the cores a trial may use: the
    /// vendor-neutral x86 ones (AMD-only cores such as Bulldozer use FMA4/XOP and are excluded).
    package static func cpuCanRun(core: String, cpu: CPUInfo = .current) -> Bool {
        guard cpu.architecture == "x86_64" else { return false }
        switch core.lowercased() {
        case "prescott", "core2", "penryn", "nehalem": return cpu.features.contains(.sse3)
        case "sandybridge": return cpu.features.contains(.avx)
        case "haswell", "zen": return cpu.hasAVX2FMA
        case "skylakex": return cpu.hasAVX512
        case "cooperlake": return cpu.hasAVX512BF16
        default: return false
        }
    }

    /// Switches this process to `core`, checks sgemm/sgemv/sdot against the reference loops,
    /// and switches back. For diagnostics (`embeddings info --try-core`) and tests.
    ///
    /// Call it when no other thread is inside BLAS: OpenBLAS's kernel table is process-wide.
    /// - Throws: `CoreError` when the library cannot switch, the core is unknown or the CPU
    ///   cannot run it (checked first: running it would crash), or OpenBLAS refuses the switch.
    package static func tryCore(_ core: String) throws -> CoreTrial {
        prepare()
        #if canImport(Accelerate)
            throw CoreError.cannotSwitchCores(library: "Accelerate")
        #else
            guard let hooks = CoreHooks.shared else { throw CoreError.cannotSwitchCores(library: configuration.build) }
            guard let name = hooks.shipped.first(where: { $0.lowercased() == core.lowercased() }) else {
                throw CoreError.unknownCore(core, shipped: hooks.shipped)
            }
            guard cpuCanRun(core: name) else { throw CoreError.cpuCannotRun(name) }
            return try CoreHooks.lock.withOrderedLock { _ in
                let before = currentCoreName ?? ""
                let (reported, error) = hooks.activateAndCheck(name)
                let restored = hooks.activate(before)
                guard reported.lowercased() == name.lowercased() else {
                    throw CoreError.switchRefused(requested: name, reported: reported)
                }
                return CoreTrial(
                    requested: name, reported: reported, maxRelativeError: error, agreed: error <= selfCheckTolerance,
                    restored: restored)
            }
        #endif
    }

    private static func performCoreCheck() -> CoreCheck {
        #if canImport(Accelerate)
            return CoreCheck(
                coreAtLoad: nil, summary: "kept: Accelerate chooses its own kernels", switchedTo: nil,
                selfCheckError: nil)
        #else
            var chosen = openblas_get_corename().map { String(cString: $0) } ?? "unknown"
            guard let hooks = CoreHooks.shared else {
                return CoreCheck(
                    coreAtLoad: chosen, summary: "kept \(chosen): this OpenBLAS cannot switch kernels at run time",
                    switchedTo: nil, selfCheckError: nil)
            }
            let environment = ProcessInfo.processInfo.environment
            let settings = testSettings
            // Tests (in child processes) stand in for a CPU OpenBLAS does not know: start from this core
            // as if OpenBLAS had chosen it. Ignored when the user set OPENBLAS_CORETYPE or the CPU cannot run it.
            if let simulated = settings.coreAtLoad, !simulated.isEmpty, (environment[coreTypeVariable] ?? "").isEmpty,
                let name = hooks.shipped.first(where: { $0.lowercased() == simulated.lowercased() }),
                cpuCanRun(core: name)
            {
                chosen = CoreHooks.lock.withOrderedLock { _ in hooks.activate(name) }
            }
            let failSelfCheck = settings.failsSelfCheck
            let target: String
            switch decideCore(cpu: .current, chosenCore: chosen, shipped: Set(hooks.shipped), environment: environment)
            {
            case .keep(let reason):
                return CoreCheck(
                    coreAtLoad: chosen, summary: "kept \(chosen): \(reason)", switchedTo: nil, selfCheckError: nil)
            case .switchCore(let to):
                target = to
            }
            let (check, warning) = CoreHooks.lock.withOrderedLock { _ -> (CoreCheck, String?) in
                var (reported, error) = hooks.activateAndCheck(target)
                if failSelfCheck, error.isFinite { error = 1 }
                if error <= selfCheckTolerance {
                    return (
                        CoreCheck(
                            coreAtLoad: chosen,
                            summary: "switched \(chosen) → \(reported): the CPU out-classes \(chosen)",
                            switchedTo: reported, selfCheckError: error), nil
                    )
                }
                let back = hooks.activate(chosen)
                let why =
                    error.isFinite
                    ? String(format: "its results differ from the reference loops (relative error %.1e)", error)
                    : "OpenBLAS reported '\(reported)' instead"
                return (
                    CoreCheck(
                        coreAtLoad: chosen, summary: "kept \(back): switching to \(target) failed, \(why)",
                        switchedTo: nil,
                        selfCheckError: error.isFinite ? error : nil),
                    "ContextualEmbeddings kept OpenBLAS core \(back): switching to \(target) failed, \(why)"
                )
            }
            // Reported once the lock is released: the handler is the caller's code.
            if let warning { Diagnostics.warn(warning) }
            return check
        #endif
    }

    /// Largest relative error of sgemm (three transpose cases, odd sizes, alpha and beta), sgemv
    /// and sdot against plain `Double` loops, on whatever core is in use.
    package static func selfCheck() -> Double {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func values(_ count: Int) -> [Float] {
            (0..<count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Float(Int64(bitPattern: state >> 11) % 2001 - 1000) / 1000
            }
        }
        var worst = 0.0
        func compare(_ fast: [Float], _ reference: [Double], _ scale: [Double]) {
            for i in fast.indices { worst = max(worst, abs(Double(fast[i]) - reference[i]) / max(scale[i], 1e-3)) }
        }
        for (m, n, k, transA, transB) in [
            (67, 53, 41, false, true), (96, 200, 130, false, false), (33, 70, 257, true, false),
        ] {
            let a = values(m * k)
            let b = values(k * n)
            let c0 = values(m * n)
            let alpha: Float = 0.75
            let beta: Float = 0.5
            var c = c0
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    c.withUnsafeMutableBufferPointer { pc in
                        cblas_sgemm(
                            CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                            Int32(m), Int32(n), Int32(k), alpha, pa.baseAddress, Int32(transA ? m : k),
                            pb.baseAddress, Int32(transB ? k : n), beta, pc.baseAddress, Int32(n))
                    }
                }
            }
            var reference = [Double](repeating: 0, count: m * n)
            var scale = reference
            for i in 0..<m {
                for j in 0..<n {
                    var sum = 0.0
                    var magnitude = 0.0
                    for p in 0..<k {
                        let x = Double(transA ? a[p * m + i] : a[i * k + p])
                        let y = Double(transB ? b[j * k + p] : b[p * n + j])
                        sum += x * y
                        magnitude += abs(x * y)
                    }
                    reference[i * n + j] = Double(alpha) * sum + Double(beta) * Double(c0[i * n + j])
                    scale[i * n + j] = Double(alpha) * magnitude + abs(Double(beta) * Double(c0[i * n + j]))
                }
            }
            compare(c, reference, scale)
        }
        let (rows, columns) = (301, 97)
        let matrix = values(rows * columns)
        let x = values(columns)
        var y = [Float](repeating: 0, count: rows)
        matrix.withUnsafeBufferPointer { pm in
            x.withUnsafeBufferPointer { px in
                y.withUnsafeMutableBufferPointer { py in
                    cblas_sgemv(
                        CblasRowMajor, CblasNoTrans, Int32(rows), Int32(columns), 1, pm.baseAddress, Int32(columns),
                        px.baseAddress, 1, 0, py.baseAddress, 1)
                }
            }
        }
        var reference = [Double](repeating: 0, count: rows)
        var scale = reference
        for i in 0..<rows {
            for j in 0..<columns {
                let product = Double(matrix[i * columns + j]) * Double(x[j])
                reference[i] += product
                scale[i] += abs(product)
            }
        }
        compare(y, reference, scale)
        let dot = matrix.withUnsafeBufferPointer {
            cblas_sdot(Int32(rows * columns), $0.baseAddress, 1, $0.baseAddress, 1)
        }
        let exact = matrix.reduce(0.0) { $0 + Double($1) * Double($1) }
        compare([dot], [exact], [exact])
        return worst
    }
}

#if !canImport(Accelerate)
    /// OpenBLAS's run-time core switch, found with `dlsym` (absent from static or single-core builds).
    struct CoreHooks: Sendable {
        /// Every x86 core name OpenBLAS 0.3.x may ship, as `OPENBLAS_CORETYPE` spells it.
        static let knownCores = [
            "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington",
            "Nehalem", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Sandybridge", "Bobcat",
            "Bulldozer", "Piledriver", "Haswell", "Steamroller", "Excavator", "Zen", "SkylakeX", "Cooperlake",
            "SapphireRapids",
        ]
        /// Held while OpenBLAS switches cores: its kernel table is process-wide state, so one switch
        /// (and its self-check) runs at a time.
        static let lock = Mutex(())
        static let shared: CoreHooks? = find()

        let quit: @convention(c) () -> Void
        let initialize: @convention(c) () -> Void
        /// Cores whose `gotoblas_<NAME>` table this library exports.
        let shipped: [String]

        private static func find() -> CoreHooks? {
            guard let handle = dlopen(nil, RTLD_NOW),
                let quit = dlsym(handle, "gotoblas_dynamic_quit"),
                let initialize = dlsym(handle, "gotoblas_dynamic_init")
            else { return nil }
            let shipped = knownCores.filter { dlsym(handle, "gotoblas_" + $0.uppercased()) != nil }
            return CoreHooks(
                quit: unsafeBitCast(quit, to: (@convention(c) () -> Void).self),
                initialize: unsafeBitCast(initialize, to: (@convention(c) () -> Void).self), shipped: shipped)
        }

        /// Re-initializes OpenBLAS with `OPENBLAS_CORETYPE=core` (set only for the call; the
        /// variable's previous state is restored, so child processes choose for themselves).
        /// Returns the core OpenBLAS reports afterwards.
        func activate(_ core: String) -> String {
            let variable = BLAS.coreTypeVariable
            let previous = getenv(variable).map { String(cString: $0) }
            setenv(variable, core, 1)
            quit()
            initialize()
            if let previous { setenv(variable, previous, 1) } else { unsetenv(variable) }
            return openblas_get_corename().map { String(cString: $0) } ?? "unknown"
        }

        /// Switches to `core` and runs the self-check there: the core OpenBLAS reports, and the
        /// self-check's relative error (infinity when OpenBLAS reports another core).
        func activateAndCheck(_ core: String) -> (reported: String, error: Double) {
            let reported = activate(core)
            return (reported, reported.lowercased() == core.lowercased() ? BLAS.selfCheck() : .infinity)
        }
    }
#endif
