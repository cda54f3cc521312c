/// The decision behind the kernel check: given what the CPU can do, the core OpenBLAS chose for it
/// and the environment, keep that core or switch to a better one OpenBLAS ships.
///
/// A pure function of its inputs, so every case is unit-tested without touching the library;
/// `BLAS.coreCheck` applies it once, before the package's first BLAS call.
extension BLAS {
    /// Set to `1` (or `true`, `yes`, `on`) to keep whatever core OpenBLAS chose: no check, no switch.
    package static let keepCoreVariable = "CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE"
    /// OpenBLAS's own variable: when a user sets it, that choice is never overridden.
    package static let coreTypeVariable = "OPENBLAS_CORETYPE"

    /// What the kernel check does with the core OpenBLAS chose.
    package enum CoreDecision: Equatable, Sendable {
        /// Leave the library as it is, and why.
        case keep(KeepReason)
        /// Switch to the named OpenBLAS core (a name `OPENBLAS_CORETYPE` accepts).
        case switchCore(to: String)
    }

    /// Why the chosen core is kept.
    package enum KeepReason: Equatable, Sendable, CustomStringConvertible {
        /// `OPENBLAS_CORETYPE` is set (to this value): the user's choice stands.
        case userSetCoreType(String)
        /// `CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE` is set.
        case optedOut
        /// Not an x86 CPU: OpenBLAS's choice there is not second-guessed.
        case notX86
        /// A vendor whose cores this check does not rank (it keeps whatever OpenBLAS chose).
        case unknownVendor(String)
        /// The CPU has no AVX2 + FMA, so no shipped core clearly beats the chosen one.
        case noAVX2
        /// The chosen core is of the AVX2 class or above (or one this check does not rank).
        case chosenCoreFits
        /// The CPU out-classes the chosen core, but this OpenBLAS ships no better core for it.
        case noBetterCoreShipped

        package var description: String {
            switch self {
            case .userSetCoreType(let value): return "OPENBLAS_CORETYPE=\(value) is set by the user"
            case .optedOut: return "\(BLAS.keepCoreVariable) is set"
            case .notX86: return "not an x86 CPU"
            case .unknownVendor(let vendor): return "CPU vendor '\(vendor)' is not ranked"
            case .noAVX2: return "the CPU has no AVX2+FMA"
            case .chosenCoreFits: return "the chosen core fits the CPU"
            case .noBetterCoreShipped: return "no better core is shipped by this OpenBLAS"
            }
        }
    }

    /// How much of an x86 CPU's vector hardware an OpenBLAS core uses.
    package enum CoreClass: Int, Comparable, Sendable {
        /// SSE-era kernels (Prescott, Nehalem, Core2, Opteron, …).
        case sse = 0
        /// 256-bit AVX without AVX2 (Sandybridge, Bulldozer, Piledriver, Steamroller).
        case avx = 1
        /// AVX2 + FMA (Haswell, Zen, Excavator).
        case avx2 = 2
        /// AVX-512 (SkylakeX, Cooperlake, SapphireRapids).
        case avx512 = 3

        /// Orders classes from SSE up to AVX-512.
        package static func < (a: CoreClass, b: CoreClass) -> Bool { a.rawValue < b.rawValue }

        /// The class of an x86 core by the name OpenBLAS reports (case-insensitive); nil when unknown.
        package init?(core: String) {
            switch core.lowercased() {
            case "katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2", "penryn", "dunnington",
                "nehalem", "athlon", "opteron", "opteron_sse3", "barcelona", "nano", "bobcat":
                self = .sse
            case "sandybridge", "bulldozer", "piledriver", "steamroller": self = .avx
            case "haswell", "zen", "excavator": self = .avx2
            case "skylakex", "cooperlake", "sapphirerapids": self = .avx512
            default: return nil
            }
        }
    }

    /// The best core, among `shipped` (names as OpenBLAS spells them), that `cpu` can run.
    ///
    /// Intel: Cooperlake with AVX512_BF16, then SkylakeX with AVX-512, then Haswell with AVX2+FMA.
    /// AMD and Hygon: Zen, then Haswell (the same AVX2 kernels). Nil when none fits.
    package static func bestCore(for cpu: CPUInfo, shipped: Set<String>) -> String? {
        let lowered = Dictionary(shipped.map { ($0.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var preferences: [String] = []
        switch cpu.vendor {
        case "GenuineIntel":
            if cpu.hasAVX512BF16 { preferences.append("Cooperlake") }
            if cpu.hasAVX512 { preferences.append("SkylakeX") }
            if cpu.hasAVX2FMA { preferences.append("Haswell") }
        case "AuthenticAMD", "HygonGenuine":
            if cpu.hasAVX2FMA { preferences += ["Zen", "Haswell"] }
        default:
            break
        }
        return preferences.lazy.compactMap { lowered[$0.lowercased()] }.first
    }

    /// Keep the core OpenBLAS chose, or switch: the whole rule, without side effects.
    ///
    /// Switches only when the chosen core is of the SSE or AVX class and the CPU has at least
    /// AVX2 + FMA (and the OS saves those registers), to `bestCore(for:shipped:)`. Never when
    /// `OPENBLAS_CORETYPE` or `CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE` is set.
    package static func decideCore(
        cpu: CPUInfo, chosenCore: String, shipped: Set<String>,
        environment: [String: String]
    ) -> CoreDecision {
        if let value = environment[coreTypeVariable], !value.isEmpty { return .keep(.userSetCoreType(value)) }
        if let value = environment[keepCoreVariable], ["1", "true", "yes", "on"].contains(value.lowercased()) {
            return .keep(.optedOut)
        }
        guard cpu.architecture == "x86_64" else { return .keep(.notX86) }
        guard ["GenuineIntel", "AuthenticAMD", "HygonGenuine"].contains(cpu.vendor) else {
            return .keep(.unknownVendor(cpu.vendor))
        }
        guard cpu.hasAVX2FMA else { return .keep(.noAVX2) }
        guard let chosenClass = CoreClass(core: chosenCore), chosenClass < .avx2 else { return .keep(.chosenCoreFits) }
        guard let best = bestCore(for: cpu, shipped: shipped), let bestClass = CoreClass(core: best),
            bestClass > chosenClass
        else {
            return .keep(.noBetterCoreShipped)
        }
        return .switchCore(to: best)
    }
}
