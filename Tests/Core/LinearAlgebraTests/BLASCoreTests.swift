import Foundation
import XCTest

@testable import LinearAlgebra

/// The kernel check's rule, case by case, and the CPU facts it reads. The switch itself runs in
/// child processes (CLITests.testInfo…): OpenBLAS's kernel table is process-wide.
final class BLASCoreTests: XCTestCase {
    /// Every core Debian 12's OpenBLAS 0.3.21 ships for x86-64.
    let debianCores: Set<String> = [
        "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington",
        "Nehalem", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Sandybridge", "Bobcat",
        "Bulldozer", "Piledriver", "Haswell", "Steamroller", "Excavator", "Zen", "SkylakeX", "Cooperlake",
    ]
    let sse: Set<CPUInfo.Feature> = [.sse3, .ssse3, .sse4_1, .sse4_2, .popcnt]
    var avx2: Set<CPUInfo.Feature> { sse.union([.avx, .fma, .f16c, .avx2]) }
    var avx512: Set<CPUInfo.Feature> { avx2.union([.avx512f, .avx512bw, .avx512dq, .avx512vl, .avx512vnni]) }

    /// Intel Xeon, family 6 model 207 (Emerald Rapids): AVX-512 with BF16; OpenBLAS 0.3.21 says Prescott.
    var emeraldRapids: CPUInfo {
        CPUInfo(
            vendor: "GenuineIntel", modelName: "Intel(R) Xeon(R)", family: 6, model: 207,
            features: avx512.union([.avx512bf16]))
    }
    var zen4: CPUInfo {
        CPUInfo(
            vendor: "AuthenticAMD", modelName: "AMD EPYC 9R14", family: 25, model: 17,
            features: avx512.union([.avx512bf16]))
    }
    var haswell: CPUInfo {
        CPUInfo(
            vendor: "GenuineIntel", modelName: "Intel(R) Xeon(R) CPU E5-2673 v3", family: 6, model: 63, features: avx2)
    }
    var sandyBridge: CPUInfo {
        CPUInfo(
            vendor: "GenuineIntel", modelName: "Intel(R) Core(TM) i7-2600", family: 6, model: 42,
            features: sse.union([.avx]))
    }

    func decide(_ cpu: CPUInfo, _ core: String, shipped: Set<String>? = nil, _ environment: [String: String] = [:])
        -> BLAS.CoreDecision
    {
        BLAS.decideCore(cpu: cpu, chosenCore: core, shipped: shipped ?? debianCores, environment: environment)
    }

    func testXeonWithPrescottSwitchesToTheBestAVX512Core() {
        XCTAssertEqual(decide(emeraldRapids, "Prescott"), .switchCore(to: "Cooperlake"))
        XCTAssertEqual(
            decide(emeraldRapids, "Prescott", shipped: debianCores.subtracting(["Cooperlake"])),
            .switchCore(to: "SkylakeX"))
        XCTAssertEqual(decide(emeraldRapids, "Nehalem"), .switchCore(to: "Cooperlake"))
        XCTAssertEqual(decide(emeraldRapids, "Sandybridge"), .switchCore(to: "Cooperlake"))
        // Without BF16 the best is SkylakeX; without AVX-512 support from the OS, Haswell.
        var noBF16 = emeraldRapids
        noBF16.features.remove(.avx512bf16)
        XCTAssertEqual(decide(noBF16, "Prescott"), .switchCore(to: "SkylakeX"))
        var osWithoutAVX512 = emeraldRapids
        osWithoutAVX512.features = avx2
        XCTAssertEqual(decide(osWithoutAVX512, "Prescott"), .switchCore(to: "Haswell"))
    }

