import CKernels
import Foundation

/// What the processor running this process is and can do, read once with `cpuid` on x86.
///
/// Features are listed only when the operating system also saves the registers they use, so a
/// feature here is one the process can execute. On other architectures `features` and `vendor`
/// are empty, and `modelName` comes from `/proc/cpuinfo` (else it is the architecture).
package struct CPUInfo: Sendable, Equatable, Codable {
    /// An instruction-set extension that decides which BLAS kernels can run.
    package enum Feature: String, Sendable, Codable, CaseIterable, Comparable {
        /// The SSE generations from SSE3 to SSE4.2, and population count.
        case sse3, ssse3
        // Named as Intel's manuals and /proc/cpuinfo write them (sse4_1), not camel case.
        // swift-format-ignore: AlwaysUseLowerCamelCase
        case sse4_1 = "sse4.1"
        // swift-format-ignore: AlwaysUseLowerCamelCase
        case sse4_2 = "sse4.2"
        case popcnt
        /// 256-bit AVX, FMA3, half-precision conversion and AVX2.
        case avx, fma, f16c, avx2
        /// AVX-512: foundation, byte/word, dword/qword and vector-length, then VNNI and BF16.
        case avx512f, avx512bw, avx512dq, avx512vl
        case avx512vnni = "avx512_vnni"
        case avx512bf16 = "avx512_bf16"

        /// Orders features as declared, older extensions first (how `summary` lists them).
        package static func < (a: Feature, b: Feature) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// `x86_64`, `arm64`, …
    package var architecture: String
    /// The cpuid vendor string (`GenuineIntel`, `AuthenticAMD`, `HygonGenuine`, …); empty off x86.
    package var vendor: String
    /// The marketing name (cpuid brand string, else `/proc/cpuinfo`'s "model name").
    package var modelName: String
    /// Display family, as `lscpu` prints it (Intel Emerald Rapids: 6); 0 off x86.
    package var family: Int
    /// Display model, as `lscpu` prints it (Intel Emerald Rapids: 207); 0 off x86.
    package var model: Int
    /// The extensions the CPU has and the operating system enables.
    package var features: Set<Feature>

    /// A description of some CPU, for tests of the kernel check and for reports; `current` is
    /// the one running this process.
    package init(
        architecture: String = "x86_64", vendor: String, modelName: String = "", family: Int = 0, model: Int = 0,
        features: Set<Feature>
    ) {
        self.architecture = architecture
        self.vendor = vendor
        self.modelName = modelName
        self.family = family
        self.model = model
        self.features = features
    }

    /// AVX2 and FMA3 together: what OpenBLAS's Haswell and Zen kernels need.
    package var hasAVX2FMA: Bool { features.isSuperset(of: [.avx, .avx2, .fma]) }
    /// AVX-512 F, BW, DQ and VL: what OpenBLAS's SkylakeX kernels need.
    package var hasAVX512: Bool { hasAVX2FMA && features.isSuperset(of: [.avx512f, .avx512bw, .avx512dq, .avx512vl]) }
    /// AVX-512 with BF16: what OpenBLAS's Cooperlake kernels need.
    package var hasAVX512BF16: Bool { hasAVX512 && features.contains(.avx512bf16) }

    /// The processor running this process.
    package static let current: CPUInfo = read()

    private static func read() -> CPUInfo {
        var facts = ce_cpu_facts()
        #if arch(x86_64)
            let architecture = "x86_64"
        #elseif arch(arm64)
            let architecture = "arm64"
        #else
            let architecture = "other"
        #endif
        guard ce_cpu_read(&facts) == 1 else {
            return CPUInfo(
                architecture: architecture, vendor: "", modelName: procModelName() ?? architecture, features: [])
        }
        let vendor = withUnsafeBytes(of: facts.vendor) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let brand = withUnsafeBytes(of: facts.brand) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let flags: [(Int32, Feature)] = [
            (facts.sse3, .sse3), (facts.ssse3, .ssse3), (facts.sse4_1, .sse4_1), (facts.sse4_2, .sse4_2),
            (facts.popcnt, .popcnt),
            (facts.avx, .avx), (facts.fma, .fma), (facts.f16c, .f16c), (facts.avx2, .avx2),
            (facts.avx512f, .avx512f), (facts.avx512bw, .avx512bw), (facts.avx512dq, .avx512dq),
            (facts.avx512vl, .avx512vl),
            (facts.avx512_vnni, .avx512vnni), (facts.avx512_bf16, .avx512bf16),
        ]
        return CPUInfo(
            architecture: architecture, vendor: vendor, modelName: brand.isEmpty ? (procModelName() ?? vendor) : brand,
            family: Int(facts.family), model: Int(facts.model), features: Set(flags.filter { $0.0 != 0 }.map(\.1)))
    }

    private static func procModelName() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let value = line.split(separator: ":", maxSplits: 1).last {
                return value.trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// "AMD EPYC (AuthenticAMD family 25 model 1): sse3 … avx2" — one line for logs and headers.
    package var summary: String {
        let features = self.features.sorted().map(\.rawValue).joined(separator: " ")
        let id = vendor.isEmpty ? architecture : "\(vendor) family \(family) model \(model)"
        return "\(modelName) (\(id))" + (features.isEmpty ? "" : ": " + features)
    }
}
