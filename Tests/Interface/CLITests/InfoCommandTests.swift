import Foundation
import TestSupport
import XCTest

extension ProcessResult {
    /// Standard output as a JSON object (empty when it is not one).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:] }
    /// `info --json`'s `blas` object.
    var blas: [String: Any] { json["blas"] as? [String: Any] ?? [:] }
}

/// `embeddings info` and the kernel check as a user's process meets it: each run is a child
/// process, so switching OpenBLAS's process-wide kernels never disturbs the test runner.
final class InfoCommandTests: XCTestCase {
    /// The user's OPENBLAS_CORETYPE, when this machine sets one on purpose (never changed here).
    let userCore = ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"].flatMap { $0.isEmpty ? nil : $0 }

    /// `embeddings info arguments…` in this process's environment without the variable that
    /// keeps the BLAS core (so the kernel check runs as a user's process runs it), plus `extra`.
    func info(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE")
        for (key, value) in extra { environment[key] = value }
        return try embeddings(["info"] + arguments, environment: environment)
    }

    /// `KernelCheckChild arguments…` (the kernel check at load with `BLAS.testSettings` from its
    /// arguments, printing the CPU and BLAS as `info` does), in the same environment as `info`.
    func kernelCheck(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE")
        for (key, value) in extra { environment[key] = value }
        let child = CLITests.executable.deletingLastPathComponent().appendingPathComponent("KernelCheckChild")
        return try ChildProcess.run(child, arguments, environment: environment)
    }