    func testRightChoicesAreKept() {
        XCTAssertEqual(decide(zen4, "Zen"), .keep(.chosenCoreFits))
        XCTAssertEqual(decide(haswell, "Haswell"), .keep(.chosenCoreFits))
        XCTAssertEqual(decide(emeraldRapids, "SkylakeX"), .keep(.chosenCoreFits))
        XCTAssertEqual(decide(emeraldRapids, "Cooperlake"), .keep(.chosenCoreFits))
        // An AVX2 core on an AVX-512 CPU is not "clearly out-classed": OpenBLAS may have reasons.
        XCTAssertEqual(decide(emeraldRapids, "Haswell"), .keep(.chosenCoreFits))
        // A core name this check does not know is left alone.
        XCTAssertEqual(decide(emeraldRapids, "GraniteRapids"), .keep(.chosenCoreFits))
    }

    func testHaswellClassAndAMDWithAnSSECoreSwitch() {
        XCTAssertEqual(decide(haswell, "Prescott"), .switchCore(to: "Haswell"))
        XCTAssertEqual(decide(zen4, "Prescott"), .switchCore(to: "Zen"))
        XCTAssertEqual(decide(zen4, "Barcelona", shipped: debianCores.subtracting(["Zen"])), .switchCore(to: "Haswell"))
        var hygon = zen4
        hygon.vendor = "HygonGenuine"
        XCTAssertEqual(decide(hygon, "Opteron_SSE3"), .switchCore(to: "Zen"))
    }

    func testTheUsersVariableAndTheOptOutWin() {
        XCTAssertEqual(
            decide(emeraldRapids, "Prescott", ["OPENBLAS_CORETYPE": "Prescott"]), .keep(.userSetCoreType("Prescott")))
        XCTAssertEqual(
            decide(emeraldRapids, "Haswell", ["OPENBLAS_CORETYPE": "Haswell"]), .keep(.userSetCoreType("Haswell")))
        for value in ["1", "true", "YES"] {
            XCTAssertEqual(decide(emeraldRapids, "Prescott", [BLAS.keepCoreVariable: value]), .keep(.optedOut), value)
        }
        // Only an explicit yes opts out; an empty OPENBLAS_CORETYPE is no choice.
        XCTAssertEqual(decide(emeraldRapids, "Prescott", [BLAS.keepCoreVariable: "0"]), .switchCore(to: "Cooperlake"))
        XCTAssertEqual(decide(emeraldRapids, "Prescott", ["OPENBLAS_CORETYPE": ""]), .switchCore(to: "Cooperlake"))
    }

    func testNoAVX2UnknownVendorNotX86AndNothingBetterAreKept() {
        XCTAssertEqual(decide(sandyBridge, "Prescott"), .keep(.noAVX2))
        XCTAssertEqual(decide(sandyBridge, "Sandybridge"), .keep(.noAVX2))
        var centaur = haswell
        centaur.vendor = "CentaurHauls"
        XCTAssertEqual(decide(centaur, "Prescott"), .keep(.unknownVendor("CentaurHauls")))
        let arm = CPUInfo(architecture: "arm64", vendor: "", features: [])
        XCTAssertEqual(decide(arm, "NEOVERSEN1"), .keep(.notX86))
        XCTAssertEqual(
            decide(emeraldRapids, "Prescott", shipped: ["Prescott", "Nehalem"]), .keep(.noBetterCoreShipped))
        XCTAssertEqual(decide(emeraldRapids, "Prescott", shipped: []), .keep(.noBetterCoreShipped))
    }

    func testBestCoreAndWhatACPUCanRun() {
        XCTAssertEqual(BLAS.bestCore(for: emeraldRapids, shipped: debianCores), "Cooperlake")
        XCTAssertEqual(BLAS.bestCore(for: zen4, shipped: debianCores), "Zen")
        XCTAssertEqual(BLAS.bestCore(for: haswell, shipped: ["haswell"]), "haswell")  // spelled as shipped
        XCTAssertNil(BLAS.bestCore(for: sandyBridge, shipped: debianCores))
        XCTAssertTrue(BLAS.cpuCanRun(core: "Cooperlake", cpu: emeraldRapids))
        XCTAssertFalse(BLAS.cpuCanRun(core: "SkylakeX", cpu: haswell))
        XCTAssertFalse(BLAS.cpuCanRun(core: "Haswell", cpu: sandyBridge))
        XCTAssertTrue(BLAS.cpuCanRun(core: "Sandybridge", cpu: sandyBridge))
        XCTAssertFalse(BLAS.cpuCanRun(core: "Bulldozer", cpu: zen4), "FMA4 cores are never tried")
        XCTAssertEqual(BLAS.CoreClass(core: "PRESCOTT"), .sse)
        XCTAssertEqual(BLAS.CoreClass(core: "zen"), .avx2)
        XCTAssertNil(BLAS.CoreClass(core: "unknown"))
    }

