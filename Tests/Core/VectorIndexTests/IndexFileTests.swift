import Foundation
import LinearAlgebra
import Synchronization
import TestSupport
import VectorIndex
import XCTest

final class IndexFileTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("index-file-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    let fingerprint = IndexFingerprint(
        modelIdentifier: "test/model", dimension: 5, pooling: "mean", normalized: true, tokenizerHash: "abc123")

    func makeStored(count: Int, seed: UInt64 = 9) throws -> StoredIndex {
        var rng = SeededGenerator(seed: seed)
        var index = FlatIndex(dimension: 5)
        try index.add(contentsOf: (0..<count).map { ("id-\($0)-é", rng.floats(5)) })
        return StoredIndex(index: index, fingerprint: fingerprint, metadata: Data("meta ✓".utf8))
    }

    func testRoundTripIsBitExact() throws {
        let stored = try makeStored(count: 37)
        let url = folder.appendingPathComponent("a.index")
        try IndexFile.write(stored, to: url)
        let loaded = try IndexFile.read(from: url, expecting: fingerprint)
        XCTAssertEqual(loaded.index.ids, stored.index.ids)
        XCTAssertEqual(loaded.fingerprint, fingerprint)
        XCTAssertEqual(loaded.metadata, stored.metadata)
        let a = stored.index.withUnsafeVectors { $0.map(\.bitPattern) }
        let b = loaded.index.withUnsafeVectors { $0.map(\.bitPattern) }
        XCTAssertEqual(a, b)
        XCTAssertEqual(try loaded.index.search([1, 0, 0, 0, 0], k: 3), try stored.index.search([1, 0, 0, 0, 0], k: 3))
    }

    func testEmptyIndexRoundTrips() throws {
        let url = folder.appendingPathComponent("empty.index")
        try IndexFile.write(StoredIndex(index: FlatIndex(dimension: 5), fingerprint: fingerprint), to: url)
        let loaded = try IndexFile.read(from: url)
        XCTAssertEqual(loaded.index.count, 0)
        XCTAssertEqual(loaded.index.dimension, 5)
    }

    func testLoadedIndexCanBeChanged() throws {
        let url = folder.appendingPathComponent("b.index")
        try IndexFile.write(try makeStored(count: 4), to: url)
        var loaded = try IndexFile.read(from: url).index
        try loaded.add(id: "new", vector: [0, 0, 0, 0, 1])
        XCTAssertTrue(loaded.remove(id: "id-0-é"))
        XCTAssertEqual(loaded.count, 4)
        XCTAssertEqual(try loaded.search([0, 0, 0, 0, 1], k: 1).first?.id, "new")
    }

    func testTruncatedAtEveryByteIsATypedError() throws {
        let url = folder.appendingPathComponent("c.index")
        try IndexFile.write(try makeStored(count: 3), to: url)
        let bytes = try Data(contentsOf: url)
        let cut = folder.appendingPathComponent("cut.index")
        for length in 0..<bytes.count {
            try bytes.prefix(length).write(to: cut)
            XCTAssertThrowsError(try IndexFile.read(from: cut), "length \(length)") { error in
                XCTAssertTrue(error is VectorIndexError, "length \(length): \(error)")
            }
        }
    }

    func testEveryFlippedByteIsDetected() throws {
        let url = folder.appendingPathComponent("d.index")
        try IndexFile.write(try makeStored(count: 3), to: url)
        let bytes = try Data(contentsOf: url)
        let bad = folder.appendingPathComponent("bad.index")
        for position in 0..<bytes.count {
            var copy = bytes
            copy[position] ^= 0x5A
            try copy.write(to: bad)
            XCTAssertThrowsError(try IndexFile.read(from: bad), "byte \(position)") { error in
                XCTAssertTrue(error is VectorIndexError, "byte \(position): \(error)")
            }
        }
    }

    func testForeignFileAndMissingFile() throws {
        let foreign = folder.appendingPathComponent("notes.txt")
        try Data("hello, this is not an index at all, just some words".utf8).write(to: foreign)
        XCTAssertThrowsError(try IndexFile.read(from: foreign)) {
            XCTAssertEqual($0 as? VectorIndexError, .notAnIndexFile(path: foreign.path))
        }
        XCTAssertThrowsError(try IndexFile.read(from: folder.appendingPathComponent("missing.index"))) {
            guard case .io(_, "open", _)? = $0 as? VectorIndexError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try IndexFile.read(from: folder)) { XCTAssertTrue($0 is VectorIndexError) }
    }

    func testFingerprintMismatch() throws {
        let url = folder.appendingPathComponent("e.index")
        try IndexFile.write(try makeStored(count: 2), to: url)
        var other = fingerprint
        other.modelIdentifier = "other/model"
        XCTAssertThrowsError(try IndexFile.read(from: url, expecting: other)) {
            XCTAssertEqual($0 as? VectorIndexError, .fingerprintMismatch(expected: other, actual: self.fingerprint))
        }
    }

    func testOverwriteReplacesAtomicallyAndLeavesNoTemporaryFiles() throws {
        let url = folder.appendingPathComponent("f.index")
        try IndexFile.write(try makeStored(count: 2, seed: 1), to: url)
        try IndexFile.write(try makeStored(count: 9, seed: 2), to: url)
        XCTAssertEqual(try IndexFile.read(from: url).index.count, 9)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["f.index"])
    }

    func testFailedSaveKeepsPreviousFile() throws {
        let url = folder.appendingPathComponent("g.index")
        try IndexFile.write(try makeStored(count: 2), to: url)
        let before = try Data(contentsOf: url)
        struct Boom: Error {}
        XCTAssertThrowsError(
            try AtomicFile.write(to: url) { sink in
                try Data([1, 2, 3]).withUnsafeBytes { try sink($0) }
                throw Boom()
            })
        XCTAssertEqual(try Data(contentsOf: url), before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["g.index"])
        XCTAssertThrowsError(
            try IndexFile.write(try makeStored(count: 2), to: folder.appendingPathComponent("no/such/dir.index"))
        ) {
            XCTAssertTrue($0 is VectorIndexError)
        }
        XCTAssertNoThrow(try AtomicFile.checkWritable(url))
        XCTAssertThrowsError(try AtomicFile.checkWritable(folder.appendingPathComponent("no/such/dir.index")))
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path), ["g.index"], "the probe is removed")
    }

    func testSavesRemoveOnlyTemporariesOfDeadSaves() throws {
        let url = folder.appendingPathComponent("h.index")
        let dead = folder.appendingPathComponent(".h.index.tmp-999999-1")
        let fresh = folder.appendingPathComponent(".h.index.tmp-999999-2")
        let live = folder.appendingPathComponent(".h.index.tmp-1-3")
        let other = folder.appendingPathComponent(".other.index.tmp-999999-4")
        for file in [dead, fresh, live, other] { try Data([1]).write(to: file) }
        let old = Date(timeIntervalSinceNow: -60)
        for file in [dead, live, other] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file.path)
        }
        // A save in progress (here: this process) holds a lock on its temporary file.
        let fd = open(live.path, O_RDONLY)
        XCTAssertEqual(flock(fd, LOCK_EX | LOCK_NB), 0)
        defer { close(fd) }
        try IndexFile.write(try makeStored(count: 2), to: url)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        XCTAssertFalse(left.contains(dead.lastPathComponent), "an old, unlocked temporary is removed")
        XCTAssertTrue(left.contains(fresh.lastPathComponent), "a temporary written in the last seconds is kept")
        XCTAssertTrue(left.contains(live.lastPathComponent), "a locked temporary (a live save) is kept")
        XCTAssertTrue(left.contains(other.lastPathComponent), "another file's temporaries are not touched")
        XCTAssertTrue(left.contains("h.index"))
    }

    func testTheStaleAgeDecidesWhichUnlockedTemporariesGo() throws {
        let url = folder.appendingPathComponent("i.index")
        let temporary = folder.appendingPathComponent(".i.index.tmp-999999-1")
        try Data([1]).write(to: temporary)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -1)], ofItemAtPath: temporary.path)
        AtomicFile.removeStaleTemporaries(of: url, olderThan: AtomicFile.defaultStaleTemporaryAge)
        XCTAssertTrue(FileManager.default.fileExists(atPath: temporary.path), "1 s old: younger than the default 2 s")
        AtomicFile.removeStaleTemporaries(of: url, olderThan: .milliseconds(500))
        XCTAssertFalse(FileManager.default.fileExists(atPath: temporary.path), "1 s old: older than 0.5 s")
    }

    /// Tests set the save's settings in their process (nothing reads the environment): the
    /// stale age a save uses, and a call at each step with the temporary file that exists then.
    func testTestSettingsReachEverySave() throws {
        XCTAssertEqual(AtomicFile.testSettings.staleTemporaryAge, AtomicFile.defaultStaleTemporaryAge)
        XCTAssertNil(AtomicFile.testSettings.onStep)
        defer { AtomicFile.testSettings = AtomicFile.TestSettings() }
        let url = folder.appendingPathComponent("s.index")
        let dead = folder.appendingPathComponent(".s.index.tmp-999999-1")
        try Data([1]).write(to: dead)
        let seen = Mutex([(AtomicFile.Step, Bool)]())
        var settings = AtomicFile.TestSettings()
        settings.staleTemporaryAge = .zero
        settings.onStep = { step, temporary in
            seen.withOrderedLock { $0.append((step, FileManager.default.fileExists(atPath: temporary))) }
        }
        AtomicFile.testSettings = settings
        try AtomicFile.write(to: url) { sink in try [UInt8](repeating: 7, count: 3).withUnsafeBytes { try sink($0) } }
        XCTAssertEqual(seen.withOrderedLock { $0.map(\.0) }, [.created, .renaming])
        XCTAssertEqual(seen.withOrderedLock { $0.map(\.1) }, [true, true], "the temporary file exists at both steps")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dead.path), "age 0: the dead save's file went at once")
        XCTAssertEqual(try Data(contentsOf: url), Data([7, 7, 7]))
    }
}