    func testInfoDescribesCPUBLASAndModel() throws {
        let r = try info(["--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let cpu = try XCTUnwrap(r.json["cpu"] as? [String: Any])
        let model = try XCTUnwrap(r.json["model"] as? [String: Any])
        XCTAssertEqual(model["identifier"] as? String, "sentence-transformers/all-MiniLM-L6-v2")
        XCTAssertEqual(model["dimension"] as? Int, 384)
        XCTAssertEqual(model["pooling"] as? String, "mean")
        XCTAssertEqual(cpu["cores"] as? Int, ProcessInfo.processInfo.activeProcessorCount)
        // The int8 products: the path --quantize int8 runs is one this CPU runs; AVX2 with avx2.
        let int8 = try XCTUnwrap(r.json["int8"] as? [String: Any])
        let paths = try XCTUnwrap(int8["paths"] as? [String])
        XCTAssertTrue(paths.contains("generic") && paths.contains(int8["path"] as? String ?? "?"), "\(int8)")
        if (cpu["features"] as? [String] ?? []).contains("avx2") { XCTAssertTrue(paths.contains("AVX2"), "\(paths)") }
        let procinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        if let name = procinfo.split(separator: "\n").first(where: { $0.hasPrefix("vendor_id") })?.split(separator: ":")
            .last
        {
            XCTAssertEqual(cpu["vendor"] as? String, name.trimmingCharacters(in: .whitespaces))
        }
        XCTAssertEqual(r.blas["library"] as? String, "OpenBLAS")
        XCTAssertEqual(r.blas["version"] as? String, try debianOpenBLASVersion())
        let shipped = try XCTUnwrap(r.blas["shipped_cores"] as? [String])
        XCTAssertTrue(shipped.contains("Prescott") && shipped.contains("Haswell"), "\(shipped)")
        let atLoad = try XCTUnwrap(r.blas["core_at_load"] as? String)
        let inUse = try XCTUnwrap(r.blas["core_in_use"] as? String)
        XCTAssertTrue(shipped.contains(atLoad) && shipped.contains(inUse), "\(atLoad) \(inUse)")
        if let userCore {
            XCTAssertEqual(inUse.lowercased(), userCore.lowercased(), "OPENBLAS_CORETYPE is never overridden")
            XCTAssertEqual(r.blas["corrected"] as? Bool, false)
        }
        let text = try info([])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("core:         \(inUse)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("model:        sentence-transformers/all-MiniLM-L6-v2"), text.stdout)
    }

    /// The version that `dpkg` says is installed, e.g. "0.3.21".
    func debianOpenBLASVersion() throws -> String? {
        let r = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/dpkg-query"), ["-W", "-f", "${Version}", "libopenblas0-pthread"])
        guard r.status == 0 else { return nil }
        // "0.3.21+ds-4" → "0.3.21"
        return r.stdout.split(whereSeparator: { $0 == "+" || $0 == "-" }).first.map(String.init)
    }

    /// The switch itself, on any CPU: to another core this CPU runs, results checked, and back.
    func testTryCoreSwitchesChecksAndSwitchesBack() throws {
        let before = try info(["--json"])
        let inUse = try XCTUnwrap(before.blas["core_in_use"] as? String)
        let features = try XCTUnwrap((before.json["cpu"] as? [String: Any])?["features"] as? [String])
        // Another core: a sibling of the same class where there is one, else an older class.
        let candidates =
            features.contains("avx2")
            ? ["Haswell", "Zen", "Sandybridge"]
            : features.contains("avx") ? ["Sandybridge", "Nehalem"] : ["Nehalem", "Prescott"]
        let target = userCore ?? candidates.first { $0.lowercased() != inUse.lowercased() }!
        let r = try info(["--json", "--try-core", target.uppercased()])
        XCTAssertEqual(r.status, 0, r.stderr)
        let trial = try XCTUnwrap(r.json["core_trial"] as? [String: Any], r.stdout)
        XCTAssertEqual((trial["reported"] as? String)?.lowercased(), target.lowercased())
        XCTAssertEqual(trial["agreed"] as? Bool, true)
        XCTAssertLessThanOrEqual(try XCTUnwrap(trial["max_relative_error"] as? Double), 1e-4)
        XCTAssertEqual(trial["restored"] as? String, inUse)
        XCTAssertEqual(r.blas["core_in_use"] as? String, inUse, "back on the core in use before the trial")
    }

    func testTryCoreRefusesUnknownCoresAndCoresTheCPUCannotRun() throws {
        let unknown = try info(["--try-core", "Pentium4000"])
        XCTAssertEqual(unknown.status, 64, unknown.stderr)
        XCTAssertTrue(unknown.stderr.hasPrefix("error: no OpenBLAS core named 'Pentium4000'"), unknown.stderr)
        XCTAssertEqual(unknown.stdout, "")
        let fma4 = try info(["--try-core", "Bulldozer"])  // never tried: FMA4/XOP kernels crash Intel CPUs
        XCTAssertEqual(fma4.status, 1, fma4.stderr)
        XCTAssertTrue(fma4.stderr.hasPrefix("error: this CPU cannot run the OpenBLAS core 'Bulldozer'"), fma4.stderr)
        let empty = try info(["--try-core", ""])
        XCTAssertEqual(empty.status, 64, empty.stderr)
    }

    /// A CPU that OpenBLAS does not know, stood in for by starting from its Prescott fallback:
    /// the check corrects it to the best core for this CPU, unless the user or the opt-out says no.
    func testTheCheckCorrectsAnOutclassedCoreAtLoad() throws {
        let simulate = ["--core-at-load", "Prescott"]
        let r = try kernelCheck(["--json"] + simulate)
        XCTAssertEqual(r.status, 0, r.stderr)
        let features = try XCTUnwrap((r.json["cpu"] as? [String: Any])?["features"] as? [String])
        let vendor = (r.json["cpu"] as? [String: Any])?["vendor"] as? String ?? ""
        if let userCore {
            // The machine's own choice stands: the stand-in is ignored and nothing is switched.
            XCTAssertEqual((r.blas["core_in_use"] as? String)?.lowercased(), userCore.lowercased())
            XCTAssertEqual(r.blas["corrected"] as? Bool, false)
        } else if features.contains("avx2") && features.contains("fma")
            && ["GenuineIntel", "AuthenticAMD", "HygonGenuine"].contains(vendor)
        {
            let expected =
                vendor != "GenuineIntel"
                ? "Zen"
                : features.contains("avx512_bf16")
                    ? "Cooperlake" : features.contains("avx512f") ? "SkylakeX" : "Haswell"
            XCTAssertEqual(r.blas["core_at_load"] as? String, "Prescott")
            XCTAssertEqual(r.blas["core_in_use"] as? String, expected)
            XCTAssertEqual(r.blas["corrected"] as? Bool, true)
            XCTAssertEqual(r.stderr, "", "a successful switch is silent")
            let text = try kernelCheck(simulate)
            XCTAssertTrue(text.stdout.contains("core:         \(expected) (corrected from Prescott)"), text.stdout)
        } else {
            XCTAssertEqual(r.blas["core_in_use"] as? String, "Prescott", "no AVX2: nothing clearly better to switch to")
        }
        if userCore == nil {
            let kept = try kernelCheck(
                ["--json"] + simulate, environment: ["CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE": "1"])
            XCTAssertEqual(kept.blas["core_in_use"] as? String, "Prescott", "the opt-out keeps OpenBLAS's choice")
            XCTAssertEqual(kept.blas["check"] as? String, "kept Prescott: CONTEXTUAL_EMBEDDINGS_KEEP_BLAS_CORE is set")
        }
    }

    /// When the new core's results disagree with the reference loops, the old core comes back
    /// and one warning line says why.
    func testAFailedSelfCheckSwitchesBackAndSaysSoOnce() throws {
        guard userCore == nil else {
            // With the machine's own OPENBLAS_CORETYPE nothing is ever switched; that is asserted above.
            let r = try kernelCheck(["--json", "--fail-self-check"])
            XCTAssertEqual(r.blas["corrected"] as? Bool, false)
            return
        }
        let r = try kernelCheck(["--json", "--core-at-load", "Prescott", "--fail-self-check"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let features = (r.json["cpu"] as? [String: Any])?["features"] as? [String] ?? []
        XCTAssertEqual(r.blas["core_in_use"] as? String, "Prescott")
        XCTAssertEqual(r.blas["corrected"] as? Bool, false)
        if features.contains("avx2") {
            let warnings = r.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: ") }
            XCTAssertEqual(warnings.count, 1, r.stderr)
            XCTAssertTrue(warnings.first?.contains("kept OpenBLAS core Prescott") ?? false, r.stderr)
            XCTAssertTrue((r.blas["check"] as? String ?? "").contains("differ from the reference loops"), "\(r.blas)")
        }
    }
}