    /// cpuid, read by the package, agrees with the kernel's own flags in /proc/cpuinfo.
    func testCPUFeaturesMatchProcCpuinfo() throws {
        let cpu = CPUInfo.current
        #if arch(x86_64)
            let text = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
            let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("flags") })
            let flags = Set(line.split(separator: ":", maxSplits: 1)[1].split(separator: " ").map(String.init))
            let names: [CPUInfo.Feature: String] = [
                .sse3: "pni", .ssse3: "ssse3", .sse4_1: "sse4_1", .sse4_2: "sse4_2", .popcnt: "popcnt",
                .avx: "avx", .fma: "fma", .f16c: "f16c", .avx2: "avx2", .avx512f: "avx512f",
                .avx512bw: "avx512bw", .avx512dq: "avx512dq", .avx512vl: "avx512vl",
                .avx512vnni: "avx512_vnni", .avx512bf16: "avx512_bf16",
            ]
            for feature in CPUInfo.Feature.allCases {
                XCTAssertEqual(
                    cpu.features.contains(feature), flags.contains(names[feature]!), "\(feature) in \(cpu.summary)")
            }
            XCTAssertTrue(
                ["GenuineIntel", "AuthenticAMD", "HygonGenuine"].contains(cpu.vendor) || !cpu.vendor.isEmpty, cpu.vendor
            )
            if let family = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu family") })?.split(
                separator: ":"
            ).last {
                XCTAssertEqual(cpu.family, Int(family.trimmingCharacters(in: .whitespaces)))
            }
            if let model = text.split(separator: "\n").first(where: { $0.hasPrefix("model\t") })?.split(separator: ":")
                .last
            {
                XCTAssertEqual(cpu.model, Int(model.trimmingCharacters(in: .whitespaces)))
            }
        #else
            XCTAssertTrue(cpu.features.isEmpty)
        #endif
    }

    /// A process no test changed runs the check with no stand-in core and a true self-check
    /// (the settings' defaults change nothing; InfoCommandTests sets them in a child process).
    func testTestSettingsDefaultToNothing() {
        XCTAssertEqual(BLAS.testSettings, BLAS.TestSettings())
        XCTAssertNil(BLAS.testSettings.coreAtLoad)
        XCTAssertFalse(BLAS.testSettings.failsSelfCheck)
    }

    /// The check ran before the first BLAS call, and whatever core it left computes right.
    func testTheCoreInUsePassesTheSelfCheck() {
        _ = VectorMath.dot([1, 2], [3, 4])
        XCTAssertLessThanOrEqual(BLAS.selfCheck(), BLAS.selfCheckTolerance)
        let configuration = BLAS.configuration
        #if !canImport(Accelerate)
            XCTAssertEqual(configuration.library, "OpenBLAS")
            XCTAssertEqual(configuration.coreAtLoad, BLAS.coreCheck.coreAtLoad)
            XCTAssertNotNil(
                configuration.version.flatMap { v in v.split(separator: ".").compactMap { Int($0) }.count == 3 ? v : nil
                })
            if let switched = BLAS.coreCheck.switchedTo {
                XCTAssertEqual(configuration.coreInUse, switched)
            } else {
                XCTAssertEqual(configuration.coreInUse?.lowercased(), configuration.coreAtLoad?.lowercased())
            }
            if let user = ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"], !user.isEmpty {
                XCTAssertEqual(
                    BLAS.coreCheck.switchedTo, nil, "the user's OPENBLAS_CORETYPE=\(user) is never overridden")
            }
        #endif
    }
}
